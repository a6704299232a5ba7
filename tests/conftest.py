"""Shared helpers: lint fixtures with inline expectations (``# expect: DET101,DET201``)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
EXPECT_RE = re.compile(r"#\s*expect:\s*(?P<codes>DET\d{3}(?:\s*,\s*DET\d{3})*)")
HEADER_RE = re.compile(r"#\s*fixture:\s*tf-version=(?P<version>[\d.]+)")
FRAMEWORK_HEADER_RE = re.compile(r"#\s*fixture:(?P<pairs>[^\n]*)")
DEFAULT_VERSION = "2.21"
NEWEST_TORCH = "2.15"
NEWEST_LIGHTNING = "2.6"
NEWEST_JAX = "0.10"


# A tf.data pipeline whose parallel map returns elements in completion order; {before} runs before
# TensorFlow is imported, {after} right after it; every pass prints the order it saw.
REORDERING_PIPELINE = """
import random, time
{before}
import tensorflow as tf
{after}
def jitter(i):
    time.sleep(random.random() * 0.004)
    return i
def f(i):
    out = tf.py_function(jitter, [i], tf.int64)
    out.set_shape(())
    return out
ds = tf.data.Dataset.range({n}).map(f, num_parallel_calls=8, deterministic=False)
for _ in range({passes}):
    print("ORDER", ",".join(str(int(x)) for x in ds))
"""


def fixture_version(paths: Iterable[Path]) -> str:
    for path in paths:
        match = HEADER_RE.search(path.read_text(encoding="utf-8", errors="replace")[:400])
        if match:
            return match.group("version")
    return DEFAULT_VERSION


def fixture_overrides(paths: Iterable[Path]) -> dict[str, str]:
    """Settings a fixture's header asks for besides the TensorFlow version (``torch-version=1.8
    lightning-version=1.4``)."""
    for path in paths:
        match = FRAMEWORK_HEADER_RE.search(path.read_text(encoding="utf-8", errors="replace")[:400])
        if match:
            pairs = re.findall(r"\b([a-z]+)-version=([\d.]+)", match.group("pairs"))
            out = {f"{key}-version": version for key, version in pairs if key != "tf"}
            out.update(re.findall(r"\b(keras-backend)=(\w+)", match.group("pairs")))
            return out
    return {}


def expectations(paths: Iterable[Path], root: Path) -> list[tuple[str, int, str]]:
    out = []
    for path in paths:
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            match = EXPECT_RE.search(line)
            if match:
                for code in match.group("codes").split(","):
                    out.append((path.relative_to(root).as_posix(), lineno, code.strip()))
    return sorted(out)


def fixture_units() -> list[tuple[str, Path, list[Path]]]:
    """(id, base folder, files): one unit per single-file fixture, one per program folder."""
    units = []
    for area in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        if area.name == "programs":
            for program in sorted(p for p in area.iterdir() if p.is_dir()):
                units.append((f"programs/{program.name}", program, sorted(program.rglob("*.py"))))
        elif area.name not in ("fixes", "notebooks", "versions"):
            for path in sorted(area.glob("*.py")):
                units.append((f"{area.name}/{path.name}", path.parent, [path]))
    return units


def make_linter(version: str, root: Optional[Path] = None, **overrides: object):
    from detlint.settings.config import load_settings
    from detlint.lint.engine import Linter

    # the fixtures live under tests/, a default not-training folder: check them as training code
    # the newest PyTorch and Lightning unless asked (not those installed here, which a fixture would follow)
    cli = {"tensorflow-version": version, "torch-version": NEWEST_TORCH, "lightning-version": NEWEST_LIGHTNING,
           "jax-version": NEWEST_JAX, "not-training": [], **overrides}
    settings = load_settings([root or ROOT], cli, isolated=True)
    return Linter(settings)


def lint_paths(paths: list[Path], version: str, **overrides: object):
    linter = make_linter(version, **overrides)
    return linter.run(paths).diagnostics


@pytest.fixture
def python() -> str:
    return sys.executable


# ---- the API names a knowledge base matches, resolved on the installed framework ---------------
def kb_api_names(kb: object, framework: str, version: object) -> list[tuple[str, str]]:
    """(owner, name) of every call, bare or attribute name ``framework``'s matchers claim exists
    in ``version``."""
    owners = ([(f"rule {c}", r.matchers) for c, r in kb.rules.items()]  # type: ignore[attr-defined]
              + [(f"group {n}", g.matchers) for n, g in kb.groups.items()]  # type: ignore[attr-defined]
              + [(f"op {i}", o.matchers) for i, o in kb.ops.items()])  # type: ignore[attr-defined]
    out = []
    for owner, matchers in owners:
        for matcher in matchers:
            if matcher.kind in ("call", "bare", "attr-assign") and matcher.framework == framework \
                    and matcher.api_versions.contains(version):
                out.extend((owner, name) for name in matcher.names)
    return sorted(set(out))


def resolve_api(name: str) -> object:
    """The object a dotted name stands for, importing submodules where an attribute is missing."""
    import importlib

    parts = name.split(".")
    obj: object = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(".".join(parts[: i + 1]))
    return obj


def run_weights(path: Path, unset: Iterable[str] = ()) -> str:
    """Run the training program ``path`` in a fresh CPU-only process (without the environment
    variables ``unset`` and PYTHONHASHSEED) and return the line it prints that starts WEIGHTS."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", *unset)}
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=path.parent,
                          env={**env, "CUDA_VISIBLE_DEVICES": ""}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return next(line for line in proc.stdout.splitlines() if line.startswith("WEIGHTS"))


def diverge_json(folder: Path, program: str, *args: str, **env: str) -> tuple[int, dict]:
    """``detlint diverge --output-format json ARGS -- python PROGRAM`` in ``folder`` on the CPU:
    its exit code and report."""
    import json

    proc = subprocess.run([sys.executable, "-m", "detlint", "diverge", "--output-format", "json", *args, "--",
                           sys.executable, program], capture_output=True, text=True, timeout=600, cwd=folder,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu", **env})
    assert proc.stdout, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)
