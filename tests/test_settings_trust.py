"""A cloned repository's settings, cache and file names are data: they cannot make detlint write
outside the project, blow up a report, crash the run or inject lines into what it prints.

Each test reproduces one item of issue 27 (4, 10, 15, 17, 20) on real files, real symlinks and
the real command line; runs that could hang go through a subprocess with a timeout.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from detlint.cli import main
from detlint.knowledge import kb as kb_module
from detlint.lint.cache import FactsCache
from detlint.lint.engine import real
from detlint.lint.ftypes import Diagnostic
from detlint.lint.output import write_concise, write_full, write_github
from detlint.settings.config import load_settings

GOOD = "import os\nos.environ['PYTHONHASHSEED'] = '0'\n"  # DET105 on line 2
PROJECT = "[project]\nname = 'p'\n"
posix_only = pytest.mark.skipif(os.name != "posix", reason="symlinks, FIFOs and newlines in names are POSIX")


def project(tmp_path: Path, files: dict[str, str], pyproject: str = PROJECT) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(pyproject)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def detlint(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real command line in a child process run from ``root``, with a private TMPDIR."""
    tmp = root.parent / "tmpdir"
    tmp.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "DETLINT_RULES_DIR")}
    cmd = [sys.executable, "-m", "detlint", *args, "--tf-version", "2.21"]
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout,
                          env={**env, "TMPDIR": str(tmp)})


