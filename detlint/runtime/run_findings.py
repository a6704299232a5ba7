"""What ``detlint run`` knows, before the program starts, that it cannot fix: the findings in the
program file it was given whose fix is not one the run-time shim makes.

The launcher checks that file as ``detlint FILE`` would (its project's settings and pins) and hands
the result to the program's interpreter in one environment variable, which the boot script reads
and removes; the report at the program's exit lists them (``exit_report``)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional, Sequence

ENV_REPORT = "DETLINT_RUN_REPORT"
MAX_FINDINGS = 40  # the rest are counted: the variable must stay far below the kernel's 128 KiB
MAX_TEXT = 240
PYTHON = re.compile(r"python[\d.]*$")

# What each run-time action makes true whatever the program then does. A run-fix runs the insert
# that --fix would make, so a finding whose fix is that insert is covered; unset-env and xla-off
# only clean the environment the program starts with, and cannot undo what its code sets later.
COVERS_ANY_FINDING = {"check-hashseed": True, "data-deterministic": True, "unset-env": False, "xla-off": False}


def program_file(command: Sequence[str]) -> Optional[str]:
    """The Python file a command runs, as it names it: ``python [options] train.py ...`` or an
    executable ``train.py``; None for ``-c``, ``-m``, stdin and other programs."""
    if not command:
        return None
    if command[0].endswith(".py"):
        return command[0]
    if not PYTHON.match(Path(command[0]).name):
        return None
    args = iter(command[1:])
    for arg in args:
        if arg == "-":
            return None
        if arg.startswith("--"):
            if arg == "--check-hash-based-pycs":
                next(args, None)
            continue
        if not arg.startswith("-"):
            return arg
        for i, letter in enumerate(arg[1:], 2):  # a cluster of one-letter options: -uBc, -Wignore
            if letter in "cm":
                return None
            if letter in "WX":
                if i == len(arg):  # its value is the next argument
                    next(args, None)
                break
    return None


def covered_at_run_time(rule: Any, fix_spec: Optional[dict[str, Any]]) -> bool:
    """Does the run-time action of ``rule`` (a knowledge-base rule) remove the cause of a finding
    whose fix is ``fix_spec``?"""
    action = (rule.runtime or {}).get("action")
    if action == "run-fix":
        return (fix_spec or {}).get("action") == "insert"
    return COVERS_ANY_FINDING.get(action, False)


def check(name: str) -> dict[str, Any]:
    """The findings in the file ``name``, as the report at exit wants them; a file that cannot be
    checked gives a note instead."""
    path = Path(name)
    if not path.is_file():
        return {"program": name, "note": "not checked: no such file"}
    from detlint.knowledge.kb import load
    from detlint.lint.engine import Linter
    from detlint.settings.config import load_settings

    kb = load()
    settings = load_settings([path], known_codes=kb.rules, eras=kb.eras)
    diags = Linter(settings, kb).run([path]).diagnostics
    findings = [{"code": d.code, "where": f"{name}:{d.line}:{d.col + 1}",
                 "summary": _short(kb.rules[d.code].summary if d.code in kb.rules else d.message),
                 "covered": d.code in kb.rules and covered_at_run_time(kb.rules[d.code], d.fix_spec)}
                for d in diags]
    return {"program": name, "findings": findings[:MAX_FINDINGS], "more": max(0, len(findings) - MAX_FINDINGS)}


def payload(command: Sequence[str], changed: dict[str, str]) -> str:
    """The text of ``ENV_REPORT``: the variables the launcher set and the program file's findings.
    A failed check is a note in the report: the program runs all the same."""
    name = program_file(command)
    if name is None:
        found: dict[str, Any] = {"program": None, "note": "not checked: the command names no Python file"}
    else:
        try:
            found = check(name)
        except Exception as exc:  # noqa: BLE001 - the program must start whatever the linter does
            found = {"program": name, "note": _short(f"not checked: {type(exc).__name__}: {exc}")}
    return json.dumps({"set": changed, **found})


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 3] + "..."
