"""Shared helpers for the detlint evaluation (findings, keys, sample)."""
import json, os, random, collections

# the repositories and runs live under $DETLINT_EVAL (default: this folder; repos/ is not in git)
ROOT = os.environ.get("DETLINT_EVAL", os.path.dirname(os.path.abspath(__file__)))
REPOS = ["dcgan", "genmodels", "albert", "cookbook", "densenet", "imgseg", "segmodels",
         "tf2examples", "tf2tut", "t81", "tfdocs", "kerastuner", "kerashub"]
DRAWN = {"cookbook": 65, "tfdocs": 80}   # repos whose findings are sampled, size of the draw
SEED = 13


def load_findings(outdir):
    """All findings of a run: list of dicts repo, path, cell, line, col, code, message."""
    out = []
    for repo in REPOS:
        f = os.path.join(outdir, repo + ".json")
        if not os.path.exists(f):
            continue
        base = os.path.join(ROOT, "repos", repo) + "/"
        for x in json.load(open(f)):
            p = x["filename"]
            if p.startswith(base):
                p = p[len(base):]
            out.append({"repo": repo, "path": p, "cell": x.get("cell"), "line": x["location"]["row"],
                        "col": x["location"]["column"], "code": x["code"], "message": x["message"]})
    out.sort(key=lambda d: (d["repo"], d["path"], d["cell"] if d["cell"] is not None else -1,
                            d["line"], d["col"], d["code"]))
    return out


def key(d):
    return (d["repo"], d["path"], d.get("cell"), d["line"], d["code"])


def draw(findings, repo, n=None):
    """The seeded random draw of a sampled repo's findings (sorted order, random.Random(13))."""
    pool = [d for d in findings if d["repo"] == repo]
    n = DRAWN[repo] if n is None else n
    if len(pool) <= n:
        return pool
    return random.Random(SEED).sample(pool, n)


def load_labels(path=os.path.join(ROOT, "labels.jsonl")):
    labels = collections.defaultdict(list)
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line:
                d = json.loads(line)
                labels[key(d)].append(d)
    return labels


def sample(findings, labels, redraw=False):
    """The precision sample of a run: every finding of the small repos; for the sampled repos the
    findings already judged (kept from the base draw) topped up to the draw size by a seeded draw of
    the others (or, with redraw, a fresh seeded draw)."""
    out = [d for d in findings if d["repo"] not in DRAWN]
    for repo, n in DRAWN.items():
        pool = [d for d in findings if d["repo"] == repo]
        if redraw:
            out += draw(findings, repo)
            continue
        kept = [d for d in pool if key(d) in labels]
        if len(kept) < n:
            rest = [d for d in pool if key(d) not in labels]
            kept += random.Random(SEED).sample(rest, min(n - len(kept), len(rest)))
        out += kept
    return out
