"""Code no program runs, judged over the whole project: a method nothing calls, a module stored on
``self`` that nothing uses. Their ops never run, forward or back, so a finding there is only
``possible`` (hidden by default).

A method counts as never called when its name is not written after a dot nor as a string
anywhere in the project (``self.loss(...)``, ``Model.loss``, ``getattr(m, "loss")`` all count)
and no library can call it for its object: neither its class nor any project class derived from
it has a base other than ``object`` and project classes of the same kind (a ``forward`` of an
``nn.Module``, a Keras ``call``, a mixin's hook are called by the framework, unnamed). Dunder
methods are left alone.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Optional

from detlint.lint.ftypes import FileFacts, Hit
from detlint.lint.programs.reach import ImportIndex

MAX_DEPTH = 4  # subclass levels followed; deeper chains are not judged


class UnusedCode:
    def __init__(self, here: Path, facts: FileFacts, index: ImportIndex,
                 facts_of: Callable[[Path], Optional[FileFacts]]) -> None:
        self.here, self.facts, self.index, self.facts_of = here, facts, index, facts_of
        self.lone = {(line, col): attr for line, col, attr in facts.lone_attributes}
        self._methods: dict[str, str] = {}

    def reason(self, hit: Hit) -> str:
        """Why ``hit`` never runs, or "" when it may."""
        attr = self.lone.get((hit.line, hit.col))
        if attr is not None and not set(self.index.naming_word(attr)) - {self.here}:
            return f"nothing in the project uses self.{attr}"
        parts = (hit.scope or "").split(".")
        if len(parts) < 2 or parts[1] not in self.facts.classes.get(parts[0], ()):
            return ""
        scope = f"{parts[0]}.{parts[1]}"
        if scope not in self._methods:
            self._methods[scope] = self._never_called(parts[0], parts[1])
        return self._methods[scope]

    def _never_called(self, cls: str, method: str) -> str:
        if method.startswith("__") and method.endswith("__"):
            return ""
        if self.index.matching(rf"\.\s*{re.escape(method)}\b|['\"]{re.escape(method)}['\"]"):
            return ""
        if not _closed(self.facts, cls, set()) or not self._subclasses_closed(cls, 0):
            return ""
        return f"nothing in the project calls {cls}.{method}"

    def _subclasses_closed(self, cls: str, depth: int) -> bool:
        """Every project class derived from ``cls`` has only ``object`` and closed project classes
        as bases, and so do theirs."""
        if depth > MAX_DEPTH:
            return False
        for path in {self.here, *self.index.naming_in_code(cls)}:
            facts = self.facts if path == self.here else self.facts_of(path)
            if facts is None or facts.error is not None:
                return False  # a file that names it and cannot be read may derive from it
            for sub, bases in facts.class_bases.items():
                if cls not in bases or (facts is self.facts and sub == cls):
                    continue
                if not all(b in (cls, "object") or _closed(facts, b, set()) for b in bases):
                    return False
                if not self._subclasses_closed(sub, depth + 1):
                    return False
        return True


def _closed(facts: FileFacts, cls: str, seen: set[str]) -> bool:
    """``cls`` is defined in ``facts``' file, and its bases are ``object`` or closed classes of
    the same file: no library class in its chain."""
    if cls not in facts.class_bases or cls in seen:
        return False
    seen.add(cls)
    return all(b == "object" or _closed(facts, b, seen) for b in facts.class_bases[cls])
