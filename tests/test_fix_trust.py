"""--fix and the fix edits of JSON/SARIF on hostile ground: a full disk, hard links that leave the
project, deep expressions, strings that still use an import, CR line endings, and notebooks whose
JSON must stay byte for byte what it was outside the sources a fix edits."""
from __future__ import annotations

import errno
import io
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from detlint import cli
from detlint.fix import inplace
from detlint.lint.files.notebook import Notebook, NotebookError

FIXABLE = "import os\nos.environ['PYTHONHASHSEED'] = '0'\nprint(os.sep)\n"
FIXED = "import os\nprint(os.sep)\n"
# an unsafe fix that makes the file longer: the seed goes in after the imports
GROWS = ("import tensorflow as tf\n"
         "model = tf.keras.Sequential([tf.keras.layers.Dropout(0.5), tf.keras.layers.Dense(1)])\n"
         "model.compile('sgd', 'mse')\nmodel.fit(x, y)\n")
OPTIONS = ["--isolated", "--no-cache", "--tf-version", "2.21", "--fix", "--unsafe-fixes"]


def run_cli(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.chdir(cwd)
    out = io.StringIO()
    code = cli.main(args, out=out)
    return code, out.getvalue()


def project(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    root = tmp_path / "proj"
    root.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text("")
    for name, content in files.items():
        path = root / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def page_sized(text: str, size: int = 8192) -> bytes:
    """``text`` padded with a comment to exactly ``size`` bytes: any growth needs a new page."""
    pad = size - len(text.encode()) - len("#\n")
    return (text + "#" + "x" * pad + "\n").encode()


# ---- a hard-linked file is rewritten in place: never cut short when the disk fills -------------------

@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MB tmpfs (root only); skipped where it cannot be mounted."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def fill(folder: Path) -> None:
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_hard_linked_file_on_a_full_disk_is_left_whole(small_disk: Path, tmp_path: Path) -> None:
    original = page_sized(GROWS)
    root = project(small_disk, {"hl.py": original})
    os.link(root / "hl.py", root / "other.py")
    fill(small_disk)
    # in a process of its own: no parser worker outlives it to keep the mount busy
    proc = subprocess.run([sys.executable, "-m", "detlint", "hl.py", *OPTIONS], cwd=root, capture_output=True,
                          text=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert (root / "hl.py").read_bytes() == original
    assert "hl.py: not written (No space left on device)" in proc.stderr, proc.stderr
    assert proc.returncode == 1 and "0 fixed, 1 remaining" in proc.stdout


def test_a_hard_linked_file_past_the_size_limit_is_left_whole(tmp_path: Path) -> None:
    """A real failing write without root: RLIMIT_FSIZE makes the kernel refuse to grow the file
    (EFBIG), as a full disk would refuse with ENOSPC."""
    original = page_sized(GROWS)
    root = project(tmp_path, {"hl.py": original})
    os.link(root / "hl.py", root / "other.py")
    limit = len(original)

    def cap_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run([sys.executable, "-m", "detlint", "hl.py", *OPTIONS], cwd=root, capture_output=True,
                          text=True, preexec_fn=cap_file_size, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert (root / "hl.py").read_bytes() == original
    assert "hl.py: not written (File too large)" in proc.stderr, proc.stderr
    assert proc.returncode == 1


def failing_after(real, allowed: int, calls: list[int]):  # type: ignore[no-untyped-def]
    """``os.pwrite`` that, writing a file's content from its start the first time, really writes
    ``allowed`` bytes and then fails with ENOSPC, as a disk filling midway would."""
    def pwrite(fd: int, data: bytes, offset: int) -> int:
        if offset == 0 and not calls:
            calls.append(len(data))
            real(fd, data[:allowed], offset)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data, offset)
    return pwrite


@pytest.mark.parametrize("grows", [True, False], ids=["longer", "shorter"])
def test_a_write_that_fails_midway_restores_the_original_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               grows: bool) -> None:
    original = page_sized(GROWS if grows else FIXABLE)
    path = tmp_path / "hl.py"
    path.write_bytes(original)
    os.link(path, tmp_path / "other.py")
    calls: list[int] = []
    monkeypatch.setattr(inplace.os, "pwrite", failing_after(os.pwrite, 100, calls))
    payload = b"x = 1\n" * (2000 if grows else 10)
    with pytest.raises(OSError) as caught:
        inplace.rewrite_in_place(path, payload, original)
    assert caught.value.errno == errno.ENOSPC
    assert calls == [len(payload)]  # the new content was being written when the disk filled
    assert path.read_bytes() == original and (tmp_path / "other.py").read_bytes() == original


def test_no_room_to_grow_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = page_sized(GROWS)
    path = tmp_path / "hl.py"
    path.write_bytes(original)
    os.link(path, tmp_path / "other.py")

    def no_space(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(inplace.os, "posix_fallocate", no_space)
    with pytest.raises(OSError):
        inplace.rewrite_in_place(path, original + b"x = 1\n", original)
    assert path.read_bytes() == original


# ---- a hard link to a file outside the project is treated as a symlink leaving it is -------------------

def test_a_file_hard_linked_from_outside_the_project_is_not_rewritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    outside = tmp_path / "outside" / "shared.py"
    outside.parent.mkdir()
    outside.write_text(FIXABLE)
    root = project(tmp_path, {"own.py": FIXABLE})
    os.link(outside, root / "linked.py")
    (root / "sub").mkdir()
    os.link(root / "own.py", root / "sub" / "own_too.py")  # both names inside: rewritten, as before
    code, out = run_cli(["linked.py", "own.py", *OPTIONS], root, monkeypatch)
    err = capsys.readouterr().err
    assert "linked.py: not written: hard-linked to a file outside the project" in err, err
    assert outside.read_text() == FIXABLE and (root / "linked.py").read_text() == FIXABLE
    assert (root / "own.py").read_text() == FIXED == (root / "sub" / "own_too.py").read_text()
    assert (root / "own.py").stat().st_ino == (root / "sub" / "own_too.py").stat().st_ino
    assert code == 1 and "1 fixed, 1 remaining" in out


# ---- deep expressions: the fixer's libcst walks run on the deep stack ----------------------------------

LONG_SUM = FIXABLE + "total = " + " + ".join(["1"] * 400) + "\n"


@pytest.mark.parametrize("output_format", ["json", "sarif"])
def test_a_long_expression_keeps_json_and_sarif_with_their_fixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 output_format: str) -> None:
    root = project(tmp_path, {"long.py": LONG_SUM})
    code, out = run_cli(["long.py", "--isolated", "--no-cache", "--output-format", output_format], root, monkeypatch)
    assert code == 1, out
    report = json.loads(out)
    if output_format == "json":
        (finding,) = report
        assert finding["code"] == "DET105" and finding["fix"]["edits"], finding
    else:
        (result,) = report["runs"][0]["results"]
        assert result["ruleId"] == "DET105" and result["fixes"], result


def test_a_long_expression_is_fixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path, {"long.py": LONG_SUM})
    code, out = run_cli(["long.py", *OPTIONS], root, monkeypatch)
    assert (root / "long.py").read_text() == LONG_SUM.replace("os.environ['PYTHONHASHSEED'] = '0'\n", "")
    assert code == 0 and "1 fixed, 0 remaining" in out


# ---- an import still named by __all__ or a string stays -------------------------------------------------

CLOCK_SEED = "import random\nimport time\nimport torch\nrandom.seed(int(time.time()))\n"


@pytest.mark.parametrize("use", ['__all__ = ["time"]\n', 'print(eval("time.time()"))\n',
                                 'started = f"{torch.__version__} time"\n'],
                         ids=["__all__", "eval", "f-string"])
def test_an_import_a_string_still_names_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use: str) -> None:
    root = project(tmp_path, {"t.py": CLOCK_SEED + use})
    run_cli(["t.py", *OPTIONS], root, monkeypatch)
    assert (root / "t.py").read_text() == CLOCK_SEED.replace("int(time.time())", "42") + use


