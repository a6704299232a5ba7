"""Rewriting a file that has several hard links. A rename would split the names apart, so the file
is rewritten in place; that must never leave it half-written, and never change a name outside
the project (a hard link gets the treatment a symlink that leaves the project gets: not written).
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

# directory entries looked at to find a file's other names; past this the search gives up and
# the file is not written (its other names could be anywhere)
MAX_ENTRIES = 1_000_000
_NO_FALLOCATE = {errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}


def rewrite_in_place(target: Path, payload: bytes, original: bytes) -> None:
    """Replace ``target``'s content (``original``) by ``payload`` in place. The room the new
    content needs is claimed first, so a full disk fails before any byte changes; a write that
    fails anyway (a copy-on-write file system, an I/O error) puts ``original`` back. Raises the
    OSError that stopped it."""
    fd = os.open(target, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        if len(payload) > size:
            _claim(fd, size, payload)
        try:
            _write_all(fd, payload, 0)
            os.ftruncate(fd, len(payload))
            os.fsync(fd)
        except OSError:
            _write_all(fd, original, 0)
            os.ftruncate(fd, len(original))
            os.fsync(fd)
            raise
    finally:
        os.close(fd)


def _claim(fd: int, size: int, payload: bytes) -> None:
    """Make the file ``len(payload)`` bytes long without touching its first ``size`` bytes:
    reserved blocks where the file system can, else the new tail written. On failure the file
    is cut back to ``size``, which is what it held."""
    try:
        try:
            os.posix_fallocate(fd, size, len(payload) - size)
            return
        except AttributeError:  # no posix_fallocate on this platform (macOS)
            pass
        except OSError as exc:
            if exc.errno not in _NO_FALLOCATE:
                raise
        _write_all(fd, payload[size:], size)
        os.fsync(fd)
    except OSError:
        os.ftruncate(fd, size)
        raise


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def names_outside(target: Path, root: Path) -> bool:
    """Has ``target`` a hard link outside ``root``? Its names inside are counted by walking
    ``root`` (not following symlinks, not leaving its file system); fewer than the link count
    means some name is elsewhere. A tree too large to walk counts as yes."""
    info = target.stat()
    wanted, found, seen = (info.st_dev, info.st_ino), 0, 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable: a name there is not known to be inside
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                return True
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and st.st_dev == info.st_dev:
                stack.append(Path(entry.path))
            elif (st.st_dev, st.st_ino) == wanted:
                found += 1
                if found >= info.st_nlink:
                    return False
    return True
