"""Child processes that end with the run (the parser workers, the era-scan child, the program
``detlint diverge`` records), and the one way detlint ends on a signal.

A child is told to die with the process that started it: on Linux with prctl(PR_SET_PDEATHSIG),
so that even a SIGKILL of detlint leaves nothing behind; elsewhere (or when it was started from a
thread that may end before the process does) a thread of the child watches for its parent to go.
The main process of a command-line run also kills the children it knows of when SIGTERM, SIGINT
or SIGHUP ends it, then ends with the conventional status: 128 + the signal's number (130 for
SIGINT, 143 for SIGTERM). A step that must run to its end once begun (starting a program so that
it is known, stopping it, removing records) defers that ending until it is over (``deferring``).
"""
from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NamedTuple, Optional, TypeVar

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
WATCH_INTERVAL = 0.5  # seconds between a watching thread's looks at its parent
ENDING_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")
T = TypeVar("T")


class Parent(NamedTuple):
    """Who starts a child, as the child needs to know it: taken before the fork."""
    pid: int
    main_thread: bool  # PR_SET_PDEATHSIG fires when the forking *thread* ends


def this_parent() -> Parent:
    return Parent(os.getpid(), threading.current_thread() is threading.main_thread())


class Terminated(BaseException):
    """SIGTERM or SIGHUP ended the run: unwinds as KeyboardInterrupt does for SIGINT (a
    BaseException, so that no ``except Exception`` takes it for one file's problem)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"ended by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


def _prctl() -> Optional[Callable[..., int]]:
    """Linux's prctl, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError, TypeError):
        return None


def _parent_death_signal() -> bool:
    """Ask Linux to SIGKILL this process when its parent ends; False where it cannot."""
    prctl = _prctl()
    try:
        return prctl is not None and int(prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, TypeError):
        return False


