"""Models whose backward never runs: a frozen backbone.

A linear probe calls its pretrained backbone only under ``torch.no_grad()`` (or sets every
parameter's ``requires_grad`` to False) and trains a classifier on the features. The backbone's
convolutions then run forward only: their nondeterministic backward kernels never run, so no
finding about them applies. Told by name within one file: a name every call of which runs where
autograd records nothing (a call of one of its parts, ``model.encoder(x)``, is a call of it; its
housekeeping methods, ``model.eval()``, are not), or whose parameters are all frozen by a loop, and
that is never handed to an optimiser; and what such a model was made from (``model =
Wrapper(encoder)``) where nothing else runs it with autograd or trains it. The lines that bind
such a name are kept; a layer built by a call on one of them (in this file, or in the modules
that call reaches) belongs to a frozen model.
"""
from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from detlint.lint.conditions import dotted


class FrozenModels:
    def __init__(self, housekeeping: Callable[[str], bool] = lambda method: False) -> None:
        # model.eval(), model.cuda(): methods that run no forward pass (a KB group)
        self.housekeeping = housekeeping
        self.calls: dict[str, list[bool]] = {}  # name -> for each call of it: without autograd?
        self.bound: dict[str, list[int]] = {}  # name -> lines of the statements that bind it
        self.frozen: set[str] = set()  # names whose every parameter is set not to need a gradient
        self.optimised: set[str] = set()  # names whose parameters an optimiser (or anything) is given
        self.conditions = 0  # depth of `if` statements being walked: a freeze under one may not run
        # name -> the names handed to the call that made it: `model = SimCLR(encoder, ...)` holds
        # `encoder`, which is frozen with it when nothing else runs or trains it
        self.parts: dict[str, set[str]] = {}
        self.handed: dict[str, int] = {}  # name -> how many calls it is handed to

    def note_call(self, node: cst.Call, without_autograd: bool) -> None:
        name = _name(node.func)
        if name is not None:
            self.calls.setdefault(name, []).append(without_autograd)
        if isinstance(node.func, cst.Attribute) and not self.housekeeping(node.func.attr.value):
            # model.encoder(images): a part of the model runs, so the model does
            held = _name(node.func.value)
            if held is not None and held != "self":
                self.calls.setdefault(held, []).append(without_autograd)
        for arg in node.args:
            held = _name(arg.value)
            if held is not None:
                self.handed[held] = self.handed.get(held, 0) + 1
        for arg in node.args:  # torch.optim.SGD(model.parameters()): trained
            held = _parameters_of(arg.value)
            if held is not None:
                self.optimised.add(held)
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        if method == "requires_grad_" and node.args and _false(node.args[0].value) and not self.conditions:
            held = _name(node.func.value)  # backbone.requires_grad_(False)
            if held is not None:
                self.frozen.add(held)

    def note_bind(self, target: cst.BaseExpression, line: int, value: Optional[cst.BaseExpression] = None) -> None:
        name = _name(target)
        if name is not None:
            self.bound.setdefault(name, []).append(line)
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                    and isinstance(value.func.value, cst.Call):
                value = value.func.value  # Wrapper(encoder).cuda(): what Wrapper(...) was given
            maker = dotted(value.func) if isinstance(value, cst.Call) else None
            # a class made from it holds it (SimCLR(encoder)); a copy or a builder function need not
            if maker and maker.rsplit(".", 1)[-1][:1].isupper():
                self.parts.setdefault(name, set()).update(
                    held for held in (_name(arg.value) for arg in value.args) if held is not None and held != name)

    def note_loop(self, node: cst.For) -> None:
        """``for p in backbone.parameters(): p.requires_grad = False`` (unconditionally)."""
        held = _parameters_of(node.iter)
        if held is None or self.conditions or not isinstance(node.body, cst.IndentedBlock):
            return
        loop_vars = {n.value for n in _names(node.target)}
        for statement in node.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Assign) and _false(small.value) and any(
                        isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad"
                        and isinstance(t.target.value, cst.Name) and t.target.value.value in loop_vars
                        for t in small.targets):
                    self.frozen.add(held)

    def lines(self) -> list[int]:
        """The lines binding a frozen model."""
        unused = {name for name in self.bound if bool(self.calls.get(name)) and all(self.calls[name])
                  and name not in self.optimised}  # run only without autograd
        frozen = unused | {name for name in self.bound if name in self.frozen}
        grown = True
        while grown:  # a part of such a model that nothing else runs with autograd, trains or is given
            grown = False
            for name in list(unused):
                for part in self.parts.get(name, ()):
                    if part not in frozen and part in self.bound and part not in self.optimised \
                            and all(self.calls.get(part, [])) and self.handed.get(part, 0) == 1:
                        frozen.add(part)
                        unused.add(part)
                        grown = True
        return sorted({line for name in frozen for line in self.bound[name]})


def _name(node: cst.BaseExpression) -> Optional[str]:
    """``model`` or ``self.backbone``: a name an object is kept under."""
    written = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
    if not written or written.count(".") > 1 or (written.count(".") == 1 and not written.startswith("self.")):
        return None
    return written


def _parameters_of(node: cst.BaseExpression) -> Optional[str]:
    """``model.parameters()`` / ``model.named_parameters()``: ``model``."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
            and node.func.attr.value in ("parameters", "named_parameters"):
        return _name(node.func.value)
    return None


def _false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _names(node: cst.CSTNode) -> list[cst.Name]:
    if isinstance(node, cst.Name):
        return [node]
    return [n for child in node.children for n in _names(child)]
