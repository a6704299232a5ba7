"""The command line as a user runs it: real subprocesses, exit codes, formats, bad input."""
from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, detlint_here

UNSEEDED = "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\nmodel.fit(x, y)\n"
CLEAN = "import os\nprint(os.getcwd())\n"


def detlint(*args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None):
    return detlint_here(args, cwd, stdin, env)


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


def test_quiet_prints_findings_only_and_silent_nothing(project: Path) -> None:
    quiet = detlint("train.py", "--tf-version", "2.15", "-q", cwd=project)
    assert quiet.returncode == 1
    lines = quiet.stdout.splitlines()
    assert len(lines) == 2 and all(": DET" in line for line in lines), quiet.stdout
    silent = detlint("train.py", "--tf-version", "2.15", "--silent", cwd=project)
    assert silent.returncode == 1 and silent.stdout == ""
    report = project / "report.json"
    kept = detlint("train.py", "-s", "--output-format", "json", "-o", str(report), cwd=project)
    assert kept.returncode == 1 and kept.stdout == "" and len(json.loads(report.read_text())) == 2
    assert detlint("clean.py", "-q", cwd=project).stdout == ""


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
    assert result.stdout.startswith("::warning title=detlint (DET101),file=train.py,line=2,col=30,")


def test_full_output_shows_source_and_help(project: Path) -> None:
    result = detlint("train.py", "--output-format", "full", cwd=project)
    assert "2 | model = tf.keras.Sequential" in result.stdout
    assert "= help: call keras.utils.set_random_seed(42)" in result.stdout


def test_statistics(project: Path) -> None:
    result = detlint("train.py", "--statistics", cwd=project)
    assert "1\tDET101\tmissing-global-seed" in result.stdout
    # a rule whose fix needs --unsafe-fixes is fixable, as ruff says it
    rows = json.loads(detlint("train.py", "--statistics", "--output-format", "json", cwd=project).stdout)
    row = next(r for r in rows if r["code"] == "DET101")
    assert row["fixable"] is True and row["fix_applicability"] == "unsafe"


def test_diff_and_fix_say_what_the_unsafe_fixes_would_do(project: Path) -> None:
    diff = detlint("train.py", "--diff", cwd=project)
    assert "Would fix 0 errors." in diff.stderr
    assert "2 hidden fixes can be enabled with the `--unsafe-fixes` option (they change what the program computes" \
        in diff.stderr
    fix = detlint("train.py", "--fix", cwd=project)
    assert "2 hidden fixes can be enabled with the `--unsafe-fixes` option" in fix.stdout and \
        fix.stdout.rstrip().endswith("0 fixed, 2 remaining")


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
    shutil.copytree(ROOT / "rules", rules)
    seeds = rules / "tensorflow" / "seeds.yaml"
    text = seeds.read_text().replace("scope: file\n    area: seeds\n    summary: PYTHONHASHSEED",
                                     "scope: everywhere\n    area: seeds\n    summary: PYTHONHASHSEED")
    seeds.write_text(text)
    result = detlint("train.py", cwd=project, env={"DETLINT_RULES_DIR": str(rules)})
    assert result.returncode == 2
    assert "seeds.yaml: rule DET105.scope: file, program or run" in result.stderr


