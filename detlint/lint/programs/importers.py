"""Programs that include named files: when only ``utils/seed.py`` is checked (a pre-commit run
passes the changed files), the programs of the project that import it are checked too, and their
program-level findings are reported at their entry files (``train.py: DET104``).

The programs are found as a module's call sites find theirs (``Linter.programs_reaching``): the
import lines of the project's files are read as text, and only files that name the module,
directly or a few imports away, are parsed and built.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from detlint.lint.cache import FactsCache
from detlint.lint.engine import Linter, real
from detlint.lint.ftypes import Diagnostic


def importer_findings(linter: Linter, named: list[Path], checked: list[Path],
                      cache: Optional[FactsCache] = None) -> list[Diagnostic]:
    """Program-level findings of the project's programs that include a module of ``named`` and
    whose entry is not among ``checked`` (those were reported already)."""
    if cache is not None:
        linter.cache = cache
    done = {real(p) for p in checked}
    entries: set[Path] = set()
    for path in named:
        facts = linter.facts_of(path)
        if path.suffix != ".py" or facts is None or facts.error is not None:
            continue
        entries.update(program.entry for program in linter.programs_reaching(path) if program.entry not in done)
    out: list[Diagnostic] = []
    for entry in sorted(entries):
        out.extend(linter.lint_file(entry, linter.display(entry), program_only=True))
    return out
