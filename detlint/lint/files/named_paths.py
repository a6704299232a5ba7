"""Paths as the user named them: where a named path is looked up from, and what lies within what.

A project's root is found from the path as written (``os.path.abspath``, links not followed), so
a file reached through a symlinked folder (``proj/sub -> ../outside``) belongs to ``proj``, whose
fixes, cache and reports then see that its real target lies outside and refuse it."""
from __future__ import annotations

import os
from pathlib import Path


def home_folder(start: Path) -> Path:
    """The folder a path named on the command line is looked up from, as written: a folder (or a
    link to one) itself, a file (or a link to one) the folder it lies in."""
    start = Path(os.path.abspath(start))
    return start if start.is_dir() else start.parent


def within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def below_named_links(folder: Path, named: Path) -> Path:
    """``folder`` (``named``'s home folder), or where ``named``, relative, goes through a link to
    a folder (``sub/victim.py`` with ``sub -> ../outside``), the folder that link lies in: a root
    with no marker to find is never a folder a link points into."""
    if named.is_absolute():
        return folder
    base = Path(os.path.abspath(os.curdir))
    found = folder
    for candidate in (folder, *folder.parents):
        if not within(candidate, base) or candidate == base:
            break
        if candidate.is_symlink():
            found = candidate.parent
    return found
