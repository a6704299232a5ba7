"""What the syntax says about gradients, for the walk: branches taken only outside training,
calls that run a model for inference, and returns that pass a gradient stop (see gradients.py)."""
from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from detlint.lint.conditions import dotted

# parameters and flags that say whether a model runs in training (Keras' `training` argument
# and the names research code gives it); a branch taken only when they are false is inference
TRAINING_FLAGS = frozenset({"training", "is_training", "is_train", "train", "train_mode", "is_train_mode"})
# Estimator modes: `mode == ModeKeys.TRAIN` trains; the other modes only run the model
TRAIN_MODES, OTHER_MODES = frozenset({"TRAIN"}), frozenset({"EVAL", "PREDICT", "INFER"})


def training_test(test: cst.BaseExpression) -> Optional[bool]:
    """True when ``test`` holds only in training (``if training:``), False when it holds only
    outside it (``if not training:``, ``mode == ModeKeys.PREDICT``), None when it says neither."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = training_test(test.expression)
        return None if inner is None else not inner
    if isinstance(test, (cst.Name, cst.Attribute)):
        name = dotted(test)
        return True if name and name.rsplit(".", 1)[-1] in TRAINING_FLAGS else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        left, right = dotted(test.left), dotted(comparison.comparator)
        if not left or not right:
            return None
        positive = isinstance(comparison.operator, (cst.Equal, cst.Is))
        if not positive and not isinstance(comparison.operator, (cst.NotEqual, cst.IsNot)):
            return None
        flag, value = left.rsplit(".", 1)[-1], right.rsplit(".", 1)[-1]
        if flag in TRAINING_FLAGS and value in ("True", "False"):
            return (value == "True") == positive
        if value in TRAIN_MODES:
            return positive
        if value in OTHER_MODES:
            return False if positive else None  # `mode != EVAL` may still be PREDICT
    return None


def training_false(node: cst.Call) -> bool:
    """``model(x, training=False)``: the call runs the model for inference."""
    return any(arg.keyword is not None and arg.keyword.value in TRAINING_FLAGS
               and isinstance(arg.value, cst.Name) and arg.value.value == "False" for arg in node.args)


def returns_stopped(value: Optional[cst.BaseExpression], stopped_names: set[str],
                    is_stop: Callable[[cst.Call], bool]) -> bool:
    """Does ``return value`` return only values that passed a gradient stop?"""
    if value is None:
        return True
    if isinstance(value, cst.Call):
        return is_stop(value)
    if isinstance(value, cst.Name):
        return value.value in stopped_names
    if isinstance(value, (cst.Tuple, cst.List)):
        return bool(value.elements) and all(
            not isinstance(e, cst.StarredElement) and returns_stopped(e.value, stopped_names, is_stop)
            for e in value.elements)
    return False
