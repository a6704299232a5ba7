"""Output formats: concise, full, json (ruff's fields), sarif 2.1.0, github annotations."""
from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Optional, Protocol, TextIO

from detlint._version import __version__
from detlint.settings.config import DEFAULT_SEVERITY
from detlint.knowledge.docs import rule_markdown, rule_url
from detlint.lint.escapes import github_data, github_property, shown
from detlint.lint.files.display import printable_name, uri_path
from detlint.lint.brief import one_line
from detlint.lint.confidence import RANK, marker
from detlint.lint.ftypes import Diagnostic
from detlint.knowledge.kb import KnowledgeBase


class SourceLines(Protocol):
    """The lines a finding's line numbers count: the file's, or for a notebook finding (called
    with its cell number) that cell's own source, not the notebook's JSON."""

    def __call__(self, path: str, cell: Optional[int] = None) -> list[str]: ...


def use_colour(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def _style(text: str, code: str, colour: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


def fixable(diag: Diagnostic, unsafe: bool = False) -> bool:
    has_fix = bool(diag.edits or diag.fix_spec)
    return has_fix and (diag.fix_safety == "safe" or (unsafe and diag.fix_safety == "unsafe"))


def _text(text: str) -> str:
    """Project text (a file name, a message quoting code) as the text formats print it."""
    return shown(printable_name(text))


def _widened(text: str) -> int:
    """How many columns longer ``text`` prints."""
    return len(_text(text)) - len(text)


def location(diag: Diagnostic) -> str:
    path = _text(diag.path)
    if diag.cell is not None:
        return f"{path}:cell {diag.cell}:{diag.line}:{diag.col + 1}"
    return f"{path}:{diag.line}:{diag.col + 1}"


def severity_of(code: str, levels: Optional[dict[str, str]] = None) -> str:
    """A finding's severity: the longest matching code or prefix in the ``severity`` setting,
    else ``warning`` for every rule; DET000 (detlint's own failure) is an ``error``."""
    best = max((p for p in (levels or {}) if p == "ALL" or code.startswith(p)), key=len, default=None)
    if best is not None:
        return (levels or {})[best]
    return "error" if code == "DET000" else DEFAULT_SEVERITY


def concise_line(diag: Diagnostic, colour: bool = False, unsafe: bool = False) -> str:
    """``path:line:col: CODE what; fix`` (lint/brief.py): the why is in the full output."""
    mark = " [*]" if fixable(diag, unsafe) else ""
    return (f"{_style(location(diag), '1', colour)}: {_style(diag.code, '1;31', colour)}{mark} "
            f"{_text(one_line(diag))}")


def write_concise(diags: list[Diagnostic], out: TextIO, summary: bool = True, unsafe_enabled: bool = False) -> None:
    colour = use_colour(out)
    for diag in diags:
        out.write(concise_line(diag, colour, unsafe_enabled) + "\n")
    if summary:
        write_summary(diags, out, unsafe_enabled)


def write_summary(diags: list[Diagnostic], out: TextIO, unsafe_enabled: bool = False) -> None:
    if not diags:
        out.write("All checks passed!\n")
        return
    count = len(diags)
    out.write(f"Found {count} error{'s' if count != 1 else ''}.\n")
    safe = sum(1 for d in diags if fixable(d))
    unsafe = sum(1 for d in diags if (d.edits or d.fix_spec) and d.fix_safety == "unsafe")
    if unsafe_enabled and safe + unsafe:  # --unsafe-fixes without --fix: say what --fix would now do
        out.write(f"[*] {safe + unsafe} fixable with the `--fix` option ({unsafe} of them unsafe).\n")
    elif safe:
        out.write(f"[*] {safe} fixable with the `--fix` option.\n")
    if unsafe and not unsafe_enabled:
        out.write(withheld_line(unsafe) + "\n")


def withheld_line(count: int) -> str:
    """Why ``count`` fixes were not applied, and how to apply them."""
    one = count == 1
    return (f"{count} hidden fix{'' if one else 'es'} can be enabled with the `--unsafe-fixes` option "
            f"({'it changes' if one else 'they change'} what the program computes: a seed, a determinism "
            f"switch, an argument; review the diff).")


def write_full(diags: list[Diagnostic], out: TextIO, source_lines: SourceLines, unsafe_enabled: bool = False,
               summary: bool = True) -> None:
    colour = use_colour(out)
    for diag in diags:
        out.write(concise_line(diag, colour, unsafe_enabled) + "\n")
        lines = source_lines(diag.path) if diag.cell is None else source_lines(diag.path, diag.cell)
        if 0 < diag.line <= len(lines):
            text = lines[diag.line - 1].rstrip("\r\n")
            gutter = len(str(diag.line))
            end = diag.end_col if diag.end_line == diag.line else len(text)
            # the carets go under the text as printed, where a control character takes 2 to 6 columns
            start, width = diag.col + _widened(text[:diag.col]), max(1, end - diag.col + _widened(text[diag.col:end]))
            out.write(f"{' ' * gutter} |\n{diag.line} | {_text(text)}\n")
            out.write(f"{' ' * gutter} | {' ' * start}{_style('^' * width, '1;31', colour)}\n")
        out.write(f"{' ' * 2}= why: {_text(diag.message + marker(diag))}\n")
        if diag.fix_title:
            out.write(f"{' ' * 2}= help: {_text(diag.fix_title)}\n")
        out.write("\n")
    if summary:
        write_summary(diags, out, unsafe_enabled)


def _edits_json(diag: Diagnostic) -> list[dict[str, object]]:
    return [{"content": e.content, "location": {"row": e.line, "column": e.col + 1},
             "end_location": {"row": e.end_line, "column": e.end_col + 1}} for e in diag.edits]


def json_records(diags: list[Diagnostic], kb: Optional[KnowledgeBase] = None,
                 severity: Optional[dict[str, str]] = None, docs_url: Optional[str] = None
                 ) -> list[dict[str, object]]:
    records = []
    for diag in diags:
        fix = None
        if diag.fix_title:
            fix = {"applicability": diag.fix_safety if diag.fix_spec else "display",
                   "message": diag.fix_title, "edits": _edits_json(diag)}
        records.append({
            "code": diag.code, "name": diag.name, "message": printable_name(diag.message),
            "filename": printable_name(str(Path(diag.path).absolute())),
            "location": {"row": diag.line, "column": diag.col + 1},
            "end_location": {"row": diag.end_line, "column": diag.end_col + 1},
            "fix": fix, "noqa_row": diag.line, "cell": diag.cell,
            "url": rule_url(kb.rules[diag.code], docs_url) if kb and diag.code in kb.rules else None,
            "severity": severity_of(diag.code, severity),
            "confidence": diag.confidence, "unsure": diag.unsure or None,
        })
    return records


def write_json(diags: list[Diagnostic], out: TextIO, kb: Optional[KnowledgeBase] = None,
               severity: Optional[dict[str, str]] = None, docs_url: Optional[str] = None) -> None:
    json.dump(json_records(diags, kb, severity, docs_url), out, indent=2)
    out.write("\n")


def _uri(path: str, root: Path) -> str:
    try:
        return uri_path(Path(path).resolve().relative_to(root.resolve()).as_posix())
    except ValueError:
        return Path(path).resolve().as_uri()


SARIF_PROBLEM = {"error": "error", "warning": "warning", "note": "recommendation"}


def sarif_document(diags: list[Diagnostic], kb: KnowledgeBase, root: Path,
                   severity: Optional[dict[str, str]] = None, docs_url: Optional[str] = None) -> dict[str, object]:
    rules = []
    for rule in kb.rules.values():
        level = severity_of(rule.code, severity)
        descriptor: dict[str, object] = {
            "id": rule.code, "name": rule.name,
            "shortDescription": {"text": rule.summary[:1024]},
            "fullDescription": {"text": rule_markdown(rule)[:1024]},
            "help": {"text": rule_markdown(rule), "markdown": rule_markdown(rule)},
            "defaultConfiguration": {"level": level},
            "properties": {"tags": ["reproducibility", rule.area], "precision": "high",
                           "problem.severity": SARIF_PROBLEM[level]},
        }
        url = rule_url(rule, docs_url)
        if url:
            descriptor["helpUri"] = url
        rules.append(descriptor)
    index = {code: i for i, code in enumerate(kb.rules)}
    results = []
    for diag in diags:
        uri = _uri(diag.path, root)
        result: dict[str, object] = {
            "ruleId": diag.code, "level": severity_of(diag.code, severity),
            "message": {"text": printable_name(diag.message)},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": uri},
                "region": {"startLine": diag.line, "startColumn": diag.col + 1,
                           "endLine": max(diag.end_line, diag.line),
                           "endColumn": max(diag.end_col + 1, 1)}}}],
        }
        if diag.code in index:
            result["ruleIndex"] = index[diag.code]
        result["rank"] = RANK[diag.confidence]
        result["properties"] = {"confidence": diag.confidence, **({"unsure": diag.unsure} if diag.unsure else {}),
                                **({"cell": diag.cell} if diag.cell is not None else {})}
        if diag.edits:
            result["fixes"] = [{"description": {"text": diag.fix_title or ""}, "artifactChanges": [{
                "artifactLocation": {"uri": uri},
                "replacements": [{"deletedRegion": {"startLine": e.line, "startColumn": e.col + 1,
                                                    "endLine": e.end_line, "endColumn": e.end_col + 1},
                                  "insertedContent": {"text": e.content}} for e in diag.edits]}]}]
        results.append(result)
    driver: dict[str, object] = {"name": "detlint", "version": __version__, "semanticVersion": __version__}
    if docs_url and "{" not in docs_url:
        driver["informationUri"] = docs_url.split("#")[0]
    driver["rules"] = rules
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
        "runs": [{"tool": {"driver": driver},
                  "originalUriBaseIds": {"%SRCROOT%": {"uri": root.resolve().as_uri() + "/"}},
                  "results": results}],
    }


