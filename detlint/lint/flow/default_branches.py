"""Branches the default configuration never takes.

``if args.seed is not None: torch.manual_seed(args.seed)`` with ``--seed`` defaulting to None
seeds nothing in a run started without options; ``if args.cuda_deterministic:`` with a
``store_true`` flag sets nothing either. A seed or a determinism switch counts where it runs, so
such a call is no provider for the default run. Told from the command-line options the file
defines (their defaults); a test that reads anything else is unknown (None).

A test of an option another module defines (``if opt.model == "resnet":`` in ``model.py``, the
option in ``opts.py``) is kept as a form (``test_form``) and decided for each program from the
options of the modules it runs (``form_truth``).
"""
from __future__ import annotations

import ast
from typing import Any, Callable, Optional

import libcst as cst

from detlint.lint.flow.option_forms import Form, plain_value

# the default of the option an expression reads: (known, value)
OptionDefault = Callable[[cst.BaseExpression], tuple[bool, Any]]
# the option an expression reads, by name (whoever defines it), or None
OptionRead = Callable[[cst.BaseExpression], Optional[str]]
OPS = {cst.Is: "is", cst.IsNot: "is not", cst.Equal: "==", cst.NotEqual: "!=", cst.LessThan: "<",
       cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">="}


def default_truth(test: cst.BaseExpression, option_default: OptionDefault) -> Optional[bool]:
    """Is ``test`` true, false or unknown (None) when every option has its default?"""
    node = _bare(test)
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
    literal = _literal(node)
    if literal is not _UNKNOWN:  # `if False:` around a demo, `if 0:`: never taken
        return bool(literal)
    known, value = option_default(node)
    return bool(value) if known else None


_UNKNOWN = object()


def _bare(node: cst.BaseExpression) -> cst.BaseExpression:
    """The expression without its parentheses (a tuple keeps them: ``()`` needs its own)."""
    return node.with_changes(lpar=[], rpar=[]) if getattr(node, "lpar", None) and not isinstance(node, cst.Tuple) \
        else node


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


MAX_FORM_DEPTH = 24  # a cache entry keeps forms this deep (facts_json.MAX_FORM_DEPTH is 32)


def test_form(test: cst.BaseExpression, option_default: OptionDefault, option_read: OptionRead,
              param_of: OptionRead = lambda node: None, depth: int = 0) -> Optional[Form]:
    """``test`` as a form whose options (and parameters, with ``param_of`` saying the function
    whose parameter a name is) are left open, or None when part of it is neither an option, a
    parameter, a known value nor a literal (it cannot be decided anywhere)."""
    node = _bare(test)
    if depth > MAX_FORM_DEPTH:
        return None  # `a or b or ... or z`, forty deep: undecided
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        inner = test_form(node.expression, option_default, option_read, param_of, depth + 1)
        return None if inner is None else ["not", inner]
    if isinstance(node, cst.BooleanOperation):
        left = test_form(node.left, option_default, option_read, param_of, depth + 1)
        right = test_form(node.right, option_default, option_read, param_of, depth + 1)
        if left is None or right is None:
            return None
        return ["and" if isinstance(node.operator, cst.And) else "or", left, right]
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        op = OPS.get(type(node.comparisons[0].operator))
        left = test_form(node.left, option_default, option_read, param_of, depth + 1)
        literal = _literal(node.comparisons[0].comparator)
        if op is None or left is None or literal is _UNKNOWN or not plain_value(literal):
            return None
        return ["cmp", op, left, ["lit", literal]]
    known, value = option_default(node)
    if known:
        return ["lit", value] if plain_value(value) else None
    literal = _literal(node)
    if literal is not _UNKNOWN:  # a call's argument: define_G(..., "encoder")
        return ["lit", literal] if plain_value(literal) else None
    key = option_read(node)
    if key:
        return ["opt", key]
    scope = param_of(node)
    return ["param", node.value, scope] if scope and isinstance(node, cst.Name) else None



def replicates(values: list[cst.BaseExpression], name: str) -> bool:
    """Is every value bound to ``name`` the name's own value repeated into a list (``modes =
    [modes] * n_scales``)? Then any element of it is what was passed."""
    def repeated(node: cst.BaseExpression) -> bool:
        node = _bare(node)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            return repeated(node.left) or repeated(node.right)
        return isinstance(node, (cst.List, cst.Tuple)) and len(node.elements) == 1 \
            and isinstance(_bare(node.elements[0].value), cst.Name) and _bare(node.elements[0].value).value == name
    return bool(values) and all(repeated(value) for value in values)
