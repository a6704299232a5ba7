"""What a run held at one moment: the initial weights before the first training step, the first
batch. A recorder writes them in the child process; the finder compares two runs' states. Every
framework's recorder writes this one format, so the comparison knows no framework.

A state is ``<dump>.<phase>.json`` (one entry per variable: its owner, where the owner was made,
a digest) beside ``<dump>.<phase>.bin`` (the values, while they fit the budget), so memory holds
one variable at a time and disk stays bounded.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Optional, Sequence

INIT = "init"  # the variables before the first training step
BATCH = "batch"  # the first batch a model is given
PHASES = (INIT, BATCH)


@dataclass(frozen=True)
class Entry:
    owner: str  # the layer or module that holds it: "dense_1", "model.layer3.conv1"
    kind: str  # the owner's class: "Dense", "Conv2d"
    created: str  # where the owner was made ("train.py:11"), or ""
    name: str  # the variable: "kernel", "weight", "input 0"
    shape: tuple[int, ...]
    dtype: str
    digest: str
    offset: int  # where its values start in the .bin file; -1 when they were not kept
    nbytes: int


def _files(dump: str, phase: str) -> tuple[str, str]:
    return f"{dump}.{phase}.json", f"{dump}.{phase}.bin"


def write(dump: str, phase: str, framework: str, items: Iterable[tuple[str, str, str, str, Any]],
          budget_bytes: int) -> int:
    """Write ``items`` (owner, kind, created, name, array-like) as ``phase`` of this run of a
    ``framework`` program; values beyond ``budget_bytes`` keep only their digest. Returns how
    many were written."""
    import numpy as np

    index, kept, count = [], 0, 0
    index_path, values_path = _files(dump, phase)
    with open(values_path, "wb") as values:
        for owner, kind, created, name, value in items:
            array = np.ascontiguousarray(np.asarray(value))
            payload = array.tobytes()
            digest = hashlib.sha1(f"{array.dtype}|{array.shape}|".encode() + payload).hexdigest()
            offset = -1
            if kept + len(payload) <= budget_bytes:
                offset = values.tell()
                values.write(payload)
                kept += len(payload)
            index.append(asdict(Entry(owner, kind, created, name, tuple(int(n) for n in array.shape), str(array.dtype),
                                      digest, offset, len(payload))))
            count += 1
    with open(index_path, "w", encoding="utf-8") as handle:
        json.dump({"framework": framework, "entries": index}, handle)
    return count


def read(dump: str, phase: str) -> Optional[tuple[str, list[Entry]]]:
    """The framework and the entries of ``phase`` in this run, or None when the run wrote none."""
    try:
        with open(_files(dump, phase)[0], encoding="utf-8") as handle:
            raw = json.load(handle)
        return str(raw["framework"]), [Entry(**{**item, "shape": tuple(item["shape"])}) for item in raw["entries"]]
    except (OSError, ValueError, TypeError, KeyError):
        return None


def values(dump: str, phase: str, entry: Entry) -> Any:
    """The entry's values, or None when they were over the budget."""
    import numpy as np

    if entry.offset < 0:
        return None
    with open(_files(dump, phase)[1], "rb") as handle:
        handle.seek(entry.offset)
        data = handle.read(entry.nbytes)
    return np.frombuffer(data, dtype=np.dtype(entry.dtype)).reshape(entry.shape)


@dataclass
class Difference:
    owner: str
    kind: str
    created: str
    name: str
    shape: tuple[int, ...]
    max_abs_diff: Optional[float]  # None: not numeric, other shapes, or values not kept

    def describe(self) -> str:
        diff = f"max |run 1 - run 2| = {self.max_abs_diff:.6g}" if self.max_abs_diff is not None else "differs"
        return f"{self.name} {list(self.shape)}: {diff}"


@dataclass
class Compared:
    framework: str
    entries: list[Entry]  # run 1's
    differing: list[Difference]

    @property
    def variables(self) -> int:
        return len(self.entries)


def differences(dump_a: str, dump_b: str, phase: str) -> Optional[Compared]:
    """The variables of ``phase`` whose values differ between two runs (in run 1's order); None
    when either run wrote no such state. A variable only one run has counts as differing."""
    import numpy as np

    read_a, read_b = read(dump_a, phase), read(dump_b, phase)
    if read_a is None or read_b is None:
        return None
    (framework, first), (_, second) = read_a, read_b
    theirs = {(e.owner, e.name): e for e in second}
    out = []
    for mine in first:
        other = theirs.get((mine.owner, mine.name))
        if other is not None and other.digest == mine.digest:
            continue
        diff: Optional[float] = None
        if other is not None and other.shape == mine.shape:
            a, b = values(dump_a, phase, mine), values(dump_b, phase, other)
            if a is not None and b is not None and a.dtype.kind in "fiub" and b.dtype.kind in "fiub":
                diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
        out.append(Difference(mine.owner, mine.kind, mine.created, mine.name, mine.shape, diff))
    return Compared(framework, first, out)


def is_library_frame(filename: str, roots: Sequence[str]) -> bool:
    """Is this stack frame library code? Pseudo-files (``<frozen ...>``, ``<string>``) and files
    under one of ``roots`` (see ``recorder.library_roots``) are; everything else is the program's."""
    if not filename or filename.startswith("<"):
        return True
    path = os.path.realpath(filename)
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def shown_path(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path


def user_site(roots: Sequence[str], constructing: Any = None) -> str:
    """``path:line`` of the program's innermost frame on the current stack (library frames are
    those under ``roots``), passing over the constructor chain of ``constructing`` (a project
    class's ``super().__init__``): a layer is placed where it is made (``self.fc1 = nn.Linear(...)``
    in the model's ``__init__``, ``model = Net()`` for the model itself)."""
    frame = sys._getframe(1)
    while frame is not None:
        own_constructor = constructing is not None and frame.f_code.co_name == "__init__" \
            and frame.f_locals.get("self") is constructing
        if not own_constructor and not is_library_frame(frame.f_code.co_filename, roots):
            return f"{shown_path(frame.f_code.co_filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return ""
