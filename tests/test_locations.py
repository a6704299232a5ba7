"""Where findings point: the offending method name or keyword, and call sites in modules."""
from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, lint_paths, make_linter


def test_chained_shuffle_points_at_the_method_name() -> None:
    path = FIXTURES / "data" / "chained_shuffle_noqa.py"
    (diag,) = lint_paths([path], "2.21")
    line = path.read_text().splitlines()[diag.line - 1]
    assert line[diag.col:].startswith("shuffle(1000)")
    assert (diag.end_line, diag.end_col) == (diag.line, line.index(")") + 1)


def test_multi_line_call_points_at_the_keyword() -> None:
    path = FIXTURES / "data" / "workers_multiline.py"
    (diag,) = lint_paths([path], "2.12")
    line = path.read_text().splitlines()[diag.line - 1]
    assert line[diag.col:diag.end_col] == "workers=4"


def test_fix_still_rewrites_the_call_a_finding_points_inside(tmp_path: Path) -> None:
    from detlint.fix.autofix import fix_text

    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "train.py"
    text = "import tensorflow as tf\nds = (tf.data.Dataset.range(9)\n      .shuffle(3))\nmodel.fit(ds)\n"
    path.write_text(text)
    linter = make_linter("2.21", root=tmp_path)
    result = fix_text(linter, path, text, unsafe=True, extra_sites=[])
    assert ".shuffle(3, seed=" in result.fixed


def test_module_site_names_the_programs() -> None:
    folder = FIXTURES / "programs" / "shuffle_in_module"
    diags = lint_paths(sorted(folder.glob("*.py")), "2.21")
    (in_module,) = [d for d in diags if d.path.endswith("data.py")]
    # evaluate.py only reads batches: the training program is the one named
    assert "shuffle_in_module/train.py) sets no global seed" in in_module.message  # an aside: the full output
    assert "(in " not in in_module.message


def test_module_reached_from_one_program(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "data.py").write_text("import tensorflow as tf\n\ndef load():\n"
                                      "    return tf.data.Dataset.range(9).shuffle(3)\n")
    (tmp_path / "train.py").write_text("import tensorflow as tf\nfrom data import load\n"
                                       "tf.keras.utils.set_random_seed(1)\nds = load()\n")
    (tmp_path / "quick.py").write_text("import tensorflow as tf\nfrom data import load\n"
                                        "ds = load()\nmodel.fit(ds)\n")
    linter = make_linter("2.21", root=tmp_path)
    diags = linter.run([tmp_path / "data.py", tmp_path / "train.py"]).diagnostics
    (diag,) = diags
    assert diag.path.endswith("data.py") and diag.line == 4
    assert "the program (quick.py) sets no global seed" in diag.message
    # the same module in a project whose only program seeds first: nothing to report
    (tmp_path / "quick.py").unlink()
    assert make_linter("2.21", root=tmp_path).run([tmp_path / "data.py"]).diagnostics == []


# ---- positions.py gives every node the range libcst's PositionProvider gives ------------------------

ODD_LAYOUT = ("x = (1 +\r\n     2)\r\nif x:\r\n\tprint('\\r', x)  # tabs, CRLF\r\n"
              "y = '''a\rb'''\rz = [\n    1,\n]\n\n\n")


def _provider_spans(module: object) -> dict:
    from libcst.metadata import MetadataWrapper, PositionProvider

    found = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)  # type: ignore[arg-type]
    return {node: (r.start.line, r.start.column, r.end.line, r.end.column) for node, r in found.items()}


def test_positions_equal_libcsts_on_every_node_of_the_fixtures_and_detlints_sources() -> None:
    import libcst as cst

    from detlint.lint.positions import positions

    root = Path(__file__).resolve().parent.parent
    paths = sorted(FIXTURES.rglob("*.py")) + sorted((root / "detlint").rglob("*.py"))
    texts = [(str(p), p.read_text(encoding="utf-8")) for p in paths] + [("odd layout", ODD_LAYOUT), ("empty", "")]
    compared = 0
    for name, text in texts:
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue  # fixtures of unparsable files
        expected = _provider_spans(module)
        got = positions(module)
        assert got == expected, name
        compared += len(expected)
    assert len(texts) > 300 and compared > 100_000
