"""Which files of the project may import a module: the candidates for the programs that reach it.

A finding at a call site in a library module (an unseeded ``shuffle()``) depends on the programs
that run it. flake8 lints one file at a time, so the module's own lint has to find those
programs. Reading the import lines of the project's files as text is cheap; only the files that
name the module (directly, or through a module that does, a few levels up) are parsed and
built as programs by the caller. An absolute import names a module when its dotted name is the
end of the module's path (``from nets.resnet import f`` names ``.../nets/resnet.py``, never a
``nets.py`` elsewhere); a relative import, by any of its words.
"""
from __future__ import annotations

import io
import os
import re
import tokenize
from pathlib import Path
from typing import Optional

from detlint.lint.files.discovery import DEFAULT_EXCLUDES, SOURCE_SUFFIXES
from detlint.lint.programs.outline import import_statements
from detlint.lint.files.sources import read_bytes

# `import a.b as c, d` / `from .a.b import c, d`, also inside a notebook's JSON strings
IMPORT_RE = re.compile(r'[ \t]*"?[ \t]*(?:from[ \t]+(?P<base>[\w.]+)[ \t]+)?import[ \t]+(?P<names>[\w., ()*]+)')
WORD_RE = re.compile(r"\w+")
_BYTE_WORDS = re.compile(rb"[^A-Za-z0-9_\x80-\xff]+")  # what separates words (UTF-8 letters stay in them)
MAX_TEXT = 2 * 1024 * 1024  # a file larger than this is not read for its imports
MAX_FILES = 20000  # a project root that is really a home folder is not read whole
MAX_NAMING_STRING = 200  # a longer string is prose (a message, a help text), not a name looked up


def module_name(path: Path) -> str:
    """The last part of the dotted name a file is imported by (a package by its folder)."""
    return path.parent.name if path.name == "__init__.py" else path.stem


