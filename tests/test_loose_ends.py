"""Loose ends of issue 27's items 4, 6, 7 and 8: no reader left that can block on a FIFO (an ignore
file handed to git, rules under DETLINT_RULES_DIR, --config, --fix's second read, cache entries),
one way for detlint to end on a signal, `detlint diverge`'s program dying with detlint even when
detlint is killed outright, and old caches that go once they are no longer used.

Real FIFOs, real signals, real processes (each run that could hang in a session of its own, killed
on a timeout) and real planted caches in tmp_path.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from conftest import ROOT
from test_diverge_trust import still_alive
from test_process_trust import HANG, bounded, detlint, private_env
from test_safety_inputs import GOOD, project

posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs, symlinks and signals are POSIX")
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds processes through /proc")
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
FIXABLE = "import os\nos.environ['PYTHONHASHSEED'] = '0'\nprint(os.sep)\n"  # DET105, fixed by removal


@contextmanager
def watched(fifo: Path) -> Iterator[list[bool]]:
    """A writer waits on ``fifo``: the list yielded holds True once anything opened it to read
    (git reading a .gitignore does; looking at its metadata does not). The writer is let go at
    the end by a reader that never blocks."""
    opened: list[bool] = []
    letting_go = threading.Event()

    def writer() -> None:
        fd = os.open(fifo, os.O_WRONLY)  # returns once a reader has it open
        if not letting_go.is_set():
            opened.append(True)
        os.close(fd)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        yield opened
    finally:
        letting_go.set()
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        thread.join()
        os.close(reader)


def git_project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = project(tmp_path, files)
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


# ---- 1. readers that could still block on a FIFO --------------------------------------------------------

@posix_only
@needs_git
@pytest.mark.parametrize("ignore_file", [".gitignore", ".git/info/exclude"])
def test_a_fifo_ignore_file_is_skipped_and_never_opened(tmp_path: Path, ignore_file: str) -> None:
    """git opens every ignore file on the way to a path it is asked about: a FIFO there held
    check-ignore until detlint's 30 s timeout. Now the ignore file is skipped, said, and never opened."""
    root = git_project(tmp_path, {"a.py": GOOD})
    fifo = root / ignore_file
    fifo.unlink(missing_ok=True)  # git init writes a regular one
    os.mkfifo(fifo)
    with watched(fifo) as opened:
        proc = detlint(root, tmp_path, "--no-cache", "--tf-version", "2.21", ".")
    assert proc.returncode == 1 and "DET105" in proc.stdout, proc.stdout + proc.stderr
    assert f"{ignore_file}: not a regular file (a named pipe)" in proc.stderr
    assert "skipped" in proc.stderr
    assert opened == [], "the FIFO was opened: git (or detlint) waited on it"


@posix_only
@needs_git
def test_a_fifo_gitignore_in_a_subfolder_leaves_the_rest_of_the_project_to_git(tmp_path: Path) -> None:
    """Only the files below the FIFO lose their ignore rules; git still judges the others."""
    root = git_project(tmp_path, {".gitignore": "ignored.py\n", "ignored.py": GOOD, "sub/b.py": GOOD})
    fifo = root / "sub" / ".gitignore"
    os.mkfifo(fifo)
    with watched(fifo) as opened:
        proc = detlint(root, tmp_path, "--no-cache", "--tf-version", "2.21", ".")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "b.py" in proc.stdout and "ignored.py" not in proc.stdout
    assert "sub/.gitignore: not a regular file (a named pipe)" in proc.stderr
    assert opened == []


