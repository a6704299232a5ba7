"""Shared helpers: lint fixtures with inline expectations (``# expect: DET101,DET201``)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable, Optional

import pytest

import detlint.lint.collect  # noqa: F401  (libcst, before any linter forks its parser: see below)

# A linter run in this process parses in a forked worker. With libcst already imported here each
# worker starts with it: a small file's run takes about 25 ms instead of 250 ms (the import). The
# CLI does the same before it forks its parsers.
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
EXPECT_RE = re.compile(r"#\s*expect:\s*(?P<codes>DET\d{3}(?:\s*,\s*DET\d{3})*)")
# a finding shown only with --min-confidence possible (nothing was seen to run its line)
EXPECT_POSSIBLE_RE = re.compile(r"#\s*expect-possible:\s*(?P<codes>DET\d{3}(?:\s*,\s*DET\d{3})*)")
HEADER_RE = re.compile(r"#\s*fixture:\s*tf-version=(?P<version>[\d.]+)")
FRAMEWORK_HEADER_RE = re.compile(r"#\s*fixture:(?P<pairs>[^\n]*)")
DEFAULT_VERSION = "2.21"
NEWEST_TORCH = "2.15"
NEWEST_LIGHTNING = "2.6"
NEWEST_JAX = "0.10"


# A tf.data pipeline whose parallel map returns elements in completion order; {before} runs before
# TensorFlow is imported, {after} right after it; every pass prints the order it saw.
REORDERING_PIPELINE = """
import random, time
{before}
import tensorflow as tf
{after}
def jitter(i):
    time.sleep(random.random() * 0.004)
    return i
def f(i):
    out = tf.py_function(jitter, [i], tf.int64)
    out.set_shape(())
    return out
ds = tf.data.Dataset.range({n}).map(f, num_parallel_calls=8, deterministic=False)
for _ in range({passes}):
    print("ORDER", ",".join(str(int(x)) for x in ds))
"""


# ---- markers: `pytest -m "not frameworks and not corpus"` is the quick development loop ---------
# Tests that start real TensorFlow, PyTorch or JAX (in process or in a child), by file (None: all
# of it) or by test name; and tests that run a tool over every fixture and example. The README's
# command runs everything.
FRAMEWORK_TESTS: dict[str, Optional[set[str]]] = {
    "test_real_tensorflow_claims.py": None, "test_real_tensorflow_fix.py": None,
    "test_real_torch_claims.py": None, "test_real_jax_claims.py": None,
    "test_real_keras_backends.py": None, "test_divergence.py": None, "test_divergence_torch.py": None,
    "test_divergence_jax.py": None, "test_diverge_report.py": None,
    "test_runtime.py": {"test_cnn_weights_differ_without_detlint_and_match_with_apply_or_run",
                        "test_tf_data_order_fixed_under_apply"},
    "test_run_report.py": {"test_torch_program_reports_what_ran_at_its_import",
                           "test_jax_key_from_the_clock_is_left_to_the_user"},
    "test_notebooks.py": {"test_fixed_notebook_trains_identically"},
    "test_readme.py": {"test_the_diverge_walkthrough_prints_what_the_readme_shows",
                       "test_every_command_of_using_it_runs"},
    # the GPU suites start PyTorch or JAX (and are skipped without a GPU)
    "test_torch_gpu_claims.py": None, "test_torch_gpu_observations.py": None, "test_diverge_gpu.py": None,
    "test_jax_gpu_claims.py": None,
    "test_diverge_trust.py": {"test_a_program_that_never_ends_is_stopped_at_the_time_limit_of_each_run",
                              "test_runs_that_fail_after_the_same_work_give_no_verdict_with_their_error",
                              "test_a_difference_before_a_failure_is_still_reported_with_the_error",
                              "test_a_run_that_recorded_less_because_it_failed_gives_no_verdict",
                              "test_an_xla_compiled_keras_model_is_recorded"},
}
CORPUS_TESTS: dict[str, set[str]] = {
    "test_cli.py": {"test_fixtures_folder_runs_without_crash"},
    "test_flake8_plugin.py": {"test_flake8_matches_cli_on_all_fixtures"},
    "test_fixes.py": {"test_fix_everything_property"},
    "test_fuzz.py": {"test_fuzzed_fixtures_never_lose_code_or_crash"},
    "test_pre_commit.py": {"test_try_repo_fails_on_bad_file_and_passes_on_good"},
    "test_cache.py": {"test_benchmark_script_runs_on_a_tiny_corpus"},
}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> Optional[bool]:
    """A module whose every test starts a framework is not even imported when ``-m`` leaves such
    tests out: importing it imports the framework (seconds each, in every worker)."""
    expression = config.getoption("markexpr", "")
    if not expression or FRAMEWORK_TESTS.get(collection_path.name, ()) is not None:
        return None
    try:  # pytest's own parser of -m expressions (not public API: without it, collect everything)
        from _pytest.mark.expression import Expression

        keeps = Expression.compile(expression).evaluate(lambda marker, **_: marker == "frameworks")
    except Exception:
        return None
    return True if not keeps else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests the tables name; a name that matches no collected test is an error, so a
    renamed test cannot silently drop out of its marker."""
    modules = {}
    for item in items:
        module, name = item.path.name, getattr(item, "originalname", item.name)
        modules[module] = getattr(item, "module", None)
        for marker, table in (("frameworks", FRAMEWORK_TESTS), ("corpus", CORPUS_TESTS)):
            if module in table and (table[module] is None or name in table[module]):
                item.add_marker(getattr(pytest.mark, marker))
    # checked against the module's functions, not the items: a run of a few tests selects the rest out
    missing = [f"{module}::{name}" for table in (FRAMEWORK_TESTS, CORPUS_TESTS) for module, names in table.items()
               if modules.get(module) is not None for name in (names or ())
               if not callable(getattr(modules[module], name, None))]
    if missing:
        raise pytest.UsageError(f"conftest marks tests that do not exist: {', '.join(missing)}")


