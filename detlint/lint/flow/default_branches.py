"""Branches the default configuration never takes.

``if args.seed is not None: torch.manual_seed(args.seed)`` with ``--seed`` defaulting to None
seeds nothing in a run started without options; ``if args.cuda_deterministic:`` with a
``store_true`` flag sets nothing either. A seed or a determinism switch counts where it runs, so
such a call is no provider for the default run. Told from the command-line options the file
defines (their defaults); a test that reads anything else is unknown (None).
"""
from __future__ import annotations

import ast
from typing import Any, Callable, Optional

import libcst as cst

# the default of the option an expression reads: (known, value)
OptionDefault = Callable[[cst.BaseExpression], tuple[bool, Any]]


def default_truth(test: cst.BaseExpression, option_default: OptionDefault) -> Optional[bool]:
    """Is ``test`` true, false or unknown (None) when every option has its default?"""
    node = test.with_changes(lpar=[], rpar=[]) if hasattr(test, "lpar") else test
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        inner = default_truth(node.expression, option_default)
        return None if inner is None else not inner
    if isinstance(node, cst.BooleanOperation):
        left = default_truth(node.left, option_default)
        right = default_truth(node.right, option_default)
        if isinstance(node.operator, cst.And):
            return False if False in (left, right) else (True if left and right else None)
        return True if True in (left, right) else (False if left is False and right is False else None)
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        known, value = option_default(node.left)
        target = node.comparisons[0]
        literal = _literal(target.comparator)
        if not known or literal is _UNKNOWN:
            return None
        op = target.operator
        if isinstance(op, cst.Is):
            return value is literal
        if isinstance(op, cst.IsNot):
            return value is not literal
        if isinstance(op, cst.Equal):
            return value == literal
        if isinstance(op, cst.NotEqual):
            return value != literal
        ordering = {cst.LessThan: lambda a, b: a < b, cst.LessThanEqual: lambda a, b: a <= b,
                    cst.GreaterThan: lambda a, b: a > b, cst.GreaterThanEqual: lambda a, b: a >= b}
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (value, literal))
        for kind, compare in ordering.items():
            if isinstance(op, kind) and numbers:
                return compare(value, literal)  # `if args.seed < 0:` with --seed defaulting to 0
        return None
    known, value = option_default(node)
    return bool(value) if known else None


_UNKNOWN = object()


def _literal(node: cst.BaseExpression) -> Any:
    if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[node.value]
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return ast.literal_eval(node.value)  # 0x4E00, 1_000, 0.5
        except (ValueError, SyntaxError):
            return _UNKNOWN
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        value = _literal(node.expression)  # --local_rank defaults to -1
        return -value if isinstance(value, (int, float)) and not isinstance(value, bool) else _UNKNOWN
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    return _UNKNOWN