def in_process(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main([*args, "--tf-version", "2.21", "--no-cache"], out)
    return code, out.getvalue()


def everything_under(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*"))


# ---- item 4: the facts cache stays inside the project unless the user names another place --------------

@posix_only
def test_a_committed_cache_symlink_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = project(tmp_path, {"good.py": GOOD})
    (root / ".detlint_cache").symlink_to(outside)
    for _ in range(2):  # the second run finds the same link: still nothing written, still checked
        proc = detlint(root, ".")
        assert proc.returncode == 1 and "DET105" in proc.stdout, proc.stderr
        assert everything_under(outside) == []
        notes = [line for line in proc.stderr.splitlines() if "cache" in line]
        assert len(notes) == 1 and "symlink" in notes[0] and "without the facts cache" in notes[0], proc.stderr


@posix_only
@pytest.mark.parametrize("setting", ["absolute", "parent", "through a symlinked folder"])
def test_a_repository_set_cache_dir_outside_the_project_is_not_used(tmp_path: Path, setting: str) -> None:
    outside = tmp_path / "outside"
    value = {"absolute": str(outside / "cache"), "parent": "../outside/cache",
             "through a symlinked folder": "sub/cache"}[setting]
    root = project(tmp_path, {"good.py": GOOD}, f'[tool.detlint]\ncache-dir = "{value}"\n')
    outside.mkdir()
    if setting == "through a symlinked folder":
        (root / "sub").symlink_to(outside)
    proc = detlint(root, ".")
    assert proc.returncode == 1 and "DET105" in proc.stdout, proc.stderr
    assert everything_under(outside) == []
    notes = [line for line in proc.stderr.splitlines() if "cache" in line]
    assert len(notes) == 1 and "cache-dir" in notes[0] and "without the facts cache" in notes[0], proc.stderr


def test_a_cache_dir_inside_the_project_is_used(tmp_path: Path) -> None:
    root = project(tmp_path, {"good.py": GOOD}, '[tool.detlint]\ncache-dir = "build/cache"\n')
    proc = detlint(root, ".")
    assert proc.returncode == 1 and "DET105" in proc.stdout and "cache" not in proc.stderr
    assert list((root / "build" / "cache").glob("facts-*/*/*.json"))


@posix_only
def test_a_cache_dir_named_on_the_command_line_may_be_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    root = project(tmp_path, {"good.py": GOOD})
    (tmp_path / "link").symlink_to(outside, target_is_directory=True)
    outside.mkdir()
    proc = detlint(root, ".", "--cache-dir", str(tmp_path / "link"))
    assert proc.returncode == 1 and "DET105" in proc.stdout and "cache" not in proc.stderr
    assert list(outside.glob("facts-*/*/*.json"))


def _facts_folder(root: Path) -> Path:
    return FactsCache(root / ".detlint_cache", kb_module.load().digest).directory


@posix_only
@pytest.mark.parametrize("planted", ["facts folder", "shard folders"])
def test_symlinks_planted_inside_the_cache_are_not_written_through(tmp_path: Path, planted: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = project(tmp_path, {"good.py": GOOD, "b.py": "import random\n"})
    facts = _facts_folder(root)
    facts.parent.mkdir()
    if planted == "facts folder":
        facts.symlink_to(outside)
    else:
        facts.mkdir()
        for shard in range(256):
            (facts / f"{shard:02x}").symlink_to(outside)
    proc = detlint(root, ".")
    assert proc.returncode == 1 and "DET105" in proc.stdout, proc.stderr
    assert everything_under(outside) == []


@posix_only
def test_a_fifo_planted_as_a_cache_entry_does_not_hang(tmp_path: Path) -> None:
    root = project(tmp_path, {"good.py": GOOD})
    good = real(root / "good.py")
    key = FactsCache(root / ".detlint_cache", kb_module.load().digest).key(good, good.read_bytes())
    entry = _facts_folder(root) / key[:2] / f"{key}.json"
    entry.parent.mkdir(parents=True)
    os.mkfifo(entry)
    os.mkfifo(entry.with_suffix(".outline.json"))
    proc = detlint(root, ".", timeout=60)
    assert proc.returncode == 1 and "DET105" in proc.stdout, proc.stderr


# ---- item 20: cache entries are range-checked; one out of range is recomputed --------------------------

def _good_entry(root: Path) -> Path:
    (entry,) = [p for p in _facts_folder(root).rglob("*.json") if not p.name.endswith(".outline.json")
                and json.loads(p.read_text())["path"].endswith("good.py")]
    return entry


def _first_hit(doc: dict[str, Any]) -> list[Any]:
    return next(hit for hit in doc["hits"] if hit[0] == "rule:DET105")


def _set(index: int, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda doc: _first_hit(doc).__setitem__(index, value)


TAMPERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "row -5": _set(3, -5),
    "row 0": _set(3, 0),
    "column -3": _set(4, -3),
    "end row before the start": _set(5, 1),
    "end column before the start": lambda doc: _first_hit(doc).__setitem__(slice(4, 7), [5, _first_hit(doc)[3], 0]),
    "row beyond 2**31": _set(3, 10**12),
    "matcher index -1": _set(1, -1),
    "api with an escape sequence": _set(2, "os.environ\x1b[2J"),
    "detail of 1 MB": _set(8, "x" * (1 << 20)),
    "error with escape sequences": lambda doc: doc.update(error="\x1b]0;owned\x07\x1b[2J\n::error::x", hits=[]),
    "error line -1": lambda doc: doc.update(error_line=-1),
    "noqa row -1": lambda doc: doc.update(noqa=[[-1, None]]),
    "loop ending before it starts": lambda doc: doc.update(loops=[[5, 2]]),
}


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_an_out_of_range_cache_entry_is_recomputed(tmp_path: Path, tamper: str) -> None:
    root = project(tmp_path, {"good.py": GOOD})
    first = detlint(root, ".", "--output-format", "json")
    assert first.returncode == 1 and "DET105" in first.stdout, first.stderr
    entry = _good_entry(root)
    doc = json.loads(entry.read_text())
    TAMPERS[tamper](doc)
    entry.write_text(json.dumps(doc))
    again = detlint(root, ".", "--output-format", "json")
    assert json.loads(again.stdout) == json.loads(first.stdout), again.stderr
    concise = detlint(root, ".")
    assert "\x1b" not in concise.stdout + concise.stderr and "::error" not in concise.stdout


def test_a_planted_row_never_reaches_sarif(tmp_path: Path) -> None:
    root = project(tmp_path, {"good.py": GOOD})
    assert detlint(root, ".").returncode == 1
    entry = _good_entry(root)
    doc = json.loads(entry.read_text())
    _set(3, -5)(doc)
    entry.write_text(json.dumps(doc))
    proc = detlint(root, ".", "--output-format", "sarif")
    regions = [location["physicalLocation"]["region"] for result in json.loads(proc.stdout)["runs"][0]["results"]
               for location in result["locations"]]
    assert regions and all(r["startLine"] >= 1 and r["startColumn"] >= 1 for r in regions)
    assert [r["startLine"] for r in regions] == [2]


# ---- item 15: a config file detlint cannot parse is warned about, never a crash ------------------------

DEEP = {"nested lists": "x = " + "[" * 500 + "]" * 500 + "\n",
        "nested inline tables": "x = " + "{a = " * 500 + "1" + "}" * 500 + "\n"}


@pytest.mark.parametrize("shape", list(DEEP))
def test_a_deeply_nested_pyproject_is_warned_about_and_skipped(tmp_path: Path, shape: str) -> None:
    root = project(tmp_path, {"good.py": GOOD}, PROJECT + DEEP[shape])
    proc = detlint(root, ".")
    assert proc.returncode == 1 and "DET105" in proc.stdout, proc.stderr
    assert "internal error" not in proc.stderr
    (warning,) = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert "pyproject.toml" in warning and "ignored" in warning


def test_a_deeply_nested_pyproject_that_configures_detlint_is_a_configuration_error(tmp_path: Path) -> None:
    root = project(tmp_path, {"good.py": GOOD}, "[tool.detlint]\nseed = 1\n" + DEEP["nested lists"])
    proc = detlint(root, ".")
    assert proc.returncode == 2 and "internal error" not in proc.stderr
    assert proc.stderr.startswith("detlint: error:") and "pyproject.toml: not valid TOML" in proc.stderr


def test_settings_readers_skip_deep_dependency_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What the flake8 plugin calls: the settings of a project whose pyproject.toml and Pipfile nest
    too deeply are the defaults, with one warning."""
    root = project(tmp_path, {"good.py": GOOD, "Pipfile": "[packages]\n" + DEEP["nested lists"]},
                   PROJECT + DEEP["nested lists"])
    settings = load_settings([root / "good.py"], {"tensorflow-version": "2.21"})
    assert settings.project_root == root.resolve() and settings.config_file is None
    assert "pyproject.toml: not valid TOML" in capsys.readouterr().err


# ---- item 10: settings are checked for size and form ----------------------------------------------------

@pytest.mark.parametrize("url", ["https://x.org/{code:>30}", "https://x.org/{code!r}", "https://x.org/{code[0]}",
                                 "https://x.org/{0}", "https://x.org/{}", "https://x.org/" + "a" * 5000])
def test_docs_url_takes_plain_placeholders_and_a_sane_length(tmp_path: Path, url: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path, {"good.py": GOOD}, f'[tool.detlint]\ndocs-url = "{url}"\n')
    code, out = in_process(str(root / "good.py"), "--output-format", "json")
    err = capsys.readouterr().err
    assert (code, out) == (2, "")
    assert err.startswith("detlint: error: pyproject.toml [tool.detlint]: docs-url") and len(err) < 1000, err


def test_plain_docs_url_placeholders_still_work(tmp_path: Path) -> None:
    root = project(tmp_path, {"good.py": GOOD},
                   '[tool.detlint]\ndocs-url = "https://x.org/{code}/{name}#{anchor}"\n')
    code, out = in_process(str(root / "good.py"), "--output-format", "json")
    assert code == 1 and json.loads(out)[0]["url"].startswith("https://x.org/DET105/")


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


@pytest.mark.parametrize("key", ["exclude", "extend-exclude", "entry-points", "not-training", "src", "ignore"])
@pytest.mark.parametrize("size", ["count", "length"])
def test_list_settings_have_limits(tmp_path: Path, key: str, size: str, capsys: pytest.CaptureFixture[str]) -> None:
    items = [f"p{i}_*" for i in range(20_000)] if size == "count" else ["a" * 5000]
    root = project(tmp_path, {"good.py": GOOD}, f"[tool.detlint]\n{key} = {_toml_list(items)}\n")
    code, out = in_process(str(root / "good.py"))
    err = capsys.readouterr().err
    assert (code, out) == (2, "")
    assert err.startswith(f"detlint: error: pyproject.toml [tool.detlint]: {key}: ") and len(err) < 1000, err
    assert ("at most 1000 entries" if size == "count" else "at most 1024 characters") in err


@pytest.mark.parametrize("key", ["per-file-ignores", "severity"])
def test_table_settings_have_limits(tmp_path: Path, key: str, capsys: pytest.CaptureFixture[str]) -> None:
    value = "ignore" if key == "per-file-ignores" else "error"
    entries = ", ".join(f'"p{i}" = ["DET1"]' if value == "ignore" else f'"DET{i}" = "error"' for i in range(20_000))
    root = project(tmp_path, {"good.py": GOOD}, f"[tool.detlint]\n{key} = {{ {entries} }}\n")
    code, out = in_process(str(root / "good.py"))
    err = capsys.readouterr().err
    assert (code, out) == (2, "")
    assert err.startswith(f"detlint: error: pyproject.toml [tool.detlint]: {key}: at most 1000 entries"), err


def test_command_line_lists_have_the_same_limits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path, {"good.py": GOOD})
    code, out = in_process(str(root / "good.py"), "--exclude", ",".join(f"p{i}" for i in range(20_000)))
    err = capsys.readouterr().err
    assert (code, out) == (2, "") and err.startswith("detlint: error: --exclude: at most 1000 entries"), err


def test_settings_within_the_limits_are_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = [f"p{i}_*" for i in range(998)] + ["b" * 1024, "skip"]  # 1000 entries, the longest allowed
    root = project(tmp_path, {"good.py": GOOD, "skip/x.py": GOOD}, f"[tool.detlint]\nexclude = {_toml_list(items)}\n")
    monkeypatch.chdir(root)
    code, out = in_process(".")
    assert code == 1 and "good.py:2:1: DET105" in out and "x.py" not in out


# ---- item 17: file names and messages cannot inject lines or terminal commands --------------------------

INJECTING = "a\n::error title=owned::x\nb.py"


@posix_only
@pytest.mark.parametrize("fmt", ["concise", "full", "github"])
def test_a_file_name_with_newlines_stays_on_its_line(tmp_path: Path, fmt: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    root = project(tmp_path, {INJECTING: GOOD, "c\x1b[2Jd.py": GOOD})
    monkeypatch.chdir(root)
    code, out = in_process(".", "--isolated", "--output-format", fmt)
    assert code == 1
    assert "\x1b" not in out and "\r" not in out
    assert not any(line.startswith("::error") for line in out.splitlines()), out
    findings = [line for line in out.splitlines() if "DET105" in line]
    assert len(findings) == 2, out
    if fmt == "github":
        assert all(line.startswith("::warning ") for line in out.splitlines())
        assert "file=a%0A%3A%3Aerror title=owned%3A%3Ax%0Ab.py,line=2," in out
        assert "::a\\n::error title=owned::x\\nb.py:2:1: DET105 " in out
    else:
        assert "a\\n::error title=owned::x\\nb.py:2:1: DET105 " in out
        assert "c\\x1b[2Jd.py:2:1: DET105 " in out


def test_control_characters_in_messages_and_source_are_shown_escaped() -> None:
    diag = Diagnostic(code="DET105", message="value '\x1b[2J\r\n::error::x' \u2028 here", path="p%,:.py",
                      line=1, col=4, end_line=1, end_col=9, fix_title="use '\x1b]0;t\x07'")
    source = ["x = '\x1b[2Jab'\n"]
    texts = []
    for write in (lambda out: write_concise([diag], out), lambda out: write_full([diag], out, lambda _: source),
                  lambda out: write_github([diag], out)):
        out = io.StringIO()
        write(out)
        texts.append(out.getvalue())
    concise, full, github = texts
    for text in texts:
        assert "\x1b" not in text and "\r" not in text and "\u2028" not in text and "\x07" not in text
    assert "value '\\x1b[2J\\r\\n::error::x' \\u2028 here" in concise
    assert "1 | x = '\\x1b[2Jab'\n" in full
    # the caret stays under the escaped text: col 4 is after `x = `; 5 characters became 8
    assert "  |     ^^^^^^^^\n" in full
    assert "= help: use '\\x1b]0;t\\x07'" in full
    assert github.count("\n") == 1 and "file=p%25%2C%3A.py," in github and "::p%25,:.py:1:5: DET105" in github
