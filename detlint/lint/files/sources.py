"""Reading a file to check: only regular files, never more than the size limit, decoded as
Python decodes source. Nothing here blocks: a FIFO is recognised from its metadata, and files
are opened non-blocking and checked again once open."""
from __future__ import annotations

import errno
import io
import os
import re
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

COOKIE_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)


@dataclass
class SourceFile:
    path: Path
    text: Optional[str] = None
    encoding: str = "utf-8"
    error: Optional[str] = None


# the size limit is one of a notebook's code; its JSON (outputs, images) is read and parsed whole, up
# to this many times that limit (a 3-line notebook beside a 34 MB plot is checked; 64 MB at the
# default limit, which bounds the memory a notebook takes)
NOTEBOOK_SIZE_FACTOR = 64
FILE_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
              (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def too_large(size: int, max_bytes: int) -> str:
    return (f"too large to check: {size // 1024} KB, over the limit of {max_bytes // 1024} KB "
            "(the max-file-size setting)")


def _amount(size: int) -> str:
    return f"{size >> 20} MB" if size >= 1 << 20 else f"{size // 1024} KB"


def too_large_json(size: int, cap: int) -> str:
    """A notebook whose JSON is past what is read (``NOTEBOOK_SIZE_FACTOR`` times the limit)."""
    return (f"too large to check: {_amount(size)} of JSON, over the {_amount(cap)} a notebook's JSON may "
            f"take ({NOTEBOOK_SIZE_FACTOR} times the max-file-size setting, which counts its code)")


def what_it_is(mode: int) -> str:
    """What a file that is not a regular one is: ``not a regular file (a named pipe)``."""
    kind = next((name for test, name in FILE_KINDS if test(mode)), "a special file")
    return f"not a regular file ({kind})"


def not_regular(mode: int) -> str:
    return f"{what_it_is(mode)}; only regular files are checked"


def missing_file(path: Path) -> str:
    if os.path.islink(path):
        try:
            return f"dangling symlink: target {os.readlink(path)} does not exist"
        except OSError:
            pass
    return "file not found (removed during the run?)"


def file_problem(path: Path, max_bytes: int = 0) -> Optional[str]:
    """Why ``path`` will not be read, decided from its metadata alone (a FIFO is never opened)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return missing_file(path)
    except OSError as exc:
        return "cannot read file: symlink loop" if exc.errno == errno.ELOOP else \
            f"cannot read file: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return not_regular(info.st_mode)
    if max_bytes and path.suffix != ".ipynb" and info.st_size > max_bytes:
        return too_large(info.st_size, max_bytes)
    return None


class NotRegularFile(OSError):
    """A path that is not a regular file (a FIFO, a folder, a device): never read."""

    def __init__(self, mode: int) -> None:
        super().__init__(what_it_is(mode))
        self.mode = mode


def open_regular(path: Path, follow_symlinks: bool = True) -> tuple[int, os.stat_result]:
    """A descriptor of ``path`` opened for reading, and its metadata, when it is a regular file;
    OSError (``NotRegularFile`` for a FIFO and the like) otherwise. Every reader of project files
    goes through here: opening a FIFO for reading waits for a writer, so the file is opened
    non-blocking and checked once open, and one swapped for a FIFO after a stat cannot block.
    Without ``follow_symlinks`` a final symlink is refused (ELOOP) where the platform can tell."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags if follow_symlinks else flags | getattr(os, "O_NOFOLLOW", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(info.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def _read_fd(fd: int, limit: int = 0) -> bytes:
    """What is left of ``fd``, at most ``limit`` bytes (0: all)."""
    chunks, total = [], 0
    while not limit or total < limit:
        chunk = os.read(fd, 1 << 20 if not limit else min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_regular(path: Path, limit: int = 0, follow_symlinks: bool = True) -> bytes:
    """The bytes of a regular file, or its first ``limit`` bytes; OSError for anything else (a
    FIFO is refused without blocking, see ``open_regular``)."""
    fd, _ = open_regular(path, follow_symlinks)
    try:
        return _read_fd(fd, limit)
    finally:
        os.close(fd)


def read_bytes(path: Path, max_bytes: int = 0, refusal: Callable[[int, int], str] = too_large
               ) -> tuple[Optional[bytes], Optional[str]]:
    """A regular file's bytes, or why not (see ``open_regular``); a file over ``max_bytes`` is
    refused (``refusal`` says so), and at most one byte more than that is read."""
    try:
        fd, info = open_regular(path)
    except FileNotFoundError:
        return None, f"cannot read file: {missing_file(path)}"
    except NotRegularFile as exc:
        return None, not_regular(exc.mode)
    except OSError as exc:
        reason = "symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        return None, f"cannot read file: {reason}"
    try:
        if max_bytes and info.st_size > max_bytes:
            return None, refusal(info.st_size, max_bytes)
        data = _read_fd(fd, max_bytes + 1 if max_bytes else 0)
        if max_bytes and len(data) > max_bytes:  # it grew while we read
            return None, refusal(len(data), max_bytes)
        return data, None
    except OSError as exc:
        return None, f"cannot read file: {exc.strerror or exc}"
    finally:
        os.close(fd)


def read_source(path: Path, data: Optional[bytes] = None, max_bytes: int = 0,
                refusal: Callable[[int, int], str] = too_large) -> SourceFile:
    """Decode a Python file as the interpreter would (BOM, coding cookie), or say why not."""
    if data is None:
        data, error = read_bytes(path, max_bytes, refusal)
        if data is None:
            return SourceFile(path, error=error)
    if b"\0" in data:
        return SourceFile(path, error="file contains NUL bytes; not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if COOKIE_RE.search(b"\n".join(data.splitlines()[:2])):
            return SourceFile(path, error=f"bad encoding declaration: {exc}")
        encoding = "utf-8"  # no declaration: the bytes themselves are not UTF-8
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        return SourceFile(path, error=f"cannot decode as {encoding}: {exc}")
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(path, text=text, encoding=encoding)
