"""What the JAX rules say about XLA_FLAGS, shown with the real jaxlib on the CPU: XLA reads the
variable once, when JAX starts its backend (not at `import jax`), aborts on a flag it does not
know (the removed reductions flag among them, DET302), and accepts the determinism flags DET701
asks for; `detlint run` and `detlint.apply()` set the flag only while it can still be read."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

COMPUTE = "import jax.numpy as jnp; print('SUM', float(jnp.ones(3).sum()))"


def python(code: str, xla_flags: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if xla_flags is not None:
        env["XLA_FLAGS"] = xla_flags
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**env, "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"})


@pytest.mark.parametrize("flag", ["--xla_gpu_deterministic_ops=true", "--xla_gpu_exclude_nondeterministic_ops=true"])
def test_the_installed_jaxlib_accepts_the_determinism_flags(flag: str) -> None:
    proc = python(COMPUTE, flag)
    assert proc.returncode == 0 and "SUM 3.0" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.parametrize("flag", ["--xla_gpu_no_such_flag=true", "--xla_gpu_deterministic_reductions"])
def test_an_unknown_flag_aborts_at_the_first_computation(flag: str) -> None:
    proc = python(COMPUTE, flag)
    assert proc.returncode != 0 and "SUM" not in proc.stdout
    assert "Unknown flag in XLA_FLAGS" in proc.stderr, proc.stderr[-2000:]


def test_xla_flags_are_read_when_the_backend_starts_not_at_import() -> None:
    bad = "--xla_gpu_no_such_flag=true"
    # set after `import jax`, before any computation: still read (so it aborts)
    proc = python(f"import os, jax; os.environ['XLA_FLAGS'] = '{bad}'; {COMPUTE}")
    assert proc.returncode != 0 and "Unknown flag in XLA_FLAGS" in proc.stderr
    # set after the first computation: never read (DET702)
    proc = python(f"import os, jax, jax.numpy as jnp; jnp.zeros(1).block_until_ready(); "
                  f"os.environ['XLA_FLAGS'] = '{bad}'; {COMPUTE}")
    assert proc.returncode == 0 and "SUM 3.0" in proc.stdout, proc.stderr[-2000:]


def test_detlint_run_adds_the_flag_to_what_the_caller_set(tmp_path: Path) -> None:
    (tmp_path / "show.py").write_text("import os\nprint('FLAGS', os.environ.get('XLA_FLAGS'))\n" + COMPUTE + "\n")
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    for given, expected in ((None, "--xla_gpu_deterministic_ops=true"),
                            ("--xla_force_host_platform_device_count=2",
                             "--xla_force_host_platform_device_count=2 --xla_gpu_deterministic_ops=true")):
        proc = subprocess.run([sys.executable, "-m", "detlint", "run", "--", sys.executable, "show.py"],
                              capture_output=True, text=True, cwd=tmp_path, timeout=300,
                              env={**env, **({"XLA_FLAGS": given} if given else {}), "JAX_PLATFORMS": "cpu"})
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert f"FLAGS {expected}\n" in proc.stdout and "SUM 3.0" in proc.stdout, proc.stdout


def test_apply_sets_the_flag_before_the_backend_starts_and_reports_it_after() -> None:
    before = python("import os, jax, detlint; r = detlint.apply(); "
                    "print([a.status for a in r.actions if a.code == 'DET701'], os.environ['XLA_FLAGS'].split()); "
                    + COMPUTE)
    assert "['done'] ['--xla_gpu_deterministic_ops=true']" in before.stdout, before.stdout + before.stderr[-2000:]
    after = python("import os, jax.numpy as jnp; jnp.zeros(1).block_until_ready(); import detlint; "
                   "r = detlint.apply(); print([(a.status, a.detail) for a in r.actions if a.code == 'DET701'], "
                   "os.environ.get('XLA_FLAGS'))")
    assert "[('unfixable', 'JAX already started its backend" in after.stdout, after.stdout + after.stderr[-2000:]
    assert after.stdout.rstrip().endswith("None")  # the environment is left as it was
