"""Applies the knowledge base's fixes to source text with libcst, leaving the rest byte-identical.

Fix actions are generic (``insert``, ``remove-statement``, ``set-args``, ``remove-args``,
``replace-call``, call rewrites); which one a finding gets, with what code, comes from its rule's
YAML entry for the target TensorFlow version. Nothing here knows about particular rules.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .ftypes import Diagnostic, quiet_compile

DEFAULT_ALIASES = {"tensorflow": "tf", "numpy": "np", "keras": "keras", "os": "os", "random": "random"}
EQUIVALENT_MODULES = {"keras": ("keras", "tensorflow.keras")}
Position = tuple[int, int]
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
        pos = (diag.line, diag.col)
        span = (diag.line, diag.col, diag.end_line, diag.end_col)
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
        elif action == "add-call-parens":
            plan.add_parens.add(pos)
        elif action == "edit-value":
            plan.edit_values[pos] = {k: str(v) for k, v in spec.items() if k in ("pattern", "replacement", "value")}
        else:
            continue
        used.append(diag)
    for site, template in rewrite_sites:
        plan.rewrites[site] = template
    return plan, used


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

    def _without_dropped(self, body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Drop removed lines; their leading comments and blank lines move to the next statement."""
        out: list[cst.BaseStatement] = []
        carry: list[cst.EmptyLine] = []
        for stmt in body:
            if self._dropped(stmt):
                carry.extend(stmt.leading_lines)
                continue
            if carry:
                stmt = stmt.with_changes(leading_lines=_merge_blank_lines(carry, list(stmt.leading_lines)))
                carry = []
            out.append(stmt)
        return out

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if not self.drop:
            return updated
        return updated.with_changes(body=self._without_dropped(updated.body))

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
        body = self._without_dropped(updated.body)
        if not body:  # removing the only statement of a block leaves `pass`
            body = [cst.SimpleStatementLine(body=[cst.Pass()])]
        return updated.with_changes(body=body)

    def leave_Expr(self, original: cst.Expr, updated: cst.Expr) -> cst.Expr:
        pos = self._pos(original)
        if pos in self.plan.add_parens and isinstance(updated.value, (cst.Attribute, cst.Name)):
            self.done.add(pos)
            return updated.with_changes(value=cst.Call(func=updated.value))
        return updated

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        pos = self._pos(original)
        if pos in self.plan.edit_values:
            value = _edited_string(updated.value, self.plan.edit_values[pos])
            if value is not None:
                self.done.add(pos)
                return updated.with_changes(value=value)
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
        return updated


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


def _blank_run(lines: Sequence[cst.EmptyLine]) -> int:
    longest = run = 0
    for line in lines:
        run = run + 1 if line.comment is None else 0
        longest = max(longest, run)
    return longest


