"""Fuzzing the fixer: fixtures mutated line by line (seeded, bounded in time). For every mutant:
no internal error, and where fixes apply, the result parses, a second --fix changes nothing, and
every statement no fix names is still there byte for byte."""
from __future__ import annotations

import random
import time
from pathlib import Path

import libcst as cst

from conftest import FIXTURES, ROOT, make_linter
from detlint.fix import autofix
from kept import lost_in_fix

SOURCES = sorted(p for p in FIXTURES.rglob("*.py") if not p.name.endswith(".out.py")) + sorted(
    (ROOT / "examples").rglob("*.py"))
BUDGET_S = 40.0
MUTANTS = 400
MIN_TRIED, MIN_FIXED = 50, 10


def mutate(lines: list[str], donor: list[str], rng: random.Random) -> list[str]:
    out = list(lines)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(out) + 1)
        kind = rng.choice(["drop", "duplicate", "swap", "graft", "indent", "dedent"])
        if kind == "graft" and donor:
            out.insert(i, rng.choice(donor))
        elif not out:
            continue
        elif kind == "drop":
            del out[min(i, len(out) - 1)]
        elif kind == "duplicate":
            j = min(i, len(out) - 1)
            out.insert(j, out[j])
        elif kind == "swap":
            j, k = rng.randrange(len(out)), rng.randrange(len(out))
            out[j], out[k] = out[k], out[j]
        elif kind == "indent":
            j = min(i, len(out) - 1)
            out[j] = "    " + out[j]
        else:
            j = min(i, len(out) - 1)
            out[j] = out[j][4:] if out[j].startswith("    ") else out[j]
    return out


def parses(text: str) -> bool:
    try:
        cst.parse_module(text)
        compile(text, "<mutant>", "exec")
        return True
    except (cst.ParserSyntaxError, SyntaxError, ValueError):
        return False


def compiles(text: str) -> bool:
    try:
        compile(text, "<mutant>", "exec")
        return True
    except (SyntaxError, ValueError):
        return False


def test_fuzzed_fixtures_never_lose_code_or_crash(tmp_path: Path) -> None:
    rng = random.Random(20261123)
    texts = [p.read_text(encoding="utf-8") for p in SOURCES]
    start = time.monotonic()
    tried = fixed = 0
    # the seeded mutants up to the minimum are always checked, however slow the machine: time
    # only bounds the extra ones (a loaded run once stopped at 85 mutants with 9 fixed)
    while tried < MUTANTS and (tried < MIN_TRIED or fixed < MIN_FIXED or time.monotonic() - start < BUDGET_S):
        index = rng.randrange(len(texts))
        lines = texts[index].splitlines(keepends=True)
        donor = texts[rng.randrange(len(texts))].splitlines(keepends=True)
        source = "".join(mutate(lines, donor, rng))
        path = tmp_path / f"m{tried}.py"
        path.write_text(source, encoding="utf-8")
        tried += 1
        version = rng.choice(["1.15", "2.4", "2.7", "2.12", "2.21"])
        diags = make_linter(version, root=tmp_path).run([path]).diagnostics
        assert not [d for d in diags if d.code == "DET000"], (source, [d.message for d in diags])
        unsafe = rng.random() < 0.7
        results = autofix.fix_files(make_linter(version, root=tmp_path), [path], unsafe=unsafe, write=True)
        for result in results:
            assert result.error is None or "left unchanged" in result.error, result.error
            if not result.changed:
                continue
            fixed += 1
            after = path.read_text(encoding="utf-8")
            # a fix never breaks code: what both parsers read stays readable to both; a file only
            # Python reads (a tab after spaces, which libcst's tokenizer refuses) stays runnable
            assert parses(after) or (not parses(source) and compiles(source) and compiles(after)), (source, after)
            assert not lost_in_fix(result), (source, after)
            again = autofix.fix_files(make_linter(version, root=tmp_path), [path], unsafe=unsafe, write=False)
            assert not [r for r in again if r.changed], (source, after)
        path.unlink()
    print(f"fuzz: {tried} mutants, {fixed} fixed")
    assert tried >= MIN_TRIED and fixed >= MIN_FIXED, (tried, fixed)
