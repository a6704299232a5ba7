"""Branches a function never takes, from the values its callers pass.

``def preprocess(image, is_training):`` with ``if is_training:`` around the augmentation, called
only as ``preprocess(x, is_training=False)``: the augmentation never runs, so its random ops are
not the program's. Kept simple on purpose: an ``if`` directly in a function's body that tests one
parameter (``if p:``, ``if not p:``, ``if p is False:``, ``if p == True:``), and call sites in the
same file with literal arguments or the parameter's default (``functools.partial`` included).
A function whose name appears anywhere else in the file (passed around, stored, called through
``*args``), or that another module may import and call, keeps both branches.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

import libcst as cst

from detlint.lint.ftypes import UNKNOWN

PARTIAL = "functools.partial"
Span = tuple[int, int]  # first and last line


@dataclass
class Guard:
    function: cst.FunctionDef
    param: str
    runs_when: bool  # the body runs when the parameter is truthy
    body: Span
    orelse: Optional[Span]
    rest: Optional[Span] = None  # the statements after the if, when the body always returns


def tested_parameter(test: cst.BaseExpression, params: set[str]) -> Optional[tuple[str, bool]]:
    """(parameter, whether the branch runs when it is truthy) for the tests this module reads."""
    if isinstance(test, cst.Name) and test.value in params:
        return test.value, True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = tested_parameter(test.expression, params)
        return (inner[0], not inner[1]) if inner else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
        comparison = test.comparisons[0]
        right = comparison.comparator
        if test.left.value in params and isinstance(right, cst.Name) and right.value in ("True", "False") \
                and isinstance(comparison.operator, (cst.Is, cst.Equal)):
            return test.left.value, right.value == "True"
    return None


def _always_leaves(block: cst.BaseSuite) -> bool:
    """Does the block end in ``return`` or ``raise``?"""
    body = block.body
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    return isinstance(last, (cst.Return, cst.Raise))


def parameters(function: cst.FunctionDef) -> list[cst.Param]:
    return list(function.params.posonly_params) + list(function.params.params)


class Branches:
    """Fed by the collector during its walk; says at the end which lines never run."""

    def __init__(self) -> None:
        self.guards: list[Guard] = []
        self.sites: dict[str, list[tuple[cst.Call, int]]] = {}  # function name -> (call, leading args bound)

    def note_if(self, function: cst.FunctionDef, node: cst.If, span: Callable[[cst.CSTNode], Span]) -> None:
        if not any(statement is node for statement in function.body.body):
            return  # only tests at the function's body level
        names = {p.name.value for p in parameters(function)} | {p.name.value for p in function.params.kwonly_params}
        found = tested_parameter(node.test, names)
        if found:
            orelse = span(node.orelse) if node.orelse is not None else None
            statements = list(function.body.body)
            after = statements[next(i for i, s in enumerate(statements) if s is node) + 1:]
            rest = (span(after[0])[0], span(after[-1])[1]) if after and node.orelse is None \
                and _always_leaves(node.body) else None
            self.guards.append(Guard(function, found[0], found[1], span(node.body), orelse, rest))

    def note_call(self, name: Optional[str], qual: Optional[str], node: cst.Call) -> None:
        if qual == PARTIAL and node.args and node.args[0].keyword is None:
            from detlint.lint.conditions import dotted

            target = dotted(node.args[0].value)
            if target:
                self.sites.setdefault(target.rsplit(".", 1)[-1], []).append((node, 1))
        elif name:
            self.sites.setdefault(name.rsplit(".", 1)[-1], []).append((node, 0))

    def dead_lines(self, source: str, value_of: Callable[[cst.BaseExpression], Any],
                   exported: Callable[[str], bool]) -> list[Span]:
        out: list[Span] = []
        for guard in self.guards:
            value = self.parameter_value(guard, source, value_of, exported)
            if value is UNKNOWN:
                continue
            if bool(value) != guard.runs_when:
                out.append(guard.body)
            else:
                out.extend(s for s in (guard.orelse, guard.rest) if s is not None)
        return out

    def parameter_value(self, guard: Guard, source: str, value_of: Callable[[cst.BaseExpression], Any],
                        exported: Callable[[str], bool]) -> Any:
        """The parameter's truthiness-relevant value at every call, if all calls agree; else UNKNOWN."""
        name = guard.function.name.value
        sites = self.sites.get(name, [])
        mentions = len(re.findall(rf"(?<![\w.]){re.escape(name)}\b|\.{re.escape(name)}\b", source))
        if not sites or mentions != len(sites) + 1 or exported(name):
            return UNKNOWN
        params = parameters(guard.function)
        method = bool(params) and params[0].name.value in ("self", "cls")
        param = next((p for p in params + list(guard.function.params.kwonly_params)
                      if p.name.value == guard.param), None)
        position = next((i for i, p in enumerate(params) if p.name.value == guard.param), None)
        if param is None:
            return UNKNOWN
        seen: set[bool] = set()
        for call, bound in sites:
            value = self.argument_value(call, bound, param, position, method, value_of)
            if value is UNKNOWN or not isinstance(value, (bool, int, float, str, type(None))):
                return UNKNOWN
            seen.add(bool(value))
        return seen.pop() if len(seen) == 1 else UNKNOWN

    @staticmethod
    def argument_value(call: cst.Call, bound: int, param: cst.Param, position: Optional[int], method: bool,
                       value_of: Callable[[cst.BaseExpression], Any]) -> Any:
        if any(a.star for a in call.args):
            return UNKNOWN
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == param.name.value:
                return value_of(arg.value)
        positional = [a for a in call.args if a.keyword is None][bound:]
        index = None if position is None else position - (1 if method and isinstance(call.func, cst.Attribute)
                                                          or method and bound else 0)
        if index is not None and 0 <= index < len(positional):
            return value_of(positional[index].value)
        if bound:  # functools.partial: the rest comes from whoever calls the partial
            return UNKNOWN
        return value_of(param.default) if param.default is not None else UNKNOWN
