"""The facts cache: what invalidates it, what survives it, and corrupt or concurrent use."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, make_linter
from detlint.knowledge import kb as kb_module
from detlint.lint.cache import FactsCache
from detlint.lint.files.whole_writes import TEMP_SUFFIX

TRAIN = "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\nmodel.fit(x, y)\n"
CLEAN = "import os\nprint(os.getcwd())\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def run(project: Path, version: str = "2.21", kb: kb_module.KnowledgeBase | None = None, **overrides: object):
    linter = make_linter(version, root=project, **overrides)
    if kb is not None:
        linter = type(linter)(linter.settings, kb)
    cache = FactsCache(project / ".detlint_cache", linter.kb.digest)
    files = sorted(project.glob("*.py"))
    diags = linter.run(files, jobs=1, cache=cache).diagnostics
    return [(Path(d.path).name, d.code) for d in diags], cache, diags


def test_second_run_reads_everything_from_the_cache(project: Path) -> None:
    first, cache, _ = run(project)
    assert (cache.hits, cache.misses) == (0, 2)
    second, cache, _ = run(project)
    assert second == first and (cache.hits, cache.misses) == (2, 0)


def test_editing_a_file_invalidates_only_that_file(project: Path) -> None:
    run(project)
    (project / "clean.py").write_text(CLEAN + "import os\nos.environ['PYTHONHASHSEED'] = '0'\n")
    found, cache, _ = run(project)
    assert ("clean.py", "DET105") in found
    assert (cache.hits, cache.misses) == (1, 1)


def test_config_and_target_version_apply_to_cached_facts(project: Path) -> None:
    run(project)
    ignored, cache, _ = run(project, ignore=["DET201"])
    assert ("train.py", "DET201") not in ignored and cache.hits == 2
    _, cache, old = run(project, version="2.4")
    (det201,) = [d for d in old if d.code == "DET201"]
    assert 'TF_DETERMINISTIC_OPS' in det201.message and cache.hits == 2
    _, cache, new = run(project, version="2.12")
    (det201,) = [d for d in new if d.code == "DET201"]
    assert "enable_op_determinism()" in det201.message and cache.hits == 2


def test_upgrading_the_knowledge_base_invalidates(project: Path, tmp_path: Path) -> None:
    run(project)
    rules = tmp_path / "rules-next"
    shutil.copytree(ROOT / "rules", rules)
    text = (rules / "tensorflow" / "seeds.yaml").read_text().replace("summary: PYTHONHASHSEED is assigned inside the running program",
                                                       "summary: PYTHONHASHSEED is assigned in-process")
    (rules / "tensorflow" / "seeds.yaml").write_text(text)
    upgraded = kb_module._load_cached(str(rules))
    assert upgraded.digest != kb_module.load().digest
    _, cache, _ = run(project, kb=upgraded)
    assert (cache.hits, cache.misses) == (0, 2)


def test_corrupt_entry_is_recomputed(project: Path) -> None:
    first, cache, _ = run(project)
    for entry in (project / ".detlint_cache").rglob("*.json"):
        entry.write_bytes(b"{\"format\": 1, \"truncated")
    again, cache, _ = run(project)
    assert again == first and cache.misses == 2
    third, cache, _ = run(project)
    assert third == first and cache.hits == 2


def test_concurrent_runs_share_the_cache(project: Path) -> None:
    for i in range(20):
        (project / f"m{i}.py").write_text(TRAIN if i % 2 else CLEAN)
    cmd = [sys.executable, "-m", "detlint", ".", "--isolated", "--tf-version", "2.21", "-j", "1"]
    procs = [subprocess.Popen(cmd, cwd=project, stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert len(set(outputs)) == 1 and "DET201" in outputs[0]
    assert not list((project / ".detlint_cache").rglob(f"*{TEMP_SUFFIX}"))


def test_fully_cached_run_does_not_import_libcst(project: Path) -> None:
    # files are parsed in worker processes: a run that parses anything starts one
    cmd = [sys.executable, "-c", "import sys; from detlint.cli import main; from detlint.lint.isolation import ParserPool; "
           "code = main(['.', '--isolated', '--tf-version', '2.21']); "
           "print('LIBCST', 'libcst' in sys.modules, 'WORKERS', ParserPool.workers_started)"]
    subprocess.run(cmd, cwd=project, capture_output=True, text=True)
    second = subprocess.run(cmd, cwd=project, capture_output=True, text=True)
    assert "LIBCST False WORKERS 0" in second.stdout
    uncached = subprocess.run(cmd[:-1] + [cmd[-1].replace("'2.21']", "'2.21', '--no-cache']")], cwd=project,
                              capture_output=True, text=True)
    assert "WORKERS 1" in uncached.stdout and "DET201" in uncached.stdout


def test_benchmark_script_runs_on_a_tiny_corpus() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick"], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "detlint cold" in proc.stdout and "one small file" in proc.stdout
    # the baselines, from an environment of their own, and the plugin line for reference only
    assert "plain flake8" in proc.stdout and "ruff --select ALL" in proc.stdout and "(reference)" in proc.stdout


def test_names_from_a_shim_follow_the_shim_through_the_cache(tmp_path: Path) -> None:
    """train.py's facts depend on what shim.py exports: a changed shim changes them."""
    (tmp_path / "shim.py").write_text("import tensorflow as tf\nkeras = tf.keras\n")
    (tmp_path / "train.py").write_text("from shim import keras\n"
                                       "model = keras.Sequential([keras.layers.Conv2D(4, 3)])\nmodel.fit(x, y)\n")
    first, _, _ = run(tmp_path)
    assert ("train.py", "DET101") in first
    again, cache, _ = run(tmp_path)
    assert again == first and cache.misses == 0
    (tmp_path / "shim.py").write_text("keras = None\n")  # no framework behind the name any more
    changed, _, _ = run(tmp_path)
    assert changed == []