@posix_only
def test_a_fifo_among_the_rules_under_detlint_rules_dir_is_an_error_not_a_hang(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    os.mkfifo(rules / "extra.yaml")
    root = project(tmp_path, {"a.py": GOOD})
    env = {**private_env(tmp_path), "DETLINT_RULES_DIR": str(rules), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    proc = bounded([sys.executable, "-m", "detlint", "--no-cache", "--tf-version", "2.21", "a.py"], root, env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "extra.yaml" in proc.stderr and "not a regular file (a named pipe)" in proc.stderr


@posix_only
@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_config_that_is_not_a_regular_file_is_said_to_be_so(tmp_path: Path, kind: str) -> None:
    root = project(tmp_path, {"a.py": GOOD})
    config = root / "cfg.toml"
    os.mkfifo(config) if kind == "fifo" else config.mkdir()
    proc = detlint(root, tmp_path, "--no-cache", "--config", "cfg.toml", "a.py")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    what = "a named pipe" if kind == "fifo" else "a directory"
    assert f"cfg.toml is not a regular file ({what})" in proc.stderr
    assert "does not exist" not in proc.stderr


# the file is swapped for a FIFO after it was read and fixed, before --fix reads it again to write it
SWAPPED_FOR_A_FIFO = """
import os, sys
import detlint.fix.autofix as autofix
fix_text = autofix.fix_text
def swapping(linter, path, *args, **kwargs):
    result = fix_text(linter, path, *args, **kwargs)
    os.replace(path, str(path) + ".orig")
    os.mkfifo(path)
    return result
autofix.fix_text = swapping
from detlint.cli import main
sys.exit(main(sys.argv[1:]))
"""


@posix_only
def test_fix_does_not_block_on_a_file_swapped_for_a_fifo(tmp_path: Path) -> None:
    root = project(tmp_path, {"a.py": FIXABLE})
    proc = bounded([sys.executable, "-c", SWAPPED_FOR_A_FIFO, "--no-cache", "--tf-version", "2.21", "--fix",
                    "--unsafe-fixes", "a.py"], root, private_env(tmp_path))
    assert "a.py: not written (not a regular file (a named pipe))" in proc.stderr, proc.stderr
    assert (root / "a.py").is_fifo() and (root / "a.py.orig").read_text() == FIXABLE


@posix_only
def test_the_shared_check_can_refuse_a_final_symlink(tmp_path: Path) -> None:
    """The facts cache reads its entries through the shared check, not its own copy of it."""
    from detlint.lint.files.sources import NotRegularFile, open_regular, read_regular

    (tmp_path / "entry.json").write_bytes(b"{}")
    os.symlink("entry.json", tmp_path / "link.json")
    os.mkfifo(tmp_path / "fifo.json")
    assert read_regular(tmp_path / "entry.json", follow_symlinks=False) == b"{}"
    assert read_regular(tmp_path / "link.json") == b"{}"  # followed unless asked not to
    with pytest.raises(OSError) as refused:
        open_regular(tmp_path / "link.json", follow_symlinks=False)
    assert not isinstance(refused.value, NotRegularFile)  # ELOOP: the link itself is not opened
    with pytest.raises(NotRegularFile):
        read_regular(tmp_path / "fifo.json", follow_symlinks=False)


# ---- 2. detlint diverge ends on a signal as the rest of detlint does ----------------------------------------

FOREVER = "import time\nwhile True:\n    time.sleep(1)\n"


def _children(parent: int, marker: str) -> list[int]:
    """Live processes whose parent is ``parent`` and whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if fields[0] not in "ZX" and int(fields[1]) == parent and marker.encode() in command:
            found.append(int(entry.name))
    return found


def start_diverge(tmp_path: Path, program: str = FOREVER, **popen: object) -> tuple[subprocess.Popen[str], int]:
    """``detlint diverge -- python forever.py`` with TMPDIR in tmp_path, and the program's pid once
    it runs."""
    (tmp_path / "forever.py").write_text(program)
    env = {**private_env(tmp_path), "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.Popen([sys.executable, "-m", "detlint", "diverge", "--time-limit", "300", "--",
                             sys.executable, str(tmp_path / "forever.py")], cwd=tmp_path, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **popen)  # type: ignore[call-overload]
    for _ in range(HANG * 20):
        found = _children(proc.pid, "forever.py")
        if found:
            return proc, found[0]
        if proc.poll() is not None:
            pytest.fail(f"detlint diverge ended before the program started: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    proc.communicate()
    pytest.fail(f"the program did not start in {HANG} s")


def wait_for(marker: Path, proc: subprocess.Popen[str]) -> None:
    """Until the program writes ``marker`` (bounded; detlint must still be running)."""
    for _ in range(HANG * 20):
        if marker.exists():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    pytest.fail(f"no {marker.name} after {HANG} s")


def _end(proc: subprocess.Popen[str], program: int) -> None:
    for pid in (proc.pid, program):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.communicate()


@linux_only
def test_the_program_dies_when_detlint_diverge_is_killed_outright(tmp_path: Path) -> None:
    proc, program = start_diverge(tmp_path)
    try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=HANG)
        assert still_alive([program]) == [], "the program outlived detlint"
    finally:
        _end(proc, program)


@linux_only
def test_diverge_started_under_nohup_is_not_ended_by_a_hangup(tmp_path: Path) -> None:
    """SIGHUP ignored by whoever started detlint stays ignored, as in the rest of detlint: of a
    SIGHUP then a SIGTERM, only the SIGTERM ends it (diverge's own handler took SIGHUP first)."""
    proc, program = start_diverge(tmp_path, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        os.kill(proc.pid, signal.SIGHUP)
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "interrupted (SIGTERM)" in err
        assert still_alive([program]) == []
        assert list((tmp_path / "tmpdir").glob("detlint-diverge-*")) == []
    finally:
        _end(proc, program)


# takes SIGTERM as a request it notes (a marker file) and goes on: detlint is then in its 5 s wait
# before SIGKILL, the clean-up a second signal must not cut short
NOTES_SIGTERM = """\
import signal, time
signal.signal(signal.SIGTERM, lambda *_: open("got-sigterm", "w").close())
open("ready", "w").close()
while True:
    time.sleep(1)
"""


@linux_only
def test_a_second_signal_while_diverge_stops_the_program_waits_for_the_clean_up(tmp_path: Path) -> None:
    """The first signal decides the exit status; a SIGINT during the stop is deferred, not raised
    inside it: the program is still killed and the records removed."""
    proc, program = start_diverge(tmp_path, NOTES_SIGTERM)
    try:
        wait_for(tmp_path / "ready", proc)
        os.kill(proc.pid, signal.SIGTERM)
        wait_for(tmp_path / "got-sigterm", proc)  # detlint now waits 5 s before its SIGKILL
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert (tmp_path / "got-sigterm").exists()
        assert still_alive([program]) == []
        assert list((tmp_path / "tmpdir").glob("detlint-diverge-*")) == []
    finally:
        _end(proc, program)


def test_diverge_ends_through_the_one_signal_mechanism() -> None:
    """One way to end on a signal: diverge has no handler or exception of its own."""
    import detlint.divergence.runs as runs

    assert not hasattr(runs, "Interrupted") and not hasattr(runs, "stopping_on_signals")


# ---- 3. old caches go -----------------------------------------------------------------------------------------

HOURS_AGO = time.time() - 3 * 3600


def plant(path: Path, folder: bool, recent: bool = False) -> Path:
    if folder:
        (path / "ab").mkdir(parents=True)
        (path / "ab" / "entry.json").write_text("{}")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    if not recent:
        os.utime(path, (HOURS_AGO, HOURS_AGO))
    return path


def outside_target(tmp_path: Path, link: Path, folder: bool) -> Path:
    """``link``, named like an old entry, points outside the cache at something that must stay."""
    target = tmp_path / "outside" / link.name
    plant(target, folder)
    os.symlink(target, link)
    os.utime(link, (HOURS_AGO, HOURS_AGO), follow_symlinks=False)
    return target


@posix_only
def test_old_facts_cache_folders_are_removed_and_nothing_else(tmp_path: Path) -> None:
    root = project(tmp_path, {"a.py": GOOD})
    cache = root / ".detlint_cache"
    old = [plant(cache / f"facts-0.0.9-{'1' * 16}-{'2' * 16}", True),
           plant(cache / f"facts-0.0.8-{'3' * 16}", True),  # before the code digest was in the name
           plant(cache / f".facts-0.0.7-{'4' * 16}-{'5' * 16}.removing-{'6' * 16}", True)]  # an interrupted removal
    kept = [plant(cache / f"facts-0.0.9-{'7' * 16}-{'8' * 16}", True, recent=True),  # another detlint's, in use
            plant(cache / "notes", True), plant(cache / "facts-by-hand", True)]
    link = cache / f"facts-0.0.6-{'9' * 16}-{'a' * 16}"
    target = outside_target(tmp_path, link, True)
    proc = detlint(root, tmp_path, "--tf-version", "2.21", "a.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [p.name for p in old if os.path.lexists(p)] == []
    assert all(p.is_dir() for p in kept)
    assert link.is_symlink() and (target / "ab" / "entry.json").read_text() == "{}"
    current = [p.name for p in cache.glob("facts-0.1*")]
    assert len(current) == 1 and (cache / current[0]).is_dir()


@posix_only
def test_old_knowledge_base_caches_are_removed_and_nothing_else(tmp_path: Path) -> None:
    root = project(tmp_path, {"a.py": GOOD})
    cache = tmp_path / "xdg" / "detlint"
    old = [plant(cache / f"kb-0.0.9-{'1' * 16}-{'2' * 24}.json", False),
           plant(cache / f"kb-0.0.8-{'3' * 24}.json", False), plant(cache / f"kb-0.0.8-{'4' * 24}.pickle", False),
           plant(cache / ".kb-x1y2z3_9", False)]  # a write that never finished
    kept = [plant(cache / f"kb-0.0.9-{'5' * 16}-{'6' * 24}.json", False, recent=True),  # in use beside us
            plant(cache / "notes.json", False), plant(cache / "kb-by-hand.json", False)]
    link = cache / f"kb-0.0.7-{'7' * 16}-{'8' * 24}.json"
    target = outside_target(tmp_path, link, False)
    env = {**private_env(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    proc = bounded([sys.executable, "-m", "detlint", "--no-cache", "--tf-version", "2.21", "a.py"], root, env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [p.name for p in old if os.path.lexists(p)] == []
    assert all(p.is_file() for p in kept)
    assert link.is_symlink() and target.read_text() == "{}"
    assert len(list(cache.glob("kb-0.1*.json"))) == 1
