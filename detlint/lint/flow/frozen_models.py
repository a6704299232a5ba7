"""Models whose backward never runs: a frozen backbone.

A linear probe calls its pretrained backbone only under ``torch.no_grad()`` (or sets every
parameter's ``requires_grad`` to False) and trains a classifier on the features. The backbone's
convolutions then run forward only: their nondeterministic backward kernels never run, so no
finding about them applies. Told by name within one file: a name every call of which runs where
autograd records nothing (a call of one of its parts, ``model.encoder(x)``, is a call of it; its
housekeeping methods, ``model.eval()``, are not), or whose parameters are all frozen by a loop, and
that is never handed to an optimiser (a loop that freezes parameters by name, all but a head, leaves
some layers training: which, is not known, so their findings are only possible); and what such a model was made from (``model =
Wrapper(encoder)``) where nothing else runs it with autograd or trains it. The lines that bind
such a name are kept; a layer built by a call on one of them (in this file, or in the modules
that call reaches) belongs to a frozen model.
"""
from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from detlint.lint.conditions import dotted


# builtins that run nothing of what they are given
HARMLESS = frozenset({"print", "len", "str", "repr", "type", "isinstance", "id", "hasattr", "getattr", "vars",
                      "format", "hash", "callable"})


class FrozenModels:
    def __init__(self, housekeeping: Callable[[str], bool] = lambda method: False) -> None:
        # model.eval(), model.cuda(): methods that run no forward pass (a KB group)
        self.housekeeping = housekeeping
        self.calls: dict[str, list[bool]] = {}  # name -> for each call of it: without autograd?
        self.bound: dict[str, list[int]] = {}  # name -> lines of the statements that bind it
        self.frozen: set[str] = set()  # names whose every parameter is set not to need a gradient
        # names whose parameters a loop freezes by name (all but the head): which layers stay
        # trainable is not known, so a layer of such a model may or may not run backward
        self.partly: dict[str, int] = {}  # name -> the line of the loop
        self.optimised: set[str] = set()  # names whose parameters an optimiser (or anything) is given
        self.conditions = 0  # depth of `if` statements being walked: a freeze under one may not run
        # name -> the names handed to the call that made it: `model = SimCLR(encoder, ...)` holds
        # `encoder`, which is frozen with it when nothing else runs or trains it
        self.parts: dict[str, set[str]] = {}
        self.handed: dict[str, int] = {}  # name -> how many calls it is handed to
        # name -> (function, position or keyword) of each call it is handed to: a model given to
        # a module-level function of the file that runs it only without autograd (features =
        # extract(loader, backbone)) runs without autograd
        self.handed_to: dict[str, list[tuple[str, int | str]]] = {}
        self.defs: dict[str, list[str]] = {}  # module-level function -> its parameters, in order
        self.memo: dict[str, Optional[bool]] = {}  # _runs_without_autograd's answers

    def note_call(self, node: cst.Call, without_autograd: bool) -> None:
        name = _name(node.func)
        if name is not None:
            self.calls.setdefault(name, []).append(without_autograd)
        if isinstance(node.func, cst.Attribute) and not self.housekeeping(node.func.attr.value):
            # model.encoder(images): a part of the model runs, so the model does
            held = _name(node.func.value)
            if held is not None and held != "self":
                self.calls.setdefault(held, []).append(without_autograd)
        callee = node.func.value if isinstance(node.func, cst.Name) else None
        for i, arg in enumerate(node.args):
            held = _name(arg.value)
            if held is not None:
                self.handed[held] = self.handed.get(held, 0) + 1
                place = arg.keyword.value if arg.keyword is not None else i if not arg.star else None
                self.handed_to.setdefault(held, []).append((callee or "", place if callee else None))
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

    def note_def(self, node: cst.FunctionDef) -> None:
        params = node.params
        self.defs[node.name.value] = [p.name.value for p in (*params.posonly_params, *params.params,
                                                               *params.kwonly_params)]

    def _runs_without_autograd(self, name: str, seen: frozenset = frozenset()) -> Optional[bool]:
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = False  # while it is being decided (a cycle): not frozen
        self.memo[name] = self._decide(name, seen)
        return self.memo[name]

    def _decide(self, name: str, seen: frozenset) -> Optional[bool]:
        """Does every run of ``name`` (its calls, and the parameters of this file's functions it
        is handed to) happen without autograd? True when one does and all do, None when it never
        runs, False otherwise. What other callables do with it is not known here, as before
        (a wrapper class made from it is followed through ``parts``)."""
        if name in seen or name in self.optimised:
            return False
        runs = self.calls.get(name, [])
        if not all(runs):
            return False
        ran = bool(runs)
        for callee, place in self.handed_to.get(name, ()):
            params = self.defs.get(callee)
            if params is None and callee in HARMLESS:
                continue  # print(model), len(dataset): no run
            if params is None:
                return False  # trainer.fit(model), a wrapper: what it does is not known here
            if place is None:
                return False
            param = params[place] if isinstance(place, int) and place < len(params) else place
            if not isinstance(param, str) or param not in params:
                return False
            if param == name:
                continue  # its calls there are this name's (names are not told apart by function)
            there = self._runs_without_autograd(param, seen | {name})
            if there is False:
                return False
            ran = ran or bool(there)
        return True if ran else None

    def note_loop(self, node: cst.For, line: int) -> None:
        """``for p in backbone.parameters(): p.requires_grad = False`` (unconditionally), or
        under a test of the parameter's name (``if name not in ["fc.weight", "fc.bias"]:``):
        frozen but for the parameters the test keeps."""
        held = _parameters_of(node.iter)
        if held is None or self.conditions or not isinstance(node.body, cst.IndentedBlock):
            return
        loop_vars = {n.value for n in _names(node.target)}
        for statement in node.body.body:
            if isinstance(statement, cst.SimpleStatementLine) and _freezes(statement, loop_vars):
                self.frozen.add(held)
            elif isinstance(statement, cst.If) and isinstance(statement.body, cst.IndentedBlock) \
                    and {n.value for n in _names(statement.test)} & loop_vars and _all_but(statement.test) \
                    and any(isinstance(s, cst.SimpleStatementLine) and _freezes(s, loop_vars)
                            for s in statement.body.body):
                self.partly.setdefault(held, line)

    def lines(self) -> list[int]:
        """The lines binding a frozen model."""
        unused = {name for name in self.bound if self._runs_without_autograd(name)}  # run only without autograd
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

    def partly_lines(self) -> list[tuple[int, int]]:
        """(a line binding a model a loop freezes by name, the loop's line)."""
        return sorted({(line, loop) for name, loop in self.partly.items() if name not in self.frozen
                       for line in self.bound.get(name, ())})


def _all_but(test: cst.BaseExpression) -> bool:
    """A test that keeps some parameters out of the freeze (``name not in [...]``, ``not
    name.startswith("fc")``, ``"head" not in name``): all but those are frozen. A positive test
    (``"embed" in name``) freezes only what it names, and the rest trains."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return True
    if isinstance(test, cst.BooleanOperation):
        return _all_but(test.left) and _all_but(test.right)
    return isinstance(test, cst.Comparison) and all(
        isinstance(c.operator, (cst.NotIn, cst.NotEqual, cst.IsNot)) for c in test.comparisons)


def _freezes(statement: cst.SimpleStatementLine, loop_vars: set[str]) -> bool:
    """``p.requires_grad = False`` for a loop variable ``p``."""
    return any(isinstance(small, cst.Assign) and _false(small.value) and any(
        isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad"
        and isinstance(t.target.value, cst.Name) and t.target.value.value in loop_vars
        for t in small.targets) for small in statement.body)


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
