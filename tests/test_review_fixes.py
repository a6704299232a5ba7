"""Regression tests for the review of the trust fixes: in-place rewrites under signals, the
imports strings keep, large notebook cells and notebooks, hard-link censuses, cell source lists."""
from __future__ import annotations

import json
import os
import subprocess
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import skip_if_session_ignores
from test_fix_trust import FIXABLE, OPTIONS, notebook_raw, project, run_cli

REPO = Path(__file__).resolve().parent.parent


def run_python(script: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(cwd), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout)


# ---- 1. an in-place rewrite runs to its end under SIGTERM and SIGINT ----------------------------------

# A real signal sent by the process to itself the moment the rewrite calls ftruncate (a profile
# hook sees the call): before, Terminated came between the write and the truncate.
SIGNAL_AT_TRUNCATE = """
    import os, signal, sys
    from pathlib import Path
    from detlint.child_processes import ended_by_signals, Terminated
    from detlint.fix import inplace
    target, other = Path("big.py"), Path("link.py")
    original, payload = b"A" * 100_000, b"B" * 60_000
    target.write_bytes(original)
    os.link(target, other)

    def at_truncate(frame, event, arg):
        if event == "c_call" and arg is os.ftruncate:
            sys.setprofile(None)
            os.kill(os.getpid(), signal.SIG{name})

    ended = "no"
    try:
        with ended_by_signals():
            sys.setprofile(at_truncate)
            try:
                inplace.rewrite_in_place(target, payload, original)
            finally:
                sys.setprofile(None)
    except (Terminated, KeyboardInterrupt) as exc:
        ended = type(exc).__name__
    data = other.read_bytes()
    print(ended, "payload" if data == payload else "original" if data == original else f"mixed {{len(data)}}")
"""


@pytest.mark.parametrize("name", ["TERM", "INT"])
def test_a_signal_during_an_in_place_rewrite_leaves_a_whole_file(tmp_path: Path, name: str) -> None:
    skip_if_session_ignores(getattr(signal, f"SIG{name}"))
    done = run_python(SIGNAL_AT_TRUNCATE.format(name=name), tmp_path)
    ended = "Terminated" if name == "TERM" else "KeyboardInterrupt"
    assert done.stdout.split() == [ended, "payload"], done.stdout + done.stderr


def test_an_in_place_rewrite_does_not_follow_a_symlink(tmp_path: Path) -> None:
    from detlint.fix import inplace

    outside = tmp_path / "outside.py"
    outside.write_bytes(b"keep\n")
    link = tmp_path / "swapped.py"
    link.symlink_to(outside)
    with pytest.raises(OSError):
        inplace.rewrite_in_place(link, b"written\n", b"keep\n")
    assert outside.read_bytes() == b"keep\n"


# ---- 2. a word of prose in a string no longer keeps an import ------------------------------------------

CLOCK_SEED = "import random\nimport time\nimport torch\nrandom.seed(int(time.time()))\n"


@pytest.mark.parametrize("doc", ['"""Train with a seed taken from the time of day."""\n',
                                 'NOTE = r"the time" + b"time of day".decode()\n',
                                 'print(rb"time flies")\n'],
                         ids=["docstring", "prefixes-and-slices", "bytes-prose"])
def test_an_import_only_prose_names_goes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doc: str) -> None:
    root = project(tmp_path, {"t.py": doc + CLOCK_SEED})
    run_cli(["t.py", *OPTIONS], root, monkeypatch)
    assert (root / "t.py").read_text() == doc + "import random\nimport torch\nrandom.seed(42)\n"


@pytest.mark.parametrize("use", ['exec("print(time)")\n', 'f = getattr(sys.modules[__name__], "time")\n',
                                 'doc = "call time.sleep(1) to wait"\n', "__all__ = ['time.time']\n"],
                         ids=["exec", "getattr", "dotted-in-prose", "dotted-all"])
def test_an_import_a_string_reaches_stays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use: str) -> None:
    root = project(tmp_path, {"t.py": "import sys\n" + CLOCK_SEED + use})
    run_cli(["t.py", *OPTIONS], root, monkeypatch)
    assert (root / "t.py").read_text() == "import sys\n" + CLOCK_SEED.replace("int(time.time())", "42") + use


# ---- 6. a fixed cell's source list is split where the old list was ---------------------------------------

@pytest.mark.parametrize("cell, fixed", [
    # split at Python's breaks (CR alone among them): a form feed and U+2028 stay inside their line
    (["import os\r", "# page\x0cbreak \u2028 here\r", "os.environ['PYTHONHASHSEED'] = '0'\r", "print(os.sep)\r"],
     ["import os\r", "# page\x0cbreak \u2028 here\r", "print(os.sep)\r"]),
    # split as nbformat splits (str.splitlines): the form feed ended a line there, and still does
    (["import os\r", "# page\x0c", "break\r", "os.environ['PYTHONHASHSEED'] = '0'\r", "print(os.sep)\r"],
     ["import os\r", "# page\x0c", "break\r", "print(os.sep)\r"]),
], ids=["python-breaks", "nbformat-breaks"])
def test_a_fixed_cell_keeps_the_old_lists_line_splits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      cell: list[str], fixed: list[str]) -> None:
    root = project(tmp_path, {"nb.ipynb": notebook_raw(cell)})
    run_cli(["nb.ipynb", *OPTIONS], root, monkeypatch)
    assert json.loads((root / "nb.ipynb").read_text(encoding="utf-8"))["cells"][0]["source"] == fixed


