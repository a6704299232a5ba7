"""Code no program runs, judged over the whole project: a method nothing calls, a module stored on
``self`` that nothing uses. Their ops never run, forward or back, so a finding there is only
``possible`` (hidden by default).

A method counts as never called when its name is not written after a dot nor as a string
anywhere in the project (``self.loss(...)``, ``Model.loss``, ``getattr(m, "loss")`` all count)
and no library can call it for its object: every base in the chain of its class, and of every
project class derived from it, is ``object``, a project class of the same kind, or a library
class the knowledge base's ``library-hooks`` group describes whose hooks do not include the
method (``forward`` of an ``nn.Module``, a Keras ``call``, are called unnamed; an unlisted base
may call anything). Dunder methods are left alone, and so are underscored ones of a class with a
library base.

What a parameter's default holds (``def crop(x, rng=default_rng())``) is never used when every
call of the function in the project passes that parameter (``crop(x, rng=self.rng)``): the name
must appear only where it is defined, imported or called, and every call must be one the
collector kept with its arguments.
"""
from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path
from typing import Callable, Optional

from detlint.knowledge.kb import KnowledgeBase
from detlint.lint import names
from detlint.lint.ftypes import FileFacts, Hit
from detlint.lint.files.sources import read_bytes
from detlint.lint.programs.reach import MAX_TEXT, ImportIndex

MAX_DEPTH = 4  # subclass levels followed; deeper chains are not judged
PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property", "abstractmethod", "setter", "getter"})
# another file reaching a module's children without their names (nn.Sequential(*net.children()))
ITERATED_SUBMODULES = r"\b(?:named_)?(?:children|modules)\s*\(|\b_modules\b"
# an object of the class made without writing its name
MADE_UNNAMED = re.compile(r"\btype\s*\(\s*self\s*\)\s*\(|\b__class__\s*\(|\bcls\s*\(")
# a method looked up by a computed name (anything but one plain string: getattr(self, "head_" + kind))
COMPUTED_GETATTR = re.compile(r"\bgetattr\s*\(\s*self\s*,(?!\s*(['\"])\w*\1\s*[,)])")
HOOKS = "group:library-hooks"
Hooks = Callable[[str], Optional[frozenset[str]]]


def library_hooks(kb: KnowledgeBase) -> Hooks:
    """The methods the library calls on objects of a class derived from ``base`` (qualified), or
    None when the knowledge base does not describe ``base``."""
    known: dict[str, Optional[frozenset[str]]] = {}

    def hooks(base: str) -> Optional[frozenset[str]]:
        if base not in known:
            found = [kb.matcher(owner, i) for c in names.candidates(base)
                     for owner, i in kb.index["call"].get(c, ()) if owner == HOOKS]
            known[base] = frozenset(m for matcher in found for arg, _, methods in matcher.runs_methods
                                    if not arg for m in methods) if found else None
        return known[base]
    return hooks


