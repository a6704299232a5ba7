"""Precision per confidence level (as detlint's run gave it), and precision and recall at the
default minimum (likely: an expected finding counts as found only through a finding shown by
default), from the judged files of a round. Usage: python confidence.py [DIR]"""
from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

here = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
levels = collections.defaultdict(lambda: [0, 0])  # (framework, confidence) -> [TP, all]
recall = collections.defaultdict(lambda: [0, 0])  # framework -> [found by default, countable]
for judged in sorted(here.glob("judged-*.jsonl")):
    name = judged.stem.split("-", 1)[1]
    run = json.loads((here / "runs" / f"{name}.json").read_text())
    labels = {r["program"]: r for r in map(json.loads, filter(str.strip, (here / f"labels-{name}.jsonl").read_text().splitlines()))}
    for row in map(json.loads, filter(str.strip, judged.read_text().splitlines())):
        if row["kind"] == "expected" and row.get("label_ok", True):
            versions = labels.get(row["program"], {}).get("versions") or {}
            fw = "JAX" if versions.get("jax") else "PyTorch" if versions.get("torch") or versions.get("lightning") \
                else "TensorFlow"
            shown = row["found"] and row.get("finding") is not None and run[row["finding"]]["confidence"] != "possible"
            for key in (fw, "all"):
                recall[key][1] += 1
                recall[key][0] += bool(shown)
        if row["kind"] != "finding" or row.get("verdict") == "skip":  # skip: out of the labelled scope
            continue
        level = run[row["index"]]["confidence"]  # from detlint's own output, not the judge's copy
        for key in ((row["framework"], level), ("all", level), (row["framework"], "default"), ("all", "default")):
            if key[1] == "default" and level == "possible":
                continue
            levels[key][1] += 1
            levels[key][0] += row["verdict"] == "TP"
print("| framework | confidence | precision |\n|---|---|---|")
for (fw, level), (tp, n) in sorted(levels.items()):
    print(f"| {fw} | {level} | {tp}/{n} = {tp / n:.2f} |")
print("\nRecall at the default confidence (found through a finding shown by default):\n")
print("| framework | recall |\n|---|---|")
for fw, (found, n) in sorted(recall.items()):
    print(f"| {fw} | {found}/{n} = {found / n:.2f} |")
