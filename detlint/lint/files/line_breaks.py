r"""Lines as Python's tokenizer and libcst count them: CRLF, CR and LF each end one, nothing else.

``str.splitlines`` also breaks at form feed, ``\x0b``, ``\x1c``-``\x1e``, ``\x85``, U+2028 and
U+2029, which may stand in comments and strings; every line detlint reports, silences, shows or
fixes is numbered as libcst numbers it, so source text is split here.
"""
from __future__ import annotations

import re

BREAK = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def python_lines(text: str, keepends: bool = False) -> list[str]:
    """``text.splitlines(keepends)``, breaking only where Python does."""
    lines = _LINE.findall(text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


def position(text: str, offset: int) -> tuple[int, int]:
    """``offset`` in ``text`` as (line from 1, column from 0)."""
    starts = [0] + [match.end() for match in BREAK.finditer(text, 0, offset)]
    return len(starts), offset - starts[-1]
