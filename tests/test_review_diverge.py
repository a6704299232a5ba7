"""What a review of `detlint diverge` and the knowledge-base cache found: records left behind by a
clean-up that was cut short or could not finish (and said to be removed), an internal error
instead of a verdict when a run's records cannot be read, control characters in a run's last
error shown unlike every other report, a half-written knowledge-base copy left on a failed
write, and a signal handler that could SIGKILL a background child's pid after it was reaped.

Real programs, real signals, a real file size limit (RLIMIT_FSIZE), audit events to see which
signals were sent; TMPDIR and XDG_CACHE_HOME in tmp_path.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from test_diverge_trust import diverge, environment, private_temp
from test_process_trust import bounded, private_env

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds processes through /proc")

MANY_FILES = """\
import os, sys
d = os.environ["DETLINT_DIVERGE_DUMP"]
os.makedirs(d, exist_ok=True)
with open(sys.argv[1], "a") as pids:
    pids.write(f"{os.getpid()}\\n")
for i in range(20000):
    open(os.path.join(d, f"f{i}"), "w").close()
"""

PARTIAL = """\
import os, sys
d = os.environ["DETLINT_DIVERGE_DUMP"]
os.makedirs(d, exist_ok=True)
open(os.path.join(d, "tfdbg_events.partial"), "w").close()
if sys.argv[1] == "fail":
    print("Traceback (most recent call last):\\nRuntimeError: CUDA out of memory at step 1", file=sys.stderr)
    sys.exit(7)
"""

# detlint's own rmtree of its records cut short, as when something the program left running writes on
# into them (a race no test can win every time on a loaded machine): one file stays behind
RMTREE_CUT_SHORT = """\
import os, shutil
_rmtree = shutil.rmtree
def rmtree(path, *args, **kwargs):
    if os.path.basename(str(path)).startswith("detlint-diverge-"):
        open(os.path.join(path, "still-written"), "w").close()
        for entry in os.scandir(path):
            if entry.name != "still-written":
                _rmtree(entry.path, ignore_errors=True) if entry.is_dir() else os.unlink(entry.path)
        return
    return _rmtree(path, *args, **kwargs)
shutil.rmtree = rmtree
"""


def _gone(pid: int) -> bool:
    """Whether ``pid`` is no longer a process at all (reaped by detlint, not just a zombie)."""
    return not Path(f"/proc/{pid}").exists()


# ---- 1. the records go even when a signal comes during the clean-up, and "removed" is checked -----------
@linux_only
def test_a_sigterm_during_the_clean_up_of_many_records_leaves_nothing(tmp_path: Path) -> None:
    """The second run's program has exited (its pid gone from /proc): detlint is comparing or
    removing 20,000 files when SIGTERM comes; nothing may be left in TMPDIR."""
    (tmp_path / "many.py").write_text(MANY_FILES)
    pids = tmp_path / "pids"
    proc = subprocess.Popen([sys.executable, "-m", "detlint", "diverge", "--time-limit", "300", "--",
                             sys.executable, "many.py", str(pids)], cwd=tmp_path,
                            env=environment(private_temp(tmp_path)), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        give_up = time.monotonic() + 300
        while not (pids.exists() and len(pids.read_text().split()) == 2
                   and all(_gone(int(p)) for p in pids.read_text().split())):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < give_up, "the second run never ended"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    left = list(private_temp(tmp_path).iterdir())
    assert left == [], (left, err[-2000:])
    if proc.returncode == 143:  # the signal came before detlint had finished
        assert "the records removed" in err


def test_records_that_could_not_be_removed_are_not_said_to_be(tmp_path: Path) -> None:
    """The records' folder is still there after detlint's removal: detlint says where the records
    were left instead of "removed"."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(RMTREE_CUT_SHORT)
    (tmp_path / "plain.py").write_text("print('trained')\n")
    temp = private_temp(tmp_path)
    env = {**environment(temp), "PYTHONPATH": f"{hook}{os.pathsep}{ROOT}"}
    proc = bounded([sys.executable, "-m", "detlint", "diverge", "--runs", "2", "--", sys.executable, "plain.py"],
                   tmp_path, env, timeout=300)
    left = sorted(temp.glob("detlint-diverge-*"))
    assert [p.name for p in left[0].iterdir()] == ["still-written"], left
    assert "(removed)" not in proc.stdout, proc.stdout
    assert f"left in {left[0]}" in proc.stdout, proc.stdout + proc.stderr[-2000:]


