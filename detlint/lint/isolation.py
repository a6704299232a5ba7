"""Parsing out of the main process, so that one file cannot take the run down with it.

libcst's native parser can crash the interpreter (a segfault on thousands of nested brackets)
and takes minutes on some pathological input. Files are parsed in worker processes: a worker
that dies costs its file a DET001 ("the parser crashed"), one that runs past the time limit is
killed and its file gets "too slow to check"; the run goes on with a fresh worker. The limit is
of the worker's CPU time, read from /proc (elsewhere, of wall-clock time): on a loaded machine a
file's parse takes longer than alone, not more work. A worker that hardly runs (stalled in I/O,
stopped) still ends, at BACKSTOP_FACTOR times the limit of wall-clock time.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, TypeVar

from detlint.child_processes import (Parent, cpu_seconds, die_with_parent, signals_held, stop_if_ending, this_parent,
                                     track, untrack)
from detlint.lint.ftypes import FileFacts

T = TypeVar("T")
# what a worker that dies or runs out of time leaves as a file's error: not the file's fault, so
# neither cached nor replayed (a second run may well check the file)
TRANSIENT = ("too slow to check", "the parser crashed")
DEEP_STACK = 512 * 1024 * 1024  # virtual; only the pages a deep parse touches are used
DEEP_RECURSION = 50_000
PYTHON_RECURSION = 1000  # the interpreter's default
STARTUP_LIMIT = 120.0  # seconds a new worker may take to import libcst and say it is ready
BACKSTOP_FACTOR = 10  # a task gets at most this many times the file-timeout of wall-clock time
RECHECK = 0.05  # seconds: the least time before a worker's CPU time is read again (it counts in ticks)


def transient(facts: FileFacts) -> bool:
    """Whether a file's error says the worker died or ran out of time, not what the file is."""
    return facts.error is not None and facts.error.startswith(TRANSIENT)