def fixture_version(paths: Iterable[Path]) -> str:
    for path in paths:
        match = HEADER_RE.search(path.read_text(encoding="utf-8", errors="replace")[:400])
        if match:
            return match.group("version")
    return DEFAULT_VERSION


def fixture_overrides(paths: Iterable[Path]) -> dict[str, str]:
    """Settings a fixture's header asks for besides the TensorFlow version (``torch-version=1.8
    lightning-version=1.4``)."""
    for path in paths:
        match = FRAMEWORK_HEADER_RE.search(path.read_text(encoding="utf-8", errors="replace")[:400])
        if match:
            pairs = re.findall(r"\b([a-z]+)-version=([\d.]+)", match.group("pairs"))
            out = {f"{key}-version": version for key, version in pairs if key != "tf"}
            out.update(re.findall(r"\b(keras-backend)=(\w+)", match.group("pairs")))
            return out
    return {}


def expectations(paths: Iterable[Path], root: Path, pattern: re.Pattern[str] = EXPECT_RE) -> list[tuple[str, int, str]]:
    out = []
    for path in paths:
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            match = pattern.search(line)
            if match:
                for code in match.group("codes").split(","):
                    out.append((path.relative_to(root).as_posix(), lineno, code.strip()))
    return sorted(out)


def fixture_units() -> list[tuple[str, Path, list[Path]]]:
    """(id, base folder, files): one unit per single-file fixture, one per program folder."""
    units = []
    for area in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        if area.name == "programs":
            for program in sorted(p for p in area.iterdir() if p.is_dir()):
                units.append((f"programs/{program.name}", program, sorted(program.rglob("*.py"))))
        elif area.name not in ("fixes", "notebooks", "versions"):
            for path in sorted(area.glob("*.py")):
                units.append((f"{area.name}/{path.name}", path.parent, [path]))
    return units


def make_linter(version: str, root: Optional[Path] = None, **overrides: object):
    from detlint.settings.config import load_settings
    from detlint.lint.engine import Linter

    # the fixtures live under tests/, a default not-training folder: check them as training code
    # the newest PyTorch and Lightning unless asked (not those installed here, which a fixture would follow)
    cli = {"tensorflow-version": version, "torch-version": NEWEST_TORCH, "lightning-version": NEWEST_LIGHTNING,
           "jax-version": NEWEST_JAX, "not-training": [], **overrides}
    settings = load_settings([root or ROOT], cli, isolated=True)
    return Linter(settings)


_SHARED_CACHE: list[Path] = []


def shared_facts_cache(kb_digest: str):
    """One facts cache for the whole session, in pytest's temporary folder: a program fixture's
    importer search reads the other fixtures of the repository, and parsing them once instead of
    once per test keeps the suite fast. Facts depend only on the file's bytes, path, the knowledge
    base and detlint's code, so sharing them changes no verdict (tests/test_cache.py checks that
    cached and fresh facts agree)."""
    import tempfile
    from detlint.lint.cache import FactsCache

    if not _SHARED_CACHE:
        _SHARED_CACHE.append(Path(tempfile.mkdtemp(prefix="detlint-test-facts-")))
    return FactsCache(_SHARED_CACHE[0], kb_digest)


def pytest_sessionfinish(session: object, exitstatus: int) -> None:
    import shutil

    for folder in _SHARED_CACHE:
        shutil.rmtree(folder, ignore_errors=True)


def lint_paths(paths: list[Path], version: str, **overrides: object):
    linter = make_linter(version, **overrides)
    return linter.run(paths, cache=shared_facts_cache(linter.kb.digest)).diagnostics


@pytest.fixture
def python() -> str:
    return sys.executable