class ImportIndex:
    """The words of every import statement of every source file under ``root``. Folders that are
    never a program's (virtual environments, build output, caches) are skipped; the user's own
    excludes are not: a script left out of linting still runs the modules it imports."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._paths: Optional[list[Path]] = None
        self._words: dict[Path, set[str]] = {}  # the import words of the files asked about
        self._targets: dict[Path, Targets] = {}  # what their imports may load
        self._named: dict[str, list[Path]] = {}  # word -> files whose text holds it
        self._importers: dict[tuple[Path, int], list[Path]] = {}
        # a project module's name -> the files whose text holds it as a word: every file is read
        # once per run for all the modules asked about (a warm run asks about every module)
        self._mentions: dict[bytes, list[Path]] = {}
        self._vocabulary: Optional[set[bytes]] = None
        self._order: dict[Path, int] = {}  # a file's place in the walk: answers keep that order

    @property
    def paths(self) -> list[Path]:
        if self._paths is None:
            self._paths = self._files()
        return self._paths

    def words_of(self, path: Path) -> set[str]:
        if path not in self._words:
            self._words[path], self._targets[path] = _imports(path)
        return self._words[path]

    def targets_of(self, path: Path) -> "Targets":
        if path not in self._targets:
            self._words[path], self._targets[path] = _imports(path)
        return self._targets[path]

    def _dotted(self, module: Path) -> tuple[str, ...]:
        """The module's path below the root as a dotted name's parts (a package by its folder)."""
        try:
            parts = module.relative_to(self.root).with_suffix("").parts
        except ValueError:
            parts = (module.stem,)
        return parts[:-1] if parts and parts[-1] == "__init__" else parts

    @property
    def words(self) -> dict[Path, set[str]]:
        return {path: self.words_of(path) for path in self.paths}

    def _files(self) -> list[Path]:
        out = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d not in DEFAULT_EXCLUDES and not d.startswith("."))
            for name in sorted(filenames):
                real = Path(os.path.realpath(os.path.join(dirpath, name)))
                # a symlink that leaves the project is not followed, here as anywhere
                if name.endswith(SOURCE_SUFFIXES) and (real == self.root or self.root in real.parents):
                    out.append(real)
            if len(out) >= MAX_FILES:
                break
        return out[:MAX_FILES]

    def naming(self, modules: set[Path]) -> list[Path]:
        """Files whose imports may load one of ``modules``. Only files whose bytes hold one of
        the modules' names are read for their imports: a script's own name is rarely anywhere else."""
        names = {module_name(m) for m in modules}
        # an import may load a module when what it names is a tail of the module's dotted name
        # (`import models.resnet` or `import resnet` for models/resnet.py): every tail, once
        tails = {chain[i:] for chain in map(self._dotted, modules) for i in range(len(chain))}
        mentioning = self._mentioning({os.fsencode(name) for name in names})  # a name not UTF-8 too
        found = []
        for path in sorted(mentioning, key=self._order.__getitem__):
            if not self.words_of(path) & names:
                continue
            dotted, relative = self.targets_of(path)
            if relative & names or not tails.isdisjoint(dotted):
                found.append(path)
        return found

    def _mentioning(self, wanted: set[bytes]) -> set[Path]:
        """The files whose text holds one of ``wanted`` as a word. The project's module names are
        indexed in one pass over the files; another name (a module outside the files walked) in a
        pass of its own."""
        if self._vocabulary is None:
            self._order = {path: i for i, path in enumerate(self.paths)}
            self._vocabulary = {os.fsencode(module_name(p)) for p in self.paths}
            self._index(self._vocabulary)
        missing = wanted - self._vocabulary
        if missing:
            self._vocabulary |= missing
            self._index(missing)
        return {path for word in wanted for path in self._mentions.get(word, ())}

    def _index(self, vocabulary: set[bytes]) -> None:
        for path in self.paths:
            data, _ = read_bytes(path, MAX_TEXT)
            if data is None:
                continue
            for word in set(_BYTE_WORDS.split(data)) & vocabulary:
                self._mentions.setdefault(word, []).append(path)

    def naming_word(self, word: str) -> list[Path]:
        """Files whose text holds ``word`` as a whole word (anywhere: calls, strings, comments).
        Read only when asked (a parameter no file passes); the answers are kept, not the texts,
        so a large project's memory stays flat."""
        if word not in self._named:
            pattern = re.compile(rf"\b{re.escape(word)}\b")
            found = []
            for path in self.paths:
                data, _ = read_bytes(path, MAX_TEXT)
                text = data.decode("utf-8", errors="replace") if data is not None else ""
                if word in text and pattern.search(text):
                    found.append(path)
            self._named[word] = found
        return self._named[word]

    def naming_in_code(self, word: str) -> list[Path]:
        """Files whose code (not their comments or strings: a docstring's example, a line
        commented out) holds ``word`` as a name. A notebook, JSON whose code is in strings, and a
        file Python cannot tokenize keep naming_word's answer."""
        key = "\0code:" + word
        if key not in self._named:
            self._named[key] = [path for path in self.naming_word(word)
                                if path.suffix != ".py" or _names_in_code(path, word)]
        return self._named[key]

    def using_in_code(self, word: str) -> list[Path]:
        """Files whose code refers to ``word`` beyond importing it: a package's ``__init__.py``
        that re-exports a class does not use it."""
        key = "\0use:" + word
        if key not in self._named:
            self._named[key] = [path for path in self.naming_in_code(word)
                                if path.suffix != ".py" or _names_in_code(path, word, imports=False)]
        return self._named[key]

    def matching(self, pattern: str) -> list[Path]:
        """Files whose text matches the regular expression ``pattern`` (kept, as naming_word)."""
        if pattern not in self._named:
            compiled = re.compile(pattern)
            found = []
            for path in self.paths:
                data, _ = read_bytes(path, MAX_TEXT)
                if data is not None and compiled.search(data.decode("utf-8", errors="replace")):
                    found.append(path)
            self._named[pattern] = found
        return self._named[pattern]

    def importers(self, module: Path, depth: int) -> list[Path]:
        """Files that name ``module`` in an import, or name such a file, up to ``depth`` levels
        (kept: a library module is asked about more than once per run)."""
        key = (module, depth)
        if key not in self._importers:
            self._importers[key] = self._find_importers(module, depth)
        return self._importers[key]

    def _find_importers(self, module: Path, depth: int) -> list[Path]:
        found: list[Path] = []
        seen = {module}
        modules = {module}
        for _ in range(depth):
            new = sorted(path for path in self.naming(modules) if path not in seen)
            if not new:
                break
            found.extend(new)
            seen.update(new)
            modules = set(new)
        return found


