"""Precision per confidence level (as detlint's run gave it) and at the default minimum (likely),
from the judged files of this round. Usage: python confidence.py [DIR]"""
from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

here = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
levels = collections.defaultdict(lambda: [0, 0])  # (framework, confidence) -> [TP, all]
for judged in sorted(here.glob("judged-*.jsonl")):
    run = json.loads((here / "runs" / f"{judged.stem.split('-', 1)[1]}.json").read_text())
    for row in map(json.loads, filter(str.strip, judged.read_text().splitlines())):
        if row["kind"] != "finding":
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
