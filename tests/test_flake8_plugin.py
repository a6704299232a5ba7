"""flake8 --select DET reports the same findings as the CLI on the same fixtures."""
from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from conftest import FIXTURES, NEWEST_LIGHTNING, NEWEST_TORCH, fixture_overrides, fixture_units, fixture_version, lint_paths
from detlint.lint.brief import one_line

LINE_RE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>DET\d{3}) (?P<msg>.*)$")


def run_flake8(files: list[Path], version: str, *extra: str, torch: str = NEWEST_TORCH,
               lightning: str = NEWEST_LIGHTNING) -> list[tuple[str, int, int, str, str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "DET", f"--detlint-tf-version={version}",
         f"--detlint-torch-version={torch}", f"--detlint-lightning-version={lightning}", *extra, *map(str, files)],
        capture_output=True, text=True, cwd=FIXTURES, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    out = []
    for line in proc.stdout.splitlines():
        match = LINE_RE.match(line)
        assert match, line
        out.append((Path(match["path"]).resolve().relative_to(FIXTURES).as_posix(), int(match["line"]),
                    int(match["col"]), match["code"], match["msg"]))
    return sorted(out)


def test_flake8_matches_cli_on_all_fixtures() -> None:
    by_version: dict[tuple[str, str, str], list[Path]] = defaultdict(list)
    for _, _, files in fixture_units():
        overrides = fixture_overrides(files)
        by_version[fixture_version(files), overrides.get("torch-version", NEWEST_TORCH),
                   overrides.get("lightning-version", NEWEST_LIGHTNING)].extend(files)
    compared = 0
    for (version, torch, lightning), files in by_version.items():
        cli = sorted((Path(d.path).resolve().relative_to(FIXTURES).as_posix(), d.line, d.col + 1, d.code,
                      one_line(d)) for d in lint_paths(files, version, select=["DET"], **{
                          "torch-version": torch, "lightning-version": lightning}))
        flake = run_flake8(files, version, torch=torch, lightning=lightning)
        assert flake == cli, f"TF {version}, PyTorch {torch}, Lightning {lightning}: flake8 and the CLI disagree"
        compared += len(cli)
    assert compared > 40


def test_flake8_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "t.py"
    path.write_text("import os\nos.environ['PYTHONHASHSEED'] = '0'\n")
    before = path.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "DET", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert ":2:1: DET105" in proc.stdout
    assert path.read_bytes() == before


def test_flake8_owns_noqa() -> None:
    """The plugin reports everything; flake8's own noqa handling drops the suppressed lines."""
    path = FIXTURES / "seeds" / "noqa.py"
    reported = run_flake8([path], "2.21")
    assert [r[1] for r in reported] == [5, 6]
    unfiltered = run_flake8([path], "2.21", "--disable-noqa")
    assert [r[1] for r in unfiltered] == [3, 4, 5, 6]


def test_flake8_plugin_is_registered_under_det() -> None:
    proc = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True)
    assert "detlint" in proc.stdout


def test_detlint_options_from_flake8_config(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[flake8]\nselect = DET\ndetlint-tf-version = 2.4\n")
    (tmp_path / "train.py").write_text("import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(2, 3)])\n"
                                       "model.fit(x, y)\n")
    proc = subprocess.run([sys.executable, "-m", "flake8", "train.py"], cwd=tmp_path, capture_output=True, text=True)
    det201 = [line for line in proc.stdout.splitlines() if "DET201" in line]
    assert det201 and "TF 2.4" in det201[0] and "TF_DETERMINISTIC_OPS" in det201[0]
