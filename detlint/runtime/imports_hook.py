"""Run callbacks right after a module is first imported, without importing it ourselves.

``detlint.apply()`` must not import a framework the program has not imported; when the program
imports it later, the pending actions (seeding, enabling determinism) run at that moment,
before any user code touches the framework.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from types import ModuleType
from typing import Callable, Optional, Sequence

Callback = Callable[[ModuleType], None]
_lock = threading.Lock()


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, name: str, finder: "_PostImportFinder") -> None:
        self.inner = inner
        self.name = name
        self.finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        create = getattr(self.inner, "create_module", None)
        return create(spec) if create else None

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)  # type: ignore[attr-defined]
        self.finder.fire(self.name, module)

    def __getattr__(self, item: str) -> object:  # get_resource_reader, is_package, ...
        return getattr(self.inner, item)


class _PostImportFinder(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.callbacks: dict[str, list[Callback]] = {}
        self._resolving: set[str] = set()

    def find_spec(self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None
                  ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in self.callbacks or fullname in self._resolving:
            return None
        self._resolving.add(fullname)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None and spec.loader is not None:
                    spec.loader = _Loader(spec.loader, fullname, self)
                    return spec
            return None
        finally:
            self._resolving.discard(fullname)

    def fire(self, name: str, module: ModuleType) -> None:
        with _lock:
            callbacks = self.callbacks.pop(name, [])
        for callback in callbacks:
            callback(module)


_finder: Optional[_PostImportFinder] = None


def when_imported(name: str, callback: Callback) -> bool:
    """Call ``callback(module)`` now if ``name`` is imported, else right after its import.
    Returns True if it ran now."""
    global _finder
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return True
    with _lock:
        if _finder is None:
            _finder = _PostImportFinder()
            sys.meta_path.insert(0, _finder)
        _finder.callbacks.setdefault(name, []).append(callback)
    return False
