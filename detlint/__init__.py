"""detlint: find and fix what makes deep-learning training non-reproducible.

Importing this package has no side effects: no framework is imported and nothing is configured.
"""
from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
