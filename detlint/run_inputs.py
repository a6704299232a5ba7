"""What a check read from outside itself, so that a later run can tell whether any of it changed.

While a ``Journal`` records (``recording``), it notes, as the run uses them:

* every file the process opens for reading (an audit hook), by its metadata then;
* every folder it lists, by its entries then; where it only asks for names matching a glob
  (``names_matching``: the folders above the project), by those names;
* every path it asks the file system about (``os.stat``/``os.lstat`` are wrapped: what
  ``exists()``, ``is_file()`` and ``realpath`` use), by what the answer said: absent, a folder, a
  file and its size, a link and its target;
* every folder git runs in, by ``git_inputs.git_state`` then, and the ``.gitignore`` files asked
  about before it, by their metadata.

``snapshot`` checks each against the present (a change while the run went on refuses the snapshot:
which version did the run see?) and turns them into data: a digest per file, the entries per folder,
the kind per path, a digest per git repository. ``unchanged`` answers from that data alone whether
the same inputs are still there.

Not inputs: what is in the folders given to ``skip`` and ``exclude`` (caches: derived data; whether
a folder given to ``present_at_end`` is there is, as it is at the end), the process's own state under
/proc, /sys, /dev/fd, and modules the interpreter imports (detlint's own code is in the replay key,
its digest). A snapshot is also refused when the run started a program other than git, or when a
file it checked lies where reads are not noted.
"""
from __future__ import annotations

import hashlib
import os
import stat
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, TypeVar

from detlint.git_inputs import git_state as _git_state
from detlint.lint.files.sources import open_regular

T = TypeVar("T")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | getattr(os, "O_DIRECTORY", 0)
_MODULE_SUFFIXES = (".py", ".pyc", ".pyi", ".so", ".pyd", ".pth")
_SYSTEM = ("/proc", "/sys", "/dev/fd", "/dev/pts") if os.name == "posix" else ()
_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "subprocess.Popen", "os.system", "os.exec",
                     "os.posix_spawn", "os.spawn", "os.startfile"})
_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_current: Optional["Journal"] = None
_hooked = False
_lock = threading.Lock()


class Journal:
    def __init__(self, skip: tuple[str, ...] = ()) -> None:
        self.opened: dict[str, Optional[tuple[int, ...]]] = {}  # path -> its signature when first opened
        self.listed: dict[str, Optional[list[list[str]]]] = {}  # path -> its entries when first listed
        self.globbed: dict[tuple[str, str], list[str]] = {}  # (folder, pattern) -> names when first asked
        self.probed: dict[tuple[Any, bool], str] = {}  # (path as given, followed links) -> kind when first asked
        self.git: dict[str, str] = {}  # folder -> git_state when git first ran there
        self.refused = ""
        self.skip = [os.path.abspath(s) for s in (*skip, *_SYSTEM)]
        self.quiet: set[str] = set()
        self.checked: list[str] = []
        self.busy = threading.local()  # the journal's own reads are not the run's
        self.library = _library_folders()

    def noted(self, path: str) -> bool:
        """Whether reading ``path`` is an input (not a cache, not a module being imported)."""
        module = path.endswith(_MODULE_SUFFIXES) and (_below(path, self.library) or _below(path, (_PACKAGE,)))
        return not (module or self._skipped(path))

    def exclude(self, folder: str) -> None:
        """What is below ``folder`` is not an input (a cache: it was made from inputs)."""
        self.skip.append(os.path.abspath(folder))

    def present_at_end(self, folder: str) -> None:
        """Whether ``folder`` is there is an input, as it is at the end (a cache the run may make)."""
        self.quiet.add(os.path.abspath(folder))

    def refuse(self, why: str) -> None:
        self.refused = self.refused or why

    def _skipped(self, path: str) -> bool:
        return _below(path, tuple(self.skip))

    def _made_here(self, folder: str, before: Any, after: Any) -> bool:
        """Whether a folder's entries changed only by a cache folder the run made in it."""
        if before is None or after is None:
            return False
        changed = {name for name, _ in before} ^ {name for name, _ in after}
        return all(self._skipped(p) or p in self.quiet for p in (os.path.join(folder, n) for n in changed))

    def snapshot(self) -> Optional[dict[str, Any]]:
        """The inputs as data, or None when they cannot be trusted to describe the run."""
        if self.refused:
            return None
        unnoted = (*self.library, *self.skip, _PACKAGE)
        if any(_below(path, unnoted) for path in self.checked):
            return None  # a checked file where reads are not noted
        files: dict[str, Optional[str]] = {}
        for path, first in sorted(self.opened.items()):
            if self.noted(path):
                if signature(path) != first:
                    return None
                files[path] = file_digest(path)
        listings: dict[str, Optional[list[list[str]]]] = {}
        for path, first in sorted(self.listed.items()):
            if not self._skipped(path):
                listings[path] = listing(path)
                if listings[path] != first and not self._made_here(path, first, listings[path]):
                    return None
        globs: list[list[Any]] = []
        for (folder, pattern), first in sorted(self.globbed.items()):
            if _matching(folder, pattern) != first:
                return None
            globs.append([folder, pattern, first])
        probes: dict[str, str] = {}
        for (raw, follow), first in self.probed.items():
            path = _path_of(raw)
            if path is None or self._skipped(path) or path in self.quiet:
                continue
            if kind_of(path, follow) != first:
                return None
            probes[("" if follow else "l:") + path] = first  # "l:": asked about without following links
        for folder in self.quiet:  # a cache folder the run made or used: deleting it ends replays
            probes[folder] = kind_of(folder, True)
        for folder, first in self.git.items():
            if git_state(folder) != first:
                return None
        return {"files": files, "listings": listings, "globs": globs, "probes": dict(sorted(probes.items())),
                "git": dict(sorted(self.git.items()))}


