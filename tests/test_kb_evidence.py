"""Every version-dependent fact of the knowledge base names its source and a check that
benchmarks/verify_kb.py runs against the frameworks' wheels; docs/kb-evidence.md is that tool's
report for the facts as they are now. The checker itself is tested here on small wheels made in
tmp_path (the real run downloads gigabytes and is not part of the suite)."""
from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

from detlint.knowledge.provenance import Fact, digest, facts

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from kb_verify import probes as kbp  # noqa: E402
from kb_verify.report import DIGEST_LINE  # noqa: E402
from kb_verify.wheels import Package  # noqa: E402


def test_every_version_dependent_fact_has_a_source_and_a_runnable_check():
    """Facts still without a check are listed in benchmarks/kb_verify/pending.txt: the list may
    only shrink (a fact given a check leaves it; a new fact needs one)."""
    known = kbp.load()
    pending = {line.strip() for line in kbp.PENDING_FILE.read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.startswith("#")}
    unchecked = {f.ident for f in facts() if not f.check and not f.source}
    assert unchecked == pending, (f"without a check but not pending: {sorted(unchecked - pending)}; "
                                  f"pending but checked or gone (remove them): {sorted(pending - unchecked)}")
    problems = [f"{f.ident}: {p}" for f in facts() if f.ident not in pending for p in kbp.validate(f, known)]
    assert not problems, "\n".join(problems)


def test_gpu_only_claims_name_their_report_or_say_pending():
    """A claim the wheels cannot settle names the committed GPU report it rests on, or stays
    `gpu-evidence: pending` until tests/gpu has run on a GPU."""
    marked = [f for f in facts() if f.gpu_evidence is not None]
    assert any(f.gpu_evidence == "pending" for f in marked) and any(f.gpu_evidence != "pending" for f in marked)
    bad = [f"{f.ident}: {f.gpu_evidence}" for f in marked
           if f.gpu_evidence != "pending" and not (ROOT / str(f.gpu_evidence)).is_file()]
    assert not bad, bad
    report = (ROOT / "docs" / "kb-evidence.md").read_text(encoding="utf-8")
    assert "GPU evidence: pending" in report


def test_facts_cover_op_statuses_fixes_matchers_and_eras():
    found = {f.where.split("[")[0].split(".")[0] for f in facts()}
    wheres = [f.where for f in facts()]
    assert {"ops", "rules", "groups", "eras"} <= found
    assert any(".status[" in w for w in wheres) and any(".fixes[" in w for w in wheres)
    assert not any(".check" in w or ".source" in w for w in wheres)


def test_the_evidence_report_is_current_for_the_knowledge_base():
    report = (ROOT / "docs" / "kb-evidence.md").read_text(encoding="utf-8")
    recorded = next(line[len(DIGEST_LINE):].strip() for line in report.splitlines() if line.startswith(DIGEST_LINE))
    assert recorded == digest(facts()), ("docs/kb-evidence.md was made for other facts: "
                                         "run python benchmarks/verify_kb.py")
    assert "| **wrong** |" not in report


def _wheel(folder: Path, version: str, doc: str, extra: dict[str, str] | None = None) -> None:
    target = folder / "fakelib" / version
    target.mkdir(parents=True)
    with zipfile.ZipFile(target / f"fakelib-{version}-py3-none-any.whl", "w") as wheel:
        wheel.writestr("fakelib/__init__.py", f'def switch(mode):\n    """{doc}"""\n')
        wheel.writestr("fakelib/lib.so", b"\x00\x01binary " + doc.encode() + b"\x00")
        for name, text in (extra or {}).items():
            wheel.writestr(name, text)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    monkeypatch.setenv("DETLINT_KB_WHEELS", str(tmp_path))
    _wheel(tmp_path, "1.0", "Nothing is deterministic.")
    _wheel(tmp_path, "1.1", "These raise: * Op A on CUDA. Deterministic: * Op B", {"fakelib/new.py": ""})
    _wheel(tmp_path, "2.0", "These raise: * Op C. Deterministic: * Op A on CUDA * Op B", {"fakelib/new.py": ""})
    package = Package("fakelib", ("1.0", "1.1", "2.0"), ("any",), ("3.11",))
    return {
        "raises": kbp.Probe("raises", package, "docstring", "fakelib/__init__.py", ("switch",),
                            (("These raise",), ("Deterministic",))),
        "made": kbp.Probe("made", package, "docstring", "fakelib/__init__.py", ("switch",), (("Deterministic",), ())),
        "bin": kbp.Probe("bin", package, "binaries", "fakelib/*.so"),
        "files": kbp.Probe("files", package, "members", "fakelib/*"),
    }


def _fact(versions: str, check) -> Fact:
    claim = {"versions": versions} if versions else {}
    return Fact("rules/x/ops.yaml", "ops[A].status[0]", "x", claim, "a source", check)


def _verify(fact, probes):
    return kbp.verify(fact, probes, kbp.Reader(log=lambda line: None))


def test_a_range_check_agrees_only_where_the_text_follows_the_range(fake):
    right = _verify(_fact(">=1.1,<2.0", {"probe": "raises", "contains": "Op A"}), fake)
    assert right.status == "right" and right.agree == ["fakelib 1.0", "fakelib 1.1", "fakelib 2.0"]
    wrong = _verify(_fact(">=2.0", {"probe": "raises", "contains": "Op A"}), fake)
    assert wrong.status == "wrong" and wrong.disagree == ["fakelib 1.1: found, expected not found (raises)",
                                                          "fakelib 2.0: not found, expected found (raises)"]
    moved = _verify(_fact(">=2.0", {"probe": "made", "contains": "Op A on CUDA"}), fake)
    assert moved.status == "right"


