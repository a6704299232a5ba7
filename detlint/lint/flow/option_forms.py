"""Tests of command-line options as data, decided per program (no libcst: warm runs use it).

A form: ``["opt", key]``, ``["param", name, function]`` (what the caller passes to that
parameter), ``["lit", value]``, ``["not", f]``, ``["and", f, g]``, ``["or", f, g]``,
``["cmp", op, f, g]`` (op: is, is not, ==, !=, <, <=, >, >=). ``default_branches.test_form``
makes them from a file's ``if`` tests and from the arguments of calls.
"""
from __future__ import annotations

from typing import Any, Optional

Form = list[Any]


def form_options(form: Form) -> set[str]:
    """The options a form reads."""
    if form[0] == "opt":
        return {form[1]}
    if form[0] in ("param", "lit"):
        return set()
    return set().union(*(form_options(part) for part in form[1:] if isinstance(part, list)))


def form_params(form: Form) -> set[tuple[str, str]]:
    """The parameters a form reads: (function, name)."""
    if form[0] == "param":
        return {(form[2], form[1])}
    if form[0] in ("opt", "lit"):
        return set()
    return set().union(*(form_params(part) for part in form[1:] if isinstance(part, list)))


def form_truth(form: Form, defaults: dict[str, Any], params: Optional[dict[tuple[str, str], Any]] = None
               ) -> Optional[bool]:
    """The form's value with every option at its default in ``defaults`` and each parameter at
    the value in ``params`` ((function, name) -> value), None when that is unknown."""
    kind = form[0]
    if kind == "not":
        inner = form_truth(form[1], defaults, params)
        return None if inner is None else not inner
    if kind in ("and", "or"):
        left, right = form_truth(form[1], defaults, params), form_truth(form[2], defaults, params)
        if kind == "and":
            return False if False in (left, right) else (True if left and right else None)
        return True if True in (left, right) else (False if left is False and right is False else None)
    if kind == "cmp":
        known, value = form_value(form[2], defaults, params)
        literal = form[3][1]
        if not known:
            return None
        op = form[1]
        if op in ("is", "is not"):  # None, True, False: singletons, also when read from a cache
            return (value is literal) == (op == "is") if literal is None or isinstance(literal, bool) else None
        if op in ("==", "!="):
            return (value == literal) == (op == "==")
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (value, literal))
        compare = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
                   ">=": lambda a, b: a >= b}
        return compare[op](value, literal) if numbers else None
    known, value = form_value(form, defaults, params)
    return bool(value) if known else None


def form_value(form: Form, defaults: dict[str, Any], params: Optional[dict[tuple[str, str], Any]] = None
               ) -> tuple[bool, Any]:
    """(known, value) of a leaf: a literal, an option at its default, a parameter's value."""
    if form[0] == "lit":
        return True, form[1]
    if form[0] == "opt" and form[1] in defaults:
        return True, defaults[form[1]]
    if form[0] == "param" and params and (form[2], form[1]) in params:
        return True, params[(form[2], form[1])]
    return False, None


def plain_value(value: Any) -> bool:
    """A value a cache entry keeps as it is (JSON)."""
    return value is None or isinstance(value, (bool, int, float, str))


_CONDITION_OPS = {"eq": "==", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}


def condition_form(leaf: Form, spec: dict[str, Any]) -> Optional[Form]:
    """A knowledge-base condition on an argument (``{eq: bilinear}``, ``{in: [a, b]}``) as a
    test of ``leaf`` (a parameter's form), or None when it asks something a form cannot say."""
    parts: list[Form] = []
    for key, value in spec.items():
        if key in ("pos", "default"):
            continue  # where the argument is, and what a missing one means: not about a given value
        if key in _CONDITION_OPS and plain_value(value):
            parts.append(["cmp", _CONDITION_OPS[key], leaf, ["lit", value]])
        elif key in ("in", "not-in") and isinstance(value, list) and value and all(map(plain_value, value)):
            tests = [["cmp", "==" if key == "in" else "!=", leaf, ["lit", item]] for item in value]
            parts.append(_joined("or" if key == "in" else "and", tests))
        else:
            return None
    return _joined("and", parts) if parts else None


def all_of(forms: list[Form]) -> Optional[Form]:
    """The forms joined by ``and`` (None when there are none)."""
    return _joined("and", forms) if forms else None


def _joined(kind: str, forms: list[Form]) -> Form:
    out = forms[0]
    for form in forms[1:]:
        out = [kind, out, form]
    return out


def describe_condition(spec: dict[str, Any]) -> str:
    """``is 'bilinear'``, ``is one of 'bilinear', 'bicubic'``: what a condition asks of a value."""
    words = {"eq": "is", "ne": "is not", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    said = [f"{words[k]} {v!r}" for k, v in spec.items() if k in words]
    said += [f"is {'not ' if k == 'not-in' else ''}one of {', '.join(map(repr, v))}"
             for k, v in spec.items() if k in ("in", "not-in")]
    return " and ".join(said)
