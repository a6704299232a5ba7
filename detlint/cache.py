"""The facts cache: one pickled ``FileFacts`` per file content, in ``.detlint_cache/``.

Facts depend only on a file's bytes, its path, the knowledge base and detlint's version (the
target TensorFlow version and the configuration act later, when rules are evaluated), so those
make the key. Entries are written atomically; an unreadable entry is treated as missing, which
makes concurrent runs and interrupted writes harmless.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Optional

from . import __version__
from .ftypes import FileFacts

CACHEDIR_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This directory holds detlint's cache.\n"


class FactsCache:
    def __init__(self, directory: Path, kb_digest: str) -> None:
        self.base = directory
        self.directory = directory / f"facts-{__version__}-{kb_digest}"
        self.hits = 0
        self.misses = 0

    def key(self, path: Path, data: bytes) -> str:
        digest = hashlib.sha256(str(path).encode() + b"\0" + data)
        return digest.hexdigest()

    def _file(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.pickle"

    def get(self, key: str) -> Optional[FileFacts]:
        try:
            with open(self._file(key), "rb") as handle:
                facts = pickle.load(handle)
        except FileNotFoundError:
            self.misses += 1
            return None
        except Exception:  # corrupt, truncated or from another Python: recompute
            self.misses += 1
            return None
        if not isinstance(facts, FileFacts):
            self.misses += 1
            return None
        self.hits += 1
        return facts

    def put(self, key: str, facts: FileFacts) -> None:
        target = self._file(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._tag()
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(facts, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, target)
        except OSError:
            pass  # a read-only checkout still lints, just without a cache

    def _tag(self) -> None:
        tag = self.base / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text(CACHEDIR_TAG)
            (self.base / ".gitignore").write_text("*\n")
