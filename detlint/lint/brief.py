"""The one-line form of a finding: what, and what to write instead.

Every message of the knowledge base follows one grammar, ``WHAT[, so WHY]; FIX``, with asides in
parentheses after a space (``Conv2D (cuDNN convolution backprop ...)``, ``(TensorFlow 2.21
assumed from ...)``) and explanations after " — ". The concise output and flake8 print the
what and the fix; ``--output-format full``, JSON, SARIF and ``detlint rule`` keep the whole text.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from detlint.lint.ftypes import Diagnostic

_OPEN, _CLOSE = "([{", ")]}"


def _top_level(text: str, sep: str) -> list[str]:
    """``text`` split at each ``sep`` outside brackets."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        char = text[i]
        depth += char in _OPEN
        depth -= char in _CLOSE and depth > 0
        if depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


# an aside that says where the code is ("(in mypkg/models.py:5)") is part of the what
_PLACE = re.compile(r"\.(?:py|ipynb):(?:cell \d+:)?\d+")


def _without_asides(text: str) -> str:
    """``text`` without its parenthesised asides, except those naming a place in the code; a call's
    own parentheses (no space before) stay."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if depth == 0 and text.startswith(" (", i):
            depth, start, i = 1, i, i + 2
            continue
        if depth:
            depth += (text[i] == "(") - (text[i] == ")")
            i += 1
            if depth == 0 and _PLACE.search(text, start, i):
                out.append(text[start:i])
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def brief(message: str, fix_title: str | None = None) -> str:
    """The what of ``message`` (its first ``; `` clause, without the reason after ``, so `` or
    `` — `` and without asides) and its fix: the fix's title where the message says it, else the
    message's last clause (a title that points at the message: "use the workaround in the
    message")."""
    clauses = _top_level(message, "; ")
    what = _without_asides(_top_level(_top_level(clauses[0], " — ")[0], ", so ")[0]).rstrip(" .")
    title = _without_asides(_top_level(fix_title or "", "; ")[0]).rstrip(" .")
    if title and title in _without_asides(message):
        return f"{what}; {title}"
    if len(clauses) == 1:
        return what
    return f"{what}; {_without_asides(_top_level(clauses[-1], ' — ')[0]).rstrip(' .')}"


# detlint's own findings (a file it could not check, its own failure): their message is the reason
OWN_CODES = ("DET000", "DET001")


def one_line(diag: "Diagnostic") -> str:
    """What a concise line and flake8 print after the code."""
    from detlint.lint.confidence import marker

    text = diag.message if diag.code in OWN_CODES else brief(diag.message, diag.fix_title)
    return text + marker(diag, why=False)