def test_an_import_nothing_names_any_more_still_goes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path, {"t.py": CLOCK_SEED + 'print("times")\n'})
    run_cli(["t.py", *OPTIONS], root, monkeypatch)
    assert (root / "t.py").read_text() == 'import random\nimport torch\nrandom.seed(42)\nprint("times")\n'


# ---- CR-only files keep their last line break ---------------------------------------------------------

def test_a_cr_only_file_keeps_its_final_cr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path, {"cr.py": FIXABLE.replace("\n", "\r").encode(),
                              "grows.py": GROWS.replace("\n", "\r").encode()})
    run_cli(["cr.py", "grows.py", *OPTIONS], root, monkeypatch)
    assert (root / "cr.py").read_bytes() == FIXED.replace("\n", "\r").encode()
    grown = (root / "grows.py").read_bytes()
    assert b"set_random_seed(42)" in grown and b"\n" not in grown and grown.endswith(b"\r")


# ---- notebooks: only the sources a fix edits change, lines take the cell's line breaks -------------------

def notebook_raw(source: list[str], head: str = "", tail: str = "") -> str:
    """A notebook's JSON written by hand (indent 1), so a test can say what every byte becomes."""
    lines = ",\n".join("    " + json.dumps(line) for line in source)
    return ('{\n "cells": [\n  {\n   "cell_type": "code",\n   "execution_count": null,\n   "metadata": {},\n'
            f'   "outputs": [],\n   "source": [\n{lines}\n   ]\n  }}\n ],\n "metadata": {{{head}}},\n'
            f' "nbformat": 4,\n "nbformat_minor": 5{tail}\n}}\n')


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_lines_inserted_into_a_cell_take_its_line_endings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          newline: str) -> None:
    cell = [line.replace("\n", newline) for line in GROWS.splitlines(keepends=True)]
    root = project(tmp_path, {"nb.ipynb": notebook_raw(cell)})
    run_cli(["nb.ipynb", *OPTIONS], root, monkeypatch)
    text = "".join(json.loads((root / "nb.ipynb").read_text())["cells"][0]["source"])
    assert "set_random_seed(42)" in text and text.endswith(newline)
    other = text.replace("\r\n", "") if newline == "\r\n" else text.replace("\r", "")
    assert "\r" not in other and "\n" not in other, repr(text)  # every line ends as the cell's lines do
    assert all(line in text for line in cell)


