"""Project roots found from the path as named, the -o check on every named project and at write
time, and files named together sharing a project (issue 27, review of items 2, 3 and 23). Real
symlinks, real git repositories, real subprocesses."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import detlint_here

UNSEEDED = "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\nmodel.fit(x, y)\n"
VICTIM = "import random, time\nrandom.seed(int(time.time()))\n"

posix_only = pytest.mark.skipif(os.name != "posix", reason="symlinks are POSIX")


def detlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return detlint_here(args, cwd, env={"TMPDIR": str(cwd)}, binary=True)


def _findings(output: bytes) -> set[str]:
    return {line.replace(" [*]", "", 1) for line in output.decode().splitlines() if ": DET" in line}


# ---- a file reached through a symlinked folder of the project is not written, nor cached beside ------------

@pytest.fixture
def linked_folder(tmp_path: Path) -> tuple[Path, Path]:
    """proj/ (a pyproject.toml) holds sub -> ../outside, a folder outside it with a fixable file."""
    project, outside = tmp_path / "proj", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (outside / "victim.py").write_text(VICTIM)
    (project / "sub").symlink_to("../outside")
    return project, outside


@posix_only
@pytest.mark.parametrize("name", ["sub/victim.py", "sub"])
@pytest.mark.parametrize("marker", ["pyproject.toml", "none"])
def test_fix_through_a_symlinked_folder_leaves_the_outside_file(linked_folder: tuple[Path, Path], name: str,
                                                                marker: str) -> None:
    project, outside = linked_folder
    if marker == "none":
        (project / "pyproject.toml").unlink()
    proc = detlint("--fix", "--unsafe-fixes", "--no-cache", name, cwd=project)
    assert (outside / "victim.py").read_text() == VICTIM, proc.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["victim.py"]
    if name != "sub":  # a walk does not follow the link at all; the named file is checked, not written
        assert b"outside the project; not written" in proc.stderr, proc.stderr


@posix_only
def test_check_through_a_symlinked_folder_keeps_its_cache_in_the_project(linked_folder: tuple[Path, Path]) -> None:
    project, outside = linked_folder
    proc = detlint("sub/victim.py", cwd=project)
    assert proc.returncode == 1 and b"sub/victim.py:2:13: DET106" in proc.stdout, proc.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["victim.py"]
    assert (project / ".detlint_cache").is_dir()


# ---- the -o check: through a symlinked ancestor, in any named project, and again when written -------------

@posix_only
def test_report_through_a_symlinked_ancestor_is_not_written_out(tmp_path: Path) -> None:
    """alias -> real; real/proj/detlint-report.txt -> ../../outside/victim; run in alias/proj."""
    (tmp_path / "real" / "proj").mkdir(parents=True)
    (tmp_path / "real" / "proj" / ".git").mkdir()
    (tmp_path / "real" / "proj" / "a.py").write_text(UNSEEDED)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim").write_text("keep\n")
    (tmp_path / "real" / "proj" / "detlint-report.txt").symlink_to("../../outside/victim")
    (tmp_path / "alias").symlink_to("real")
    project = tmp_path / "alias" / "proj"
    proc = subprocess.run([sys.executable, "-m", "detlint", ".", "--no-cache", "-o", str(project / "detlint-report.txt")],
                          cwd=project, capture_output=True, timeout=300,
                          env={**os.environ, "NO_COLOR": "1", "TMPDIR": str(tmp_path), "PWD": str(project)})
    assert proc.returncode == 2 and b"outside the project; not written" in proc.stderr, proc.stderr
    assert (tmp_path / "outside" / "victim").read_text() == "keep\n"


@posix_only
def test_report_in_a_second_named_project_is_not_written_out(tmp_path: Path) -> None:
    """detlint a b -o b/detlint-report.txt, b a repository of its own whose report links out."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.py").write_text(UNSEEDED)
    (tmp_path / "b" / ".git").mkdir()
    (tmp_path / "victim").write_text("keep\n")
    (tmp_path / "b" / "detlint-report.txt").symlink_to("../victim")
    proc = detlint("a", "b", "--no-cache", "-o", "b/detlint-report.txt", cwd=tmp_path)
    assert proc.returncode == 2 and b"outside the project; not written" in proc.stderr, proc.stderr
    assert (tmp_path / "victim").read_text() == "keep\n"


