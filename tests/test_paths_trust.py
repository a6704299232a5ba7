"""Paths, project roots and the command line (issue 27, items 2, 3, 13, 23 and 24): reports never
written through a symlink out of the project, --fix never through a named one, file names that are
not UTF-8, files from unrelated folders each with their own project, and ``python -m detlint`` never
importing the checked folder's modules. Real symlinks, a real git repository, real subprocesses."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

UNSEEDED = "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\nmodel.fit(x, y)\n"
FIXABLE = "import os\nos.environ['PYTHONHASHSEED'] = '0'\nprint(os.sep)\n"
FIXED = "import os\nprint(os.sep)\n"

posix_only = pytest.mark.skipif(os.name != "posix", reason="symlinks and byte file names are POSIX")


def detlint(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``python -m detlint`` as a user runs it; the output as bytes (what a UTF-8 reader gets)."""
    full_env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(cwd), **(env or {})}
    return subprocess.run([sys.executable, "-m", "detlint", *args], cwd=cwd, capture_output=True,
                          env=full_env, timeout=300)


# ---- item 24: `python -m detlint` never imports the modules of the folder it runs in -----------------------

def test_python_m_detlint_does_not_import_the_working_folders_modules(tmp_path: Path) -> None:
    # json and pickle are imported by detlint's own modules, typing by the package's __init__
    for name in ("json", "pickle", "typing"):
        (tmp_path / f"{name}.py").write_text(
            f"import os\nopen(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'IMPORTED_{name}'), 'w').close()\n")
    (tmp_path / "train.py").write_text(UNSEEDED)
    proc = detlint(".", "--tf-version", "2.15", cwd=tmp_path)
    assert sorted(p.name for p in tmp_path.glob("IMPORTED_*")) == []
    out = proc.stdout.decode()
    assert proc.returncode == 1 and "train.py:2:30: DET101" in out and "Found 2 errors." in out, proc.stderr
