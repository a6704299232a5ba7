"""`detlint diverge` can be trusted with its verdict and with the machine: an interrupted run stops
the program (and what it started) and removes its records, the time limit holds, numbers are
checked before anything runs, a run that failed or recorded less is never "no difference", and
XLA-compiled Keras functions are recorded. Real subprocesses, real signals, a private TMPDIR."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, skip_if_session_ignores

if os.name != "posix":
    pytest.skip("process groups and signals as on POSIX", allow_module_level=True)

# starts a child of its own, says both ids, then waits long (ended by detlint, or by this test)
SLEEPER = """\
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open("pids.tmp", "w") as handle:
    handle.write(f"{os.getpid()} {child.pid}")
os.replace("pids.tmp", "pids")
time.sleep(600)
"""
# never ends by itself and ignores SIGTERM; leaves its id in a file named after it
FOREVER = """\
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(f"pid-{os.getpid()}", "w").close()
while True:
    time.sleep(1)
"""
# a TensorFlow program that computes, then ends badly: argv[1] "same" or "random", argv[2] how it ends
ENDS_BADLY = """\
import os, sys
import tensorflow as tf
x = tf.random.uniform([4]) if sys.argv[1] == "random" else tf.ones([4])
if sys.argv[2] == "second-run-stops-early" and os.path.exists("ran-once"):
    sys.exit("stopped early: no data left")
open("ran-once", "w").close()
print(float(tf.reduce_sum(x * 2.0)))
if sys.argv[2] == "exit-7":
    print("the disk is on fire", file=sys.stderr)
    sys.exit(7)
if sys.argv[2] == "raise":
    raise RuntimeError("the disk is on fire")
"""
KERAS_JIT = """\
import sys
import numpy as np
import keras
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse", jit_compile=True if sys.argv[1] == "True" else sys.argv[1])
model.fit(np.ones((8, 4), "float32"), np.zeros((8, 1), "float32"), batch_size=4, epochs=1, verbose=0)
"""


def environment(temp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DETLINT_")}
    return {**env, "TMPDIR": str(temp), "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3",
            "PYTHONPATH": str(ROOT)}


def private_temp(tmp_path: Path) -> Path:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    return temp


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "detlint", "diverge", *args], cwd=cwd,
                            env=environment(private_temp(cwd)), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def diverge(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "detlint", "diverge", *args], cwd=cwd,
                          env=environment(private_temp(cwd)), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=600)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs (a zombie, dead but not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def still_alive(pids: list[int], patience: float = 30.0) -> list[int]:
    """The processes of ``pids`` still running after they were given ``patience`` seconds to end
    (a killed process goes at once; the wait only covers a slow kernel or a busy machine)."""
    give_up = time.monotonic() + patience
    while any(alive(p) for p in pids) and time.monotonic() < give_up:
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def end(proc: subprocess.Popen[str], pids: list[int]) -> None:
    """Leave nothing behind, whatever the test found."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


def wait_for_pids(path: Path, proc: subprocess.Popen[str], patience: float = 300.0) -> list[int]:
    give_up = time.monotonic() + patience
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < give_up, "the program never started"
        time.sleep(0.1)
    return [int(p) for p in path.read_text().split()]


# ---- item: an interrupted diverge stops the program and removes its records -----------------------
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_interrupted_diverge_stops_the_program_and_what_it_started_and_removes_its_records(
        tmp_path: Path, signum: int) -> None:
    skip_if_session_ignores(signum)
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    proc = start(["--time-limit", "300", "--", sys.executable, "sleeper.py"], tmp_path)
    pids: list[int] = []
    try:
        pids = wait_for_pids(tmp_path / "pids", proc)
        temp = private_temp(tmp_path)
        assert list(temp.glob("detlint-diverge-*")), "the run's records are kept in the private TMPDIR"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 128 + signum, err
        assert "interrupted" in err and "Traceback" not in err, err
        assert still_alive(pids) == [], "the program or the process it started is still running"
        assert list(temp.glob("detlint-diverge-*")) == []
    finally:
        end(proc, pids)


