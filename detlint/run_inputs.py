"""What a check read from outside itself, so that a later run can tell whether any of it changed.

While a ``Journal`` records (``recording``), every file the process opens for reading, every
folder it lists, every path it asks the file system about (``os.stat``/``os.lstat``: what
``Path.exists()``, ``is_file()``, ``realpath`` and the like use) and every folder git runs in are
noted, by an audit hook and by wrapping ``os.stat``/``os.lstat``. ``snapshot`` turns the notes into
data: a digest per file, the names per folder, what each probed path is, and the state of each git
repository (what ``git_state`` reads). ``unchanged`` answers, from that data alone, whether the
same inputs are still there, without running anything.

Left out: detlint's own code and rules (the replay key has their digests), the folders given to
``skip`` (caches: derived data), compiled modules and library sources the interpreter imports.
Each file's metadata (size, times, inode) is noted and each folder listed when the run opens it,
and again at the snapshot, which digests the files: a snapshot is refused (None) when an input
changed while the run went on (beyond the cache folders the
run itself makes), when the run started a program other than git, or when a file it checked lies
among the library sources.
"""
from __future__ import annotations

import hashlib
import os
import stat
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, TypeVar

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | getattr(os, "O_DIRECTORY", 0)
_LIBRARY_SUFFIXES = (".py", ".pyc", ".pyi", ".so", ".pyd", ".pth")
_GLOBAL_GIT_FILES = ("~/.gitconfig", "~/.config/git/config", "~/.config/git/ignore", "~/.config/git/attributes",
                     "/etc/gitconfig")
T = TypeVar("T")
_SYSTEM = ("/proc", "/sys", "/dev") if os.name == "posix" else ()
_current: Optional["Journal"] = None
_hooked = False
_lock = threading.Lock()


class Journal:
    def __init__(self, skip: tuple[str, ...] = ()) -> None:
        self.opened: dict[str, Optional[tuple[int, ...]]] = {}  # path -> its signature when first opened
        self.listed: dict[str, Optional[list[list[str]]]] = {}  # path -> its entries when first listed
        self.probed: set[tuple[Any, bool]] = set()  # (path as given, whether symlinks were followed)
        self.git: set[str] = set()
        self.globbed: dict[tuple[str, str], list[str]] = {}  # (folder, pattern) -> names when first asked
        self.refused = ""
        # /proc and the like: a process's own state (a worker's CPU time), not the project's
        self.skip = [os.path.abspath(s) for s in (*skip, *_SYSTEM)]
        self.checked: list[str] = []
        self.busy = threading.local()  # the journal's own reads are not the run's
        self.library = _library_folders()

    def noted(self, path: str) -> bool:
        """Whether a path is an input worth noting (not a cache, not a library module)."""
        return not (self._skipped(path) or (path.endswith(_LIBRARY_SUFFIXES) and _below(path, self.library)))

    def exclude(self, folder: str) -> None:
        """Reads below ``folder`` are not inputs (a cache: what is there was made from inputs)."""
        self.skip.append(os.path.abspath(folder))

    def refuse(self, why: str) -> None:
        self.refused = self.refused or why

    def _own_entries(self, folder: str, before: Any, after: Any) -> bool:
        """Whether a folder's entries differ only by the cache folders the run made in it."""
        if before is None or after is None:
            return False
        changed = {tuple(e) for e in before} ^ {tuple(e) for e in after}
        return all(self._skipped(os.path.join(folder, name)) for name, _ in changed)

    def _skipped(self, path: str) -> bool:
        return any(path == s or path.startswith(s.rstrip(os.sep) + os.sep) for s in self.skip)

    def snapshot(self) -> Optional[dict[str, Any]]:
        """The inputs as data, or None when they cannot be trusted to describe the run."""
        if self.refused:
            return None
        library = self.library
        if any(_below(path, library) for path in self.checked):
            return None  # a checked file among the library sources, which are not inputs
        files: dict[str, Optional[str]] = {}
        for path, first in sorted(self.opened.items()):
            if not self.noted(path):
                continue
            if signature(path) != first:
                return None  # changed while the run went on: which version did it read?
            files[path] = file_digest(path)
        listings: dict[str, Optional[list[list[str]]]] = {}
        for path, first in sorted(self.listed.items()):
            if self._skipped(path):
                continue
            listings[path] = listing(path)
            if listings[path] != first and not self._own_entries(path, first, listings[path]):
                return None
        globs: list[list[Any]] = []
        for (folder, pattern), first in sorted(self.globbed.items()):
            now = _matching(folder, pattern)
            if now != first:
                return None
            globs.append([folder, pattern, now])
        probes: dict[str, str] = {}
        probed = sorted({(p, f) for raw, f in self.probed if (p := _path_of(raw)) is not None})
        for path, follow in probed:
            if not self._skipped(path):  # "l:" marks a path asked about without following links
                probes[("" if follow else "l:") + path] = kind_of(path, follow)
        git: dict[str, str] = {}
        for folder in sorted(self.git):
            git[folder] = git_state(folder)
            # git reads the .gitignore of every folder from the repository's top to a file's
            for path, _follow in probed:
                if os.path.basename(path) == ".gitignore" and path not in files:
                    files[path] = file_digest(path)
        return {"files": files, "listings": listings, "globs": globs, "probes": probes, "git": git}


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
    (never opened then: a FIFO would block)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):  # a huge file is not held in memory
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None


def listing(path: str) -> Optional[list[list[str]]]:
    """A folder's entries as ``[name, "d"|"f"|"o"]``, sorted; None when it cannot be listed."""
    try:
        with os.scandir(path) as entries:
            return sorted([e.name, "d" if e.is_dir() else "f" if e.is_file() else "o"] for e in entries)
    except OSError:
        return None


