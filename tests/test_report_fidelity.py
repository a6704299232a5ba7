"""What a run shows and keeps: the source line of a notebook finding, the comments a fix does not
name, a cache that changed code never reads, and stderr lines a file name cannot break.

Each case runs the real command line on real files in ``tmp_path``.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Optional, Union

import pytest

from conftest import ROOT, detlint_here

SETS_HASH_SEED = 'os.environ["PYTHONHASHSEED"] = "0"'


def detlint(cwd: Path, *args: str, env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    return detlint_here(["--isolated", "--tf-version", "2.21", "--torch-version", "2.15", *args], cwd,
                        env={"TMPDIR": str(cwd), **(env or {})})


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


# ---- a fix keeps every line it does not name --------------------------------------------------------

@pytest.mark.parametrize(("before", "after"), [
    # the comment above the removed last statement (the import it used goes too)
    (f"import os\n# a comment\n{SETS_HASH_SEED}\n", "# a comment\n"),
    (f"import os\n\n# one\n\n# two\n{SETS_HASH_SEED}\n", "\n# one\n\n# two\n"),
    # above a removed statement in the middle
    (f"import os\n# first\n{SETS_HASH_SEED}\n# second\nprint(os.sep)\n",
     "import os\n# first\n# second\nprint(os.sep)\n"),
    # a comment at the end of the file, after the removed statement
    (f"import os\n{SETS_HASH_SEED}\n# the end\n", "# the end\n"),
    (f"import os\n# above\n{SETS_HASH_SEED}\n# the end\n", "# above\n# the end\n"),
    # the last statement of a block
    (f"import os\nif __name__ == '__main__':\n    print(os.sep)\n    # why\n    {SETS_HASH_SEED}\n",
     "import os\nif __name__ == '__main__':\n    print(os.sep)\n    # why\n"),
    (f"import os\nif __name__ == '__main__':\n    # why\n    {SETS_HASH_SEED}\nprint(os.sep)\n",
     "import os\nif __name__ == '__main__':\n    # why\n    pass\nprint(os.sep)\n"),
], ids=["above-last", "blank-lines-above-last", "above-middle", "end-of-file", "above-and-end",
        "block-last", "block-only"])
def test_fix_keeps_the_comments_around_a_removed_statement(tmp_path: Path, before: str, after: str) -> None:
    path = tmp_path / "f.py"
    path.write_text(before)
    diff = detlint(tmp_path, "--no-cache", "--diff", "--unsafe-fixes", "f.py")
    assert diff.returncode == 1, diff.stderr
    done = detlint(tmp_path, "--no-cache", "--fix", "--unsafe-fixes", "f.py")
    assert "1 fixed" in done.stdout, done.stdout + done.stderr
    assert path.read_text() == after
    # the diff showed the same change: the statement (and the import it used) go, nothing else
    changed = [line for line in diff.stdout.splitlines()[2:] if line[:1] in "+-"]
    assert changed and all(line[1:].strip() in (SETS_HASH_SEED, "import os") for line in changed
                           if line.startswith("-")), diff.stdout
    assert all(line == "+    pass" for line in changed if line.startswith("+")), diff.stdout


def test_fix_keeps_the_comment_above_an_import_it_made_unused(tmp_path: Path) -> None:
    """The import a fix left unused is the file's last statement: the comment above it stays
    (and so does the file's last line break)."""
    path = tmp_path / "f.py"
    path.write_text("import random\nrandom.seed(int(time.time()))\n# the clock\nimport time\n")
    detlint(tmp_path, "--no-cache", "--fix", "--unsafe-fixes", "f.py")
    assert path.read_text() == "import random\nrandom.seed(42)\n# the clock\n"


def test_fix_keeps_the_comments_of_a_notebook_cell_whose_last_statement_goes(tmp_path: Path) -> None:
    path = tmp_path / "n.ipynb"
    path.write_text(notebook(("code", ["import os\n", "print(os.sep)\n"]),
                             ("code", ["# why this is here\n", SETS_HASH_SEED + "\n", "# and after it\n"])))
    done = detlint(tmp_path, "--no-cache", "--fix", "--unsafe-fixes", "n.ipynb")
    assert "1 fixed" in done.stdout, done.stdout + done.stderr
    cells = json.loads(path.read_text())["cells"]
    assert cells[0]["source"] == ["import os\n", "print(os.sep)\n"]
    assert cells[1]["source"] == ["# why this is here\n", "# and after it\n"]


# ---- changed detlint code never reads old facts ------------------------------------------------------

def _planted(cache: Path, error: str) -> int:
    """Every facts entry of ``a.py`` in ``cache`` now says the file could not be read, for ``error``."""
    entries = [p for p in cache.rglob("*.json")
               if not p.name.endswith(".outline.json") and Path(json.loads(p.read_bytes())["path"]).name == "a.py"]
    for entry in entries:
        doc = json.loads(entry.read_bytes())
        doc["error"], doc["error_line"], doc["error_col"] = error, 1, 0
        entry.write_text(json.dumps(doc))
    return len(entries)


def _planted_rules(user_cache: Path, words: str) -> int:
    """The knowledge base kept in the user's cache now says ``words`` in DET105's message."""
    kept = list(user_cache.glob("detlint/kb-*.json"))
    for path in kept:
        path.write_text(path.read_text().replace("does not change this interpreter's", words))
    return len(kept)


def test_a_change_to_detlints_code_does_not_read_the_old_caches(tmp_path: Path) -> None:
    """A copy of detlint (same version, same knowledge base) fills its caches; an entry planted in
    each shows while the code is the same, and is never read once one of its modules changes."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "detlint", copy / "detlint", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", copy / "rules")
    project, cache, user_cache = tmp_path / "project", tmp_path / "cache", tmp_path / "xdg"
    project.mkdir()
    (project / "a.py").write_text("x = 1\n")
    (project / "b.py").write_text(f"import os\n{SETS_HASH_SEED}\n")
    env = {"PYTHONPATH": str(copy), "XDG_CACHE_HOME": str(user_cache), "PYTHONDONTWRITEBYTECODE": "1"}
    args = ("--cache-dir", str(cache), "--output-format", "concise", "a.py", "b.py")
    where = subprocess.run([sys.executable, "-c", "import detlint; print(detlint.__file__)"], cwd=project,
                           capture_output=True, text=True, env={**os.environ, **env}, timeout=120)
    assert where.stdout.strip() == str(copy / "detlint" / "__init__.py")
    assert "b.py:2:1: DET105 " in detlint(project, *args, env=env).stdout
    assert _planted(cache, "PLANTED-FACT") == 1 and _planted_rules(user_cache, "PLANTED-RULE") == 1
    # the entries are read (by a check that is not the same, which would be replayed: replay.py)
    shown = detlint(project, *args, env={**env, "UNRELATED": "1"}).stdout
    assert "a.py:1:1: DET001 file cannot be checked: PLANTED-FACT" in shown and "PLANTED-RULE" in shown, shown
    with open(copy / "detlint" / "lint" / "output.py", "a", encoding="utf-8") as handle:
        handle.write("# a change within one version\n")
    after = detlint(project, *args, env=env)
    assert "b.py:2:1: DET105 " in after.stdout, after.stdout + after.stderr
    assert "PLANTED" not in after.stdout and "DET001" not in after.stdout, after.stdout


# ---- stderr and --diff headers show a hostile file name escaped --------------------------------------

HOSTILE = "a\n\x1b[2Jb.py"
SHOWN = "a\\n\\x1b[2Jb.py"


def test_notes_and_diff_headers_escape_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / HOSTILE
    path.write_text('import os\nos.environ["TF_USE_CUDNN_AUTOTUNE"] = "0"\nprint(os.sep)\n')
    path.chmod(stat.S_IRUSR | stat.S_IRGRP)
    try:
        fixed = detlint(tmp_path, "--no-cache", "--fix", HOSTILE)
        diff = detlint(tmp_path, "--no-cache", "--diff", HOSTILE)
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert "\x1b" not in fixed.stderr and "\x1b" not in diff.stdout and "\x1b" not in diff.stderr
    assert f"detlint: {SHOWN}: is read-only; not fixed" in fixed.stderr, fixed.stderr
    assert fixed.stderr.count("\n") == len(fixed.stderr.splitlines())  # no line but its own
    assert diff.stdout.startswith(f"--- a/{SHOWN}\n+++ b/{SHOWN}\n@@ "), diff.stdout


def test_an_error_about_a_piped_file_name_is_escaped(tmp_path: Path) -> None:
    """A syntax error read from stdin under --fix, named by --stdin-filename."""
    done = subprocess.run([sys.executable, "-m", "detlint", "--isolated", "--no-cache", "--diff",
                           "--stdin-filename", HOSTILE, "-"], input="x = (\n", cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "TMPDIR": str(tmp_path)}, timeout=120)
    assert "\x1b" not in done.stdout + done.stderr
    assert f"detlint: {SHOWN}: not fixed: syntax error" in done.stderr, done.stderr


def test_a_warning_quoting_the_project_folder_is_escaped(tmp_path: Path) -> None:
    """The facts cache will not follow a symlink: the warning names the project's folder."""
    project = tmp_path / "p\n\x1b[2Jq"
    project.mkdir()
    (project / "a.py").write_text("x = 1\n")
    (tmp_path / "elsewhere").mkdir()
    (project / ".detlint_cache").symlink_to(tmp_path / "elsewhere")
    done = detlint(project, "a.py")
    assert "\x1b" not in done.stderr and "p\\n\\x1b[2Jq/.detlint_cache is a symlink" in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_an_error_quoting_a_named_file_is_escaped(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    done = subprocess.run([sys.executable, "-m", "detlint", "--config", "c\n\x1b[2Jd.toml", "a.py"], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "TMPDIR": str(tmp_path)}, timeout=120)
    assert done.returncode == 2
    assert done.stderr == "detlint: error: config file c\\n\\x1b[2Jd.toml does not exist\n", done.stderr