# ---- item: the time limit holds, per run --------------------------------------------------------------
def test_a_program_that_never_ends_is_stopped_at_the_time_limit_of_each_run(tmp_path: Path) -> None:
    """The program ignores SIGTERM; detlint must stop it all the same. No clock is read here: before
    the fix each run took the limit plus 120 s, past this test's own patience of 120 s."""
    (tmp_path / "forever.py").write_text(FOREVER)
    proc = start(["--time-limit", "2", "--", sys.executable, "forever.py"], tmp_path)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        pids = [int(p.name[4:]) for p in tmp_path.glob("pid-*")]
        end(proc, pids)
    assert proc.returncode == 2, err
    assert "run 1 was stopped at the time limit (2 s)" in out and "run 2 was stopped at the time limit (2 s)" in out
    assert "no difference" not in out
    assert len(pids) == 2 and still_alive(pids) == []
    assert list(private_temp(tmp_path).glob("detlint-diverge-*")) == []


# ---- item: numbers are checked before anything runs ----------------------------------------------------
@pytest.mark.parametrize("option, value", [
    ("--time-limit", "nan"), ("--time-limit", "inf"), ("--time-limit", "1e999"), ("--time-limit", "-1"),
    ("--time-limit", "0"), ("--max-dump-mb", "nan"), ("--max-dump-mb", "inf"), ("--max-dump-mb", "-5"),
    ("--max-dump-mb", "0"), ("--max-steps", "0"), ("--max-steps", "-1"), ("--runs", "1"), ("--runs", "-3")])
