"""What a run shows and keeps: the source line of a notebook finding, the comments a fix does not
name, a cache that changed code never reads, and stderr lines a file name cannot break.

Each case runs the real command line on real files in ``tmp_path``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional, Union

SETS_HASH_SEED = 'os.environ["PYTHONHASHSEED"] = "0"'


def detlint(cwd: Path, *args: str, env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(cwd), **(env or {})}
    return subprocess.run([sys.executable, "-m", "detlint", "--isolated", "--tf-version", "2.21",
                           "--torch-version", "2.15", *args],
                          cwd=cwd, capture_output=True, text=True, env=full_env, timeout=300)


def notebook(*cells: tuple[str, Union[str, list[str]]]) -> str:
    return json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": source,
                                  **({"execution_count": None, "outputs": []} if kind == "code" else {})}
                                 for kind, source in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


# ---- the full format shows a notebook finding's own cell line -------------------------------------

def test_full_format_shows_the_cell_line_of_a_notebook_finding(tmp_path: Path) -> None:
    """Line 3 of cell 3, not line 3 of the notebook's JSON; the carets under the assignment, in
    the cell as written (indented two spaces, which IPython strips)."""
    (tmp_path / "n.ipynb").write_text(notebook(
        ("markdown", ["# title\n", "more\n"]),
        ("code", ["import os\n"]),
        ("code", ["%matplotlib inline\n", "  x = 1\n", f"  y = 2; {SETS_HASH_SEED}\n"])))
    done = detlint(tmp_path, "--no-cache", "--output-format", "full", "n.ipynb")
    assert done.returncode == 1, done.stderr
    assert "n.ipynb:cell 3:3:10: DET105 " in done.stdout
    assert f"  |\n3 |   y = 2; {SETS_HASH_SEED}\n  | {' ' * 9}{'^' * len(SETS_HASH_SEED)}\n" in done.stdout, \
        done.stdout


def test_full_format_shows_a_line_of_a_cell_given_as_one_string(tmp_path: Path) -> None:
    (tmp_path / "n.ipynb").write_text(notebook(("code", f"import os\r\n{SETS_HASH_SEED}")))
    out = detlint(tmp_path, "--no-cache", "--output-format", "full", "n.ipynb").stdout
    assert f"  |\n2 | {SETS_HASH_SEED}\n  | {'^' * len(SETS_HASH_SEED)}\n" in out, out
