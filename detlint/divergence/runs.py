"""One run of the program ``detlint diverge`` records: started in a session of its own, so that it
and every process it starts can be stopped together; stopped at the time limit (a little past
it, so that a program that stops itself at a training step can finish its record), at the disk
limit, and when detlint is interrupted (SIGINT, SIGTERM, SIGHUP: ``child_processes``'s
``ended_by_signals`` raises, and the program is stopped on the way out). The program's own
process is also SIGKILLed by Linux if detlint dies without a chance to stop it (kill -9); what
that process started is then the program's to stop. What went wrong is kept as one line for the
report."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Sequence

from detlint.child_processes import deferring, killed_with_this_process
from detlint.divergence.recorder import NOTES, PROGRESS, dump_size_mb
from detlint.lint.escapes import shown

POLL_S = 0.2
DEFAULT_LIMIT_S = 600.0  # a run's time limit when none is given
GRACE_MAX_S = 10.0  # past the limit, at most this long for the program to stop itself and write its record
TERM_WAIT_S = 5.0  # after SIGTERM, how long the program has before SIGKILL
ERROR_CHARS = 300
# what native code logs at INFO or WARNING level (TensorFlow's start-up lines, even when quietened):
# "I0000 00:00:1795626392.039127   29982 port.cc:153] oneDNN custom operations are on..."
NATIVE_LOG = re.compile(r"^[IW]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\]|^WARNING: All log messages before absl::"
                        r"|^To enable the following instructions: ")


@dataclass
class RunResult:
    code: int  # the exit status; negative: the signal that ended it
    stopped: str = ""  # the limit detlint stopped it at ("the time limit (5 s)"), or ""
    error: str = ""  # its last error, one line, or "" when none was seen
    notes: list[str] = field(default_factory=list)  # what the recorder said about the run

    def failure(self, run: int) -> str:
        """"" when the run ended well, else one line: what happened and its last error."""
        if self.stopped:
            return f"run {run} was stopped at {self.stopped}"
        if self.code == 0:
            return ""
        return f"run {run} {_ending(self.code)}" + (f": {self.error}" if self.error else "")


def _ending(code: int) -> str:
    if code > 0:
        return f"exited with status {code}"
    try:
        return f"was ended by {signal.Signals(-code).name}"
    except ValueError:
        return f"was ended by signal {-code}"


# ---- the program's process group ---------------------------------------------------------------------
def _ended(proc: "subprocess.Popen[bytes]") -> bool:
    """Whether the program's first process has ended. It is not reaped here: its id is also its
    process group's, and must not be reused by another process while the group is signalled."""
    if proc.returncode is not None:
        return True
    if os.name == "posix" and hasattr(os, "waitid"):
        try:
            return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            pass
    return proc.poll() is not None


def _signal_group(proc: "subprocess.Popen[bytes]", signum: int) -> None:
    if proc.returncode is not None:  # reaped: the group's id may belong to another process now
        return
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signum)
        else:
            proc.terminate() if signum == signal.SIGTERM else proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def stop(proc: "subprocess.Popen[bytes]") -> None:
    """End the program and every process of its group: SIGTERM, then SIGKILL to what is left
    after ``TERM_WAIT_S`` (at once when the program has ended by itself: its leftovers)."""
    with deferring():
        if not _ended(proc):
            _signal_group(proc, signal.SIGTERM)
            give_up = time.monotonic() + TERM_WAIT_S
            while not _ended(proc) and time.monotonic() < give_up:
                time.sleep(0.05)
        _signal_group(proc, signal.SIGKILL)
        proc.wait()


@contextmanager
def records_folder(left: list[str]) -> Iterator[str]:
    """A temporary folder for the runs' records, removed however the runs end; once begun, its
    removal runs to its end even when a signal comes meanwhile (``deferring``). A folder still
    there after it (something the program left running wrote on) is added to ``left``, so that
    no one is told it was removed."""
    folder = ""
    try:
        with deferring():
            folder = tempfile.mkdtemp(prefix="detlint-diverge-")
        yield folder
    finally:
        with deferring():
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
                if os.path.lexists(folder):
                    left.append(folder)