def unchanged(inputs: dict[str, Any]) -> bool:
    """Whether every input a snapshot describes is still the same (False on malformed data)."""
    try:
        return (all(file_digest(p) == d for p, d in inputs["files"].items())
                and all(listing(p) == names for p, names in inputs["listings"].items())
                and all(_matching(folder, pattern) == names for folder, pattern, names in inputs["globs"])
                and all(kind_of(p.removeprefix("l:"), not p.startswith("l:")) == k
                        for p, k in inputs["probes"].items())
                and all(git_state(folder) == state for folder, state in inputs["git"].items()))
    except (KeyError, TypeError, AttributeError, ValueError):
        return False


def signature(path: str) -> Optional[tuple[int, ...]]:
    """What changes when a file is written, replaced or touched (None: absent)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def file_digest(path: str) -> Optional[str]:
    """The SHA-256 of a regular file's bytes; None when absent, unreadable or not a regular file
    (``open_regular``: a FIFO put in its place is not waited on)."""
    try:
        fd, _ = open_regular(path)
    except OSError:
        return None
    try:
        digest = hashlib.sha256()
        for block in iter(lambda: os.read(fd, 1 << 20), b""):  # a huge file is not held in memory
            digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def git_state(folder: str) -> str:
    return _git_state(folder, file_digest)


def listing(path: str) -> Optional[list[list[str]]]:
    """A folder's entries as ``[name, "d"|"f"|"o"]``, sorted; None when it cannot be listed."""
    try:
        with os.scandir(path) as entries:
            return sorted([e.name, "d" if e.is_dir() else "f" if e.is_file() else "o"] for e in entries)
    except OSError:
        return None


def kind_of(path: str, follow: bool) -> str:
    """What a path is: absent, dir, file:SIZE (a size decides whether a file is read at all),
    other, or, not following links, a link and its target; "l:" prefixes the kinds not followed."""
    try:
        info = (os.stat if follow else os.lstat)(path)
    except OSError:
        return ("" if follow else "l:") + "absent"
    return _kind(info.st_mode, info.st_size, path, follow)


def _kind(mode: int, size: int, path: Any, follow: bool) -> str:
    prefix = "" if follow else "l:"
    if stat.S_ISLNK(mode):
        try:
            return f"{prefix}link:{os.fsdecode(os.readlink(path))}"
        except OSError:
            return prefix + "link"
    if stat.S_ISDIR(mode):
        return prefix + "dir"
    return prefix + (f"file:{size}" if stat.S_ISREG(mode) else "other")


def names_matching(folder: "os.PathLike[str]", pattern: str) -> list[str]:
    """The names in ``folder`` that match the glob ``pattern``, sorted. Noted as an input of those
    names only, not of the whole folder's entries: a folder above the project (the user's home)
    changes all the time, its ``requirements*.txt`` hardly ever."""
    journal = _current
    if journal is not None:
        journal.busy.on = True
    try:
        found = _matching(os.fspath(folder), pattern)
    finally:
        if journal is not None:
            journal.busy.on = False
    if journal is not None:
        journal.globbed.setdefault((os.path.abspath(os.fspath(folder)), pattern), found)
    return found


def _matching(folder: str, pattern: str) -> list[str]:
    import fnmatch

    try:
        with os.scandir(folder) as entries:
            return sorted(e.name for e in entries if fnmatch.fnmatchcase(e.name, pattern))
    except OSError:
        return []


def with_notes(work: Callable[[], T]) -> tuple[T, Optional[dict[str, Any]]]:
    """``work()`` and, in a forked child of a recording process, what it noted (for
    ``merge_notes`` in the parent, whose journal does not see the child's reads)."""
    value = work()
    journal = _current
    if journal is None:
        return value, None
    return value, {"opened": journal.opened, "listed": journal.listed, "globbed": journal.globbed,
                   "probed": journal.probed, "git": journal.git, "refused": journal.refused}


def merge_notes(notes: Optional[dict[str, Any]]) -> None:
    journal = _current
    if journal is None or notes is None:
        return
    for name in ("opened", "listed", "globbed", "probed", "git"):
        mine = getattr(journal, name)
        for key, value in notes[name].items():
            mine.setdefault(key, value)
    if notes["refused"]:
        journal.refuse(notes["refused"])