def test_a_notebook_changes_only_in_the_sources_a_fix_edits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Duplicate keys, numbers JSON keeps as written (1e400, 1.10) and escapes stay byte for byte."""
    head = '"a": 1, "a": 2, "big": 1e400, "ratio": 1.10, "path": "a\\/b", "name": "caf\\u00e9"'
    tail = ',\n "extra": [1.0E+2, -0.0]'
    before = notebook_raw(FIXABLE.splitlines(keepends=True), head, tail)
    root = project(tmp_path, {"nb.ipynb": before})
    code, out = run_cli(["nb.ipynb", *OPTIONS], root, monkeypatch)
    assert "1 fixed" in out
    assert (root / "nb.ipynb").read_text() == notebook_raw(FIXED.splitlines(keepends=True), head, tail)


def test_a_notebook_with_a_lone_surrogate_is_fixed_and_so_are_later_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a lone surrogate (\ud800 in the JSON) in a markdown cell, beside text that is not ASCII
    markdown = '  {\n   "cell_type": "markdown",\n   "metadata": {},\n   "source": ["bad \\ud800 caf\u00e9\\n"]\n  },\n'
    before = notebook_raw(FIXABLE.splitlines(keepends=True)).replace(' "cells": [\n', ' "cells": [\n' + markdown)
    root = project(tmp_path, {"a.ipynb": before, "z.py": FIXABLE})
    code, out = run_cli(["a.ipynb", "z.py", *OPTIONS], root, monkeypatch)
    assert (root / "a.ipynb").read_text(encoding="utf-8") == notebook_raw(FIXED.splitlines(keepends=True)).replace(
        ' "cells": [\n', ' "cells": [\n' + markdown)
    assert (root / "z.py").read_text() == FIXED
    assert code == 0 and "2 fixed, 0 remaining" in out


def test_a_fix_for_a_cell_without_a_source_key_is_refused_not_guessed() -> None:
    """Text a fix puts before the first cell goes into the first code cell; one with no "source"
    key has nowhere to splice it: an error (--fix reports the notebook as not written), not a guess."""
    raw = notebook_raw(FIXABLE.splitlines(keepends=True)).replace(
        ' "cells": [\n', ' "cells": [\n  {"cell_type": "code", "metadata": {}, "outputs": []},\n')
    notebook = Notebook.parse(raw)
    with pytest.raises(NotebookError, match="cell 1 has no source to write the fix into"):
        notebook.with_source("import random\n" + notebook.source)
    assert notebook.with_source(notebook.source) == raw  # nothing changed: nothing to splice


# ---- the notebook size limit is a limit on its code ------------------------------------------------------

def test_a_notebook_size_counts_its_code_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One KB of code allowed: 200 tiny cells (800 bytes of code, far more with detlint's cell
    markers) and 3 lines beside a 40 KB image output are checked; 2 KB of code is too large."""
    many = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                       "source": ["x=1\n"]} for _ in range(200)], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    image = json.loads(notebook_raw(FIXABLE.splitlines(keepends=True)))
    image["cells"][0]["outputs"] = [{"output_type": "display_data", "metadata": {},
                                     "data": {"image/png": "iVBORw0KGgo" + "A" * 40_000}}]
    big = json.loads(notebook_raw(["x = 1\n"] * 400))
    root = project(tmp_path, {"many.ipynb": json.dumps(many), "image.ipynb": json.dumps(image),
                              "big.ipynb": json.dumps(big)})
    code, out = run_cli(["many.ipynb", "image.ipynb", "big.ipynb", "--isolated", "--no-cache", "--max-file-size", "1",
                         "--output-format", "json"], root, monkeypatch)
    found = {(Path(d["filename"]).name, d["code"]): d["message"] for d in json.loads(out)}
    assert set(found) == {("image.ipynb", "DET105"), ("big.ipynb", "DET001")}, found
    assert "too large to check: 2 KB" in found["big.ipynb", "DET001"], found
