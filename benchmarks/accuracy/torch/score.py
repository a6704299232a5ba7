"""Score detlint's PyTorch rules on the corpus of repos.md: DETLINT_EVAL=folder python score.py [RUN] [--no-run].

DETLINT_EVAL holds the checked-out repositories as repos/<folder>; each run's findings go to
DETLINT_EVAL/RUN (default out). This checkout of detlint is the one run."""
import collections, json, os, subprocess, sys
from pathlib import Path

BASE = Path(os.environ["DETLINT_EVAL"])
HERE = Path(__file__).resolve().parent
SRC = str(HERE.parents[2])  # this checkout
OUT = BASE / next((a for a in sys.argv[1:] if not a.startswith("--")), "out")
FOLDERS = {"PyTorch-GAN": ("eriklindernoren/PyTorch-GAN", ""), "examples": ("pytorch/examples", ""),
           "pytorch-tutorial": ("yunjey/pytorch-tutorial", ""), "lightning-tutorials": ("Lightning-AI/tutorials", ""),
           "hf-notebooks-examples": ("huggingface/notebooks", "examples/"), "yolov5": ("ultralytics/yolov5", ""),
           "accelerate-examples": ("huggingface/accelerate", "examples/"), "pytorch-cifar": ("kuangliu/pytorch-cifar", ""),
           "nanoGPT": ("karpathy/nanoGPT", ""), "minGPT": ("karpathy/minGPT", ""),
           "deep-learning-project-template": ("Lightning-AI/deep-learning-project-template", ""),
           "lightning-hydra-template": ("ashleve/lightning-hydra-template", "")}
OUT.mkdir(exist_ok=True)
found = []
for folder, (repo, prefix) in FOLDERS.items():
    target = OUT / f"{folder}.json"
    if "--no-run" not in sys.argv:
        with open(target, "w") as out:
            subprocess.run([sys.executable, "-m", "detlint", "--no-cache", "--exit-zero", "--select", "DET6",
                            "--output-format", "json", "."], cwd=BASE / "repos" / folder, stdout=out,
                           stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": SRC})
    for d in json.load(open(target)):
        path = prefix + os.path.relpath(d["filename"], BASE / "repos" / folder)
        found.append((repo, path, d["location"]["row"], d["code"], d["message"]))
judged = {}
for line in open(HERE / "labels.jsonl"):
    j = json.loads(line)
    judged[(j["repo"], j["path"], j["line"], j["code"])] = j["verdict"]
old_gan = {(r, p, l, c) for r, p, l, c, _ in found if r == "eriklindernoren/PyTorch-GAN"}
stats = collections.defaultdict(collections.Counter)
unjudged = []
for repo, path, line, code, message in found:
    verdict = judged.get((repo, path, line, code))
    if verdict is None and repo == "eriklindernoren/PyTorch-GAN":
        verdict = "TP?"  # the unsampled findings: the helper judged all of them TP
    if verdict is None:
        unjudged.append((repo, path, line, code, message[:140]))
        continue
    stats[code][verdict.rstrip("?")] += 1
gone = [k for k, v in judged.items() if v == "TP" and k not in {(r, p, l, c) for r, p, l, c, _ in found}]
print("per rule (judged findings of this run):")
for code in sorted(stats):
    tp, fp = stats[code]["TP"], stats[code]["FP"]
    print(f"  {code}: TP {tp} FP {fp} precision {100 * tp / max(tp + fp, 1):.1f}%")
tp = sum(s["TP"] for s in stats.values()); fp = sum(s["FP"] for s in stats.values())
print(f"  all: TP {tp} FP {fp} precision {100 * tp / max(tp + fp, 1):.1f}%")
print(f"judged TPs no longer reported: {len(gone)}")
for k in gone:
    print("   ", k)
# recall: expected items found when this run reports the code in the program's file
exp = [json.loads(l) for l in open(HERE / "expected.jsonl")]
by_file = {(r, p, c) for r, p, _, c, _ in found}
rec = collections.defaultdict(collections.Counter)
missed = []
for e in exp:
    where = e["where"].split(":")[0].split(" ")[0]
    hit = (e["repo"], e["program"], e["code"]) in by_file or any(
        r == e["repo"] and c == e["code"] and (p == where or p.endswith("/" + where)) for r, p, c in by_file)
    rec[e["code"]]["found" if hit else "missed"] += 1
    if not hit:
        missed.append((e["repo"], e["program"], e["code"], e["where"], e.get("note", "")[:90]))
print("recall:")
for code in sorted(rec):
    f, m = rec[code]["found"], rec[code]["missed"]
    print(f"  {code}: {f}/{f + m} = {100 * f / max(f + m, 1):.1f}%")
f = sum(r["found"] for r in rec.values()); m = sum(r["missed"] for r in rec.values())
print(f"  all: {f}/{f + m} = {100 * f / max(f + m, 1):.1f}%")
print("missed:")
for x in missed:
    print("   ", x)
print(f"UNJUDGED ({len(unjudged)}):")
for u in unjudged:
    print("   ", u)
