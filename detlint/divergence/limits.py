"""The numbers ``detlint diverge`` is given (runs, steps, seconds, megabytes), checked before
anything runs: ``nan`` compares false with every limit and ``inf`` never arrives, so either
makes a limit that never holds; zero and negatives leave nothing to record."""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Callable, Optional, Union

Number = Union[int, float]


@dataclass(frozen=True)
class Expected:
    text: str
    fits: Callable[[Number], bool]


POSITIVE = Expected("a finite number above 0", lambda v: math.isfinite(v) and v > 0)


def whole(least: int) -> Expected:
    return Expected(f"a whole number, at least {least}",
                    lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= least)


def check(*, runs: int = 2, max_steps: Optional[int] = None, time_limit: Optional[float] = None,
          max_dump_mb: float = 1.0) -> None:
    """Raise ValueError for a number no run can keep to (``None``: no limit of that kind)."""
    given = {"runs": (runs, whole(2)), "max_steps": (max_steps, whole(1)),
             "time_limit": (time_limit, POSITIVE), "max_dump_mb": (max_dump_mb, POSITIVE)}
    for name, (value, expected) in given.items():
        if value is not None and not expected.fits(value):
            raise ValueError(f"{name}: expected {expected.text}, got {value!r}")


def _argument(parse: Callable[[str], Number], expected: Expected) -> Callable[[str], Number]:
    """An argparse type: the number, or a usage error (exit 2) that says what is expected."""
    def convert(text: str) -> Number:
        try:
            value = parse(text)
        except ValueError:
            value = None
        if value is None or not expected.fits(value):
            raise argparse.ArgumentTypeError(f"expected {expected.text}, got {text!r}")
        return value
    return convert


runs = _argument(int, whole(2))
steps = _argument(int, whole(1))
seconds = _argument(float, POSITIVE)
megabytes = _argument(float, POSITIVE)
