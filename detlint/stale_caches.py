"""Old caches go. A cache is named for the detlint version, code and knowledge base that wrote it
(the facts folders ``facts-{version}-{kb}-{code}`` in a project's ``.detlint_cache/``, the
knowledge-base files ``kb-{version}-{code}-{yaml}.json`` in the user's cache), so each upgrade or
edited checkout starts a new one. Each run marks the one it uses (its modification time) and
removes those of the same kind beside it that no run used for an hour.

Only names of detlint's own patterns are removed (those of earlier versions too), only inside the
cache folder, and never through a symlink: a link named like an entry is left alone, and so is
what it points to. Another detlint may be running beside this one (another version or checkout):
what it used in the last hour stays, and a folder goes by a rename to a hidden name first, so that
a run still reading it meets a miss, never a half-removed folder. A removal cut short (a kill, a
full disk) is finished by a later run.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import time
from pathlib import Path

UNUSED_S = 3600.0  # an entry no run used for this long is removed
_VERSION = r"[0-9A-Za-z.+!]+"
_HEX16 = "[0-9a-f]{16}"
# facts-{version}-{kb}-{code}; facts-{version}-{kb} before the code digest
FACTS_FOLDERS = re.compile(rf"facts-{_VERSION}-{_HEX16}(?:-{_HEX16})?")
# kb-{version}-{code}-{yaml}.json; kb-{version}-{yaml}.json and .pickle before; a write cut short:
# .kb-...json.XXXXXXXX.detlint-tmp (whole_writes), .kb-XXXXXXXX before
_KB = rf"kb-{_VERSION}(?:-{_HEX16})?-[0-9a-f]{{24}}\.(?:json|pickle)"
KB_FILES = re.compile(rf"{_KB}|\.{_KB}\.[0-9a-f]{{8}}\.detlint-tmp|\.kb-[a-z0-9_]{{8}}")
_REMOVING = re.compile(r"\.(.+)\.removing-[0-9a-f]{16}")  # a folder being removed (see _remove_folder)


def keep_only_used(current: Path, names: "re.Pattern[str]") -> None:
    """Mark ``current`` as used, and remove the entries beside it whose names match ``names``
    that no run used for ``UNUSED_S``. Nothing here fails a run: what cannot be done is left."""
    try:
        os.utime(current, follow_symlinks=os.utime not in os.supports_follow_symlinks)  # the link itself where it can
    except OSError:
        pass  # not written yet, or a read-only checkout
    if not shutil.rmtree.avoids_symlink_attacks:  # a removal that could follow a link planted inside
        return
    unused_since = time.time() - UNUSED_S
    try:
        entries = list(os.scandir(current.parent))
    except OSError:
        return
    for entry in entries:
        removing = _REMOVING.fullmatch(entry.name)
        if entry.name == current.name or not names.fullmatch(removing.group(1) if removing else entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # gone already: another run removed it
        if not removing and info.st_mtime > unused_since:
            continue  # used in the last hour, maybe by another detlint running now
        if stat.S_ISDIR(info.st_mode):
            _remove_folder(Path(entry.path), renamed=bool(removing))
        elif stat.S_ISREG(info.st_mode):
            try:
                os.unlink(entry.path)
            except OSError:
                pass
        # a symlink or anything else is not detlint's: left alone


def _remove_folder(folder: Path, renamed: bool) -> None:
    """Renamed to a hidden name first (one step: a reader finds the whole folder or none), then
    removed without following any link inside (``shutil.rmtree`` refuses a link as its top)."""
    if not renamed:
        hidden = folder.with_name(f".{folder.name}.removing-{secrets.token_hex(8)}")
        try:
            os.rename(folder, hidden)
        except OSError:
            return  # another run took it first
        folder = hidden
    shutil.rmtree(folder, ignore_errors=True)