def forget() -> None:
    """In a child process that reads nothing for the run (a parser worker): note nothing."""
    global _current
    _current = None


def _below(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)


def _library_folders() -> tuple[str, ...]:
    """Where the interpreter's own modules and installed packages live."""
    import sysconfig

    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            folders.add(sysconfig.get_path(name))
        except KeyError:
            pass
    return tuple(os.path.abspath(f) for f in folders if f)


def _path_of(value: Any) -> Optional[str]:
    if isinstance(value, int) or value is None:
        return None
    try:
        return os.path.abspath(os.fsdecode(value))
    except (TypeError, ValueError):
        return None


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event not in _EVENTS:  # every audit event comes here (builtins.id too): leave the rest at once
        return
    journal = _current
    if journal is None or getattr(journal.busy, "on", False):
        return
    journal.busy.on = True
    try:
        _note(journal, event, args)
    finally:
        journal.busy.on = False


def _note(journal: Journal, event: str, args: tuple[Any, ...]) -> None:
    if event == "open":
        path, mode, flags = args
        writes = (mode is None and flags & _WRITE_FLAGS) or (isinstance(mode, str) and any(c in mode for c in "wax+"))
        name = None if writes else _path_of(path)
        if name is not None and name not in journal.opened and journal.noted(name):
            journal.opened[name] = signature(name)
    elif event in ("os.listdir", "os.scandir"):
        name = _path_of(args[0] if args and args[0] is not None else ".")
        if name is not None and name not in journal.listed:
            journal.listed[name] = listing(name)
    elif event == "subprocess.Popen":
        executable, argv = args[0], args[1]
        program = os.path.basename(os.fsdecode(executable if executable is not None else
                                               (argv[0] if isinstance(argv, (list, tuple)) and argv else argv)))
        if program not in ("git", "git.exe"):
            journal.refuse(f"ran {program}")
            return
        where = args[2]
        if isinstance(argv, (list, tuple)) and "-C" in argv[:-1]:
            where = argv[list(argv).index("-C") + 1]
        folder = _path_of(where if where is not None else ".")
        if folder is not None and folder not in journal.git:
            journal.git[folder] = git_state(folder)
        # git reads the .gitignore of every folder from the repository's top to a file's: those
        # asked about (discovery checks each before git runs) are inputs as they are now
        for raw, _ in list(journal.probed):
            path = _path_of(raw)
            if path is not None and os.path.basename(path) == ".gitignore" and path not in journal.opened:
                journal.opened[path] = signature(path)
    else:
        journal.refuse(event)


def _probing(original: Any, follow: bool) -> Any:
    def probe(path: Any, *args: Any, **kwargs: Any) -> Any:
        journal = _current
        if journal is None or kwargs.get("dir_fd") is not None or isinstance(path, int) \
                or getattr(journal.busy, "on", False):
            return original(path, *args, **kwargs)
        followed = follow and kwargs.get("follow_symlinks", True)
        key = (path if isinstance(path, (str, bytes)) else os.fspath(path), followed)
        try:
            info = original(path, *args, **kwargs)
        except OSError:
            journal.probed.setdefault(key, ("" if followed else "l:") + "absent")
            raise
        if key not in journal.probed:  # what the run was told, as it was told (a later change refuses)
            journal.busy.on = True
            try:
                journal.probed[key] = _kind(info.st_mode, info.st_size, path, followed)
            finally:
                journal.busy.on = False
        return info
    probe.__wrapped__ = original  # type: ignore[attr-defined]
    return probe


_CAPABILITIES = ("supports_dir_fd", "supports_fd", "supports_follow_symlinks", "supports_effective_ids")


@contextmanager
def recording(skip: tuple[str, ...] = ()) -> Iterator[Journal]:
    """Notes this process's inputs until the block ends. One journal at a time: a nested or
    concurrent recording is refused."""
    global _current, _hooked
    journal = Journal(skip)
    with _lock:
        if _current is not None:
            journal.refuse("another recording")
            yield journal
            return
        if not _hooked:
            sys.addaudithook(_hook)  # for the process's life; inert while no journal records
            _hooked = True
        _current = journal
        saved = os.stat, os.lstat
        wrapped = _probing(os.stat, True), _probing(os.lstat, False)
        # a module that checks os.stat in os.supports_dir_fd (report_file.py) sees the same answer
        for name in _CAPABILITIES:
            capable: set[Any] = getattr(os, name, set())
            for original, wrapper in zip(saved, wrapped):
                if original in capable:
                    capable.add(wrapper)
        os.stat, os.lstat = wrapped  # type: ignore[assignment]
    try:
        yield journal
    finally:
        with _lock:
            os.stat, os.lstat = saved  # type: ignore[assignment]
            for name in _CAPABILITIES:
                for wrapper in wrapped:
                    getattr(os, name, set()).discard(wrapper)
            _current = None
