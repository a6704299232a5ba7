"""The op record of a PyTorch or JAX run: one JSON line per output (the op, the module or path
it belongs to, the phase and step, the program's line, a digest) in ``<dump>/<framework>_ops.jsonl``
and, while they fit the budget, the values in ``.bin``. Written one output at a time, so memory
does not grow with the run; read back by the finder."""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Optional


def files(framework: str) -> tuple[str, str]:
    return f"{framework}_ops.jsonl", f"{framework}_ops.bin"


class OpLog:
    def __init__(self, dump: str, framework: str, budget: int) -> None:
        os.makedirs(dump, exist_ok=True)
        index, values = files(framework)
        self.dump, self.budget = dump, budget
        self.index = open(os.path.join(dump, index), "w", encoding="utf-8")
        self.values = open(os.path.join(dump, values), "wb")
        self.kept = 0  # bytes of values written
        self.count = 0  # outputs recorded
        self.closed = False

    def write(self, array: Any, **fields: Any) -> int:
        """Record one output (a NumPy array) with ``fields`` (op, slot, module, phase, step,
        training, site, inputs); returns its number."""
        payload = array.tobytes()
        digest = hashlib.sha1(f"{array.dtype}|{array.shape}|".encode() + payload).hexdigest()
        offset = -1
        if self.kept + len(payload) <= self.budget:
            offset = self.values.tell()
            self.values.write(payload)
            self.kept += len(payload)
        self.index.write(json.dumps({"i": self.count, **fields, "digest": digest, "dtype": str(array.dtype),
                                     "shape": list(array.shape), "offset": offset, "nbytes": len(payload)}) + "\n")
        self.count += 1
        return self.count - 1

    def steps_done(self, steps: int) -> None:
        """For the progress line (recorder.PROGRESS)."""
        try:
            with open(self.dump + ".progress", "w", encoding="utf-8") as handle:
                handle.write(str(steps))
        except OSError:
            pass

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.index.close()
            self.values.close()


def read(dump: str, framework: str) -> Optional[list[dict[str, Any]]]:
    try:
        with open(os.path.join(dump, files(framework)[0]), encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    except (OSError, ValueError):
        return None


def values(dump: str, framework: str, record: dict[str, Any]) -> Any:
    import numpy as np

    if record["offset"] < 0:
        return None
    with open(os.path.join(dump, files(framework)[1]), "rb") as handle:
        handle.seek(record["offset"])
        data = handle.read(record["nbytes"])
    return np.frombuffer(data, dtype=np.dtype(record["dtype"])).reshape(record["shape"])
