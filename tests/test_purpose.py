"""What a file is for: tests, benchmarks and tools (the default ``not-training`` patterns) and
inference-only programs get no findings of the rules about training runs."""
from __future__ import annotations

import shutil
from pathlib import Path

from conftest import FIXTURES, expectations, make_linter

PROJECT = FIXTURES / "purpose" / "project"


def lint_copy(tmp_path: Path, project: Path = PROJECT,
              **overrides: object) -> tuple[Path, list[tuple[str, int, str]]]:
    """The project copied out of detlint's own tests/ folder (itself a default pattern) and linted."""
    base = tmp_path / "project"
    shutil.copytree(project, base)
    files = sorted(base.rglob("*.py"))
    linter = make_linter("2.21", root=base, **overrides)
    assert linter.settings.project_root == base.resolve()
    diags = linter.run(files).diagnostics
    return base, sorted((Path(d.path).resolve().relative_to(base.resolve()).as_posix(), d.line, d.code)
                        for d in diags)


def test_library_code_only_converters_import_is_not_training(tmp_path: Path) -> None:
    """pkg/generation.py is reached only by tools/convert_weights.py: its XLA is not reported;
    pkg/layers.py is reached by train.py and pkg/api.py by no program: both are."""
    base, found = lint_copy(tmp_path, FIXTURES / "purpose" / "library", **{"not-training": None})
    assert found == expectations(sorted(base.rglob("*.py")), base)
    assert ("pkg/layers.py", 5, "DET301") in found


def test_default_patterns_silence_training_rules_in_tests_benchmarks_and_tools(tmp_path: Path) -> None:
    base, found = lint_copy(tmp_path, **{"not-training": None})
    assert found == expectations(sorted(base.rglob("*.py")), base)


def test_an_empty_setting_checks_every_file_as_training_code(tmp_path: Path) -> None:
    _, found = lint_copy(tmp_path)
    codes = {(path, code) for path, _, code in found}
    assert {("benchmarks/bench_step.py", "DET301"), ("benchmarks/bench_step.py", "DET103"),
            ("tests/test_model.py", "DET402"), ("train.py", "DET104")} <= codes
    # the plotting tool never trains, so what the program does keeps it quiet even then
    assert not any(path == "tools/plot_samples.py" for path, _ in codes)


def test_patterns_match_folders_anywhere_and_file_names() -> None:
    from detlint.settings.config import DEFAULT_NOT_TRAINING, not_training

    assert not_training("pkg/tests/helpers.py", DEFAULT_NOT_TRAINING)
    assert not_training("test_model.py", DEFAULT_NOT_TRAINING)
    assert not_training("src/model_test.py", DEFAULT_NOT_TRAINING)
    assert not_training("benchmarks/run.py", DEFAULT_NOT_TRAINING)
    assert not_training("scripts/convert_checkpoint.py", DEFAULT_NOT_TRAINING)
    assert not not_training("train.py", DEFAULT_NOT_TRAINING)
    assert not not_training("contest/train.py", DEFAULT_NOT_TRAINING)
    assert not_training("tools/plots/show.py", ["tools/plots"])
    assert not not_training("tools/train.py", ["tools/plots"])
