"""Notebook cells whose lines end in CR alone, CRLF, or a mix: cells and lines are counted as
Python counts them (CR, LF and CRLF are each one line break), in reports, ``# noqa`` and ``--fix``,
and a fixed cell keeps each of its lines' own break."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import detlint_here

SETS_HASH_SEED = "os.environ['PYTHONHASHSEED'] = '0'"
DROPOUT = "model = tf.keras.Sequential([tf.keras.layers.Dropout(0.5), tf.keras.layers.Dense(1)])"
TRAIN = f"{DROPOUT}\nmodel.compile('sgd', 'mse')\nmodel.fit(x, y)\n"  # unseeded: DET101 at its Dropout


def write_notebook(path: Path, cells: list[str]) -> Path:
    """Each source a list of lines, split where each line ends (as nbformat writes a CR-only cell)."""
    data = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                       "source": text.splitlines(keepends=True)} for text in cells],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def detlint(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return detlint_here(["--isolated", "--no-cache", "--tf-version", "2.21", *args], tmp_path,
                        env={"TMPDIR": str(tmp_path)})


def json_findings(tmp_path: Path, name: str) -> list[tuple[str, int, int, int]]:
    records = json.loads(detlint(tmp_path, name, "--output-format", "json").stdout)
    return sorted((r["code"], r["cell"], r["location"]["row"], r["location"]["column"]) for r in records)


def sources(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]]


# the first cell's lines end in CR alone, CRLF, or a mix; the finding on its third line and the
# training cell after it are where they are whatever the breaks
FIRST_CELLS = {
    "cr": f"import os\rimport tensorflow as tf\r{SETS_HASH_SEED}\r",
    "crlf": f"import os\r\nimport tensorflow as tf\r\n{SETS_HASH_SEED}\r\n",
    "mixed": f"import os\r\nimport tensorflow as tf\r{SETS_HASH_SEED}\n",
}


@pytest.mark.parametrize("breaks", list(FIRST_CELLS))
def test_an_unseeded_training_cell_after_a_cr_cell_is_reported_at_its_own_cell_and_line(
        tmp_path: Path, breaks: str) -> None:
    write_notebook(tmp_path / "nb.ipynb", [FIRST_CELLS[breaks], TRAIN])
    assert json_findings(tmp_path, "nb.ipynb") == [("DET101", 2, 1, 30), ("DET105", 1, 3, 1)]


def test_a_training_cell_whose_own_lines_end_in_cr_alone(tmp_path: Path) -> None:
    """The concise, JSON and SARIF reports all say cell 2, line 2 (not the cell's one "line")."""
    write_notebook(tmp_path / "nb.ipynb", ["import tensorflow as tf\r", "x, y = 1, 2\r" + TRAIN.replace("\n", "\r")])
    assert json_findings(tmp_path, "nb.ipynb") == [("DET101", 2, 2, 30)]
    assert "nb.ipynb:cell 2:2:30: DET101" in detlint(tmp_path, "nb.ipynb").stdout
    sarif = json.loads(detlint(tmp_path, "nb.ipynb", "--output-format", "sarif").stdout)
    (result,) = sarif["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (result["properties"]["cell"], region["startLine"], region["startColumn"]) == (2, 2, 30)


def test_a_syntax_error_in_a_cr_cell_is_reported_at_its_line(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", ["import os\rx = 1\ry = (\r", "import tensorflow as tf\n"])
    records = json.loads(detlint(tmp_path, "nb.ipynb", "--output-format", "json").stdout)
    assert [(r["code"], r["cell"], r["location"]["row"]) for r in records] == [("DET001", 1, 3)]


def test_noqa_on_lines_of_cr_cells_silences_those_lines_only(tmp_path: Path) -> None:
    first = f"import os\rimport tensorflow as tf  # noqa: DET105\r{SETS_HASH_SEED}  # noqa: DET105\r"
    train = TRAIN.replace("\n", "\r").replace(DROPOUT, DROPOUT + "  # noqa: DET101")
    write_notebook(tmp_path / "quiet.ipynb", [first, train])
    assert json_findings(tmp_path, "quiet.ipynb") == []
    write_notebook(tmp_path / "loud.ipynb", [first.replace(f"{SETS_HASH_SEED}  # noqa: DET105", SETS_HASH_SEED),
                                             "x = 1\r" + train])
    assert json_findings(tmp_path, "loud.ipynb") == [("DET105", 1, 3, 1)]


def test_fix_keeps_every_cells_own_line_breaks(tmp_path: Path) -> None:
    """The seed goes in after the imports of a CR-only cell and its lines end in CR; the line a fix
    removes from a mixed cell goes and the others keep their breaks; the training cell is untouched."""
    cells = ["import os\rimport tensorflow as tf\r",
             f"{SETS_HASH_SEED}\r\nx, y = 1, 2\rprint(os.sep)\n",
             f"w = 3\r\n{TRAIN}"]
    nb = write_notebook(tmp_path / "nb.ipynb", cells)
    fixed = detlint(tmp_path, "nb.ipynb", "--fix", "--unsafe-fixes")
    assert "2 fixed, 0 remaining" in fixed.stdout, fixed.stdout + fixed.stderr
    assert sources(nb) == ["import os\rimport tensorflow as tf\rimport keras\r\rkeras.utils.set_random_seed(42)\r",
                           "x, y = 1, 2\rprint(os.sep)\n",
                           cells[2]]
    assert json_findings(tmp_path, "nb.ipynb") == []


def test_a_line_added_to_a_mixed_cell_ends_as_the_line_before_it(tmp_path: Path) -> None:
    cells = ["import os\nimport tensorflow as tf\r\nprint(os.sep)\r", TRAIN]
    nb = write_notebook(tmp_path / "nb.ipynb", cells)
    detlint(tmp_path, "nb.ipynb", "--fix", "--unsafe-fixes")
    assert sources(nb) == ["import os\nimport tensorflow as tf\r\nimport keras\r\n\r\nkeras.utils.set_random_seed(42)"
                           "\r\nprint(os.sep)\r", TRAIN]
