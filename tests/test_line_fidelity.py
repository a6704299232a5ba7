"""Lines as Python counts them, and notebook cells a fix did not touch kept byte for byte.

``str.splitlines`` also breaks at form feed, \\x0b, \\x1c-\\x1e, \\x85, U+2028 and U+2029, which
Python's tokenizer (and libcst) treat as ordinary characters: a file holding them in comments or
strings must still get ``# noqa``, the shown source line, stand-ins, ``--diff`` and fix edits on
the lines libcst numbers. A fixed notebook changes only the JSON of the cell sources a fix edits.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import detlint_here

# characters str.splitlines breaks at and Python does not
OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# three lines as Python counts them (a comment, a line holding only a form feed, a string), many more
# as str.splitlines counts them
PREAMBLE = f"# notes a{OTHER_BREAKS}b\n\x0c\nNOTE = 'a{OTHER_BREAKS}b'\n"
SETS_HASH_SEED = 'os.environ["PYTHONHASHSEED"] = "0"'


def detlint(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return detlint_here(["--isolated", "--no-cache", "--tf-version", "2.21", "--torch-version", "2.15", *args],
                        tmp_path, env={"TMPDIR": str(tmp_path)})


def json_report(tmp_path: Path, *args: str) -> list[dict]:
    done = detlint(tmp_path, "--output-format", "json", *args)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


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


# --- lines as Python counts them ---

@pytest.mark.parametrize("preamble", [PREAMBLE, "\x0c\n\n"], ids=["every-break", "form-feed-line"])
def test_noqa_after_characters_python_does_not_break_at(tmp_path: Path, preamble: str) -> None:
    """The case seen: a line holding only a form feed, then the noqa'd line 4 still reported."""
    write(tmp_path / "f.py", f"import os\n{preamble}{SETS_HASH_SEED}  # noqa: DET105\n")
    assert json_report(tmp_path, "f.py") == []
    write(tmp_path / "g.py", f"import os\n{preamble}{SETS_HASH_SEED}\n")
    assert [(r["code"], r["location"]["row"]) for r in json_report(tmp_path, "g.py")] == \
        [("DET105", 2 + preamble.count("\n"))]


def test_noqa_in_a_notebook_cell_after_characters_python_does_not_break_at(tmp_path: Path) -> None:
    cell = f"import os\n{PREAMBLE}{SETS_HASH_SEED}  # noqa: DET105\n"
    write(tmp_path / "nb.ipynb", notebook_text([re.findall(r"[^\n]*\n", cell)]))
    assert json_report(tmp_path, "nb.ipynb") == []


def test_a_model_cut_to_its_features_after_characters_python_does_not_break_at(tmp_path: Path) -> None:
    """Whether a model is only read through ``.features`` is decided on the lines after its own."""
    fixture = Path(__file__).parent / "fixtures" / "torch" / "features_only.py"
    text = fixture.read_text(encoding="utf-8").replace("torch.manual_seed(0)\n", f"{PREAMBLE}torch.manual_seed(0)\n")
    write(tmp_path / "f.py", text)
    expected = text.split("\n").index("backbone = models.vgg19(weights=None)  # expect: DET603") + 1
    assert [(r["code"], r["location"]["row"]) for r in json_report(tmp_path, "f.py")] == [("DET603", expected)]


def test_a_stand_in_after_characters_python_does_not_break_at(tmp_path: Path) -> None:
    """``(x): int = 1`` (which libcst rejects) stands in for itself on its own line; the finding
    after it stays where it is."""
    write(tmp_path / "f.py", f"import os\n{PREAMBLE}(x): int = 1\n{SETS_HASH_SEED}\n")
    assert [(r["code"], r["location"]["row"]) for r in json_report(tmp_path, "f.py")] == [("DET105", 6)]


def test_the_full_format_shows_the_line_the_finding_is_on(tmp_path: Path) -> None:
    write(tmp_path / "f.py", f"import os\n{PREAMBLE}{SETS_HASH_SEED}\n")
    out = detlint(tmp_path, "--output-format", "full", "f.py").stdout
    assert f"5 | {SETS_HASH_SEED}\n" in out, out


def test_diff_hunks_count_lines_as_python_does(tmp_path: Path) -> None:
    write(tmp_path / "f.py", f"import os\n# a\x0cb\u2028c\n{SETS_HASH_SEED}\nprint(os.sep)\n")
    out = detlint(tmp_path, "--diff", "--unsafe-fixes", "f.py").stdout
    assert out == ("--- a/f.py\n+++ b/f.py\n@@ -1,4 +1,3 @@\n import os\n # a\x0cb\u2028c\n"
                   f"-{SETS_HASH_SEED}\n print(os.sep)\n")


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_fix_edits_in_json_are_on_the_lines_python_counts(tmp_path: Path, end: str) -> None:
    lines = ["import os", f"# a{OTHER_BREAKS}b", SETS_HASH_SEED, "print(os.sep)"]
    write(tmp_path / "f.py", end.join(lines) + end)
    (record,) = json_report(tmp_path, "--unsafe-fixes", "f.py")
    (edit,) = record["fix"]["edits"]
    assert record["location"] == {"row": 3, "column": 1}
    assert (edit["location"], edit["end_location"], edit["content"]) == \
        ({"row": 3, "column": 1}, {"row": 4, "column": 1}, "")
