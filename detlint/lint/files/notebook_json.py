"""A notebook's JSON as written: where each cell's ``source`` lies in the text, and the JSON for a
new source in the file's own layout. A fix replaces only those bytes, so duplicate keys, numbers
JSON cannot round-trip (``1e400``, ``1.10``), escapes and outputs stay exactly as they were.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from detlint.lint.files.line_breaks import python_lines

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
T = TypeVar("T")


@dataclass
class SourceSpan:
    """A cell's ``source`` value: ``raw[start:end]``, and for a list each string's span."""

    start: int
    end: int
    items: list[tuple[int, int]]


def _space(raw: str, i: int) -> int:
    match = _SPACE.match(raw, i)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _sequence(raw: str, i: int, brackets: str, element: Callable[[int], tuple[T, int]]) -> list[T]:
    """The elements of the object or array at ``raw[i]`` (``brackets`` "{}" or "[]"), each read
    by ``element`` from where it starts to (what it gives, where it ends)."""
    if raw[i] != brackets[0]:
        raise ValueError(f"'{brackets[0]}' was expected")
    out: list[T] = []
    i = _space(raw, i + 1)
    if raw[i] == brackets[1]:
        return out
    while True:
        value, i = element(i)
        out.append(value)
        i = _space(raw, i)
        if raw[i] == brackets[1]:
            return out
        if raw[i] != ",":
            raise ValueError("',' was expected")
        i = _space(raw, i + 1)


def _members(raw: str, i: int) -> dict[str, tuple[int, int]]:
    """The object at ``raw[i]``: each key's value span (the last of duplicate keys, as json.loads)."""
    def member(at: int) -> tuple[tuple[str, tuple[int, int]], int]:
        key, at = _DECODER.raw_decode(raw, at)
        at = _space(raw, at)
        if raw[at] != ":":
            raise ValueError("':' was expected")
        start = _space(raw, at + 1)
        _, end = _DECODER.raw_decode(raw, start)
        return (key, (start, end)), end

    return dict(_sequence(raw, i, "{}", member))


def _items(raw: str, i: int) -> list[tuple[int, int]]:
    """The span of each element of the array at ``raw[i]``."""
    def item(at: int) -> tuple[tuple[int, int], int]:
        _, end = _DECODER.raw_decode(raw, at)
        return (at, end), end

    return _sequence(raw, i, "[]", item)


def source_spans(raw: str) -> dict[int, SourceSpan]:
    """Cell index -> where its ``source`` lies in ``raw`` (a notebook json.loads has read).
    Raises ValueError where the text does not have that shape."""
    try:
        cells = _members(raw, _space(raw, 0))["cells"]
        spans: dict[int, SourceSpan] = {}
        for index, (start, _) in enumerate(_items(raw, cells[0])):
            if raw[start] != "{":
                continue
            found = _members(raw, start).get("source")
            if found is not None:
                items = _items(raw, found[0]) if raw[found[0]] == "[" else []
                spans[index] = SourceSpan(found[0], found[1], items)
        return spans
    except (KeyError, IndexError, json.JSONDecodeError) as exc:
        raise ValueError(f"the cells could not be located in the notebook's text ({exc})") from exc


def source_json(raw: str, span: SourceSpan, old: Any, text: str) -> str:
    """The JSON that replaces ``raw[span.start:span.end]`` (whose value is ``old``) for a cell
    whose source is now ``text``: a string stays a string, a list a list of lines split as the
    old one was; lines the cell kept keep their exact text, new ones are written as the file's
    other strings are (escaped to ASCII or not), and the list keeps its indentation."""
    ascii_only = raw.isascii()
    if not isinstance(old, list):
        return _string(text, ascii_only)
    kept = {value: raw[start:end] for value, (start, end) in zip(old, span.items)}
    parts = [kept.get(line) or _string(line, ascii_only) for line in _split(text, old)]
    if not parts:
        return "[]"
    opener, separator, closer = _list_layout(raw, span)
    return "[" + opener + separator.join(parts) + closer + "]"


# where str.splitlines breaks and Python does not
_OTHER_BREAKS = set("\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def _split(text: str, old: list[str]) -> list[str]:
    """Lines as the old list was split. nbformat writes ``str.splitlines(keepends=True)``, which
    also breaks at form feed, U+2028 and the like: where an old line ends in one of those, so do
    the new ones; where one ends in a CR alone, at every break Python knows (CR, LF, CRLF); else
    at ``\\n`` only. A break the old list did not split at stays inside its line."""
    ends = {line[-1] for line in old[:-1] if line}
    if ends & _OTHER_BREAKS:
        return text.splitlines(keepends=True)
    if "\r" in ends:
        return python_lines(text, keepends=True)
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def _list_layout(raw: str, span: SourceSpan) -> tuple[str, str, str]:
    """What comes after ``[``, between two strings, and before ``]`` in the old list."""
    if span.items:
        (first, first_end), (_, last_end) = span.items[0], span.items[-1]
        opener, closer = raw[span.start + 1:first], raw[last_end:span.end - 1]
        if len(span.items) > 1:
            return opener, raw[first_end:span.items[1][0]], closer
        return opener, "," + (opener if "\n" in opener else _item_space(raw)), closer
    if "\n" not in raw.strip():
        return "", "," + _item_space(raw), ""
    line_start = raw.rfind("\n", 0, span.start) + 1
    indent = len(raw[line_start:span.start]) - len(raw[line_start:span.start].lstrip(" "))
    unit = _indent_unit(raw)
    return "\n" + " " * (indent + unit), ",\n" + " " * (indent + unit), "\n" + " " * indent


def _item_space(raw: str) -> str:
    """The space after a comma between values on one line (``", "`` or ``","``), as the file
    has it after its first top-level value."""
    members = _members(raw, _space(raw, 0))
    end = min((end for _, end in members.values()), default=0)
    after = raw[_space(raw, end):]
    return " " if after.startswith(", ") else ""


def _indent_unit(raw: str) -> int:
    match = re.search(r"\n( +)\"", raw)
    return len(match.group(1)) if match else 1


def _string(value: str, ascii_only: bool) -> str:
    """A JSON string; a lone surrogate (from a ``\\ud800`` escape) stays an escape either way."""
    dumped = json.dumps(value, ensure_ascii=ascii_only)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


def splice(raw: str, replacements: dict[int, str], spans: dict[int, SourceSpan]) -> str:
    """``raw`` with the source of each cell in ``replacements`` replaced by its new JSON."""
    out = raw
    for index in sorted(replacements, key=lambda i: spans[i].start, reverse=True):
        span = spans[index]
        out = out[:span.start] + replacements[index] + out[span.end:]
    return out
