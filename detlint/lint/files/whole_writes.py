"""Replacing a file whole or not at all: a new temporary file beside it, renamed over it.

Every file detlint writes goes this way (a fixed source, the ``-o`` report, the diverge page,
cache entries, the user's knowledge-base copy): a reader sees the old content or the new, a full
disk or an interrupt leaves the old file and no temporary one, and a name that is a link is
replaced, never written through. ``replace_in`` does it relative to an open folder, so a folder
swapped for a link after it was checked is not followed either.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Optional

TEMP_SUFFIX = ".detlint-tmp"
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_BINARY", 0)


def replace_beside(target: Path, data: bytes, mode: Optional[int] = None) -> None:
    """``target`` becomes ``data``. ``mode``: the new file's permissions (default: a new file's,
    0666 less the umask). Raises the OSError that stopped it, with nothing changed."""
    while True:
        temp = target.parent / f".{target.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        try:
            fd = os.open(temp, _NEW, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        _remove(str(temp), None)
        raise


def replace_in(folder: int, name: str, data: bytes, mode: Optional[int] = None) -> None:
    """``replace_beside`` for the file ``name`` in the folder open as ``folder`` (POSIX)."""
    while True:
        temp = f".{name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        try:
            fd = os.open(temp, _NEW, 0o666, dir_fd=folder)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
        os.rename(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        _remove(temp, folder)
        raise


def current_mode(target: Path, folder: Optional[int] = None) -> Optional[int]:
    """The permissions of the file a write replaces (kept), or None where there is none yet."""
    try:
        return os.stat(target if folder is None else target.name, dir_fd=folder, follow_symlinks=False).st_mode & 0o7777
    except OSError:
        return None


def _remove(temp: str, folder: Optional[int]) -> None:
    try:
        os.unlink(temp, dir_fd=folder)
    except OSError:
        pass
