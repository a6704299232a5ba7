"""The report ``detlint run`` prints on stderr when the program exits: what was set before it
started, what ``apply()`` did at start and at each framework's import, what stayed pending (the
framework was never imported), what could not be fixed at run time, and the findings in the
program that the launcher cannot fix (``run_findings``).

It is printed once, by the process the launcher started: the boot script removes the variable
that asks for it, so the program's own Python subprocesses do not print it again, and a forked
copy of the process does not either (the pid is checked)."""
from __future__ import annotations

import atexit
import json
import os
import sys
from typing import Any, Optional, TextIO

from detlint.runtime.shim import ALREADY, DONE, ENV_LINE, FAILED, PENDING, UNFIXABLE, Action, Report, _already_set

HEADER = "detlint run: report"


def install(report: Optional[Report], payload: str, verbose: bool) -> None:
    """Print the report when this process exits (after the program's own exit handlers)."""
    try:
        found: dict[str, Any] = json.loads(payload)
    except ValueError:
        found = {"note": "not checked: the launcher's findings did not arrive"}
    readers = _env_readers()
    pid = os.getpid()

    def at_exit() -> None:
        if os.getpid() != pid:
            return
        try:
            if report is not None:
                recheck_environment(report, readers)
            for stream in (sys.stdout, sys.__stdout__):  # the program's output comes first
                if stream is not None:
                    stream.flush()
            err: Optional[TextIO] = sys.stderr or sys.__stderr__
            if err is not None:
                err.write(render(report, found, verbose))
                err.flush()
        except Exception:  # noqa: BLE001 - a closed stream at exit: the program's exit code stands
            pass

    atexit.register(at_exit)


def _env_readers() -> dict[str, tuple[str, ...]]:
    """Rule code -> the imports that start its framework (and read its environment switches)."""
    from detlint.knowledge.frameworks import FRAMEWORKS
    from detlint.knowledge.kb import load

    return {code: FRAMEWORKS[rule.framework].starts for code, rule in load().rules.items()
            if rule.framework in FRAMEWORKS}


def recheck_environment(report: Report, readers: dict[str, tuple[str, ...]]) -> None:
    """An environment switch in place at start that the program then replaced (``XLA_FLAGS = ...``
    before importing JAX) was not in force when its framework, imported since, read it."""
    for action in report.actions:
        lines = action.what.split("; ")
        if action.status not in (DONE, ALREADY) or not all(ENV_LINE.search(line) for line in lines):
            continue
        if _already_set(lines) or not any(m in sys.modules for m in readers.get(action.code, ())):
            continue
        names = sorted({m.group("name") for m in map(ENV_LINE.search, lines) if m is not None})
        action.status = UNFIXABLE
        action.detail = (f"the program changed {', '.join(names)} after detlint run set it; keep the value "
                         "in what the program sets")


def render(report: Optional[Report], found: dict[str, Any], verbose: bool = False) -> str:
    program = found.get("program")
    seed = f"seed {report.seed}" if report is not None else "apply() failed"
    out = [f"{HEADER} on {program}, {seed}" if program else f"{HEADER}, {seed}"]
    if found.get("set"):
        out.append("  set before the program started: " + " ".join(f"{k}={v}" for k, v in found["set"].items()))
    actions = report.actions if report is not None else []
    groups: dict[str, list[str]] = {}
    for action in actions:
        title, line = _place(action, verbose)
        if title:
            groups.setdefault(title, []).append(line)
    order = ["applied at start"] + sorted(t for t in groups if t.startswith("applied when")) + [
        "pending", "unfixable at run time", "not needed or already in place"]
    for title in order:
        if title in groups:
            out.append(f"  {title}:")
            out.extend(f"    {line}" for line in groups[title])
    out.extend(_left_to_you(found, {a.code for a in actions if a.status in (UNFIXABLE, FAILED)}))
    return "\n".join(out) + "\n"


def _place(action: Action, verbose: bool) -> tuple[Optional[str], str]:
    """The section an action goes in, and its line there."""
    line = f"{action.code}  {action.what}"
    if action.status == DONE:
        title = f"applied when {action.waits_for} was imported" if action.waits_for else "applied at start"
        return title, line + (f" ({action.detail})" if action.detail else "")
    if action.status == PENDING:
        return "pending", f"{line} ({action.waits_for} was never imported)"
    if action.status in (UNFIXABLE, FAILED):
        return "unfixable at run time", f"{line} ({'failed: ' if action.status == FAILED else ''}{action.detail})"
    return ("not needed or already in place" if verbose else None), f"{line} ({action.detail or action.status})"


def _left_to_you(found: dict[str, Any], unfixed_codes: set[str]) -> list[str]:
    program = found.get("program")
    if found.get("note"):
        return [f"  left to you: {found['note']}"]
    left = [f for f in found.get("findings", []) if not f.get("covered") or f.get("code") in unfixed_codes]
    if not left and not found.get("more"):
        return [f"  left to you: nothing detlint knows of in {program}"]
    out = [f"  left to you, in the code (detlint run cannot fix these; `detlint {program}` shows the fixes):"]
    out.extend(f"    {f['where']}  {f['code']}  {f['summary']}" for f in left)
    if found.get("more"):
        out.append(f"    and up to {found['more']} more; `detlint {program}` lists them")
    return out
