"""detlint diverge with the real tensorflow-cpu: real subprocesses, real tfdbg dumps."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT

pytest.importorskip("tensorflow")
REALTF = ROOT / "tests" / "realtf"
sys.path.insert(0, str(REALTF))


def leftover_dumps(temp: Path) -> list[str]:
    """The records left in a test's own temporary folder (another detlint diverge running beside
    the suite keeps its records in the shared one)."""
    return glob.glob(os.path.join(temp, "detlint-diverge-*"))


def private_temp(tmp_path: Path) -> Path:
    temp = tmp_path / "tmp"
    temp.mkdir()
    return temp


def diverge_cli(*args: str, cwd: Path = REALTF, **env: str) -> tuple[int, dict]:
    full_env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3", **env}
    proc = subprocess.run([sys.executable, "-m", "detlint", "diverge", "--output-format", "json", *args],
                          capture_output=True, text=True, env=full_env, timeout=600, cwd=cwd)
    assert proc.stdout, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def checkout_named_detlint(tmp_path: Path) -> Path:
    """A copy of this checkout in a folder called ``detlint``, as ``git clone`` makes it."""
    clone = tmp_path / "detlint"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("detlint", "rules", "tests/realtf"):
        shutil.copytree(ROOT / part, clone / part, ignore=skip)
    return clone


def test_unseeded_random_op_is_found_at_its_line(tmp_path: Path) -> None:
    """Run from a checkout folder named ``detlint``, with that checkout's detlint: the program's
    frames are the user's even though ``/detlint/`` is in their path."""
    clone = checkout_named_detlint(tmp_path)
    temp = private_temp(tmp_path)
    code, report = diverge_cli("--", sys.executable, "noise_model.py", cwd=clone / "tests" / "realtf",
                               PYTHONPATH=str(clone), TMPDIR=str(temp))
    first = report["first"]
    assert code == 1 and first is not None
    assert first["op_type"] == "RandomUniform"
    assert first["location"] == "noise_model.py:8 (in call)"
    assert first["rule"] == "DET101" and "set_random_seed" in first["fix"]
    assert first["max_abs_diff"] > 0
    assert leftover_dumps(temp) == []


def test_reordered_input_pipeline_is_named() -> None:
    code, report = diverge_cli("--seed", "1", "--", sys.executable, "data_order.py")
    first = report["first"]
    assert code == 1 and first is not None, report
    assert first["rule"] == "DET401", first
    assert first["op_type"] == "IteratorGetNext", first


