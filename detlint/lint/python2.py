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
_INTEGER = re.compile(r"\d+|0[xX][0-9a-fA-F]+")
_OLD_NUMBER = re.compile(r"(\d+|0[xX][0-9a-fA-F]+)([lL]?)")

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
    return (result,) + first if compiles(result) else None


def _rewrite(tokens: list[tokenize.TokenInfo], i: int, edits: list[Edit]) -> Optional[str]:
    tok = tokens[i]
    before = tokens[i - 1] if i else None
    after = tokens[i + 1] if i + 1 < len(tokens) else None
    starts = before is None or before.type in _STATEMENT_START or before.string in (";", ":")
    if tok.type == tokenize.NUMBER:
        return _number(tok, after, edits)
    if tok.type != tokenize.NAME or after is None:
        return None
    # `print x` (not print(x), print.x, a print function handed on: {"log": print})
    statement = after.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING) or after.string in ("-", "~", "{") \
        or (tok.string == "print" and after.string == ">>") or after.type in _STATEMENT_START or after.string == ";"
    if tok.string in ("print", "exec") and starts and statement and not (tok.string == "exec" and _has_in(tokens, i)):
        end = _statement_end(tokens, i)
        if after.string == ">>":  # print >>f, x
            comma = _top_level_comma(tokens, i + 2)
            last = tokens[end - 1]
            if last.end[0] != tok.start[0]:
                return None  # one line only
            line = tok.line
            if comma is None:
                edits.append((*tok.start, *last.end, f"print(file={line[tokens[i + 2].start[1]:last.end[1]]})"))
            else:
                target = line[tokens[i + 2].start[1]:tokens[comma].start[1]]
                args = line[tokens[comma].end[1]:last.end[1]].strip()
                edits.append((*tok.start, *last.end, f"print({args}, file={target})"))
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
        if tok.string == "except":  # except IOError, e: (or IOError,e)
            edits.append((*tokens[comma].start, *tokens[comma].end, " as "))
            return "except clause"
        end = _statement_end(tokens, i)  # raise ValueError, "message"
        edits.append((*tokens[comma].start, *tokens[comma].end, "("))
        edits.append((*tokens[end - 1].end, *tokens[end - 1].end, ")"))
        return "raise statement"
    return None


def _number(tok: tokenize.TokenInfo, after: Optional[tokenize.TokenInfo], edits: list[Edit]) -> Optional[str]:
    """0777 and 10L (one token from Python 3.12 on; 0 and 777, 10 and L before)."""
    whole = _OLD_NUMBER.fullmatch(tok.string)
    if whole:
        digits, suffix = whole.group(1), whole.group(2)
        octal = len(digits) > 1 and digits.startswith("0") and digits.isdigit()
        if octal or suffix:
            edits.append((*tok.start, *tok.end, ("0o" + digits[1:]) if octal else digits))
            return "octal literal" if octal else "long literal"
    if after is None or after.start != tok.end:
        return None
    if tok.string == "0" and after.type == tokenize.NUMBER and _OCTAL.fullmatch(after.string):
        edits.append((*tok.start, *after.end, "0o" + after.string.rstrip("lL")))
        return "octal literal"
    if after.type == tokenize.NAME and after.string in ("L", "l") and _INTEGER.fullmatch(tok.string):
        edits.append((*after.start, *after.end, ""))
        return "long literal"
    return None


def _has_in(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    """``exec code in namespace``: left as it is (its Python 3 form is not a rewrite in place)."""
    end = _statement_end(tokens, i)
    return any(t.type == tokenize.NAME and t.string == "in" for t in tokens[i + 1:end])


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


def compiles(text: str) -> bool:
    """Does Python itself accept ``text`` (warnings about odd escapes aside)? Here, not in
    stand_ins: a warm run reads the facts cache, which names these constructs, without libcst."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
