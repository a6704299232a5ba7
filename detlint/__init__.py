"""detlint: find and fix what makes deep-learning training non-reproducible.

The products each have a folder: ``lint`` (the checker, its program model and the flake8
plugin), ``fix`` (``--fix``), ``runtime`` (``detlint.apply()`` and ``detlint run``) and
``divergence`` (``detlint diverge``); ``knowledge`` reads the rules, ``settings`` decides what a
run targets.

Importing this package has no side effects: no framework is imported and nothing is configured.
"""
from __future__ import annotations

from detlint._version import __version__

# no typing import at run time: under `python -m detlint` this package is imported while the
# working folder is still first on sys.path, where a typing.py of the project checked could be
TYPE_CHECKING = False

__all__ = ["__version__", "apply", "diverge", "DeterminismError"]

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from detlint.runtime.shim import DeterminismError, Report


def apply(seed: int = 42, *, strict: bool = False, require_hashseed: bool = False) -> "Report":
    """Apply detlint's fixes in this process; see ``detlint.runtime.shim.apply``."""
    from detlint.runtime.shim import apply as _apply

    return _apply(seed, strict=strict, require_hashseed=require_hashseed)


def diverge(step_fn: Any, **kwargs: Any) -> Any:
    """Run ``step_fn`` in separate processes and report the first op whose outputs differ;
    see ``detlint.divergence.finder.diverge``."""
    from detlint.divergence.finder import diverge as _diverge

    return _diverge(step_fn, **kwargs)


def __getattr__(name: str) -> Any:
    if name in ("DeterminismError", "Report"):
        from detlint.runtime import shim as runtime

        return getattr(runtime, name)
    raise AttributeError(name)
