"""The TensorFlow era a project's code was written for, when nothing pins it.

Legacy repositories rarely pin TensorFlow, and the TensorFlow installed where detlint runs says
nothing about them: advice for TF 2.21 (``enable_op_determinism()``) is wrong for TF1 graph
code, which cannot even run there. The knowledge base's ``eras`` entries say which versions
code using an API works on (``tf.Session``: before 2.0; ``enable_op_determinism``: from 2.8); a
text scan of the project's files collects that evidence. Nothing is parsed or run.
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

from detlint.knowledge.frameworks import framework
from detlint.knowledge.kb import Era
from detlint.knowledge.versions import Version, known_versions
from detlint.lint.files.sources import read_regular

MAX_FILES = 5000
MAX_BYTES = 256 * 1024
# folders that hold no project code
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "env", "node_modules",
                       "site-packages", "__pycache__", "build", "dist", ".detlint_cache", ".ipynb_checkpoints"})


@dataclass(frozen=True)
class EraGuess:
    versions: tuple[Version, ...]  # the known versions all (or most) of the evidence allows
    version: Version  # the one to check against: what such code was typically written for
    evidence: tuple[str, ...]  # what was seen (tf.placeholder, fit_generator), most files first
    files: int  # how many files gave evidence
    share: float = 1.0  # of the files that use the framework
    key: str = "tensorflow"

    def describe(self) -> str:
        return f"{framework(self.key).title} {self.version} assumed from {', '.join(self.evidence[:3])} use " \
               f"({self.files} file{'s' if self.files != 1 else ''}); nothing pins it"


def project_files(root: Path) -> Iterator[Path]:
    """Python files and notebooks under ``root``, without environments and build output."""
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith((".py", ".ipynb")):
                count += 1
                if count > MAX_FILES:
                    return
                yield Path(folder) / name


def _raw(path: Path) -> str:
    limit = MAX_BYTES * (16 if path.suffix == ".ipynb" else 1)  # outputs make notebooks large
    try:
        return read_regular(path, limit).decode("utf-8", errors="replace")
    except OSError:  # a FIFO among them is skipped, never waited on
        return ""


def cell_source(cell: dict) -> str:
    """A notebook cell's source, as a list of lines or one string; anything else (a damaged
    notebook) gives what text there is."""
    source = cell.get("source")
    if isinstance(source, list):
        return "".join(part for part in source if isinstance(part, str))
    return source if isinstance(source, str) else ""


_COMMENT_LINE = re.compile(r"^[ \t]*#.*$", re.MULTILINE)


def code_text(path: Path, raw: str) -> str:
    """What runs: a notebook's code cells (a migration guide's prose names ``tf.Session``), a
    script without its comment lines (a commented-out ``sess = tf.Session()``)."""
    if path.suffix == ".ipynb":
        try:
            cells = json.loads(raw).get("cells", [])
        except (ValueError, AttributeError, RecursionError):
            return ""
        raw = "\n".join(cell_source(c) for c in cells if isinstance(c, dict) and c.get("cell_type") == "code")
    return _COMMENT_LINE.sub("", raw)


try:  # the parser behind re.compile; only asked which literal text a pattern needs
    from re import _constants as _sre_constants, _parser as _sre_parser  # type: ignore[attr-defined]
except ImportError:  # Python < 3.11
    import sre_constants as _sre_constants  # type: ignore[no-redef]
    import sre_parse as _sre_parser  # type: ignore[no-redef]

_FAST: dict[str, tuple["re.Pattern[str]", str]] = {}


def needed_literal(pattern: "re.Pattern[str]") -> str:
    """The longest text every match contains (``tf.train.`` for ``\\btf\\.train\\.(?:Saver|...)``):
    ``in`` rules a file out several times faster than the pattern's own search."""
    best = run = ""
    try:
        parsed = list(_sre_parser.parse(pattern.pattern, pattern.flags))
    except Exception:  # a parser of another Python: no shortcut, the search still decides
        return ""
    for op, arg in parsed:
        run = run + chr(arg) if op is _sre_constants.LITERAL and not pattern.flags & re.IGNORECASE else ""
        best = max(best, run, key=len)
    return best


