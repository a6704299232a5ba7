"""When each file of a git checkout was last changed: a program's last commit caps the framework
releases it can have been written for (``program_versions.py``).

One ``git log`` reads the history newest first and stops once every file asked for has its date,
or at a deadline: git is run, never the code it holds. A file whose commit only renamed it (same
content under a new path) is followed to its old path, and a commit that touches more than
``SWEEP`` files (a reformat, a licence header, a move of the whole tree) dates a file only when no
earlier commit touched it. Without git, outside a checkout, for files git does not track or when
git fails (a snapshot whose old objects are missing), there is no date: nothing else changes.
"""
from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Optional

SWEEP = 100  # files one commit touches beyond which it is taken for a sweep, not a change of each
DEADLINE_S = 5.0  # the most a run spends reading history; what was read by then is kept
_ZERO = "0" * 40


def checkout_root(folder: Path) -> Optional[Path]:
    """The top of the git checkout that holds ``folder`` (a ``.git`` folder or file), if any."""
    here = folder.resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


class CommitDates:
    """Last-change dates of the Python files and notebooks under ``scope`` (the project), read
    from git once per run, on the first question."""

    def __init__(self, scope: Path, deadline_s: float = DEADLINE_S) -> None:
        self.scope = scope.resolve()
        self.deadline_s = deadline_s
        self._dates: Optional[dict[Path, datetime.date]] = None

    def date(self, path: Path) -> Optional[datetime.date]:
        """The author date of the newest commit that changed ``path`` (None: not known)."""
        if self._dates is None:
            root = checkout_root(self.scope)
            self._dates = _read_history(root, self.scope, self.deadline_s) if root is not None else {}
        return self._dates.get(path.resolve())


def _git() -> Optional[str]:
    return shutil.which("git")


_ENV = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
_CODE = ["*.py", "*.ipynb"]  # pathspecs, relative to the scope git runs in


def _tracked(git: str, root: Path, scope: Path) -> list[str]:
    """The Python files and notebooks git tracks under ``scope``, as paths from ``root``."""
    try:
        done = subprocess.run([git, "-c", "core.quotepath=off", "ls-files", "-z", "--full-name", "--", *_CODE],
                              cwd=scope, capture_output=True, env={**os.environ, **_ENV}, timeout=DEADLINE_S)
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    return [name for name in done.stdout.decode("utf-8", "replace").split("\0") if name]


def _changed(git: str, scope: Path) -> set[str]:
    """Files changed since the last commit (their last commit no longer dates them), as paths
    from the checkout's top; None stands for "could not tell"."""
    try:
        done = subprocess.run([git, "-c", "core.quotepath=off", "status", "--porcelain=v1", "-z",
                               "--untracked-files=no", "--no-renames", "--", *_CODE],
                              cwd=scope, capture_output=True, env={**os.environ, **_ENV}, timeout=DEADLINE_S)
    except (OSError, subprocess.SubprocessError):
        return {"*"}
    if done.returncode != 0:
        return {"*"}
    return {entry[3:] for entry in done.stdout.decode("utf-8", "replace").split("\0") if len(entry) > 3}


def _read_history(root: Path, scope: Path, deadline_s: float) -> dict[Path, datetime.date]:
    git = _git()
    if git is None:
        return {}
    changed = _changed(git, scope)
    if "*" in changed:
        return {}
    # repository path -> the file (a pure rename re-points the key to the old path)
    wanted: dict[str, Path] = {name: root / name for name in _tracked(git, root, scope) if name not in changed}
    files = set(wanted.values())
    if not files:
        return {}
    final: dict[Path, datetime.date] = {}
    swept: dict[Path, datetime.date] = {}  # dated only by a sweep so far
    env = {**os.environ, **_ENV}
    command = [git, "-c", "core.quotepath=off", "log", "--no-renames", "--raw", "--no-abbrev",
               "--no-color", "--format=%x01%at", "HEAD", "--", *_CODE]
    try:
        proc = subprocess.Popen(command, cwd=scope, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, env=env, text=True, errors="replace")
    except OSError:
        return {}
    started = time.monotonic()
    try:
        assert proc.stdout is not None
        stamp: Optional[int] = None
        changes: list[tuple[str, str, str, str]] = []

        def commit_done() -> bool:
            """Date the files of the commit just read; True when every file has its date."""
            if stamp is None:
                return False
            when = datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).date()
            added = {new: path for status, old, new, path in changes if status == "A"}
            removed = {old: path for status, old, new, path in changes if status == "D"}
            renamed = {path: removed[sha] for sha, path in added.items() if sha in removed}
            for status, _, _, path in changes:
                target = wanted.get(path)
                if target is None or target in final or status == "D":  # the old side of a move
                    continue
                if path in renamed:  # moved unchanged: its content dates from the old path
                    del wanted[path]
                    wanted[renamed[path]] = target
                elif len(changes) > SWEEP:
                    swept.setdefault(target, when)
                else:
                    final[target] = when
            return len(final) == len(files)

        for line in proc.stdout:
            if line.startswith("\x01"):
                if commit_done() or time.monotonic() - started > deadline_s:
                    stamp = None
                    break
                try:
                    stamp = int(line[1:].strip())
                except ValueError:
                    stamp = None
                changes = []
            elif line.startswith(":"):
                meta, _, path = line.rstrip("\n").partition("\t")
                parts = meta.split()
                if len(parts) >= 5 and not path.startswith('"'):
                    changes.append((parts[4][:1], parts[2], parts[3], path))
        commit_done()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    return {**swept, **final}
