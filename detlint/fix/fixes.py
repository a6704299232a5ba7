"""Applies the knowledge base's fixes to source text with libcst, leaving the rest byte-identical.

Fix actions are generic (``insert``, ``remove-statement``, ``set-args``, ``remove-args``,
``replace-call``, ``wrap-call``, call rewrites); which one a finding gets, with what code, comes from its rule's
YAML entry for the target TensorFlow version. Nothing here knows about particular rules.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from detlint.fix.cleanup import keep_final_cr, merge_blank_lines, with_footer
from detlint.fix.placement import Position, add_imports, alias_for, free_alias, insert_statements
from detlint.lint.ftypes import Diagnostic, quiet_compile
from detlint.lint.stand_ins import tabs_as_spaces

Span = tuple[int, int, int, int]  # start line, start col, end line, end col: unique per call node


class FixError(Exception):
    """A fix could not be applied (its result would not parse, or its target moved)."""


@dataclass
class FixPlan:
    """What one pass changes in one file."""

    statements_to_remove: set[Position] = field(default_factory=set)
    set_args: dict[Span, tuple[dict[str, str], dict[str, int]]] = field(default_factory=dict)
    remove_args: dict[Span, list[str]] = field(default_factory=dict)
    replace_calls: dict[Span, tuple[str, dict[str, str]]] = field(default_factory=dict)
    add_parens: set[Position] = field(default_factory=set)
    edit_values: dict[Position, dict[str, str]] = field(default_factory=dict)
    rewrites: dict[Span, str] = field(default_factory=dict)
    wrap_calls: dict[Span, str] = field(default_factory=dict)  # span -> template such as "sorted({call})"
    inserts: list[tuple[str, list[str], dict[str, str]]] = field(default_factory=list)  # where, code, imports
    seed_at: Optional[Position] = None  # the program's own seeding call: seeding code goes right after it


def is_applicable(diag: Diagnostic, unsafe: bool) -> bool:
    if not diag.fix_spec:
        return False
    return diag.fix_safety == "safe" or (unsafe and diag.fix_safety == "unsafe")


def plan_for(diags: Sequence[Diagnostic], seed: Union[int, str], rewrite_sites: Sequence[tuple[Span, str]] = (),
             seed_beside: Optional[tuple[str, Position]] = None) -> tuple[FixPlan, list[Diagnostic]]:
    """A plan from the chosen findings of one file (redundant insertions already left out).
    ``seed_beside``: the program's own seeding call (seed expression, position); seeding code is
    then inserted right after it, with that expression."""
    plan = FixPlan()
    used: list[Diagnostic] = []
    for diag in diags:
        spec = diag.fix_spec or {}
        action = spec.get("action")
        span = diag.target_span  # the matched node, which the finding may point inside
        pos = span[:2]
        if action == "insert":
            where = spec.get("where", "after-imports")
            if seed_beside and where == "after-imports" and any("{seed}" in line for line in spec["code"]):
                where = "after-seed"  # beside the program's own seeding call
                plan.seed_at = seed_beside[1]
            code = _render_keep_aliases(spec["code"], seed_beside[0] if where == "after-seed" and seed_beside else seed)
            plan.inserts.append((where, code, dict(spec.get("imports", {}))))
        elif action == "remove-statement":
            plan.statements_to_remove.add(pos)
        elif action == "set-args":
            args = {k: str(v).replace("{seed}", str(seed)) for k, v in spec["args"].items()}
            plan.set_args[span] = (args, dict(spec.get("positions", {})))
        elif action == "remove-args":
            plan.remove_args[span] = list(spec["args"])
        elif action == "replace-call":
            plan.replace_calls[span] = (str(spec["with"]), dict(spec.get("imports", {})))
        elif action == "wrap-call":
            plan.wrap_calls[span] = str(spec["template"])
        elif action == "add-call-parens":
            plan.add_parens.add(pos)
        elif action == "edit-value":
            plan.edit_values[pos] = {k: str(v) for k, v in spec.items()
                                     if k in ("pattern", "replacement", "value", "code")}
        else:
            continue
        used.append(diag)
    for site, template in rewrite_sites:
        plan.rewrites[site] = template
    return plan, used


def _with_lines_kept(source: str, expanded: str, fixed: str) -> str:
    """``fixed`` (made from ``expanded``) with every line it did not change back as ``source``
    wrote it."""
    original = source.splitlines(keepends=True)
    before = expanded.splitlines(keepends=True)
    after = fixed.splitlines(keepends=True)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        out.extend(original[i1:i2] if op == "equal" else after[j1:j2])
    return "".join(out)


def _render_keep_aliases(lines: Sequence[str], seed: Union[int, str]) -> list[str]:
    """Fill {seed} now; module aliases ({tf}, {os}, ...) are filled per file later."""
    return [line.replace("{seed}", str(seed)) for line in lines]


# ---- the transformer ---------------------------------------------------------------------------
class _Apply(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, plan: FixPlan, module: cst.Module) -> None:
        super().__init__()
        self.plan = plan
        self.module = module
        self.done: set[Any] = set()
        # statement lines emptied by removals, dropped by their enclosing block. The nodes are kept
        # alive here: keyed by bare id(), a freed node's address could be reused by a later node
        # that would then be dropped too.
        self.drop: dict[int, cst.SimpleStatementLine] = {}

    def _dropped(self, stmt: cst.CSTNode) -> bool:
        return self.drop.get(id(stmt)) is stmt

    def _without_dropped(self, body: Sequence[cst.BaseStatement]
                         ) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
        """Drop removed lines; their leading comments and blank lines move to the next statement.
        Those of removed lines with no statement after them are returned, for the footer."""
        out: list[cst.BaseStatement] = []
        carry: list[cst.EmptyLine] = []
        for stmt in body:
            if self._dropped(stmt):
                carry.extend(stmt.leading_lines)
                continue
            if carry:
                stmt = stmt.with_changes(leading_lines=merge_blank_lines(carry, list(stmt.leading_lines)))
                carry = []
            out.append(stmt)
        return out, carry

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if not self.drop:
            return updated
        body, carry = self._without_dropped(updated.body)
        return updated.with_changes(body=body, footer=with_footer(carry, updated.footer))

    def _pos(self, node: cst.CSTNode) -> Position:
        start = self.get_metadata(PositionProvider, node).start
        return start.line, start.column

    def _span(self, node: cst.CSTNode) -> Span:
        rng = self.get_metadata(PositionProvider, node)
        return rng.start.line, rng.start.column, rng.end.line, rng.end.column

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
                                  ) -> Union[cst.BaseStatement, cst.RemovalSentinel]:
        if not self.plan.statements_to_remove:
            return updated
        keep = []
        for orig, new in zip(original.body, updated.body):
            pos = self._pos(orig)
            if pos in self.plan.statements_to_remove:
                self.done.add(pos)
            else:
                keep.append(new)
        if len(keep) == len(updated.body):
            return updated
        if not keep:
            self.drop[id(updated)] = updated  # removed by the enclosing block, keeping its comments
            return updated
        last = keep[-1]
        keep[-1] = last.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(body=keep)

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        if not self.drop:
            return updated
        body, carry = self._without_dropped(updated.body)
        if not body:  # removing the only statement of a block leaves `pass`, under its comments
            return updated.with_changes(body=[cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=carry)])
        return updated.with_changes(body=body, footer=with_footer(carry, updated.footer))

    def leave_Expr(self, original: cst.Expr, updated: cst.Expr) -> cst.Expr:
        pos = self._pos(original)
        if pos in self.plan.add_parens and isinstance(updated.value, (cst.Attribute, cst.Name)):
            self.done.add(pos)
            return updated.with_changes(value=cst.Call(func=updated.value))
        return updated

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        pos = self._pos(original)
        if pos in self.plan.edit_values:
            value = _edited_value(updated.value, self.plan.edit_values[pos])
            if value is not None:
                self.done.add(pos)
                return updated.with_changes(value=value)
        target = original.targets[0].target if len(original.targets) == 1 else None
        given = updated.value
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(given, (cst.Tuple, cst.List)) \
                and len(target.elements) == len(given.elements):
            # a, b = x, y: a finding on one target edits that target's value
            elements = list(given.elements)
            for i, each in enumerate(target.elements):
                spot = self._pos(each.value)
                edit = self.plan.edit_values.get(spot)
                value = _edited_value(elements[i].value, edit) if edit is not None else None
                if value is not None:
                    elements[i] = elements[i].with_changes(value=value)
                    self.done.add(spot)
            return updated.with_changes(value=given.with_changes(elements=elements))
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        pos = self._span(original)
        if pos in self.plan.set_args:
            updated = _set_args(updated, *self.plan.set_args[pos])
            self.done.add(pos)
        if pos in self.plan.remove_args:
            updated = _remove_args(updated, self.plan.remove_args[pos])
            self.done.add(pos)
        if pos in self.plan.replace_calls:
            updated = updated.with_changes(func=cst.parse_expression(self.plan.replace_calls[pos][0]))
            self.done.add(pos)
        start = pos[:2]
        if start in self.plan.edit_values and len(updated.args) > 1:  # os.environ.setdefault("X", "v")
            value = _edited_string(updated.args[1].value, self.plan.edit_values[start])
            if value is not None:
                args = list(updated.args)
                args[1] = args[1].with_changes(value=value)
                updated = updated.with_changes(args=args)
                self.done.add(start)
        if pos in self.plan.rewrites:
            rewritten = _rewrite(updated, self.plan.rewrites[pos], self.module)
            if rewritten is not None:
                self.done.add(pos)
                return rewritten
        if pos in self.plan.wrap_calls:
            self.done.add(pos)
            inner = updated.with_changes(lpar=[], rpar=[])
            wrapped = cst.parse_expression(self.plan.wrap_calls[pos].replace("{call}", self.module.code_for_node(inner)))
            return wrapped.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return updated


def _edited_value(node: cst.BaseExpression, edit: dict[str, str]) -> Optional[cst.BaseExpression]:
    """The assigned value edited: replaced by ``code`` (``torch.backends.cudnn.benchmark = False``,
    a literal ``True`` or a computed ``not opt.no_benchmark`` alike), else a string edited as below."""
    if "code" in edit:  # (a, b = True, False: each element is edited on its own, below)
        return None if isinstance(node, (cst.Tuple, cst.List)) else cst.parse_expression(edit["code"])
    return _edited_string(node, edit)


def _edited_string(node: cst.BaseExpression, edit: dict[str, str]) -> Optional[cst.SimpleString]:
    """A string literal with its text replaced (``value``) or regex-edited (``pattern``)."""
    import re

    if not isinstance(node, cst.SimpleString) or "f" in node.prefix.lower() or "b" in node.prefix.lower():
        return None
    text = node.evaluated_value
    if not isinstance(text, str):
        return None
    new = edit["value"] if "value" in edit else re.sub(edit["pattern"], edit.get("replacement", ""), text)
    quote = node.quote
    if quote in new or "\\" in new:
        return None
    return node.with_changes(value=f"{node.prefix}{quote}{new}{quote}")


def _set_args(call: cst.Call, values: dict[str, str], positions: dict[str, int]) -> cst.Call:
    args = list(call.args)
    for name, code in values.items():
        value = cst.parse_expression(code)
        for i, arg in enumerate(args):
            if arg.keyword is not None and arg.keyword.value == name:
                args[i] = arg.with_changes(value=value)
                break
        else:
            positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
            pos = positions.get(name)
            if pos is not None and len(positional) > pos:
                i = positional[pos]
                args[i] = args[i].with_changes(value=value)
            else:
                new = cst.Arg(value=value, keyword=cst.Name(name),
                              equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
                args = _appended(call, args, new)
    return call.with_changes(args=args)


def _appended(call: cst.Call, args: list[cst.Arg], new: cst.Arg) -> list[cst.Arg]:
    """``args`` with ``new`` at the end, laid out as the call is: in a call written one argument
    per line the new one gets its own line, and the closing bracket and a trailing comma stay
    where they were."""
    if not args:
        return [new]
    last = args[-1]
    before = args[-2].comma if len(args) > 1 else None
    between = before.whitespace_after if isinstance(before, cst.Comma) else call.whitespace_before_args
    if not isinstance(between, cst.ParenthesizedWhitespace):  # on one line: ", name=value"
        return [*args[:-1], last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), new]
    # before the bracket: after the trailing comma, or after the last argument
    closing = last.comma.whitespace_after if isinstance(last.comma, cst.Comma) else last.whitespace_after_arg
    comment = closing.first_line if isinstance(closing, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()
    # the last argument keeps its own comment; the new one starts its line as the others do
    to_new = cst.ParenthesizedWhitespace(first_line=comment, empty_lines=[], indent=between.indent,
                                         last_line=between.last_line)
    to_bracket = (closing.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
                  if isinstance(closing, cst.ParenthesizedWhitespace) else closing)
    if isinstance(last.comma, cst.Comma):  # a trailing comma, then the bracket: both stay
        return [*args[:-1], last.with_changes(comma=cst.Comma(whitespace_after=to_new)),
                new.with_changes(comma=cst.Comma(whitespace_after=to_bracket))]
    return [*args[:-1], last.with_changes(comma=cst.Comma(whitespace_after=to_new),
                                          whitespace_after_arg=cst.SimpleWhitespace("")),
            new.with_changes(whitespace_after_arg=to_bracket)]


def _remove_args(call: cst.Call, names: list[str]) -> cst.Call:
    args = [a for a in call.args if not (a.keyword is not None and a.keyword.value in names)]
    if args and len(args) != len(call.args):
        last_original = call.args[-1]
        args[-1] = args[-1].with_changes(comma=last_original.comma if isinstance(last_original.comma, cst.Comma)
                                         and last_original.comma.whitespace_after.__class__ is not
                                         cst.SimpleWhitespace else cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)


def _rewrite(call: cst.Call, template: str, module: cst.Module) -> Optional[cst.BaseExpression]:
    if any(a.keyword is not None or a.star for a in call.args):
        return None
    parts = []
    for arg in call.args:
        code = module.code_for_node(arg.value)
        parts.append(code if isinstance(arg.value, _ATOMS) else f"({code})")
    try:
        expr = cst.parse_expression(template.format(*parts))
    except (IndexError, cst.ParserSyntaxError):
        return None
    return expr.with_changes(lpar=call.lpar, rpar=call.rpar) if call.lpar else expr


def _resolve_call_templates(module: cst.Module, plan: FixPlan) -> list[tuple[str, str]]:
    """Fill ``{keras}``-style aliases of replace-call templates; returns imports to add."""
    needed: list[tuple[str, str]] = []
    for span, (template, imports) in list(plan.replace_calls.items()):
        aliases = {}
        for placeholder, mod in imports.items():
            alias = alias_for(module.body, mod)
            if alias is None:
                alias = free_alias(module.body, mod)
                if (mod, alias) not in needed:
                    needed.append((mod, alias))
            aliases[placeholder] = alias
        plan.replace_calls[span] = (template.format(**aliases), imports)
    return needed


def apply_plan(source: str, plan: FixPlan, limit_line: Optional[int] = None,
               after_lines: Sequence[int] = ()) -> tuple[str, set[Position]]:
    """The fixed text, and which positions were changed. Raises FixError if it would not parse.
    ``after_lines``: top-level lines inserted code must follow (see ``_after_imports``)."""
    expanded = None
    try:
        try:
            module = cst.parse_module(source)
        except cst.ParserSyntaxError:
            # indentation mixing tabs and spaces that Python accepts: fixed as the checks read
            # it (tabs as spaces, lint/stand_ins.py), then every line the fix left keeps its tabs
            expanded = tabs_as_spaces(source)
            if expanded == source:
                raise
            module = cst.parse_module(expanded)
        call_imports = _resolve_call_templates(module, plan)
        transformer = _Apply(plan, module)
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        module = wrapper.visit(transformer)
        if plan.inserts:
            module = insert_statements(module, plan.inserts, limit_line, after_lines, plan.seed_at)
        if call_imports:
            module = add_imports(module, call_imports, min(span[0] for span in plan.replace_calls))
        text = keep_final_cr(source, module.code)
        if expanded is not None:
            text = _with_lines_kept(source, expanded, text)
    except (cst.ParserSyntaxError, cst.CSTValidationError, ValueError, KeyError, IndexError, RecursionError) as exc:
        raise FixError(f"the fix could not be built ({type(exc).__name__}: {exc}); left unchanged") from exc
    try:
        cst.parse_module(text if expanded is None else tabs_as_spaces(text))
        quiet_compile(text, "<fixed>")
    except (cst.ParserSyntaxError, SyntaxError, ValueError) as exc:
        raise FixError(f"the fixed file would not parse ({exc}); left unchanged") from exc
    return text, transformer.done
