"""Conditions on values a caller passes (part of the collector, kept apart by concern).

``nn.Upsample(mode=mode)`` in ``def up_block(ch, mode="nearest")`` is a bilinear upsampling only
where a call passes ``mode="bilinear"``: the knowledge base's condition on the argument becomes a
test of the parameter (``Hit.needs``, a form of flow/option_forms.py), and each program decides it
with the values its calls pass down (programs/program.py binds them, a few calls deep).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import libcst as cst

from detlint.lint.conditions import Ref, bool_condition
from detlint.lint.flow.default_branches import replicates
from detlint.lint.flow.option_forms import condition_form, describe_condition
from detlint.lint.ftypes import UNKNOWN

if TYPE_CHECKING:
    from detlint.knowledge.kb import Condition
    from detlint.lint.collect import Collector as _Base
else:
    _Base = object


class PassedValues(_Base):
    def parameter_note(self, node: cst.BaseExpression, cond: Condition, value: Any, holds: bool) -> Optional[str]:
        """A condition on a value a caller passes (``mode=mode``, ``mode`` a parameter): met where
        a program's call passes a value that meets it, decided per program (Hit.needs)."""
        if holds or bool_condition(cond) is not None or (value is not UNKNOWN and not isinstance(value, Ref)):
            return None
        needs = self.parameter_test(node, cond)
        if needs is None:
            return None
        self.pending_needs.append(needs[0])
        return needs[1]

    def parameter_test(self, node: cst.BaseExpression, cond: Condition) -> Optional[tuple[list[Any], str]]:
        """``mode=mode`` (or ``mode=modes[i]`` with ``modes = [modes] * n``) where ``mode`` is a
        parameter of the function being walked, against a condition on its value (``eq:
        bilinear``): the condition as a test of that parameter, and a note saying so."""
        param = node
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) \
                and replicates(self.bound_values(node.value.value), node.value.value):
            param = node.value  # an element of the parameter repeated into a list
            if self.current_scope is None or self.parameter_position(param.value) is None:
                return None
            scope: Optional[str] = self.current_scope
        else:
            scope = self.tested_param(node)
        if scope is None or not isinstance(param, cst.Name):
            return None
        form = condition_form(["param", param.value, scope], cond.spec)
        return (form, f"when {param.value} {describe_condition(cond.spec)}") if form is not None else None
