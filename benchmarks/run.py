"""detlint's speed and memory targets, as ratios against what users run today, measured in the same run.

The baselines run from an environment of their own (created once under
``$DETLINT_BENCH_ENVS``, default ``~/.cache/detlint-bench``): plain flake8 (the version detlint's
environment has, with its default plugins pyflakes, pycodestyle and mccabe, without detlint's) and
ruff with every rule (``--select ALL``). flake8 running detlint's own plugin, from detlint's
environment, is a third line for reference only: it is detlint plus flake8, not a baseline.

The corpus is real code nobody on this project wrote: the installed ``keras`` sources and a slice
of the installed ``tensorflow`` package, copied to a temporary folder. For each corpus size the
script times, with medians of repeated runs, all with ``-j JOBS`` where the tool has it:

* detlint cold (``--no-cache``), plain flake8, ruff (``--no-cache``), flake8 with detlint's plugin;
* detlint warm (cache filled, nothing changed: the check is replayed) and warm with one file
  edited before each run (what a pre-commit hook meets; reported, no target);
* one small file end to end, interpreter start included, for detlint and plain flake8;
* one training script inside a large package (the installed ``keras`` sources, hundreds of
  modules it imports directly or deeply), cold, against plain flake8 on that one file;

and reads the peak resident memory of the largest process (a worker or the main process). It
prints a table and exits 1 when a target is missed:

    cold <= 1.0 x plain flake8, warm <= 0.03 x plain flake8, peak <= 250 MB per process and flat
    in the number of files, time linear in lines, one file <= 2 x plain flake8, one script in a
    large package <= plain flake8 on that file + 0.3 s.

Usage: python benchmarks/run.py [--repeat N] [--jobs N] [--quick]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# located without importing keras: a parent holding TensorFlow in memory would inflate the
# children's peak RSS (forked pages count until exec)
SITE = Path(importlib.util.find_spec("keras").origin).resolve().parent.parent  # type: ignore[arg-type]
SLICES = {
    "small": ["keras/src/layers", "tensorflow/python/data"],
    "large": ["keras/src/layers", "keras/src/backend", "keras/src/models", "keras/src/trainers",
              "tensorflow/python/data", "tensorflow/python/distribute"],
    "tiny": ["keras/src/layers/core", "tensorflow/python/data/util"],
}
SMALL_FILE = '''import os

import tensorflow as tf

os.environ["PYTHONHASHSEED"] = "0"
model = tf.keras.Sequential([tf.keras.layers.Conv2D(8, 3), tf.keras.layers.Dense(2)])
model.compile(optimizer="adam", loss="mse")
model.fit(x, y)
'''


def build_corpus(root: Path, size: str, copies: int = 1) -> tuple[Path, int, int]:
    corpus = root / f"corpus-{size}-x{copies}"
    files = lines = 0
    for copy, rel in ((c, r) for c in range(copies) for r in SLICES[size]):
        src = SITE / rel
        for path in src.rglob("*.py"):
            target = corpus / f"copy{copy}" / rel / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            files += 1
            lines += path.read_bytes().count(b"\n")
    (corpus / "setup.cfg").write_text("[flake8]\n")  # a project root for both tools
    return corpus, files, lines


# Runs a command and prints the peak RSS of its process tree: RUSAGE_CHILDREN of a fresh process
# covers only that command (in this script's own process it would keep the maximum of every run).
PEAK = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL); "
        "sys.stderr.write('PEAK %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)")


def timed(cmd: list[str], cwd: Path) -> tuple[float, int]:
    """Wall time and the peak RSS (MB) of the largest process this command ran."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PEAK, *cmd], cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    peak = next((int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("PEAK ")), 0)
    return elapsed, peak // 1024


def median_of(repeat: int, cmd: list[str], cwd: Path, prepare: object = None) -> tuple[float, int]:
    times, peaks = [], []
    for _ in range(repeat):
        if callable(prepare):
            prepare()
        elapsed, peak = timed(cmd, cwd)
        times.append(elapsed)
        peaks.append(peak)
    return statistics.median(times), max(peaks)


def baselines() -> Path:
    """The environment of plain flake8 (detlint's environment's version, without detlint) and
    ruff, created once; its folder."""
    from importlib import metadata

    version = metadata.version("flake8")
    base = Path(os.environ.get("DETLINT_BENCH_ENVS") or Path.home() / ".cache" / "detlint-bench")
    env = base / f"py{platform.python_version()}-flake8-{version}"
    if not (env / "bin" / "ruff").exists() or not (env / "bin" / "flake8").exists():
        shutil.rmtree(env, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", f"flake8=={version}", "ruff"],
                       check=True, env={**os.environ, "PIP_CONSTRAINT": os.devnull})
    return env


