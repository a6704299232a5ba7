"""Cheap outlines of project modules, so a program follows only the imports that can matter.

A program runs the module level of every project module it imports. In a large package most of
those modules only import, define and assign: importing them draws nothing, seeds nothing and
trains nothing. Parsing each with libcst to learn that costs tens of milliseconds a module, and a
script deep in a package imports hundreds. An outline is a scan of the text (regular expressions,
a fraction of a millisecond, nothing parsed or executed) that says which modules a module
imports and whether its module level may do something a rule looks at. It errs towards
"may": such a module is then parsed in full, as before.
"""
from __future__ import annotations

import builtins
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from detlint.knowledge.kb import KnowledgeBase

# a statement at column 0 and the indented lines that belong to it
_TOP_BLOCK = re.compile(r"^(?P<head>[^\s#].*)(?P<rest>(?:\n(?:[ \t]+.*|[ \t]*|[)\]}].*))*)", re.MULTILINE)
# heads whose block runs nothing at import (the main guard runs only when the file is the script)
_INERT_HEAD = re.compile(r"(?:async\s+def|def|class|import|from|@|[)\]}]|['\"]|[rRbBuUfF]{1,2}['\"]|pass\b|"
                         r"__all__\b|if\s+(?:typing\.)?TYPE_CHECKING\b|if\s+__name__\s*==)")
