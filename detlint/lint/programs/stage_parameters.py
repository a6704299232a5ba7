"""Which project functions run what they are given as a tf.data stage, across files.

The collector notes, per file, the parameters of its functions that reach a stage
(``ds.map(map_fn)``), those handed on to other project functions, and the functions of the file
handed to project functions (flow/handed_functions.py). Here a handed function is followed to the
function that receives it (through package ``__init__`` star imports) and, parameter by parameter,
on to the stage, a few calls deep.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Optional

from detlint.lint.ftypes import FileFacts
from detlint.lint.programs.program import ModuleResolver

MAX_HOPS = 4  # helpers handing a function on to helpers
MAX_STARS = 3  # `from .data import *` in a package's __init__, and so on


# a function handed to a stage parameter: the caller's file, its facts, and the function by
# name (a function of that file) or by span (a lambda, a nested def)
Handed = tuple[Path, FileFacts, str, Optional[tuple[int, int, int, int]]]


class StageParameters:
    def __init__(self, resolver: ModuleResolver, facts_of: Callable[[Path], Optional[FileFacts]],
                 importers: Callable[[Path], Iterable[Path]] = lambda path: ()) -> None:
        self.resolver, self.facts_of, self.importers = resolver, facts_of, importers
        self._cache: dict[tuple[Path, str, str, int], bool] = {}

    def handed_to(self, path: Path, function: str, param: str, position: int) -> list[Handed]:
        """The functions the project hands to ``function``'s parameter ``param`` (at
        ``position``, -1 keyword-only), from this file and the files that import it: a stage's
        lambda calls the parameter (``ds.map(lambda x, y: (prep(x), y))``), they run there."""
        found: list[Handed] = []
        for caller in [path, *sorted(set(self.importers(path)) - {path})]:
            facts = self.facts_of(caller)
            for callee, keyword, spot, ref, span in facts.handed if facts is not None and not facts.error else ():
                if not (keyword == param or (spot >= 0 and spot == position)):
                    continue
                target = self.function(caller, callee)
                if target is not None and target[0] == path and target[2] == function:
                    found.append((caller, facts, ref, tuple(span) if span else None))
        return found

    def function(self, path: Path, name: str, stars: int = 0) -> Optional[tuple[Path, FileFacts, str]]:
        """The file and function a call from ``path`` to ``name`` runs, if it is the project's."""
        facts = self.facts_of(path)
        if facts is not None and name in facts.functions:
            return path, facts, name
        found = self.resolver.resolve(path, name)
        if found is None:
            return None
        where, rest = found
        facts = self.facts_of(where)
        if facts is None:
            return None
        if rest in facts.functions:
            return where, facts, rest
        for star in facts.star_imports if stars < MAX_STARS and rest else ():
            target = self.function(where, f"{star}.{rest}", stars + 1)
            if target is not None:
                return target
        return None

    def is_stage(self, path: Path, callee: str, keyword: str, position: int, hops: int = 0) -> bool:
        """Does the argument given at ``keyword`` (or ``position``) of a call from ``path`` to
        ``callee`` end up run as a tf.data stage?"""
        key = (path, callee, keyword, position)
        if key not in self._cache:
            self._cache[key] = False  # a helper handing it back to itself
            self._cache[key] = self._is_stage(path, callee, keyword, position, hops)
        return self._cache[key]

    def _is_stage(self, path: Path, callee: str, keyword: str, position: int, hops: int) -> bool:
        target = self.function(path, callee)
        if target is None:
            return False
        where, facts, name = target

        def given(param: str, at: int) -> bool:
            return (bool(keyword) and keyword == param) or (position >= 0 and position == at)

        if any(given(param, at) for param, at in facts.stage_params.get(name, ())):
            return True
        return hops < MAX_HOPS and any(
            scope == name and given(param, at) and self.is_stage(where, onward, kw, pos, hops + 1)
            for scope, param, at, onward, kw, pos in facts.param_handed)
