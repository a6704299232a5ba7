"""Hostile or odd input costs one file a DET001, never the run, the user's files or their machine.

Each test reproduces one item of issue 11 (and the dangling-symlink item of issue 12) with its own
minimal input. Runs that could hang or crash on a regression go through a subprocess with a timeout.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pytest

from conftest import make_linter
from detlint.knowledge import kb as kb_module
from detlint.lint.cache import FactsCache
from detlint.cli import main
from detlint.lint.engine import real

GOOD = "import os\nos.environ['PYTHONHASHSEED'] = '0'\n"  # DET105 on line 2
TRAIN = "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\nmodel.fit(x, y)\n"
posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs, symlinks and signals are POSIX")


def project(tmp_path: Path, files: dict[str, str], name: str = "proj") -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def check(root: Path, *args: str) -> tuple[int, str]:
    """The CLI in this process, from ``root``."""
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        code = main([*args, "--isolated", "--tf-version", "2.21"], out)
    finally:
        os.chdir(cwd)
    return code, out.getvalue()


def check_process(root: Path, *args: str, timeout: float = 120,
                  env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process: a hang is a TimeoutExpired, a crash an exit code."""
    cmd = [sys.executable, "-m", "detlint", *args, "--isolated", "--tf-version", "2.21"]
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def lines_for(output: str, name: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(name + ":")]


# ---- item 2: --cache-dir . must not take over the project's .gitignore -------------------------------

@pytest.mark.parametrize("how", ["--cache-dir", "pyproject"])
def test_cache_in_an_existing_folder_leaves_its_gitignore_alone(tmp_path: Path, how: str) -> None:
    root = project(tmp_path, {"good.py": GOOD, ".gitignore": "build/\n*.log\n"})
    if how == "pyproject":  # read only without --isolated
        (root / "pyproject.toml").write_text("[tool.detlint]\ncache-dir = \"\"\n")
    args = ["--cache-dir", "."] if how == "--cache-dir" else []
    cmd = [sys.executable, "-m", "detlint", ".", "--tf-version", "2.21", *args]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120)
    assert "DET105" in proc.stdout, proc.stdout + proc.stderr
    assert (root / ".gitignore").read_text() == "build/\n*.log\n"
    assert not (root / "CACHEDIR.TAG").exists()
    facts_dirs = list(root.glob("facts-*"))  # the folder detlint made is tagged instead
    assert len(facts_dirs) == 1 and (facts_dirs[0] / "CACHEDIR.TAG").is_file()
    assert (facts_dirs[0] / ".gitignore").read_text() == "*\n"


