"""detlint diverge on a JAX/Flax program, with the real jax and flax on the CPU: the parameters a
Flax module's init returns, the first call of the jitted training step, and every jitted output."""
from __future__ import annotations

from pathlib import Path

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


def test_a_jitted_output_that_differs_on_a_gpu_names_the_xla_flag(tmp_path: Path) -> None:
    """Two records as the JAX recorder writes them on a GPU, equal but for one output: the
    finder names DET701 (on the CPU it names no GPU rule)."""
    import numpy as np

    from detlint.divergence.finder import compare_recorded_ops
    from detlint.divergence.oplog import OpLog

    dumps = []
    for run, noise in enumerate((0.0, 1e-6)):
        for device in ("gpu", "cpu"):
            log = OpLog(str(tmp_path / f"{device}{run}"), "jax", 1 << 20)
            log.write(np.ones(3, "float32"), op="train_step", slot=0, module="params.w", phase="step", step=0,
                      training=True, site="train.py:9", inputs=[], device=device)
            log.write(np.full(3, 0.5 + noise, "float32"), op="train_step", slot=0, module="params.b", phase="step",
                      step=0, training=True, site="train.py:9", inputs=[], device=device)
            log.close()
    gpu, ops, values = compare_recorded_ops([str(tmp_path / "gpu0"), str(tmp_path / "gpu1")], framework="jax")
    assert gpu.op_name == "params.b" and gpu.rule == "DET701" and "--xla_gpu_deterministic_ops=true" in gpu.fix
    assert (ops, values) == (1, 3)
    cpu = compare_recorded_ops([str(tmp_path / "cpu0"), str(tmp_path / "cpu1")], framework="jax")[0]
    assert cpu.op_name == "params.b" and cpu.rule is None
