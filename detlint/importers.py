"""Programs that include named files: when only ``utils/seed.py`` is checked (a pre-commit run
passes the changed files), the programs of the project that import it are checked too, and their
program-level findings are reported at their entry files (``train.py: DET104``).

Finding the importers must stay cheap on a large project: a file is parsed only when its text
names one of the modules looked for, and the facts cache serves the ones parsed before.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from .cache import FactsCache
from .discovery import discover
from .engine import Linter
from .ftypes import Diagnostic, FileFacts
from .program import MAX_IMPORT_DEPTH
from .sources import NOTEBOOK_SIZE_FACTOR, read_bytes


def _token(path: Path) -> bytes:
    """The name an import of ``path`` must spell out (a package by its folder's name)."""
    return (path.parent.name if path.stem == "__init__" else path.stem).encode()


def _imports_one_of(linter: Linter, path: Path, facts: FileFacts, targets: set[Path]) -> bool:
    resolve = linter.builder.resolver.resolve
    names = [*facts.imports.values(), *facts.import_lines,
             *("." * level + module for level, module, _ in facts.relative_imports)]
    for name in names:
        found = resolve(path, name)
        if found is not None and found[0] in targets:
            return True
    return False


def importers(linter: Linter, targets: set[Path], sources: list[Path],
              cache: Optional[FactsCache]) -> list[Path]:
    """Files of ``sources`` that import one of ``targets``, directly or through up to
    MAX_IMPORT_DEPTH project modules (the depth a program follows imports)."""
    texts: dict[Path, bytes] = {}
    for path in sources:
        data, _ = read_bytes(path, linter.max_bytes * NOTEBOOK_SIZE_FACTOR)
        if data and b"import" in data:
            texts[Path(os.path.realpath(path))] = data
    found: list[Path] = []
    previous, seen = set(targets), set(targets)
    for _ in range(MAX_IMPORT_DEPTH):
        tokens = {_token(t) for t in previous}
        candidates = [p for p, data in texts.items() if p not in seen and any(t in data for t in tokens)]
        linter.prefetch(candidates, 1, cache)
        new = set()
        for path in candidates:
            facts = linter.facts_of(path)
            if facts is not None and facts.error is None and _imports_one_of(linter, path, facts, previous):
                new.add(Path(os.path.realpath(path)))
        if not new:
            break
        seen |= new
        found.extend(sorted(new))
        previous = new
    return found


def importer_findings(linter: Linter, named: list[Path], checked: list[Path],
                      cache: Optional[FactsCache] = None) -> list[Diagnostic]:
    """Program-level findings of the project's programs that include a module of ``named`` and
    whose entry is not among ``checked`` (those were reported already)."""
    targets: set[Path] = set()
    for path in named:
        facts = linter.facts_of(path)
        if facts is not None and facts.error is None and path.suffix == ".py":
            targets.add(Path(os.path.realpath(path)))
    if not targets:
        return []
    done = {Path(os.path.realpath(p)) for p in checked}
    sources = [p for p in discover([linter.settings.project_root], linter.settings)
               if Path(os.path.realpath(p)) not in done]
    out: list[Diagnostic] = []
    for path in importers(linter, targets, sources, cache):
        facts = linter.facts_of(path)
        if facts is None or not linter.is_entry(path, facts):
            continue
        program = linter.builder.build(path)
        if targets & {Path(os.path.realpath(m)) for m in program.modules}:
            out.extend(linter.lint_file(path, linter.display(path), program_only=True))
    return out
