"""``--fix`` and ``--diff``: plan, apply and write fixes file by file, keeping files byte-faithful.

A file is rewritten only when the fixed text parses; encoding, BOM, line endings and permissions
are kept; the write is atomic (temporary file + rename). Fixing twice changes nothing the second
time, because each pass re-lints the fixed text and stops once nothing applicable is left.
libcst's walks recurse once per nesting level (a 400-term sum is 400 deep), so every one of
them runs on the deep stack parsing uses (``run_deep``).
"""
from __future__ import annotations

import codecs
import difflib
import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from detlint.lint.collect import collect
from detlint.lint.engine import Linter, read_source, real
from detlint.lint.escapes import shown
from detlint.fix.cleanup import tidy_after_fix
from detlint.fix.placement import DEFAULT_ALIASES, Position, seed_call
from detlint.fix.fixes import FixError, apply_plan, is_applicable, plan_for
from detlint.fix.inplace import LinkCensus, rewrite_in_place
from detlint.lint.ftypes import Diagnostic, Edit
from detlint.knowledge.kb import KnowledgeBase
from detlint.lint.files.line_breaks import position, python_lines
from detlint.lint.files.named_paths import within as _within
from detlint.lint.files.notebook import Notebook, NotebookError
from detlint.lint.files.sources import read_regular
from detlint.lint.files.whole_writes import replace_beside
from detlint.lint.isolation import run_deep

MAX_PASSES = 6
# the probe imports every module a fix names under its usual name ({tf}, {np}, {torch}, ...)
PROBE_IMPORTS = "".join(f"import {module} as {alias}\n" for module, alias in DEFAULT_ALIASES.items())
PROBE_ALIASES = {alias: alias for alias in DEFAULT_ALIASES.values()}


@dataclass
class FileFix:
    path: Path
    original: str
    fixed: str
    applied: list[Diagnostic] = field(default_factory=list)
    error: Optional[str] = None
    notes: list[str] = field(default_factory=list)
    # each pass: the text it started from and the findings it fixed (lines refer to that text)
    steps: list[tuple[str, list[Diagnostic]]] = field(default_factory=list)
    # findings whose fix is unsafe, left alone because --unsafe-fixes was not given
    withheld: int = 0

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


def _already_satisfied(kb: KnowledgeBase, diag: Diagnostic, inserted: list[str]) -> bool:
    """Does code inserted for an earlier finding already provide what this finding asks for?
    (keras.utils.set_random_seed seeds NumPy and random too.) Decided by linting the inserted
    lines against the rule's ``requires`` group, so the knowledge base stays the only source."""
    rule = kb.rules.get(diag.code)
    required = {check.get("requires") for check in rule.program} - {None} if rule else set()
    if not inserted or not required:
        return False
    probe = PROBE_IMPORTS + "".join(line.replace("{seed}", "0").format(**PROBE_ALIASES) + "\n"
                                    for line in inserted)
    facts = collect(kb, "<probe>", probe)
    return any(hit.owner in {f"group:{group}" for group in required} for hit in facts.hits)


def _select(kb: KnowledgeBase, diags: list[Diagnostic]) -> list[Diagnostic]:
    chosen: list[Diagnostic] = []
    inserted: list[str] = []
    for diag in sorted(diags, key=lambda d: (d.code, d.line, d.col)):
        spec = diag.fix_spec or {}
        if spec.get("action") == "insert":
            if _already_satisfied(kb, diag, inserted):
                continue
            inserted.extend(spec["code"])
        chosen.append(diag)
    return chosen


Site = tuple[tuple[int, int, int, int], str]


def _rewrite_sites(kb: KnowledgeBase, diags: list[Diagnostic]) -> dict[Path, list[Site]]:
    out: dict[Path, list[Site]] = {}
    for diag in diags:
        for path, span, op_id in diag.rewrite_sites:
            rewrite = kb.ops[op_id].rewrite or {}
            if rewrite.get("template"):
                out.setdefault(real(Path(path)), []).append((span, rewrite["template"]))
    return out