GITHUB_COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}


def write_github(diags: list[Diagnostic], out: TextIO, severity: Optional[dict[str, str]] = None) -> None:
    for diag in diags:
        command = GITHUB_COMMANDS[severity_of(diag.code, severity)]
        out.write(f"::{command} title=detlint ({diag.code}),file={github_property(printable_name(diag.path))},"
                  f"line={diag.line},col={diag.col + 1},"
                  f"endLine={diag.end_line},endColumn={diag.end_col + 1}::"
                  f"{github_data(f'{location(diag)}: {diag.code} {_text(diag.message + marker(diag))}')}\n")


def write_statistics(diags: list[Diagnostic], out: TextIO, fmt: str = "concise", unsafe: bool = False) -> None:
    """Counts per rule, most frequent first, instead of the findings (as ruff's --statistics)."""
    counts = Counter((d.code, d.name) for d in diags)
    can_fix = Counter(d.code for d in diags if fixable(d, unsafe))
    # as ruff: a rule whose fixes need --unsafe-fixes is fixable, and says how
    unsafe_fix = Counter(d.code for d in diags if (d.edits or d.fix_spec) and d.fix_safety == "unsafe")
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if fmt == "json":
        json.dump([{"code": code, "name": name, "count": count, "fixable": can_fix[code] + unsafe_fix[code] > 0,
                    "fix_applicability": "safe" if can_fix[code] and not unsafe_fix[code] else
                    "unsafe" if unsafe_fix[code] else None}
                   for (code, name), count in rows], out, indent=2)
        out.write("\n")
        return
    for (code, name), count in rows:
        out.write(f"{count:>5}\t{code}\t{name}\n")