def _merge_blank_lines(carry: list[cst.EmptyLine], own: list[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """Comments of a removed line stay; blank lines do not pile up where it was."""
    limit = max(_blank_run(carry), _blank_run(own))
    out: list[cst.EmptyLine] = []
    run = 0
    for line in [*carry, *own]:
        run = run + 1 if line.comment is None else 0
        if run <= limit:
            out.append(line)
    return out


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
                if args:
                    args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                args.append(cst.Arg(value=value, keyword=cst.Name(name),
                                    equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
    return call.with_changes(args=args)


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


# ---- insertion ---------------------------------------------------------------------------------
def _imported_names(stmt: cst.CSTNode) -> list[tuple[str, str]]:
    """(bound name, module it is) for the imports in a top-level statement."""
    out = []
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    module = _dotted(alias.name)
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        out.append((alias.asname.name.value, module))
                    else:
                        out.append((module.split(".")[0], module.split(".")[0]))
            elif isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None \
                    and not isinstance(small.names, cst.ImportStar):
                base = _dotted(small.module)
                for alias in small.names:
                    name = _dotted(alias.name)
                    bound = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
                    out.append((bound, f"{base}.{name}"))
    elif isinstance(stmt, cst.Try):
        for inner in stmt.body.body:
            out.extend(_imported_names(inner))
    return out


def _dotted(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _is_import(stmt: cst.CSTNode) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)
    if isinstance(stmt, cst.Try):
        return all(_is_import(s) for s in stmt.body.body)
    return False


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _imports_module(stmt: cst.CSTNode, module: str) -> bool:
    return any(m == module or m.startswith(module + ".") for _, m in _imported_names(stmt))


def _after_imports(body: Sequence[cst.BaseStatement], limit_line: Optional[int], line_of: Any,
                   after_lines: Sequence[int] = ()) -> int:
    """Index after the module's set-up block: past the docstring, __future__ imports, every
    top-level import (and the environment lines among them) that comes before the first
    definition, compound statement or ``limit_line``, and past top-level statements on
    ``after_lines`` (calls such as ``disable_v2_behavior()`` that a seed must follow)."""
    index = 1 if body and _is_docstring(body[0]) else 0
    best = index
    for i in range(index, len(body)):
        stmt = body[i]
        if limit_line is not None and line_of(stmt) >= limit_line:
            break
        if _is_import(stmt) or line_of(stmt) in after_lines:
            best = i + 1
        elif isinstance(stmt, cst.SimpleStatementLine):
            continue  # e.g. os.environ[...] = ... between imports
        else:
            break
    return best


def _bindings(body: Sequence[cst.BaseStatement]) -> dict[str, str]:
    """Name -> module for the imports of ``body``, in order: a later import of a name wins."""
    bound: dict[str, str] = {}
    for stmt in body:
        for name, mod in _imported_names(stmt):
            bound[name] = mod
    return bound


def _alias_for(body: Sequence[cst.BaseStatement], module: str) -> Optional[str]:
    """The name ``module`` is bound to after ``body`` runs (``import tensorflow as np`` followed
    by ``import numpy as np`` leaves no name for tensorflow)."""
    wanted = EQUIVALENT_MODULES.get(module, (module,))
    return next((name for name, mod in _bindings(body).items() if mod in wanted), None)


def _free_alias(body: Sequence[cst.BaseStatement], module: str) -> str:
    """The conventional alias for ``module`` unless the file binds that name to something else."""
    default = DEFAULT_ALIASES.get(module, module)
    taken = {mod for stmt in body for name, mod in _imported_names(stmt) if name == default}
    return default if taken <= set(EQUIVALENT_MODULES.get(module, (module,))) else module


def _import_statement(module: str, alias: str) -> str:
    return f"import {module}" if alias == module else f"import {module} as {alias}"


def insert_statements(module: cst.Module, inserts: list[tuple[str, list[str], dict[str, str]]],
                      limit_line: Optional[int], after_lines: Sequence[int] = (),
                      seed_at: Optional[Position] = None) -> cst.Module:
    """Insert each fix's statements, and the imports they need, at the end of the set-up block
    (after the imports and the environment lines among them, so a framework import never moves
    above them); seeding code goes right after the program's own seeding call ``seed_at`` where
    there is one (in its function, with its seed expression). A statement the module already
    runs before that point is not inserted twice."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    body = list(wrapper.module.body)

    def line_of(stmt: cst.CSTNode) -> int:
        return positions[stmt].start.line

    anchor = _statement_at(positions, seed_at) if seed_at else None
    anchored: list[str] = []

    imports_at: dict[int, list[str]] = {}  # original index -> import lines inserted there
    code_at: dict[int, list[str]] = {}  # original index -> statements inserted there, in order
    where_at: dict[int, str] = {}
    for where, code, imports in inserts:
        aliases: dict[str, str] = {}
        base = _after_imports(body, limit_line, line_of, after_lines)
        if where == "before-tf-import":
            first_tf = next((i for i, s in enumerate(body) if _imports_module(s, "tensorflow")), None)
            if first_tf is not None:
                base = first_tf
        planned = imports_at.setdefault(base, [])
        for placeholder, mod in imports.items():
            alias = _alias_for(body[:base], mod)  # reuse the file's own name (tensorflow_lib, ...)
            if alias is None:
                alias = _free_alias(body, mod)
                if _import_statement(mod, alias) not in planned:
                    planned.append(_import_statement(mod, alias))
            aliases[placeholder] = alias
        if where == "after-seed" and anchor is not None:
            anchored.extend(line for line in (line.format(**aliases) for line in code) if line not in anchored)
            continue
        where = "after-imports" if where == "after-seed" else where
        before = {module.code_for_node(s).strip() for s in body[:base]} | set(code_at.get(base, []))
        code_at.setdefault(base, []).extend(
            line for line in (line.format(**aliases) for line in code) if line.strip() not in before)
        where_at.setdefault(base, where)
    for base in sorted(code_at, reverse=True):
        if not code_at[base]:
            continue
        new_imports = [cst.parse_statement(line + "\n") for line in imports_at.get(base, [])]
        new = [cst.parse_statement(line + "\n") for line in code_at[base]]
        following = body[base] if base < len(body) else None
        if where_at[base] == "after-imports" and base > 0 and (new_imports or (following is not None and any(
                isinstance(line, cst.EmptyLine) and line.comment is None for line in following.leading_lines))):
            new[0] = new[0].with_changes(leading_lines=[cst.EmptyLine()])  # a block of its own
        body[base:base] = new_imports + new
    for base in sorted(imports_at, reverse=True):  # imports of anchored code
        if imports_at[base] and not code_at.get(base):
            body[base:base] = [cst.parse_statement(line + "\n") for line in imports_at[base]]
    result = wrapper.module.with_changes(body=body)
    if anchor is not None and anchored:
        result = result.visit(_InsertAfter(anchor, anchored))
    return result


def _statement_at(positions: Any, at: Position) -> Optional[cst.SimpleStatementLine]:
    """The statement line that is the call starting at ``at`` (``np.random.seed(args.seed)``)."""
    for node, rng in positions.items():
        if (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], cst.Expr)
                and isinstance(node.body[0].value, cst.Call)):
            start = positions[node.body[0].value].start
            if (start.line, start.column) == at:
                return node
    return None


class _InsertAfter(cst.CSTTransformer):
    """Put statements right after one statement line, in whatever block holds it, skipping any
    that the block already has."""

    def __init__(self, anchor: cst.SimpleStatementLine, lines: list[str]) -> None:
        super().__init__()
        self.anchor, self.lines = anchor, lines

    def _insert(self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement],
                module: cst.Module) -> Optional[list[cst.BaseStatement]]:
        for i, stmt in enumerate(original):
            if stmt is self.anchor:
                there = {module.code_for_node(s).strip() for s in updated}
                new = [cst.parse_statement(line + "\n") for line in self.lines if line.strip() not in there]
                return [*updated[:i + 1], *new, *updated[i + 1:]]
        return None

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body = self._insert(original.body, updated.body, cst.Module(body=[]))
        return updated if body is None else updated.with_changes(body=body)

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        body = self._insert(original.body, updated.body, original)
        return updated if body is None else updated.with_changes(body=body)


def _resolve_call_templates(module: cst.Module, plan: FixPlan) -> list[tuple[str, str]]:
    """Fill ``{keras}``-style aliases of replace-call templates; returns imports to add."""
    needed: list[tuple[str, str]] = []
    for span, (template, imports) in list(plan.replace_calls.items()):
        aliases = {}
        for placeholder, mod in imports.items():
            alias = _alias_for(module.body, mod)
            if alias is None:
                alias = _free_alias(module.body, mod)
                if (mod, alias) not in needed:
                    needed.append((mod, alias))
            aliases[placeholder] = alias
        plan.replace_calls[span] = (template.format(**aliases), imports)
    return needed


def _add_imports(module: cst.Module, imports: list[tuple[str, str]], limit_line: int) -> cst.Module:
    """``import mod as alias`` lines at the end of the module's import block before ``limit_line``."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    body = list(wrapper.module.body)
    index = _after_imports(body, limit_line, lambda stmt: positions[stmt].start.line)
    body[index:index] = [cst.parse_statement(_import_statement(mod, alias) + "\n") for mod, alias in imports]
    return wrapper.module.with_changes(body=body)


def apply_plan(source: str, plan: FixPlan, limit_line: Optional[int] = None,
               after_lines: Sequence[int] = ()) -> tuple[str, set[Position]]:
    """The fixed text, and which positions were changed. Raises FixError if it would not parse.
    ``after_lines``: top-level lines inserted code must follow (see ``_after_imports``)."""
    try:
        module = cst.parse_module(source)
        call_imports = _resolve_call_templates(module, plan)
        transformer = _Apply(plan, module)
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        module = wrapper.visit(transformer)
        if plan.inserts:
            module = insert_statements(module, plan.inserts, limit_line, after_lines, plan.seed_at)
        if call_imports:
            module = _add_imports(module, call_imports, min(span[0] for span in plan.replace_calls))
        text = module.code
    except (cst.ParserSyntaxError, cst.CSTValidationError, ValueError, KeyError, IndexError) as exc:
        raise FixError(f"the fix could not be built ({type(exc).__name__}: {exc}); left unchanged") from exc
    try:
        cst.parse_module(text)
        quiet_compile(text, "<fixed>")
    except (cst.ParserSyntaxError, SyntaxError, ValueError) as exc:
        raise FixError(f"the fixed file would not parse ({exc}); left unchanged") from exc
    return text, transformer.done


# ---- imports a fix left unused -----------------------------------------------------------------
class _UsedNames(cst.CSTVisitor):
    """Every name the module reads outside its import statements (attribute names included,
    which only errs on the side of keeping an import)."""

    def __init__(self) -> None:
        super().__init__()
        self.used: set[str] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.used.add(node.value)


def _used_names(module: cst.Module) -> set[str]:
    visitor = _UsedNames()
    module.visit(visitor)
    return visitor.used


def _bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return _dotted(alias.name).split(".")[0]


def _repeatable_call(stmt: cst.CSTNode) -> bool:
    """A statement that is one call with literal arguments only (a switch, a seed): running it
    twice in a row does what running it once does."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)):
        return False
    call = stmt.body[0].value
    return isinstance(call, cst.Call) and all(
        isinstance(arg.value, (cst.Integer, cst.Float, cst.SimpleString, cst.Name)) and not arg.star
        for arg in call.args)


def drop_repeated_fix_results(before: str, after: str) -> str:
    """Two fixes can produce the same statement (``patch()`` replaced by, and a bare
    ``enable_op_determinism`` completed to, ``enable_op_determinism()``): keep the first. Only
    module-level calls with literal arguments that the fixes added a copy of are dropped."""
    try:
        old, new = cst.parse_module(before), cst.parse_module(after)
    except cst.ParserSyntaxError:
        return after
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
            stmt = stmt.with_changes(leading_lines=_merge_blank_lines(carry, list(stmt.leading_lines)))
            carry = []
        body.append(stmt)
    return new.with_changes(body=body).code if changed else after


def drop_imports_made_unused(before: str, after: str) -> str:
    """Remove the top-level imports that ``before`` used and ``after`` (the fixed text) no longer
    does: the fix made them unused. Imports that were already unused stay; so do star imports."""
    try:
        old, new = cst.parse_module(before), cst.parse_module(after)
    except cst.ParserSyntaxError:
        return after
    was_used, now_used = _used_names(old), _used_names(new)
    unused = {name for stmt in new.body if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body
              if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar)
              for name in (_bound_name(a) for a in small.names) if name in was_used and name not in now_used}
    if not unused:
        return after
    body: list[cst.BaseStatement] = []
    carry: list[cst.EmptyLine] = []
    for stmt in new.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            smalls = []
            for small in stmt.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    names = [a for a in small.names if _bound_name(a) not in unused]
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
            stmt = stmt.with_changes(leading_lines=_merge_blank_lines(carry, list(stmt.leading_lines)))
            carry = []
        body.append(stmt)
    return new.with_changes(body=body).code


# ---- the program's own seed ----------------------------------------------------------------------
_SEED_EXPRESSIONS = (cst.Name, cst.Attribute, cst.Integer, cst.Subscript)


def seed_call(source: str, seeder_calls: Sequence[tuple[int, int]], before_line: Optional[int]
              ) -> Optional[tuple[str, Position, Optional[str]]]:
    """The program's own seeding call, so a fix seeds the missing generators with the same seed,
    beside it: the last statement that is one of ``seeder_calls`` (positions of seeding calls)
    before ``before_line``. Returns the code of its seed (``args.seed``, ``SEED``, ``7``; never a
    call such as ``int(time.time())``), its position, and the seed's literal value where the file
    says it (``7``, or ``SEED = 7``) for fixes that write the seed elsewhere."""
    if not seeder_calls:
        return None
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    constants: dict[str, str] = {}
    for stmt in wrapper.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if (isinstance(small, cst.Assign) and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name) and isinstance(small.value, cst.Integer)):
                    constants[small.targets[0].target.value] = small.value.value
    found: list[tuple[str, Position, Optional[str]]] = []
    for at in sorted(set(seeder_calls)):
        if before_line is not None and at[0] >= before_line:
            continue
        stmt = _statement_at(positions, at)
        if stmt is None:
            continue
        call = stmt.body[0].value  # type: ignore[attr-defined]
        arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == "seed"),
                   call.args[0] if call.args and call.args[0].keyword is None and not call.args[0].star else None)
        value = arg.value if arg is not None else None
        if not isinstance(value, _SEED_EXPRESSIONS) or (isinstance(value, cst.Name) and value.value == "None"):
            continue
        literal = value.value if isinstance(value, cst.Integer) else (
            constants.get(value.value) if isinstance(value, cst.Name) else None)
        found.append((module.code_for_node(value), at, literal))
    return found[-1] if found else None
