"""Replays: a check whose inputs have not changed since an identical one ran prints that run's report.

A pre-commit hook or an editor asks the same question again and again. Each check that may be
replayed (``allow``: not reading stdin, not fixing, not writing a report file, the cache on) is
recorded: its report on stdout and stderr, its exit status and its inputs (``run_inputs``: every
file read, folder listed, path asked about, git repository consulted). The entry is keyed by what
else decides the answer: the arguments as given, the working folder, the environment (less a few
variables that change from shell to shell and that detlint does not read), whether stdout and
stderr are terminals, the interpreter, detlint's code and the distributions installed beside it.
A later check with the same key prints
the stored report only when every input is still as it was; otherwise it runs as usual.

Entries live in the user's cache (``detlint/replay``), never in the project: a repository cannot
plant one. They are JSON data, checked before use; the newest ``KEEP`` are kept. Deleting the
project's ``.detlint_cache`` or ``--no-cache`` also ends replays (the folder is among the inputs).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any, Optional, TextIO

FORMAT = 2
KEEP = 256
MAX_ENTRY_BYTES = 64 * 1024 * 1024
# set by each shell or login, read by nothing detlint runs
VOLATILE = frozenset({"_", "OLDPWD", "PWD", "SHLVL", "TERM_SESSION_ID", "WINDOWID", "SSH_CLIENT", "SSH_CONNECTION",
                      "SSH_TTY", "SSH_AUTH_SOCK", "XDG_SESSION_ID", "GPG_TTY", "PYTEST_CURRENT_TEST"})


class Recording:
    """What the check being recorded says about itself (through ``allow``, ``refuse``)."""

    def __init__(self, journal: Any) -> None:
        self.journal = journal
        self.allowed = False


_recording: Optional[Recording] = None


def allow(checked: Any = ()) -> None:
    """The check running may be replayed; ``checked``: the files it checks."""
    if _recording is not None:
        _recording.allowed = True
        _recording.journal.checked.extend(os.path.abspath(os.fspath(p)) for p in checked)


def cache_in(folder: Optional[os.PathLike[str]]) -> None:
    """The check's facts cache is ``folder`` (None: none): what is in it is derived from the
    inputs, not one (a checked file in it ends the recording); whether it is there is an input
    (deleting it ends replays)."""
    if _recording is None:
        return
    if folder is None:  # without a cache the parser processes read the files, out of the journal's sight
        _recording.journal.refuse("no facts cache")
        return
    journal = _recording.journal
    journal.exclude(os.fspath(folder))
    journal.present_at_end(os.fspath(folder))


def refuse(why: str) -> None:
    """The check running is not to be replayed: its answer may differ next time."""
    if _recording is not None:
        _recording.journal.refuse(why)


def key(argv: list[str]) -> Optional[str]:
    from detlint._version import __version__
    from detlint.code_digest import code_digest

    try:
        where = os.getcwd()
    except OSError:
        return None
    environment = sorted((k, v) for k, v in os.environ.items() if k not in VOLATILE)
    material = [FORMAT, __version__, code_digest(), sys.executable, sys.version, where, argv, environment,
                _isatty(sys.stdout), _isatty(sys.stderr), _installed()]
    return hashlib.sha256(json.dumps(material, ensure_ascii=False).encode("utf-8", "surrogateescape")).hexdigest()


def _installed() -> list[str]:
    """The distributions installed beside detlint (libcst, PyYAML, the frameworks): an upgrade
    ends replays, as it may change what a check says."""
    import sysconfig

    found: set[str] = set()
    for name in ("purelib", "platlib"):
        try:
            found.update(e for e in os.listdir(sysconfig.get_path(name)) if e.endswith((".dist-info", ".egg-info")))
        except (KeyError, OSError):
            pass
    return sorted(found)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _folder() -> Optional[str]:
    from detlint.user_cache import user_cache

    base = user_cache()
    return os.path.join(base, "replay") if base else None


def replayed(entry_key: str, out: TextIO) -> Optional[int]:
    """The stored run's exit status, its report written out, when its inputs are unchanged."""
    from detlint.run_inputs import unchanged

    folder = _folder()
    if folder is None:
        return None
    entry = _read(os.path.join(folder, entry_key + ".json"))
    if entry is None or entry.get("key") != entry_key or not unchanged(entry["inputs"]):
        return None
    for name, text in entry["output"]:
        stream = out if name == "stdout" else sys.stderr
        stream.write(text)
        stream.flush()
    return int(entry["code"])


def _read(path: str) -> Optional[dict[str, Any]]:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_ENTRY_BYTES + 1)
        entry = json.loads(data) if len(data) <= MAX_ENTRY_BYTES else None
    except (OSError, ValueError):
        return None
    valid = (isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("code") in (0, 1)
             and isinstance(entry.get("inputs"), dict) and isinstance(entry.get("output"), list)
             and all(isinstance(c, list) and len(c) == 2 and c[0] in ("stdout", "stderr") and isinstance(c[1], str)
                     for c in entry["output"]))
    return entry if valid else None


class Tee:
    """A text stream that writes through and keeps what was written, in one list shared with the
    other stream (a replay writes stdout and stderr in the order they were written);
    ``passthrough`` is the stream itself, for what is not part of the report (the progress line)."""

    def __init__(self, stream: TextIO, name: str, kept: list[list[str]]) -> None:
        self.passthrough, self.name, self.kept = stream, name, kept
        self.failed = False

    def write(self, text: str) -> int:
        if self.kept and self.kept[-1][0] == self.name:
            self.kept[-1][1] += text
        else:
            self.kept.append([self.name, text])
        try:
            return self.passthrough.write(text)
        except BaseException:
            self.failed = True
            raise

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.passthrough, name)


def record(entry_key: Optional[str], argv: list[str], out: TextIO) -> int:
    """``detlint.cli.main(argv)``, kept as an entry when it may be replayed."""
    global _recording
    from detlint import run_inputs
    from detlint.cli import main
    from detlint.user_cache import user_cache

    cache = user_cache()
    if entry_key is None or cache is None or _recording is not None:
        return main(argv, out)
    kept: list[list[str]] = []
    stdout, stderr = Tee(out, "stdout", kept), Tee(sys.stderr, "stderr", kept)
    code = 2
    with run_inputs.recording(skip=(str(cache),)) as journal:
        _recording = Recording(journal)
        sys.stderr = stderr  # type: ignore[assignment]
        try:
            code = main(argv, stdout)  # type: ignore[arg-type]
        finally:
            sys.stderr = stderr.passthrough
            recorded, _recording = _recording, None
    if code in (0, 1) and recorded.allowed and not (stdout.failed or stderr.failed):
        inputs = journal.snapshot()
        if inputs is not None:
            _store(entry_key, {"format": FORMAT, "key": entry_key, "code": code, "output": kept, "inputs": inputs})
    return code


def _store(entry_key: str, entry: dict[str, Any]) -> None:
    from detlint.lint.files.whole_writes import replace_beside

    folder = _folder()
    if folder is None:
        return
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        from pathlib import Path

        replace_beside(Path(folder, entry_key + ".json"), json.dumps(entry).encode("utf-8", "surrogateescape"), 0o600)
        entries = sorted(os.scandir(folder), key=lambda e: e.stat().st_mtime_ns, reverse=True)
        for old in entries[KEEP:]:
            os.unlink(old.path)
    except (OSError, ValueError):
        return
