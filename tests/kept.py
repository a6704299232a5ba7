"""The fix-preservation property: a fix changes only the statements its findings name."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from detlint.fix.autofix import FileFix
from detlint.fix.cleanup import bound_name, used_names
from detlint.lint.ftypes import Diagnostic
from detlint.lint.stand_ins import parse_module


class _Statements(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: cst.Module) -> None:
        super().__init__()
        self.module = module
        self.found: list[tuple[int, int, str]] = []  # first line, last line, exact code

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        for small in node.body:
            rng = self.get_metadata(PositionProvider, small)
            code = self.module.code_for_node(small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT))
            self.found.append((rng.start.line, rng.end.line, code))


def statements(source: str) -> list[tuple[int, int, str]]:
    module = parse_module(source)  # as the checks read it (tab indentation Python accepts)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    visitor = _Statements(module)
    wrapper.visit(visitor)
    return visitor.found


def touched_lines(path: Path, diags: Iterable[Diagnostic]) -> set[int]:
    """Lines named by the fixes of ``diags`` in the file ``path``: finding lines and call-rewrite sites."""
    here = Path(path).resolve()
    lines: set[int] = set()
    for diag in diags:
        if Path(diag.path).resolve() == here:
            lines.update(range(diag.line, diag.end_line + 1))
        for site, span, _ in diag.rewrite_sites:
            if Path(site).resolve() == here:
                lines.update(range(span[0], span[2] + 1))
    return lines


def lost_statements(original: str, fixed: str, touched: Iterable[int]) -> list[str]:
    """Statements of ``original`` that no fix names and that ``fixed`` no longer holds byte for
    byte (counted, so a duplicated statement that loses one copy is caught too)."""
    touched = set(touched)
    kept = Counter(code for start, end, code in statements(original)
                   if not touched.intersection(range(start, end + 1)))
    now = Counter(code for _, _, code in statements(fixed))
    return sorted((kept - now).elements())


def lost_in_fix(result: FileFix) -> list[str]:
    """The property over every pass of a fix (each pass's line numbers refer to its own text).
    The one thing a fix may remove unnamed is an import its changes left unused."""
    texts = [text for text, _ in result.steps] + [result.fixed]
    lost: list[str] = []
    for (before, diags), after in zip(result.steps, texts[1:]):
        lost += lost_statements(before, after, touched_lines(result.path, diags))
    used = used_names(parse_module(result.fixed)) if lost else set()
    return [code for code in lost if not _import_of_unused(code, used)]


def _import_of_unused(code: str, used: set[str]) -> bool:
    try:
        small = cst.parse_statement(code + "\n").body[0]  # type: ignore[attr-defined]
    except (cst.ParserSyntaxError, AttributeError, IndexError):
        return False
    if not isinstance(small, (cst.Import, cst.ImportFrom)) or isinstance(small.names, cst.ImportStar):
        return False
    return all(bound_name(alias) not in used for alias in small.names)
