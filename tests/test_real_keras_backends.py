"""Keras 3 off TensorFlow, shown with the real Keras, PyTorch and JAX on the CPU: a Keras program
on either backend that never seeds builds different weights in every process, detlint reports it
(DET101) and its fix, keras.utils.set_random_seed, makes two processes train bit-identical weights."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_weights

pytest.importorskip("keras")

PROGRAM = '''\
import os

os.environ["KERAS_BACKEND"] = "@BACKEND@"
import hashlib

import keras
import numpy as np

features = np.linspace(0, 1, 64, dtype="float32").reshape(16, 4)
targets = features.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dropout(0.5), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(features, targets, epochs=2, batch_size=4, verbose=0)
digest = hashlib.sha256(b"".join(np.asarray(w).tobytes() for w in model.get_weights())).hexdigest()
print("WEIGHTS", keras.backend.backend(), digest)
'''


def run_python(path: Path) -> str:
    return run_weights(path, unset=("KERAS_BACKEND",))


def detlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "detlint", "--no-cache", "--isolated", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_an_unseeded_keras_program_differs_on_every_backend_and_the_fix_makes_it_repeat(tmp_path: Path,
                                                                                       backend: str) -> None:
    pytest.importorskip(backend)
    script = tmp_path / "train.py"
    script.write_text(PROGRAM.replace("@BACKEND@", backend))
    first, second = run_python(script), run_python(script)
    assert first.split()[1] == backend
    assert first != second, f"an unseeded Keras model on {backend} trained identically twice"
    found = detlint("train.py", cwd=tmp_path)
    assert found.returncode == 1 and "train.py:11:" in found.stdout and "DET101" in found.stdout, found.stdout
    assert "keras.utils.set_random_seed(42)" in found.stdout
    fixed = detlint("--fix", "--unsafe-fixes", "train.py", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "keras.utils.set_random_seed(42)" in script.read_text()
    assert run_python(script) == run_python(script)


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_detlint_run_repeats_an_unseeded_keras_program_on_every_backend(tmp_path: Path, backend: str) -> None:
    """`detlint run` seeds Keras 3 at its import (keras.utils.set_random_seed), whatever the backend."""
    pytest.importorskip(backend)
    script = tmp_path / "train.py"
    script.write_text(PROGRAM.replace("@BACKEND@", backend))

    def launched() -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "KERAS_BACKEND")}
        proc = subprocess.run([sys.executable, "-m", "detlint", "run", "--", sys.executable, "train.py"],
                              capture_output=True, text=True, cwd=tmp_path, timeout=300,
                              env={**env, "CUDA_VISIBLE_DEVICES": ""})
        assert proc.returncode == 0, proc.stderr[-3000:]
        return next(line for line in proc.stdout.splitlines() if line.startswith("WEIGHTS"))

    first = launched()
    assert first.split()[1] == backend
    assert first == launched()
