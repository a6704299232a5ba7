"""Which layers sit downstream of trainable weights: only there do their backprop kernels run.

Preprocessing and augmentation layers (group ``input-stage-layers``: ``Resizing``, ``RandomFlip``...)
usually sit at a model's input, where no gradient reaches them: backprop stops at the first
weights. Their backprop op matches are kept only when the walk sees weights upstream of the layer:
an earlier layer of the same ``Sequential`` list (or ``model.add()``), or an input tensor that came
out of a layer with weights (``Resizing(...)(conv(x))``, ``self.resize(self.conv(x))``). A layer
stored in a name and called later is judged where it is called, by the arguments it was built with.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import libcst as cst

from detlint.lint.conditions import dotted

# what a constructor call makes, as ``kind_of`` says: a stack of layers (Sequential), a layer at
# the input stage, a layer with weights, or something else ("")
STACK, INPUT_STAGE, TRAINABLE = "stack", "input-stage", "trainable"


@dataclass
class Layer:
    pending: set[int] = field(default_factory=set)  # its backprop op hits not yet shown to get a gradient
    trainable: bool = False  # has weights: what comes out of it is downstream of weights


class LayerFlow:
    """Follows layers and tensors through one file's assignments, in walk order."""

    def __init__(self, kind_of: Callable[[cst.Call], str], key_of: Callable[[str], list[str]],
                 adds: Callable[[str], bool]) -> None:
        self.kind_of = kind_of  # constructor call -> STACK, INPUT_STAGE, TRAINABLE or ""
        self.key_of = key_of  # dotted name -> its keys, the innermost scope first
        self.adds = adds  # is this method name one that appends a layer to a stack?
        self.layers: dict[str, Layer] = {}
        self.tensors: dict[str, bool] = {}  # name -> downstream of weights
        self.node_hits: dict[int, set[int]] = {}  # id(constructor call) -> its backprop op hits
        self.pending: set[int] = set()
        self.confirmed: set[int] = set()

    def note_hits(self, call: cst.Call, indices: set[int]) -> None:
        self.node_hits[id(call)] = indices
        self.pending |= indices

    def unconfirmed(self) -> set[int]:
        return self.pending - self.confirmed

    # ---- statements --------------------------------------------------------------------------
    def assign(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        trained = self.trained(value)
        layer = self.layer(value)
        for target in targets:
            name = dotted(target)
            if name is None:
                continue
            key = self.key_of(name)[0]
            self.tensors[key] = trained
            if layer is not None:
                self.layers[key] = layer
            else:
                self.layers.pop(key, None)

    def parameter(self, key: str) -> None:
        """A function's parameter: what it is depends on the caller (not seen here)."""
        self.tensors[key] = False
        self.layers.pop(key, None)

    def expression(self, value: cst.BaseExpression) -> None:
        """A statement that is only an expression: ``model.add(layer)``, ``return resize(x)``."""
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and self.adds(value.func.attr.value):
            stack = self.lookup(self.layers, dotted(value.func.value))
            if stack is not None and value.args:
                self.append(stack, self.layer(value.args[0].value))
        self.trained(value)

    # ---- values ------------------------------------------------------------------------------
    def lookup(self, table: dict, name: Optional[str]):  # type: ignore[no-untyped-def]
        if name is None:
            return None
        return next((table[k] for k in self.key_of(name) if k in table), None)

    def trained(self, node: cst.BaseExpression) -> bool:
        """Is this tensor downstream of weights (as far as the walk can tell)?"""
        if isinstance(node, (cst.Name, cst.Attribute)):
            return bool(self.lookup(self.tensors, dotted(node)))
        if isinstance(node, cst.Call):
            inputs = any([self.trained(arg.value) for arg in node.args])
            applied = self.applied(node.func)
            if applied is None:
                if self.kind_of(node) == STACK:
                    self.layer(node)  # Sequential([...]) not bound to a name: its own order still counts
                return inputs  # a function of its arguments: tf.concat([a, b]), helper(x)
            if inputs:
                self.confirm(applied)
            return inputs or applied.trainable
        if isinstance(node, (cst.List, cst.Tuple)):
            return any([self.trained(e.value) for e in node.elements])
        if isinstance(node, cst.BinaryOperation):
            return any([self.trained(node.left), self.trained(node.right)])
        if isinstance(node, cst.Subscript):
            return self.trained(node.value)
        return False

    def applied(self, func: cst.BaseExpression) -> Optional[Layer]:
        """The layer a call applies: ``Resizing(8, 8)(x)``, ``resize(x)`` for a stored layer."""
        if isinstance(func, cst.Call):
            return self.layer(func) or Layer()
        return self.lookup(self.layers, dotted(func))

    def layer(self, node: cst.BaseExpression) -> Optional[Layer]:
        """The layer an expression makes or names, if it is one the walk knows."""
        if isinstance(node, (cst.Name, cst.Attribute)):
            return self.lookup(self.layers, dotted(node))
        if not isinstance(node, cst.Call) or self.lookup(self.layers, dotted(node.func)) is not None:
            return None  # not a constructor, or a stored layer applied to a tensor
        kind = self.kind_of(node)
        if kind == STACK:
            stack = Layer()
            first = node.args[0].value if node.args and node.args[0].keyword is None else None
            if isinstance(first, (cst.List, cst.Tuple)):
                for element in first.elements:
                    self.append(stack, self.layer(element.value))
            return stack
        if kind == INPUT_STAGE:
            return Layer(set(self.node_hits.get(id(node), ())))
        if kind == TRAINABLE:
            return Layer(trainable=True)
        return None

    def append(self, stack: Layer, layer: Optional[Layer]) -> None:
        if layer is None:
            return
        if stack.trainable:
            self.confirm(layer)
        else:
            stack.pending |= layer.pending
        stack.trainable = stack.trainable or layer.trainable

    def confirm(self, layer: Layer) -> None:
        self.confirmed |= layer.pending
