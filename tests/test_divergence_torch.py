"""detlint diverge on PyTorch programs, with the real torch on the CPU: initial weights, the first
batch and every op's output (a TorchDispatchMode) compared between two real runs."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT, diverge_json

pytest.importorskip("torch")
PROGRAMS = ROOT / "tests" / "realtorch"


def diverge(program: str, *args: str) -> tuple[int, dict]:
    return diverge_json(PROGRAMS, program, *args)


def test_unseeded_initial_weights_are_named_by_module_and_line() -> None:
    code, report = diverge("unseeded_init.py")
    first = report["first"]
    assert code == 1 and first["phase"] == "init"
    assert [(v["owner"], v["name"], v["created"]) for v in first["variables"]] == [
        ("Net.fc1", "weight", "unseeded_init.py:9"), ("Net.fc1", "bias", "unseeded_init.py:9"),
        ("Net.fc2", "weight", "unseeded_init.py:10"), ("Net.fc2", "bias", "unseeded_init.py:10")]
    assert all(v["max_abs_diff"] > 0 for v in first["variables"]) and first["total"] == 4
    assert first["rule"] == "DET601" and "torch.manual_seed(42)" in first["fix"]


def test_a_seeded_run_is_clean_with_counts() -> None:
    code, report = diverge("unseeded_init.py", "--seed", "7")
    assert code == 0 and report["first"] is None and report["compared"]
    assert report["states_compared"] == {"init": 4, "batch": 1}
    assert report["ops_compared"] > 20 and report["values_compared"] > 500


def test_a_reordered_loader_shows_as_the_first_batch() -> None:
    code, report = diverge("loader_order.py")
    first = report["first"]
    assert code == 1 and first["phase"] == "batch", first
    assert first["variables"][0]["owner"] == "Sequential" and first["variables"][0]["name"] == "input 0"
    assert first["rule"] == "DET606" and "generator=" in first["fix"]


def test_an_unseeded_dropout_is_the_first_differing_op_with_its_module_and_line() -> None:
    code, report = diverge("dropout.py")
    first = report["first"]
    assert code == 1 and first["phase"] == "forward", first
    assert first["op_type"].startswith("aten.bernoulli") and first["op_name"] == "Net.drop"
    assert first["location"] == "dropout.py:16 (in forward)"
    assert first["rule"] == "DET601"
    assert report["ops_compared"] > 0


def test_max_steps_counts_optimizer_steps(tmp_path: Path) -> None:
    code, report = diverge("dropout.py", "--seed", "1", "--max-steps", "1")
    assert code == 0 and report["first"] is None
    fewer = report["ops_compared"]
    code, report = diverge("dropout.py", "--seed", "1", "--max-steps", "3")
    assert code == 0 and report["ops_compared"] > fewer
