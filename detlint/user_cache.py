"""detlint's folder in the user's cache: the knowledge base's parsed copy, commit dates, replays."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def user_cache() -> Optional[Path]:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "detlint" if base else None