def test_a_consumer_stamped_before_what_fed_it_is_not_the_first_difference(tmp_path: Path) -> None:
    """The debugger stamps an output when its recording op runs, which inside a graph can be after
    the ops consuming it (Keras's MatMul before the IteratorGetNext that fed it, on a busy
    machine): the graphs' structure, not the clock, says which difference came first."""
    from detlint.divergence import finder
    from detlint.divergence.graph_order import GraphOrder
    from detlint.divergence.runs import run_program
    from detlint.knowledge import kb

    dumps = []
    for i in range(2):
        dump = str(tmp_path / f"run{i}")
        env = {**finder._child_env(dump, 1, False, 2, 300, 512), "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
        result = run_program([sys.executable, str(REALTF / "data_order.py")], env, dump, 300, 512)
        assert result.code == 0, result
        dumps.append(dump)
    (reader0, graph0, eager0), (reader1, graph1, eager1) = (finder.read_records(d) for d in dumps)
    try:
        fetched = [r for r in graph0 if r.op_type == "IteratorGetNext"][:2]  # the first batch's x and y
        consumers = [r for r in graph0 if r.op_type == "MatMul"][:2]  # the first step's forward and backward
        for k, r in enumerate(fetched):
            r.wall_time = max(c.wall_time for c in consumers) + 1e-6 * (k + 1)  # stamped after them
        unordered = [pattern for pattern, _ in finder._graph_rules(kb.load())]
        by_clock = finder._first_difference(graph0 + eager0, graph1 + eager1, unordered)
        assert by_clock is not None and by_clock[0].op_type != "IteratorGetNext", by_clock[0]
        order = GraphOrder(reader0)
        found = finder._first_difference(graph0 + eager0, graph1 + eager1, unordered, order)
        assert found is not None and found[0] in fetched, found
        timeline = sorted((r for r in graph0 + eager0 if not any(p in r.graph for p in unordered)),
                          key=lambda r: r.wall_time)
        before = order.before(timeline, found[0], finder._key)
        assert before and not any(r in consumers for r in before), [r.op_name for r in before]
    finally:
        finder.close(reader0)
        finder.close(reader1)


def test_program_under_apply_does_not_diverge_and_says_how_much_was_compared() -> None:
    from steps import cnn_step

    from detlint.divergence.finder import diverge

    report = diverge(cnn_step, apply=True, seed=3, max_steps=4)
    assert report.compared and report.first is None, str(report)
    assert report.ops_compared > 50 and report.values_compared > 1000
    assert "no difference" in str(report)


def test_limits_hold_and_dumps_are_removed_when_the_program_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from steps import cnn_step

    from detlint.divergence.finder import diverge

    temp = private_temp(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # this process's temporary folder, for this test
    report = diverge(cnn_step, inputs=(True,), seed=3, apply=True, max_steps=2, max_dump_mb=40)
    assert any(code != 0 for code in report.exit_codes)
    assert all(0 < mb <= 40 for mb in report.dump_mb), report.dump_mb
    assert leftover_dumps(temp) == []
    assert "exited with status" in str(report)


def test_library_frames_are_told_by_location_not_by_name(tmp_path: Path) -> None:
    import sysconfig

    import detlint
    from detlint.divergence.finder import is_library_frame
    from detlint.divergence.recorder import library_roots

    roots = library_roots()
    package = Path(detlint.__file__).resolve().parent
    assert str(package) in roots
    assert is_library_frame(sysconfig.get_paths()["purelib"] + "/tensorflow/python/ops/random_ops.py", roots)
    assert is_library_frame(sysconfig.get_paths()["stdlib"] + "/threading.py", roots)
    assert is_library_frame(str(package / "recorder.py"), roots)
    assert is_library_frame("<frozen importlib._bootstrap>", roots)
    for user_file in ("detlint/tests/realtf/noise_model.py", "site-packages-notes/train.py",
                      "lib/python/models/net.py", "dist-packages/train.py"):
        path = tmp_path / user_file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
        assert not is_library_frame(str(path), roots), user_file


def test_runs_are_quiet_unless_verbose(tmp_path: Path) -> None:
    """No TensorFlow start-up banner from the runs or from reading their records."""
    program = tmp_path / "noise.py"
    program.write_text("import sys\nimport tensorflow as tf\nprint('PROGRAM SAYS', file=sys.stderr)\n"
                       "print(tf.random.uniform([3]).numpy())\n")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    quiet = subprocess.run([sys.executable, "-m", "detlint", "diverge", "--", sys.executable, str(program)],
                           capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert quiet.returncode == 1 and "first difference: RandomUniform" in quiet.stdout, quiet.stderr[-2000:]
    assert quiet.stderr == ""

    no_tf = tmp_path / "talk.py"
    no_tf.write_text("import sys\nprint('PROGRAM SAYS', file=sys.stderr)\nprint('ON STDOUT')\n")
    verbose = subprocess.run([sys.executable, "-m", "detlint", "diverge", "--verbose", "--output-format", "json",
                              "--", sys.executable, str(no_tf)],
                             capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert verbose.returncode == 2 and json.loads(verbose.stdout)["compared"] is False
    assert verbose.stderr.count("PROGRAM SAYS") == 2 and verbose.stderr.count("ON STDOUT") == 2


def test_default_initialised_keras_model_is_reported_at_its_initial_weights() -> None:
    """The common case: no seed, default initialisers. The report names the layers, the lines
    that made them and DET101 with the version's fix, not the first eager op (a Cast)."""
    code, report = diverge_cli("--", sys.executable, "default_init.py")
    first = report["first"]
    assert code == 1 and first["phase"] == "init", first
    kernels = [(v["owner"], v["kind"], v["created"]) for v in first["variables"] if v["name"] == "kernel"]
    assert kernels == [("dense", "Dense", "default_init.py:9"), ("dense_1", "Dense", "default_init.py:10")]
    assert all(v["max_abs_diff"] > 0 for v in first["variables"])
    assert first["rule"] == "DET101" and "keras.utils.set_random_seed(42)" in first["fix"]
    code, report = diverge_cli("--seed", "3", "--", sys.executable, "default_init.py")
    assert code == 0 and report["first"] is None and report["states_compared"] == {"init": 4}


def test_a_cast_of_a_value_from_numpy_is_attributed_to_what_it_was_given(tmp_path: Path) -> None:
    (tmp_path / "cast.py").write_text("import numpy as np\nimport tensorflow as tf\n\nnoise = np.random.rand(4)\n"
                                      "x = tf.cast(noise, tf.float32)\nprint(float(tf.reduce_sum(x * 2.0)))\n")
    code, report = diverge_cli("--", sys.executable, "cast.py", cwd=tmp_path)
    first = report["first"]
    assert code == 1 and first["op_type"] == "Cast" and first["location"] == "cast.py:5 (in <module>)"
    assert "only passes on its input" in first["detail"] and "outside TensorFlow's ops" in first["detail"]