def killed_with_this_process() -> Optional[Callable[[], None]]:
    """For ``subprocess.Popen(preexec_fn=...)``: the started program is SIGKILLed when this
    process ends, however it ends (Linux; None elsewhere). The parent-death signal follows the
    starting thread, so call this from a thread that outlives the program (``detlint diverge``
    waits for it in the thread that started it). It covers the program's own process only: what
    that process starts is the program's to stop. prctl is looked up here, not in the new child,
    where only the call is left to make."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def in_child() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # gone before the program could ask to follow it
            os._exit(1)

    return in_child


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_INTERVAL)
    os._exit(1)  # orphaned: the run this child worked for is gone


def _ending_signals() -> set[int]:
    return {getattr(signal, name) for name in ENDING_SIGNALS if hasattr(signal, name)}


@contextmanager
def signals_held() -> Iterator[None]:
    """Around starting a child and tracking it: a signal that ends the run waits until the
    child is tracked (its handler must know every child: an untracked one, left stopped, would
    hang the interpreter's exit in multiprocessing's join). The child lets them through again
    in ``die_with_parent``."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _ending_signals())
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def die_with_parent(parent: Parent) -> None:
    """Called first in a new child: end when ``parent`` ends, however it ends."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _ending_signals())  # held while it was started
    if not (parent.main_thread and _parent_death_signal()):
        threading.Thread(target=_watch, args=(parent.pid,), name="detlint-watch-parent", daemon=True).start()
    if os.getppid() != parent.pid:  # it ended before this child could ask to follow it
        os._exit(1)


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> Optional[float]:
    """The CPU time (user + system, all threads) process ``pid`` has used so far; None where
    /proc cannot say (not Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()  # the name before it may hold spaces
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime: fields 14 and 15
    except (OSError, IndexError, ValueError):
        return None


# children of this process that a signal ending the run must take along: pid -> how to kill it
_LIVE: dict[int, Callable[[], None]] = {}
_ENDING: list[int] = []  # the signal that is ending the run, once one has come
_DEFERRING = [0]  # how many steps that must run to their end are under way


def _ending_exception(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def stop_if_ending() -> None:
    """Raise again what a signal ending the run raised: raised inside a finaliser (a
    ``__del__`` the garbage collector ran), it was swallowed there, and the run must not go on
    (starting workers, waiting for the children the handler killed) as if nothing had come."""
    if _ENDING:
        raise _ending_exception(_ENDING[0])


@contextmanager
def deferring() -> Iterator[None]:
    """A step that must run to its end once begun: a signal ending the run that comes meanwhile
    takes effect (raises) once the outermost such step is over, not inside it."""
    _DEFERRING[0] += 1
    try:
        yield
    finally:
        _DEFERRING[0] -= 1
        if not _DEFERRING[0]:
            stop_if_ending()


def track(pid: int, kill: Callable[[], None]) -> None:
    """``kill`` stops child ``pid`` at once and waits for it (reaps it). A child started while
    the run is ending is stopped at once."""
    if _ENDING:
        kill()
        stop_if_ending()
    _LIVE[pid] = kill


def untrack(pid: int) -> None:
    _LIVE.pop(pid, None)


def kill_children() -> None:
    for pid, kill in list(_LIVE.items()):
        try:
            kill()
        except Exception:  # noqa: BLE001 - one child that cannot be stopped must not keep the others alive
            pass
        untrack(pid)


@contextmanager
def ended_by_signals() -> Iterator[None]:
    """A command-line run (``detlint``, ``detlint diverge``): SIGTERM, SIGINT and SIGHUP kill the
    tracked children first, then raise ``Terminated`` (``KeyboardInterrupt`` for SIGINT) in the
    main thread, at once or when the step under way is over (``deferring``); the first signal
    decides the exit status. A signal that is ignored (``nohup``) stays ignored; outside the main
    thread nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        if os.getpid() != owner:  # a forked child that has not yet set its own: what was there before
            old = previous.get(signum, signal.SIG_DFL)
            if callable(old):
                old(signum, frame)
                return
            signal.signal(signum, old if old is not None else signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        _ENDING[:] = _ENDING or [signum]
        kill_children()
        if not _DEFERRING[0]:
            stop_if_ending()

    for name in ENDING_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is None or signal.getsignal(signum) is signal.SIG_IGN:
            continue
        previous[signum] = signal.signal(signum, handler)
    try:
        yield
        stop_if_ending()  # the run went on (its exception was swallowed): it still ends as signalled
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)
        _ENDING.clear()


def _kill_and_reap(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def in_background(work: Callable[[], T]) -> Callable[[], T]:
    """``work`` run in a forked child while the caller goes on (the era scan); the returned
    function waits for its result (or, where there is no fork or the child fails, runs ``work``
    itself). The child dies with the run, however the run ends."""
    if not hasattr(os, "fork") or sys.platform != "linux":
        return work
    parent = this_parent()
    with signals_held():
        try:
            read_end, write_end = os.pipe()
            pid = os.fork()
        except OSError:
            return work
        if pid:
            track(pid, lambda: _kill_and_reap(pid))
    if pid == 0:  # the child: pure Python text scanning, then gone without running exit handlers
        code = 1
        gc.disable()  # the parent's garbage (a finished run's parser pool) is not this child's to finalise
        try:
            die_with_parent(parent)
            os.close(read_end)
            from detlint.run_inputs import with_notes  # what the child reads is the run's input too

            with os.fdopen(write_end, "wb") as out:
                out.write(pickle.dumps(with_notes(work)))
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    answer: list[T] = []

    def result() -> T:
        stop_if_ending()  # the handler killed and reaped the child
        if not answer:
            with os.fdopen(read_end, "rb") as handle:
                data = handle.read()
            # the child is waited for without reaping it, then untracked and reaped with the ending
            # signals held: a handler never kills a pid that is reaped (and may be another's)
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            with signals_held():
                untrack(pid)
                _, status = os.waitpid(pid, 0)
            if data and status == 0:
                from detlint.run_inputs import merge_notes

                value, notes = pickle.loads(data)
                merge_notes(notes)
                answer.append(value)
            else:
                answer.append(work())
        return answer[0]

    return result