def tools(env: Path, jobs: int) -> dict[str, list[str]]:
    py = sys.executable
    return {
        "flake8": [str(env / "bin" / "python"), "-m", "flake8", "--isolated", "--exit-zero", "-j", str(jobs), "."],
        "ruff": [str(env / "bin" / "ruff"), "check", "--isolated", "--select", "ALL", "--no-cache", "--exit-zero",
                 "--quiet", "."],
        "flake8_plugin": [py, "-m", "flake8", "--isolated", "--exit-zero", "-j", str(jobs), "."],
    }


def measure(corpus: Path, jobs: int, repeat: int, env: Path) -> dict[str, float]:
    py = sys.executable
    cache = corpus / ".detlint_cache"
    detlint = [py, "-m", "detlint", "--isolated", "--exit-zero", "-j", str(jobs), "--cache-dir", str(cache), "."]
    out: dict[str, float] = {}
    out["cold"], out["cold_peak_mb"] = median_of(repeat, detlint + ["--no-cache"], corpus)
    timed(detlint, corpus)  # fill the cache
    timed(detlint, corpus)  # a first warm run records what a replay needs (replay.py)
    out["warm"], _ = median_of(repeat, detlint, corpus)
    sources = sorted(corpus.rglob("*.py"))
    edited = sources[len(sources) // 2]
    count = iter(range(1_000_000))

    def edit() -> None:  # what a pre-commit hook meets: one file changed, the rest in the cache
        with open(edited, "a", encoding="utf-8") as handle:
            handle.write(f"# edit {next(count)}\n")

    out["warm_edit"], _ = median_of(repeat, detlint, corpus, prepare=edit)
    for name, cmd in tools(env, jobs).items():
        out[name], out[f"{name}_peak_mb"] = median_of(repeat, cmd, corpus)
    return out


def single_file(root: Path, repeat: int, env: Path) -> dict[str, float]:
    folder = root / "one"
    folder.mkdir(exist_ok=True)
    (folder / "train.py").write_text(SMALL_FILE)
    py = sys.executable
    det = [py, "-m", "detlint", "--isolated", "--exit-zero", "train.py"]
    flake = [str(env / "bin" / "python"), "-m", "flake8", "--isolated", "--exit-zero", "train.py"]
    cold, _ = median_of(repeat, det + ["--no-cache"], folder)
    timed(det, folder)  # fills the cache and records the replay
    warm, _ = median_of(repeat, det, folder)
    f8, _ = median_of(repeat, flake, folder)
    return {"one_cold": cold, "one_warm": warm, "one_flake8": f8}


PACKAGE_SCRIPT = '''"""Trains a tiny model with the package's own modules (a script deep in a large package)."""
import numpy as np

from keras.src import backend
from keras.src import layers
from keras.src import losses
from keras.src import metrics
from keras.src import models
from keras.src import ops
from keras.src import optimizers
from keras.src import random
from keras.src import testing
from keras.src.trainers import trainer
from keras.src.utils import io_utils

features = np.random.rand(8, 4)
targets = np.random.rand(8, 1)
net = models.Sequential([layers.Dense(4), layers.Dropout(0.2), layers.Dense(1)])
net.compile(optimizer=optimizers.SGD(), loss=losses.MeanSquaredError())
net.fit(features, targets, epochs=1)
'''


def in_large_package(root: Path, repeat: int, env: Path) -> dict[str, float]:
    """A cold run on one script inside a copy of the keras sources (a project of its own)."""
    project = root / "package"
    shutil.copytree(SITE / "keras", project / "keras", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "pyproject.toml").write_text("")
    script = project / "keras" / "src" / "train_small.py"
    script.write_text(PACKAGE_SCRIPT)
    modules = sum(1 for _ in (project / "keras").rglob("*.py"))
    cmd = [sys.executable, "-m", "detlint", "--exit-zero", "--no-cache", str(script.relative_to(project))]
    cold, _ = median_of(repeat, cmd, project)
    flake, _ = median_of(repeat, [str(env / "bin" / "python"), "-m", "flake8", "--isolated", "--exit-zero",
                                  str(script.relative_to(project))], project)
    return {"package_cold": cold, "package_flake8": flake, "package_modules": modules}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--quick", action="store_true", help="a tiny corpus, one repeat (a smoke test)")
    args = parser.parse_args()
    # as installed tools run: with their modules' bytecode kept (pip compiles the baselines' at install;
    # without this detlint's own modules would be compiled again on every run)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sizes = ["tiny"] if args.quick else ["small", "large"]
    repeat = 1 if args.quick else args.repeat
    failures: list[str] = []
    env = baselines()
    with tempfile.TemporaryDirectory(prefix="detlint-bench-") as tmp:
        root = Path(tmp)
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
              f"jobs={args.jobs}, repeat={repeat} (medians)")
        rows = []
        for size in sizes:
            corpus, files, lines = build_corpus(root, size)
            result = measure(corpus, args.jobs, repeat, env)
            rows.append((size, files, lines, result))
            f8 = result["flake8"]
            print(f"\n[{size}] {files} files, {lines} lines")
            print(f"  detlint cold         {result['cold']:8.2f} s   ({result['cold'] / f8:.2f} x plain flake8, "
                  f"{result['cold'] / result['ruff']:.1f} x ruff)   peak {result['cold_peak_mb']} MB")
            print(f"  detlint warm         {result['warm']:8.2f} s   ({result['warm'] / f8:.3f} x plain flake8)")
            print(f"  detlint warm, one file edited {result['warm_edit']:5.2f} s   "
                  f"({result['warm_edit'] / f8:.3f} x plain flake8; no target)")
            print(f"  plain flake8         {f8:8.2f} s   peak {result['flake8_peak_mb']} MB")
            print(f"  ruff --select ALL    {result['ruff']:8.2f} s   peak {result['ruff_peak_mb']} MB")
            print(f"  flake8 + detlint's plugin (reference) {result['flake8_plugin']:8.2f} s")
            print(f"  detlint cold per 1000 lines: {1000 * result['cold'] / lines:.3f} s")
            if args.quick:  # a smoke test: start-up dominates a tiny corpus, so no targets
                continue
            if result["cold"] > 1.0 * result["flake8"]:
                failures.append(f"{size}: cold {result['cold']:.2f}s > 1.0 x plain flake8 {result['flake8']:.2f}s")
            if result["warm"] > 0.03 * result["flake8"]:
                failures.append(f"{size}: warm {result['warm']:.2f}s > 0.03 x plain flake8 {result['flake8']:.2f}s")
            if result["cold_peak_mb"] > 250:
                failures.append(f"{size}: peak memory {result['cold_peak_mb']} MB > 250 MB")
        if len(rows) == 2:
            (_, _, l1, r1), (_, _, l2, r2) = rows
            per1, per2 = r1["cold"] / l1, r2["cold"] / l2
            print(f"\nscaling: {l2 / l1:.2f} x the lines took {r2['cold'] / r1['cold']:.2f} x the time "
                  f"(per-line cost ratio {per2 / per1:.2f})")
            if not 0.67 <= per2 / per1 <= 1.5:
                failures.append(f"cost per line is not linear: ratio {per2 / per1:.2f}")
            # memory against the number of files: the same files once and twice (a bigger corpus
            # also has bigger single files, which is what a parser's peak follows)
            twice, files2, lines2 = build_corpus(root, "small", copies=2)
            _, peak2 = median_of(1, [sys.executable, "-m", "detlint", "--isolated", "--exit-zero", "-j",
                                     str(args.jobs), "--no-cache", "."], twice)
            print(f"memory: {rows[0][1]} files peak {r1['cold_peak_mb']} MB; the same files twice ({files2}) "
                  f"peak {peak2} MB")
            if peak2 > 1.25 * r1["cold_peak_mb"] + 10:
                failures.append(f"memory grows with the number of files ({r1['cold_peak_mb']} -> {peak2} MB)")
        one = single_file(root, max(repeat, 3), env)
        print(f"\none small file: detlint {one['one_cold']:.2f} s cold, {one['one_warm']:.2f} s cached; "
              f"plain flake8 {one['one_flake8']:.2f} s ({one['one_cold'] / one['one_flake8']:.2f} x)")
        package = in_large_package(root, max(repeat, 3), env)
        print(f"one script in a package of {package['package_modules']} modules: detlint "
              f"{package['package_cold']:.2f} s cold; plain flake8 on that file {package['package_flake8']:.2f} s")
        if not args.quick:
            if package["package_cold"] > package["package_flake8"] + 0.3:
                failures.append(f"one script in a large package takes {package['package_cold']:.2f}s > plain flake8 "
                                f"on it + 0.3 s ({package['package_flake8']:.2f}s)")
            if one["one_cold"] > 2 * one["one_flake8"]:
                failures.append(f"one file {one['one_cold']:.2f}s > 2 x plain flake8 {one['one_flake8']:.2f}s")
    if failures:
        print("\nMISSED: " + "; ".join(failures))
        return 1
    if args.quick:  # nothing above was held to a target
        print("\nsmoke test only: no target checked (run without --quick to check them)")
        return 0
    print("\nall targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
