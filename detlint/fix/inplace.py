"""Rewriting a file that has several hard links. A rename would split the names apart, so the file
is rewritten in place; that must never leave it half-written, and never change a name outside
the project (a hard link gets the treatment a symlink that leaves the project gets: not written).
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Optional

from detlint.child_processes import deferring

# directory entries looked at to find a file's other names; past this the search gives up and
# the file is not written (its other names could be anywhere)
MAX_ENTRIES = 1_000_000
_NO_FALLOCATE = {errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}


def rewrite_in_place(target: Path, payload: bytes, original: bytes) -> None:
    """Replace ``target``'s content (``original``) by ``payload`` in place. The room the new
    content needs is claimed first, so a full disk fails before any byte changes; a write that
    fails anyway (a copy-on-write file system, an I/O error) puts ``original`` back. A signal
    ending the run waits until the file is whole again; anything else that stops the write (a
    KeyboardInterrupt from Python's own handler) also puts ``original`` back. A symlink is not
    followed (one swapped in after the link check could lead outside). Raises what stopped it."""
    fd = os.open(target, os.O_RDWR | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        with deferring():
            size = os.fstat(fd).st_size
            if len(payload) > size:
                _claim(fd, size, payload)
            try:
                _write_all(fd, payload, 0)
                os.ftruncate(fd, len(payload))
                os.fsync(fd)
            except BaseException:
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
    except BaseException:
        os.ftruncate(fd, size)
        raise


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        if hasattr(os, "pwrite"):
            written = os.pwrite(fd, view, offset)
        else:  # Windows: no pwrite; the descriptor is this module's alone
            os.lseek(fd, offset, os.SEEK_SET)
            written = os.write(fd, view)
        view, offset = view[written:], offset + written


class LinkCensus:
    """How many names each hard-linked file has inside a project, from one walk of it (not
    following symlinks, not leaving its file system) per run, made when the first hard-linked
    file to write is met: fewer names inside than the file's link count means some name is
    elsewhere. A tree too large to walk counts every file as named outside."""

    def __init__(self) -> None:
        self._counts: dict[Path, Optional[dict[tuple[int, int], int]]] = {}  # root -> counts, None: too large

    def names_outside(self, target: Path, root: Path) -> bool:
        """Has ``target`` a hard link outside ``root``?"""
        info = target.stat()
        if root not in self._counts:
            self._counts[root] = _count_links(root)
        counts = self._counts[root]
        return counts is None or counts.get((info.st_dev, info.st_ino), 0) < info.st_nlink


def _entry_stat(entry: os.DirEntry[str]) -> os.stat_result:
    if os.name == "nt":  # a DirEntry's stat there has no inode number (st_ino 0)
        return os.stat(entry.path, follow_symlinks=False)
    return entry.stat(follow_symlinks=False)


def _count_links(root: Path) -> Optional[dict[tuple[int, int], int]]:
    """(device, inode) -> names inside ``root``, for files with several links; None past
    ``MAX_ENTRIES`` entries."""
    device = root.stat().st_dev
    counts: dict[tuple[int, int], int] = {}
    seen = 0
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
                return None
            try:
                st = _entry_stat(entry)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if st.st_dev == device:
                    stack.append(Path(entry.path))
            elif st.st_nlink > 1:
                key = (st.st_dev, st.st_ino)
                counts[key] = counts.get(key, 0) + 1
    return counts
