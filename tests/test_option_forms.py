"""Tests of command-line options as data (lint/flow/option_forms.py), decided per program."""
from __future__ import annotations

import libcst as cst

from detlint.lint.flow.default_branches import test_form as make_form
from detlint.lint.flow.option_forms import form_options, form_truth


def form(source: str, known: dict[str, object] | None = None):
    known = known or {}

    def option_read(node: cst.BaseExpression):
        return node.attr.value if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) \
            and node.value.value == "opt" else None

    def option_default(node: cst.BaseExpression):
        key = option_read(node)
        return (True, known[key]) if key in known else (False, None)
    return make_form(cst.parse_expression(source), option_default, option_read)


def test_forms_are_decided_by_the_defaults_given() -> None:
    chosen = form('opt.model == "resnet"')
    assert form_options(chosen) == {"model"}
    assert form_truth(chosen, {"model": "resnet"}) is True
    assert form_truth(chosen, {"model": "densenet"}) is False
    assert form_truth(chosen, {}) is None  # not known in this program


def test_not_and_or_is_and_orderings() -> None:
    both = form('opt.model == "pooled" and not opt.deep')
    assert form_truth(both, {"model": "pooled", "deep": False}) is True
    assert form_truth(both, {"model": "pooled", "deep": True}) is False
    assert form_truth(both, {"model": "other"}) is False  # one side false decides an `and`
    assert form_truth(form("opt.seed is not None"), {"seed": None}) is False
    assert form_truth(form("opt.depth >= 50 or opt.wide"), {"depth": 18, "wide": False}) is False
    assert form_truth(form("opt.depth >= 50"), {"depth": "18"}) is None  # no ordering across types


def test_known_values_are_kept_and_other_reads_make_no_form() -> None:
    assert form('opt.model == "resnet" and opt.deep', {"deep": True}) == \
        ["and", ["cmp", "==", ["opt", "model"], ["lit", "resnet"]], ["lit", True]]
    assert form("len(opt.models) > 1") is None
    assert form("opt.model == make_name()") is None


def test_parameters_are_decided_by_what_the_caller_passes() -> None:
    def param_of(node: cst.BaseExpression):
        return "Block.build" if isinstance(node, cst.Name) and node.value == "padding_type" else None
    chosen = make_form(cst.parse_expression('padding_type == "replicate"'), lambda node: (False, None),
                       lambda node: None, param_of)
    assert chosen == ["cmp", "==", ["param", "padding_type", "Block.build"], ["lit", "replicate"]]
    assert form_truth(chosen, {}, {("Block.build", "padding_type"): "reflect"}) is False
    assert form_truth(chosen, {}, {("Other.build", "padding_type"): "replicate"}) is None  # another function's
    assert form_truth(chosen, {}) is None
    assert make_form(cst.parse_expression('"encoder"'), lambda node: (False, None), lambda node: None) == \
        ["lit", "encoder"]


def test_tuples_and_parenthesised_values_make_no_error() -> None:
    """`f(())`, `if ():`: an empty tuple keeps its parentheses (libcst refuses one without)."""
    assert form("()") is None
    assert form('(opt.model) == ("resnet")') == ["cmp", "==", ["opt", "model"], ["lit", "resnet"]]


def test_cached_forms_are_checked_shape_by_shape() -> None:
    """A cache entry's forms are rebuilt only from the shapes detlint writes; anything else is
    a ValueError (the entry is then re-made), never a TypeError further on."""
    import pytest

    from detlint.lint import facts_json

    good = ["and", ["cmp", "==", ["opt", "arch"], ["lit", "psp"]], ["not", ["param", "deep", "build"]]]
    assert facts_json._form(good) == good
    for bad in ([[1]], [{}], ["cmp", "==", ["opt", "a"], ["opt", "b"]], ["cmp", "~", ["opt", "a"], ["lit", 1]],
                ["lit", [1, 2]], ["opt"], ["nope", 1], ["not"] + [["not"]] * 0):
        with pytest.raises(ValueError):
            facts_json._form(bad)
    deep: list = ["opt", "x"]
    for _ in range(40):
        deep = ["not", deep]
    with pytest.raises(ValueError):
        facts_json._form(deep)


def test_long_chains_make_no_form_too_deep_to_keep() -> None:
    source = " or ".join(f'opt.model == "m{i}"' for i in range(40))
    assert form(source) is None


def test_a_condition_on_an_argument_as_a_test_of_a_parameter() -> None:
    """``{eq: bilinear}``, ``{in: [...]}``, ``{ne: ...}`` on ``mode=mode``: decided with the value
    a caller passes; a condition a form cannot say (a pattern) is not made into one."""
    from detlint.lint.flow.option_forms import condition_form, describe_condition, form_truth
    leaf = ["param", "mode", "up"]
    eq = condition_form(leaf, {"eq": "bilinear", "pos": 1})
    assert form_truth(eq, {}, {("up", "mode"): "bilinear"}) is True
    assert form_truth(eq, {}, {("up", "mode"): "nearest"}) is False
    assert form_truth(eq, {}, {}) is None  # no caller's value known: undecided
    among = condition_form(leaf, {"in": ["bilinear", "bicubic"]})
    assert [form_truth(among, {}, {("up", "mode"): v}) for v in ("bicubic", "nearest")] == [True, False]
    assert form_truth(condition_form(leaf, {"not-in": ["nearest"]}), {}, {("up", "mode"): "area"}) is True
    assert form_truth(condition_form(leaf, {"gt": 0}), {}, {("up", "mode"): 0}) is False
    assert condition_form(leaf, {"contains": "bi"}) is None
    assert describe_condition({"in": ["bilinear", "bicubic"]}) == "is one of 'bilinear', 'bicubic'"
