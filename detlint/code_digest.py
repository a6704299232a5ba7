"""A digest of detlint's own Python sources, for the names of its caches.

Cached facts and outlines are what detlint's code made of a file: code changed within one version
(an upgrade from a development checkout, a patched install) may number lines or decide verdicts
differently, so a cache written by other code must never be read. Reading every module of the
package once per run costs a few milliseconds (about 80 files, 0.7 MB).
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def code_digest() -> str:
    """16 hex digits naming the package's ``.py`` files (by their place in it) and their bytes."""
    digest = hashlib.sha256()
    for folder, subfolders, names in os.walk(PACKAGE):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(n for n in names if n.endswith(".py")):
            path = Path(folder, name)
            try:
                data = path.read_bytes()
            except OSError as exc:  # stays unreadable: the digest is still the same from run to run
                data = f"unreadable: {exc.errno}".encode()
            relative = path.relative_to(PACKAGE).as_posix().encode("utf-8", "surrogateescape")
            digest.update(b"%d:%s\0%d:" % (len(relative), relative, len(data)) + data)
    return digest.hexdigest()[:16]