def run_deep(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a thread with a large stack and recursion limit: libcst's visitors are
    recursive, and valid Python nested 150 deep overflows the default limit of 1000."""
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(fn(*args))
        except BaseException as exc:  # re-raised in the caller's thread
            error.append(exc)

    try:
        old_size = threading.stack_size(DEEP_STACK)
    except (ValueError, RuntimeError):  # a platform that will not give threads a big stack
        return fn(*args)
    old_limit = sys.getrecursionlimit()
    try:
        thread = threading.Thread(target=target, name="detlint-parse", daemon=True)
        sys.setrecursionlimit(max(old_limit, DEEP_RECURSION))
        thread.start()
    finally:
        threading.stack_size(old_size)
    try:
        thread.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if error:
        raise error[0]
    return result[0]


@contextmanager
def python_recursion() -> Iterator[None]:
    """Python's default recursion limit again, inside ``run_deep``: whether the interpreter itself
    can compile a file is judged as ``python file.py`` would judge it."""
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(min(limit, PYTHON_RECURSION))
    except RecursionError:  # already deeper than that: keep the limit
        pass
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


@dataclass
class Task:
    path: str
    data: Optional[bytes] = None  # the bytes already read (the cache key was made from them)
    text: Optional[str] = None  # or a text to check in place of the file (stdin)
    max_bytes: int = 0
    links: Optional[dict[str, str]] = None  # names taken from project modules (see links.py)


def _work(kb: Any, task: Task) -> tuple[FileFacts, Any]:
    from detlint.lint.engine import collect_text, facts_for_file

    try:
        if task.text is not None:
            return collect_text(kb, Path(task.path), task.text, task.max_bytes, task.links), None
        return facts_for_file(kb, Path(task.path), task.data, task.max_bytes, task.links)
    except Exception as exc:  # one file's surprise must not stop the others
        return FileFacts(path=task.path, error=f"internal error: {type(exc).__name__}: {exc}"), None


def work_here(kb: Any, tasks: list[Task]) -> list[tuple[FileFacts, Any]]:
    """The tasks in this process, unprotected (flake8 runs detlint in processes of its own)."""
    return [_work(kb, task) for task in tasks]


Work = Callable[[Any, Task], "tuple[FileFacts, Any]"]  # what a worker does with a task: _work, or a test's


def _serve(conn: Connection, kb: Any, parent: Parent, work: Work) -> None:
    """A worker: say ready once libcst is imported (not part of the first file's time), then
    answer one task at a time until told to stop or the parent goes away (it dies with the run,
    however the run ends). All on one deep-stack thread: a thread per file would cost a malloc
    arena each, and memory with it."""
    die_with_parent(parent)
    from detlint.run_inputs import forget

    forget()  # a forked worker parses what it is sent and reads nothing: its audit events are not inputs
    try:
        import libcst  # noqa: F401

        conn.send("ready")
        run_deep(_answer, conn, kb, work)
    except (EOFError, OSError, KeyboardInterrupt):
        return


def _answer(conn: Connection, kb: Any, work: Work) -> None:
    while True:
        task = conn.recv()
        if task is None:
            return
        conn.send(work(kb, task))


class _Worker:
    def __init__(self, context: Any, kb: Any, work: Work = _work) -> None:
        self.kb = kb
        self.work = work
        self.owner = os.getpid()
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, kb, this_parent(), work), daemon=True,
                                       name="detlint-parser")
        with signals_held():
            self.process.start()
            track(self.process.pid, self._kill)
        child.close()
        self.ready = False
        self.task: Optional[int] = None
        self.deadline = time.monotonic() + STARTUP_LIMIT
        self.backstop = self.deadline
        self.cpu_start: Optional[float] = None  # its CPU time when the task began

    def waited_for(self) -> bool:
        """Starting up or working on a task: its deadline counts."""
        return not self.ready or self.task is not None

    def _kill(self) -> None:
        """At once (a signal is ending the run)."""
        self.process.kill()
        self.process.join(5)

    def stop(self, kill: bool = False) -> None:
        if os.getpid() != self.owner:
            # a forked child (a later worker) finalising a finished pool it inherited as garbage:
            # the worker is its parent's to stop
            return
        if kill:
            self.process.kill()
        elif self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        untrack(self.process.pid)
        self.conn.close()

    def death(self) -> str:
        self.process.join(5)
        code = self.process.exitcode
        if code is not None and code < 0:
            try:
                return signal.Signals(-code).name
            except ValueError:
                return f"signal {-code}"
        return f"exit code {code}"


def _context() -> Any:
    # fork starts a worker in milliseconds and shares the loaded knowledge base; detlint's own
    # process has no threads when it forks. Elsewhere (macOS, Windows) spawn is the safe choice.
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    return multiprocessing.get_context(method)


_STARTED_EARLY: list[_Worker] = []


def start_early(kb: Any) -> None:
    """Start one worker before the run knows what it will parse: its import of libcst (a fifth
    of a second) then runs beside the main process's own start (the era scan of a large
    project), not before the first file's parse. The first pool for ``kb`` takes it over; an
    unused one, a daemon, ends with the run."""
    if _STARTED_EARLY:
        return
    try:
        _STARTED_EARLY.append(_Worker(_context(), kb))
    except (AssertionError, OSError):
        return
    ParserPool.workers_started += 1


class ParserPool:
    """Worker processes that turn tasks into ``(FileFacts, Notebook | None)``; lives until closed."""

    workers_started = 0  # over the whole process: lets tests see whether a run parsed anything

    def __init__(self, kb: Any, timeout: float, work: Work = _work) -> None:
        self.kb = kb
        self.timeout = timeout
        self.work = work  # tests give a function of their own in place of the parse
        self.workers: list[_Worker] = [w for w in _STARTED_EARLY if w.kb is kb and w.work is work]
        _STARTED_EARLY.clear()
        self.broken = False  # workers cannot start here: parse in this process instead

    def run(self, tasks: list[Task], jobs: int = 1) -> list[tuple[FileFacts, Any]]:
        results: list[Optional[tuple[FileFacts, Any]]] = [None] * len(tasks)
        queue = deque(range(len(tasks)))
        wanted = max(1, min(jobs, len(tasks)))
        while not self.broken and (queue or any(w.task is not None for w in self.workers)):
            stop_if_ending()  # its workers were killed by a signal's handler
            while queue and len(self.workers) < wanted:
                try:
                    self.workers.append(_Worker(_context(), self.kb, self.work))
                except (AssertionError, OSError):  # e.g. inside a daemonic process, or out of processes
                    self.broken = not self.workers
                    break
                ParserPool.workers_started += 1
            for worker in self.workers:
                if worker.ready and worker.task is None and queue:
                    try:
                        worker.conn.send(tasks[queue[0]])
                    except OSError:  # it died while idle: _check replaces it
                        continue
                    worker.task = queue.popleft()
                    self._begin(worker)
            self._wait()
            for worker in list(self.workers):
                self._check(worker, tasks, results)
        left = [t for r, t in zip(results, tasks) if r is None]  # only when workers cannot start at all
        here = iter(run_deep(work_here, self.kb, left) if left else [])
        return [r if r is not None else next(here) for r in results]

    def _wait(self) -> None:
        handles: list[Any] = [w.conn for w in self.workers] + [w.process.sentinel for w in self.workers]
        if handles:
            soonest = min((w.deadline for w in self.workers if w.waited_for()), default=float("inf"))
            wait(handles, timeout=min(max(0.0, soonest - time.monotonic()), 3600.0))

    def _check(self, worker: _Worker, tasks: list[Task], results: list[Any]) -> None:
        try:
            message = worker.conn.recv() if worker.conn.poll() else None
            alive = worker.process.is_alive()
        except (EOFError, OSError):
            message, alive = None, False
        if message is not None:
            if worker.task is None:
                worker.ready = True
            else:
                results[worker.task] = message
                worker.task = None
            return
        slow = self._too_slow(worker) if alive else None
        if alive and slow is None:
            return
        self.workers.remove(worker)
        reason = worker.death() if not alive else None
        worker.stop(kill=alive)
        if worker.task is None:
            self.broken = self.broken or not worker.ready
            return
        path = tasks[worker.task].path
        error = slow if alive and slow else f"the parser crashed on this file ({reason}); the other files were checked"
        results[worker.task] = (FileFacts(path=path, error=error), None)

    def _begin(self, worker: _Worker) -> None:
        """A task was sent: its time starts."""
        now = time.monotonic()
        worker.cpu_start = cpu_seconds(worker.process.pid)
        worker.deadline = now + self.timeout if self.timeout > 0 else float("inf")
        worker.backstop = now + BACKSTOP_FACTOR * self.timeout if self.timeout > 0 else float("inf")

    def _too_slow(self, worker: _Worker) -> Optional[str]:
        """Why a live worker is to be stopped (its task's error), or None. Past its deadline, a
        task whose worker has used less CPU time than the limit gets a later one: the soonest
        the rest could be used up, and never past the backstop."""
        now = time.monotonic()
        if not worker.waited_for() or now < worker.deadline:
            return None
        used = cpu_seconds(worker.process.pid) if worker.task is not None and worker.cpu_start is not None else None
        if used is None:  # starting up, or no CPU clock here: wall-clock time
            return f"too slow to check: gave up after {self.timeout:g} s (the file-timeout setting)"
        used -= worker.cpu_start or 0.0
        if used >= self.timeout:
            return f"too slow to check: gave up after {self.timeout:g} s of CPU time (the file-timeout setting)"
        if now >= worker.backstop:
            return (f"too slow to check: no answer after {BACKSTOP_FACTOR * self.timeout:g} s, in which it used "
                    f"{used:.1f} s of CPU time ({BACKSTOP_FACTOR} times the file-timeout setting)")
        worker.deadline = min(now + max(self.timeout - used, RECHECK), worker.backstop)
        return None

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.workers = []
