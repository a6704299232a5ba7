"""A read-only walk of a libcst tree that calls a ``CSTVisitor``'s methods as ``node.visit`` does.

libcst's ``visit`` serves transformers too: every node a visitor walks through is built again
(``_visit_and_replace_children`` makes a new node of each, validated) even when nothing changes,
and every hook is found by name on every node. For the collector that was two thirds of a cold
run once positions were fast. ``walk`` calls the same hooks in the same order (``visit_X``, then
per field ``visit_X_field``, the field's nodes, ``leave_X_field``, then ``leave_X``; no children
when ``visit_X`` returns False) and builds nothing; whitespace, comments and operator tokens are
passed over when the visitor has no hook for any of them. Each node class's fields, in libcst's order,
are read once from its ``_visit_and_replace_children``; ``tests/test_walk.py`` compares the
sequence of hooks with ``node.visit``'s on real code. A visitor that overrides ``on_visit``,
``on_leave`` or the attribute hooks has them called instead of the looked-up methods.
"""
from __future__ import annotations

import ast
import inspect
import re
import textwrap
from typing import Any, Callable, Optional

import libcst as cst
import libcst._nodes.op as _op
import libcst._nodes.whitespace as _whitespace

Field = tuple[str, bool]  # a field's name; whether the hooks run when it is None
_FIELDS: dict[type, tuple[Field, ...]] = {}
_VISIT_HELPERS = {"visit_required", "visit_optional", "visit_sentinel", "visit_sequence", "visit_iterable",
                  "visit_body_sequence", "visit_body_iterable"}
_HOOKS = ("on_visit", "on_leave", "on_visit_attribute", "on_leave_attribute")
# Whitespace, comments, operators and brackets: two thirds of a module's nodes, holding nothing but
# each other. A visitor with no hook for any of them is not walked through them.
TRIVIA = frozenset({c for m in (_whitespace, _op) for c in vars(m).values()
                    if isinstance(c, type) and issubclass(c, cst.CSTNode) and c.__module__ == m.__name__}
                   | {cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
                      cst.LeftCurlyBrace, cst.RightCurlyBrace})
_TRIVIA_HOOK = re.compile(r"(?:visit|leave)_(?:%s)(?:_\w+)?$" % "|".join(sorted(c.__name__ for c in TRIVIA)))


def fields(cls: type) -> tuple[Field, ...]:
    """The fields ``node.visit`` walks for nodes of ``cls``, in its order."""
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = _read_fields(cls)
    return found


def _read_fields(cls: type) -> tuple[Field, ...]:
    method = getattr(cls, "_visit_and_replace_children")
    tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    out: list[Field] = []
    for node in ast.walk(tree):  # breadth-first: the constructor call's keywords, in source order
        if isinstance(node, ast.Call) and (isinstance(node.func, ast.Name) and node.func.id == cls.__name__
                                           or ast.unparse(node.func) == "self.__class__"):
            for keyword in node.keywords:
                out.extend(_visited(keyword.value))
            break
    else:
        function = tree.body[0]
        leaf = (isinstance(function, ast.FunctionDef) and len(function.body) == 1
                and isinstance(function.body[0], ast.Return) and ast.unparse(function.body[0]) == "return self")
        if not leaf:  # a libcst whose visit this reading does not understand: better stop than walk wrong
            raise TypeError(f"cannot read how libcst visits {cls.__name__}")
    return tuple(dict.fromkeys(out))  # `names` of ImportFrom is named in both arms of a test


def _visited(value: ast.expr) -> list[Field]:
    """The fields a keyword's value visits: ``visit_X(self, "field", ...)``; inside
    ``... if field is not None else None`` the hooks run only when the field is there."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _VISIT_HELPERS:
        name = value.args[1]
        assert isinstance(name, ast.Constant) and isinstance(name.value, str)
        return [(name.value, True)]
    if isinstance(value, ast.IfExp):
        arms = _visited(value.body) + _visited(value.orelse)
        when_present = isinstance(value.orelse, ast.Constant) and value.orelse.value is None
        return [(name, not when_present) for name, _ in arms]
    return []


def own_names(visitor_cls: type) -> frozenset[str]:
    """The names the visitor's own classes define (``CSTVisitor`` has an empty ``visit_X`` and
    ``leave_X`` for every node type: those are not hooks)."""
    return frozenset(name for klass in visitor_cls.__mro__ if not klass.__module__.startswith("libcst")
                     for name in vars(klass))


class _Plan:
    """For one visitor class and one node class: the functions to call."""

    __slots__ = ("visit", "leave", "fields", "libcst")

    def __init__(self, visitor: cst.CSTVisitor, node_cls: type, own: frozenset[str]) -> None:
        def hook(name: str) -> Optional[Callable[..., Any]]:  # bound, as libcst finds it: getattr(visitor, ...)
            return getattr(visitor, name) if name in own else None

        name = node_cls.__name__
        self.visit = hook(f"visit_{name}")
        self.leave = hook(f"leave_{name}")
        try:
            known = fields(node_cls)
            self.libcst = False
        except Exception:  # no sources, or a visit not understood
            known, self.libcst = (), True  # such a node is walked by libcst's own visit, the same hooks
        self.fields = tuple((field, always, hook(f"visit_{name}_{field}"), hook(f"leave_{name}_{field}"))
                            for field, always in known)


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` without building anything."""
    visitor_cls = type(visitor)
    if not isinstance(visitor, cst.CSTVisitor):  # a transformer builds the new tree as it goes
        node.visit(visitor)
        return
    if any(getattr(visitor_cls, hook) is not getattr(cst.CSTVisitor, hook) for hook in _HOOKS):
        _walk_hooks(node, visitor)
        return
    plans: dict[type, _Plan] = {}
    own = own_names(visitor_cls) | frozenset(getattr(visitor, "__dict__", ()))  # hooks set on the instance too
    skip = TRIVIA if not any(_TRIVIA_HOOK.match(name) for name in own) else frozenset()

    def plan_of(node_cls: type) -> _Plan:
        plan = plans.get(node_cls)
        if plan is None:
            plan = plans[node_cls] = _Plan(visitor, node_cls, own)
        return plan

    def visit(node: cst.CSTNode) -> None:
        plan = plans.get(type(node)) or plan_of(type(node))
        if plan.libcst:
            node.visit(visitor)
            return
        if plan.visit is None or plan.visit(node) is not False:
            for field, always, before, after in plan.fields:
                value = getattr(node, field)
                if value is None and not always:
                    continue
                if before is not None:
                    before(node)
                if isinstance(value, (tuple, list)):
                    for child in value:
                        if type(child) not in skip:
                            visit(child)
                elif value is not None and type(value) is not cst.MaybeSentinel and type(value) not in skip:
                    visit(value)
                if after is not None:
                    after(node)
        if plan.leave is not None:
            plan.leave(node)

    visit(node)


def _walk_hooks(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """The same walk through the visitor's own ``on_*`` methods."""
    try:
        known = fields(type(node))
    except Exception:
        node.visit(visitor)
        return
    if visitor.on_visit(node):
        for field, always in known:
            value = getattr(node, field)
            if value is None and not always:
                continue
            visitor.on_visit_attribute(node, field)
            if isinstance(value, (tuple, list)):
                for child in value:
                    _walk_hooks(child, visitor)
            elif value is not None and type(value) is not cst.MaybeSentinel:
                _walk_hooks(value, visitor)
            visitor.on_leave_attribute(node, field)
    visitor.on_leave(node)