def emit(fmt: str, diags: list[Diagnostic], kb: KnowledgeBase, root: Path, source_lines: SourceLines,
         out: TextIO = sys.stdout, unsafe_enabled: bool = False, severity: Optional[dict[str, str]] = None,
         docs_url: Optional[str] = None, summary: bool = True) -> None:
    if fmt == "json":
        write_json(diags, out, kb, severity, docs_url)
    elif fmt == "sarif":
        json.dump(sarif_document(diags, kb, root, severity, docs_url), out, indent=2)
        out.write("\n")
    elif fmt == "github":
        write_github(diags, out, severity)
    elif fmt == "full":
        write_full(diags, out, source_lines, unsafe_enabled, summary)
    else:
        write_concise(diags, out, summary, unsafe_enabled=unsafe_enabled)


class Progress:
    """``files done / total`` on stderr while a long run works: only on a terminal (never under
    pre-commit or CI, never mixed into the report), and only once the run has taken a second
    (``DETLINT_PROGRESS_DELAY`` seconds where set) or has more than ``MIN_FILES`` files. The line
    is erased at the end."""

    MIN_FILES = 50
    DELAY = 1.0
    DELAY_ENV = "DETLINT_PROGRESS_DELAY"  # what "long" means, for tests that must not depend on a machine's speed
    INTERVAL = 0.1

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream = total, stream
        self.delay = self._delay()
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False
        self.read = self.checked = self.cached = 0

    @classmethod
    def _delay(cls) -> float:
        try:
            value = float(os.environ.get(cls.DELAY_ENV, cls.DELAY))
        except ValueError:
            return cls.DELAY
        return value if value >= 0 else cls.DELAY  # nan fails the comparison too

    @classmethod
    def create(cls, total: int, stream: TextIO, enabled: bool = True) -> Optional["Progress"]:
        stream = getattr(stream, "passthrough", stream)  # not part of a replayed report (replay.Tee)
        if not enabled or not total or not (hasattr(stream, "isatty") and stream.isatty()):
            return None
        return cls(total, stream)

    def update(self, read: int = 0, checked: int = 0, cached: Optional[int] = None) -> None:
        self.read += read
        self.checked += checked
        if cached is not None:
            self.cached = cached
        now = time.monotonic()
        if not self.shown and self.total <= self.MIN_FILES and now - self.start < self.delay:
            return
        last = self.checked == self.total
        if self.shown and not last and now - self.last < self.INTERVAL:
            return
        self.last, self.shown = now, True
        if self.checked:
            text = f"detlint: checked {self.checked}/{self.total} files"
        else:
            text = f"detlint: read {self.read}/{self.total} files ({self.cached} from the cache)"
        self.stream.write(f"\r\x1b[K{text}")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
