"""Names a file takes from project modules: what ``from ops import *`` or ``from pkg.backend
import keras`` really bring in.

A file's facts come from one walk of that file alone, so on its own the walk cannot know that
``keras`` from a project shim is ``tensorflow.keras``, or that ``Net`` from ``models`` is a
``keras.Model`` subclass. The exporting modules' facts say so (``FileFacts.exports``); this module
turns them into a map, keyed by the importing file's own spelling, that a second walk of the
importing file uses. The map is part of the facts cache key of that walk.
"""
from __future__ import annotations

import builtins
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from detlint.lint.ftypes import LOCAL_FRAMEWORK, LOCAL_FUNCTION, FileFacts
from detlint.lint.names import factory_name, member, within
from detlint.lint.programs.outline import Outline
from detlint.lint.programs.program import ModuleResolver

Exporter = Callable[[Path], Optional[FileFacts]]
# what a module gives as a name: (known, target); not known: parse the module to learn it
Guess = tuple[bool, Optional[str]]
_BUILTINS = frozenset(dir(builtins))
# re-exports and base classes followed through outlines for one name (each costs two stack
# frames); a longer chain, hundreds of modules, is told by parsing its first module instead
MAX_OUTLINE_HOPS = 32


class OutlineExports:
    """What a module gives an importer as a name, told from outlines (text scans) where they
    can: a re-export is followed to the module it comes from, a class is a framework class if
    a base is (followed through other modules' outlines). A script that imports three classes
    from a large package then parses the modules that define them, not the package."""

    def __init__(self, exports_of: Callable[[Path], Optional[dict[str, str]]],
                 outline_of: Callable[[Path], Optional[Outline]], resolver: ModuleResolver,
                 frameworks: Sequence[str], makers: frozenset[str] = frozenset()) -> None:
        self.exports_of = exports_of  # a parsed, linked module's exports (None: not parsed)
        # classes whose methods the knowledge base matches (``Estimator`` of Estimator.train): a
        # function of a module that names one may return such an object; parse it to know
        self.makers = makers
        self.outline_of = outline_of
        self.resolver = resolver
        self.frameworks = frameworks

    def export_of(self, module: Path, name: str, seen: frozenset[tuple[Path, str]] = frozenset()) -> Guess:
        exports = self.exports_of(module)
        if exports is not None:
            return True, exports.get(name)
        sketch = self.outline_of(module)
        if sketch is None or (module, name) in seen or len(seen) >= MAX_OUTLINE_HOPS or sketch.binding("*"):
            return False, None
        how, seen = sketch.binding(name), seen | {(module, name)}
        if how.startswith("("):  # a class: a framework one if a base is
            for base in filter(None, how[1:].split(",")):
                known, target = self._base(module, sketch, base, seen)
                if not known:
                    return False, None
                if target is not None:
                    return True, LOCAL_FRAMEWORK
            return True, None
        if how.startswith("<"):  # imports (several: one per branch of a backend switch)
            return self._imported(module, how[1:].split("|"), seen)
        if how == "def":
            if self.makers & sketch.mentions:
                return False, None  # it may make an object whose methods matter: parse to know
            return True, LOCAL_FUNCTION if factory_name(name, function=True) else None
        return how in ("", "~"), None  # a literal: nothing to link; else parse to know

    def _imported(self, module: Path, quals: list[str], seen: frozenset[tuple[Path, str]]) -> Guess:
        if any(self._framework(qual) for qual in quals):
            return False, None  # a shim's alias: its walk says exactly what (small, parsed)
        targets = []
        for qual in quals:
            found = self.resolver.resolve(module, qual)
            if not found or not found[1] or "." in found[1]:
                targets.append(None if qual.startswith(".") or found else qual)
                continue
            known, target = self.export_of(found[0], found[1], seen)
            if not known:
                return False, None
            # what the module's own walk would export: an absolute import's name as it is
            targets.append(target if target is not None or qual.startswith(".") else qual)
        return True, LOCAL_FRAMEWORK if LOCAL_FRAMEWORK in targets else targets[-1]

    def _base(self, module: Path, sketch: Outline, base: str, seen: frozenset[tuple[Path, str]]) -> Guess:
        """Is ``base`` (as ``module`` spells it) a framework class, or a project class that is?"""
        head, _, rest = base.partition(".")
        how = sketch.binding(head)
        if how.startswith("<"):
            for qual in (q + ("." + rest if rest else "") for q in how[1:].split("|")):
                if self._framework(qual):
                    return True, qual
                found = self.resolver.resolve(module, qual)
                if not found:
                    continue  # an installed package's class (abc.ABC, a library's base)
                if not found[1] or "." in found[1]:
                    return False, None
                known, target = self.export_of(found[0], found[1], seen)
                if target == LOCAL_FUNCTION:
                    return False, None  # a base that is a function: parse to know
                if not known or target is not None:
                    return known, target
            return True, None
        if how.startswith("(") and not rest:
            return self.export_of(module, head, seen)
        return how == "" and head in _BUILTINS, None  # object, Exception

    def factories(self, module: Path) -> Optional[list[str]]:
        """The factories ``module`` defines (``names.factory_name``; None: parse it to know)."""
        exports = self.exports_of(module)
        if exports is not None:
            return [name for name, target in exports.items() if target == LOCAL_FUNCTION]
        sketch = self.outline_of(module)
        if sketch is None:
            return None
        # functions, and names bound by an assignment that is no literal (``Unet = wrap(_Unet)``)
        return [name for name, how in sketch.bindings if how in ("def", "=") and factory_name(name, how == "def")]

    def _framework(self, qual: str) -> bool:
        return any(within(qual, prefix) for prefix in self.frameworks)


