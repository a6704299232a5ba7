"""The ``-o`` report file: checked before any work, written at the end in one piece.

A report never goes through a symlink that leaves the project (a committed
``detlint-report.txt -> ~/.bashrc``) unless the user names a path outside the project; it is
written to a temporary file beside its target and renamed over it, so an old report is replaced
whole or kept, and a file hard-linked to it elsewhere is never changed."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from detlint.lint.files.named_paths import within
from detlint.lint.files.whole_writes import current_mode, replace_beside, replace_in
from detlint.settings.config import ConfigError

_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
# written through the checked folder's descriptor where the platform can (not Windows; os.replace
# takes the descriptors where os.rename does)
_AT_FOLDER = {os.open, os.stat, os.rename, os.unlink} <= os.supports_dir_fd and hasattr(os, "fchmod")


@dataclass(frozen=True)
class ReportTarget:
    """Where the check found the report goes: the real folder (and its identity, so that a folder
    swapped for a link during the run is noticed) and the file's name in it."""
    folder: Path
    file: str
    identity: tuple[int, int]


def _inside(name: str, projects: Iterable[Path]) -> list[Path]:
    """The projects (real roots) that hold ``name`` as the user wrote it, or its folder really."""
    written = Path(os.path.abspath(name))
    named = (written, Path(os.path.realpath(written.parent)) / written.name)
    roots = {Path(os.path.realpath(p)): {Path(os.path.abspath(p)), Path(os.path.realpath(p))} for p in projects}
    return [real for real, forms in roots.items() if any(within(n, f) for n in named for f in forms)]


def _refuse_leaving(name: str, projects: Iterable[Path]) -> Path:
    """The file ``name`` really is; ConfigError where it is in a project and its target leaves that
    project (a repository named inside a folder without markers is a project of its own)."""
    written = Path(os.path.realpath(name))
    if not all(within(written, root) for root in _inside(name, projects)):
        raise ConfigError(f"-o {name}: is a symlink to {written}, outside the project; not written "
                          f"(name that file itself to write the report there)")
    return written


def check_output_file(name: Optional[str], inputs: list[Path], projects: Iterable[Path]) -> Optional[ReportTarget]:
    """Before any work: refuse to write the report over a file being checked, or through a
    symlink from inside one of ``projects`` (the roots of every path named and of the working
    folder) to outside it; create the report's folder when it does not exist yet. The answer is
    where ``write_report`` writes (None: no report, or a stream written as it is)."""
    if not name:
        return None
    projects = list(projects)
    target = Path(name)
    if target.is_dir():
        raise ConfigError(f"-o {name}: is a folder, not a file")
    _refuse_leaving(name, projects)
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
    if _a_stream(name):
        return None
    written = _refuse_leaving(name, projects)  # again, now that its folder exists
    try:
        info = os.stat(written.parent)
    except OSError as exc:
        raise ConfigError(f"-o {name}: cannot write: {exc.strerror or exc}") from None
    return ReportTarget(written.parent, written.name, (info.st_dev, info.st_ino))


def _a_stream(name: str) -> bool:
    """Whether ``name`` is a device, a pipe or a descriptor (``-o /dev/stdout``): written as
    it is, there is no file to replace."""
    if os.path.abspath(name).startswith(("/dev/", "/proc/")):
        return True
    try:
        return not stat.S_ISREG(os.stat(name).st_mode)
    except OSError:
        return False


def write_report(name: str, text: str, checked: Optional[ReportTarget] = None) -> None:
    """Replace the file the check found (``checked``; the target of a symlink it allowed) with
    ``text``, whole, through the folder it checked: a folder swapped for a link since is refused.
    On any error the old file stays as it was and no temporary file is left."""
    if checked is None or not _AT_FOLDER:
        _write_by_name(name, text)
        return
    try:
        folder = os.open(checked.folder, _FOLDER)
    except OSError as exc:
        raise ConfigError(f"-o {name}: cannot write: {exc.strerror or exc}") from None
    try:
        info = os.fstat(folder)
        if (info.st_dev, info.st_ino) != checked.identity:
            raise ConfigError(f"-o {name}: its folder {checked.folder} was replaced during the run; not written")
        mode = current_mode(Path(checked.file), folder)  # a report it replaces keeps its mode
        replace_in(folder, checked.file, text.encode("utf-8", "backslashreplace"), mode)
    except OSError as exc:
        raise ConfigError(f"-o {name}: cannot write: {exc.strerror or exc}") from None
    finally:
        os.close(folder)


def _write_by_name(name: str, text: str) -> None:
    """``write_report`` where there is no folder to write through (a stream; Windows)."""
    target = Path(os.path.realpath(name))
    try:
        if _a_stream(name):
            with open(name, "w", encoding="utf-8", errors="backslashreplace") as stream:
                stream.write(text)
            return
        replace_beside(target, text.encode("utf-8", "backslashreplace"), current_mode(target))
    except OSError as exc:
        raise ConfigError(f"-o {name}: cannot write: {exc.strerror or exc}") from None
