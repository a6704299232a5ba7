"""Functions handed to project helpers that run them as tf.data stages (part of the collector).

``make_dataset(paths, map_fn=_map_fn)`` in one file, ``def make_dataset(paths, map_fn=None): ...
ds.map(map_fn)`` in another: ``_map_fn`` runs in the input pipeline, on the CPU, and is never
differentiated, just as if it were handed to ``ds.map`` directly. Per file the collector notes the
parameters that reach a stage (``stage_params``), the parameters handed on to other project
functions (``param_handed``) and the functions of the file handed to project functions
(``handed``); ``programs/stage_parameters.py`` joins them across files.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from detlint.lint.walk import walk

if TYPE_CHECKING:
    from detlint.lint.collect import Collector as _Base
else:
    _Base = object


class HandedFunctions(_Base):
    def enclosing_parameter(self, name: str) -> Optional[tuple[int, bool, cst.Param]]:
        """The enclosing top-level function's parameter ``name``: (its position among the
        positional ones or the keyword-only ones, whether it is keyword-only, the parameter)."""
        function = self.top_function
        if function is None or self.depth != self.top_depth:
            return None
        params = function.params
        for keyword_only, group in ((False, [*params.posonly_params, *params.params]), (True, params.kwonly_params)):
            for index, param in enumerate(group):
                if param.name.value == name:
                    return index, keyword_only, param
        return None

    def parameter_position(self, name: str) -> Optional[int]:
        """The position of the enclosing function's parameter ``name`` (-1: keyword-only), or
        None when it is no parameter of it."""
        found = self.enclosing_parameter(name)
        return None if found is None else (-1 if found[1] else found[0])

    def note_stage_parameter(self, fn: Optional[cst.BaseExpression]) -> None:
        """``ds.map(map_fn)`` with ``map_fn`` a parameter, or a lambda that calls it
        (``ds.map(lambda x, y: (map_fn(x), y))``): what callers pass there is a stage."""
        if self.current_scope is None:
            return
        names = [fn.value] if isinstance(fn, cst.Name) else _called_names(fn) if isinstance(fn, cst.Lambda) else []
        for name in names:
            position = self.parameter_position(name)
            if position is not None:
                self.facts.stage_params.setdefault(self.current_scope, []).append([name, position])

    def note_handed(self, callee: str, arg: cst.Arg, position: int) -> None:
        """An argument of a call to the project function ``callee``: a parameter handed on, or a
        function of this file (by name, a nested def or a lambda) handed over."""
        keyword = arg.keyword.value if arg.keyword is not None else ""
        if keyword:
            self.project_keywords.add(keyword)
        spot = -1 if keyword else position
        value = arg.value
        if isinstance(value, cst.Name) and self.current_scope is not None:
            own = self.parameter_position(value.value)
            if own is not None:
                self.facts.param_handed.append([self.current_scope, value.value, own, callee, keyword, spot])
                return
        ref, span = self.passed_function(self.unwrapped(value))
        if span is not None:
            self.facts.handed.append([callee, keyword, spot, "", list(span)])
        elif ref and ref in self.facts.functions:
            self.facts.handed.append([callee, keyword, spot, ref, None])


def _called_names(fn: cst.Lambda) -> list[str]:
    """The plain names a lambda calls that are not its own parameters."""
    own = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}

    class Calls(cst.CSTVisitor):
        def __init__(self) -> None:
            self.names: list[str] = []

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value not in own and node.func.value not in self.names:
                self.names.append(node.func.value)

    calls = Calls()
    walk(fn.body, calls)
    return calls.names