# ---- the API names a knowledge base matches, resolved on the installed framework ---------------
def kb_api_names(kb: object, framework: str, version: object) -> list[tuple[str, str]]:
    """(owner, name) of every call, bare or attribute name ``framework``'s matchers claim exists
    in ``version``."""
    owners = ([(f"rule {c}", r.matchers) for c, r in kb.rules.items()]  # type: ignore[attr-defined]
              + [(f"group {n}", g.matchers) for n, g in kb.groups.items()]  # type: ignore[attr-defined]
              + [(f"op {i}", o.matchers) for i, o in kb.ops.items()])  # type: ignore[attr-defined]
    out = []
    for owner, matchers in owners:
        for matcher in matchers:
            if matcher.kind in ("call", "bare", "attr-assign") and matcher.framework == framework \
                    and matcher.api_versions.contains(version):
                out.extend((owner, name) for name in matcher.names)
    return sorted(set(out))


def resolve_api(name: str) -> object:
    """The object a dotted name stands for, importing submodules where an attribute is missing."""
    import importlib

    parts = name.split(".")
    obj: object = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(".".join(parts[: i + 1]))
    return obj


def run_weights(path: Path, unset: Iterable[str] = ()) -> str:
    """Run the training program ``path`` in a fresh CPU-only process (without the environment
    variables ``unset`` and PYTHONHASHSEED) and return the line it prints that starts WEIGHTS."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", *unset)}
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=path.parent,
                          env={**env, "CUDA_VISIBLE_DEVICES": ""}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return next(line for line in proc.stdout.splitlines() if line.startswith("WEIGHTS"))


def diverge_json(folder: Path, program: str, *args: str, **env: str) -> tuple[int, dict]:
    """``detlint diverge --output-format json ARGS -- python PROGRAM`` in ``folder`` on the CPU:
    its exit code and report."""
    import json

    proc = subprocess.run([sys.executable, "-m", "detlint", "diverge", "--output-format", "json", *args, "--",
                           sys.executable, program], capture_output=True, text=True, timeout=600, cwd=folder,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu", **env})
    assert proc.stdout, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


# ---- the command line, run in this process --------------------------------------------------------
IN_PROCESS_ENV = {"NO_COLOR", "FORCE_COLOR", "TMPDIR"}  # read by detlint during a run, not once per process


def detlint_here(args: Iterable[str], cwd: Path, stdin: Optional[str] = None,
                 env: Optional[dict[str, str]] = None, unset: Iterable[str] = (),
                 binary: bool = False) -> "subprocess.CompletedProcess[Any]":
    """``python -m detlint ARGS`` run in the test's own process, as a finished process: exit
    code, stdout and stderr as text. It saves the interpreter's start and imports (about half a
    second of CPU a run); what a separate process changes is tested with a separate process
    (signals, parent death, hung files, the module search path of ``python -m``). The working
    folder, environment variables (``env`` set, ``unset`` removed; TMPDIR also for ``tempfile``)
    and standard streams are the run's own and put back after it; streams are UTF-8 with strict
    errors, like a pipe's, and come back as bytes with ``binary``. Other variables than those
    read while a run goes on (the interpreter's PYTHON*, caches and rules read once per process)
    get a process of their own."""
    import contextlib
    import io
    import tempfile

    if env and set(env) - IN_PROCESS_ENV:
        full_env = {k: v for k, v in os.environ.items() if k not in unset}
        done = subprocess.run([sys.executable, "-m", "detlint", *args], cwd=cwd, capture_output=True,
                              input=None if stdin is None else stdin.encode("utf-8"),
                              env={**full_env, "NO_COLOR": "1", **env}, timeout=300)
        if binary:
            return done
        return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode("utf-8"),
                                           done.stderr.decode("utf-8"))

    from detlint import cli

    def stream(data: bytes = b"") -> io.TextIOWrapper:
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="strict", write_through=True)

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_stdin, saved_tempdir = sys.stdin, tempfile.tempdir
    out, err = stream(), stream()
    try:
        for name in unset:
            os.environ.pop(name, None)
        os.environ.update({"NO_COLOR": "1", **(env or {})})
        if env and "TMPDIR" in env:
            tempfile.tempdir = env["TMPDIR"]
        os.chdir(cwd)
        sys.stdin = stream((stdin or "").encode("utf-8"))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(args))
            except SystemExit as exc:  # argparse: usage errors, --help, --version
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.stdin, tempfile.tempdir = saved_stdin, saved_tempdir
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    raw = [s.buffer.getvalue() for s in (out, err)]  # type: ignore[attr-defined]
    text = raw if binary else [b.decode("utf-8") for b in raw]
    return subprocess.CompletedProcess(["detlint", *args], code, text[0], text[1])


def skip_if_session_ignores(signum: int) -> None:
    """A test that sends ``signum`` to a child skips where this session ignores it: a child
    inherits an ignored signal (nohup ignores SIGHUP; a shell's background job, SIGINT), and
    detlint, like any program started so, leaves it ignored."""
    import signal

    if signal.getsignal(signum) == signal.SIG_IGN:
        pytest.skip(f"{signal.Signals(signum).name} is ignored in this session")