@pytest.mark.parametrize("marker", ["setup.py", "setup.cfg", None])
def test_a_file_named_in_an_unpacked_archive_sees_the_package_next_to_it(tmp_path: Path, marker: str | None) -> None:
    """No pyproject.toml and no .git: setup.py/setup.cfg marks the root, so `detlint
    examples/train.py` follows `from mypkg.models import build`; without one the file's own
    folder is the root, wherever detlint runs."""
    root = tmp_path / "archive"
    (root / "mypkg").mkdir(parents=True)
    (root / "examples").mkdir()
    if marker:
        (root / marker).write_text("")
    (root / "mypkg" / "__init__.py").write_text("")
    (root / "mypkg" / "models.py").write_text(
        "import tensorflow as tf\n\n\ndef build():\n    return tf.keras.Sequential([tf.keras.layers.Dense(2)])\n")
    (root / "examples" / "train.py").write_text(
        "from mypkg.models import build\n\nmodel = build()\nmodel.compile('sgd', 'mse')\nmodel.fit(x, y)\n")
    settings = json.loads(detlint("examples/train.py", "--show-settings", cwd=root).stdout)
    found = detlint("examples/train.py", "--tf-version", "2.15", "--select", "DET101", cwd=root)
    if marker is None:
        assert settings["project-root"] == str((root / "examples").resolve())
        assert "DET101" not in found.stdout  # mypkg is not found from examples/
        return
    assert settings["project-root"] == str(root.resolve())
    assert "examples/train.py:3:9: DET101" in found.stdout and "mypkg/models.py:5" in found.stdout, found.stdout


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
    starts = {re.match(r"DET\d+  \S+ +", line).end() for line in listing.splitlines()}
    assert len(starts) == 1, starts  # every summary starts in the same column, however long the name
    unknown = detlint("rule", "DET999", cwd=project)
    assert unknown.returncode == 2 and "unknown rule" in unknown.stderr
    near = detlint("rule", "DET620", cwd=project)  # the nearest codes, as --select names them
    assert near.returncode == 2 and "did you mean DET6" in near.stderr, near.stderr


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


# ---- selections name real codes ------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ("--select", "DET999"), ("--extend-select", "DET2011"), ("--ignore", "DET1,DETX"),
    ("--per-file-ignores", "train.py:DET9"), ("--extend-ignore", "E501"),
])
def test_unknown_codes_on_the_command_line_are_an_error(project: Path, args: tuple[str, str]) -> None:
    result = detlint("train.py", *args, cwd=project)
    assert result.returncode == 2, result.stdout
    assert "unknown rule code or prefix" in result.stderr and args[0] in result.stderr
    assert "All checks passed!" not in result.stdout and result.stdout == ""


def test_unknown_code_message_names_the_nearest_known_codes(project: Path) -> None:
    result = detlint("train.py", "--select", "DET2011", cwd=project)
    assert "'DET2011'" in result.stderr and "did you mean DET201" in result.stderr


def test_unknown_codes_in_config_are_an_error(project: Path) -> None:
    for table in ('select = ["DET999"]', 'ignore = ["DET10X"]', 'extend-select = ["DET8"]',
                  'per-file-ignores = {"tests/*" = ["DET1O1"]}', 'severity = {DET999 = "error"}'):
        (project / "pyproject.toml").write_text(f"[tool.detlint]\n{table}\n")
        result = detlint("train.py", cwd=project)
        assert result.returncode == 2, table
        assert "pyproject.toml [tool.detlint]" in result.stderr and "unknown rule code or prefix" in result.stderr


def test_prefixes_of_known_codes_stay_valid(project: Path) -> None:
    for prefix, shown in (("DET", "DET201"), ("DET1", "DET101"), ("DET20", "DET201"), ("DET201", "DET201"),
                          ("ALL", "DET101")):
        result = detlint("train.py", "--select", prefix, cwd=project)
        assert result.returncode == 1 and shown in result.stdout, prefix
    assert detlint("train.py", "--ignore", "DET1,DET20", cwd=project).returncode == 0


# ---- nothing checked is said ----------------------------------------------------------------------
def test_no_files_checked_is_a_warning(project: Path) -> None:
    (project / "empty").mkdir()
    (project / "vendor").mkdir()
    (project / "vendor" / "bad.py").write_text(UNSEEDED)
    runs = [detlint("empty", cwd=project),
            detlint("vendor", "--extend-exclude", "vendor", cwd=project),
            detlint("vendor/bad.py", "--extend-exclude", "vendor", "--force-exclude", cwd=project)]
    for result in runs:
        assert result.returncode == 0
        assert "warning: No Python files found under the given path(s)" in result.stderr
        assert "All checks passed!" not in result.stdout  # nothing was checked: the warning says so alone
    json_run = detlint("empty", "--output-format", "json", cwd=project)
    assert json.loads(json_run.stdout) == [] and "No Python files found" in json_run.stderr
    assert "No Python files found" not in detlint("clean.py", cwd=project).stderr