class UnusedCode:
    def __init__(self, here: Path, facts: FileFacts, index: ImportIndex,
                 facts_of: Callable[[Path], Optional[FileFacts]], hooks: Hooks) -> None:
        self.here, self.facts, self.index, self.facts_of, self.hooks = here, facts, index, facts_of, hooks
        self.lone = {(line, col): attr for line, col, attr in facts.lone_attributes}
        self._methods: dict[str, str] = {}
        self._overridden: dict[tuple[str, str, int], str] = {}
        self._dynamic: Optional[bool] = None

    def reason(self, hit: Hit, reached: bool = False) -> str:
        """Why ``hit`` never runs, or "" when it may. A method a program's trace ``reached`` was
        seen to be called; a default every call passes over, or a module made in ``__init__`` and
        never called, is unused however far the trace went."""
        for line, col, end_line, end_col, function, param, position in self.facts.default_spans:
            if (line, col) <= (hit.line, hit.col) <= (end_line, end_col):
                key = (function, param, position)
                if key not in self._overridden:
                    self._overridden[key] = self._always_passed(function, param, position)
                if self._overridden[key]:
                    return self._overridden[key]
        off = self.flag_off_at(hit.line, hit.col)
        if off:
            return off
        attr = self.lone.get((hit.line, hit.col))
        if attr is not None and not self._iterated_elsewhere() and not set(self.index.naming_word(attr)) - {self.here}:
            return f"nothing in the project uses self.{attr}"  # made when its object is (reached or not), never called
        if reached:
            return ""
        parts = (hit.scope or "").split(".")
        if len(parts) < 2 or parts[1] not in self.facts.classes.get(parts[0], ()):
            return ""
        scope = f"{parts[0]}.{parts[1]}"
        if scope not in self._methods:
            self._methods[scope] = self._never_called(parts[0], parts[1])
        return self._methods[scope]

    def _iterated_elsewhere(self) -> bool:
        """Another file that imports this one reaches submodules without their names
        (``nn.Sequential(*net.children())``)."""
        if self._dynamic is None:
            iterating = set(self.index.matching(ITERATED_SUBMODULES)) - {self.here}
            self._dynamic = bool(iterating and iterating & set(self.index.importers(self.here, 1)))
        return self._dynamic

    def _never_called(self, cls: str, method: str) -> str:
        if method.startswith("__") and method.endswith("__"):
            return ""
        if set(self.facts.decorators.get(f"{cls}.{method}", ())) - PLAIN_DECORATORS:
            return ""  # @register def loss(...): a decorator may keep it to call later
        if self.index.matching(rf"\.\s*{re.escape(method)}\b|['\"]{re.escape(method)}['\"]"):
            return ""
        text = _text(self.here)
        if _named_in_class_body(text, method) or COMPUTED_GETATTR.search(text):
            return ""  # `__call__ = ce` in the class body, or getattr(self, "head_" + kind)
        if not self._closed(self.facts, cls, method, set()) or not self._subclasses_closed(cls, method, 0):
            return ""
        return f"nothing in the project calls {cls}.{method}"

    def _always_passed(self, function: str, param: str, position: int) -> str:
        """Every call of ``function`` in the project passes ``param``: its default is not used."""
        name = function.rsplit(".", 1)[-1]
        if name.startswith("__") and name.endswith("__"):
            return ""  # __init__ and friends are called unnamed
        cls = function.rsplit(".", 1)[0] if "." in function else None
        if cls is not None and not self._closed(self.facts, cls, name, set()):
            return ""  # a library base may call it unnamed (net(x) runs forward with its defaults)
        calls = 0
        for path in {self.here, *self.index.naming_word(name)}:
            lines = _call_lines(path, name)
            if lines is None:
                return ""  # named as a value, a string or in a notebook: it may be called unseen
            facts = self.facts if path == self.here else self.facts_of(path)
            if lines and (facts is None or facts.error is not None):
                return ""
            for line in lines:
                sites = [s for s in facts.calls if s.line == line and s.target.rsplit(".", 1)[-1] == name]
                if not sites:
                    return ""  # a call the collector did not keep
                if cls is not None and any(s.target.endswith(f"{cls}.{name}") for s in sites):
                    return ""  # Aug.flip(aug, data): the object comes first, positions shift
                for site in sites:
                    rows = facts.call_args.get(f"{site.line}:{site.col}")
                    if rows is None or not any(keyword == param or (not keyword and position >= 0 and at == position)
                                               for keyword, at, _ in rows):
                        return ""
                    calls += 1
        return f"every call of {name} passes {param}" if calls else ""

    def flag_off_at(self, line: int, col: int) -> str:
        """Why (line, col) is inside an ``if self.flag:`` no construction turns on, or ""."""
        for l0, c0, l1, c1, cls, flag in self.facts.flag_tests:
            if (l0, c0) <= (line, col) <= (l1, c1):
                off = self._flag_off(cls, flag)
                if off:
                    return off
        return ""

    def _flag_off(self, cls: str, attr: str) -> str:
        """``self.attr`` holds a constructor parameter whose default is false, the class sets it
        nowhere else, no file assigns it, and no construction of the class (or of a subclass
        that keeps a false default for it) passes that parameter: ``if self.attr:`` never runs."""
        key = (cls, attr, -2)
        if key in self._overridden:
            return self._overridden[key]
        self._overridden[key] = ""
        kept = self.facts.kept_params.get(f"{cls}.{attr}")
        text = _text(self.here)
        setter = rf"setattr\([^,()]+,\s*['\"]{re.escape(attr)}['\"]"
        assigned = set(self.index.matching(rf"\.{re.escape(attr)}\s*=(?!=)|{setter}")) - {self.here}
        if not kept or len(re.findall(rf"\bself\.{re.escape(attr)}\s*=(?!=)", text)) != 1 or assigned \
                or re.search(setter, text) or MADE_UNNAMED.search(text):
            return ""  # set again, or the class made where its name is not written (type(self)(...))
        param = kept[0]
        default = _false_default(self.facts, f"{cls}.__init__", param)
        if default is UNSET or not self._never_passed(self.facts, cls, param, 0, None):
            return ""
        self._overridden[key] = f"every construction of {cls} leaves {param} at {default!r}"
        return self._overridden[key]

    def _never_passed(self, facts: FileFacts, cls: str, param: str, depth: int, inherited: Optional[int]) -> bool:
        """No call that makes a ``cls`` passes ``param``, and every project subclass keeps a false
        default for it (and is made without it). ``inherited``: the parameter's position in the
        ``__init__`` a subclass without its own inherits."""
        if depth > MAX_DEPTH:
            return False
        own = f"{cls}.__init__" in facts.functions
        rows = facts.params.get(f"{cls}.__init__")
        position = next((at for name, at, _ in rows or () if name == param), None) if own else inherited
        for path in {self.here, *self.index.naming_word(cls)}:
            uses = _class_uses(path, cls)
            if uses is None:
                return False  # named as a value (a factory, a table): it may be made unseen
            other = self.facts if path == self.here else self.facts_of(path)
            if other is None or other.error is not None:
                return False
            lines, subclasses = uses
            for line in lines:
                sites = [c for c in other.calls if c.line == line and c.target.rsplit(".", 1)[-1] == cls]
                if not sites:
                    return False
                for site in sites:
                    args = other.call_args.get(f"{site.line}:{site.col}")
                    if args is None or any(keyword == "*" or keyword == param or (
                            not keyword and position is not None and position >= 0 and at >= position)
                            for keyword, at, _ in args):
                        return False
            for sub in subclasses:
                if f"{sub}.__init__" in other.functions and _false_default(other, f"{sub}.__init__", param) is UNSET:
                    return False  # its own __init__ without a false default for it (it may set it)
                if MADE_UNNAMED.search(_text(path)):
                    return False
                if not self._never_passed(other, sub, param, depth + 1, position):
                    return False
        return True

    def _subclasses_closed(self, cls: str, method: str, depth: int) -> bool:
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
                if not all(b == cls or self._base_closed(facts, b, method, set()) for b in bases):
                    return False
                if not self._subclasses_closed(sub, method, depth + 1):
                    return False
        return True


    def _closed(self, facts: FileFacts, cls: str, method: str, seen: set[str]) -> bool:
        """``cls`` is defined in ``facts``' file and no base in its chain may call ``method``."""
        if cls not in facts.class_bases or cls in seen:
            return False
        seen.add(cls)
        return all(self._base_closed(facts, b, method, seen) for b in facts.class_bases[cls])

    def _base_closed(self, facts: FileFacts, base: str, method: str, seen: set[str]) -> bool:
        if base == "object":
            return True
        if "." not in base:  # a project class: only one of this file is followed
            return self._closed(facts, base, method, seen)
        hooks = self.hooks(base)  # a library class the knowledge base describes
        return hooks is not None and method not in hooks and not method.startswith("_")