def fix_text(linter: Linter, path: Path, text: str, unsafe: bool,
             extra_sites: list[Site]) -> FileFix:
    result = FileFix(path, text, text)
    sites = list(extra_sites)
    linter.set_source(path, text)
    facts = linter.facts_of(path)
    library = unsafe and facts is not None and facts.error is None and not linter.is_entry(path, facts)
    beside_own_seed = True
    for _ in range(MAX_PASSES):
        linter.set_source(path, result.fixed)
        found = linter.lint_file(path, str(path), map_cells=False)
        if not unsafe and not result.steps:
            result.withheld = sum(1 for d in found if d.fix_spec and d.fix_safety == "unsafe")
        diags = [d for d in found if is_applicable(d, unsafe)]
        checked = linter.facts_of(path)
        if checked is not None and checked.error is not None:
            # a parser that died or ran past its time mid-fix: say so, do not pass the file as fixed
            result.error = f"not fixed: {checked.error}"
            break
        if library:
            # code in the functions of a library module serves every caller: seeding its
            # generators or dropping its jit_compile/workers arguments changes behaviour the
            # program never asked to change, so only its module-level statements get unsafe fixes
            kept = [d for d in diags if d.fix_safety != "unsafe" or _at_module_level(linter, path, d)]
            if len(kept) < len(diags) and LIBRARY_NOTE not in result.notes:
                result.notes.append(LIBRARY_NOTE)
            diags = kept
        for site in _rewrite_sites(linter.kb, diags).get(real(path), []):
            if site not in sites:
                sites.append(site)
        chosen = _select(linter.kb, diags)
        # a switch fix that took its warn-only form, or was withheld, because ops raise under it
        said = [str(d.fix_spec["raising-note"]) for d in [*chosen, *(found if unsafe else [])]
                if (d.fix_spec or {}).get("raising-note") and (d in chosen or d.fix_safety == "display")]
        result.notes.extend(note for note in said if note not in result.notes and not result.steps)
        if not chosen and not sites:
            break
        limit = min((d.line for d in chosen if (d.fix_spec or {}).get("action") == "insert"), default=None)
        # the program's own seed (a second parse) only when a chosen fix writes a seed
        own = _own_seed(linter, path, result.fixed, limit) if any(
            "{seed}" in repr(d.fix_spec) for d in chosen) else None
        seed = own[2] if own and own[2] else linter.settings.seed  # a literal, for fixes away from that call
        plan, used = plan_for(chosen, seed, sites, (own[0], own[1]) if own and beside_own_seed else None)
        if plan.seed_at is not None:
            beside_own_seed = False  # once: if the program still seeds too late, the next pass seeds at the top
        try:
            fixed, _ = run_deep(apply_plan, result.fixed, plan, limit, _reset_lines(linter, path))
        except FixError as exc:
            result.error = str(exc)
            break
        if plan.seed_at is not None and _still_reported(linter, path, fixed, used):
            continue  # seeding beside the program's own call came too late: the next pass seeds at the top
        sites = []
        if fixed == result.fixed:
            break
        result.steps.append((result.fixed, used))
        result.fixed = fixed
        result.applied.extend(used)
    if result.fixed != text and result.error is None:
        result.fixed = run_deep(tidy_after_fix, text, result.fixed)
    linter.set_source(path, result.fixed)
    return result


class WriteRefused(Exception):
    """A file detlint will not write: it would leave the project or override the user's choice."""


def writable_target(path: Path, project_root: Path) -> Path:
    """The file a fix of ``path`` would really write, or WriteRefused saying why not."""
    target = real(path)
    if target != path.absolute() and not _within(target, real(project_root)):
        raise WriteRefused(f"is a symlink to {target}, outside the project; not written")
    try:
        mode = target.stat().st_mode
    except OSError as exc:
        raise WriteRefused(f"cannot be written ({exc.strerror or exc}); not fixed") from exc
    if not stat.S_ISREG(mode):
        raise WriteRefused("is not a regular file; not written")
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise WriteRefused("is read-only; not fixed (make it writable to apply the fixes)")
    if not os.access(target, os.W_OK):
        raise WriteRefused("cannot be written (no permission, or a read-only file system); not fixed")
    return target


LIBRARY_NOTE = "unsafe fixes inside the functions of a library module are left to you (they would change every caller)"


def _at_module_level(linter: Linter, path: Path, diag: Diagnostic) -> bool:
    facts = linter.facts_of(path)
    scopes = {hit.scope for hit in (facts.hits if facts else []) if (hit.line, hit.col) == diag.target_span[:2]}
    return scopes == {None}