# ---- target versions detlint knows ------------------------------------------------------------------
def test_versions_outside_the_known_range_are_an_error(project: Path) -> None:
    for version in ("3.0", "1.5", "2.22"):
        result = detlint("train.py", "--tf-version", version, cwd=project)
        assert result.returncode == 2, version
        assert f"TensorFlow {version} is outside the versions detlint knows (1.13 to 2.21)" in result.stderr
    assert detlint("train.py", "--tf-version", "2.15.1", cwd=project).returncode == 1
    (project / "pyproject.toml").write_text('[tool.detlint]\ntensorflow-version = "3.0"\n')
    result = detlint("train.py", cwd=project)
    assert result.returncode == 2 and "pyproject.toml [tool.detlint]: tensorflow-version" in result.stderr


def test_unquoted_version_in_config_is_refused_with_a_hint(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.detlint]\ntensorflow-version = 2.10\n")
    result = detlint("train.py", cwd=project)
    assert result.returncode == 2
    assert 'quoted string such as "2.10"' in result.stderr and "the number 2.1" in result.stderr
    (project / "pyproject.toml").write_text('[tool.detlint]\ntensorflow-version = "2.10"\n')
    settings = json.loads(detlint(".", "--show-settings", cwd=project).stdout)
    assert settings["tensorflow-version"] == "2.10"


# ---- seeds every generator accepts -------------------------------------------------------------------
def test_seeds_outside_0_to_2_32_are_refused(project: Path) -> None:
    for seed in ("-5", "4294967296", "1.5"):
        result = detlint("train.py", "--seed", seed, cwd=project)
        assert result.returncode == 2 and "--seed" in result.stderr, seed
    for seed in ("-1", "4294967296", "true"):
        (project / "pyproject.toml").write_text(f"[tool.detlint]\nseed = {seed}\n")
        result = detlint("train.py", cwd=project)
        assert result.returncode == 2 and "seed" in result.stderr, seed
    (project / "pyproject.toml").write_text("[tool.detlint]\nseed = 4294967295\n")
    assert "set_random_seed(4294967295)" in detlint("train.py", cwd=project).stdout


# ---- fix hints and statistics ---------------------------------------------------------------------
def test_unsafe_fixes_without_fix_reports_normally(project: Path) -> None:
    result = detlint("train.py", "--unsafe-fixes", cwd=project)
    assert result.returncode == 1
    assert "fixed," not in result.stdout and "remaining" not in result.stdout
    assert "train.py:2:30: DET101 [*]" in result.stdout
    assert "[*] 2 fixable with the `--fix` option (2 of them unsafe)." in result.stdout
    assert (project / "train.py").read_text() == UNSEEDED


def test_statistics_prints_only_the_table(project: Path) -> None:
    result = detlint("train.py", "--statistics", cwd=project)
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["    1\tDET101\tmissing-global-seed",
                                          "    1\tDET201\top-determinism-not-enabled"]
    records = json.loads(detlint("train.py", "--statistics", "--output-format", "json", cwd=project).stdout)
    assert [(r["code"], r["count"]) for r in records] == [("DET101", 1), ("DET201", 1)]