def kind_of(path: str, follow: bool) -> str:
    """What a probed path is: absent, dir, file, other, or (not followed) a link and its target."""
    prefix = "" if follow else "l:"
    try:
        mode = (os.stat if follow else os.lstat)(path).st_mode
    except OSError:
        return prefix + "absent"
    if stat.S_ISLNK(mode):
        try:
            return f"{prefix}link:{os.readlink(path)}"
        except OSError:
            return prefix + "link"
    return prefix + ("dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other")


def git_state(folder: str) -> str:
    """What git's answers in ``folder`` depend on, read without running git: the repository's HEAD
    and the ref it names, the index's size and time, its config and exclude files, and the user's
    and system's git configuration (with any excludes file it names). Changes to any of these
    change the string."""
    parts: list[str] = []
    here = os.path.abspath(folder)
    while True:
        dot_git = os.path.join(here, ".git")
        if os.path.lexists(dot_git):
            break
        parent = os.path.dirname(here)
        if parent == here:
            dot_git = ""
            break
        here = parent
    if dot_git:
        git_dir = dot_git
        if os.path.isfile(dot_git):  # a worktree or submodule: "gitdir: PATH"
            parts.append(f"gitfile:{file_digest(dot_git)}")
            try:
                with open(dot_git, encoding="utf-8", errors="replace") as handle:
                    git_dir = os.path.join(here, handle.read().partition("gitdir:")[2].strip())
            except OSError:
                pass
        common = git_dir
        try:
            with open(os.path.join(git_dir, "commondir"), encoding="utf-8", errors="replace") as handle:
                common = os.path.join(git_dir, handle.read().strip())
        except OSError:
            pass
        head = _text(os.path.join(git_dir, "HEAD"))
        parts.append(f"head:{head}")
        if head.startswith("ref:"):
            ref = head[4:].strip()
            parts.append(f"ref:{file_digest(os.path.join(git_dir, ref))}:{file_digest(os.path.join(common, ref))}")
        parts.append(f"packed:{file_digest(os.path.join(common, 'packed-refs'))}")
        try:
            index = os.stat(os.path.join(git_dir, "index"))
            parts.append(f"index:{index.st_mtime_ns}:{index.st_size}")
        except OSError:
            parts.append("index:-")
        for name in ("config", "info/exclude", "shallow", "objects/info/alternates"):
            parts.append(f"{name}:{file_digest(os.path.join(common, name))}")
        parts.append(f"worktree-config:{file_digest(os.path.join(git_dir, 'config.worktree'))}")
    configs = [os.path.expanduser(p) for p in _GLOBAL_GIT_FILES]
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        configs += [os.path.join(xdg, "git", "config"), os.path.join(xdg, "git", "ignore")]
    for path in configs:
        parts.append(f"{path}:{file_digest(path)}")
        for line in _text(path).splitlines():  # core.excludesFile = PATH: git reads that file too
            key, _, value = line.partition("=")
            if key.strip().lower() == "excludesfile":
                named = os.path.expanduser(value.strip().strip('"'))
                parts.append(f"{named}:{file_digest(named)}")
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _text(path: str) -> str:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return ""
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 20)
    except OSError:
        return ""


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
                   "probed": journal.probed,
                   "git": journal.git, "refused": journal.refused}


def merge_notes(notes: Optional[dict[str, Any]]) -> None:
    journal = _current
    if journal is None or notes is None:
        return
    for path, digest in notes["opened"].items():
        journal.opened.setdefault(path, digest)
    for path, names in notes["listed"].items():
        journal.listed.setdefault(path, names)
    for where, names in notes["globbed"].items():
        journal.globbed.setdefault(where, names)
    journal.probed |= notes["probed"]
    journal.git |= notes["git"]
    if notes["refused"]:
        journal.refuse(notes["refused"])


def _hook(event: str, args: tuple[Any, ...]) -> None:
    journal = _current
    if journal is None or getattr(journal.busy, "on", False):
        return
    if event == "open":
        path, mode, flags = args
        writes = (mode is None and flags & _WRITE_FLAGS) or (isinstance(mode, str) and any(c in mode for c in "wax+"))
        name = None if writes else _path_of(path)
        if name is not None and name not in journal.opened and journal.noted(name):
            journal.busy.on = True
            try:
                journal.opened[name] = signature(name)
            finally:
                journal.busy.on = False
    elif event in ("os.listdir", "os.scandir"):
        name = _path_of(args[0] if args and args[0] is not None else ".")
        if name is not None and name not in journal.listed:
            journal.busy.on = True
            try:
                journal.listed[name] = listing(name)
            finally:
                journal.busy.on = False
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
        if folder is not None:
            journal.git.add(folder)
    elif event in ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile"):
        journal.refuse(event)


def _probing(original: Any, follow: bool) -> Any:
    def probe(path: Any, *args: Any, **kwargs: Any) -> Any:
        journal = _current
        if journal is not None and kwargs.get("dir_fd") is None and not getattr(journal.busy, "on", False):
            if not isinstance(path, int):  # made absolute at the snapshot: this runs on every stat
                try:
                    journal.probed.add((os.fspath(path), follow and kwargs.get("follow_symlinks", True)))
                except TypeError:
                    pass
        return original(path, *args, **kwargs)
    probe.__wrapped__ = original  # type: ignore[attr-defined]
    return probe


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
        os.stat, os.lstat = _probing(os.stat, True), _probing(os.lstat, False)  # type: ignore[assignment]
    try:
        yield journal
    finally:
        with _lock:
            os.stat, os.lstat = saved  # type: ignore[assignment]
            _current = None
