"""Every fixture file's inline ``# expect:`` comments are exactly what detlint reports."""
from __future__ import annotations

from pathlib import Path

import pytest

from detlint.knowledge.kb import load
from conftest import EXPECT_POSSIBLE_RE, FIXTURES, ROOT, expectations, fixture_overrides, fixture_units, fixture_version, lint_paths

UNITS = fixture_units()
OPT_IN = {rule.code for rule in load().rules.values() if not rule.default_enabled}


@pytest.mark.parametrize("unit", UNITS, ids=[u[0] for u in UNITS])
def test_fixture_expectations(unit: tuple[str, Path, list[Path]]) -> None:
    _, base, files = unit
    version = fixture_version(files)
    expected = expectations(files, FIXTURES)
    # an opt-in rule is checked in the fixtures that expect it (they hold its negatives too)
    opt_in = sorted({code for _, _, code in expected} & OPT_IN)
    possible = expectations(files, FIXTURES, EXPECT_POSSIBLE_RE)
    diags = lint_paths(files, version, **fixture_overrides(files), **({"extend-select": opt_in} if opt_in else {}),
                       **{"min-confidence": "possible"})
    # what the default (--min-confidence likely) shows, and what only "possible" adds
    shown = sorted((Path(d.path).resolve().relative_to(FIXTURES).as_posix(), d.line, d.code)
                   for d in diags if d.confidence != "possible")
    only_possible = sorted((Path(d.path).resolve().relative_to(FIXTURES).as_posix(), d.line, d.code)
                           for d in diags if d.confidence == "possible")
    text = "\n".join(f"{d.path}:{d.line}:{d.col + 1}: {d.code} [{d.confidence}] {d.message}" for d in diags)
    assert shown == expected, text
    assert only_possible == possible, text


def test_fixtures_cover_every_issue2_rule() -> None:
    codes = {code for _, base, files in UNITS for _, _, code in expectations(files, FIXTURES)}
    for code in ("DET101", "DET103", "DET104", "DET105", "DET201", "DET203", "DET301", "DET401", "DET402",
                 "DET501", "DET601", "DET602", "DET603", "DET604", "DET605", "DET606", "DET607", "DET608",
                 "DET609", "DET610", "DET701", "DET702", "DET703", "DET704", "DET705"):
        assert code in codes, f"no positive fixture for {code}"


def test_messages_name_the_module_that_holds_the_op() -> None:
    files = sorted((FIXTURES / "programs" / "seed_elsewhere").rglob("*.py"))
    diags = lint_paths(files, "2.21")
    (det201,) = [d for d in diags if d.code == "DET201"]
    assert "(in tests/fixtures/programs/seed_elsewhere/models/net.py:6)" in det201.message
    assert "enable_op_determinism()" in det201.message
    assert Path(det201.path).name == "train.py"
    assert ROOT.exists()


def test_keras3_seed_message_names_the_tf_seed_it_means() -> None:
    files = sorted((FIXTURES / "programs" / "keras3_seed_helper").rglob("*.py"))
    (det102,) = [d for d in lint_paths(files, "2.21") if d.code == "DET102"]
    assert det102.message.startswith(
        "tf.random.set_seed (in tests/fixtures/programs/keras3_seed_helper/seeding.py:5) seeds only TensorFlow")


def test_a_flag_default_is_named_with_the_value_to_pass() -> None:
    (det301,) = lint_paths([FIXTURES / "values" / "flags_xla_default_true.py"], "2.21")
    assert "jit_compile=FLAGS.use_xla [--use_xla defaults to True; run with --use_xla=False]" in det301.message


def test_an_unknown_value_is_reported_with_the_value_that_makes_it_a_problem() -> None:
    diags = lint_paths([FIXTURES / "values" / "is_training_unknown.py"], "2.21")
    messages = sorted(d.message for d in diags)
    assert "sloppy=is_training [when is_training is True]" in messages[1]
    assert "deterministic=keep_order [when keep_order is False]" in messages[0]


def test_a_seed_on_another_graph_is_named_and_no_seed_is_inserted_at_the_top() -> None:
    files = [FIXTURES / "programs" / "graph_block_seed" / "seeded_outside.py"]
    (det101,) = [d for d in lint_paths(files, "1.15") if d.code == "DET101"]
    assert "in the graph made the default at tests/fixtures/programs/graph_block_seed/seeded_outside.py:11" \
        in det101.message
    assert "the seed at tests/fixtures/programs/graph_block_seed/seeded_outside.py:6 is set on another graph" \
        in det101.message
    assert "as the first statement inside that block" in det101.message
    assert det101.fix_spec is None  # a seed right after the imports would seed the wrong graph


def test_a_model_the_option_default_does_not_name_is_only_possible() -> None:
    files = sorted((FIXTURES / "programs" / "model_by_option").rglob("*.py"))
    (det603,) = lint_paths(files, fixture_version(files), **fixture_overrides(files), **{"min-confidence": "possible"})
    assert det603.confidence == "possible"
    assert det603.unsure == "only on a branch a run with the defaults does not take (train.py:17)"
