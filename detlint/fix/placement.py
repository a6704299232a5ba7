"""Where fixes put the code they insert: after the set-up block (docstring, imports, the
environment lines among them, graph resets), under the names the file binds, beside the
program's own seeding call where it has one."""
from __future__ import annotations

from typing import Any, Optional, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from detlint.knowledge.frameworks import before_import

DEFAULT_ALIASES = {"tensorflow": "tf", "numpy": "np", "keras": "keras", "os": "os", "random": "random", "torch": "torch"}
EQUIVALENT_MODULES = {"keras": ("keras", "tensorflow.keras")}
Position = tuple[int, int]


def imported_names(stmt: cst.CSTNode) -> list[tuple[str, str]]:
    """(bound name, module it is) for the imports in a top-level statement."""
    out = []
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    module = dotted(alias.name)
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        out.append((alias.asname.name.value, module))
                    else:
                        out.append((module.split(".")[0], module.split(".")[0]))
            elif isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None \
                    and not isinstance(small.names, cst.ImportStar):
                base = dotted(small.module)
                for alias in small.names:
                    name = dotted(alias.name)
                    bound = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
                    out.append((bound, f"{base}.{name}"))
    elif isinstance(stmt, cst.Try):
        for inner in stmt.body.body:
            out.extend(imported_names(inner))
    return out


def dotted(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
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


def _imports_module(stmt: cst.CSTNode, modules: tuple[str, ...]) -> bool:
    return any(m == module or m.startswith(module + ".") for _, m in imported_names(stmt) for module in modules)


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
        for name, mod in imported_names(stmt):
            bound[name] = mod
    return bound


def alias_for(body: Sequence[cst.BaseStatement], module: str) -> Optional[str]:
    """The name ``module`` is bound to after ``body`` runs (``import tensorflow as np`` followed
    by ``import numpy as np`` leaves no name for tensorflow)."""
    wanted = EQUIVALENT_MODULES.get(module, (module,))
    return next((name for name, mod in _bindings(body).items() if mod in wanted), None)


def free_alias(body: Sequence[cst.BaseStatement], module: str) -> str:
    """The conventional alias for ``module`` unless the file binds that name to something else
    (``from pkg.backend import keras``, a project's own Keras: never shadowed)."""
    default = DEFAULT_ALIASES.get(module, module)
    equivalent = set(EQUIVALENT_MODULES.get(module, (module,)))
    for name in (default, module, f"{module.replace('.', '_')}_lib"):
        taken = {mod for stmt in body for bound, mod in imported_names(stmt) if bound == name}
        if taken <= equivalent:
            return name
    return f"{module.replace('.', '_')}_lib"


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

    anchor = call_statements(positions).get(seed_at) if seed_at else None
    anchored: list[str] = []

    imports_at: dict[int, list[str]] = {}  # original index -> import lines inserted there
    code_at: dict[int, list[str]] = {}  # original index -> statements inserted there, in order
    where_at: dict[int, str] = {}
    for where, code, imports in inserts:
        aliases: dict[str, str] = {}
        base = _after_imports(body, limit_line, line_of, after_lines)
        starts = before_import(where)
        if starts:  # an environment setting the framework reads when it starts
            first = next((i for i, s in enumerate(body) if _imports_module(s, starts)), None)
            if first is not None:
                base = first
        planned = imports_at.setdefault(base, [])
        for placeholder, mod in imports.items():
            alias = alias_for(body[:base], mod)  # reuse the file's own name (tensorflow_lib, ...)
            if alias is None:
                alias = free_alias(body, mod)
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
        if anchor is not None and anchored and imports_at[base] and not code_at.get(base):
            body[base:base] = [cst.parse_statement(line + "\n") for line in imports_at[base]]
    result = wrapper.module.with_changes(body=body)
    if anchor is not None and anchored:
        result = result.visit(_InsertAfter(anchor, anchored))
    return result


def call_statements(positions: Any) -> dict[Position, cst.SimpleStatementLine]:
    """Statement lines that are one call, by where the call starts (``np.random.seed(args.seed)``)."""
    out: dict[Position, cst.SimpleStatementLine] = {}
    for node in positions:
        if (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], cst.Expr)
                and isinstance(node.body[0].value, cst.Call)):
            start = positions[node.body[0].value].start
            out[(start.line, start.column)] = node
    return out


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


def add_imports(module: cst.Module, imports: list[tuple[str, str]], limit_line: int) -> cst.Module:
    """``import mod as alias`` lines at the end of the module's import block before ``limit_line``."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    body = list(wrapper.module.body)
    index = _after_imports(body, limit_line, lambda stmt: positions[stmt].start.line)
    body[index:index] = [cst.parse_statement(_import_statement(mod, alias) + "\n") for mod, alias in imports]
    return wrapper.module.with_changes(body=body)


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
    statements = call_statements(positions)
    for at in sorted(set(seeder_calls)):
        if before_line is not None and at[0] >= before_line:
            continue
        stmt = statements.get(at)
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
