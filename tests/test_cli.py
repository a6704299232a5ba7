"""The command line as a user runs it: real subprocesses, exit codes, formats, bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT

UNSEEDED = "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\nmodel.fit(x, y)\n"
CLEAN = "import os\nprint(os.getcwd())\n"


def detlint(*args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None):
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "detlint", *args], cwd=cwd, capture_output=True, text=True,
                          input=stdin, env=full_env, timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "train.py").write_text(UNSEEDED)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_exit_codes(project: Path) -> None:
    assert detlint("clean.py", cwd=project).returncode == 0
    found = detlint("train.py", "--tf-version", "2.15", cwd=project)
    assert found.returncode == 1
    assert "train.py:2:30: DET101" in found.stdout and "Found 2 errors." in found.stdout
    assert detlint("train.py", "--exit-zero", cwd=project).returncode == 0
    missing = detlint("nope.py", cwd=project)
    assert missing.returncode == 2 and "nope.py: no such file or directory" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_clean_run_says_so(project: Path) -> None:
    assert "All checks passed!" in detlint("clean.py", cwd=project).stdout


def test_select_ignore_and_per_file_ignores(project: Path) -> None:
    only = detlint("train.py", "--select", "DET2", cwd=project)
    assert "DET201" in only.stdout and "DET101" not in only.stdout
    ignored = detlint("train.py", "--ignore", "DET101,DET201", cwd=project)
    assert ignored.returncode == 0
    per_file = detlint("train.py", "--per-file-ignores", "train.py:DET101", cwd=project)
    assert "DET101" not in per_file.stdout and "DET201" in per_file.stdout
    (project / "pyproject.toml").write_text('[tool.detlint]\nper-file-ignores = {"train*.py" = ["DET2"]}\n')
    configured = detlint("train.py", cwd=project)
    assert "DET201" not in configured.stdout and "DET101" in configured.stdout


def test_longest_prefix_wins(project: Path) -> None:
    result = detlint("train.py", "--ignore", "DET", "--extend-select", "DET201", cwd=project)
    assert "DET201" in result.stdout and "DET101" not in result.stdout


def test_json_output_has_ruff_fields(project: Path) -> None:
    result = detlint("train.py", "--output-format", "json", "--tf-version", "2.12", cwd=project)
    records = json.loads(result.stdout)
    assert {r["code"] for r in records} == {"DET101", "DET201"}
    record = records[0]
    for key in ("code", "name", "message", "filename", "location", "end_location", "fix", "noqa_row",
                "cell", "url"):
        assert key in record
    assert record["location"] == {"row": 2, "column": 30}
    assert Path(record["filename"]).is_absolute()
    assert "TF 2.12" in [r for r in records if r["code"] == "DET201"][0]["message"]


def test_sarif_output_has_what_code_scanning_needs(project: Path) -> None:
    result = detlint("train.py", "--output-format", "sarif", cwd=project)
    doc = json.loads(result.stdout)
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"] == "detlint"
    for rule in rules:
        assert rule["id"].startswith("DET")
        assert 0 < len(rule["shortDescription"]["text"]) <= 1024
        assert 0 < len(rule["fullDescription"]["text"]) <= 1024
        assert "## What it does" in rule["help"]["text"] or "# " in rule["help"]["markdown"]
    ids = [r["id"] for r in rules]
    for res in run["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == "train.py"  # relative to the project root
        assert loc["region"]["startLine"] == 2 and loc["region"]["startColumn"] == 30


def test_github_annotations(project: Path) -> None:
    result = detlint("train.py", "--output-format", "github", cwd=project)
    assert result.stdout.startswith("::error title=detlint (DET101),file=train.py,line=2,col=30,")


def test_full_output_shows_source_and_help(project: Path) -> None:
    result = detlint("train.py", "--output-format", "full", cwd=project)
    assert "2 | model = tf.keras.Sequential" in result.stdout
    assert "= help: call keras.utils.set_random_seed(42)" in result.stdout


def test_statistics(project: Path) -> None:
    result = detlint("train.py", "--statistics", cwd=project)
    assert "1\tDET101\tmissing-global-seed" in result.stdout


def test_stdin_with_filename(project: Path) -> None:
    result = detlint("-", "--stdin-filename", "train.py", cwd=project, stdin=UNSEEDED)
    assert result.returncode == 1
    assert result.stdout.startswith("train.py:2:30: DET101")


def test_folders_honour_gitignore_and_excludes(project: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("generated/\n")
    (project / "generated").mkdir()
    (project / "generated" / "bad.py").write_text(UNSEEDED)
    (project / "vendor").mkdir()
    (project / "vendor" / "bad.py").write_text(UNSEEDED)
    (project / ".venv").mkdir()
    (project / ".venv" / "bad.py").write_text(UNSEEDED)
    files = detlint(".", "--show-files", "--extend-exclude", "vendor", cwd=project).stdout.split()
    assert sorted(files) == ["clean.py", "train.py"]
    forced = detlint("vendor/bad.py", "--extend-exclude", "vendor", "--force-exclude", cwd=project)
    assert forced.returncode == 0
    explicit = detlint("vendor/bad.py", "--extend-exclude", "vendor", cwd=project)
    assert explicit.returncode == 1


def test_config_errors_are_exit_2(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.detlint]\nsead = 3\n")
    result = detlint("train.py", cwd=project)
    assert result.returncode == 2 and "unknown key 'sead'" in result.stderr
    (project / "pyproject.toml").write_text("[tool.detlint]\nseed = 'three'\n")
    result = detlint("train.py", cwd=project)
    assert result.returncode == 2 and "seed must be a int" in result.stderr
    (project / "pyproject.toml").write_text("[tool.detlint\n")
    result = detlint("train.py", cwd=project)
    assert result.returncode == 2 and "not valid TOML" in result.stderr
    result = detlint("train.py", "--tf-version", "banana", cwd=project)
    assert result.returncode == 2 and "--tf-version" in result.stderr


def test_malformed_knowledge_base_stops_with_exit_2(project: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    for src in (ROOT / "rules").glob("*.yaml"):
        (rules / src.name).write_text(src.read_text())
    text = (rules / "seeds.yaml").read_text().replace("scope: file\n    area: seeds\n    summary: PYTHONHASHSEED",
                                                      "scope: everywhere\n    area: seeds\n    summary: PYTHONHASHSEED")
    (rules / "seeds.yaml").write_text(text)
    result = detlint("train.py", cwd=project, env={"DETLINT_RULES_DIR": str(rules)})
    assert result.returncode == 2
    assert "seeds.yaml: rule DET105.scope: file, program or run" in result.stderr


def test_show_settings_reports_version_source(project: Path) -> None:
    (project / "requirements.txt").write_text("numpy\ntensorflow>=2.10,<2.13  # pinned\n")
    settings = json.loads(detlint(".", "--show-settings", cwd=project).stdout)
    assert settings["tensorflow-version"] == "2.10"
    assert settings["tensorflow-version-source"] == "requirements.txt pins tensorflow>=2.10,<2.13"
    assert settings["keras-version"] == 2
    (project / "pyproject.toml").write_text('[tool.detlint]\ntensorflow-version = "2.6"\n')
    settings = json.loads(detlint(".", "--show-settings", cwd=project).stdout)
    assert (settings["tensorflow-version"], settings["tensorflow-version-source"]) == (
        "2.6", "pyproject.toml [tool.detlint] tensorflow-version")
    settings = json.loads(detlint(".", "--show-settings", "--tf-version", "1.15", cwd=project).stdout)
    assert (settings["tensorflow-version"], settings["tensorflow-version-source"]) == ("1.15", "--tf-version")
    (project / "requirements.txt").write_text("tensorflow==2.15.1\nkeras>=3.0\n")
    settings = json.loads(detlint(".", "--show-settings", "--isolated", cwd=project).stdout)
    assert (settings["keras-version"], settings["keras-version-source"]) == (3, "requirements.txt pins keras>=3.0")


def test_version_flag_and_module_entry(project: Path) -> None:
    result = detlint("--version", cwd=project)
    assert result.returncode == 0 and result.stdout.startswith("detlint ")


def test_rule_command(project: Path) -> None:
    doc = detlint("rule", "DET201", cwd=project).stdout
    for section in ("# op-determinism-not-enabled (DET201)", "## What it does", "## Why is this bad?",
                    "## Example", "## Use instead", "## Fix safety", "## Options", "## References"):
        assert section in doc
    listing = detlint("rule", "--all", cwd=project).stdout
    assert "DET101  missing-global-seed" in listing
    unknown = detlint("rule", "DET999", cwd=project)
    assert unknown.returncode == 2 and "unknown rule" in unknown.stderr


def test_colour_only_on_a_terminal(project: Path) -> None:
    plain = detlint("train.py", cwd=project, env={"NO_COLOR": ""})
    assert "\x1b[" not in plain.stdout
    forced = detlint("train.py", cwd=project, env={"NO_COLOR": "", "FORCE_COLOR": "1"})
    assert "\x1b[" in forced.stdout


def test_fixtures_folder_runs_without_crash() -> None:
    result = detlint(str(FIXTURES), "--isolated", cwd=ROOT)
    assert result.returncode == 1
    assert "DET000" not in result.stdout and "Traceback" not in result.stderr


def test_opt_in_rules_need_selecting(project: Path) -> None:
    (project / "rnn.py").write_text("import tensorflow as tf\nlayer = tf.keras.layers.LSTM(4)\nmodel.fit(x, y)\n")
    assert "DET208" not in detlint("rnn.py", cwd=project).stdout
    assert "DET208" in detlint("rnn.py", "--extend-select", "DET208", cwd=project).stdout
