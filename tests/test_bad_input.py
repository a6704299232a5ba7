"""Bad input gets DET001 with the reason, the run goes on, and nobody sees a traceback."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import make_linter

GOOD = "import os\nos.environ['PYTHONHASHSEED'] = '0'\n"


def lint(tmp_path: Path, files: list[Path]):
    linter = make_linter("2.21", root=tmp_path)
    return linter.run(files).diagnostics


def codes(diags) -> list[tuple[str, str]]:
    return [(Path(d.path).name, d.code) for d in diags]


def test_syntax_error_is_reported_and_run_continues(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def train(:\n    pass\n")
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    diags = lint(tmp_path, [bad, good])
    assert codes(diags) == [("bad.py", "DET001"), ("good.py", "DET105")]
    assert "syntax error" in diags[0].message and diags[0].line == 1


@pytest.mark.parametrize("content, reason", [
    (b"x = '\xff\xfe'\n", "cannot decode as utf-8"),
    (b"x = 1\x00\n", "NUL bytes"),
    (b"# -*- coding: klingon -*-\nx = 1\n", "bad encoding declaration"),
])
def test_unreadable_bytes(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "f.py"
    path.write_bytes(content)
    (diag,) = lint(tmp_path, [path])
    assert diag.code == "DET001" and reason in diag.message


def test_declared_encoding_and_bom_are_honoured(tmp_path: Path) -> None:
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\nimport os\nname = '\xe9'\nos.environ['PYTHONHASHSEED'] = '0'\n")
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert codes(lint(tmp_path, [latin, bom])) == [("bom.py", "DET105"), ("latin.py", "DET105")]


def test_empty_file_is_valid(tmp_path: Path) -> None:
    empty = tmp_path / "empty.py"
    empty.write_text("")
    assert lint(tmp_path, [empty]) == []


def test_symlink_loop_and_vanished_file(tmp_path: Path) -> None:
    loop = tmp_path / "loop.py"
    os.symlink(loop, loop)
    gone = tmp_path / "gone.py"
    gone.write_text(GOOD)
    linter = make_linter("2.21", root=tmp_path)
    gone.unlink()  # removed after discovery, before it is read
    diags = linter.run([loop, gone]).diagnostics
    assert [d.code for d in diags] == ["DET001", "DET001"]
    assert "symlink loop" in diags[1].message or "symlink loop" in diags[0].message
    assert any("removed during the run" in d.message for d in diags)


def test_crash_in_a_rule_is_an_internal_error_not_silence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.py"
    path.write_text(GOOD)
    linter = make_linter("2.21", root=tmp_path)

    def boom(*args, **kwargs):
        raise ValueError("rule exploded")

    monkeypatch.setattr(linter.evaluator, "file_diagnostics", boom)
    (diag,) = linter.run([path]).diagnostics
    assert diag.code == "DET000" and "rule exploded" in diag.message


PY36 = ("import random\nimport torch\n\nclass Net(torch.nn.Module):\n    def async(self):\n        return 1\n\n"
        "torch.backends.cudnn.benchmark = True\nmodel = torch.nn.Conv2d(3, 8, 3).cuda()\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x, y in batches:\n"
        "    x = x.cuda(async=True)\n    optimizer.zero_grad()\n    model(x).sum().backward()\n    optimizer.step()\n")


def test_python36_names_are_read_as_python36_read_them(tmp_path: Path) -> None:
    """`async`/`await` as names (reserved from Python 3.7): DET001 at the first, with the rest of
    the file checked (the seed and cuDNN findings of a PyTorch 0.4 script are still found)."""
    path = tmp_path / "train.py"
    path.write_text(PY36)
    linter = make_linter("2.21", root=tmp_path, **{"torch-version": "1.0"})
    diags = linter.run([path]).diagnostics
    found = {(d.code, d.line) for d in diags}
    assert ("DET001", 5) in found and ("DET604", 8) in found and ("DET601", 9) in found, found
    det001 = next(d for d in diags if d.code == "DET001")
    assert det001.col == 8 and "`async` is a reserved word" in det001.message and "checked" in det001.message


def test_python36_names_are_not_rewritten_by_fix(tmp_path: Path) -> None:
    """--fix never writes the stand-in names: the file is left as it was, with a message."""
    from detlint.fix import autofix

    path = tmp_path / "train.py"
    path.write_text(PY36)
    linter = make_linter("2.21", root=tmp_path, **{"torch-version": "1.0"})
    results = autofix.fix_files(linter, [path], unsafe=True, write=True)
    assert path.read_text() == PY36
    assert not any(r.changed or r.error for r in results), results  # nothing offered, nothing attempted
    assert all(d.fix_spec is None and d.fix_safety in (None, "display") for d in linter.run([path]).diagnostics)


def test_python3_syntax_errors_get_no_stand_in(tmp_path: Path) -> None:
    """A file that no Python reads (async as a name and a broken line) stays one DET001."""
    path = tmp_path / "bad.py"
    path.write_text("x.cuda(async=True)\ndef f(:\n    pass\n")
    (diag,) = lint(tmp_path, [path])
    assert diag.code == "DET001" and "syntax error" in diag.message
