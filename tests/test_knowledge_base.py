"""The knowledge base: schema checks, examples run as tests per version range, docs kept current."""
from __future__ import annotations

import re

import shutil
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, make_linter
from detlint.knowledge import kb as kb_module
from detlint.knowledge.docs import rules_page
from detlint.knowledge.frameworks import FRAMEWORKS, framework
from detlint.knowledge.versions import Version, known_versions

KB = kb_module.load()
# One version per range boundary the knowledge base uses, so each message and fix variant runs
# (every release, for the frameworks with fewer rules).
VERSIONS = {"tensorflow": ["1.13", "1.15", "2.0", "2.1", "2.4", "2.5", "2.6", "2.7", "2.8", "2.10", "2.12", "2.15",
                           "2.16", "2.21"],
            **{key: [str(v) for v in known_versions(key)] for key in FRAMEWORKS if key != "tensorflow"}}


def example_cases():
    for rule in KB.rules.values():
        for kind in ("invalid", "valid"):
            for i, example in enumerate(rule.examples[kind]):
                yield pytest.param(rule.code, kind, example, id=f"{rule.code}-{kind}-{i}")


def lint_snippet(tmp_path: Path, code: str, version: str, rule: str = ""):
    """Lint a rule's example with that rule selected (opt-in rules included), at ``version`` of
    the rule's framework."""
    path = tmp_path / "example.py"
    path.write_text(textwrap.dedent(code))
    key = KB.rules[rule].framework if rule else "tensorflow"
    versions = {"tensorflow-version": version if key == "tensorflow" else "2.21"}
    if key != "tensorflow":
        versions[framework(key).setting] = version
    return make_linter(versions["tensorflow-version"], root=tmp_path, **versions,
                       **{"extend-select": [rule] if rule else None}).run([path]).diagnostics


def example_version(code: str, example: dict) -> str:
    """The version an example is written for (``tf-version``, ``torch-version``), else the newest."""
    key = KB.rules[code].framework
    short = "tf" if key == "tensorflow" else key
    return str(example.get(f"{short}-version", framework(key).releases[-1]))


@pytest.mark.parametrize("code, kind, example", list(example_cases()))
def test_rule_examples(tmp_path: Path, code: str, kind: str, example: dict) -> None:
    version = example_version(code, example)
    title = framework(KB.rules[code].framework).title
    found = [d.code for d in lint_snippet(tmp_path, example["code"], version, code)]
    if kind == "invalid":
        assert code in found, f"{code} invalid example not flagged on {title} {version}"
    else:
        assert code not in found, f"{code} valid example flagged on {title} {version}"


@pytest.mark.parametrize("code", [c for c, r in KB.rules.items() if r.fixes])
def test_every_version_gets_a_message_and_fix_for_that_version(tmp_path: Path, code: str) -> None:
    """Invalid examples run at every boundary version: the message names the version's fix."""
    rule = KB.rules[code]
    example = rule.examples["invalid"][0]
    for version in VERSIONS[rule.framework]:
        fix = rule.fix_for(Version.parse(version))
        diags = [d for d in lint_snippet(tmp_path, example["code"], version, code) if d.code == code]
        if fix is None or not diags:
            continue
        for diag in diags:
            assert "{" not in diag.message and "}" not in diag.message, diag.message
            assert diag.fix_title and "{" not in diag.fix_title, (version, diag.fix_title)
            assert diag.fix_safety == (diag.fix_spec or {}).get("safety", diag.fix_safety)


def test_rule_entries_are_complete() -> None:
    for rule in KB.rules.values():
        for section in ("what", "why", "example", "use-instead", "fix-safety", "options", "references"):
            assert section in rule.doc, f"{rule.code} lacks doc section {section}"
        for ref in rule.doc["references"]:
            url = ref.get("url", "")
            assert url.startswith("https://") or (ROOT / url).is_file(), (rule.code, url)


def test_docs_page_is_current() -> None:
    page = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert page == rules_page(KB), "docs/rules.md drifted: run `detlint rule --all --markdown > docs/rules.md`"
    outside_code = "\n".join(line for line in page.splitlines() if not line.startswith((" ", "`")))
    assert not re.findall(r"\{(?:seed|version|api|os|fix|where|detail)\}", outside_code), "a placeholder left unfilled"


