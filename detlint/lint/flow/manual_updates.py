"""Parameter updates written by hand: the gradient step of a program without an optimiser object.

``theta[k] = theta[k] - grads[k] * lr``, ``w -= lr * w.grad``, ``jax.tree_util.tree_map(lambda p, g:
p - lr * g, params, grads)``: a value moved against a gradient is a parameter trained. Told by shape:
the target is the value being decreased, and what is subtracted reads a name that says gradient
(``grad`` in it: ``grads``, ``w.grad``, ``dgrad``). The knowledge base names the shape
(``shape: [gradient-step]``) where it counts, as it names calls.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from detlint.lint.conditions import dotted
from detlint.lint.walk import walk

GRADIENT_STEP = "gradient-step"
_TREE_MAPS = ("tree_map", "tree_multimap", "tree.map")


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _says_gradient(node: cst.CSTNode) -> bool:
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            nonlocal found
            found = found or "grad" in name.value.lower()

        def visit_Attribute(self, attr: cst.Attribute) -> None:
            nonlocal found
            found = found or "grad" in attr.attr.value.lower()

    walk(node, Finder())
    return found


def assigned_step(target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """``x = x - <gradient>`` (``theta[k] = theta[k] - grads[k] * step``), or a comprehension over
    the gradients that subtracts (``[(w - lr * dw, b - lr * db) for (w, b), (dw, db) in
    zip(params, grads)]``, the JAX README's MLP)."""
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
        return _says_gradient(value.for_in.iter) and _subtracts(value.elt)
    return isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Subtract) \
        and _code(value.left).strip() == _code(target).strip() and _says_gradient(value.right)


def _subtracts(node: cst.CSTNode) -> bool:
    found = False

    class Finder(cst.CSTVisitor):
        def visit_BinaryOperation(self, op: cst.BinaryOperation) -> None:
            nonlocal found
            found = found or isinstance(op.operator, cst.Subtract)

    walk(node, Finder())
    return found


def augmented_step(node: cst.AugAssign) -> bool:
    """``w -= lr * w.grad``."""
    return isinstance(node.operator, cst.SubtractAssign) and _says_gradient(node.value)


def mapped_step(call: cst.Call, qualified: Optional[str]) -> bool:
    """``tree_map(lambda p, g: p - lr * g, params, grads)``: a two-parameter function that moves its
    first argument against its second, mapped over parameters and gradients."""
    name = qualified or dotted(call.func) or ""
    if not name.endswith(_TREE_MAPS) or not call.args or not isinstance(call.args[0].value, cst.Lambda):
        return False
    fn = call.args[0].value
    params = [p.name.value for p in fn.params.params]
    body = fn.body
    if len(params) < 2 or not isinstance(body, cst.BinaryOperation) or not isinstance(body.operator, cst.Subtract):
        return False
    left = dotted(body.left)
    mentioned = set()

    class Names(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            mentioned.add(n.value)

    walk(body.right, Names())
    # ...and mapped over something that says gradient (not a difference of two positions)
    return left == params[0] and any(p in mentioned for p in params[1:]) \
        and any(_says_gradient(arg.value) for arg in call.args[1:])
