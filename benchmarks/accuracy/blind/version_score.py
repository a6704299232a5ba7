"""Judge a blind round of framework versions per program (rounds 5 and on) with the method of
rounds 2-4: per labelled training program and framework, detlint's version (its `programs` entry
of --show-settings, else the project's) against the label's range, by the buckets of each
framework's determinism switch. Each round's score.py names its repositories and calls main().
"""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

KEYS = {"tensorflow": "tensorflow-version", "torch": "torch-version", "jax": "jax-version",
        "lightning": "lightning-version"}
# the buckets of each framework's determinism switch (upper bounds, exclusive)
EDGES = {"tensorflow": [(1, 14), (2, 1), (2, 8), (2, 16)], "torch": [(1, 7), (1, 8)], "jax": [(0, 3)],
         "lightning": [(1, 5)]}
FLOOR = {"tensorflow": (1, 13), "torch": (1, 0), "jax": (0, 1), "lightning": (1, 0)}
TITLE = {"tensorflow": "TensorFlow", "torch": "PyTorch", "jax": "JAX", "lightning": "PyTorch Lightning"}
# codes whose advice depends on the version (rounds 2-4)
VERSIONED = {"DET101", "DET201", "DET202", "DET301", "DET602", "DET603", "DET606", "DET701", "DET207",
             "DET404", "DET406", "DET612"}


def minor(text: str) -> tuple[int, int]:
    m = re.match(r"\s*(\d+)(?:\.(\d+))?", str(text))
    assert m, text
    return int(m.group(1)), int(m.group(2) or 0)


def span(label: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """'1.2-1.5' -> ((1,2),(1,5)); '1.4.0' -> ((1,4),(1,4))."""
    parts = [p for p in re.split(r"\s*(?:-|–|\.\.)\s*", str(label).strip()) if p]
    low, high = minor(parts[0]), minor(parts[-1])
    return low, high


def bucket(key: str, version: tuple[int, int]) -> int:
    return sum(version >= edge for edge in EDGES[key])


def judge(key: str, label: str, mine: str, specific: str | None) -> tuple[bool, bool, bool]:
    """(right by bucket, right strictly, detlint's version inside the label's range)."""
    low, high = span(label)
    got = minor(mine)
    inside = low <= got <= high
    buckets = set(range(bucket(key, low), bucket(key, high) + 1))
    floor = FLOOR[key]
    # the floor rule of rounds 2-4: a label older than the oldest release detlint knows is right at it
    strict = specific is not None and (minor(specific) == got or (minor(specific) < floor and got == floor))
    return inside or bucket(key, got) in buckets, strict or (specific is None and inside), inside


def main(HERE: Path, NAMES: list[str]) -> None:
    """Prints the tables of HERE/results.md and writes HERE/judged.jsonl."""
    judged = []
    per_repo: dict[str, Counter] = defaultdict(Counter)
    per_fw: dict[str, Counter] = defaultdict(Counter)
    findings_rows = []
    for name in NAMES:
        settings = json.loads((HERE / "runs" / f"{name}.settings.txt").read_text())
        findings = json.loads((HERE / "runs" / f"{name}.json").read_text())
        root = Path(settings["project-root"])
        programs = settings.get("programs", {})
        by_file = defaultdict(list)
        for f in findings:
            rel = Path(f["filename"]).resolve().relative_to(root).as_posix() if Path(f["filename"]).is_absolute() \
                else Path(f["filename"]).as_posix().removeprefix("./")
            by_file[rel].append(f)
        for line in (HERE / f"labels-{name}.jsonl").read_text().splitlines():
            if not line.strip():
                continue
            label = json.loads(line)
            if label["kind"] != "training":
                continue
            program = label["program"]
            if not (root / program).is_file():
                continue  # not in the checkout (a file the snapshot lacks): detlint never saw it
            row = {"repo": name, "program": program, "frameworks": {}}
            ok_all, strict_all, used = True, True, False
            for key, setting in KEYS.items():
                wanted = label["versions"].get(key)
                if not wanted:
                    continue
                used = True
                entry = programs.get(program, {})
                mine = entry.get(setting, settings[setting])
                source = entry.get(f"{setting}-source", settings[f"{setting}-source"])
                specific = (label.get("most_specific") or {}).get(key)
                right, strict, _ = judge(key, wanted, mine, specific)
                row["frameworks"][key] = {"label": wanted, "most_specific": specific, "detlint": mine,
                                          "source": source, "right": right, "strict": strict,
                                          "label_uses_git_date": "git-date" in (label.get("basis") or [])}
                per_fw[key]["pairs"] += 1
                per_fw[key]["right"] += right
                per_fw[key]["strict"] += strict
                ok_all &= right
                strict_all &= strict
            if not used:
                continue
            row["right"], row["strict"] = ok_all, strict_all
            row["label_uses_git_date"] = "git-date" in (label.get("basis") or [])
            judged.append(row)
            c = per_repo[name]
            c["programs"] += 1
            c["right"] += ok_all
            c["strict"] += strict_all
            c["dated"] += row["label_uses_git_date"]
            c["dated_right"] += row["label_uses_git_date"] and ok_all
            for f in by_file.get(program, []):
                if f["code"] not in VERSIONED:
                    continue
                c["versioned"] += 1
                wrong = [k for k, v in row["frameworks"].items() if not v["right"] and TITLE[k] in f["message"]]
                c["wrong_version_findings"] += bool(wrong)
                findings_rows.append({"repo": name, "program": program, "code": f["code"], "line": f["location"]["row"],
                                      "wrong_version": bool(wrong), "message": f["message"]})
    (HERE / "judged.jsonl").write_text("".join(json.dumps(r) + "\n" for r in judged + findings_rows))
    total = Counter()
    print("| repo | training programs | versions right (bucket) | wrong | right strict | labels using git dates (right) | version-dependent findings | on a wrong version |")
    print("|---|---|---|---|---|---|---|---|")
    for name in NAMES:
        c = per_repo[name]
        total += c
        print(f"| {name} | {c['programs']} | {c['right']} | {c['programs'] - c['right']} | {c['strict']} | "
              f"{c['dated']} ({c['dated_right']}) | {c['versioned']} | {c['wrong_version_findings']} |")
    t = total
    print(f"| **total** | {t['programs']} | {t['right']} ({100 * t['right'] / t['programs']:.1f} %) | "
          f"{t['programs'] - t['right']} | {t['strict']} ({100 * t['strict'] / t['programs']:.1f} %) | "
          f"{t['dated']} ({t['dated_right']}) | {t['versioned']} | {t['wrong_version_findings']} |")
    undated = t["programs"] - t["dated"]
    print(f"\nlabels not using git dates: {undated}, right {t['right'] - t['dated_right']}")
    print("\n| framework | pairs | right (bucket) | right strict |\n|---|---|---|---|")
    for key, c in per_fw.items():
        print(f"| {TITLE[key]} | {c['pairs']} | {c['right']} | {c['strict']} |")
    print("\nwrong:")
    for r in judged:
        if not r["right"]:
            bad = {k: (v["label"], v["detlint"], v["source"][:150]) for k, v in r["frameworks"].items() if not v["right"]}
            print(f"- {r['repo']} {r['program']}: {bad}")

