"""A notebook cell's lines as Python counts them, and a fixed cell written back with the line
breaks it had. CR alone, LF and CRLF each end one line (as the tokenizer and libcst count them), so
a cell's lines go into the joined program one per line, whatever ends them there; each line a fix
keeps ends as it did, since a cell may mix them.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from difflib import SequenceMatcher

_BREAK = re.compile(r"(\r\n|\r|\n)")
MAX_DIFF = 250_000  # line pairs a window may hold and still be diffed


def split_lines(text: str) -> tuple[list[str], list[str]]:
    r"""``text``'s lines and the break that ends each ("" for the last); like ``str.split("\n")``,
    a text that ends in a break has an empty last line."""
    parts = _BREAK.split(text)
    return parts[0::2], parts[1::2] + [""]


def join_like(lines: list[str], original: str) -> str:
    """``lines`` (a cell's text after fixes, with no empty last line) as text that ends each line
    as the line of ``original`` it stands for did (see ``_stands_for``). A line a fix adds ends as
    the line before it, or as most of the cell's lines where that line had no break; the text
    ends in a break when ``original`` did."""
    old, breaks = split_lines(original)
    ended = original.endswith(("\r", "\n"))
    if ended:  # the empty line after the last break
        old, breaks = old[:-1], breaks[:-1]
    counts = Counter(end for end in breaks if end)
    usual = counts.most_common(1)[0][0] if counts else "\n"
    ends = [(breaks[at] if at >= 0 else "") or usual for at in _stands_for(old, lines)]
    if ends and not ended:
        ends[-1] = ""
    if not lines and ended:  # everything went: the cell keeps its one line break, as before
        return usual
    return "".join(line + end for line, end in zip(lines, ends))


def _stands_for(old: list[str], new: list[str]) -> list[int]:
    """For each line of ``new``, the line of ``old`` it stands for: the same line, the line it
    replaces, else the line before it (-1: none). The lines both share at the start and at the
    end match as they stand (fixes touch a few lines of a cell); only the window between is
    diffed, line by line in order where it is too large for a diff (which is quadratic)."""
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    a, b = old[head:len(old) - tail], new[head:len(new) - tail]
    window = _diffed(a, b) if len(a) * len(b) <= MAX_DIFF else _in_order(a, b)
    shift = len(old) - len(new)
    return [*range(head), *(head + at for at in window), *(j + shift for j in range(len(new) - tail, len(new)))]


def _diffed(old: list[str], new: list[str]) -> list[int]:
    stands: list[int] = []
    for _, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        stands.extend(i1 + k if i1 + k < i2 else i2 - 1 for k in range(j2 - j1))
    return stands


def _in_order(old: list[str], new: list[str]) -> list[int]:
    """Each line of ``new`` matched to the first equal line of ``old`` after the last match; a
    line with none stands for the last matched line (the line before it). Linear in lines."""
    where: dict[str, list[int]] = {}
    for i, line in enumerate(old):
        where.setdefault(line, []).append(i)
    stands: list[int] = []
    last = -1
    for line in new:
        found = where.get(line, [])
        k = bisect_right(found, last)
        if k < len(found):
            last = found[k]
        stands.append(last)
    return stands
