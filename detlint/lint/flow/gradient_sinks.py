"""Which ops' values end only in calls that pass no gradient on, so nothing differentiates them.

A gather that picks integer class ids and is cast to ``int64``, a gather of IoU overlaps whose
only use is ``argmax``, a gather whose result is used as the indices of another gather, targets
passed through ``tf.stop_gradient`` before they are returned: backprop never reaches these ops,
whatever the loss is. Within one function, the values each op's result reaches are followed in
statement order (a name's later binding replaces an earlier one; branches and loops join); an
op is dead when none of them leaves the function: returned, stored on an object, handed to a
project function or a method of the object holding it, given to a gradient target, or read by a
nested function. Calls of the frameworks pass their arguments on to their result, except those
whose result carries no gradient (``argmax``, comparisons, integer casts, ``stop_gradient``) and
the index arguments of index-taking calls (``tf.gather``'s ``indices``).

At module level every name may be read by a function or an importer, so only what a
gradient-free call takes in place counts; a notebook has no importers, so there a name only its
own later cells read is followed like a function's. Everything unknown counts as leaving: this
only removes findings it can show are dead.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

import libcst as cst

from detlint.lint.conditions import bound_names
from detlint.lint.walk import walk

Tag = tuple[int, ...]  # where the op is: (line, col); a project call's result: (line, col, 1)
Tags = frozenset[Tag]
EMPTY: Tags = frozenset()
# attributes of a tensor that carry no gradient (top_k(...).indices, x.shape)
GRADIENT_FREE_ATTRS = frozenset({"shape", "dtype", "name", "indices", "device", "ndim", "rank",
                                 "data"})  # x.data: PyTorch's detached view of a tensor
# in-place methods of a list or dict the function made itself: they add to it, nothing leaves
ADDERS = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})


@dataclass
class CallRoles:
    """What the walk knows about a call, asked once per call."""

    # the result carries no gradient: gradient stops, argmax, integer casts, display calls
    stops: Callable[[cst.Call], bool]
    # the arguments that pass a gradient on (tf.gather: params), None when all may
    gradient_args: Callable[[cst.Call], Optional[Sequence[cst.BaseExpression]]]
    # runs code that may keep or train what it is given: project functions, gradient targets
    escapes: Callable[[cst.Call], bool]


@dataclass
class _State:
    env: dict[str, Tags] = field(default_factory=dict)
    fresh: set[str] = field(default_factory=set)  # names bound to a list or dict made here

    def copy(self) -> "_State":
        return _State(dict(self.env), set(self.fresh))

    def join(self, other: "_State") -> "_State":
        env = dict(self.env)
        for name, tags in other.env.items():
            env[name] = env.get(name, EMPTY) | tags
        return _State(env, self.fresh & other.fresh)


class _Flow:
    def __init__(self, ops: dict[int, Tag], roles: CallRoles, module: bool, importable: bool = True,
                 results: Optional[dict[int, Tag]] = None) -> None:
        self.ops, self.roles, self.module, self.importable = ops, roles, module, importable
        self.results = results or {}  # project calls whose result is followed like an op's
        self.escaped: set[Tag] = set()
        self.ever: dict[str, set[Tag]] = {}  # every tag a name was ever bound to
        self.shared: set[str] = set()  # names a nested function reads, or declared global

    # ---- expressions -------------------------------------------------------------------------
    def value(self, node: cst.CSTNode, state: _State) -> Tags:
        """The ops whose results may flow into the value of ``node``."""
        if isinstance(node, cst.Name):
            return state.env.get(node.value, EMPTY)
        if isinstance(node, cst.Call):
            return self.call(node, state)
        if isinstance(node, cst.Attribute):
            return EMPTY if node.attr.value in GRADIENT_FREE_ATTRS else self.value(node.value, state)
        if isinstance(node, cst.Subscript):  # what an index selects: the index carries no gradient
            for element in node.slice:
                self.consume(element, state)
            return self.value(node.value, state)
        if isinstance(node, (cst.Comparison, cst.SimpleString, cst.FormattedString, cst.ConcatenatedString,
                             cst.Integer, cst.Float, cst.Imaginary)):
            self.consume(node, state)
            return EMPTY
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            self.value(node.expression, state)
            return EMPTY
        if isinstance(node, cst.IfExp):
            self.value(node.test, state)
            return self.value(node.body, state) | self.value(node.orelse, state)
        if isinstance(node, cst.NamedExpr):
            tags = self.value(node.value, state)
            self.bind(node.target, tags, state, node.value)
            return tags
        if isinstance(node, (cst.Lambda, cst.Yield)):
            self.leave_all(node, state)  # a lambda runs later; a yield hands its value out
            return EMPTY
        if isinstance(node, cst.Arg):
            return self.value(node.value, state)
        out: Tags = EMPTY
        for child in node.children:
            out |= self.value(child, state)
        return out

    def call(self, node: cst.Call, state: _State) -> Tags:
        own = {self.ops[id(node)]} if id(node) in self.ops else set()
        if self.roles.stops(node):
            self.consume(node, state)
            return EMPTY
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ADDERS and isinstance(func.value, cst.Name) \
                and func.value.value in state.fresh:
            added = frozenset().union(*(self.value(a.value, state) for a in node.args)) if node.args else EMPTY
            self.bind_more(func.value.value, added, state)
            return EMPTY
        receiver = self.value(func, state)
        if self.roles.escapes(node) or (isinstance(func, cst.Attribute) and receiver):
            # project code, a gradient target, or a method of a value an op made (model.fit)
            tags = receiver | frozenset().union(*(self.value(a.value, state) for a in node.args)) \
                if node.args else receiver
            self.escaped |= tags | own
            # what a project function returns is followed on: its arguments' values may be in it
            result = {self.results[id(node)]} if id(node) in self.results else set()
            return frozenset(tags | own | result)
        passing = self.roles.gradient_args(node)
        if passing is None:
            args = frozenset().union(*(self.value(a.value, state) for a in node.args)) if node.args else EMPTY
        else:
            kept = {id(a) for a in passing}
            args = frozenset()
            for arg in node.args:
                tags = self.value(arg.value, state)
                args = args | tags if id(arg.value) in kept else args
        return frozenset(receiver | args | own)

    def consume(self, node: cst.CSTNode, state: _State) -> None:
        """Walk what ``node`` holds for what happens inside it (a nested call that trains or
        stores still counts); its own value carries no gradient."""
        for child in node.children:
            self.value(child, state)

    def leave_all(self, node: cst.CSTNode, state: _State) -> None:
        """Code that runs later or elsewhere (a lambda, a nested def): what it reads leaves."""
        own = _locals(node)  # a def's parameters and assigned names shadow the outer ones
        stack = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, cst.Name) and item.value not in own:
                self.shared.add(item.value)
                self.escaped |= state.env.get(item.value, EMPTY)
            elif isinstance(item, cst.Call) and (id(item) in self.ops or id(item) in self.results):
                self.escaped.add(self.ops[id(item)] if id(item) in self.ops else self.results[id(item)])
            stack.extend(item.children)

    # ---- bindings ----------------------------------------------------------------------------
    def bind(self, target: cst.CSTNode, tags: Tags, state: _State, value: Optional[cst.CSTNode] = None) -> None:
        if isinstance(target, cst.Name):
            state.env[target.value] = tags
            self.ever.setdefault(target.value, set()).update(tags)
            made_here = isinstance(value, (cst.List, cst.Dict, cst.ListComp, cst.DictComp)) or (
                isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
                and value.func.value in ("list", "dict") and not value.args)
            (state.fresh.add if made_here else state.fresh.discard)(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind(element.value, tags, state)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, tags, state)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                and target.value.value in state.fresh:
            for element in target.slice:
                self.consume(element, state)
            self.bind_more(target.value.value, tags, state)
        else:  # self.x = ..., a shared container: it leaves
            self.value(target, state)
            self.escaped |= tags

    def bind_more(self, name: str, tags: Tags, state: _State) -> None:
        state.env[name] = state.env.get(name, EMPTY) | tags
        self.ever.setdefault(name, set()).update(tags)

    # ---- statements --------------------------------------------------------------------------
    def block(self, statements: Iterable[cst.CSTNode], state: _State) -> _State:
        for statement in statements:
            state = self.statement(statement, state)
        return state

    def suite(self, node: Optional[cst.CSTNode], state: _State) -> _State:
        if node is None:
            return state
        if isinstance(node, (cst.Else, cst.Finally)):
            node = node.body
        if isinstance(node, cst.If):  # elif
            return self.statement(node, state)
        return self.block(node.body, state)

    def statement(self, node: cst.CSTNode, state: _State) -> _State:
        if isinstance(node, cst.BaseSmallStatement):  # the body of `def f(): return x`
            self.small(node, state)
            return state
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small(small, state)
            return state
        if isinstance(node, cst.If):
            self.value(node.test, state)
            return self.suite(node.body, state.copy()).join(self.suite(node.orelse, state.copy()))
        if isinstance(node, (cst.For, cst.While)):
            if isinstance(node, cst.For):
                iterated = self.value(node.iter, state)
            else:
                self.value(node.test, state)
            out = state
            for _ in range(3):  # a later iteration sees what an earlier one bound
                inner = out.copy()
                if isinstance(node, cst.For):
                    self.bind(node.target, iterated | self.value(node.iter, inner), inner)
                after = self.suite(node.body, inner)
                joined = out.join(after)
                if joined.env == out.env:
                    break
                out = joined
            return self.suite(node.orelse, out.copy()).join(out)
        if isinstance(node, cst.With):
            for item in node.items:
                tags = self.value(item.item, state)
                if item.asname is not None:
                    self.bind(item.asname.name, tags, state)
            return self.suite(node.body, state)
        if isinstance(node, cst.Try):
            after = self.suite(node.body, state.copy()).join(state)
            out = after
            for handler in node.handlers:
                out = out.join(self.suite(handler.body, after.copy()))
            out = self.suite(node.orelse, out.copy()).join(out) if node.orelse else out
            return self.suite(node.finalbody, out) if node.finalbody else out
        # nested def or class, match, anything else: it may run later and read anything
        self.leave_all(node, state)
        return state

    def small(self, node: cst.CSTNode, state: _State) -> None:
        if isinstance(node, cst.Assign):
            tags = self.value(node.value, state)
            for target in node.targets:
                self.bind(target.target, tags, state, node.value)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.bind(node.target, self.value(node.value, state), state, node.value)
        elif isinstance(node, cst.AugAssign):
            tags = self.value(node.value, state)
            if isinstance(node.target, cst.Name):
                self.bind_more(node.target.value, tags, state)
            else:
                self.bind(node.target, tags | self.value(node.target, state), state)
        elif isinstance(node, cst.Expr):
            self.escaped |= self.value(node.value, state)  # a call for its effect: what it gets leaves
        elif isinstance(node, cst.Return):
            if node.value is not None:
                self.escaped |= self.value(node.value, state)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            self.shared.update(n.name.value for n in node.names)
        elif isinstance(node, (cst.Pass, cst.Break, cst.Continue, cst.Import, cst.ImportFrom)):
            pass
        elif isinstance(node, (cst.Assert, cst.Del)):
            self.consume(node, state)
        else:  # raise and the rest: what they read leaves
            self.leave_all(node, state)

    def finish(self, final: _State) -> set[Tag]:
        for name in (self.ever if self.module and self.importable else self.shared):
            tags = self.ever.get(name, set())
            if self.module and self.importable and name not in self.shared:
                # an importer reads what the module leaves bound: a project call's result the
                # module rebinds first (z = resample(...); z = z.detach()) is never read there
                tags = {t for t in tags if len(t) == 2} | set(final.env.get(name, EMPTY))
            self.escaped |= tags
        return self.escaped


def _locals(node: cst.CSTNode) -> set[str]:
    """The names a function or lambda binds itself (parameters, assignments, loop targets,
    imports), not declared global or nonlocal: inside it they never mean an outer name."""
    if not isinstance(node, (cst.FunctionDef, cst.Lambda)):
        return set()
    bound: set[str] = set()
    declared: set[str] = set()

    class Binder(cst.CSTVisitor):
        def visit_Param(self, param: cst.Param) -> None:
            bound.add(param.name.value)

        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            bound.update(bound_names(target.target))

        def visit_AugAssign(self, assign: cst.AugAssign) -> None:
            bound.update(bound_names(assign.target))

        def visit_AnnAssign(self, assign: cst.AnnAssign) -> None:
            bound.update(bound_names(assign.target))

        def visit_For(self, loop: cst.For) -> None:
            bound.update(bound_names(loop.target))

        def visit_CompFor(self, loop: cst.CompFor) -> None:
            bound.update(bound_names(loop.target))

        def visit_AsName(self, name: cst.AsName) -> None:
            bound.update(bound_names(name.name))

        def visit_FunctionDef(self, inner: cst.FunctionDef) -> None:
            if inner is not node:
                bound.add(inner.name.value)

        def visit_Global(self, names: cst.Global) -> None:
            declared.update(n.name.value for n in names.names)

        def visit_Nonlocal(self, names: cst.Nonlocal) -> None:
            declared.update(n.name.value for n in names.names)

    walk(node, Binder())
    return bound - declared


def dead_ops(statements: Sequence[cst.CSTNode], ops: dict[int, Tag], roles: CallRoles,
             module: bool = False, importable: bool = True,
             results: Optional[dict[int, Tag]] = None) -> tuple[set[Tag], set[Tag]]:
    """The tags (values of ``ops``, keyed by ``id`` of their call) whose results never leave
    ``statements`` except through calls that pass no gradient on, and the same for the tags of
    ``results`` (project calls: ``samples = resample(...); samples = samples.detach()`` hands no
    gradient back into ``resample``). ``module``: the statements are a module's, whose names
    outlive them, unless nothing can import it (a notebook): then only the names its functions
    read do."""
    flow = _Flow(ops, roles, module, importable, results)
    escaped = flow.finish(flow.block(statements, _State()))
    return set(ops.values()) - escaped, set(flow.results.values()) - escaped