def test_present_absent_complement_only_and_binaries(fake):
    assert _verify(_fact("", {"probe": "bin", "contains": "Op", "expect": "present", "within": ">=1.1"}), fake).status == "right"
    assert _verify(_fact("", {"probe": "bin", "contains": "Op", "expect": "present"}), fake).status == "wrong"
    assert _verify(_fact("<1.1", {"probe": "bin", "contains": "Op C", "expect": "absent"}), fake).status == "right"
    assert _verify(_fact("<2.0", {"probe": "raises", "contains": "Op C", "expect": "complement"}), fake).status == "right"
    assert _verify(_fact(">=1.1", {"probe": "files", "contains": "fakelib/new.py", "expect": "only"}), fake).status == "right"
    assert _verify(_fact(">=2.0", {"probe": "files", "contains": "fakelib/new.py", "expect": "only"}), fake).status == "wrong"
    regex = {"probe": "raises", "matches": r"Op [AC]\b", "expect": "present"}
    assert _verify(_fact(">=1.1", regex), fake).status == "right"
    assert _verify(_fact("", {"probe": "raises", "any": ["Op A", "Op C"], "within": ">=1.1", "expect": "present"}), fake).status == "right"


def test_an_api_probe_exports_what_an_import_binds(tmp_path, monkeypatch):
    """`from m import neg as negative` binds negative, not neg (TF 2.0-2.3 import
    gen_array_ops.tensor_scatter_add as tensor_scatter_nd_add and export no tensor_scatter_add)."""
    monkeypatch.setenv("DETLINT_KB_WHEELS", str(tmp_path))
    target = tmp_path / "fakelib" / "1.0"
    target.mkdir(parents=True)
    with zipfile.ZipFile(target / "fakelib-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("fakelib/_api/v2/__init__.py", "from fakelib.ops import neg as negative\n"
                       "from fakelib.ops import mul\nfrom fakelib.ops import div as divide  # line: 3\nVERSION = '1.0'\n")
        wheel.writestr("fakelib/_api/v2/train/__init__.py", "from fakelib.training import Saver\n")
    package = Package("fakelib", ("1.0",), ("any",), ("3.11",))
    probe = kbp.Probe("api", package, "api", "*", roots=("/_api/v2/",), top=("/_api/v2/__init__.py",))
    names = ["fl.negative", "fl.neg", "fl.mul", "fl.div", "fl.divide", "fl.VERSION", "fl.train.Saver", "fl.train.neg"]
    answers = kbp.Reader(log=lambda line: None).find(probe, "1.0", names)
    assert answers == {"fl.negative": True, "fl.neg": False, "fl.mul": True, "fl.div": False, "fl.divide": True,
                       "fl.VERSION": True, "fl.train.Saver": True, "fl.train.neg": False}


def test_a_release_without_a_wheel_is_unverifiable_not_right(fake, monkeypatch):
    package = Package("fakelib", ("3.0",), ("any",), ("3.11",))
    probe = {"gone": kbp.Probe("gone", package, "binaries", "fakelib/*.so")}
    monkeypatch.setattr(kbp, "fetch", lambda *a, **k: (_ for _ in ()).throw(kbp.WheelUnavailable("fakelib==3.0: none")))
    verdict = _verify(_fact("", {"probe": "gone", "contains": "Op"}), probe)
    assert verdict.status == "unverifiable" and verdict.skipped == ["3.0"]


def test_malformed_checks_are_named():
    probes = kbp.load()
    bad = _fact("<2.0", {"probe": "nope", "contains": "x", "expect": "sometimes", "colour": 1})
    problems = kbp.validate(bad, probes)
    assert any("unknown probe" in p for p in problems) and any("expect must be" in p for p in problems)
    assert any("unknown check field" in p for p in problems)
    assert kbp.validate(Fact("f", "w", "x", {}, None, None), probes) == ["no source", "no check"]


def test_a_release_date_table_is_checked_against_the_first_upload_of_each_release(tmp_path, monkeypatch):
    """The index is read from the cache kept beside the wheels (what PyPI's simple index gave):
    a date that is not the first upload of the release's first final version is wrong."""
    monkeypatch.setenv("DETLINT_KB_WHEELS", str(tmp_path))
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "uploads-v2-fakelib.json").write_text(json.dumps(
        {"1.0": ["2019-02-26", "1.0.1"], "1.1": ["2019-06-19", "1.1.0"], "1.1.4": ["2019-09-02", "1.1.4"]}))
    probes = {"up": kbp.Probe("up", None, "upload-times", "", distribution="fakelib")}
    check = {"probe": "up", "expect": "dates"}

    def fact(dates):
        return Fact("rules/x/versions.yaml", "released", "x", {"dates": dates}, "PyPI", check)

    right = _verify(fact({"1.0": "2019-02-26", "1.1": "2019-06-19", "1.1.4": "2019-09-02"}), probes)
    assert right.status == "right" and right.agree == ["fakelib 1.0", "fakelib 1.1", "fakelib 1.1.4"]
    wrong = _verify(fact({"1.0": "2019-02-25", "1.2": "2019-10-01", "1.1.4": "2019-06-19"}), probes)
    assert wrong.status == "wrong" and wrong.disagree == [
        "fakelib 1.0: the fact says 2019-02-25, PyPI says 2019-02-26 (1.0.1) (up)",
        "fakelib 1.2: the fact says 2019-10-01, PyPI says no such release (up)",
        "fakelib 1.1.4: the fact says 2019-06-19, PyPI says 2019-09-02 (1.1.4) (up)"]
    assert kbp.validate(fact({}), probes) == ["expect: dates needs the fact's dates"]