MAX_STAR_DEPTH = 3  # a package's __init__ that star-imports its modules, which star-import helpers


def _star_links(links: dict[str, str], spelled: str, real: str, module_path: Path, resolver: ModuleResolver,
                facts_of: Exporter, depth: int) -> None:
    """What ``from <spelled> import *`` brings in, ``real`` being the module that defines the
    names (``models`` re-exporting ``models.resnet`` with its own ``from .resnet import *``)."""
    exporter = facts_of(module_path)
    if exporter is None or exporter.error:
        return
    for name, target in exporter.exports.items():
        if not name.startswith("_"):  # what `import *` leaves out
            links.setdefault(member(spelled, name), target)
    for name in [*exporter.functions, *exporter.classes]:
        if "." not in name and not name.startswith("_"):  # its own functions and classes: calls into them are traced
            links.setdefault(member(spelled, name), member(real, name))
    outside = [m for m in exporter.star_imports if not m.startswith(".") and not resolver.resolve(module_path, m)]
    if outside:  # `from tensorflow.keras.layers import *` in the module, passed on
        links.setdefault(member(spelled, "*"), " ".join(outside))
    if depth >= MAX_STAR_DEPTH:
        return
    for inner in exporter.star_imports:  # the module's own star imports of project modules, passed on
        found = resolver.resolve(module_path, inner)
        if found and not found[1] and found[0] != module_path:
            _star_links(links, spelled, _absolute(real, module_path, inner), found[0], resolver, facts_of, depth + 1)


def _absolute(module: str, module_path: Path, inner: str) -> str:
    """``inner`` as imported in ``module`` (``.resnet`` in the package ``models``), made absolute."""
    if not inner.startswith("."):
        return inner
    level = len(inner) - len(inner.lstrip("."))
    parts = module.split(".")
    base = parts if module_path.name == "__init__.py" else parts[:-1]  # a package is its own base
    base = base[:len(base) - (level - 1)] if level > 1 else base
    rest = inner[level:]
    return ".".join([*base, rest] if rest else base)


def link_in_order(paths: Iterable[Path], unlinked: dict[Path, Optional[bytes]],
                  link: Callable[[Path, Optional[bytes]], list[Path]]) -> None:
    """Link each of ``paths`` still in ``unlinked`` (with its bytes) after the modules it takes
    names from: ``link`` links a file, or returns the modules of ``unlinked`` to link before it
    (it is asked again once they are). A stack, not recursion, so a chain of thousands of
    imports fits. A file leaves ``unlinked`` when its linking starts: in a cycle of imports, the
    modules it waits for take its names as its first walk found them."""
    started: dict[Path, Optional[bytes]] = {}
    for root in paths:
        stack = [root]
        while stack:
            path = stack[-1]
            if path not in started:
                if path not in unlinked:
                    stack.pop()  # linked already, or never read
                    continue
                started[path] = unlinked.pop(path)
            first = link(path, started[path])
            if first:
                stack.extend(reversed(list(dict.fromkeys(first))))
            else:
                stack.pop()
                del started[path]


def links_for(path: Path, facts: FileFacts, resolver: ModuleResolver, facts_of: Exporter,
              frameworks: Sequence[str] = (), guess: Optional[Callable[[Path, str], Guess]] = None,
              factories: Optional[Callable[[Path], Optional[list[str]]]] = None) -> dict[str, str]:
    """``{"ops.tf": "tensorflow", "ops.conv": "ops.conv", "pkg.backend.keras": "tensorflow.keras"}``:
    the names ``path`` imports from project modules, as it spells them, and what they are. Empty
    when it imports nothing of the kind (the usual case: no second walk). Names already spelled
    as a framework's (``frameworks``: the sources of Keras itself) need no link, and a module is
    only parsed for a name ``guess`` cannot tell from outlines."""
    links: dict[str, str] = {}
    for module in facts.star_imports:
        if any(within(module, prefix) for prefix in frameworks):
            continue
        found = resolver.resolve(path, module)
        if found and not found[1]:
            _star_links(links, module, module, found[0], resolver, facts_of, 0)
    for qual in facts.imports.values():
        if any(within(qual, prefix) for prefix in frameworks):
            continue
        found = resolver.resolve(path, qual)
        if found and not found[1]:  # `import nets`: `nets.Unet(1)` calls a factory, not a class
            named = factories(found[0]) if factories is not None else None
            if named is None:
                exporter = facts_of(found[0])
                named = [n for n, t in (exporter.exports if exporter and not exporter.error else {}).items()
                         if t == LOCAL_FUNCTION]
            links.update((member(qual, name), LOCAL_FUNCTION) for name in named)
            continue
        if not found or not found[1] or "." in found[1]:
            continue  # not a project module's name (a module itself, or an installed package)
        known, target = guess(found[0], found[1]) if guess is not None else (False, None)
        if not known:
            exporter = facts_of(found[0])
            target = exporter.exports.get(found[1]) if exporter is not None and not exporter.error else None
        # a project function's name needs no link (calls are traced through re-exports anyway):
        # only framework aliases, framework classes and factories change what the walk sees
        if target is not None and (target in (LOCAL_FRAMEWORK, LOCAL_FUNCTION) or not resolver.resolve(path, target)):
            links[qual] = target
    return links