def _still_reported(linter: Linter, path: Path, text: str, used: list[Diagnostic]) -> bool:
    """Would the seeding findings that ``text`` was meant to fix still be reported?"""
    inserted = {d.code for d in used if (d.fix_spec or {}).get("action") == "insert"}
    linter.set_source(path, text)
    return any(d.code in inserted for d in linter.lint_file(path, str(path), map_cells=False))


def _own_seed(linter: Linter, path: Path, text: str, before_line: Optional[int]
              ) -> Optional[tuple[str, Position, Optional[str]]]:
    """The program's own seeding call in this file and its seed expression (see ``seed_call``)."""
    facts = linter.facts_of(path)
    calls = [(hit.line, hit.col) for hit in (facts.hits if facts else []) if hit.owner.endswith("-seeders")]
    return run_deep(seed_call, text, calls, before_line)


def _reset_lines(linter: Linter, path: Path) -> list[int]:
    """Module-level lines of calls that seeding must follow (the ``graph-resets`` group)."""
    facts = linter.facts_of(path)
    if facts is None:
        return []
    return [hit.line for hit in facts.hits if hit.owner == "group:graph-resets" and hit.scope is None]


def write_preserving(path: Path, text: str, data: bytes, encoding: str, project_root: Path,
                     census: Optional[LinkCensus] = None) -> None:
    """Write ``text`` as ``path`` was written: same encoding, BOM and mode; atomically (temporary
    file + rename). A file with several hard links, all inside the project, is rewritten in place
    instead, so every link keeps seeing it (see ``inplace``); ``data`` is what it holds now."""
    payload = text.encode(encoding if encoding != "utf-8-sig" else "utf-8")
    if data.startswith(codecs.BOM_UTF8) and not payload.startswith(codecs.BOM_UTF8):
        payload = codecs.BOM_UTF8 + payload
    target = writable_target(path, project_root)
    info = target.stat()
    if info.st_nlink > 1:
        if (census or LinkCensus()).names_outside(target, real(project_root)):
            raise WriteRefused("not written: hard-linked to a file outside the project (writing it would change "
                               "that file too; copy it to make it the project's own)")
        rewrite_in_place(target, payload, data)
        return
    replace_beside(target, payload, stat.S_IMODE(info.st_mode))


def fix_files(linter: Linter, files: list[Path], unsafe: bool, write: bool) -> list[FileFix]:
    """Fix every file that has applicable findings; program fixes may also rewrite calls in the
    project modules a program imports (bias_add on TF 1.14–2.0)."""
    first = linter.run(files).diagnostics
    applicable = [d for d in first if is_applicable(d, unsafe)]
    withheld = Counter(real(Path(d.path)) for d in first if not unsafe and d.fix_spec and d.fix_safety == "unsafe")
    sites = _rewrite_sites(linter.kb, applicable)
    by_path: dict[Path, Path] = {}
    for path in files:
        by_path.setdefault(real(path), path)
    targets = [by_path[real(Path(d.path))] if real(Path(d.path)) in by_path else Path(d.path) for d in applicable]
    targets += [by_path.get(p, p) for p in sites]
    results: list[FileFix] = []
    seen: set[Path] = set()
    census = LinkCensus()  # one walk of the project for all the hard-linked files written
    for path in targets:
        key = real(path)
        if key in seen:
            continue
        seen.add(key)
        source = read_source(path)
        if source.text is None:
            continue
        notebook = None
        text = source.text
        if path.suffix == ".ipynb":
            try:
                notebook = Notebook.parse(source.text)
            except NotebookError:
                continue
            text = notebook.source
        result = fix_text(linter, path, text, unsafe, sites.get(key, []))
        if notebook is not None:  # report and write the notebook, not the joined program
            try:
                fixed_json = notebook.with_source(result.fixed) if result.fixed != text else source.text
                result = FileFix(path, source.text, fixed_json, result.applied, result.error, result.notes)
            except NotebookError as exc:  # the fixed cells cannot be put back: nothing is written
                result = FileFix(path, source.text, source.text, [], f"not written ({exc})", result.notes)
        if result.changed and write and result.error is None:
            try:
                write_preserving(path, result.fixed, read_regular(path), source.encoding,
                                 linter.settings.project_root, census)
            except (WriteRefused, OSError) as exc:  # one file's problem; the run goes on
                reason = str(exc) if isinstance(exc, WriteRefused) else f"not written ({exc.strerror or exc})"
                result = FileFix(path, result.original, result.original, [], reason, result.notes)
        result.withheld = withheld.get(key, 0)
        results.append(result)
    # files with only unsafe fixes: nothing to do without --unsafe-fixes, but --diff says they wait
    results += [FileFix(by_path.get(key, key), "", "", withheld=count) for key, count in withheld.items()
                if key not in seen]
    return results


