"""Configuration defaults kept as a tree of attributes.

Detection and segmentation code keeps its configuration in a defaults module::

    _C = CN()                      # yacs; easydict's edict(), ml_collections' ConfigDict
    _C.CUDNN = CN()
    _C.CUDNN.BENCHMARK = True
    cfg = _C

and reads it wherever the configuration is handed: ``cudnn.benchmark = cfg.CUDNN.BENCHMARK``,
``if cfg.TRAIN.DISTRIBUTED:``. The module-level literal assignments are the configuration's
defaults: they become options keyed by their path (``CUDNN.BENCHMARK``), which each program
learns from the modules it runs, as it learns command-line options, and which decide the tests
and the settings that read them (flow/default_branches.py, programs/program.py).
"""
from __future__ import annotations

from typing import Any, Optional

import libcst as cst

from detlint.lint.conditions import dotted


class ConfigTrees:
    def __init__(self) -> None:
        self.roots: set[str] = set()  # module-level names holding a configuration tree
        self.defaults: dict[str, Any] = {}  # "CUDNN.BENCHMARK" -> its module-level literal

    def note_root(self, name: str) -> None:
        self.roots.add(name)

    def note_alias(self, name: str, value: cst.BaseExpression) -> None:
        """``cfg = __C``: another name for the same tree."""
        if isinstance(value, cst.Name) and value.value in self.roots:
            self.roots.add(name)

    def note_default(self, target: cst.BaseExpression, value: Any) -> None:
        """``_C.CUDNN.BENCHMARK = True`` at module level."""
        path = key_of(target, self.roots)
        if path is not None and (value is None or isinstance(value, (bool, int, float, str))):
            self.defaults[path] = value


def key_of(node: cst.BaseExpression, roots: Any) -> Optional[str]:
    """``CUDNN.BENCHMARK`` for ``cfg.CUDNN.BENCHMARK`` when ``cfg`` is one of ``roots``."""
    written = dotted(node) if isinstance(node, cst.Attribute) else None
    if not written or "." not in written:
        return None
    root, _, path = written.partition(".")
    return path if root in roots else None