UNSET = object()


def _false_default(facts: FileFacts, function: str, param: str) -> object:
    """The literal default of ``param`` of ``function`` when it is false (False, None, 0, ""),
    else UNSET."""
    for name, _, form in facts.params.get(function) or ():
        if name == param and form and form[0] == "lit" and not form[1] and isinstance(form[1], (bool, int, str, type(None))):
            return form[1]
    return UNSET


def _class_uses(path: Path, cls: str) -> Optional[tuple[list[int], list[str]]]:
    """The lines where ``path``'s code calls ``cls`` (a class or function) and the classes it
    derives from it, or None when it names it otherwise (a value handed on, a string, a notebook)."""
    if path.suffix != ".py":
        return None
    data, _ = read_bytes(path, MAX_TEXT)
    if data is None:
        return None
    try:
        tokens = [t for t in tokenize.tokenize(io.BytesIO(data).readline)
                  if t.type not in (tokenize.NL, tokenize.COMMENT, tokenize.ENCODING)]
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return None
    lines: list[int] = []
    subclasses: list[str] = []
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.STRING and cls in tok.string and re.search(rf"\b{re.escape(cls)}\b", tok.string):
            before = tokens[i - 1].type if i else tokenize.NEWLINE
            after = tokens[i + 1].type if i + 1 < len(tokens) else tokenize.ENDMARKER
            if not (before in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
                    and after in (tokenize.NEWLINE, tokenize.ENDMARKER)):
                return None
        elif tok.type == tokenize.NAME and tok.string == cls:
            before = tokens[i - 1].string if i else ""
            after = tokens[i + 1].string if i + 1 < len(tokens) else ""
            stripped = tok.line.lstrip()
            if stripped.startswith(("import ", "from ")) and after == "as":
                return None  # used under an alias this search does not follow
            if before in ("class", "def") or stripped.startswith(("import ", "from ")):
                continue
            if stripped.startswith("class ") and before in ("(", ",", "."):
                name = re.match(r"class\s+(\w+)", stripped)
                if name:
                    subclasses.append(name.group(1))
                    continue
            if after != "(":
                return None
            lines.append(tok.start[0])
    return lines, subclasses


def _text(path: Path) -> str:
    data, _ = read_bytes(path, MAX_TEXT)
    return data.decode("utf-8", errors="replace") if data is not None else ""


def _named_in_class_body(text: str, method: str) -> bool:
    """A statement at the indentation of ``def method(`` that names it bare (``__call__ = ce``,
    ``x = property(get_x)``): the class calls it under another name."""
    indents = {m.group(1) for m in re.finditer(rf"(?m)^([ \t]+)(?:async\s+)?def\s+{re.escape(method)}\s*\(", text)}
    word = re.compile(rf"(?<![.\w]){re.escape(method)}\b")
    return any(line.startswith(indent) and not line[len(indent):][:1].isspace()
               and not re.match(r"(?:async\s+)?def\s", line[len(indent):]) and word.search(line)
               for line in text.splitlines() for indent in indents)


def _call_lines(path: Path, word: str) -> Optional[list[int]]:
    """The lines where ``path``'s code calls ``word``, or None when it names it otherwise (passed
    as a value, in a string, a base of a class, in a file that cannot be tokenized) besides
    defining or importing it."""
    uses = _class_uses(path, word)
    return None if uses is None or uses[1] else uses[0]
