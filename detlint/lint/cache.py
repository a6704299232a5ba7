"""The facts cache: one JSON ``FileFacts`` per file content, in ``.detlint_cache/``.

Facts depend only on a file's bytes, its path, the knowledge base and detlint's version (the
target TensorFlow version and the configuration act later, when rules are evaluated), so those
make the key. Entries are data only (see ``facts_json``): the folder sits in the project tree,
where a cloned repository can put anything, so an entry that does not validate is a miss.
Entries are written atomically, which makes concurrent runs and interrupted writes harmless.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable, Optional

from detlint._version import __version__
from detlint.lint.facts_json import dump_facts, load_facts
from detlint.lint.ftypes import FileFacts
from detlint.lint.programs.outline import Outline, outline_from_json, outline_to_json

CACHEDIR_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This directory holds detlint's cache.\n"
MAX_ENTRY_BYTES = 64 * 1024 * 1024  # far above any real entry; a planted huge file is a miss


class FactsCache:
    def __init__(self, directory: Path, kb_digest: str) -> None:
        self.base = directory
        self.directory = directory / f"facts-{__version__}-{kb_digest}"
        self.hits = 0
        self.misses = 0

    def key(self, path: Path, data: bytes, links: Optional[dict[str, str]] = None) -> str:
        """``links``: what the file's names from project modules are, for facts that depend on
        those modules too (see links.py)."""
        digest = hashlib.sha256(os.fsencode(path) + b"\0" + data)  # a name that is not UTF-8 too
        if links:
            digest.update(b"\0" + json.dumps(links, sort_keys=True).encode())
        return digest.hexdigest()

    def _file(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, valid: Optional[Callable[[FileFacts], bool]] = None) -> Optional[FileFacts]:
        """The cached facts, or None (counted as a miss) when absent, unreadable or not valid;
        ``valid`` adds the caller's own checks (e.g. that each hit names a known rule)."""
        try:
            with open(self._file(key), "rb") as handle:
                data = handle.read(MAX_ENTRY_BYTES + 1)
            if len(data) > MAX_ENTRY_BYTES:
                raise ValueError("entry too large")
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
            with open(self._file(key).with_suffix(".outline.json"), "rb") as handle:
                return outline_from_json(handle.read(MAX_ENTRY_BYTES + 1))
        except (OSError, ValueError, RecursionError):
            return None

    def put_outline(self, key: str, sketch: Outline) -> None:
        self._write(self._file(key).with_suffix(".outline.json"), outline_to_json(sketch))

    def put(self, key: str, facts: FileFacts) -> None:
        self._write(self._file(key), dump_facts(facts, key))

    def _write(self, target: Path, data: bytes) -> None:
        try:
            self._make_directories()
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
        except OSError:
            pass  # a read-only checkout still lints, just without a cache

    def _make_directories(self) -> None:
        """Create the cache folders. CACHEDIR.TAG and a ``*`` .gitignore go only into a folder
        created here: ``--cache-dir .`` must not overwrite the project's own .gitignore."""
        for directory in (self.base, self.directory):
            if directory.is_dir():
                continue
            directory.parent.mkdir(parents=True, exist_ok=True)
            try:
                directory.mkdir()
            except FileExistsError:
                continue  # a concurrent run created it (and tags it)
            if directory == self.base or not (self.base / "CACHEDIR.TAG").exists():
                (directory / "CACHEDIR.TAG").write_text(CACHEDIR_TAG)
                (directory / ".gitignore").write_text("*\n")
