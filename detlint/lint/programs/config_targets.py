"""Classes a project's configuration files name for instantiation.

``hydra.utils.instantiate(cfg.model)`` and the ``instantiate_from_config(config)`` helpers of
many research repositories build whatever class a YAML file names under ``_target_:`` or
``target:``. Which file a run uses comes from its command line, so any class the project's
configuration files name may be built: the program model takes them all as candidates. The
files are read as text (never loaded as YAML, whose tags can build objects), bounded in number
and size.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from detlint.lint.files.discovery import DEFAULT_EXCLUDES
from detlint.lint.files.sources import read_bytes

TARGET_RE = re.compile(rb"^[ \t]*_?target_?[ \t]*:[ \t]*[\"']?([A-Za-z_][\w.]*\.[A-Za-z_]\w*)[\"']?[ \t]*(?:#.*)?$",
                       re.MULTILINE)
CONFIG_SUFFIXES = (".yaml", ".yml")
MAX_FILES = 2000
MAX_BYTES = 256 * 1024


def config_targets(root: Path) -> list[str]:
    """The dotted names under ``target:``/``_target_:`` in the project's YAML files, first seen first."""
    found: dict[str, None] = {}
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in DEFAULT_EXCLUDES and not d.startswith("."))
        for name in sorted(filenames):
            if not name.endswith(CONFIG_SUFFIXES):
                continue
            seen += 1
            if seen > MAX_FILES:
                return list(found)
            data, _ = read_bytes(Path(dirpath, name), MAX_BYTES)  # regular files only, never a FIFO
            for match in TARGET_RE.finditer(data or b""):
                found.setdefault(match.group(1).decode("ascii"), None)
    return list(found)
