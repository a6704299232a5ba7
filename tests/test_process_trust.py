"""No hang and no process left behind: a FIFO in the project blocks no reader, a run ended by a
signal or by its parent's death takes its parser workers and era-scan child with it, and the
per-file time limit counts the worker's CPU time, not a busy machine's wall clock.

Each test reproduces one item of issue 27 (6, 7, 18) with real FIFOs, real signals and real
processes. Runs that could hang go through a subprocess in a session of its own: on a timeout
(the failure signal) the whole session is killed, so a failing test leaves nothing behind.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Optional

import pytest

from conftest import skip_if_session_ignores
from test_safety_inputs import GOOD, project

posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs and signals are POSIX")
HANG = 60  # seconds after which a run that should take a few counts as hung


def private_env(tmp_path: Path) -> dict[str, str]:
    """The environment with a TMPDIR of the test's own."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "DETLINT_RULES_DIR")}
    return {**env, "TMPDIR": str(tmp)}


def bounded(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = HANG) -> subprocess.CompletedProcess[str]:
    """``cmd`` in a session of its own; a run still going after ``timeout`` fails the test, and
    everything it started is killed first."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{' '.join(cmd)} hung (still running after {timeout} s)")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def detlint(root: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return bounded([sys.executable, "-m", "detlint", *args], root, private_env(tmp_path))


def python(code: str, cwd: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return bounded([sys.executable, "-c", textwrap.dedent(code)], cwd, private_env(tmp_path))


# ---- item 6: a FIFO in the project blocks no reader ----------------------------------------------------

@posix_only
@pytest.mark.parametrize("fifo", ["b.py", "b.ipynb", "sub/c.py"])
def test_a_fifo_in_the_project_does_not_hang_the_era_scan(tmp_path: Path, fifo: str) -> None:
    """No --tf-version: the era scan (in a forked child) reads every Python file of the project."""
    root = project(tmp_path, {"a.py": "x = 1\n", "sub/d.py": "y = 2\n"})
    os.mkfifo(root / fifo)
    proc = detlint(root, tmp_path, "--no-cache", "a.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All checks passed" in proc.stdout


@posix_only
@pytest.mark.parametrize("name", ["requirements.txt", "requirements-dev.txt"])
def test_a_fifo_named_like_a_requirements_file_does_not_hang_the_pin_reader(tmp_path: Path, name: str) -> None:
    """The TensorFlow version given: the PyTorch, Lightning, JAX and Keras pins are still read."""
    root = project(tmp_path, {"a.py": GOOD})
    os.mkfifo(root / name)
    proc = detlint(root, tmp_path, "--no-cache", "--tf-version", "2.21", "a.py")
    assert proc.returncode == 1 and "DET105" in proc.stdout, proc.stdout + proc.stderr


READERS = {
    # each reader given a FIFO, as after a file was swapped for one between a stat and the open
    "pyproject pins": "from detlint.settings.pins import pyproject_requirements as f; print(f(FIFO, print))",
    "Pipfile pins": "from detlint.settings.pins import pipfile_requirements as f; print(f(FIFO))",
    "dependency file text": "from detlint.settings.pins import _read as f; print(repr(f(FIFO)))",
    "era scan": "from detlint.settings.eras import code_era; from detlint.knowledge.kb import load; "
                "print(code_era([FIFO], load().eras))",
    "settings": "from detlint.settings.config import _read_pyproject as f, ConfigError\n"
                "try:\n    print(f(FIFO))\nexcept ConfigError as exc:\n    print('ConfigError', exc)",
    "settings (ours)": "from detlint.settings.config import _read_pyproject as f, ConfigError\n"
                       "try:\n    print(f(FIFO, ours=True))\nexcept ConfigError as exc:\n    print('ConfigError', exc)",
    "source file": "from detlint.lint.files.sources import read_source as f; print(f(FIFO).error)",
}


@posix_only
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_of_project_files_refuses_a_fifo_without_blocking(tmp_path: Path, reader: str) -> None:
    fifo = tmp_path / "pyproject.toml"
    os.mkfifo(fifo)
    proc = python(f"from pathlib import Path\nFIFO = Path({str(fifo)!r})\n{READERS[reader]}\n", tmp_path, tmp_path)
    assert proc.returncode == 0, proc.stderr
    if reader.startswith("settings"):  # said, not silently taken as empty
        assert "not a regular file (a named pipe)" in proc.stdout + proc.stderr


def test_the_shared_check_opens_a_regular_file_and_refuses_anything_else(tmp_path: Path) -> None:
    from detlint.lint.files.sources import NotRegularFile, read_regular

    (tmp_path / "f.txt").write_bytes(b"0123456789")
    assert read_regular(tmp_path / "f.txt") == b"0123456789"
    assert read_regular(tmp_path / "f.txt", 4) == b"0123"  # at most the limit: the head
    with pytest.raises(NotRegularFile, match="a directory"):
        read_regular(tmp_path)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "p")
        with pytest.raises(NotRegularFile, match="a named pipe"):
            read_regular(tmp_path / "p")


# ---- item 7: a run ended by a signal, or by its parent's death, takes its children along ---------------

# valid Python that libcst needs seconds for: keeps a parser worker busy (no time limit applies)
SLOW = "DATA = [\n" + "".join(f"    ({i}, {i * 0.5}, 'v{i}'),\n" for i in range(30_000)) + "]\n"
# the real command line with an era scan that never ends on its own (nothing pins TensorFlow);
# the scan, in its child, first says its pid in $ERA_MARK
ERA_SCAN_SLEEPS = """
import os, sys, time
import detlint.settings.eras as eras
def scan(files, known):
    with open(os.environ["ERA_MARK"] + ".tmp", "w") as mark:
        mark.write(str(os.getpid()))
    os.replace(os.environ["ERA_MARK"] + ".tmp", os.environ["ERA_MARK"])
    time.sleep(3600)
