"""detlint diverge with the real tensorflow-cpu: real subprocesses, real tfdbg dumps."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT

pytest.importorskip("tensorflow")
REALTF = ROOT / "tests" / "realtf"
sys.path.insert(0, str(REALTF))


def leftover_dumps() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "detlint-diverge-*")))


def diverge_cli(*args: str) -> tuple[int, dict]:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-m", "detlint", "diverge", "--output-format", "json", *args],
                          capture_output=True, text=True, env=env, timeout=600, cwd=REALTF)
    assert proc.stdout, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def test_unseeded_random_op_is_found_at_its_line() -> None:
    before = leftover_dumps()
    code, report = diverge_cli("--", sys.executable, "noise_model.py")
    first = report["first"]
    assert code == 1 and first is not None
    assert first["op_type"] == "RandomUniform"
    assert first["location"] == "noise_model.py:8 (in call)"
    assert first["rule"] == "DET101" and "set_random_seed" in first["fix"]
    assert first["max_abs_diff"] > 0
    assert leftover_dumps() == before


def test_reordered_input_pipeline_is_named() -> None:
    code, report = diverge_cli("--seed", "1", "--", sys.executable, "data_order.py")
    first = report["first"]
    assert code == 1 and first is not None, report
    assert first["rule"] == "DET401", first
    assert "Iterator" in first["op_type"] or "input pipeline" in first["detail"], first


def test_program_under_apply_does_not_diverge_and_says_how_much_was_compared() -> None:
    from steps import cnn_step

    from detlint.divergence import diverge

    report = diverge(cnn_step, apply=True, seed=3, max_steps=4)
    assert report.compared and report.first is None, str(report)
    assert report.ops_compared > 50 and report.values_compared > 1000
    assert "no difference" in str(report)


def test_limits_hold_and_dumps_are_removed_when_the_program_fails() -> None:
    from steps import cnn_step

    from detlint.divergence import diverge

    before = leftover_dumps()
    report = diverge(cnn_step, inputs=(True,), seed=3, apply=True, max_steps=2, max_dump_mb=40)
    assert any(code != 0 for code in report.exit_codes)
    assert all(0 < mb <= 40 for mb in report.dump_mb), report.dump_mb
    assert leftover_dumps() == before
    assert "exited with status" in str(report)
