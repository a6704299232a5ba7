"""When each file of a git checkout was last changed: a program's last commit says which framework
releases were out when it was written (``program_versions.py``).

One ``git log`` reads the history newest first and stops once every tracked Python file and
notebook under the project has its date, or at a deadline (git is killed then). A file whose
commit only moved it (the same content under a new path) is followed to its old path; a commit
that touches more than ``SWEEP`` of them (a reformat, a licence header) dates a file only when no
other commit does, and then the oldest such commit. The answers are kept in the user's cache,
keyed by the commit checked out and the index, so a warm run starts no history walk.

git is run, never the code it holds, and never a command the repository configures: only
``rev-parse``, ``ls-files`` and ``log --raw`` (no diffs, so no diff or text-conversion drivers),
with ``core.fsmonitor`` off and lazy fetches off. A shallow clone (its oldest commits add every
file) and a partial clone (reading trees would fetch them) give no dates. A file whose content
differs from what the index holds (edited since its last commit) has no date. Without git, outside
a checkout, or when git fails, there are no dates and nothing else changes.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Optional

SWEEP = 100  # files one commit touches beyond which it is taken for a sweep, not a change of each
DEADLINE_S = 5.0  # the most a run spends on git; what was read by then is kept
# pathspecs, relative to the folder git runs in: the code, and what states the versions it was
# written for (a README's "PyTorch 1.4" can only mean a release out when it was written)
_CODE = ["*.py", "*.ipynb", "*README*", "*readme*", "*Readme*", "*INSTALL*", "*install.md", "*started.md",
         "*STARTED.md", "*Dockerfile"]
# no repository-configured helper runs, no object is fetched, nothing inherited from a git hook
# points git elsewhere (every git detlint starts gets these)
SAFE_OPTIONS = ["-c", "core.fsmonitor=false", "-c", "core.quotepath=off", "-c", "log.showSignature=false"]
_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
         "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "GIT_EXTERNAL_DIFF")
_ENV = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_NO_LAZY_FETCH": "1",
        "GIT_PAGER": "cat", "PAGER": "cat"}


def git_environment() -> dict[str, str]:
    """The environment every git detlint starts gets (discovery's check-ignore too)."""
    return {**{k: v for k, v in os.environ.items() if k not in _DROP}, **_ENV}


def _git() -> Optional[str]:
    return shutil.which("git")


class CommitDates:
    """Last-change dates of the Python files and notebooks under ``scope`` (the project), read
    from git once per run, on the first question."""

    def __init__(self, scope: Path, deadline_s: float = DEADLINE_S, cache_dir: Optional[Path] = None,
                 keep: bool = True) -> None:
        """``cache_dir``: where the answers are kept (default: the user's cache); ``keep=False``:
        nowhere."""
        from detlint.user_cache import user_cache

        self.scope = scope.resolve()
        self.deadline_s = deadline_s
        self.cache_dir = (cache_dir or user_cache()) if keep else None
        self._dates: Optional[dict[Path, tuple[datetime.date, str]]] = None
        self._checked: dict[Path, Optional[datetime.date]] = {}

    def date(self, path: Path) -> Optional[datetime.date]:
        """The author date of the newest commit that changed ``path`` (None: not known, or the
        file was edited since)."""
        path = path.resolve()
        if path in self._checked:
            return self._checked[path]
        if self._dates is None:
            self._dates = self._read()
        found = self._dates.get(path)
        day = found[0] if found is not None and _blob_id(path, len(found[1])) == found[1] else None
        self._checked[path] = day
        return day

    def newest(self, keep: Callable[[Path], bool] = lambda path: True) -> Optional[datetime.date]:
        """When the project's code was last changed: the newest date of its Python files and
        notebooks that ``keep`` accepts (a README or Dockerfile edit runs no code)."""
        if self._dates is None:
            self._dates = self._read()
        return max((day for path, (day, _) in self._dates.items()
                    if path.suffix in (".py", ".ipynb") and keep(path)), default=None)

    def _read(self) -> dict[Path, tuple[datetime.date, str]]:
        git = _git()
        if git is None:
            return {}
        head = _run(git, ["rev-parse", "--show-toplevel", "--is-shallow-repository", "--git-dir", "HEAD"],
                    self.scope, self.deadline_s)
        lines = head.decode("utf-8", "replace").splitlines() if head is not None else []
        if len(lines) != 4 or lines[1] != "false":
            return {}  # not a checkout, no commit yet, or a shallow clone
        root, git_dir, commit = Path(lines[0]), (self.scope / lines[2]).resolve(), lines[3]
        if _partial_clone(git_dir):
            return {}
        index = git_dir / "index"
        try:
            stat = index.stat()
            stamp = f"{stat.st_mtime_ns}:{stat.st_size}"
        except OSError:
            stamp = "-"
        key = hashlib.sha256(f"{root}\0{self.scope}\0{commit}\0{stamp}\0{_CODE}".encode()).hexdigest()[:32]
        cached = self._load(key, root)
        if cached is not None:
            return cached
        started = time.monotonic()
        tracked = _tracked(git, self.scope, self.deadline_s)
        found = _read_history(git, root, self.scope, tracked, self.deadline_s - (time.monotonic() - started))
        self._save(key, root, found)
        return found

    def _load(self, key: str, root: Path) -> Optional[dict[Path, tuple[datetime.date, str]]]:
        if self.cache_dir is None:
            return None
        try:
            data = json.loads((self.cache_dir / f"dates-{key}.json").read_text(encoding="utf-8"))
            return {root / name: (datetime.date.fromisoformat(day), blob) for name, (day, blob) in data.items()}
        except (OSError, ValueError, TypeError, AttributeError):
            return None

    def _save(self, key: str, root: Path, found: dict[Path, tuple[datetime.date, str]]) -> None:
        if self.cache_dir is None:
            return
        from detlint.lint.files.whole_writes import replace_beside

        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            data = {path.relative_to(root).as_posix(): [day.isoformat(), blob] for path, (day, blob) in found.items()}
            replace_beside(self.cache_dir / f"dates-{key}.json", json.dumps(data).encode("utf-8"), 0o600)
        except (OSError, ValueError):
            return


def _blob_id(path: Path, length: int) -> Optional[str]:
    """The id git gives the file's content (sha1, or sha256 in a repository that uses it)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest = hashlib.sha256() if length == 64 else hashlib.sha1()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def _partial_clone(git_dir: Path) -> bool:
    """A partial clone fetches missing trees on demand: reading its history would go online."""
    try:
        text = (git_dir / "config").read_text(encoding="utf-8", errors="replace").lower()
    except OSError:
        return False
    return "partialclone" in text or "promisor" in text


def _run(git: str, args: list[str], cwd: Path, timeout: float) -> Optional[bytes]:
    try:
        done = subprocess.run([git, *SAFE_OPTIONS, *args], cwd=cwd, capture_output=True, env=git_environment(),
                              timeout=max(timeout, 0.1), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _tracked(git: str, scope: Path, timeout: float) -> dict[str, str]:
    """The Python files and notebooks git tracks under ``scope``: path from the checkout's top ->
    the blob id the index holds."""
    out = _run(git, ["ls-files", "-s", "-z", "--full-name", "--", *_CODE], scope, timeout)
    found: dict[str, str] = {}
    for entry in (out or b"").decode("utf-8", "replace").split("\0"):
        meta, _, name = entry.partition("\t")
        parts = meta.split()
        if name and len(parts) == 3 and parts[2] == "0":  # stage 0: not in a merge conflict
            found[name] = parts[1]
    return found


def _read_history(git: str, root: Path, scope: Path, tracked: dict[str, str],
                  deadline_s: float) -> dict[Path, tuple[datetime.date, str]]:
    """path -> (date of its last change, the blob id the index holds)."""
    if not tracked or deadline_s <= 0:
        return {}
    # repository path -> the tracked file it stands for (a pure move re-points it to the old path)
    wanted: dict[str, str] = {name: name for name in tracked}
    final: dict[str, datetime.date] = {}
    swept: dict[str, datetime.date] = {}  # dated only by sweeps so far: the oldest one wins
    command = [git, *SAFE_OPTIONS, "log", "--no-renames", "--raw", "--no-abbrev", "--no-color", "-z",
               "--format=%x01%at", "HEAD", "--", *_CODE]
    try:
        proc = subprocess.Popen(command, cwd=scope, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, env=git_environment())
    except OSError:
        return {}
    timer = threading.Timer(deadline_s, proc.kill)  # a silent git is killed too, not only a chatty one
    timer.start()
    complete = False
    try:
        assert proc.stdout is not None
        for stamp, changes in _commits(proc.stdout):
            try:
                when = datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).date()
            except (ValueError, OverflowError, OSError):
                continue  # a date no calendar holds
            added = {new: path for status, old, new, path in changes if status == "A"}
            removed = {old: path for status, old, new, path in changes if status == "D"}
            moved = {path: removed[blob] for blob, path in added.items() if blob in removed}
            for status, _, _, path in changes:
                target = wanted.get(path)
                if target is None or target in final or status == "D":  # the old side of a move
                    continue
                if path in moved:  # moved unchanged: its content dates from the old path
                    del wanted[path]
                    wanted[moved[path]] = target
                elif len(changes) > SWEEP:
                    swept[target] = when
                else:
                    final[target] = when
            if len(final) == len(tracked):
                break
        else:
            complete = proc.wait() == 0
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close() if proc.stdout is not None else None
    # a file only sweeps touched is dated by the oldest of them, when the history was read to its start
    dates = {**(swept if complete else {}), **final}
    return {root / name: (day, tracked[name]) for name, day in dates.items()}


def _commits(stream) -> Iterator[tuple[int, list[tuple[str, str, str, str]]]]:  # type: ignore[no-untyped-def]
    """(author time, [(status, old blob, new blob, path)]) per commit of ``git log -z --raw``."""
    buffer = b""
    stamp: Optional[int] = None
    changes: list[tuple[str, str, str, str]] = []
    fields: list[str] = []
    for chunk in iter(lambda: stream.read(65536), b""):
        buffer += chunk
        *complete, buffer = buffer.split(b"\0")
        for raw in complete:
            text = raw.decode("utf-8", "replace")
            if fields:  # the path after a ":<modes> <blobs> <status>" field
                meta = fields.pop()
                parts = meta.split()
                if len(parts) >= 5:
                    changes.append((parts[4][:1], parts[2], parts[3], text))
                continue
            while text.startswith("\n"):
                text = text[1:]
            if text.startswith("\x01"):
                if stamp is not None:
                    yield stamp, changes
                head, _, rest = text[1:].partition("\n")
                try:
                    stamp = int(head.strip())
                except ValueError:
                    stamp = None
                changes = []
                rest = rest.lstrip("\n")
                if rest.startswith(":"):
                    fields.append(rest)
            elif text.startswith(":"):
                fields.append(text)
    if stamp is not None:
        yield stamp, changes

