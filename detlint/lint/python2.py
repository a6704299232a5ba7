"""Python 2 code read as its Python 3 equivalent.

Research code of 2015-2018 is often Python 2: ``print "step", i``, ``except IOError, e:``,
``raise ValueError, "bad"``, ``0777``, ``10L``. libcst reads Python 3 only, so such a file would be
left unchecked, and with it the seeds and ops of the programs it belongs to. ``python3_text``
rewrites those statements in place (each edit stays on its own lines: line numbers are kept,
columns move only on the edited lines) and returns the text when Python 3 compiles it. Nothing is
written back: no fix is written into a file read this way.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from typing import Optional

from detlint.lint.files.line_breaks import python_lines

# tokens after which a name starts a statement
_STATEMENT_START = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
_OCTAL = re.compile(r"[0-7]+[lL]?")
_PRINT_TO = re.compile(r"print\s*>>\s*([^,]+?)\s*(?:,\s*(.*?))?\s*$")

# what python3_text names as a file's first Python 2 construct
CONSTRUCTS = ("print statement", "exec statement", "except clause", "raise statement", "octal literal",
              "long literal")
Edit = tuple[int, int, int, int, str]  # (row, col, end row, end col, text), rows 1-based


def python3_text(source: str) -> Optional[tuple[str, str, int, int]]:
    """(the text as Python 3 reads the same statements, the first Python 2 construct, its line
    and column) or None when the file is not Python 2 that these rewrites make valid."""
    try:
        tokens = [tok for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                  if tok.type not in (tokenize.NL, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError, IndentationError, ValueError):
        return None
    edits: list[Edit] = []
    first: Optional[tuple[str, int, int]] = None
    for i, tok in enumerate(tokens):
        found = _rewrite(tokens, i, edits)
        if found and first is None:
            first = (found, *tok.start)
    if first is None:
        return None
    lines = python_lines(source, keepends=True)
    for row, col, end_row, end_col, text in sorted(edits, reverse=True):
        if row != end_row or row > len(lines):
            return None
        line = lines[row - 1]
        lines[row - 1] = line[:col] + text + line[end_col:]
    result = "".join(lines)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(result)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return (result,) + first


def _rewrite(tokens: list[tokenize.TokenInfo], i: int, edits: list[Edit]) -> Optional[str]:
    tok = tokens[i]
    before = tokens[i - 1] if i else None
    after = tokens[i + 1] if i + 1 < len(tokens) else None
    starts = before is None or before.type in _STATEMENT_START or before.string in (";", ":")
    if tok.type == tokenize.NUMBER and after is not None and after.start == tok.end:
        # Python 3's tokenizer splits them: 0777 as 0 and 777, 10L as 10 and L
        if tok.string == "0" and after.type == tokenize.NUMBER and _OCTAL.fullmatch(after.string):
            edits.append((*tok.start, *after.end, "0o" + after.string.rstrip("lL")))
            return "octal literal"
        if after.type == tokenize.NAME and after.string in ("L", "l") and tok.string.isdigit():
            edits.append((*after.start, *after.end, ""))
            return "long literal"
        return None
    if tok.type != tokenize.NAME or after is None:
        return None
    if tok.string in ("print", "exec") and starts and after.string not in ("(", "=", ".", ",", ")", "[") \
            and not (after.type == tokenize.OP and after.string.endswith("=") and after.string != ">>="):
        end = _statement_end(tokens, i)
        if after.string == ">>":  # print >>f, x: one line only
            line = tok.line[tok.start[1]:].rstrip("\r\n")
            match = _PRINT_TO.match(line.split("#")[0].rstrip())
            if tokens[end - 1].end[0] != tok.start[0] or match is None:
                return None
            args = f"{match.group(2)}, " if match.group(2) else ""
            edits.append((*tok.start, tok.start[0], tok.start[1] + len(match.group(0)),
                          f"print({args}file={match.group(1)})"))
            return "print statement"
        if after.type in _STATEMENT_START or after.string == ";":
            edits.append((*tok.end, *tok.end, "()"))  # a bare `print`
            return "print statement"
        edits.append((*tok.end, *tok.end, "("))
        edits.append((*tokens[end - 1].end, *tokens[end - 1].end, ")"))
        return f"{tok.string} statement"
    if tok.string in ("except", "raise") and starts:
        comma = _top_level_comma(tokens, i + 1)
        if comma is None:
            return None
        if tok.string == "except":  # except IOError, e:
            edits.append((*tokens[comma].start, *tokens[comma].end, " as"))
            return "except clause"
        end = _statement_end(tokens, i)  # raise ValueError, "message"
        edits.append((*tokens[comma].start, *tokens[comma].end, "("))
        edits.append((*tokens[end - 1].end, *tokens[end - 1].end, ")"))
        return "raise statement"
    return None


def _statement_end(tokens: list[tokenize.TokenInfo], i: int) -> int:
    """The index of the NEWLINE or ';' that ends the statement starting at ``i``."""
    depth = 0
    for j in range(i + 1, len(tokens)):
        tok = tokens[j]
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif depth <= 0 and (tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or tok.string == ";"):
            return j
    return len(tokens)


def _top_level_comma(tokens: list[tokenize.TokenInfo], start: int) -> Optional[int]:
    depth = 0
    for j in range(start, len(tokens)):
        tok = tokens[j]
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif depth == 0 and tok.string == ",":
            return j
        elif depth == 0 and (tok.type == tokenize.NEWLINE or tok.string in (":", ";")):
            return None
    return None