# ---- 3. a large cell is written back in time linear in its lines ---------------------------------------

# 200,000 lines, every other one blank, CRLF among LF, changed at the first and the last line (so no
# shared start or end narrows the diff): the quadratic diff this replaced ran far past the timeout.
LARGE_CELL = """
    from detlint.lint.files.cell_lines import join_like
    n = 200_000
    lines = [f"x{i} = {i}" if i % 2 else "" for i in range(n)]
    original = "".join(line + ("\\r\\n" if i % 7 == 3 else "\\n") for i, line in enumerate(lines))
    fixed = ["import random"] + lines[1:-1] + ["random.seed(42)", "y = 1"]
    text = join_like(fixed, original)
    expected = "import random\\n" + original.split("\\n", 1)[1][:-len(lines[-1]) - 1] + "random.seed(42)\\ny = 1\\n"
    print(text == expected, text.count("\\r\\n") == original.count("\\r\\n"))
"""


def test_a_large_cell_is_written_back(tmp_path: Path) -> None:
    done = run_python(LARGE_CELL, tmp_path)
    assert done.stdout.split() == ["True", "True"], done.stdout + done.stderr


# ---- 4. a notebook's JSON is read up to a bound, whatever its code ---------------------------------------

def notebook_with_output(source: list[str], output_bytes: int) -> str:
    notebook = json.loads(notebook_raw(source))
    notebook["cells"][0]["outputs"] = [{"output_type": "display_data", "metadata": {},
                                        "data": {"image/png": "iVBORw0KGgo" + "A" * output_bytes}}]
    return json.dumps(notebook)


def test_a_notebooks_json_past_its_bound_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At a 1 KB limit a notebook's JSON may take 64 KB: 3 lines of code beside a 40 KB output are
    checked, beside a 100 KB output (read whole and parsed before) they are too large."""
    code = FIXABLE.splitlines(keepends=True)
    root = project(tmp_path, {"small.ipynb": notebook_with_output(code, 40_000),
                              "huge.ipynb": notebook_with_output(code, 100_000)})
    _, out = run_cli(["small.ipynb", "huge.ipynb", "--isolated", "--no-cache", "--max-file-size", "1",
                      "--output-format", "json"], root, monkeypatch)
    found = {(Path(d["filename"]).name, d["code"]): d["message"] for d in json.loads(out)}
    assert set(found) == {("small.ipynb", "DET105"), ("huge.ipynb", "DET001")}, found
    assert "too large to check: 97 KB of JSON, over the 64 KB" in found["huge.ipynb", "DET001"], found


def test_a_notebook_beside_a_34_mb_output_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path, {"plot.ipynb": notebook_with_output(FIXABLE.splitlines(keepends=True), 34 << 20)})
    _, out = run_cli(["plot.ipynb", "--isolated", "--no-cache", "--output-format", "json"], root, monkeypatch)
    assert [d["code"] for d in json.loads(out)] == ["DET105"], out


# ---- 5. one walk of the project for all the hard-linked files a run writes -------------------------------

# The project is walked for a hard-linked file's other names; the audit hook counts the listings of
# the folder that holds the other names, in runs fixing one and three hard-linked files: the same
# count (each file's own walk listed it once more).
WALKS = """
    import io, os, sys
    from pathlib import Path
    from detlint import cli
    listed = []
    sys.addaudithook(lambda event, args: listed.append(args[0]) if event == "os.scandir" else None)
    fixable = "import os\\nos.environ['PYTHONHASHSEED'] = '0'\\nprint(os.sep)\\n"
    for linked in (1, 3):
        root = Path(f"proj{{linked}}").resolve()
        (root / "data" / "shards").mkdir(parents=True)
        (root / "pyproject.toml").write_text("")
        names = []
        for k in range(linked):
            (root / f"m{{k}}.py").write_text(fixable)
            os.link(root / f"m{{k}}.py", root / "data" / "shards" / f"m{{k}}_copy.py")
            names.append(f"m{{k}}.py")
        os.chdir(root)
        listed.clear()
        cli.main([*names, {options}], out=io.StringIO())
        copies = [root / "data" / "shards" / f"m{{k}}_copy.py" for k in range(linked)]
        fixed = all(copy.read_text() == "import os\\nprint(os.sep)\\n" for copy in copies)
        print(fixed, sum(1 for path in listed if str(path).endswith("shards")))
        os.chdir("..")
"""


def test_hard_linked_files_share_one_walk_of_the_project(tmp_path: Path) -> None:
    done = run_python(WALKS.format(options=", ".join(repr(option) for option in OPTIONS)), tmp_path)
    fixed_one, listed_one, fixed_three, listed_three = done.stdout.split()
    assert fixed_one == fixed_three == "True" and listed_one == listed_three, done.stdout + done.stderr
