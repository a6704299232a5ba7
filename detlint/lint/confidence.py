"""How sure a finding is: every link from the program to the evidence resolved (``certain``), one
assumption made (``likely``: a candidate of a lookup by name, a run with the default options, a
condition on a run-time value), or a link detlint could not resolve (``possible``: code no
training program was seen to reach)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Optional

from detlint.lint.ftypes import Diagnostic, Hit, top_scope
from detlint.lint.programs.program import Program, TraceHit

LEVELS = ("certain", "likely", "possible")
DEFAULT_MIN = "likely"
# SARIF's rank (0-100): how likely a result is a real problem
RANK = {"certain": 90.0, "likely": 60.0, "possible": 30.0}


def unfollowed(th: TraceHit) -> str:
    top = top_scope(th.hit.scope)
    return (f"assumes {top} runs: the program names it, but detlint did not see the call" if top
            else "the program reaches this line through a call detlint cannot follow")


def at_least(level: str, minimum: str) -> bool:
    return LEVELS.index(level) <= LEVELS.index(minimum)


def lower(diag: Diagnostic, level: str, why: str) -> None:
    """Lower ``diag`` to ``level`` (never raise it), keeping the first reason at that level."""
    if LEVELS.index(level) > LEVELS.index(diag.confidence):
        diag.confidence, diag.unsure = level, why


def chosen(program: Program, th: TraceHit) -> Optional[str]:
    """What a lookup by name chose on the way to ``th`` (``one of 12 callables of vits``), if any."""
    return next((program.choices[step] for step in th.via if step in program.choices), None)


def of_trace(program: Program, th: TraceHit) -> tuple[str, str]:
    """The confidence the path from the program's entry to ``th`` allows."""
    if th.off_default:  # a branch the default options never take: runs only on request
        path, line = th.optional or (th.path, th.hit.line)
        return "possible", f"only on a branch a run with the defaults does not take ({path.name}:{line})"
    if not th.ordered:
        return "likely", unfollowed(th)
    choice = chosen(program, th)
    if choice:  # "one of 12 callables of vits", "assumes trainer is a Trainer (trainer.py)"
        return "likely", choice if choice.startswith("assumes ") else f"assumes the program runs it: {choice}"
    return "certain", ""


def of_training(program: Program, training: Iterable[TraceHit]) -> tuple[str, str]:
    """The confidence that the program trains at all: the surest of its training calls."""
    best = ("possible", "the program's training was not seen")
    for th in training:
        level = of_trace(program, th)
        if LEVELS.index(level[0]) < LEVELS.index(best[0]):
            best = level
    return best


class FileReach:
    """For one file's own findings: how surely the programs that train reach each of its hits.
    A hit in a function no such program's trace reached is an unresolved link (``possible``),
    unless the file is the program's own and names the function (``likely``: handed, say, to a
    library call) or no file imports the module (its users' calls are assumed: ``likely``);
    module-level code runs when the module is imported (``likely``)."""

    def __init__(self, path: Path, runners: list[Program], unreferenced: Iterable[str],
                 named_elsewhere: Callable[[str], bool], imported: bool, entry: bool = False,
                 defined_at: Optional[dict[str, int]] = None, configured: Iterable[str] = (),
                 named_in_programs: Callable[[str], str] = lambda name: "",
                 unused: Callable[[Hit, bool], str] = lambda hit, reached: "") -> None:
        self.levels: dict[tuple[int, int], tuple[str, str]] = {}
        self.runners, self.unreferenced = bool(runners), set(unreferenced)
        self.named_elsewhere, self.imported, self.entry = named_elsewhere, imported, entry
        self.defined_at, self.configured = defined_at or {}, set(configured)
        self.named_in_programs = named_in_programs  # a file of a training program naming it, or ""
        self.unused = unused  # why a hit's code never runs (programs/unused.py), or ""
        for program in runners:
            for th in program.trace:  # the rest: unreached() says how sure
                if th.path != path:
                    continue
                level = of_trace(program, th)
                for key in {th.hit.span[:2], (th.hit.line, th.hit.col)}:
                    old = self.levels.get(key)
                    if old is None or LEVELS.index(level[0]) < LEVELS.index(old[0]):
                        self.levels[key] = level

    def unreached(self, hit: Hit) -> tuple[str, str]:
        top = top_scope(hit.scope)
        if hit.off_by_default:  # `if ASFF:` with ASFF = False just before, `if args.fast:` off by default
            return "possible", f"only on a branch a run with the defaults does not take (line {hit.line})"
        # module-level code runs when the module is imported, and so do a def's decorators and defaults
        if not top or hit.line <= self.defined_at.get(hit.scope or "", 0):
            return "likely", "assumes the module's users train with it"
        if top in self.configured:
            return "likely", f"assumes {top}, one of the classes the project's configs name, runs"
        if self.entry and top not in self.unreferenced:
            return "likely", f"assumes {top} runs: the program names it, but detlint did not see the call"
        # in a file the project's programs use (not a library's API, which its users call)
        if self.imported and top in self.unreferenced and not self.named_elsewhere(top):
            return "possible", f"nothing in the project calls {top}"
        if not self.runners and not self.imported:  # a module nothing imports: the project's API
            return "likely", "assumes the module's users train with it"
        named_by = self.named_in_programs(top)
        if named_by:  # handed on, say, to a library call (compile(loss=...)) the trace does not follow
            return "likely", f"assumes {top} runs: {named_by} names it, but detlint did not see the call"
        # an unresolved link: no training program was seen to call it
        return "possible", f"no training program was seen to call {top}"

    def apply(self, diags: list[Diagnostic], hits: list[Hit]) -> None:
        by_position: dict[tuple[int, int], Hit] = {}
        for h in hits:
            by_position.setdefault(h.span[:2], h)
            by_position.setdefault((h.line, h.col), h)
        for diag in diags:
            hit = by_position.get((diag.line, diag.col))
            if hit is None:
                continue  # not one of this file's hits (a program finding placed elsewhere)
            level, why = self.levels.get((diag.line, diag.col)) or self.unreached(hit)
            lower(diag, level, why)
            never = self.unused(hit, (diag.line, diag.col) in self.levels)
            if never:
                lower(diag, "possible", never)


def marker(diag: Diagnostic, why: bool = True) -> str:
    """What a report appends to a finding that is not certain: `` [likely: why]``, or `` [likely]``
    on a concise line (the why is in the full output)."""
    if diag.confidence == "certain":
        return ""
    return f" [{diag.confidence}: {diag.unsure}]" if why else f" [{diag.confidence}]"