_LOOP_HEAD = re.compile(r"(?:for|while|with|async)\b")
_CALL = re.compile(r"(?<!def )(?<!class )(\.?)\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_DEFINITION = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)
_BUILTINS = frozenset(dir(builtins))
# a class and its bases, or the targets of an assignment (at any depth: a class or a fallback
# bound inside ``if``/``try`` counts, and a function's local of the same name only costs a parse)
_BOUND = re.compile(r"^[ \t]*(?:class[ \t]+(\w+)[ \t]*(?:\((?P<bases>[^)]*)\))?"
                    r"|(\w+(?:[ \t]*,[ \t]*\w+)*)[ \t]*(?::[^=\n]*)?=(?!=)[ \t]*"
                    r"(?P<value>[-+\d'\"\[{]|(?:None|True|False)\b|[rbfuRBFU]{1,2}['\"])?)", re.MULTILINE)
_TOP_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
_DOTTED = re.compile(r"[A-Za-z_][\w.]*")
# what changes the environment (reading it changes nothing)
_SETS_ENV = re.compile(r"environ\s*(?:\[[^\]\n]*\]\s*=(?!=)|\.(?:update|setdefault|pop|clear)\b)|putenv|unsetenv")
_STORE = re.compile(r"^(?P<target>[^=(\n]*?)(?<![=!<>])=(?!=)", re.MULTILINE)
_IMPORT = re.compile(
    r"[ \t]*(?:from[ \t]+(?P<base>\.*[\w.]*)[ \t]+import[ \t]+(?P<names>\([^)]*\)|[^\n#;]+)"
    r"|import[ \t]+(?P<modules>[^\n#;]+))")
_NAME = re.compile(r"([\w.]+|\*)(?:\s+as\s+(\w+))?")


@dataclass(frozen=True)
class Outline:
    """What importing a module does: the modules it may import (as ``local_imports`` resolves
    them: ``a.b``, ``.x.y``), with lines, and whether its module level may call or set something
    that matters (a knowledge-base name, an environment variable, its own or a project function)."""

    imports: tuple[tuple[str, int], ...]
    active: bool
    mentions: frozenset[str] = frozenset()  # the knowledge-base tokens its text holds anywhere
    # imported names its module level calls (``setup`` of ``from .utils import setup``), by the
    # name ``local_imports`` resolves: active too if that is a project module's
    calls: tuple[str, ...] = ()
    # how names another module may take from it are bound: ``("Net", "(Backbone,tf.keras.Model")``
    # (a class and its bases, "?" for one that is not a dotted name), ``("keras", "<tensorflow.keras")``
    # (one import), ``("tf", "=")`` (an assignment, or bound more than once), ``("Unet", "def")``
    # (a top-level function). What ``links`` needs to know without a parse: is a name a framework
    # class or alias, or a function
    bindings: tuple[tuple[str, str], ...] = ()

    def binding(self, name: str) -> str:
        return dict(self.bindings).get(name, "")


def outline(text: str, tokens: frozenset[str], external: frozenset[str]) -> Outline:
    """``tokens``: last name parts the knowledge base matches (``set_seed``, ``shuffle``);
    ``external``: top-level packages that are never project code."""
    imports: list[tuple[str, int]] = []
    imported: dict[str, str] = {}  # local name -> what it names
    bound: dict[str, list[str]] = {}  # local name -> what it imports, one entry an import
    line, counted = 1, 0
    for match in import_statements(text, _IMPORT):
        line += text.count("\n", counted, match.start())
        counted = match.start()
        if match.group("modules") is not None:
            for name, alias in _NAME.findall(match.group("modules")):
                imports.append((name, line))
                bound.setdefault(alias or name.split(".")[0], []).append(name if alias else name.split(".")[0])
                if name.split(".")[0] not in external:
                    imported[alias or name.split(".")[0]] = name if alias else name.split(".")[0]
            continue
        base = match.group("base")
        project = base.startswith(".") or base.split(".")[0] not in external
        for name, alias in _NAME.findall(match.group("names").strip("()")):
            if name == "*":
                imports.append((base, line))
                bound.setdefault("*", []).append(base)  # any name may come from there
                continue
            joined = f"{base}.{name}" if base and not base.endswith(".") else f"{base}{name}"
            imports.append((joined, line))
            bound.setdefault(alias or name, []).append(joined)
            if project:
                imported[alias or name] = joined
    tokens = _without_dunders(tokens)
    words = set(re.findall(r"[A-Za-z_]\w*", text))
    scan = _Scan(text, tokens, imported)
    active = scan.active()
    return Outline(tuple(imports), active, frozenset(words & tokens),
                   () if active else tuple(sorted(scan.called_imports)), _bindings(text, bound))


@lru_cache(maxsize=8)
def _without_dunders(tokens: frozenset[str]) -> frozenset[str]:
    """Dunder methods (``super().__init__(...)``) run inside what is being defined. Once per
    knowledge base, not once per outlined module (a frozenset keeps its hash)."""
    return frozenset(n for n in tokens if not n.startswith("__"))


def _bindings(text: str, imported: dict[str, list[str]]) -> tuple[tuple[str, str], ...]:
    """``Outline.bindings``: ``imported`` as ``<a|b`` (conditional imports of one name), classes as
    ``(bases``, values as ``~`` (a literal: never a framework alias or class), top-level functions
    as ``def``, anything else that assigns, or a mix of kinds, as ``=``."""
    functions = set(_TOP_DEF.findall(text))
    classes: dict[str, list[str]] = {}
    values: set[str] = set()
    assigned: set[str] = set()
    for match in _BOUND.finditer(text):
        if match.group(1):
            bases = [b.strip() for b in (match.group("bases") or "").split(",")]
            classes.setdefault(match.group(1), []).extend(
                b if _DOTTED.fullmatch(b) else "?" for b in bases if b and "=" not in b)
            continue
        for target in match.group(3).split(","):
            (values if match.group("value") else assigned).add(target.strip())
    found: dict[str, str] = {}
    for name in {*imported, *classes, *values, *assigned, *functions}:
        if name in functions:
            found[name] = "def" if name not in {*imported, *classes, *values, *assigned} else "="
        elif name in assigned or (name in imported and name in classes):
            found[name] = "="
        elif name in classes:
            found[name] = "(" + ",".join(classes[name])
        elif name in imported:
            found[name] = "<" + "|".join(dict.fromkeys(imported[name]))
        else:
            found[name] = "~"
    return tuple(sorted(found.items()))


def import_statements(text: str, pattern: "re.Pattern[str]") -> Iterator["re.Match[str]"]:
    """``pattern`` matched at the start of each line that mentions ``import``. Far faster than a
    multi-line regular expression over the whole text, which tries every line of a large file."""
    start = 0
    while True:
        found = text.find("import", start)
        if found < 0:
            return
        line_start = text.rfind("\n", 0, found) + 1
        line_end = text.find("\n", found)
        match = pattern.match(text, line_start)
        if match:
            yield match
        start = max(match.end() if match else 0, len(text) if line_end < 0 else line_end + 1)


class _Scan:
    """Does the module level call something that matters: a knowledge-base name, a project
    function, or a function or class of its own whose body does (followed through the file)."""

    def __init__(self, text: str, tokens: frozenset[str], imported: dict[str, str]) -> None:
        self.tokens = tokens
        self.imported = imported
        self.called_imports: set[str] = set()
        self.blocks = list(_TOP_BLOCK.finditer(text))
        self.bodies: dict[str, str] = {}
        for block in self.blocks:
            named = _DEFINITION.match(block.group("head"))
            if named:
                self.bodies[named.group(1)] = block.group(0)
        self.followed: set[str] = set()  # own functions whose bodies were read

    def active(self) -> bool:
        for block in self.blocks:
            head = block.group("head")
            if _INERT_HEAD.match(head):
                continue
            if _LOOP_HEAD.match(head):
                return True  # module-level loops and contexts: too varied to judge from text
            if self.code_matters(_without_definitions(block.group(0))):
                return True
            if any("." in target and target.strip().rsplit(".", 1)[-1] in self.tokens
                   for target in _STORE.findall(head)):
                return True  # options.deterministic = False
        return False

    def code_matters(self, code: str) -> bool:
        """Does ``code``, or a function of the file it calls (through any chain of calls), call
        or set something that matters? A worklist, so a chain of a thousand functions fits;
        each body is read once per file."""
        todo = [code]
        while todo:
            code = todo.pop()
            if _SETS_ENV.search(code):
                return True
            for dot, name in _CALL.findall(code):
                if name in self.tokens and (dot or name not in _BUILTINS):  # .range( is tf.data's, range( is not
                    return True
                if not dot and name in self.imported:
                    self.called_imports.add(self.imported[name])  # the program decides: project or not
                if not dot and name in self.bodies and name not in self.followed:
                    self.followed.add(name)
                    todo.append(self.bodies[name])
        return False


def _without_definitions(code: str) -> str:
    """A module-level block without the functions and classes it defines (``if x: class A: ...``):
    defining them runs none of their code."""
    if "def " not in code and "class " not in code:
        return code
    kept: list[str] = []
    inside: int = -1  # indentation of the definition being skipped
    for line in code.split("\n"):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if inside >= 0:
            if not stripped or indent > inside or stripped.startswith((")", "]", "}")):
                continue
            inside = -1
        if kept and _DEFINITION.match(stripped) or (kept and stripped.startswith("@")):
            inside = indent
            continue
        kept.append(line)
    return "\n".join(kept)


def kb_tokens(kb: "KnowledgeBase") -> frozenset[str]:
    """The last part of every name the knowledge base matches: a module-level call to one of
    them may be a finding, or seed, or train."""
    out: set[str] = set()
    for kind, by_name in kb.index.items():
        out.update(by_name if kind == "env" else (name.rsplit(".", 1)[-1] for name in by_name))
    return frozenset(out - {"update", "setdefault"})  # dict methods; environ's are found by name


def maker_tokens(kb: "KnowledgeBase") -> frozenset[str]:
    """The last names of ``kb.method_classes()`` (``Estimator``): a project function of a module
    that names one may return such an object."""
    return frozenset(qual.rsplit(".", 1)[-1] for qual in kb.method_classes())


def provider_tokens(kb: "KnowledgeBase") -> frozenset[str]:
    """Tokens of the groups program rules look for anywhere in a program (a seed call, a
    determinism switch, a backend setting): a module that mentions one is parsed even when its
    module level is inert, since the trace may reach it in ways it cannot follow."""
    groups = {"legacy-keras"}
    for rule in kb.rules.values():
        groups.update(rule.unless_present)
        for check in rule.program:
            groups.update(str(check[key]) for key in ("requires", "when-present") if check.get(key))
    out: set[str] = set()
    for name in groups:
        group = kb.groups.get(name)
        for matcher in group.matchers if group else ():
            out.update(n if matcher.kind == "env" else n.rsplit(".", 1)[-1] for n in matcher.names)
    return frozenset(out)


def outline_to_json(sketch: Outline) -> bytes:
    return json.dumps({"imports": [list(i) for i in sketch.imports], "active": sketch.active,
                       "mentions": sorted(sketch.mentions), "calls": list(sketch.calls),
                       "bindings": [list(b) for b in sketch.bindings]}).encode()


def outline_from_json(data: bytes) -> Outline:
    """Read a cached outline; anything that is not exactly one raises ValueError (a miss)."""
    raw = json.loads(data)
    imports = raw.get("imports") if isinstance(raw, dict) else None
    mentions = raw.get("mentions") if isinstance(raw, dict) else None
    calls = raw.get("calls") if isinstance(raw, dict) else None
    bindings = raw.get("bindings") if isinstance(raw, dict) else None
    if not isinstance(imports, list) or not all(
            isinstance(i, list) and len(i) == 2 and isinstance(i[0], str) and type(i[1]) is int for i in imports):
        raise ValueError("not an outline")
    if type(raw.get("active")) is not bool or not all(isinstance(v, list) for v in (mentions, calls, bindings)) or \
            not all(isinstance(m, str) for m in mentions + calls) or not all(
                isinstance(b, list) and len(b) == 2 and all(isinstance(x, str) for x in b) for b in bindings):
        raise ValueError("not an outline")
    return Outline(tuple((name, line) for name, line in imports), raw["active"], frozenset(mentions), tuple(calls),
                   tuple((name, how) for name, how in bindings))
