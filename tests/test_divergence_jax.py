"""detlint diverge on a JAX/Flax program, with the real jax and flax on the CPU: the parameters a
Flax module's init returns, the first call of the jitted training step, and every jitted output."""
from __future__ import annotations

import pytest

from conftest import ROOT, diverge_json

pytest.importorskip("flax")
pytest.importorskip("optax")
PROGRAMS = ROOT / "tests" / "realjax"


def diverge(program: str, *args: str) -> tuple[int, dict]:
    return diverge_json(PROGRAMS, program, *args)


def test_a_key_from_the_clock_is_reported_at_the_initial_parameters() -> None:
    code, report = diverge("unseeded_flax.py")
    first = report["first"]
    assert code == 1 and first["phase"] == "init", first
    kernels = {(v["owner"], v["created"]) for v in first["variables"] if v["name"] == "kernel"}
    assert kernels == {("params.Dense_0", "unseeded_flax.py:19"), ("params.Dense_1", "unseeded_flax.py:19")}
    assert all(v["max_abs_diff"] > 0 for v in first["variables"])
    assert first["rule"] == "DET703" and "jax.random.key(42)" in first["fix"]


def test_a_fixed_key_is_clean_with_counts_and_max_steps_counts_train_steps() -> None:
    code, report = diverge("seeded_flax.py")
    assert code == 0 and report["first"] is None and report["compared"]
    assert report["states_compared"] == {"init": 4, "batch": 2}
    two = report["ops_compared"]
    code, report = diverge("seeded_flax.py", "--max-steps", "4")
    assert code == 0 and report["ops_compared"] == 2 * two > 0