def unified_diff(result: FileFix, display: str) -> str:
    """The diff of a fix; the file's name in its headers is written out as the reports show it
    (a newline in a name would start a header of its own)."""
    name = shown(display)
    return "".join(difflib.unified_diff(python_lines(result.original, keepends=True),
                                        python_lines(result.fixed, keepends=True),
                                        fromfile=f"a/{name}", tofile=f"b/{name}"))


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def edits_between(old: str, new: str) -> list[Edit]:
    """The smallest replacements that turn ``old`` into ``new``: changed line blocks, trimmed to
    the characters that differ and widened to whole words (``False`` -> ``True``, not
    ``Fals`` -> ``Tru``). An insertion is a zero-width edit."""
    old_lines, new_lines = python_lines(old, keepends=True), python_lines(new, keepends=True)
    starts = [0]
    for line in old_lines:
        starts.append(starts[-1] + len(line))
    new_starts = [0]
    for line in new_lines:
        new_starts.append(new_starts[-1] + len(line))

    edits = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        a, b = starts[i1], starts[i2]  # old span
        c, d = new_starts[j1], new_starts[j2]  # new span
        while a < b and c < d and old[a] == new[c]:
            a, c = a + 1, c + 1
        while a < b and c < d and old[b - 1] == new[d - 1]:
            b, d = b - 1, d - 1
        if a < b or c < d:  # a replacement, not a pure insertion: whole words
            while a > starts[i1] and c > new_starts[j1] and _word(old[a - 1]) and old[a - 1] == new[c - 1]:
                a, c = a - 1, c - 1
            while b < starts[i2] and d < new_starts[j2] and _word(old[b]) and old[b] == new[d]:
                b, d = b + 1, d + 1
        (line, col), (end_line, end_col) = position(old, a), position(old, b)
        edits.append(Edit(line, col, end_line, end_col, new[c:d]))
    return edits


def _overlaps(a: Edit, b: Edit) -> bool:
    """Two edits overlap when their ranges intersect, or both insert at one point (their order
    would be ambiguous)."""
    a0, a1, b0, b1 = (a.line, a.col), (a.end_line, a.end_col), (b.line, b.col), (b.end_line, b.end_col)
    return a0 < b1 and b0 < a1 or a0 == b0 or (a0 == a1 and b0 < a0 < b1) or (b0 == b1 and a0 < b0 < a1)


def attach_edits(linter: Linter, diags: list[Diagnostic]) -> None:
    """Fill ``Diagnostic.edits`` (for JSON and SARIF) by applying each fix on its own."""
    texts: dict[str, Optional[str]] = {}
    taken: dict[str, list[Edit]] = {}
    for diag in sorted(diags, key=Diagnostic.sort_key):
        if not diag.fix_spec or diag.cell is not None:
            continue
        if diag.path not in texts:
            texts[diag.path] = read_source(Path(diag.path)).text
        text = texts[diag.path]
        if text is None:
            continue
        plan, used = plan_for([diag], linter.settings.seed)
        if not used:
            continue
        limit = diag.line if (diag.fix_spec or {}).get("action") == "insert" else None
        try:
            fixed, _ = run_deep(apply_plan, text, plan, limit, _reset_lines(linter, Path(diag.path)))
        except FixError:
            continue
        edits = edits_between(text, fixed)
        # every finding's edits stand alone and never overlap another's, so other tools can
        # apply them all at once; a finding whose fix collides keeps its fix for --fix only
        kept = taken.setdefault(diag.path, [])
        if edits and not any(_overlaps(e, k) for e in edits for k in kept):
            diag.edits = edits
            kept.extend(edits)
