"""Which backprop ops only ever see a data batch, so no gradient flows through them.

Autograd runs an op's backward only when one of its inputs needs a gradient. The tensors a data
loader yields need none, and neither does anything computed from them alone: moved to the GPU,
cast, scaled (``imgs.to(device).float() / 255``), indexed or resized. A multi-scale bilinear
resize of the input batch (``imgs = F.interpolate(imgs, size=ns, mode="bilinear")``) therefore
never runs its nondeterministic backward, whatever the model does with the result.

The walk follows one function's (or module's) statements in order. A name holds a batch after
``for x, y in <loader>`` (a name or attribute that says ``loader``, a ``DataLoader(...)``, or
``enumerate``/``tqdm``/``zip`` of one) until it is bound to anything else; branches keep only
what holds on every path, and a loop body is walked twice, so a value the previous iteration
left behind is not taken for a batch. ``x.requires_grad_()`` or ``x.requires_grad = True`` ends
it. An op counts only when its first argument is a batch value and every other one is a batch
value or a literal (sizes, modes): unknown values keep the finding.

A graph-building script holds its batches differently: what a data source returns (the
knowledge base's ``data-sources`` group: ``tf.placeholder``, the queue batchers, an iterator's
``get_next()``) is a batch too, and so is an attribute of ``self`` bound to one in the same
method (``self.x = tf.placeholder(...)``; ``tf.image.resize_images(self.x, dims)``): nothing
trainable lies upstream of them, so no gradient is taken through an op applied to them alone.
Unless a gradient is taken with respect to them (``tf.gradients(loss, x)``, ``tape.watch(x)``:
an adversarial step, a gradient penalty), and until a method of ``self`` is called (it may
rebind ``self.x``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import libcst as cst

from detlint.lint.conditions import bound_names

Tag = tuple[int, int]
# methods that convert, move or reshape a tensor: their arguments are devices, dtypes and shapes
CONVERSIONS = frozenset({
    "to", "float", "half", "double", "bfloat16", "long", "int", "bool", "byte", "cuda", "cpu", "type",
    "contiguous", "permute", "view", "reshape", "unsqueeze", "squeeze", "transpose", "flip", "flatten",
    "pin_memory", "detach", "clone", "expand", "repeat", "numpy", "item", "tolist", "size", "dim",
})
# methods whose arguments are combined with the tensor: a batch only if they are batches too
ARITHMETIC = frozenset({"add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_", "clamp", "clamp_", "pow"})
# wrappers that iterate what they are given
ITERATORS = frozenset({"enumerate", "tqdm", "iter", "zip", "islice", "cycle"})


@dataclass
class _State:
    batches: set[str] = field(default_factory=set)  # names holding a data batch
    loaders: set[str] = field(default_factory=set)  # names bound to a data loader
    literals: set[str] = field(default_factory=set)  # names bound to sizes: [h * 2 for h in shape]

    def copy(self) -> "_State":
        return _State(set(self.batches), set(self.loaders), set(self.literals))

    def meet(self, other: "_State") -> "_State":
        return _State(self.batches & other.batches, self.loaders & other.loaders, self.literals & other.literals)


class _Walk:
    def __init__(self, ops: dict[int, Tag], is_loader_call: Callable[[cst.Call], bool],
                 is_source_call: Callable[[cst.Call], bool], makes_weights: Callable[[cst.Call], bool]) -> None:
        self.ops = ops
        self.is_loader_call = is_loader_call
        self.is_source_call = is_source_call
        self.makes_weights = makes_weights
        self.batch_only: dict[Tag, bool] = {}  # op -> a batch on every visit
        self.differentiated: set[str] = set()  # tf.gradients(loss, x), tape.watch(x): never a batch

    # ---- values ----------------------------------------------------------------------------
    def loader(self, node: cst.BaseExpression, state: _State) -> bool:
        if isinstance(node, cst.Name):
            return node.value in state.loaders or "loader" in node.value.lower()
        if isinstance(node, cst.Attribute):
            return "loader" in node.attr.value.lower()
        if isinstance(node, cst.Call):
            name = _last_name(node.func).lower()  # a project's own TQDM too
            if name in ITERATORS:
                args = [a.value for a in node.args if a.keyword is None and not a.star]
                return bool(args) and (all(self.loader(a, state) for a in args) if name == "zip"
                                       else self.loader(args[0], state))
            return self.is_loader_call(node)
        return False

    def batch(self, node: cst.BaseExpression, state: _State) -> bool:
        if isinstance(node, cst.Name):
            return node.value in state.batches and node.value not in self.differentiated
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
            return True
        if isinstance(node, cst.Attribute):
            key = _attribute_key(node)
            if key in self.differentiated:
                return False
            return key in state.batches or self.batch(node.value, state)
        if isinstance(node, cst.Subscript):
            return self.batch(node.value, state)
        if isinstance(node, cst.BinaryOperation):
            return self.batch(node.left, state) and self.batch(node.right, state)
        if isinstance(node, cst.UnaryOperation):
            return self.batch(node.expression, state)
        if isinstance(node, cst.Call):
            if self.is_source_call(node):
                return True
            func = node.func
            if isinstance(func, cst.Attribute) and self.batch(func.value, state):
                method = func.attr.value
                if method in CONVERSIONS:
                    return True
                if method in ARITHMETIC:
                    return all(self.batch(a.value, state) for a in node.args)
                return False
            tag = self.ops.get(id(node))
            return tag is not None and self.op_on_batch(node, state)
        return False

    def op_on_batch(self, node: cst.Call, state: _State) -> bool:
        positional = [a for a in node.args if a.keyword is None]
        if not positional or any(a.star for a in positional) or _last_name(node.func)[:1].isupper():
            return False  # a layer's constructor: its input comes later
        if self.makes_weights(node):
            return False  # tf.layers.dense(x, 4): its own weights get a gradient
        if not any(_reads(a.value, state.batches) for a in positional):
            return False  # constants alone (from_pretrained("name")) are no batch
        # sizes and modes may come positionally too: tf.image.resize_images(x, [h, w])
        return self.batch(positional[0].value, state) and all(
            self.batch(a.value, state) or _constant(a.value, state) for a in node.args[1:])

    # ---- statements ------------------------------------------------------------------------
    def block(self, statements: Sequence[cst.CSTNode], state: _State) -> _State:
        for statement in statements:
            state = self.statement(statement, state)
        return state

    def statement(self, node: cst.CSTNode, state: _State) -> _State:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small(small, state)
            return state
        if isinstance(node, cst.If):
            self.visit_ops(node.test, state)
            taken = self.block(node.body.body, state.copy())
            other = self.statement(node.orelse, state.copy()) if isinstance(node.orelse, cst.If) else (
                self.block(node.orelse.body.body, state.copy()) if node.orelse is not None else state)
            return taken.meet(other)
        if isinstance(node, (cst.For, cst.While)):
            return self.loop(node, state)
        if isinstance(node, cst.With):
            return self.block(node.body.body, state)
        if isinstance(node, cst.Try):
            after = self.block(node.body.body, state.copy())
            for handler in node.handlers:
                after = after.meet(self.block(handler.body.body, state.meet(after)))
            if node.finalbody is not None:
                after = self.block(node.finalbody.body.body, after)
            return after
        return state  # a nested def or class: not this walk's code

    def loop(self, node: cst.CSTNode, state: _State) -> _State:
        before = state.copy()
        current = state.copy()
        for _ in range(2):  # the second pass starts from what the first iteration may leave
            body = current.copy()
            if isinstance(node, cst.For):
                self.visit_ops(node.iter, body)
                names = bound_names(node.target)
                body.batches -= set(names)
                body.loaders -= set(names)
                if self.loader(node.iter, current):
                    body.batches |= set(names)
            after = self.block(node.body.body, body)
            current = before.meet(after)
        return current

    def small(self, node: cst.CSTNode, state: _State) -> None:
        if isinstance(node, cst.Assign):
            self.visit_ops(node.value, state)
            batch, loader = self.batch(node.value, state), self.loader(node.value, state)
            for target in node.targets:
                self.bind(target.target, node.value, batch, loader, state)
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            self.visit_ops(node.value, state)
            self.bind(node.target, node.value, self.batch(node.value, state), self.loader(node.value, state), state)
        elif isinstance(node, cst.AugAssign):
            self.visit_ops(node.value, state)
            if not self.batch(node.value, state):
                for name in _bound(node.target):
                    state.batches.discard(name)
        elif isinstance(node, cst.Expr):
            self.visit_ops(node.value, state)
            call = node.value
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and \
                    call.func.attr.value == "requires_grad_":
                _discard_root(call.func.value, state)
        elif isinstance(node, cst.Return) and node.value is not None:
            self.visit_ops(node.value, state)

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression, batch: bool, loader: bool,
             state: _State) -> None:
        if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad":
            _discard_root(target.value, state)
            return
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) and \
                len(target.elements) == len(value.elements):
            for t, v in zip(target.elements, value.elements):
                self.bind(t.value, v.value, self.batch(v.value, state), self.loader(v.value, state), state)
            return
        literal = _literal(value, state)
        for name in _bound(target):
            for names, holds in ((state.batches, batch), (state.loaders, loader), (state.literals, literal)):
                names.discard(name)
                if holds:
                    names.add(name)

    def visit_ops(self, node: cst.CSTNode, state: _State) -> None:
        """Judge every op call in an expression (lambdas and comprehensions bind their own names)."""
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            self.mark_unknown(node)
            return
        if isinstance(node, cst.Call) and id(node) in self.ops:
            tag = self.ops[id(node)]
            self.batch_only[tag] = self.batch_only.get(tag, True) and self.op_on_batch(node, state)
        for child in node.children:
            self.visit_ops(child, state)
        if isinstance(node, cst.Call) and _calls_self(node):  # self._add_noise() may rebind self.x
            state.batches -= {name for name in state.batches if name.startswith("self.")}

    def mark_unknown(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Call) and id(node) in self.ops:
            self.batch_only[self.ops[id(node)]] = False
        for child in node.children:
            self.mark_unknown(child)


def batch_only_ops(statements: Sequence[cst.CSTNode], ops: dict[int, Tag],
                   is_loader_call: Callable[[cst.Call], bool],
                   is_source_call: Callable[[cst.Call], bool] = lambda call: False,
                   makes_weights: Callable[[cst.Call], bool] = lambda call: False,
                   differentiates: Callable[[cst.Call], Optional[list[cst.BaseExpression]]] = lambda call: None,
                   ) -> set[Tag]:
    """The tags (values of ``ops``, keyed by ``id`` of their call) whose every input is a data
    batch wherever ``statements`` run them. ``differentiates``: what a call takes a gradient with
    respect to (the knowledge base's ``differentiated-inputs``)."""
    walk = _Walk(ops, is_loader_call, is_source_call, makes_weights)
    walk.differentiated = differentiated_inputs(statements, differentiates)
    walk.block(statements, _State())
    return {tag for tag, only in walk.batch_only.items() if only}


def _last_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return ""


def _attribute_key(node: cst.Attribute) -> str:
    """``self.x`` for an attribute of a plain name, else "" (``a[0].x`` is not followed)."""
    return f"{node.value.value}.{node.attr.value}" if isinstance(node.value, cst.Name) else ""


def _bound(target: cst.BaseExpression) -> list[str]:
    """What an assignment binds, an attribute of a name (``self.x``) included."""
    if isinstance(target, cst.Attribute):
        key = _attribute_key(target)
        return [key] if key else []
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _bound(element.value)]
    if isinstance(target, cst.StarredElement):
        return _bound(target.value)
    return bound_names(target)


