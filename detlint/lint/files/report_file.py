"""The ``-o`` report file: checked before any work, written at the end in one piece.

A report never goes through a symlink that leaves the project (a committed
``detlint-report.txt -> ~/.bashrc``) unless the user names a path outside the project; it is
written to a temporary file beside its target and renamed over it, so an old report is replaced
whole or kept, and a file hard-linked to it elsewhere is never changed."""
from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from typing import Iterable, Optional

from detlint.settings.config import ConfigError

TEMP_SUFFIX = ".detlint-tmp"


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def check_output_file(name: Optional[str], inputs: list[Path], projects: Iterable[Path]) -> None:
    """Before any work: refuse to write the report over a file being checked, or through a
    symlink from inside one of ``projects`` to outside it; create the report's folder when it
    does not exist yet."""
    if not name:
        return
    target = Path(name)
    if target.is_dir():
        raise ConfigError(f"-o {name}: is a folder, not a file")
    written = Path(os.path.realpath(name))
    named = Path(os.path.abspath(name))  # where the user pointed, links not followed
    for root in {Path(os.path.realpath(p)) for p in projects}:
        if _within(named, root) and not _within(written, root):
            raise ConfigError(f"-o {name}: is a symlink to {written}, outside the project; not written "
                              f"(name that file itself to write the report there)")
    if target.exists():
        for path in inputs:
            try:
                same = os.path.samefile(target, path)
            except OSError:
                continue
            if same:
                raise ConfigError(f"-o {name}: refusing to write the report over {path}, a file being checked")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"-o {name}: cannot create the folder {target.parent}: {exc.strerror or exc}") from None


def _create_beside(target: Path) -> tuple[int, Path]:
    """A new file in ``target``'s folder, created with the mode a new report would get (0666
    less the umask); never an existing file or a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        temp = target.parent / f".{target.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        try:
            return os.open(temp, flags, 0o666), temp
        except FileExistsError:
            continue


def _a_stream(name: str) -> bool:
    """Whether ``name`` is a device, a pipe or a descriptor (``-o /dev/stdout``): written as
    it is, there is no file to replace."""
    if os.path.abspath(name).startswith(("/dev/", "/proc/")):
        return True
    try:
        return not stat.S_ISREG(os.stat(name).st_mode)
    except OSError:
        return False


def write_report(name: str, text: str) -> None:
    """Replace the file ``name`` (the target of a symlink the check allowed) with ``text``, whole:
    on any error the old file stays as it was and no temporary file is left."""
    target = Path(os.path.realpath(name))
    temp = None
    try:
        if _a_stream(name):
            with open(name, "w", encoding="utf-8", errors="backslashreplace") as stream:
                stream.write(text)
            return
        fd, temp = _create_beside(target)
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)
        try:
            os.chmod(temp, target.stat().st_mode & 0o7777)  # a report it replaces keeps its mode
        except FileNotFoundError:
            pass
        os.replace(temp, target)
    except OSError as exc:
        raise ConfigError(f"-o {name}: cannot write: {exc.strerror or exc}") from None
    finally:
        if temp is not None and os.path.lexists(temp):
            os.unlink(temp)