eras.code_era = scan
from detlint.cli import main
sys.exit(main(sys.argv[1:]))
"""
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds processes through /proc")


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: state, ppid, pgrp, session, ...; [] when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def session_members(session: int) -> list[int]:
    """Live processes of ``session`` (a zombie is dead: only its exit status is left)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and fields[0] not in "ZX" and int(fields[3]) == session:
                found.append(int(entry.name))
    return sorted(found)


def start_run(root: Path, tmp_path: Path, era_scan_sleeps: bool, *args: str) -> subprocess.Popen[str]:
    """detlint on ``root`` in a session of its own (session id = its pid), so that whatever it
    starts can be found, even once orphaned, and killed by the test if it is left behind."""
    head = ["-c", ERA_SCAN_SLEEPS] if era_scan_sleeps else ["-m", "detlint"]
    env = {**private_env(tmp_path), "ERA_MARK": str(tmp_path / "era-scan.pid")}
    return subprocess.Popen([sys.executable, *head, ".", "--no-cache", *args], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _settled(proc: subprocess.Popen[str], era_mark: Optional[Path]) -> list[int]:
    """The run's children that are past asking to die with it: the era-scan child once its scan
    began (it wrote ``era_mark``), parser workers once ready (a second thread: the parsing one)."""
    if era_mark is not None:
        return [int(era_mark.read_text())] if era_mark.exists() else []
    return [pid for pid in session_members(proc.pid)
            if pid != proc.pid and len(list(Path(f"/proc/{pid}/task").glob("*"))) >= 2]


def freeze_children(proc: subprocess.Popen[str], count: int, era_mark: Optional[Path]) -> list[int]:
    """SIGSTOP ``count`` of the run's children as each settles: frozen, none can finish its work
    and leave on its own, nor end the run (bounded wait)."""
    frozen: list[int] = []
    for _ in range(HANG * 20):
        for pid in _settled(proc, era_mark):
            if pid not in frozen:
                os.kill(pid, signal.SIGSTOP)
                frozen.append(pid)
        if len(frozen) >= count:
            return frozen
        if proc.poll() is not None:
            pytest.fail(f"detlint ended before {count} children were seen: {proc.communicate()}")
        time.sleep(0.05)
    pytest.fail(f"fewer than {count} children of detlint were seen in {HANG} s")


def left_behind(session: int) -> list[int]:
    """The session's live processes, after a bounded wait for them to end."""
    for _ in range(HANG * 20):
        if not session_members(session):
            return []
        time.sleep(0.05)
    return session_members(session)


def end_session(proc: subprocess.Popen[str]) -> None:
    """Kill what a failing test left of the session it started (its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        pass


@linux_only
@pytest.mark.parametrize("era_scan", [False, True], ids=["parser workers", "era scan"])
@pytest.mark.parametrize("ending", ["SIGTERM", "SIGINT", "SIGHUP", "SIGKILL"])
def test_a_run_ended_by_a_signal_leaves_no_process_behind(tmp_path: Path, ending: str, era_scan: bool) -> None:
    """The children are frozen first, so each must be taken along: by the signal's handler, or
    by the kernel as detlint dies (SIGKILL). Both parser workers (-j 2) are frozen, one of them
    with the slow file: the run cannot end on its own; or the era-scan child, which the run
    waits for before it reports."""
    skip_if_session_ignores(getattr(signal, ending))
    root = project(tmp_path, {"a_slow.py": SLOW, "b.py": GOOD, "c.py": GOOD, "d.py": GOOD})
    proc = start_run(root, tmp_path, era_scan, "-j", "2", "--file-timeout", "0")
    try:
        freeze_children(proc, 1 if era_scan else 2, tmp_path / "era-scan.pid" if era_scan else None)
        signum = getattr(signal, ending)
        os.kill(proc.pid, signum)
        proc.wait(timeout=HANG)  # not communicate(): a child left behind keeps the pipes open
        assert proc.returncode == (-signum if ending == "SIGKILL" else 128 + signum)
        assert left_behind(proc.pid) == []
    finally:
        end_session(proc)


# the signal comes while a finaliser runs: Python swallows what its handler raises there
SWALLOWED = """
import os, signal, sys
from detlint.child_processes import Terminated, ended_by_signals
class Finalised:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs here, inside the finaliser
            pass
try:
    with ended_by_signals():
        Finalised()
        print("went on", flush=True)
except Terminated as exc:
    sys.exit(exc.exit_status)
"""


def test_a_signal_whose_exception_a_finaliser_swallowed_still_ends_the_run(tmp_path: Path) -> None:
    proc = python(SWALLOWED, tmp_path, tmp_path)
    assert "Exception ignored in" in proc.stderr  # the case at hand
    assert proc.returncode == 128 + signal.SIGTERM, proc.stdout + proc.stderr


# started from a thread that ends at once: the kernel's parent-death signal would follow that
# thread, so the child watches for its parent instead (as where prctl is not available)
FROM_A_THREAD = """
import threading, time
from detlint.child_processes import in_background
threading.Thread(target=lambda: in_background(lambda: time.sleep(3600))).start()
time.sleep(3600)
"""


@linux_only
def test_a_child_started_from_another_thread_outlives_that_thread_and_dies_with_the_process(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", FROM_A_THREAD], env=private_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # settled: the child runs its watching thread beside its own
        for _ in range(HANG * 20):
            children = [pid for pid in session_members(proc.pid) if pid != proc.pid]
            if children and len(list(Path(f"/proc/{children[0]}/task").glob("*"))) >= 2:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"no child with a watching thread: {session_members(proc.pid)}")
        assert session_members(proc.pid) == sorted([proc.pid, *children])  # the starting thread is gone
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=HANG)
        assert left_behind(proc.pid) == []
    finally:
        end_session(proc)


# ---- item 18: the per-file time limit counts the worker's CPU time -----------------------------------

# the real ParserPool with a work function of the test's own in place of the parse
POOL = """
import os, signal, sys, time
from detlint.lint.ftypes import FileFacts
from detlint.lint.isolation import ParserPool, Task

def stops_itself(kb, task):  # descheduled mid-task, as on a loaded machine, until the test resumes it
    os.kill(os.getpid(), signal.SIGSTOP)
    return FileFacts(path=task.path), None

def spins(kb, task):  # really busy: parses nothing, ever
    while True:
        pass

def stalls(kb, task):  # uses no CPU and never answers (stuck in I/O)
    time.sleep(3600)

pool = ParserPool(None, float(sys.argv[2]), work=globals()[sys.argv[1]])
try:
    (facts, _), = pool.run([Task("f.py")])
finally:
    pool.close()
print("ERROR:", facts.error)
"""


@linux_only
def test_a_worker_descheduled_for_longer_than_the_limit_is_not_too_slow(tmp_path: Path) -> None:
    """The worker stops itself (SIGSTOP) in the middle of its file and the test resumes it
    after three times the limit: wall-clock time passed, CPU time did not."""
    limit = 1.0
    proc = subprocess.Popen([sys.executable, "-c", POOL, "stops_itself", str(limit)], env=private_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for _ in range(HANG * 20):
            stopped = [pid for pid in session_members(proc.pid) if _stat(pid)[:1] == ["T"]]
            if stopped or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert len(stopped) == 1, proc.communicate()
        time.sleep(3 * limit)
        try:
            os.kill(stopped[0], signal.SIGCONT)
        except ProcessLookupError:  # killed as too slow meanwhile: the output says so
            pass
        out, err = proc.communicate(timeout=HANG)
        assert out == "ERROR: None\n", out + err
    finally:
        end_session(proc)


@linux_only
def test_a_worker_that_spins_past_the_cpu_limit_is_too_slow(tmp_path: Path) -> None:
    proc = bounded([sys.executable, "-c", POOL, "spins", "0.3"], tmp_path, private_env(tmp_path))
    assert proc.stdout == "ERROR: too slow to check: gave up after 0.3 s of CPU time (the file-timeout setting)\n", \
        proc.stderr


@linux_only
def test_a_worker_stalled_without_using_cpu_ends_at_the_wall_clock_backstop(tmp_path: Path) -> None:
    from detlint.lint.isolation import BACKSTOP_FACTOR

    proc = bounded([sys.executable, "-c", POOL, "stalls", "0.2"], tmp_path, private_env(tmp_path))
    assert proc.stdout.startswith(f"ERROR: too slow to check: no answer after {BACKSTOP_FACTOR * 0.2:g} s"), \
        proc.stdout + proc.stderr
    assert "s of CPU time" in proc.stdout


@linux_only  # elsewhere the limit is of wall-clock time
def test_a_file_whose_parse_spins_past_the_limit_is_too_slow_on_the_command_line(tmp_path: Path) -> None:
    root = project(tmp_path, {"a_slow.py": SLOW, "b.py": GOOD})
    proc = detlint(root, tmp_path, ".", "--no-cache", "--tf-version", "2.21", "-j", "1", "--file-timeout", "0.5")
    assert proc.returncode == 1, proc.stderr
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("a_slow.py:")]
    assert "DET001" in line and "too slow to check: gave up after 0.5 s of CPU time" in line
    assert "DET105" in proc.stdout
