"""A cloned repository's settings, cache and file names are data: they cannot make detlint write
outside the project, blow up a report, crash the run or inject lines into what it prints.

Each test reproduces one item of issue 27 (4, 10, 15, 17, 20) on real files, real symlinks and
the real command line; runs that could hang go through a subprocess with a timeout.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from detlint.cli import main
from detlint.knowledge import kb as kb_module
from detlint.lint.cache import FactsCache
from detlint.lint.engine import real
from detlint.lint.ftypes import Diagnostic
from detlint.lint.output import write_concise, write_full, write_github
from detlint.settings.config import load_settings

GOOD = "import os\nos.environ['PYTHONHASHSEED'] = '0'\n"  # DET105 on line 2
PROJECT = "[project]\nname = 'p'\n"
posix_only = pytest.mark.skipif(os.name != "posix", reason="symlinks, FIFOs and newlines in names are POSIX")


def project(tmp_path: Path, files: dict[str, str], pyproject: str = PROJECT) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(pyproject)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def detlint(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real command line in a child process run from ``root``, with a private TMPDIR."""
    tmp = root.parent / "tmpdir"
    tmp.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "DETLINT_RULES_DIR")}
    cmd = [sys.executable, "-m", "detlint", *args, "--tf-version", "2.21"]
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout,
                          env={**env, "TMPDIR": str(tmp)})


def in_process(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main([*args, "--tf-version", "2.21", "--no-cache"], out)
    return code, out.getvalue()


def everything_under(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*"))


# ---- item 15: a config file detlint cannot parse is warned about, never a crash ------------------------

DEEP = {"nested lists": "x = " + "[" * 500 + "]" * 500 + "\n",
        "nested inline tables": "x = " + "{a = " * 500 + "1" + "}" * 500 + "\n"}


@pytest.mark.parametrize("shape", list(DEEP))
def test_a_deeply_nested_pyproject_is_warned_about_and_skipped(tmp_path: Path, shape: str) -> None:
    root = project(tmp_path, {"good.py": GOOD}, PROJECT + DEEP[shape])
    proc = detlint(root, ".")
    assert proc.returncode == 1 and "DET105" in proc.stdout, proc.stderr
    assert "internal error" not in proc.stderr
    (warning,) = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert "pyproject.toml" in warning and "ignored" in warning


def test_a_deeply_nested_pyproject_that_configures_detlint_is_a_configuration_error(tmp_path: Path) -> None:
    root = project(tmp_path, {"good.py": GOOD}, "[tool.detlint]\nseed = 1\n" + DEEP["nested lists"])
    proc = detlint(root, ".")
    assert proc.returncode == 2 and "internal error" not in proc.stderr
    assert proc.stderr.startswith("detlint: error:") and "pyproject.toml: not valid TOML" in proc.stderr


def test_settings_readers_skip_deep_dependency_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What the flake8 plugin calls: the settings of a project whose pyproject.toml and Pipfile nest
    too deeply are the defaults, with one warning."""
    root = project(tmp_path, {"good.py": GOOD, "Pipfile": "[packages]\n" + DEEP["nested lists"]},
                   PROJECT + DEEP["nested lists"])
    settings = load_settings([root / "good.py"], {"tensorflow-version": "2.21"})
    assert settings.project_root == root.resolve() and settings.config_file is None
    assert "pyproject.toml: not valid TOML" in capsys.readouterr().err