def _literal(node: cst.BaseExpression, state: _State) -> bool:
    """Sizes, modes and flags: constants, the lists built of them, and names bound to either."""
    return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.List, cst.Tuple, cst.ListComp)) or (
        isinstance(node, cst.Name) and (node.value in ("True", "False", "None") or node.value in state.literals))


def _constant(node: cst.BaseExpression, state: _State) -> bool:
    """A size or a mode: a number, a string, a name bound to sizes, or a list or tuple of them."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _constant(e.value, state) for e in node.elements)
    if isinstance(node, cst.BinaryOperation):
        return _constant(node.left, state) and _constant(node.right, state)
    return _literal(node, state)  # a name bound to a list, a comprehension of sizes


def _calls_self(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) \
        and call.func.value.value == "self"


def differentiated_inputs(statements: Sequence[cst.CSTNode],
                          differentiates: Callable[[cst.Call], Optional[list[cst.BaseExpression]]]) -> set[str]:
    """What a gradient is taken with respect to (``tf.gradients(loss, x)``, ``tape.watch(x)``):
    input data that is differentiated after all (adversarial steps, gradient penalties), by name
    or ``self.x``."""
    out: set[str] = set()
    stack: list[cst.CSTNode] = list(statements)
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(node, cst.Call):
            for arg in differentiates(node) or ():
                out |= _keys_read(arg)
        stack.extend(node.children)
    return out


def _keys_read(node: cst.CSTNode) -> set[str]:
    """The names and ``self.x`` attributes an expression reads."""
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, cst.Attribute) and _attribute_key(node):
        return {_attribute_key(node)}
    return {key for child in node.children for key in _keys_read(child)}


def _reads(node: cst.CSTNode, names: set[str]) -> bool:
    if isinstance(node, cst.Name):
        return node.value in names
    if isinstance(node, cst.Attribute) and _attribute_key(node) in names:
        return True
    return any(_reads(child, names) for child in node.children)


def _discard_root(node: cst.BaseExpression, state: _State) -> None:
    if isinstance(node, cst.Attribute):
        state.batches.discard(_attribute_key(node))
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    if isinstance(node, cst.Name):
        state.batches.discard(node.value)


def loader_constructor(qualified: Optional[str], written: Optional[str]) -> bool:
    """``DataLoader(...)`` or a project helper named for one (``create_dataloader(...)``)."""
    last = (written or "").rsplit(".", 1)[-1]
    return bool(qualified and qualified.endswith(".DataLoader")) or "loader" in last.lower()