def test_a_cache_folder_detlint_creates_is_tagged(tmp_path: Path) -> None:
    root = project(tmp_path, {"good.py": GOOD})
    code, _ = check(root, ".")
    assert code == 1
    assert (root / ".detlint_cache" / ".gitignore").read_text() == "*\n"
    assert (root / ".detlint_cache" / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")


# ---- item 6: nothing in a cache can run code -----------------------------------------------------------

class Planted:
    """Unpickling this creates ``marker``: what a crafted cache entry in a cloned repository does."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (open, (str(self.marker), "w"))


def test_a_planted_facts_cache_entry_is_never_unpickled(tmp_path: Path) -> None:
    root = project(tmp_path, {"train.py": TRAIN})
    marker = tmp_path / "code-ran"
    kb = kb_module.load()
    cache = FactsCache(root / ".detlint_cache", kb.digest)
    train = real(root / "train.py")
    key = cache.key(train, train.read_bytes())
    entry = cache.directory / key[:2] / key
    entry.parent.mkdir(parents=True)
    payload = pickle.dumps(Planted(marker))
    for suffix in (".pickle", ".json"):  # where detlint reads (and used to read) this file's entry
        entry.with_suffix(suffix).write_bytes(payload)
    code, out = check(root, ".")
    assert not marker.exists()
    assert code == 1 and "DET201" in out


@pytest.mark.parametrize("tamper", [
    lambda doc: doc["hits"].append(["rule:DET999", 0, "x", 1, 0, 1, 1, None, "", None, None, False]),
    lambda doc: doc["hits"].append(["rule:DET105", 99, "x", 1, 0, 1, 1, None, "", None, None, False]),
    lambda doc: doc.__setitem__("noqa", [["1", None]]),
    lambda doc: doc.__setitem__("error", 5),
    lambda doc: doc.__setitem__("key", "0" * 64),
])
def test_a_tampered_json_entry_is_a_cache_miss(tmp_path: Path, tamper) -> None:  # type: ignore[no-untyped-def]
    root = project(tmp_path, {"train.py": TRAIN, "good.py": GOOD})
    linter = make_linter("2.21", root=root)
    files = sorted(root.glob("*.py"))
    first = linter.run(files, cache=FactsCache(root / ".detlint_cache", linter.kb.digest)).diagnostics
    for entry in (root / ".detlint_cache").rglob("*.json"):
        doc = json.loads(entry.read_text())
        tamper(doc)
        entry.write_text(json.dumps(doc))
    cache = FactsCache(root / ".detlint_cache", linter.kb.digest)
    again = make_linter("2.21", root=root).run(files, cache=cache).diagnostics
    assert [(d.path, d.line, d.code) for d in again] == [(d.path, d.line, d.code) for d in first]
    assert (cache.hits, cache.misses) == (0, 2)


def test_cache_entries_round_trip_the_facts_of_every_fixture() -> None:
    from conftest import FIXTURES
    from detlint.lint.collect import collect
    from detlint.lint.facts_json import dump_facts, load_facts

    kb = kb_module.load()
    checked = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        facts = collect(kb, str(path), path.read_text(encoding="utf-8"))
        assert load_facts(dump_facts(facts, "k"), "k") == facts, path
        checked += bool(facts.hits)
    assert checked > 20


def test_the_user_knowledge_base_cache_is_data_only(tmp_path: Path) -> None:
    from detlint import __version__
    from detlint.code_digest import code_digest

    xdg = tmp_path / "xdg"
    marker = tmp_path / "code-ran"
    digest = __import__("hashlib").sha256()
    for path in kb_module.rule_files(kb_module.rules_dir()):
        digest.update(path.relative_to(kb_module.rules_dir()).as_posix().encode() + b"\0" + path.read_bytes())
    (xdg / "detlint").mkdir(parents=True)
    for suffix in (".pickle", ".json"):
        (xdg / "detlint" / f"kb-{__version__}-{code_digest()}-{digest.hexdigest()[:24]}{suffix}").write_bytes(
            pickle.dumps(Planted(marker)))
    root = project(tmp_path, {"good.py": GOOD})
    probe = "import sys; from detlint.knowledge.kb import load; load(); print('YAML', 'yaml' in sys.modules)"
    first = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True,
                           env={**os.environ, "XDG_CACHE_HOME": str(xdg)}, timeout=120)
    assert not marker.exists() and "YAML True" in first.stdout, first.stderr
    saved = xdg / "detlint" / f"kb-{__version__}-{code_digest()}-{digest.hexdigest()[:24]}.json"
    assert isinstance(json.loads(saved.read_text()), dict)  # replaced by plain JSON
    second = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True,
                            env={**os.environ, "XDG_CACHE_HOME": str(xdg)}, timeout=120)
    assert "YAML False" in second.stdout, second.stderr  # read back without parsing the YAML
    proc = check_process(root, ".", env={"XDG_CACHE_HOME": str(xdg)})
    assert proc.returncode == 1 and "DET105" in proc.stdout and not marker.exists()


def test_the_knowledge_base_from_the_json_cache_equals_the_yaml(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    directory = str(kb_module.rules_dir())
    from_yaml = kb_module._load_cached.__wrapped__(directory)  # type: ignore[attr-defined]
    assert list((tmp_path / "detlint").glob("kb-*.json"))
    from_json = kb_module._load_cached.__wrapped__(directory)  # type: ignore[attr-defined]
    assert from_json == from_yaml and from_json is not from_yaml


# ---- item 7: symlinks that leave the project -----------------------------------------------------------

@posix_only
def test_a_symlink_out_of_the_project_is_not_read_unless_named(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("TOP SECRET LINE = (\n")  # a syntax error: DET001 would quote it
    root = project(tmp_path, {"good.py": GOOD})
    os.symlink(outside / "secret.py", root / "x.py")
    code, out = check(root, ".", "--output-format", "full", "--no-cache")
    assert "TOP SECRET" not in out and "x.py" not in out
    assert code == 1 and "DET105" in out
    code, out = check(root, "x.py", "--no-cache")  # named explicitly: the user asked for it
    assert code == 1 and "DET001" in out


@posix_only
def test_a_module_imported_through_an_outside_symlink_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "helper.py").write_text("import os\nos.environ['PYTHONHASHSEED'] = '0'\n")
    root = project(tmp_path, {"train.py": "import helper\n" + TRAIN})
    os.symlink(outside / "helper.py", root / "helper.py")
    linter = make_linter("2.21", root=root)
    linter.run([root / "train.py"])
    facts = linter.facts_of(root / "helper.py")
    assert facts is not None and facts.error is not None and "outside the project" in facts.error
    inside = project(tmp_path, {"train.py": "import helper\n" + TRAIN, "helper.py": GOOD}, name="inside")
    linter = make_linter("2.21", root=inside)
    linter.run([inside / "train.py"])
    facts = linter.facts_of(inside / "helper.py")
    assert facts is not None and facts.error is None and facts.hits


# ---- item 8: FIFOs --------------------------------------------------------------------------------------

@posix_only
def test_a_fifo_is_skipped_in_a_folder_and_reported_when_named(tmp_path: Path) -> None:
    root = project(tmp_path, {"t/good.py": GOOD})
    os.mkfifo(root / "t" / "f.py")
    walked = check_process(root, "t", timeout=60)
    assert walked.returncode == 1 and "DET105" in walked.stdout and "f.py" not in walked.stdout
    named = check_process(root, "t/f.py", "t/good.py", "--output-format", "full", timeout=60)
    (line,) = lines_for(named.stdout, "t/f.py")
    assert "DET001" in line and "not a regular file (a named pipe)" in line
    assert "DET105" in named.stdout


# ---- item 9: size and time limits -----------------------------------------------------------------------

def test_a_file_over_the_size_limit_gets_det001_and_the_run_goes_on(tmp_path: Path) -> None:
    big = GOOD + "".join(f"x{i} = {i}\n" for i in range(400))  # about 4 KB
    root = project(tmp_path, {"big.py": big, "good.py": GOOD})
    code, out = check(root, ".", "--max-file-size", "2", "--no-cache")
    (line,) = lines_for(out, "big.py")
    assert "DET001" in line and "too large to check" in line and "max-file-size" in line
    assert "DET105" in "".join(lines_for(out, "good.py"))
    code, out = check(root, ".", "--max-file-size", "8", "--no-cache")
    assert "DET105" in "".join(lines_for(out, "big.py"))


def test_the_default_size_limit_stops_a_huge_file_without_parsing_it(tmp_path: Path) -> None:
    root = project(tmp_path, {"good.py": GOOD})
    (root / "huge.py").write_text("x = 1\n" * 200_000)  # 1.2 MB
    start = time.monotonic()
    code, out = check(root, ".", "--no-cache")
    assert time.monotonic() - start < 30
    (line,) = lines_for(out, "huge.py")
    assert "too large to check: 1171 KB, over the limit of 1024 KB" in line
    assert "DET105" in out


def test_size_limit_from_pyproject_and_bad_values(tmp_path: Path) -> None:
    root = project(tmp_path, {"good.py": GOOD + "# padding\n" * 300})
    (root / "pyproject.toml").write_text("[tool.detlint]\nmax-file-size = 1\nfile-timeout = 30\n")
    proc = subprocess.run([sys.executable, "-m", "detlint", ".", "--no-cache", "--tf-version", "2.21"], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert "too large to check" in proc.stdout, proc.stdout + proc.stderr
    for bad in ("max-file-size = 1.5", "max-file-size = -1", "file-timeout = -2", "file-timeout = 'x'"):
        (root / "pyproject.toml").write_text(f"[tool.detlint]\n{bad}\n")
        proc = subprocess.run([sys.executable, "-m", "detlint", ".", "--tf-version", "2.21"], cwd=root,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and "must be a" in proc.stderr, (bad, proc.stderr)


def test_a_file_that_parses_too_slowly_gets_det001_and_the_run_goes_on(tmp_path: Path) -> None:
    # valid Python that libcst needs seconds for: a long list literal (no other limit applies)
    slow = "DATA = [\n" + "".join(f"    ({i}, {i * 0.5}, 'v{i}'),\n" for i in range(6_000)) + "]\n"
    root = project(tmp_path, {"a_slow.py": slow, "good.py": GOOD})
    code, out = check(root, ".", "--file-timeout", "0.3", "--no-cache", "-j", "1")
    (line,) = lines_for(out, "a_slow.py")
    assert "DET001" in line and "too slow to check: gave up after 0.3 s" in line
    assert "DET105" in "".join(lines_for(out, "good.py"))


def test_a_long_chain_of_additions_does_not_hang(tmp_path: Path) -> None:
    root = project(tmp_path, {"plus.py": "x = " + "+".join(["1"] * 100_000) + "\n", "good.py": GOOD})
    proc = check_process(root, ".", "--no-cache", timeout=60)
    (line,) = lines_for(proc.stdout, "plus.py")
    assert "DET001" in line and "too deeply nested" in line
    assert "DET105" in proc.stdout


# ---- item 10: a crash in the parser costs one file -------------------------------------------------------

@pytest.mark.parametrize("jobs", ["1", "2"])
def test_five_thousand_nested_parentheses_do_not_kill_the_run(tmp_path: Path, jobs: str) -> None:
    files = {"deep.py": "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n", "good.py": GOOD}
    files.update({f"m{i}.py": GOOD for i in range(4)})  # enough files for several workers
    root = project(tmp_path, files)
    proc = check_process(root, ".", "--no-cache", "-j", jobs, timeout=120)
    assert proc.returncode == 1, proc.stderr
    (line,) = lines_for(proc.stdout, "deep.py")
    assert "DET001" in line and "too many nested parentheses" in line
    assert len([line for line in proc.stdout.splitlines() if "DET105" in line]) == 5


def _maps(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return ""


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("inf")  # gone: nothing left to wait for
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the worker through /proc")
def test_a_parser_worker_that_dies_costs_only_its_file(tmp_path: Path) -> None:
    slow = "DATA = [\n" + "".join(f"    ({i}, {i * 0.5}, 'v{i}'),\n" for i in range(30_000)) + "]\n"
    root = project(tmp_path, {"a_slow.py": slow, "b_good.py": GOOD})
    cmd = [sys.executable, "-m", "detlint", ".", "--isolated", "--tf-version", "2.21", "--no-cache", "-j", "1",
           "--file-timeout", "0"]
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the parser worker is the child that loads libcst's parser; once it has used a second of
        # CPU time beyond that it is parsing a_slow.py (several seconds of CPU). Counted in CPU
        # time, not wall time: on a busy machine its import alone can take seconds
        deadline = time.monotonic() + 120
        worker = None
        while worker is None and time.monotonic() < deadline:
            worker = next((c for c in _children(proc.pid) if "libcst/native" in _maps(c)), None)
            time.sleep(0.05)
        assert worker is not None, "no parser worker started"
        start = _cpu_seconds(worker)
        while _cpu_seconds(worker) - start < 1.0 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(worker, signal.SIGSEGV)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:  # never leave the run behind, whatever failed above
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    (line,) = lines_for(out, "a_slow.py")
    assert "DET001" in line and "the parser crashed on this file (SIGSEGV)" in line
    assert "DET105" in "".join(lines_for(out, "b_good.py"))


@posix_only
def test_a_forked_child_leaves_its_parents_parser_workers_alone() -> None:
    """A finished run's pool, left as garbage, may be finalised in any process forked after it
    (the next run's workers): there stopping its workers asserted 'can only test a child
    process' on stderr. The child must neither fail nor stop them."""
    import multiprocessing

    from detlint.lint.isolation import _Worker

    worker = _Worker(multiprocessing.get_context("fork"), kb_module.load())
    try:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                worker.stop()
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert worker.process.is_alive()
    finally:
        worker.stop()
    assert not worker.process.is_alive()


# ---- item 11 (notebooks): one bad notebook or cell, not the whole run ---------------------------------------

def notebook(cells: list[object], extra: Optional[dict[str, object]] = None) -> str:
    doc = {"nbformat": 4, "nbformat_minor": 5, "metadata": extra or {},
           "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s}
                     for s in cells]}
    return json.dumps(doc)


def test_a_cell_whose_source_is_numbers_gets_det001_and_the_others_are_checked(tmp_path: Path) -> None:
    nb = notebook([[1, 2, 3], "import os\nos.environ['PYTHONHASHSEED'] = '0'\n"])
    root = project(tmp_path, {"nb.ipynb": nb, "good.py": GOOD})
    code, out = check(root, ".", "--no-cache")
    assert code == 1
    nb_lines = lines_for(out, "nb.ipynb")
    assert any("DET001" in line and "cell 1" in line and "source is not text" in line for line in nb_lines)
    assert any("DET105" in line and "cell 2" in line for line in nb_lines)
    assert "DET105" in "".join(lines_for(out, "good.py"))


def test_a_deeply_nested_notebook_gets_det001_and_the_run_goes_on(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    nb = notebook(["x = 1\n"]).replace('"metadata": {}', '"metadata": {"deep": ' + deep + "}", 1)
    root = project(tmp_path, {"nb.ipynb": nb, "good.py": GOOD})
    code, out = check(root, ".", "--no-cache")
    assert code == 1
    (line,) = lines_for(out, "nb.ipynb")
    assert "DET001" in line and "nested too deeply" in line
    assert "DET105" in out


# ---- item 18: valid Python that libcst alone would refuse -------------------------------------------------

@pytest.mark.parametrize("source, finding_line", [
    ("import os\n(pars): bool = True\nos.environ['PYTHONHASHSEED'] = '0'\n", 3),
    ("import os\nx = " + "[" * 150 + "1" + "]" * 150 + "\nos.environ['PYTHONHASHSEED'] = '0'\n", 3),
    ("import os\nx = " + "f(" * 150 + "1" + ")" * 150 + "\nos.environ['PYTHONHASHSEED'] = '0'\n", 3),
    ("import os\nx = " + "{'k': " * 150 + "1" + "}" * 150 + "\nos.environ['PYTHONHASHSEED'] = '0'\n", 3),
    ("import os\nTABLE = (\n" + "".join(f"    'row {i:05d}: some generated text'\n" for i in range(5000))
     + ")\nos.environ['PYTHONHASHSEED'] = '0'\n", 5004),
])
def test_valid_python_is_checked_not_refused(tmp_path: Path, source: str, finding_line: int) -> None:
    root = project(tmp_path, {"valid.py": source})
    code, out = check(root, ".", "--no-cache")
    (line,) = lines_for(out, "valid.py")
    assert f"valid.py:{finding_line}:1: DET105" in line


def test_a_large_generated_data_module_is_under_the_default_size_limit(tmp_path: Path) -> None:
    data = "import os\nBLOB = '''\n" + "0123456789abcdef" * 44_000 + "\n'''\nos.environ['PYTHONHASHSEED'] = '0'\n"
    assert 690_000 < len(data) < 720_000
    root = project(tmp_path, {"data.py": data})
    code, out = check(root, ".", "--no-cache")
    (line,) = lines_for(out, "data.py")
    assert "DET105" in line


# ---- issue 12 item 18: dangling symlinks ------------------------------------------------------------------

@posix_only
def test_a_dangling_symlink_says_so_when_named_or_found(tmp_path: Path) -> None:
    root = project(tmp_path, {"good.py": GOOD})
    os.symlink("missing.py", root / "link.py")
    for args in ((".",), ("link.py", "good.py")):
        code, out = check(root, *args)
        (line,) = lines_for(out, "link.py")
        assert "DET001" in line and "dangling symlink: target missing.py does not exist" in line
        assert "DET105" in out


def test_flake8_checks_deep_valid_python_too(tmp_path: Path) -> None:
    # under flake8 files are parsed in flake8's own processes, on a deep stack as in detlint's workers
    source = "import os\nx = " + "[" * 150 + "1" + "]" * 150 + "\nos.environ['PYTHONHASHSEED'] = '0'\n"
    root = project(tmp_path, {"valid.py": source})
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "DET",
                           "--detlint-tf-version=2.21", "valid.py"], cwd=root, capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.startswith("valid.py:3:1: DET105"), proc.stdout + proc.stderr
    assert "DET001" not in proc.stdout