@posix_only
def test_report_folder_swapped_for_a_link_during_the_run_is_not_written_through(tmp_path: Path) -> None:
    """The report's folder is replaced by a link out between the check and the write (a real
    rename, done by a sitecustomize hook when the report is about to be written)."""
    project = tmp_path / "proj"
    (project / "reports").mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    (project / "a.py").write_text(UNSEEDED)
    (tmp_path / "outside").mkdir()
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os\n"
        "import detlint.lint.files.report_file as rf\n"
        "_write = rf.write_report\n"
        "def swapped(*args, **kwargs):\n"
        "    os.rename('reports', 'reports.old')\n"
        f"    os.symlink({str(tmp_path / 'outside')!r}, 'reports')\n"
        "    return _write(*args, **kwargs)\n"
        "rf.write_report = swapped\n")
    proc = subprocess.run([sys.executable, "-m", "detlint", ".", "--no-cache", "-o", "reports/r.txt"], cwd=project,
                          capture_output=True, timeout=300,
                          env={**os.environ, "NO_COLOR": "1", "TMPDIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))})
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == [], proc.stderr
    assert proc.returncode == 2 and b"-o reports/r.txt:" in proc.stderr, proc.stderr


# ---- files named together: one project where nothing sets them apart ------------------------------------

DENSE = ("import tensorflow as tf\nm = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nm.compile('adam', 'mse')\n"
         "m.fit(tf.zeros((4, 3)), tf.zeros((4,)), epochs=1)\n")


def test_markerless_folders_named_file_by_file_share_one_cache(tmp_path: Path) -> None:
    """20 folders of two scripts, no pyproject.toml, repository or dependency file anywhere."""
    names = []
    for i in range(20):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "m0.py").write_text("import random\nrandom.seed()\n")
        (tmp_path / f"d{i}" / "m1.py").write_text("import numpy as np\nx = np.random.rand(3)\n")
        names += [f"d{i}/m0.py", f"d{i}/m1.py"]
    named = detlint("-q", *names, cwd=tmp_path)
    caches = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob(".detlint_cache"))
    assert caches == [".detlint_cache"], caches
    whole = detlint("-q", "--no-cache", ".", cwd=tmp_path)
    assert named.returncode == 1 and len(_findings(named.stdout)) == 20, named.stderr
    assert _findings(named.stdout) == _findings(whole.stdout)


def test_a_script_below_the_pins_takes_them_however_it_is_named(tmp_path: Path) -> None:
    """requirements.txt pins TF 2.4 at the top, no other marker: scripts/run.py is in TF 2.4
    named with top.py, named alone, under 'detlint .', and for flake8."""
    (tmp_path / "requirements.txt").write_text("tensorflow==2.4.0\n")
    (tmp_path / "top.py").write_text(DENSE)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.py").write_text(DENSE)
    whole = _findings(detlint("--no-cache", "-q", ".", cwd=tmp_path).stdout)
    assert {f.split(": ")[0] for f in whole if "DET201" in f and "in TF 2.4" in f} == \
        {"top.py:2:26", "scripts/run.py:2:26"}, whole
    assert _findings(detlint("--no-cache", "-q", "top.py", "scripts/run.py", cwd=tmp_path).stdout) == whole
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select", "DET", "top.py", "scripts/run.py"],
                            cwd=tmp_path, capture_output=True, timeout=300, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert _findings(flake8.stdout) == whole, flake8.stderr