def test_an_impossible_number_is_a_usage_error_and_nothing_runs(tmp_path: Path, option: str, value: str) -> None:
    (tmp_path / "marks.py").write_text("open('ran', 'w').close()\n")
    proc = diverge([option, value, "--", sys.executable, "marks.py"], tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"detlint diverge: error: argument {option}:" in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr
    assert not (tmp_path / "ran").exists()


def test_the_library_refuses_the_same_numbers(tmp_path: Path) -> None:
    from detlint.divergence.finder import diverge_command

    marks = [sys.executable, "-c", f"open({str(tmp_path / 'ran')!r}, 'w').close()"]
    for limits in ({"time_limit": float("nan")}, {"time_limit": float("inf")}, {"max_dump_mb": -1.0},
                   {"max_steps": 0}):
        with pytest.raises(ValueError):
            diverge_command(marks, **limits)  # type: ignore[arg-type]
    assert not (tmp_path / "ran").exists()


def test_an_impossible_disk_limit_for_a_pytorch_program_is_not_blamed_on_tensorflow(tmp_path: Path) -> None:
    (tmp_path / "torch_step.py").write_text("import torch\nprint(torch.randn(3).sum())\n")
    proc = diverge(["--max-dump-mb", "nan", "--", sys.executable, "torch_step.py"], tmp_path)
    assert proc.returncode == 2 and "argument --max-dump-mb" in proc.stderr
    assert "TensorFlow" not in proc.stdout + proc.stderr


# ---- item: a run that failed or recorded less is never "no difference" --------------------------------
def json_report(args: list[str], cwd: Path) -> tuple[int, dict, str]:
    proc = diverge(["--output-format", "json", *args], cwd)
    assert proc.stdout, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_runs_that_fail_after_the_same_work_give_no_verdict_with_their_error(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    (tmp_path / "ends_badly.py").write_text(ENDS_BADLY)
    proc = diverge(["--seed", "1", "--", sys.executable, "ends_badly.py", "same", "exit-7"], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr[-2000:]
    assert "no difference" not in proc.stdout
    assert "no verdict" in proc.stdout
    assert "run 1 exited with status 7: the disk is on fire" in proc.stdout
    assert "run 2 exited with status 7: the disk is on fire" in proc.stdout


def test_a_difference_before_a_failure_is_still_reported_with_the_error(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    (tmp_path / "ends_badly.py").write_text(ENDS_BADLY)
    code, report, err = json_report(["--", sys.executable, "ends_badly.py", "random", "raise"], tmp_path)
    assert code == 1 and report["verdict"] == "differ", err[-2000:]
    assert report["first"]["op_type"] == "RandomUniform"
    assert report["failures"] == ["run 1 exited with status 1: RuntimeError: the disk is on fire",
                                  "run 2 exited with status 1: RuntimeError: the disk is on fire"]


def test_a_run_that_recorded_less_because_it_failed_gives_no_verdict(tmp_path: Path) -> None:
    """Run 2 stops before the sum: that it recorded fewer ops is its failure, not a difference."""
    pytest.importorskip("tensorflow")
    (tmp_path / "ends_badly.py").write_text(ENDS_BADLY)
    code, report, err = json_report(["--seed", "1", "--", sys.executable, "ends_badly.py", "same",
                                     "second-run-stops-early"], tmp_path)
    assert code == 2 and report["verdict"] == "incomplete", (report, err[-2000:])
    assert report["failures"] == ["run 2 exited with status 1: stopped early: no data left"]


@pytest.mark.parametrize("jit_compile", ["True", "auto"])
def test_an_xla_compiled_keras_model_is_recorded(tmp_path: Path, jit_compile: str) -> None:
    """tfdbg's DebugIdentityV2 ops cannot run inside XLA: under recording the functions run without
    XLA, and the report says so. ``"auto"`` asks for XLA only where a GPU is seen (TensorFlow's)."""
    tf = pytest.importorskip("tensorflow")
    (tmp_path / "keras_jit.py").write_text(KERAS_JIT)
    code, report, err = json_report(["--seed", "1", "--", sys.executable, "keras_jit.py", jit_compile], tmp_path)
    assert code == 0 and report["verdict"] == "same", (report["failures"], err[-2000:])
    assert report["exit_codes"] == [0, 0] and report["failures"] == []
    ops = {point["where"] for point in report["timeline"]}
    assert {"MatMul", "BiasAdd"} <= ops, "the ops of the training step were recorded"
    uses_xla = jit_compile == "True" or bool(tf.config.list_physical_devices("GPU"))
    said = [n for n in report["notes"] if "XLA" in n]
    assert len(said) == (1 if uses_xla else 0), report["notes"]


# ---- item: --report names a folder -------------------------------------------------------------------
def test_a_report_folder_receives_report_html(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("print('no framework here')\n")
    (tmp_path / "pages").mkdir()
    proc = diverge(["--report", "pages", "--", sys.executable, "plain.py"], tmp_path)
    assert proc.returncode == 2 and "internal error" not in proc.stderr, proc.stderr
    assert "nothing to compare: a run recorded no TensorFlow, PyTorch or JAX ops" in proc.stdout
    page = tmp_path / "pages" / "report.html"
    assert '<span id="verdict">no verdict</span>' in page.read_text(encoding="utf-8")
    assert f"report written to {Path('pages') / 'report.html'}" in proc.stderr, proc.stderr
    umask = os.umask(0o022)
    os.umask(umask)
    assert page.stat().st_mode & 0o777 == 0o666 & ~umask  # written whole, then moved: as readable as a new file
    assert [p.name for p in page.parent.iterdir()] == ["report.html"]
    (tmp_path / "marks.py").write_text("open('ran', 'w').close()\n")
    proc = diverge(["--report", "missing/report.html", "--", sys.executable, "marks.py"], tmp_path)
    assert proc.returncode == 2 and "detlint diverge: error: argument --report:" in proc.stderr, proc.stderr
    assert not (tmp_path / "ran").exists() and not (tmp_path / "missing").exists()


def test_the_last_error_is_the_program_s_not_a_library_s_log_line() -> None:
    from detlint.divergence.runs import last_error

    quiet_exit = ("WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
                  "I0000 00:00:1795626392.039127   29982 port.cc:153] oneDNN custom operations are on.\n"
                  "I0000 00:00:1795626392.1   29982 cpu_feature_guard.cc:227] This TensorFlow binary is optimized\n"
                  "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.\n")
    assert last_error(quiet_exit) == ""
    assert last_error("loading\nno data left for step 3\n" + quiet_exit) == "no data left for step 3"
    traceback = ('Traceback (most recent call last):\n  File "t.py", line 9, in <module>\n    fit()\n'
                 "tensorflow.python.framework.errors_impl.InvalidArgumentError: Graph execution error:\n\n"
                 "Detected unsupported operations\n" + quiet_exit + "E0000 00:00:1.2  7 x.cc:1] a native error\n")
    assert last_error(traceback) == ("tensorflow.python.framework.errors_impl.InvalidArgumentError: Graph execution "
                                     "error: Detected unsupported operations E0000 00:00:1.2  7 x.cc:1] a native error")
    assert last_error("ValueError: bad \x1b[31mcolour\x07\n") == "ValueError: bad \\x1b[31mcolour\\x07"
    assert len(last_error("RuntimeError: " + "x" * 5000)) == 300