# ---- help ------------------------------------------------------------------------------------------
def test_help_and_the_package_name_every_framework(project: Path) -> None:
    """detlint introduces itself as a tool for TensorFlow/Keras, PyTorch and JAX alike."""
    text = " ".join(detlint("--help", cwd=project).stdout.split())
    described = re.search(r'^description = "(.*)"$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    for said in (text, described):
        assert all(name in said for name in ("TensorFlow", "PyTorch", "JAX")), said


def test_help_lists_every_command(project: Path) -> None:
    text = detlint("--help", cwd=project).stdout
    for command in ("check", "run", "diverge", "rule"):
        assert any(line.split()[:1] == [command] and len(line.split()) > 3 for line in text.splitlines()), command


@pytest.mark.parametrize("command", ["run", "diverge"])
def test_subcommand_help_is_complete(project: Path, command: str) -> None:
    result = detlint(command, "--help", cwd=project)
    assert result.returncode == 0 and "``" not in result.stdout
    usage, _, rest = result.stdout.partition("\n\n")
    options = [line.split()[0] for line in rest.splitlines() if line.startswith("  --")]
    assert len(options) >= 3
    lines = rest.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("  --"):
            same_line = [p for p in line.split("  ") if p.strip()][1:]
            next_line = lines[i + 1] if i + 1 < len(lines) else ""
            wrapped = next_line.startswith(" " * 10) and not next_line.strip().startswith("-")
            assert same_line or wrapped, f"no help text: {line!r}"
    for option in options:
        assert option.split("=")[0] in usage, f"{option} missing from the usage line"


# ---- the report never replaces an input --------------------------------------------------------------
def test_report_is_never_written_over_an_input(project: Path) -> None:
    for target in ("train.py", "./train.py", str(project / "train.py")):
        result = detlint("train.py", "clean.py", "-o", target, cwd=project)
        assert result.returncode == 2 and "refusing to write the report over" in result.stderr
        assert (project / "train.py").read_text() == UNSEEDED
    result = detlint(".", "-o", "clean.py", cwd=project)
    assert result.returncode == 2 and (project / "clean.py").read_text() == CLEAN


def test_report_into_a_missing_folder_creates_it(project: Path) -> None:
    result = detlint("train.py", "-o", "reports/ci/detlint.txt", cwd=project)
    assert result.returncode == 1 and result.stdout == ""
    assert "train.py:2:30: DET101" in (project / "reports" / "ci" / "detlint.txt").read_text()


# ---- a pyproject.toml that belongs to other tools ---------------------------------------------------------
@pytest.mark.parametrize("text", [
    b"tool = 5\n",
    b"[project]\nname = 'x'\noptional-dependencies = 3\n",
    b"[project]\nname = 'x'\ndependencies = 5\n",
    b"[tool.poetry]\ndependencies = 5\n",
    b"[project]\nname = '\xff\xfe'\n",
])
def test_malformed_dependency_data_is_a_warning_not_a_stop(project: Path, text: bytes) -> None:
    (project / "pyproject.toml").write_bytes(text)
    result = detlint("train.py", cwd=project)
    assert result.returncode == 1, result.stderr
    assert "train.py:2:30: DET101" in result.stdout
    assert "warning:" in result.stderr and "pyproject.toml" in result.stderr
    assert "internal error" not in result.stderr


def test_malformed_detlint_table_is_still_a_config_error(project: Path) -> None:
    for text in (b"[tool]\ndetlint = 5\n", b"[tool.detlint]\nseed = '\xff'\n"):
        (project / "pyproject.toml").write_bytes(text)
        result = detlint("train.py", cwd=project)
        assert result.returncode == 2 and "internal error" not in result.stderr, text


# ---- one severity model, real URLs only ----------------------------------------------------------------
def test_severity_is_the_same_in_every_format(project: Path) -> None:
    records = json.loads(detlint("train.py", "--output-format", "json", cwd=project).stdout)
    assert {r["severity"] for r in records} == {"warning"}
    sarif = json.loads(detlint("train.py", "--output-format", "sarif", cwd=project).stdout)["runs"][0]
    assert {r["level"] for r in sarif["results"]} == {"warning"}
    assert {r["defaultConfiguration"]["level"] for r in sarif["tool"]["driver"]["rules"]} == {"warning"}
    github = detlint("train.py", "--output-format", "github", cwd=project).stdout.splitlines()
    assert all(line.startswith("::warning ") for line in github) and len(github) == 2

    (project / "pyproject.toml").write_text('[tool.detlint]\nseverity = {DET1 = "error", DET201 = "note"}\n')
    records = json.loads(detlint("train.py", "--output-format", "json", cwd=project).stdout)
    assert {r["code"]: r["severity"] for r in records} == {"DET101": "error", "DET201": "note"}
    sarif = json.loads(detlint("train.py", "--output-format", "sarif", cwd=project).stdout)["runs"][0]
    assert {r["ruleId"]: r["level"] for r in sarif["results"]} == {"DET101": "error", "DET201": "note"}
    rules = {r["id"]: r for r in sarif["tool"]["driver"]["rules"]}
    assert rules["DET105"]["defaultConfiguration"]["level"] == "error"
    assert rules["DET201"]["properties"]["problem.severity"] == "recommendation"
    github = detlint("train.py", "--output-format", "github", cwd=project).stdout.splitlines()
    assert [line.split(" ")[0] for line in github] == ["::error", "::notice"]


def sarif_driver(text: str) -> dict:
    return json.loads(text)["runs"][0]["tool"]["driver"]


def test_urls_are_absolute_and_only_where_configured(project: Path) -> None:
    records = json.loads(detlint("train.py", "--output-format", "json", cwd=project).stdout)
    assert all(r["url"] is None for r in records)
    driver = sarif_driver(detlint("train.py", "--output-format", "sarif", cwd=project).stdout)
    assert "informationUri" not in driver and not any("helpUri" in r for r in driver["rules"])

    base = "https://example.org/detlint/rules.html"
    (project / "pyproject.toml").write_text(f'[tool.detlint]\ndocs-url = "{base}"\n')
    records = json.loads(detlint("train.py", "--output-format", "json", cwd=project).stdout)
    assert {r["url"] for r in records} == {f"{base}#missing-global-seed-det101",
                                           f"{base}#op-determinism-not-enabled-det201"}
    driver = sarif_driver(detlint("train.py", "--output-format", "sarif", cwd=project).stdout)
    assert driver["informationUri"] == base
    assert all(r["helpUri"].startswith(base + "#") for r in driver["rules"])
    (project / "pyproject.toml").write_text('[tool.detlint]\ndocs-url = "docs/rules.md"\n')
    assert detlint("train.py", cwd=project).returncode == 2


# ---- progress, on a terminal only -------------------------------------------------------------------
def run_with_terminal_stderr(*args: str, cwd: Path, **env: str) -> tuple[int, str, str]:
    """detlint with stderr on a pseudo-terminal (as in an interactive shell), stdout a pipe."""
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "detlint", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=slave, env={**os.environ, "NO_COLOR": "1", **env})
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the program closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out = proc.stdout.read().decode() if proc.stdout else ""
    return proc.wait(timeout=120), out, seen.decode(errors="replace")


