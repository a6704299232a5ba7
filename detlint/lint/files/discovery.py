"""Which files a run looks at: folders walked, default and configured excludes, .gitignore."""
from __future__ import annotations

import fnmatch
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Iterable, Optional

from detlint.lint.files.sources import what_it_is
from detlint.settings.config import ConfigError, Settings, warn

SOURCE_SUFFIXES = (".py", ".ipynb")
DEFAULT_EXCLUDES = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".eggs", "__pycache__",
                    "build", "dist", "node_modules", "site-packages", ".mypy_cache", ".pytest_cache",
                    ".ruff_cache", ".detlint_cache", ".ipynb_checkpoints", "__pypackages__")


class Excludes:
    """Exclude patterns, each matching the path from the root, the file's name, a folder on the
    way or what is inside a matching path; compiled once (a walk asks for every file)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        stripped = [p.rstrip("/") for p in patterns]
        self._name = re.compile("|".join(fnmatch.translate(p) for p in stripped) or "(?!)")
        self._path = re.compile("|".join(fnmatch.translate(p) + "|" + fnmatch.translate(p + "/*")
                                         for p in stripped) or "(?!)")

    def match(self, path: Path, root: Path) -> bool:
        try:
            rel = Path(os.path.realpath(path)).relative_to(root).as_posix()
        except ValueError:
            rel = path.as_posix()
        return bool(self._path.match(rel) or self._name.match(path.name)
                    or any(self._name.match(part) for part in Path(rel).parts[:-1]))


def _not_for_git(path: Path) -> Optional[str]:
    """What an ignore file git would read is, when it is there but not a regular file (git
    would wait on a FIFO until the timeout); None otherwise. From its metadata: never opened."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # none there, or unreadable: git reads nothing from it either
    return None if stat.S_ISREG(mode) else what_it_is(mode)


def _safe_for_git(root: Path, files: list[Path]) -> list[Path]:
    """The files git may be asked about: it reads .git/info/exclude and the .gitignore of every
    folder from the root down to a file's. One of those that is not a regular file is skipped,
    said once, and git is not asked about the files it would apply to."""
    top = Path(os.path.realpath(root))
    exclude = top / ".git" / "info" / "exclude"
    problem = _not_for_git(exclude) if (top / ".git").is_dir() else None
    if problem:
        warn(f"{exclude}: {problem}; skipped, and with it git's ignore rules: ignored files are checked too")
        return []
    skipped: dict[Path, bool] = {}  # folder -> whether its own .gitignore is skipped
    safe = []
    for path in files:
        folder = Path(os.path.realpath(path.parent))
        try:
            parts = folder.relative_to(top).parts
        except ValueError:
            safe.append(path)  # outside the repository: git says so without reading anything there
            continue
        here, blocked = top, False
        for part in ("", *parts):
            here = here / part if part else here
            if here not in skipped:
                problem = _not_for_git(here / ".gitignore")
                if problem:
                    warn(f"{here / '.gitignore'}: {problem}; skipped, and with it git's ignore rules for the "
                         "files below it: ignored ones among them are checked too")
                skipped[here] = bool(problem)
            blocked = blocked or skipped[here]
        if not blocked:
            safe.append(path)
    return safe


def _git_ignored(root: Path, files: list[Path]) -> set[Path]:
    from detlint.settings.commit_dates import SAFE_OPTIONS, git_environment

    if not files or not (root / ".git").exists():
        return set()
    files = _safe_for_git(root, files)
    if not files:
        return set()
    try:
        # no command the repository's config names may run (core.fsmonitor reads the index here)
        proc = subprocess.run(["git", "-C", str(root), *SAFE_OPTIONS, "check-ignore", "--stdin", "-z"],
                              input=b"\0".join(os.fsencode(f) for f in files), capture_output=True,
                              timeout=30, env=git_environment())
    except (OSError, subprocess.SubprocessError):
        return set()
    # names are bytes to git: a file name that is not UTF-8 goes there and back unchanged
    return {Path(os.path.realpath(os.fsdecode(p))) for p in proc.stdout.split(b"\0") if p}


def _walkable(candidate: Path, inside: tuple[str, ...]) -> bool:
    """Whether a file found in a folder is to be checked: a regular file (a FIFO would block the
    read), not through a symlink that leaves the project (``x.py -> /etc/shadow`` is not read
    unless named). Dangling symlinks and loops stay in, to be reported as such."""
    try:
        info = os.stat(candidate)
    except OSError:
        return True
    if not stat.S_ISREG(info.st_mode):
        return False
    if not os.path.islink(candidate):
        return True
    target = os.path.realpath(candidate)
    return any(target == folder or target.startswith(folder.rstrip(os.sep) + os.sep) for folder in inside)


def python_script(candidate: Path) -> bool:
    """An executable file without a suffix whose first line runs Python (``#!/usr/bin/python3``,
    ``#!/usr/bin/env python``): a program its README starts as ``./train``."""
    try:
        mode = os.stat(candidate).st_mode
        if not (stat.S_ISREG(mode) and mode & 0o111):  # a FIFO would block the read
            return False
        with open(candidate, "rb") as handle:
            first = handle.readline(128)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def discover(paths: list[Path], settings: Settings, force_exclude: bool = False) -> list[Path]:
    """Files to lint, in a stable order. Missing paths are a usage error (exit 2)."""
    root = settings.project_root
    excludes = Excludes(list(DEFAULT_EXCLUDES) + settings.exclude + settings.extend_exclude)
    found: list[Path] = []
    walked: list[Path] = []
    for path in paths:
        if not path.exists() and not path.is_symlink():
            raise ConfigError(f"{path}: no such file or directory")
        if path.is_dir():
            inside = (os.path.realpath(root), os.path.realpath(path))
            for dirpath, dirnames, filenames in os.walk(path):
                here = Path(dirpath)
                dirnames[:] = sorted(d for d in dirnames if not excludes.match(here / d, root))
                for name in sorted(filenames):
                    candidate = here / name
                    if not (name.endswith(SOURCE_SUFFIXES) or "." not in name) or excludes.match(candidate, root):
                        continue
                    if (name.endswith(SOURCE_SUFFIXES) or python_script(candidate)) and _walkable(candidate, inside):
                        walked.append(candidate)
        elif force_exclude and excludes.match(path, root):
            continue
        else:
            found.append(path)
    if settings.respect_gitignore:
        ignored = _git_ignored(root, walked + (found if force_exclude else []))
        walked = [p for p in walked if Path(os.path.realpath(p)) not in ignored]
        if force_exclude:
            found = [p for p in found if Path(os.path.realpath(p)) not in ignored]
    seen: set[Path] = set()
    out = []
    for path in found + walked:
        key = path.absolute()
        if key not in seen:
            seen.add(key)
            out.append(path)
    return out
