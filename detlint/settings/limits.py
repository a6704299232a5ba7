"""Limits on the size and form of settings.

A cloned repository's ``[tool.detlint]`` is data anyone can commit: 20,000 exclude patterns made
every run crawl, and a ``docs-url`` of ``{code:>300000000}`` wrote a 900 MB report. Each check
returns what is wrong in a few words (the caller names the setting and stops the run), or None.
"""
from __future__ import annotations

import re
from string import Formatter
from typing import Any, Iterable, Optional

MAX_ENTRIES = 1000  # items of a list setting, keys of a table setting, codes of a per-file-ignores entry
MAX_TEXT = 1024  # characters of one pattern, code, path or other string
MAX_URL = 2048  # characters of docs-url, as browsers and servers commonly accept
URL_FIELDS = ("code", "name", "anchor")


def size_problem(value: Any) -> Optional[str]:
    """A string longer than ``MAX_TEXT``, or a list or table (or a list in a table) with more
    than ``MAX_ENTRIES`` entries or a longer string in it."""
    items: Iterable[Any] = (value,)
    if isinstance(value, dict):
        items = [part for pair in value.items() for part in pair]
    elif isinstance(value, list):
        items = value
    if isinstance(value, (list, dict)) and len(value) > MAX_ENTRIES:
        return f"at most {MAX_ENTRIES} entries, got {len(value)}"
    for item in items:
        if isinstance(item, list) and item is not value:
            problem = size_problem(item)
            if problem:
                return problem
        if isinstance(item, str) and len(item) > MAX_TEXT:
            return f"at most {MAX_TEXT} characters in an entry, got {len(item)}"
    return None


def docs_url_problem(url: str) -> Optional[str]:
    """An absolute http(s) URL of at most ``MAX_URL`` characters whose placeholders are plain
    ``{code}``, ``{name}`` or ``{anchor}``: no format spec (``{code:>9}``), conversion, index or
    attribute, each of which makes an unbounded or surprising address."""
    usage = "must be an absolute http(s) URL (placeholders: {code}, {name}, {anchor})"
    if len(url) > MAX_URL:
        return f"{usage} of at most {MAX_URL} characters, got {len(url)}"
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in Formatter().parse(url) if name is not None]
    except ValueError as exc:  # an unmatched brace
        return f"{usage}: {exc}, in {url!r}"
    for name, spec, conversion in fields:
        if name not in URL_FIELDS or spec or conversion:
            return f"{usage}, written plainly; got {{{name}{'!' + conversion if conversion else ''}" \
                   f"{':' + spec if spec else ''}}} in {url!r}"
    if not re.match(r"^https?://\S+$", url):
        return f"{usage}, got {url!r}"
    return None
