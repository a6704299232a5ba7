"""Notebook cells a fix did not touch kept byte for byte: a fixed notebook changes only the JSON
of the cell sources a fix edits."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def detlint(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "detlint", "--isolated", "--no-cache", "--tf-version", "2.21", *args],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))  # as written: no newline translation
    return path


def notebook_text(sources: list[object]) -> str:
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
             for source in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


# --- notebooks: an untouched cell keeps its bytes, an edited one its trailing blank lines ---

EDITED = ["import os\n", "import tensorflow as tf\n", "os.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'\n",
          "print(os.sep)\n", "\n", "\n"]
UNTOUCHED: list[object] = [
    ["x = 1\n", "\n"],  # the case seen on a real run: "x = 1\n\n" became "x = 1\n"
    "z = 2\n\n",  # a source written as one string
    ["  w = 1\n", "    \n", "  v = w\n"],  # indented from its first line (IPython removes it), a line of spaces
    "y = 3\n\n\n",  # the last cell
]


def test_a_fix_changes_only_the_json_of_the_cell_it_edits(tmp_path: Path) -> None:
    nb = write(tmp_path / "nb.ipynb", notebook_text([EDITED, *UNTOUCHED]))
    done = subprocess.run([sys.executable, "-m", "detlint", "--fix", "--unsafe-fixes", "nb.ipynb"], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "TMPDIR": str(tmp_path)}, timeout=300)
    assert "1 fixed" in done.stdout, done.stdout + done.stderr
    kept = [line for line in EDITED if not line.startswith("os.environ")]  # and its two blank lines
    assert nb.read_bytes() == notebook_text([kept, *UNTOUCHED]).encode("utf-8")


def test_an_edited_string_cell_keeps_its_trailing_blank_lines(tmp_path: Path) -> None:
    nb = write(tmp_path / "nb.ipynb", notebook_text(["".join(EDITED), "x = 1\n\n"]))
    detlint(tmp_path, "--fix", "--unsafe-fixes", "nb.ipynb")
    kept = "".join(line for line in EDITED if not line.startswith("os.environ"))
    assert nb.read_bytes() == notebook_text([kept, "x = 1\n\n"]).encode("utf-8")
