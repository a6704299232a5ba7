"""``detlint run``'s report at the program's exit: what was applied and when, what stayed pending,
what could not be fixed at run time and the findings in the program that the launcher cannot fix.
Real programs, each run through the real launcher in a fresh process."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

import pytest

from conftest import ROOT

HEADER = "detlint run: report"


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DETLINT_", "TF_DETERMINISTIC", "XLA_"))}
    env.pop("PYTHONHASHSEED", None)
    env.update({"CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3",
                "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)})
    return env


def launch(tmp_path: Path, program: str, *options: str, merged: bool = True,
           name: str = "prog.py") -> subprocess.CompletedProcess[str]:
    """``detlint run OPTIONS -- python prog.py`` in ``tmp_path``; with ``merged``, stderr joins
    stdout in one pipe, so the order of the program's output and the report can be read."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(program))
    return subprocess.run([sys.executable, "-m", "detlint", "run", *options, "--", sys.executable, name],
                          cwd=tmp_path, env=env_for(tmp_path), capture_output=not merged, text=True, timeout=300,
                          stdout=subprocess.PIPE if merged else None, stderr=subprocess.STDOUT if merged else None)


def section(output: str, title: str) -> Optional[str]:
    """The lines of the report's section that starts with ``title`` (up to the next section)."""
    report = output[output.index(HEADER):]
    match = re.search(rf"^  {re.escape(title)}[^\n]*\n((?:    [^\n]*\n)*)", report, re.M)
    return match.group(0) if match else None


def test_program_importing_nothing_gets_one_report_after_its_output(tmp_path: Path) -> None:
    proc = launch(tmp_path, 'print("HELLO")\n')
    out = proc.stdout
    assert proc.returncode == 0, out
    assert out.count(HEADER) == 1, out
    assert out.index("HELLO") < out.index(HEADER), "the report came before the program's output"
    assert "detlint.apply(seed=" not in out  # the start report is gone
    start = section(out, "applied at start")
    assert start is not None and re.search(r"DET104\s+random\.seed\(42\)", start), out
    pending = section(out, "pending")
    assert pending is not None and "DET601" in pending and "torch was never imported" in pending, out
    assert section(out, "set before the program started") is not None and "PYTHONHASHSEED=0" in out
    left = section(out, "left to you")
    assert left is not None and "nothing" in left.splitlines()[0], out
    # on stderr only: the program's stdout is its own
    split = launch(tmp_path, 'print("HELLO")\n', merged=False)
    assert split.stdout == "HELLO\n" and HEADER in split.stderr


def test_torch_program_reports_what_ran_at_its_import(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    proc = launch(tmp_path, """
        import os, subprocess, sys
        # no process of the launcher's static check is left: this program has no children yet
        def parent(pid):
            try:  # a process listed a moment ago may be gone (a busy machine starts and ends many)
                return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]
            except OSError:
                return None
        mine = [p for p in os.listdir("/proc") if p.isdigit() and parent(p) == str(os.getpid())]
        print("CHILDREN", mine)
        import torch
        print("OUT", torch.rand(1).item())
        subprocess.run([sys.executable, "-c", "print('SUB')"], check=True)  # no second report
        print("DETERMINISTIC", torch.are_deterministic_algorithms_enabled())
    """)
    out = proc.stdout
    assert proc.returncode == 0, out
    assert "CHILDREN []" in out and "SUB" in out and "DETERMINISTIC True" in out
    assert out.count(HEADER) == 1, out
    assert out.index("DETERMINISTIC") < out.index(HEADER)
    at_import = section(out, "applied when torch was imported")
    assert at_import is not None, out
    assert re.search(r"DET601\s+torch\.manual_seed\(42\)", at_import)
    assert re.search(r"DET602\s+torch\.use_deterministic_algorithms\(True\)", at_import)
    pending = section(out, "pending") or ""
    assert "DET601" not in pending and "DET201" in pending, out


JAX_CLOCK_KEY = """
    import time
    import jax

    key = jax.random.PRNGKey(int(time.time() * 1e6) % 2**31)
    print("VALUE", float(jax.random.normal(key, (3,)).sum()))
"""


def test_jax_key_from_the_clock_is_left_to_the_user(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    runs = [launch(tmp_path, JAX_CLOCK_KEY, name="clock.py") for _ in range(2)]
    values = {re.search(r"VALUE (\S+)", r.stdout).group(1) for r in runs}  # type: ignore[union-attr]
    assert len(values) == 2, "the clock key gave one value twice; the test would prove nothing"
    out = runs[0].stdout
    assert out.index("VALUE") < out.index(HEADER)
    left = section(out, "left to you")
    assert left is not None and re.search(r"clock\.py:5:\d+\s+DET703\s", left), out
    assert "detlint clock.py" in left  # where to see the fix
    assert "XLA_FLAGS=" in (section(out, "set before the program started") or ""), out


def test_flag_the_program_overwrites_is_unfixable_at_run_time(tmp_path: Path) -> None:
    """The launcher puts XLA's determinism flag in XLA_FLAGS; a program that replaces the variable
    before JAX starts its backend drops it, and the report says so."""
    pytest.importorskip("jax")
    proc = launch(tmp_path, """
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        import jax.numpy as jnp
        print("SUM", float(jnp.ones(3).sum()))
    """)
    out = proc.stdout
    assert proc.returncode == 0 and "SUM 3.0" in out, out
    unfixable = section(out, "unfixable at run time")
    assert unfixable is not None and re.search(r"DET701\s.*XLA_FLAGS", unfixable), out
    assert "the program changed XLA_FLAGS" in unfixable


def test_exit_code_and_tracebacks_come_before_the_report(tmp_path: Path) -> None:
    proc = launch(tmp_path, 'import sys\nprint("BYE")\nsys.exit(3)\n')
    assert proc.returncode == 3 and proc.stdout.index("BYE") < proc.stdout.index(HEADER)
    crash = launch(tmp_path, 'raise RuntimeError("boom")\n')
    assert crash.returncode == 1
    assert crash.stdout.index("RuntimeError: boom") < crash.stdout.index(HEADER)


def test_verbose_lists_what_was_not_needed_once(tmp_path: Path) -> None:
    plain = launch(tmp_path, "pass\n").stdout
    verbose = launch(tmp_path, "pass\n", "--verbose").stdout
    assert verbose.count(HEADER) == 1 and "detlint.apply(seed=" not in verbose
    assert re.search(r"DET105\s+PYTHONHASHSEED was set", verbose) and "DET105" not in plain, verbose


def test_signals_reach_the_program_and_nothing_is_left_behind(tmp_path: Path) -> None:
    """The program replaces the launcher: a signal sent to the launcher's pid is the program's."""
    (tmp_path / "wait.py").write_text("import os, sys, time\nprint(os.getpid(), flush=True)\ntime.sleep(300)\n")
    proc = subprocess.Popen([sys.executable, "-m", "detlint", "run", "--", sys.executable, "wait.py"],
                            cwd=tmp_path, env=env_for(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        assert int(proc.stdout.readline()) == proc.pid
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
