"""Scores of a findings round from its judged files: precision per framework and rule (findings
judged TP / all findings), recall per framework and rule (expected findings found / expected
findings whose label the judge kept), traps fired. Usage: python score.py [DIR]"""
from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

here = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)


def framework_of(label: dict) -> str:
    v = label.get("versions") or {}
    if v.get("jax"):
        return "JAX"
    if v.get("torch") or v.get("lightning"):
        return "PyTorch"
    return "TensorFlow"


prec = collections.defaultdict(lambda: [0, 0])  # key -> [TP, all]
rec = collections.defaultdict(lambda: [0, 0])  # key -> [found, countable]
fp_reasons = collections.Counter()
traps = [0, 0]
set_aside = collections.Counter()
per_repo = []
for judged in sorted(here.glob("judged-*.jsonl")):
    name = judged.stem.split("-", 1)[1]
    labels = {row["program"]: row for row in map(json.loads, (here / f"labels-{name}.jsonl").read_text().splitlines()) if row}
    rows = [json.loads(line) for line in judged.read_text().splitlines() if line.strip()]
    repo = collections.Counter()
    for r in rows:
        if r["kind"] == "finding" and r.get("verdict") == "skip":  # out of the labelled scope
            continue
        elif r["kind"] == "finding":
            fw = "Keras3" if r.get("framework") == "Keras3" else r.get("framework", "?")
            for key in (("all", "all"), (fw, "all"), (fw, r["code"])):
                prec[key][1] += 1
                prec[key][0] += r["verdict"] == "TP"
            repo["TP" if r["verdict"] == "TP" else "FP"] += 1
            if r["verdict"] != "TP":
                fp_reasons[r["reason"]] += 1
        elif r["kind"] == "expected":
            if not r.get("label_ok", True):
                set_aside[r["code"]] += 1
                continue
            fw = framework_of(labels.get(r["program"], {}))
            for key in (("all", "all"), (fw, "all"), (fw, r["code"])):
                rec[key][1] += 1
                rec[key][0] += bool(r["found"])
            repo["found" if r["found"] else "missed"] += 1
        elif r["kind"] == "trap":
            traps[1] += 1
            traps[0] += bool(r["fired"])
            repo["traps fired"] += bool(r["fired"])
    per_repo.append((name, repo))


def ratio(pair: list[int]) -> str:
    return f"{pair[0]}/{pair[1]} = {pair[0] / pair[1]:.2f}" if pair[1] else "-"


print("| framework | precision | recall |\n|---|---|---|")
for fw in ("PyTorch", "TensorFlow", "JAX", "all"):
    print(f"| {fw} | {ratio(prec[(fw, 'all')])} | {ratio(rec[(fw, 'all')])} |")
print("\n| framework | rule | precision | recall |\n|---|---|---|---|")
keys = sorted({k for k in list(prec) + list(rec) if k[1] != "all"})
for fw, code in keys:
    print(f"| {fw} | {code} | {ratio(prec[(fw, code)])} | {ratio(rec[(fw, code)])} |")
print(f"\nfalse alarms by reason: {dict(fp_reasons.most_common())}")
print(f"traps fired: {traps[0]} of {traps[1]}; labels set aside by the judges: {dict(set_aside)}")
print("\n| repository | TP | FP | expected found | missed | traps fired |\n|---|---|---|---|---|---|")
for name, c in per_repo:
    print(f"| {name} | {c['TP']} | {c['FP']} | {c['found']} | {c['missed']} | {c['traps fired']} |")