# ---- 2. records that cannot be read: no verdict, never an internal error ----------------------------------
def test_a_failed_run_with_unreadable_records_gives_its_error_and_no_verdict(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    (tmp_path / "partial.py").write_text(PARTIAL)
    proc = diverge(["--output-format", "json", "--", sys.executable, "partial.py", "fail"], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr[-2000:]
    assert "internal error" not in proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"] == "incomplete"
    assert report["failures"] == ["run 1 exited with status 7: RuntimeError: CUDA out of memory at step 1",
                                  "run 2 exited with status 7: RuntimeError: CUDA out of memory at step 1"]


def test_runs_that_ended_well_with_unreadable_records_give_no_verdict_with_the_reason(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    (tmp_path / "partial.py").write_text(PARTIAL)
    proc = diverge(["--", sys.executable, "partial.py", "ok"], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr[-2000:]
    assert "internal error" not in proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("no verdict: the runs' records could not")]
    assert len(lines) == 1 and "tfdbg" in lines[0], proc.stdout


# ---- 3. a run's last error writes control characters out as every report does -----------------------------
def test_the_last_error_writes_control_characters_out_as_every_report_does() -> None:
    from detlint.divergence.runs import last_error
    from detlint.lint.escapes import shown

    output = "Traceback (most recent call last):\nRuntimeError: bad \x1b]0;title\x07 input\n"
    assert last_error(output) == shown("RuntimeError: bad \x1b]0;title\x07 input")
    assert last_error(output) == "RuntimeError: bad \\x1b]0;title\\x07 input"


# ---- 5. a knowledge-base copy whose write fails leaves no temporary file ----------------------------------
@pytest.mark.skipif(os.name != "posix", reason="needs RLIMIT_FSIZE")
def test_a_failed_write_of_the_knowledge_base_copy_leaves_no_temporary_file(tmp_path: Path) -> None:
    import resource

    xdg = tmp_path / "xdg"
    env = {**private_env(tmp_path), "XDG_CACHE_HOME": str(xdg), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(ROOT)}

    def small_files() -> None:  # any file past 1 KB fails to grow (EFBIG; Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    proc = subprocess.run([sys.executable, "-c", "from detlint.knowledge import kb; print(len(kb.load().rules))"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, preexec_fn=small_files)
    assert proc.returncode == 0 and int(proc.stdout) > 0, proc.stderr[-2000:]
    cache = xdg / "detlint"
    assert cache.is_dir()
    assert list(cache.glob("kb-*.json")) == [], "the write did not fail: the limit was not met"
    assert list(cache.glob(".kb-*")) == []


# ---- 4. a background child is untracked before it is reaped -----------------------------------------------
KILL_AFTER_REAP = """\
import os, signal, sys
from detlint import child_processes

seen = []

def watch(frame, event, arg):  # a real SIGTERM the moment the child is reaped
    if event == "c_return" and arg is os.waitpid and not seen:
        seen.append("reaped")
        os.kill(os.getpid(), signal.SIGTERM)

def killed(event, args):  # every SIGKILL after that (audited even inside the signal's handler)
    if event == "os.kill" and args[1] == signal.SIGKILL and seen:
        seen.append("kill")

sys.addaudithook(killed)

try:
    with child_processes.ended_by_signals():
        result = child_processes.in_background(lambda: 42)
        sys.setprofile(watch)
        try:
            result()
        finally:
            sys.setprofile(None)
except child_processes.Terminated:
    pass
print(" ".join(seen))
"""


@linux_only
def test_a_signal_as_the_background_child_is_reaped_kills_no_reaped_pid(tmp_path: Path) -> None:
    """SIGTERM right after the era-scan child is reaped: the handler must not SIGKILL its pid,
    which is free for another process to take."""
    env = {**private_env(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = bounded([sys.executable, "-c", KILL_AFTER_REAP], tmp_path, env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["reaped"], proc.stdout