@pytest.mark.parametrize("mutation, message", [
    (("code: DET105", "code: DETX105"), "rule DETX105.code: expected DETnnn"),
    (("name: hashseed-in-process", "name: Hashseed In Process"), "rule DET105.name: expected a kebab-case name"),
    (("      - env: [PYTHONHASHSEED]", "      - env: [PYTHONHASHSEED]\n        bogus: 1"), "rule DET105.match[0]: unknown field(s) ['bogus']"),
    (("program: {uses: numpy-random-consumers", "program: {uses: no-such-group"), "rule DET103.program[0].uses: unknown group 'no-such-group'"),
    (("      - env: [PYTHONHASHSEED]", "      - env: [PYTHONHASHSEED]\n        fetches: [minimize]"),
     "rule DET105.match[0].fetches: fetches applies to method matchers only"),
])
def test_malformed_entries_name_file_entry_and_field(tmp_path: Path, mutation: tuple[str, str], message: str) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    text = (rules / "tensorflow" / "seeds.yaml").read_text()
    assert mutation[0] in text
    (rules / "tensorflow" / "seeds.yaml").write_text(text.replace(mutation[0], mutation[1], 1))
    with pytest.raises(kb_module.KnowledgeBaseError) as info:
        kb_module._load_cached(str(rules))
    assert f"seeds.yaml: {message}" in str(info.value)


def test_readme_lists_every_rule() -> None:
    """The rules table, moved from the README to docs/knowledge-base.md, names every rule."""
    page = (ROOT / "docs" / "knowledge-base.md").read_text(encoding="utf-8")
    for rule in KB.rules.values():
        assert f"| {rule.code} | {rule.name} |" in page, f"docs/knowledge-base.md rule table lacks {rule.code}"


def _group_calls(group: str) -> set[str]:
    return {name for matcher in KB.groups[group].matchers if matcher.kind == "call" for name in matcher.names}


def test_every_numpy_global_draw_is_a_numpy_consumer() -> None:
    """Each module-level function of numpy.random that draws from the global RandomState."""
    import numpy as np

    bookkeeping = {"seed", "get_state", "set_state", "get_bit_generator", "set_bit_generator"}
    drawing = {name for name in dir(np.random.RandomState) if not name.startswith("_") and name not in bookkeeping
               and callable(getattr(np.random, name, None))}
    assert {"lognormal", "multivariate_normal", "bytes", "zipf"} <= drawing  # the listing is what it seems
    missing = {f"numpy.random.{name}" for name in drawing} - _group_calls("numpy-random-consumers")
    assert not missing, sorted(missing)


def test_every_python_random_draw_is_a_python_consumer() -> None:
    """Each module-level function of random that draws from the global generator (binomialvariate,
    Python >= 3.12, is left out: the knowledge base's names must exist on every Python it runs on)."""
    import random

    bookkeeping = {"seed", "getstate", "setstate", "binomialvariate"}
    drawing = {name for name in dir(random.Random) if not name.startswith("_") and name not in bookkeeping
               and callable(getattr(random, name, None))}
    assert {"gauss", "weibullvariate", "randbytes"} <= drawing
    missing = {f"random.{name}" for name in drawing} - _group_calls("python-random-consumers")
    assert not missing, sorted(missing)


def test_no_specific_spelling_hides_another_owners_entry() -> None:
    """Lookups stop at the most specific spelling the knowledge base knows (tf.compat.v1.x before
    tf.x): an owner listing only the specific one would hide every other owner's entry for x."""
    from detlint.lint.names import candidates

    for kind, by_name in KB.index.items():
        for name, entries in by_name.items():
            owners = {owner for owner, _ in entries}
            for general in candidates(name)[1:]:
                hidden = {owner for owner, _ in by_name.get(general, ())} - owners
                assert not hidden, f"{kind} {name} hides {sorted(hidden)} of {general}"


@pytest.mark.parametrize("version, names, not_first", [
    ("2.0", "Conv2DTranspose", "use bilinear"),  # bilinear backprop is no better before 2.4
    ("2.5", "use bilinear interpolation (deterministic from TF 2.4", ""),
    ("2.15", "use bilinear interpolation", ""),
])
def test_op_workaround_fits_the_version(tmp_path: Path, version: str, names: str, not_first: str) -> None:
    code = """\
        import tensorflow as tf
        model = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3), tf.keras.layers.UpSampling2D()])
        model.fit(x, y)
        """
    (diag,) = [d for d in lint_snippet(tmp_path, code, version) if d.code == "DET202"]
    advice = diag.message.split("; ", 1)[1]
    assert names in advice, diag.message
    assert not not_first or not advice.startswith(not_first), diag.message


def test_undone_by_names_a_rule(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    text = (rules / "tensorflow" / "groups.yaml").read_text()
    assert text.count("undone-by: DET106") == 2
    (rules / "tensorflow" / "groups.yaml").write_text(text.replace("undone-by: DET106", "undone-by: DET999", 1))
    with pytest.raises(kb_module.KnowledgeBaseError, match="numpy-seeders.undone-by: unknown rule 'DET999'"):
        kb_module._load_cached(str(rules))
