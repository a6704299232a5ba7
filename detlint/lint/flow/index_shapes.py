"""Gathers whose backward cannot collide: one index per row along the gathered dimension.

``q.gather(1, actions.unsqueeze(1))`` picks one value per row. Its backward is a ``scatter_add``
of the output's gradient into zeros of the input's shape (PyTorch's ``gather_backward``:
``new_zeros(input.shape).scatter_add(dim, index, grad)``, seen in the graph ``make_fx`` traces),
and with one index per row along ``dim`` every slot receives at most one value: an add into zero,
the same in any order. Told from the index expression's last shape step (``unsqueeze(dim)``,
``view``/``reshape``/``expand`` with 1 at ``dim``, ``[:, None]``, ``argmax(dim, keepdim=True)``), through conversions and
``.to(device)`` and through a local name the function bound it to.
"""
from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from detlint.lint.conditions import argument, dotted

# calls and methods that keep their argument's (or receiver's) shape
_KEEP_METHODS = {"to", "long", "int", "cuda", "cpu", "detach", "type", "contiguous", "clone", "type_as"}
_KEEP_CALLS = {"torch.LongTensor", "torch.IntTensor", "torch.tensor", "torch.as_tensor", "torch.from_numpy",
               "torch.cuda.LongTensor", "LongTensor", "tensor", "as_tensor", "from_numpy"}
_RESHAPES = {"view", "reshape", "expand"}
MAX_DEPTH = 8

Bound = Callable[[str], list[cst.BaseExpression]]


def _int(node: Optional[cst.BaseExpression]) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, cst.Integer):
        return -int(node.expression.value)
    return None


def _at(items: list[Optional[int]], dim: int) -> Optional[int]:
    if -len(items) <= dim < len(items):
        return items[dim]
    return None


def single_along(node: cst.BaseExpression, dim: int, bound: Bound, depth: int = 0) -> bool:
    """Is ``node``'s size along ``dim`` 1, by the last step that shapes it?"""
    if depth > MAX_DEPTH:
        return False
    if isinstance(node, cst.Name):
        values = bound(node.value)
        return bool(values) and all(single_along(v, dim, bound, depth + 1) for v in values)
    if isinstance(node, cst.Subscript):
        # actions[:, None]: None inserts a dimension of size 1 where it stands
        items = [e.slice.value if isinstance(e.slice, cst.Index) else None for e in node.slice]
        if any(isinstance(i, cst.Ellipsis) for i in items):
            return False  # idx[..., None]: which dimension the None is depends on idx
        nones = [isinstance(i, cst.Name) and i.value == "None" for i in items]
        return any(nones) and -len(nones) <= dim < len(nones) and nones[dim]
    if not isinstance(node, cst.Call):
        return False
    args = [a for a in node.args if a.keyword is None and not a.star]
    if isinstance(node.func, cst.Attribute):
        method = node.func.attr.value
        if method == "unsqueeze" and len(node.args) == 1:
            return _int(node.args[0].value) == dim
        if method in _RESHAPES and args and len(args) == len(node.args):
            shape: list[Optional[int]] = [_int(a.value) for a in args]
            if len(args) == 1 and isinstance(args[0].value, (cst.Tuple, cst.List)):
                shape = [_int(e.value) for e in args[0].value.elements]
            return _at(shape, dim) == 1
        if method in ("argmax", "argmin"):  # q.argmax(dim=1, keepdim=True): one index per row
            keep = argument(node, "keepdim", 1)
            return isinstance(keep, cst.Name) and keep.value == "True" and _int(argument(node, "dim", 0)) == dim
        if method in _KEEP_METHODS:
            return single_along(node.func.value, dim, bound, depth + 1)
    if (dotted(node.func) or "") in _KEEP_CALLS and len(args) == 1:
        return single_along(args[0].value, dim, bound, depth + 1)
    return False


def one_index_per_row(call: cst.Call, dim_pos: int, index_pos: int, bound: Bound) -> bool:
    """``gather(dim, index)`` (or ``torch.gather(x, dim, index)``) with a literal ``dim`` and an
    index of size 1 along it."""
    dim = _int(argument(call, "dim", dim_pos))
    index = argument(call, "index", index_pos)
    return dim is not None and index is not None and single_along(index, dim, bound)
