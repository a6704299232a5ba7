"""A fix that turns a determinism switch on, in a program with ops that raise under it.

``torch.use_deterministic_algorithms(True)`` makes PyTorch raise at the first op that has no
deterministic CUDA kernel (DET603): written blindly, the fix turns a program that ran into one
that crashes. The knowledge base says, on such a fix, which rule's findings raise under it and
what to write instead (``if-raising``: the warn-only switch, or nothing where the version has
none). ``settle`` gives each finding the fix that fits its program; its ``raising-note`` says why, and
``--fix`` prints it.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from detlint.lint.ftypes import Diagnostic

if TYPE_CHECKING:
    from detlint.lint.engine import Linter


def _raising(linter: "Linter", path: Path, code: str, busy: set[Path]) -> list[Diagnostic]:
    """The findings of ``code`` in the program whose entry is ``path``, whether the settings show
    them or not (an op under ``# noqa: DET603`` raises all the same)."""
    from detlint.lint.engine import real

    modules = {real(path): path}
    facts = linter.facts_of(path)
    if facts is not None and facts.error is None and linter.is_entry(path, facts):
        for module in linter.program_for(path).modules:
            if real(module) not in busy:
                modules.setdefault(real(module), module)
    found: dict[tuple[str, int, int], Diagnostic] = {}
    for key, module in modules.items():
        if key not in linter.unfiltered:
            linter.lint_file(module, linter.display(module), map_cells=False)
        found.update({(d.path, d.line, d.col): d for d in linter.unfiltered.get(key, []) if d.code == code})
    return list(found.values())


def _written(code: list[str], text: str) -> bool:
    """Is the code (``{torch}.use_deterministic_algorithms(True, warn_only=True)``) in ``text``,
    under any alias?"""
    return all(re.search(re.escape(re.sub(r"^\{\w+\}\.", "", line)), text) for line in code)


def settle(linter: "Linter", path: Path, diags: list[Diagnostic], busy: set[Path]) -> None:
    """Give each finding whose fix has an ``if-raising`` form the fix that fits its program."""
    for diag in diags:
        fix: dict[str, Any] = dict(diag.fix_spec or {})
        spec = fix.pop("if-raising", None)
        if not spec:
            continue
        raising = _raising(linter, path, spec["rule"], busy)
        if not raising:
            diag.fix_spec = fix
            continue
        where = ", ".join(f"{d.path}:{d.line}" for d in raising[:3]) + (" and more" if len(raising) > 3 else "")
        ops = f"the ops at {where} ({spec['rule']}) raise under the strict switch"
        if spec.get("code") and not _written(list(spec["code"]), linter.text_of(path)):
            diag.fix_spec = {**fix, "title": spec["title"], "code": list(spec["code"]),
                             "raising-note": f"{spec['title']}: {ops}; apply their workaround, then make the switch strict"}
            if diag.fix_title:
                diag.message = diag.message.replace(diag.fix_title, spec["title"])
            diag.fix_title = spec["title"]
            continue
        title = (f"keep warn_only: {ops}; apply their workaround first" if spec.get("code")
                 else f"not fixed: {ops}, and {spec['withhold']}")
        diag.fix_spec = {"title": title, "raising-note": f"{diag.code} {title}"}
        if diag.fix_title:
            diag.message = diag.message.replace(diag.fix_title, title)
        diag.fix_title, diag.fix_safety = title, "display"