def test_progress_on_a_terminal_for_long_runs_only(project: Path) -> None:
    many = project / "many"
    many.mkdir()
    for i in range(60):
        (many / f"m{i}.py").write_text(f"x = {i}\n")
    code, out, terminal = run_with_terminal_stderr("many", "--no-cache", cwd=project)
    assert code == 0 and out == "All checks passed!\n"
    assert "checked 60/60 files" in terminal and "\r" in terminal
    code, out, terminal = run_with_terminal_stderr("many", "--no-cache", "--no-progress", cwd=project)
    assert code == 0 and "checked" not in terminal and "files" not in terminal
    # a short run shows nothing; "short" is a time, set here so that a busy machine does not decide
    code, out, terminal = run_with_terminal_stderr("clean.py", cwd=project, DETLINT_PROGRESS_DELAY="3600")
    assert code == 0 and terminal == ""
    code, out, terminal = run_with_terminal_stderr("clean.py", "--no-cache", cwd=project, DETLINT_PROGRESS_DELAY="0")
    assert code == 0 and "checked 1/1 files" in terminal
    piped = detlint("many", "--no-cache", cwd=project)
    assert piped.stderr == "" and piped.stdout == "All checks passed!\n"
    cached = run_with_terminal_stderr("many", "--output-format", "json", cwd=project)
    assert json.loads(cached[1]) == [] and "checked 60/60 files" in cached[2]


def test_stdin_fix_prints_the_fixed_source_and_diff_prints_the_diff(tmp_path: Path) -> None:
    source = 'import os\nos.environ["TF_USE_CUDNN_AUTOTUNE"] = "0"\nos.environ["PYTHONHASHSEED"] = "0"\nprint(os.sep)\n'

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "detlint", "--isolated", "-", *args], input=source,
                              capture_output=True, text=True, cwd=tmp_path)

    fixed = run("--fix")
    assert fixed.stdout == source.replace('os.environ["TF_USE_CUDNN_AUTOTUNE"] = "0"\n', "")
    assert "-:2:1: DET105" in fixed.stderr and "1 fixed, 1 remaining" in fixed.stderr  # fixed lines
    assert fixed.returncode == 1
    only = run("--fix-only", "--unsafe-fixes")
    assert only.stdout == "import os\nprint(os.sep)\n" and only.returncode == 0
    diff = run("--diff", "--stdin-filename", "t.py")
    assert diff.stdout.startswith("--- a/t.py\n+++ b/t.py\n") and '-os.environ["TF_USE_CUDNN_AUTOTUNE"]' in diff.stdout
    assert diff.returncode == 1 and not (tmp_path / "t.py").exists()