def _search(pattern: "re.Pattern[str]", text: str) -> Optional["re.Match[str]"]:
    """``pattern.search``, after a check that the text holds the literal it needs; a leading
    ``\\b`` is checked by hand: without it the regular expression engine skips ahead to its
    literal start (ten times faster over a large project)."""
    entry = _FAST.get(pattern.pattern)
    if entry is None:
        fast = re.compile(pattern.pattern[2:], pattern.flags) if pattern.pattern.startswith(r"\b") else pattern
        entry = _FAST[pattern.pattern] = (fast, needed_literal(pattern))
    fast, literal = entry
    if literal not in text:
        return None
    if fast is pattern:
        return pattern.search(text)
    start = 0
    while True:
        match = fast.search(text, start)
        if match is None or match.start() == 0 or not (text[match.start() - 1].isalnum()
                                                       or text[match.start() - 1] == "_"):
            return match
        start = match.start() + 1


# an ``except`` that catches a missing name or module: the ``try`` beside it is a compatibility shim
_FALLBACK_EXCEPT = re.compile(r"except\s*(?::|\(?[\w., ]*\b(?:AttributeError|ImportError|ModuleNotFoundError|"
                              r"NameError|Exception|BaseException)\b)")
_BLOCK_START = re.compile(r"(try|except|if|elif|else)\b")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _in_trailing_comment(line: str, column: int) -> bool:
    """Is ``column`` after a ``#`` outside quotes (``x = tf.cast(m)  # tf.to_float(m)``)?"""
    quote = ""
    for i, char in enumerate(line[:column]):
        if quote:
            quote = "" if char == quote and line[i - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char == "#":
            return True
    return False


def _handlers_fall_back(lines: list[str], start: int, indent: int) -> bool:
    """Does the ``try`` at ``lines[start]`` have a handler that catches a missing name?"""
    for line in lines[start + 1:]:
        if not line.strip():
            continue
        if _indent(line) < indent or (_indent(line) == indent and not line.lstrip().startswith(
                ("except", "else", "finally"))):
            return False
        if _indent(line) == indent and _FALLBACK_EXCEPT.match(line.lstrip()):
            return True
    return False


def _guarded(text: str, position: int, lines: list[str]) -> bool:
    """Is the code at ``position`` one side of a compatibility shim: inside a ``try`` (or its
    handler) that falls back when a name or module is missing, or under ``if`` a framework
    version test (``tf.__version__``)? Such code runs on the old and the new releases alike and
    says nothing of the version; so does a name in a comment after code."""
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    line = text[start:end if end >= 0 else len(text)]
    if _in_trailing_comment(line, position - start):
        return True
    before = lines[:text.count("\n", 0, start)]
    indent = _indent(line)
    for number in range(len(before) - 1, -1, -1):
        above = before[number]
        if not above.strip() or _indent(above) >= indent:
            continue
        indent = _indent(above)
        head = above.lstrip()
        block = _BLOCK_START.match(head)
        if block and block.group(1) == "try" and _handlers_fall_back(lines, number, indent):
            return True
        if block and block.group(1) == "except" and _FALLBACK_EXCEPT.match(head):
            return True
        if block and block.group(1) in ("if", "elif") and "__version__" in head:
            return True
        if block and block.group(1) == "else":
            opener = next((b.lstrip() for b in reversed(before[:number])
                           if b.strip() and _indent(b) == indent and not b.lstrip().startswith("else")
                           and _indent(b) <= indent), "")
            if opener.startswith(("if", "elif")) and "__version__" in opener:
                return True
        if indent == 0:
            return False
    return False


def _unguarded(pattern: "re.Pattern[str]", text: str) -> Optional["re.Match[str]"]:
    """The first match of ``pattern`` outside compatibility shims."""
    match = _search(pattern, text)
    lines: list[str] = text.split("\n") if match is not None else []  # once per file and pattern
    while match is not None and _guarded(text, match.start(), lines):
        match = pattern.search(text, match.end())
    return match


def file_evidence(text: str, eras: Sequence[Era]) -> list[tuple[Era, str]]:
    """The eras whose patterns ``text`` matches (and no ``unless`` cancels), each with the first
    text it matched, as the settings name it: ``tf.placeholder``."""
    found = []
    for era in eras:
        match = next((m for m in (_unguarded(p, text) for p in era.patterns) if m), None)
        if match and not any(_search(p, text) for p in era.unless):
            seen = match.group(0)
            # an import statement is named by what it shows, not as run-together words
            found.append((era, era.evidence if re.match(r"\s*(?:from|import)\s", seen)
                          else re.sub(r"\s+", "", seen).rstrip("(").lstrip(".")))
    return found


_IMPORTS: dict[str, "re.Pattern[str]"] = {}


def uses_framework(text: str, key: str) -> bool:
    """Does the text import framework ``key`` (one of its modules, at a line's start)?"""
    pattern = _IMPORTS.get(key)
    if pattern is None:
        names = "|".join(re.escape(m) for m in framework(key).imports or (key,))
        pattern = _IMPORTS[key] = re.compile(r"^[ \t]*(?:import|from)[ \t]+(?:" + names + r")\b", re.MULTILINE)
    return bool(pattern.search(text))
def _allows(era: Era, version: Version, oldest: Version) -> bool:
    """Does the era allow ``version``? An era wholly before the oldest known release (PyTorch
    0.3 code) allows that release: it is checked there, where no switch exists either."""
    if era.versions.contains(version):
        return True
    # "<1.0" with PyTorch's oldest known release 1.0: checked at 1.0
    return version == oldest and era.versions.contains(Version(0, 0))


def file_era(path: Path, raw: str, eras: Sequence[Era], key: str = "tensorflow"
             ) -> Optional[tuple[tuple[Version, ...], list[tuple[Optional[Era], str]]]]:
    """What one file's code says about the versions of framework ``key`` it runs on: the known
    versions all its evidence allows and the evidence; None without evidence (or with evidence
    that contradicts itself). Only a file that imports the framework speaks for it."""
    eras = [era for era in eras if era.framework == key]
    # comments hold no import line, and taking text away finds nothing the whole text lacks:
    # most files of a large project give no evidence, and are not stripped
    code = code_text(path, raw) if path.suffix == ".ipynb" else None  # a notebook's JSON read once
    if not eras or not uses_framework(code if code is not None else raw, key):
        return None
    found: list[tuple[Optional[Era], str]] = []
    code_eras = [era for era in eras if era.scope == "code"]
    if code is not None or file_evidence(raw, code_eras):
        found = list(file_evidence(code if code is not None else code_text(path, raw), code_eras))
    if path.suffix == ".ipynb":
        found += file_evidence(raw, [era for era in eras if era.scope == "notebook"])
    known = known_versions(key)
    found = [(era, text) for era, text in found if era is None or not era.hint]  # hints: hint_evidence
    allowed = tuple(v for v in known if all(_allows(era, v, known[0]) for era, _ in found if era))
    # what a notebook printed is its own version (stated_versions.py), not a vote for others'
    return (allowed, found) if found and allowed else None


def hint_evidence(path: Path, raw: str, eras: Sequence[Era], key: str) -> list[tuple[Era, str]]:
    """The file's hint eras (when such code was written) of framework ``key``."""
    hints = [era for era in eras if era.framework == key and era.hint]
    if not hints:
        return []
    return file_evidence(code_text(path, raw) if path.suffix == ".ipynb" else _COMMENT_LINE.sub("", raw), hints)


def narrowed_by(found: list[tuple[Era, str]], allowed: tuple[Version, ...], key: str
                ) -> tuple[tuple[Version, ...], list[str]]:
    """Within ``allowed``, the versions hint evidence ``found`` suggests, and its words;
    ``allowed`` itself when there is none or it contradicts ``allowed``."""
    oldest = known_versions(key)[0]
    narrowed = tuple(v for v in allowed if all(_allows(era, v, oldest) for era, _ in found))
    return (narrowed, [era.evidence for era, _ in found]) if found and narrowed else (allowed, [])


def code_era(files: Iterable[Path], eras: Sequence[Era], key: str = "tensorflow") -> Optional[EraGuess]:
    """The versions the code's evidence allows: the ones most files allow (all files, when they
    agree; a repository with a TF1 folder and a larger TF2 folder is checked as TF2)."""
    if not any(era.framework == key for era in eras):
        return None
    known = known_versions(key)
    found_in: list[tuple[tuple[Version, ...], list[tuple[Optional[Era], str]]]] = []
    framework_files = 0
    for path in files:
        raw = _raw(path)
        framework_files += uses_framework(code_text(path, raw) if path.suffix == ".ipynb" else raw, key)
        evidence = file_era(path, raw, eras, key)
        if evidence is not None:
            found_in.append(evidence)
    if not found_in:
        return None
    # the versions the most files allow (all of them, when the evidence agrees): TF 2 seeding in
    # some files and lr= in others mean 2.0-2.10, whatever a few TF1 lessons among them say
    support = {v: sum(v in allowed for allowed, _ in found_in) for v in known}
    chosen = tuple(v for v in known if support[v] == max(support.values()))
    agreeing = [found for allowed, found in found_in if set(chosen) <= set(allowed)]
    seen = Counter(text for found in agreeing for _, text in found)
    typical = [era.assume for found in agreeing for era, _ in found if era and era.assume in chosen]
    return EraGuess(chosen, min(typical) if typical else chosen[-1], tuple(text for text, _ in seen.most_common()),
                    len(agreeing), len(agreeing) / max(framework_files, len(agreeing)), key)
