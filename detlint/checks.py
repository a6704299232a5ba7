"""Turns collected facts into diagnostics for the target version: file rules and program rules."""
from __future__ import annotations

import string
from pathlib import Path
from typing import Any, Optional

from .config import Settings
from .ftypes import Diagnostic, FileFacts, Hit
from .kb import KnowledgeBase, Matcher, Rule
from .names import pretty
from .program import Program, TraceHit


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return ""


def render(template: str, **values: Any) -> str:
    """Fill ``{placeholders}``; unknown ones become empty, and doubled spaces are tidied."""
    text = string.Formatter().vformat(template, (), _Blank(values))
    return " ".join(text.split())


class Evaluator:
    def __init__(self, kb: KnowledgeBase, settings: Settings) -> None:
        self.kb = kb
        self.settings = settings
        self.version = settings.tf_version

    # ---- helpers -------------------------------------------------------------------------------
    def fix_text(self, rule: Rule) -> str:
        fix = rule.fix_for(self.version)
        return render(fix.title, seed=self.settings.seed, version=self.version) if fix else ""

    def fix_note(self, rule: Rule) -> str:
        fix = rule.fix_for(self.version)
        return render(str(fix.data.get("note", "")), version=self.version) if fix else ""

    def _applies(self, matcher: Matcher, keras_major: int) -> bool:
        return matcher.applies(self.version, keras_major)

    def effective_fix(self, rule: Rule, matcher: Optional[Matcher]) -> Optional[dict[str, Any]]:
        """The rule's fix for the target version, with the matched pattern's override on top."""
        fix = rule.fix_for(self.version)
        spec: dict[str, Any] = dict(fix.data) if fix else {}
        if matcher is not None and matcher.fix:
            spec.update(matcher.fix)
        if not spec.get("title"):
            return None
        if matcher is not None and spec.get("action") == "set-args":
            spec["positions"] = {name: cond.pos for name, cond in matcher.kwargs.items() if cond.pos is not None}
        spec.setdefault("safety", "display")
        spec["title"] = render(spec["title"], seed=self.settings.seed, version=self.version)
        return spec

    def _diagnostic(self, rule: Rule, message: str, path: str, hit: Hit, matcher: Optional[Matcher] = None,
                    line: Optional[int] = None, col: Optional[int] = None) -> Diagnostic:
        fix = self.effective_fix(rule, matcher)
        at_hit = line is None
        return Diagnostic(
            code=rule.code, name=rule.name, message=message, path=path,
            line=hit.line if at_hit else line, col=hit.col if at_hit else (col or 0),
            end_line=hit.end_line if at_hit else line, end_col=hit.end_col if at_hit else (col or 0),
            fix_title=fix["title"] if fix else None, fix_safety=fix["safety"] if fix else None,
            fix_spec=fix if fix and fix.get("action") else None,
        )

    # ---- file rules ----------------------------------------------------------------------------
    def file_diagnostics(self, display: str, facts: FileFacts) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        keras = self.settings.keras_major
        op_rules = [r for r in self.kb.rules.values() if r.scope == "file" and r.ops_status]
        for hit in facts.hits:
            kind, _, key = hit.owner.partition(":")
            if kind == "rule":
                rule = self.kb.rules[key]
                matcher = rule.matchers[hit.index]
                if not rule.versions.contains(self.version):
                    continue
                if not self._applies(matcher, keras) or (matcher.needs_framework and not facts.frameworks):
                    continue
                message = render(matcher.message or rule.message, api=pretty(hit.api), detail=hit.detail,
                                 label=render(matcher.label, api=pretty(hit.api)),
                                 value=hit.detail.partition(":")[2], version=self.version, keras=keras,
                                 fix=(self.effective_fix(rule, matcher) or {}).get("title", ""),
                                 note=self.fix_note(rule), seed=self.settings.seed)
                out.append(self._diagnostic(rule, message, display, hit, matcher))
            elif kind == "op":
                op = self.kb.ops[key]
                status = op.status_at(self.version)
                matcher = op.matchers[hit.index]
                if status is None or not self._applies(matcher, keras):
                    continue
                for rule in op_rules:
                    if status.status in rule.ops_status and rule.versions.contains(self.version):
                        note = render(status.note or rule.status_text.get(status.status, ""), version=self.version)
                        message = render(rule.message, api=pretty(hit.api), op=op.title, note=note,
                                         workaround=op.workaround, version=self.version)
                        out.append(self._diagnostic(rule, message, display, hit))
        return out

    # ---- program rules -------------------------------------------------------------------------
    def program_diagnostics(self, program: Program, display: str, relative: Any,
                            facts_of: Any) -> list[Diagnostic]:
        """Findings of the program whose entry is shown as ``display``; other files are named in
        messages by their project-relative path, so the CLI and flake8 say the same thing."""
        keras = self.settings.keras_major
        frameworks = any(getattr(facts_of(p), "frameworks", None) for p in program.modules)
        entry_hits = [th for th in program.all_hits if th.path == program.entry and not th.ordered]
        reachable = program.trace + entry_hits

        def matcher_of(th: TraceHit) -> Matcher:
            return self.kb.matcher(th.hit.owner, th.hit.index)

        def in_group(th: TraceHit, group: str) -> bool:
            if th.hit.owner != f"group:{group}":
                return False
            matcher = matcher_of(th)
            return self._applies(matcher, keras) and (frameworks or not matcher.needs_framework)

        trains = any(in_group(th, "training") for th in reachable)
        out: list[Diagnostic] = []
        for rule in self.kb.rules.values():
            if rule.scope != "program" or not rule.program or not rule.versions.contains(self.version):
                continue
            uses = [th for th in reachable if self._is_use(rule, th, in_group, trains)]
            if not uses:
                continue
            required = rule.program.get("requires")
            providers = [th for th in program.all_hits if required and in_group(th, required)]
            first = uses[0]
            late_after: Optional[TraceHit] = None
            if providers:
                if not rule.program.get("order") or any(not p.ordered for p in providers):
                    continue
                provider_ids = {id(p.hit) for p in providers}
                use_ids = {id(u.hit) for u in uses}
                first_provider = next(i for i, th in enumerate(program.trace) if id(th.hit) in provider_ids)
                first_use = next((i for i, th in enumerate(program.trace) if id(th.hit) in use_ids), None)
                if first_use is None or first_use > first_provider:
                    continue
                late_after = program.trace[first_provider]
            out.append(self._program_diagnostic(rule, program, first, uses, late_after, display, relative))
        return out

    def _is_use(self, rule: Rule, th: TraceHit, in_group: Any, trains: bool) -> bool:
        uses = rule.program["uses"] if rule.program else None
        if uses == "ops":
            kind, _, key = th.hit.owner.partition(":")
            if kind != "op":
                return False
            op = self.kb.ops[key]
            status = op.status_at(self.version)
            matcher = op.matchers[th.hit.index]
            return (status is not None and status.status in rule.ops_status
                    and self._applies(matcher, self.settings.keras_major)
                    and (op.phase == "forward" or trains))
        if not in_group(th, uses):
            return False
        return trains or not self.kb.matcher(th.hit.owner, th.hit.index).needs_training

    def _program_diagnostic(self, rule: Rule, program: Program, first: TraceHit, uses: list[TraceHit],
                            late_after: Optional[TraceHit], display: str, display_of: Any) -> Diagnostic:
        matcher = self.kb.matcher(first.hit.owner, first.hit.index)
        kind, _, key = first.hit.owner.partition(":")
        op = self.kb.ops[key].title if kind == "op" else ""
        where = ""
        if first.path != program.entry:
            where = f"(in {display_of(first.path)}:{first.hit.line})"
        late = ""
        if late_after is not None:
            late = f"{display_of(late_after.path)}:{late_after.hit.line}"
        template = rule.message_late if late_after is not None and rule.message_late else rule.message
        label = render(matcher.label, api=pretty(first.hit.api)) if matcher.label else f"{pretty(first.hit.api)}"
        message = render(template, api=pretty(first.hit.api), label=label, op=op, where=where,
                         version=self.version, keras=self.settings.keras_major, fix=self.fix_text(rule),
                         seeded_at=late, seed=self.settings.seed)
        line, col = (first.hit.line, first.hit.col) if first.path == program.entry else (
            first.anchor_line, first.anchor_col)
        diag = self._diagnostic(rule, message, display, first.hit, line=line, col=col)
        if first.path == program.entry:
            diag.end_line, diag.end_col = first.hit.end_line, first.hit.end_col
        if diag.fix_spec and diag.fix_spec.get("rewrite-ops"):
            wanted = set(diag.fix_spec["rewrite-ops"])
            for th in uses:
                kind, _, key = th.hit.owner.partition(":")
                if kind == "op" and key in wanted and self.kb.ops[key].rewrite:
                    span = (th.hit.line, th.hit.col, th.hit.end_line, th.hit.end_col)
                    diag.rewrite_sites.append((str(th.path), span, key))
        return diag
