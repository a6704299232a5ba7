"""A notebook cell's lines as Python counts them, and a fixed cell written back with the line
breaks it had. CR alone, LF and CRLF each end one line (as the tokenizer and libcst count them), so
a cell's lines go into the joined program one per line, whatever ends them there; each line a fix
keeps ends as it did, since a cell may mix them.
"""
from __future__ import annotations

import re
from collections import Counter
from difflib import SequenceMatcher

_BREAK = re.compile(r"(\r\n|\r|\n)")


def split_lines(text: str) -> tuple[list[str], list[str]]:
    r"""``text``'s lines and the break that ends each ("" for the last); like ``str.split("\n")``,
    a text that ends in a break has an empty last line."""
    parts = _BREAK.split(text)
    return parts[0::2], parts[1::2] + [""]


def join_like(lines: list[str], original: str) -> str:
    """``lines`` (a cell's text after fixes, with no empty last line) as text that ends each line
    as the line of ``original`` it stands for did (matched as a diff matches lines). A line a fix
    adds ends as the line before it, or as most of the cell's lines where that line had no break;
    the text ends in a break when ``original`` did."""
    old, breaks = split_lines(original)
    ended = original.endswith(("\r", "\n"))
    if ended:  # the empty line after the last break
        old, breaks = old[:-1], breaks[:-1]
    counts = Counter(end for end in breaks if end)
    usual = counts.most_common(1)[0][0] if counts else "\n"
    ends: list[str] = []
    for _, i1, i2, j1, j2 in SequenceMatcher(None, old, lines, autojunk=False).get_opcodes():
        for k in range(j2 - j1):
            at = i1 + k if i1 + k < i2 else i2 - 1  # the line it replaces, else the line before it
            ends.append((breaks[at] if at >= 0 else "") or usual)
    if ends and not ended:
        ends[-1] = ""
    if not lines and ended:  # everything went: the cell keeps its one line break, as before
        return usual
    return "".join(line + end for line, end in zip(lines, ends))
