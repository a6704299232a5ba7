"""Names a file takes from project modules: what ``from ops import *`` or ``from pkg.backend
import keras`` really bring in.

A file's facts come from one walk of that file alone, so on its own the walk cannot know that
``keras`` from a project shim is ``tensorflow.keras``, or that ``Net`` from ``models`` is a
``keras.Model`` subclass. The exporting modules' facts say so (``FileFacts.exports``); this module
turns them into a map, keyed by the importing file's own spelling, that a second walk of the
importing file uses. The map is part of the facts cache key of that walk.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence

from .ftypes import FileFacts
from .names import member, within
from .program import ModuleResolver

Exporter = Callable[[Path], Optional[FileFacts]]


def links_for(path: Path, facts: FileFacts, resolver: ModuleResolver, facts_of: Exporter,
              frameworks: Sequence[str] = ()) -> dict[str, str]:
    """``{"ops.tf": "tensorflow", "ops.conv": "ops.conv", "pkg.backend.keras": "tensorflow.keras"}``:
    the names ``path`` imports from project modules, as it spells them, and what they are. Empty
    when it imports nothing of the kind (the usual case: no second walk). Names already spelled
    as a framework's (``frameworks``: the sources of Keras itself) need no link."""
    links: dict[str, str] = {}
    for module in facts.star_imports:
        if any(within(module, prefix) for prefix in frameworks):
            continue
        found = resolver.resolve(path, module)
        exporter = facts_of(found[0]) if found and not found[1] else None
        if exporter is None or exporter.error:
            continue
        for name, target in exporter.exports.items():
            if not name.startswith("_"):  # what `import *` leaves out
                links[member(module, name)] = target
        for name in [*exporter.functions, *exporter.classes]:
            if "." not in name and not name.startswith("_"):  # its own functions and classes: calls into them are traced
                links.setdefault(member(module, name), member(module, name))
        outside = [m for m in exporter.star_imports if not m.startswith(".") and not resolver.resolve(found[0], m)]
        if outside:  # `from tensorflow.keras.layers import *` in the module, passed on
            links[member(module, "*")] = " ".join(outside)
    for qual in facts.imports.values():
        if any(within(qual, prefix) for prefix in frameworks):
            continue
        found = resolver.resolve(path, qual)
        if not found or not found[1] or "." in found[1]:
            continue  # not a project module's name (a module itself, or an installed package)
        exporter = facts_of(found[0])
        target = exporter.exports.get(found[1]) if exporter is not None and not exporter.error else None
        if target is not None:
            links[qual] = target
    return links
