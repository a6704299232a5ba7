"""The facts cache: one JSON ``FileFacts`` per file content, in ``.detlint_cache/``.

Facts depend only on a file's bytes, its path, the knowledge base and detlint's code (the
target TensorFlow version and the configuration act later, when rules are evaluated), so those
make the key: the code by its version and a digest of the package's sources (``code_digest``), so
that code changed within one version never reads what older code wrote; the folders older code
wrote go once no run has used them for an hour (``stale_caches``). Entries are data only
(see ``facts_json``): the folder sits in the project tree, where a cloned repository can put
anything, so an entry that does not validate is a miss.

The same repository may commit ``.detlint_cache`` as a symlink, set ``cache-dir`` to a folder
elsewhere or plant links inside the cache: the project's folder is used only where it stays in the
project (``cache_folder``), and every write goes down the folders one by one without following a
link, to a temporary file renamed over the entry, which also makes concurrent runs and interrupted
writes harmless.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Callable, Optional

from detlint._version import __version__
from detlint.code_digest import code_digest
from detlint.lint.facts_json import dump_facts, load_facts
from detlint.lint.files.sources import read_regular
from detlint.lint.files.whole_writes import replace_in
from detlint.lint.ftypes import FileFacts
from detlint.lint.programs.outline import Outline, outline_from_json, outline_to_json
from detlint.settings.config import warn
from detlint.stale_caches import FACTS_FOLDERS, keep_only_used

CACHEDIR_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This directory holds detlint's cache.\n"
MAX_ENTRY_BYTES = 64 * 1024 * 1024  # far above any real entry; a planted huge file is a miss
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
# writes go folder by folder through descriptors (openat, mkdirat, renameat); where the platform
# has none of these (Windows), the cache is read but not written
_WRITES = {os.open, os.mkdir, os.rename, os.unlink} <= os.supports_dir_fd


def cache_folder(setting: str, root: Path, named: Optional[str] = None) -> Optional[Path]:
    """Where a run keeps its facts cache. A folder the user named (``--cache-dir``) is used as
    given, wherever it is. The project's ``cache-dir`` (default ``.detlint_cache``) is used only
    inside the project with no symlink on the way: a cloned repository cannot point detlint's
    writes elsewhere. Otherwise None, said in one line: the run goes on without the cache."""
    if named:
        return Path(named)
    root = root.resolve()
    relative = Path(setting)
    if relative.is_absolute():
        try:
            relative = relative.relative_to(root)
        except ValueError:
            return _unused(f"cache-dir = {setting!r} is outside the project {root}")
    folder = root
    for part in relative.parts:
        if part == "..":
            return _unused(f"cache-dir = {setting!r} leads out of the project {root}")
        folder = folder / part
        if folder.is_symlink():
            return _unused(f"{folder} is a symlink (cache-dir = {setting!r}), which the cache does not follow")
    return folder


def _unused(why: str) -> None:
    warn(f"{why}; running without the facts cache (--cache-dir DIR names a folder to use)")
    return None


class FactsCache:
    def __init__(self, directory: Path, kb_digest: str) -> None:
        self.base = directory
        self.directory = directory / f"facts-{__version__}-{kb_digest}-{code_digest()}"
        self.hits = 0
        self.misses = 0
        self._tidied = False

    def key(self, path: Path, data: bytes, links: Optional[dict[str, str]] = None) -> str:
        """``links``: what the file's names from project modules are, for facts that depend on
        those modules too (see links.py)."""
        digest = hashlib.sha256(os.fsencode(path) + b"\0" + data)  # a name that is not UTF-8 too
        if links:
            digest.update(b"\0" + json.dumps(links, sort_keys=True).encode())
        return digest.hexdigest()

    def _file(self, key: str) -> Path:
        if not self._tidied:  # the run's first use: older code's and knowledge bases' folders go
            self._tidied = True
            keep_only_used(self.directory, FACTS_FOLDERS)
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, valid: Optional[Callable[[FileFacts], bool]] = None) -> Optional[FileFacts]:
        """The cached facts, or None (counted as a miss) when absent, unreadable or not valid;
        ``valid`` adds the caller's own checks (e.g. that each hit names a known rule)."""
        try:
            data = _read_entry(self._file(key))
            facts = load_facts(data, key)
            if valid is not None and not valid(facts):
                raise ValueError("entry does not fit the knowledge base")
        except (OSError, ValueError):  # absent, corrupt, truncated or tampered with: recompute
            self.misses += 1
            return None
        self.hits += 1
        return facts

    def get_outline(self, key: str) -> Optional[Outline]:
        """A module's outline (see ``outline``), kept beside its facts; None when absent or bad."""
        try:
            return outline_from_json(_read_entry(self._file(key).with_suffix(".outline.json")))
        except (OSError, ValueError, RecursionError):
            return None

    def put_outline(self, key: str, sketch: Outline) -> None:
        self._write(self._file(key).with_suffix(".outline.json"), outline_to_json(sketch))

    def put(self, key: str, facts: FileFacts) -> None:
        self._write(self._file(key), dump_facts(facts, key))

    def _write(self, target: Path, data: bytes) -> None:
        """``target`` (below the cache folder) whole or not at all."""
        if not _WRITES:
            return
        try:
            folder = self._open_folders(target.relative_to(self.base).parts[:-1])
        except OSError:
            return  # a read-only checkout, or a link planted in the cache: no cache for this file
        try:
            replace_in(folder, target.name, data)
        except OSError:
            pass  # a full disk: the entry is not written, and no part of it is left
        finally:
            os.close(folder)

    def _open_folders(self, parts: tuple[str, ...]) -> int:
        """A descriptor of the folder ``parts`` below the cache folder, each created when missing
        and opened without following a symlink. CACHEDIR.TAG and a ``*`` .gitignore go only into
        a folder created here: ``--cache-dir .`` must not overwrite the project's own .gitignore."""
        made = False
        if not self.base.is_dir():
            self.base.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):  # a concurrent run created it (and tags it)
                self.base.mkdir()
                made = True
        folder = os.open(self.base, _FOLDER)  # checked by cache_folder, or named by the user
        try:
            if made:
                _tag(folder)
            tagged = made or _exists(folder, "CACHEDIR.TAG")
            for depth, name in enumerate(parts):
                made = False
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=folder)
                    made = True
                inner = os.open(name, _FOLDER | _NOFOLLOW, dir_fd=folder)  # ELOOP or ENOTDIR on a link
                os.close(folder)
                folder = inner
                if made and depth == 0 and not tagged:
                    _tag(folder)
        except BaseException:
            os.close(folder)
            raise
        return folder


def _read_entry(path: Path) -> bytes:
    """An entry's bytes: a regular file, not through a final symlink, opened without waiting (a
    FIFO planted in the cache gives no hang) and read up to ``MAX_ENTRY_BYTES``."""
    data = read_regular(path, MAX_ENTRY_BYTES + 1, follow_symlinks=False)
    if len(data) > MAX_ENTRY_BYTES:
        raise ValueError("entry too large")
    return data


def _tag(folder: int) -> None:
    for name, text in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "*\n")):
        replace_in(folder, name, text.encode())


def _exists(folder: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return False
    return True