# the dotted names (as parts) a file's absolute imports may load as modules, and the words of its
# relative imports
Targets = tuple[frozenset[tuple[str, ...]], frozenset[str]]


def _imports(path: Path) -> tuple[set[str], Targets]:
    """The words of a file's import statements, and what they may load, from one read."""
    data, _ = read_bytes(path, MAX_TEXT)  # regular files only, never blocking (a FIFO is skipped)
    if data is None:
        return set(), (frozenset(), frozenset())
    text = data.decode("utf-8", errors="replace")
    words: set[str] = set()
    dotted: set[tuple[str, ...]] = set()
    relative: set[str] = set()
    for match in import_statements(text, IMPORT_RE):
        base = match.group("base")
        base_words = WORD_RE.findall(base or "")
        words.update(base_words)
        words.update(WORD_RE.findall(match.group("names")))
        # `a.b as c, d` / `(c, d)`: the first word of each part is a dotted name
        names = [part.split()[0] for part in match.group("names").replace("(", " ").replace(")", " ").split(",")
                 if part.split()]
        if base is None:
            dotted.update(tuple(name.split(".")) for name in names if name.strip("."))
        elif base.startswith("."):
            relative.update(base_words)
            relative.update(word for name in names for word in WORD_RE.findall(name))
        else:
            parts = tuple(base.split("."))
            dotted.add(parts)
            dotted.update(parts + (name,) for name in names if WORD_RE.fullmatch(name))
    return words, (frozenset(d for d in dotted if all(d)), frozenset(relative))


def _names_in_code(path: Path, word: str, imports: bool = True) -> bool:
    """Does the file's code refer to ``word`` as something defined elsewhere: an attribute
    (``tl.cost.word``), an import (unless ``imports`` is False), a short string that names it for
    a lookup, or a bare name the file never binds itself (a file that defines ``word`` or assigns a variable of that name means
    its own)? Comments and docstrings do not count."""
    data, _ = read_bytes(path, MAX_TEXT)
    if data is None:
        return False
    bare = binds = False
    depth, prev = 0, None
    try:
        tokens = [tok for tok in tokenize.tokenize(io.BytesIO(data).readline)
                  if tok.type not in (tokenize.NL, tokenize.COMMENT, tokenize.ENCODING)]
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return True  # not tokenizable: as the text says
    pattern = re.compile(rf"\b{re.escape(word)}\b")
    statement_import = False  # inside an import statement (continuation lines too)
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.NEWLINE:
            statement_import = False
        elif tok.type == tokenize.NAME and tok.string in ("import", "from") and (
                prev is None or prev.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
                or prev.string == ";"):
            statement_import = True
        if tok.type == tokenize.STRING and pattern.search(tok.string) and len(tok.string) <= MAX_NAMING_STRING:
            # a string that names it for a lookup (`default="xent"`, `eval("losses." + name)`),
            # not a docstring or a string standing as a statement of its own
            alone = (prev is None or prev.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)) \
                and i + 1 < len(tokens) and tokens[i + 1].type in (tokenize.NEWLINE, tokenize.ENDMARKER)
            if not alone:
                return True
        if tok.type == tokenize.OP:
            depth += tok.string in "([{"
            depth -= tok.string in ")]}"
        elif tok.type == tokenize.NAME and tok.string == word:
            after = tokens[i + 1].string if i + 1 < len(tokens) else ""
            before = prev.string if prev is not None else ""
            if not imports and statement_import:
                if after == "as":
                    return True  # `from pkg import Fancy as Up`: used under its alias
                prev = tok
                continue  # `from .ccpm import CCPM`: a re-export, no use
            if before in (".", "import") or (before == "," and _in_import(tokens, i)):
                return True
            if before in ("def", "class", "as", "for") or (after == "=" and depth == 0):
                binds = True
            elif not (after == "=" and depth):  # a keyword argument's name is not a use
                bare = True
        prev = tok
    return bare and not binds


def _in_import(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    line = tokens[i].line.lstrip()
    return line.startswith(("import ", "from "))
