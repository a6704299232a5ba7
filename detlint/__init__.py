"""detlint: find and fix what makes deep-learning training non-reproducible.

Importing this package has no side effects: no framework is imported and nothing is configured.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["__version__", "apply", "diverge", "DeterminismError"]

if TYPE_CHECKING:  # pragma: no cover
    from .runtime import DeterminismError, Report


def apply(seed: int = 42, *, strict: bool = False, require_hashseed: bool = False) -> "Report":
    """Apply detlint's fixes in this process; see ``detlint.runtime.apply``."""
    from .runtime import apply as _apply

    return _apply(seed, strict=strict, require_hashseed=require_hashseed)


def diverge(step_fn: Any, **kwargs: Any) -> Any:
    """Run ``step_fn`` in separate processes and report the first op whose outputs differ;
    see ``detlint.divergence.diverge``."""
    from .divergence import diverge as _diverge

    return _diverge(step_fn, **kwargs)


def __getattr__(name: str) -> Any:
    if name in ("DeterminismError", "Report"):
        from . import runtime

        return getattr(runtime, name)
    raise AttributeError(name)
