"""Valid Python that libcst's grammar rejects, parsed with a stand-in for the statement at fault.

libcst refuses a parenthesised target of an annotated assignment (``(x): int = 1``) and runs of
a few thousand implicitly concatenated strings (generated data modules). When Python itself
compiles the file, the statement libcst stops at is replaced by a stand-in that keeps every other
line and column where it was, and the rest of the file is checked as usual:

* ``(x): int = 1`` becomes ``x  : int = 1`` (same meaning);
* any other statement becomes ``pass`` followed by blank lines (its own contents go unchecked).

Indentation mixing tabs and spaces that Python accepts (a tab counts to the next multiple of 8)
is read with the tabs written as those spaces first.

Code written for Python 3.6 or earlier may use ``async`` and ``await`` as names
(``x.cuda(async=True)``), which Python 3.7 rejects: ``keywords_as_names`` reads it as its own
Python did, with ``ASYNC``/``AWAIT`` in their place (same length: lines and columns are kept).
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from typing import Optional

import libcst as cst

from detlint.lint.files.line_breaks import python_lines
from detlint.lint.python2 import compiles

MAX_STAND_INS = 8  # each costs a full parse; a file needing more is reported as it is


def parse_module(source: str) -> cst.Module:
    """``cst.parse_module``, with stand-ins where libcst and Python disagree; raises libcst's
    first error when Python rejects the file too or no stand-in helps."""
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        first = exc
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise first from None
    if "\t" in source:
        # `\t    x = 1` under 4-space lines: Python counts a tab to the next multiple of 8,
        # libcst's tokenizer finds no matching block; the same indentation in spaces parses
        try:
            return cst.parse_module(tabs_as_spaces(source))
        except cst.ParserSyntaxError:
            pass
    statements = [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    lines = python_lines(source, keepends=True)  # indexed by ast's line numbers
    error = first
    replaced: set[int] = set()
    for _ in range(MAX_STAND_INS):
        statement = next((s for s in (_at(statements, line) for line in _error_lines(error))
                          if s is not None and id(s) not in replaced), None)
        if statement is None:
            break
        replaced.add(id(statement))
        changed = _stand_in(lines, statement)
        if changed is None:
            break
        lines = changed
        try:
            return cst.parse_module("".join(lines))
        except cst.ParserSyntaxError as exc:
            error = exc
    raise first from None


def tabs_as_spaces(source: str) -> str:
    """Each line's leading tabs as the spaces Python's tokenizer counts them for (to the next
    multiple of 8); the rest of every line is kept."""
    out = []
    for line in python_lines(source, keepends=True):
        body = line.lstrip(" \t")
        indent = line[:len(line) - len(body)]
        out.append(indent.expandtabs(8) + body if "\t" in indent else line)
    return "".join(out)


def _error_lines(error: cst.ParserSyntaxError) -> list[int]:
    """Where libcst stopped: its message says it best ("error at 2:8"); ``raw_line`` can be off."""
    match = re.search(r"error at (\d+):(\d+)", error.message)
    return ([int(match.group(1))] if match else []) + [error.raw_line]


def _at(statements: list[ast.stmt], line: int) -> Optional[ast.stmt]:
    """The innermost statement spanning ``line``."""
    spanning = [s for s in statements if s.lineno <= line <= (s.end_lineno or s.lineno)]
    return min(spanning, key=lambda s: (s.end_lineno or s.lineno) - s.lineno, default=None)


def _column(line: str, byte_offset: int) -> int:
    """ast counts columns in UTF-8 bytes; strings count characters."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


def _stand_in(lines: list[str], node: ast.stmt) -> Optional[list[str]]:
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    if last >= len(lines) or node.end_col_offset is None:
        return None
    out = list(lines)
    head = lines[first]
    start = _column(head, node.col_offset)
    if isinstance(node, ast.AnnAssign) and not node.simple and isinstance(node.target, ast.Name) \
            and node.target.lineno == node.lineno == node.end_lineno:
        name_start, name_end = _column(head, node.target.col_offset), _column(head, node.target.end_col_offset or 0)
        colon = head.find(":", name_end)
        wrapping = head[start:name_start] + head[name_end:colon]
        if colon > 0 and set(wrapping) <= set("() \t"):
            name = node.target.id
            out[first] = head[:start] + name + " " * (colon - start - len(name)) + head[colon:]
            return out
    end = _column(lines[last], node.end_col_offset)
    rest = lines[last][end:]
    if rest.strip() and not rest.lstrip().startswith("#"):
        return None  # `x = ...; y = 1`: no stand-in keeps the rest of the line valid
    if first == last:
        out[first] = head[:start] + "pass" + rest
        return out
    out[first] = head[:start] + "pass\n"
    for index in range(first + 1, last):
        out[index] = "\n"
    out[last] = rest if rest.strip() else "\n"
    return out


OLD_NAMES = {"async": "ASYNC", "await": "AWAIT"}  # reserved words from Python 3.7


def keywords_as_names(source: str) -> Optional[tuple[str, str, int, int]]:
    """Python 3.6's reading of a file that uses ``async``/``await`` as names: the text with
    stand-ins for them, the word and where it is first used (1-based line, 0-based column);
    None when the file uses no such name or is not valid Python 3.6 either."""
    try:
        tokens = [tok for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                  if tok.type not in (tokenize.NL, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError, IndentationError, ValueError):
        return None
    lines = python_lines(source, keepends=True)
    first: Optional[tuple[str, int, int]] = None
    for index, tok in enumerate(tokens):
        if tok.type != tokenize.NAME or tok.string not in OLD_NAMES:
            continue
        before = tokens[index - 1].string if index else ""
        after = tokens[index + 1].string if index + 1 < len(tokens) else ""
        # a name: an attribute, a keyword argument or an assignment, a definition or an import
        if not (before in (".", "def", "class", "import", "as") or after == "="):
            continue
        (row, col), (end_row, _) = tok.start, tok.end
        if row != end_row or row > len(lines) or lines[row - 1][col:col + len(tok.string)] != tok.string:
            return None
        line = lines[row - 1]
        lines[row - 1] = line[:col] + OLD_NAMES[tok.string] + line[col + len(tok.string):]
        first = first or (tok.string, row, col)
    if first is None:
        return None
    text = "".join(lines)
    return (text,) + first if compiles(text) else None

