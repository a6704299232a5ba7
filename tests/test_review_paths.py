"""Project roots found from the path as named, the -o check on every named project and at write
time, and files named together sharing a project (issue 27, review of items 2, 3 and 23). Real
symlinks, real git repositories, real subprocesses."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

UNSEEDED = "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\nmodel.fit(x, y)\n"
VICTIM = "import random, time\nrandom.seed(int(time.time()))\n"

posix_only = pytest.mark.skipif(os.name != "posix", reason="symlinks are POSIX")


def detlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(cwd)}
    return subprocess.run([sys.executable, "-m", "detlint", *args], cwd=cwd, capture_output=True, env=env,
                          timeout=300)


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

