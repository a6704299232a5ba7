"""Tidying after fixes: blank lines where statements went, a statement two fixes both produced,
and the imports the fixes left unused."""
from __future__ import annotations

import re
from typing import Sequence

import libcst as cst

from detlint.fix.placement import dotted


def _blank_run(lines: Sequence[cst.EmptyLine]) -> int:
    longest = run = 0
    for line in lines:
        run = run + 1 if line.comment is None else 0
        longest = max(longest, run)
    return longest


def merge_blank_lines(carry: list[cst.EmptyLine], own: list[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """Comments of a removed line stay; blank lines do not pile up where it was."""
    limit = max(_blank_run(carry), _blank_run(own))
    out: list[cst.EmptyLine] = []
    run = 0
    for line in [*carry, *own]:
        run = run + 1 if line.comment is None else 0
        if run <= limit:
            out.append(line)
    return out


def with_footer(carry: list[cst.EmptyLine], footer: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """The footer of a module or block whose last statements went: the comments above them (and
    the blank lines, not piling up) stay, before the lines the footer had."""
    return merge_blank_lines(carry, list(footer)) if carry else list(footer)


_WORD = re.compile(r"[^\W\d]\w*")
_WHOLE_NAME = re.compile(r"\s*([^\W\d]\w*)(?:\.[^\W\d]\w*)*\s*")
_NAME_THEN_DOT = re.compile(r"(?<![\w.])([^\W\d]\w*)(?=\.[^\W\d])")  # "time" in "time.time()"
# calls whose string arguments are code or names: every word of them may reach an import
_DYNAMIC = {"eval", "exec", "getattr", "__import__", "importlib.import_module"}


def _string_value(node: cst.SimpleString) -> str:
    """The text a string literal stands for (its prefix and quotes gone, escapes read)."""
    try:
        value = node.evaluated_value
    except (ValueError, SyntaxError):  # an escape libcst cannot read: the raw text, still without quotes
        return node.raw_value
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _named_in(text: str) -> set[str]:
    """Names a string may still reach an import by: the whole string is a dotted name (an
    ``__all__`` entry, a ``getattr`` name), or a name stands before an attribute in it
    (``"time.time()"``). Words of prose (``"the time of day"``) do not count."""
    whole = _WHOLE_NAME.fullmatch(text)
    return ({whole.group(1)} if whole else set()) | set(_NAME_THEN_DOT.findall(text))


class _UsedNames(cst.CSTVisitor):
    """Every name the module reads outside its import statements (attribute names included),
    and the names its strings may still reach an import by (``_named_in``; every word of a
    string given to eval, exec, getattr, __import__ or importlib.import_module). Both err only
    on the side of keeping an import."""

    def __init__(self) -> None:
        super().__init__()
        self.used: set[str] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.used.add(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        if dotted(node.func) in _DYNAMIC:
            for arg in node.args:
                if isinstance(arg.value, cst.SimpleString):
                    self.used.update(_WORD.findall(_string_value(arg.value)))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.used.update(_named_in(_string_value(node)))

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
        self.used.update(_named_in(node.value))


def used_names(module: cst.Module) -> set[str]:
    visitor = _UsedNames()
    module.visit(visitor)
    return visitor.used


def bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return dotted(alias.name).split(".")[0]


def _repeatable_call(stmt: cst.CSTNode) -> bool:
    """A statement that is one call with literal arguments only (a switch, a seed): running it
    twice in a row does what running it once does."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)):
        return False
    call = stmt.body[0].value
    return isinstance(call, cst.Call) and all(
        isinstance(arg.value, (cst.Integer, cst.Float, cst.SimpleString, cst.Name)) and not arg.star
        for arg in call.args)


def keep_final_cr(before: str, after: str) -> str:
    r"""libcst writes a module back without the final ``\r`` of a file whose lines end in CR
    alone (``a\rb\r`` comes back as ``a\rb``): ``after``, made from ``before``, gets it back."""
    if before.endswith("\r") and after and not after.endswith(("\r", "\n")):
        return after + "\r"
    return after


def tidy_after_fix(before: str, after: str) -> str:
    """``after`` (the fixed text) without a switch two fixes both produced and without the
    imports the fixes left unused; ``before`` is the text before any fix."""
    try:
        old = cst.parse_module(before)
        return keep_final_cr(after, drop_imports_made_unused(old, drop_repeated_fix_results(old, after)))
    except (cst.ParserSyntaxError, RecursionError):
        return after


def drop_repeated_fix_results(old: cst.Module, after: str) -> str:
    """Two fixes can produce the same statement (``patch()`` replaced by, and a bare
    ``enable_op_determinism`` completed to, ``enable_op_determinism()``): keep the first. Only
    module-level calls with literal arguments that the fixes added a copy of are dropped."""
    new = cst.parse_module(after)
    counts_before: dict[str, int] = {}
    for stmt in old.body:
        code = old.code_for_node(stmt.with_changes(leading_lines=[])) if _repeatable_call(stmt) else None
        if code:
            counts_before[code] = counts_before.get(code, 0) + 1
    seen: dict[str, int] = {}
    body: list[cst.BaseStatement] = []
    carry: list[cst.EmptyLine] = []
    changed = False
    for stmt in new.body:
        if _repeatable_call(stmt):
            code = new.code_for_node(stmt.with_changes(leading_lines=[]))
            seen[code] = seen.get(code, 0) + 1
            if seen[code] > 1 and seen[code] > counts_before.get(code, 0):
                carry.extend(stmt.leading_lines)
                changed = True
                continue
        if carry:
            stmt = stmt.with_changes(leading_lines=merge_blank_lines(carry, list(stmt.leading_lines)))
            carry = []
        body.append(stmt)
    return new.with_changes(body=body, footer=with_footer(carry, new.footer)).code if changed else after


def drop_imports_made_unused(old: cst.Module, after: str) -> str:
    """Remove the top-level imports that ``old`` used and ``after`` (the fixed text) no longer
    does: the fix made them unused. Imports that were already unused stay; so do star imports."""
    new = cst.parse_module(after)
    was_used, now_used = used_names(old), used_names(new)
    unused = {name for stmt in new.body if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body
              if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar)
              for name in (bound_name(a) for a in small.names) if name in was_used and name not in now_used}
    if not unused:
        return after
    body: list[cst.BaseStatement] = []
    carry: list[cst.EmptyLine] = []
    for stmt in new.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            smalls = []
            for small in stmt.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    names = [a for a in small.names if bound_name(a) not in unused]
                    if not names:
                        continue
                    if len(names) < len(small.names):
                        names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                        small = small.with_changes(names=names)
                smalls.append(small)
            if not smalls:  # at the top of the file, only its comments are kept
                carry.extend(line for line in stmt.leading_lines if body or line.comment is not None)
                continue
            if len(smalls) < len(stmt.body):
                smalls[-1] = smalls[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
                stmt = stmt.with_changes(body=smalls)
        if carry:
            stmt = stmt.with_changes(leading_lines=merge_blank_lines(carry, list(stmt.leading_lines)))
            carry = []
        body.append(stmt)
    return new.with_changes(body=body, footer=with_footer(carry, new.footer)).code
