"""The fix, checked with the real tensorflow-cpu: before it two runs differ, after it they match."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytest.importorskip("tensorflow")
SCRIPT = ROOT / "tests" / "realtf" / "train_unreproducible.py"


def weights_of_a_run(path: Path) -> str:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("PYTHONHASHSEED", None)
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300,
                          cwd=path.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = re.search(r"WEIGHTS (\w+)", proc.stdout)
    assert match, proc.stdout
    return match.group(1)


def test_fixed_script_trains_bit_identically(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    shutil.copy(SCRIPT, script)
    before = {weights_of_a_run(script), weights_of_a_run(script)}
    assert len(before) == 2, "the unfixed script should not be reproducible (unseeded init)"

    check = subprocess.run([sys.executable, "-m", "detlint", "train.py", "--isolated", "--tf-version", "2.21"],
                           cwd=tmp_path, capture_output=True, text=True)
    codes = set(re.findall(r"DET\d{3}", check.stdout))
    assert {"DET101", "DET201", "DET401"} <= codes, check.stdout
    fixed = subprocess.run([sys.executable, "-m", "detlint", "train.py", "--isolated", "--tf-version", "2.21",
                            "--fix", "--unsafe-fixes"], cwd=tmp_path, capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    text = script.read_text()
    assert "keras.utils.set_random_seed(42)" in text and "enable_op_determinism()" in text
    assert "deterministic=True" in text

    after = {weights_of_a_run(script), weights_of_a_run(script)}
    assert len(after) == 1, "the fixed script must give bit-identical weights"