# ---- one run -----------------------------------------------------------------------------------------
def last_error(output: str) -> str:
    """The program's last error on one line: the exception of its last traceback (with the lines of
    its message), else its last line of output that is not a native library's INFO or WARNING log
    line; control characters written out as every report writes them (``escapes.shown``)."""
    lines = [line.rstrip() for line in output.splitlines() if not NATIVE_LOG.match(line)]
    tracebacks = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    found = ""
    if tracebacks:
        after = lines[tracebacks[-1] + 1:]
        start = next((i for i, line in enumerate(after) if line and not line[0].isspace()), None)
        if start is not None:
            found = " ".join(line.strip() for line in after[start:start + 8] if line.strip())
    if not found:
        found = next((line.strip() for line in reversed(lines) if line.strip()), "")
    found = shown(found)
    return found if len(found) <= ERROR_CHARS else found[:ERROR_CHARS - 3] + "..."


def read_notes(dump: str) -> list[str]:
    """What the recorder in the program wrote beside its record (one note a line)."""
    try:
        return [n for n in Path(dump + NOTES).read_text(encoding="utf-8").splitlines() if n.strip()]
    except (OSError, ValueError):
        return []


def _progress(run: str, dump: str) -> None:
    """``run 1/2: step 3, 12.5 MB`` on one line of stderr, only when it is a terminal."""
    try:
        if not sys.stderr.isatty():
            return
        step = Path(dump + PROGRESS).read_text().strip() if os.path.exists(dump + PROGRESS) else "0"
        sys.stderr.write(f"\r{run}: step {step}, {dump_size_mb(dump):.1f} MB recorded ")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def run_program(cmd: Sequence[str], env: dict[str, str], dump: str, seconds: Optional[float], max_mb: float,
                verbose: bool = False, run: str = "run") -> RunResult:
    """One run. Quiet by default (its stderr is kept in a file, never a pipe that could fill up and
    stall the program), with a progress line on a terminal; with ``verbose`` its output goes to
    this process's stderr. However this ends (the program's own end, a limit, an interrupt), the
    program and what it started are stopped before this returns or raises."""
    limit = seconds if seconds is not None else DEFAULT_LIMIT_S
    grace = min(GRACE_MAX_S, limit / 2)
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as err:
        if verbose:
            sys.stderr.flush()
            try:
                shown: Optional[int] = sys.stderr.fileno()
            except (AttributeError, OSError, ValueError):  # a stderr without a file (captured)
                shown = None
            out, errors = shown, None
        else:
            out, errors = subprocess.DEVNULL, err
        proc: Optional[subprocess.Popen[bytes]] = None
        stopped = ""
        shown_progress = False
        try:
            with deferring():  # a signal waits until the program is known, so that it can be stopped
                try:
                    proc = subprocess.Popen(list(cmd), env=env, stdout=out, stderr=errors,
                                            start_new_session=os.name == "posix",
                                            preexec_fn=killed_with_this_process())
                except OSError as exc:  # no such program, not executable: as a shell says it
                    return RunResult(127, error=f"cannot run {cmd[0]!r}: {exc.strerror or exc}")
            start = time.monotonic()
            while not _ended(proc):
                time.sleep(POLL_S)
                if not verbose:
                    _progress(run, dump)
                    shown_progress = True
                if time.monotonic() - start > limit + grace:
                    stopped = f"the time limit ({limit:g} s)"
                    break
                if dump_size_mb(dump) > 2 * max_mb:
                    stopped = f"the disk limit ({2 * max_mb:g} MB)"
                    break
        finally:
            if shown_progress and sys.stderr.isatty():
                sys.stderr.write("\r\033[K")  # the progress line goes once the run is over
                sys.stderr.flush()
            if proc is not None:
                stop(proc)
        err.seek(0)
        error = "" if verbose else last_error(err.read())
    return RunResult(proc.returncode, stopped, error, read_notes(dump))
