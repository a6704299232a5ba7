"""Replays (detlint/replay.py): a check run again with nothing changed prints the stored report, and
any change to what the check read (a file, a folder's entries, a configuration, git's ignore rules,
the cache folder, the arguments, the environment) runs it afresh. Real subprocesses, as a
pre-commit hook runs detlint; each test has its own user cache.

A stored report is recognised by replacing its text with a marker: the marker printed means the
report was replayed; the real report means the check ran."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MARKER = "REPLAYED-REPORT\n"
TRAIN = """import torch

model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(list(range(8)), shuffle=True)
for x in loader:
    opt.zero_grad()
    model(x.float().unsqueeze(1).repeat(1, 4)).sum().backward()
    opt.step()
"""
SEEDED = "import torch\ntorch.manual_seed(0)\n" + TRAIN.split("\n", 1)[1]


def detlint(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "XDG_CACHE_HOME": str(project.parent / "user-cache"), "NO_COLOR": "1", **(env or {})}
    full.pop("PYTEST_CURRENT_TEST", None)
    return subprocess.run([sys.executable, "-m", "detlint", *args], cwd=project, capture_output=True, text=True,
                          env=full, timeout=300)


def entries(project: Path) -> list[Path]:
    return sorted((project.parent / "user-cache" / "detlint" / "replay").glob("*.json"))


def mark(project: Path) -> None:
    """The stored reports say MARKER instead of what the check found."""
    for path in entries(project):
        entry = json.loads(path.read_text())
        entry["output"] = [["stdout", MARKER]]
        path.write_text(json.dumps(entry))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text(TRAIN)
    (root / "utils.py").write_text("def helper():\n    return 1\n")
    first = detlint(root, ".")
    assert first.returncode == 1 and "DET" in first.stdout, first.stdout + first.stderr
    assert len(entries(root)) == 1
    mark(root)
    return root


def test_nothing_changed_replays_the_report_and_exit_status(project: Path) -> None:
    again = detlint(project, ".")
    assert (again.returncode, again.stdout) == (1, MARKER)


def test_an_edited_file_is_checked_again(project: Path) -> None:
    (project / "train.py").write_text(SEEDED)
    again = detlint(project, ".")
    assert (again.returncode, again.stdout) == (0, "All checks passed!\n")


def test_a_new_file_in_a_checked_folder_is_checked(project: Path) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "more.py").write_text(TRAIN)
    again = detlint(project, ".")
    assert again.stdout != MARKER and "more.py" in again.stdout


def test_a_module_the_program_imports_is_an_input_when_one_file_is_named(tmp_path: Path) -> None:
    """pre-commit names the changed files; the program model reads the modules they import."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text("import torch\nfrom setup_seed import setup\n\nsetup()\n" + TRAIN.split("\n", 1)[1])
    (root / "setup_seed.py").write_text("def setup():\n    pass\n")
    first = detlint(root, "train.py")
    assert first.returncode == 1, first.stdout + first.stderr
    mark(root)
    assert detlint(root, "train.py").stdout == MARKER
    (root / "setup_seed.py").write_text("import torch\n\n\ndef setup():\n    torch.manual_seed(0)\n")
    again = detlint(root, "train.py")
    assert again.stdout != MARKER
    assert "DET101" not in again.stdout  # the seed the helper now sets is seen


def test_configuration_pins_and_cache_folder_are_inputs(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.detlint]\nignore = ["DET"]\n')
    quiet = detlint(project, ".")
    assert (quiet.returncode, quiet.stdout) == (0, "All checks passed!\n")
    mark(project)
    assert detlint(project, ".").stdout == MARKER
    (project / "requirements.txt").write_text("torch==1.8.0\n")
    assert detlint(project, ".").stdout != MARKER
    mark(project)
    assert detlint(project, ".").stdout == MARKER
    import shutil

    shutil.rmtree(project / ".detlint_cache")
    assert detlint(project, ".").stdout != MARKER


def test_arguments_environment_and_terminals_are_part_of_the_key(project: Path) -> None:
    assert detlint(project, ".", "--select", "DET1").stdout != MARKER
    assert detlint(project, ".", env={"DETLINT_SOME_SETTING": "1"}).stdout != MARKER
    assert detlint(project, ".").stdout == MARKER


def test_gitignore_rules_are_inputs(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text(TRAIN)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    assert detlint(root, ".").returncode == 1
    mark(root)
    assert detlint(root, ".").stdout == MARKER
    (root / ".gitignore").write_text("train.py\n")
    again = detlint(root, ".")
    assert again.stdout != MARKER and "train.py" not in again.stdout


@pytest.mark.parametrize("args", [["--no-cache", "."], ["--fix", "."], ["--diff", "."], ["-o", "report.txt", "."],
                                  ["-"]])
def test_checks_that_write_or_read_stdin_are_never_replayed(tmp_path: Path, args: list[str]) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text(TRAIN)
    full = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "user-cache"), "NO_COLOR": "1"}
    subprocess.run([sys.executable, "-m", "detlint", *args], cwd=root, capture_output=True, env=full,
                   input=TRAIN.encode(), timeout=300)
    assert entries(root) == []


def test_a_tampered_entry_is_not_used(project: Path) -> None:
    for path in entries(project):
        path.write_text('{"format": 2, "key": "other", "code": 0, "output": [["stdout", "x"]], "inputs": {}}')
    again = detlint(project, ".")
    assert again.returncode == 1 and "DET" in again.stdout


def test_files_read_by_the_background_era_scan_are_inputs(tmp_path: Path) -> None:
    """The TensorFlow era of an unpinned project is read from all its files, in a forked child:
    those reads are inputs as much as the parent's."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text("import tensorflow as tf\n\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(8, 3)])\n"
                                   "model.compile(optimizer='adam', loss='mse')\nmodel.fit(x, y)\n")
    graph_code = "import tensorflow as tf\nx = tf.placeholder(tf.float32)\nsess = tf.Session()\n"
    for n in range(3):
        (root / f"legacy{n}.py").write_text(graph_code)
    first = detlint(root, "train.py")
    assert "TF 1.15" in first.stdout, first.stdout + first.stderr
    mark(root)
    assert detlint(root, "train.py").stdout == MARKER
    for n in range(3):
        (root / f"legacy{n}.py").write_text("import tensorflow as tf\nx = 1\n")
    again = detlint(root, "train.py")
    assert again.stdout != MARKER and "TF 1.15" not in again.stdout, again.stdout


# ---- what a review of the first version found -------------------------------------------------------

def test_a_cache_folder_holding_the_project_is_never_recorded(tmp_path: Path) -> None:
    """`cache-dir = "."` makes the project its own cache folder, whose reads are not inputs: such a
    check is not recorded (a replay would not see edits)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.detlint]\ncache-dir = "."\n')
    (root / "train.py").write_text(TRAIN)
    assert detlint(root, ".").returncode == 1
    assert detlint(root, ".").returncode == 1
    assert entries(root) == []
    (root / "train.py").write_text(SEEDED)
    assert detlint(root, ".").stdout == "All checks passed!\n"


def test_a_size_that_decides_whether_a_file_is_read_is_an_input(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text(TRAIN + "# " + "x" * 3000 + "\n")
    first = detlint(root, "--max-file-size", "1", "train.py")
    assert "too large to check" in first.stdout, first.stdout + first.stderr
    mark(root)
    assert detlint(root, "--max-file-size", "1", "train.py").stdout == MARKER
    (root / "train.py").write_text(TRAIN)  # now under the limit: read, and checked
    again = detlint(root, "--max-file-size", "1", "train.py")
    assert "DET601" in again.stdout and "too large" not in again.stdout


def test_a_file_the_parser_gave_up_on_is_neither_replayed_nor_cached(tmp_path: Path) -> None:
    slow = "DATA = [\n" + "".join(f"    ({i}, {i * 0.5}, 'v{i}'),\n" for i in range(6_000)) + "]\n"
    root = tmp_path / "project"
    root.mkdir()
    (root / "a_slow.py").write_text(slow)
    first = detlint(root, "--file-timeout", "0.3", "-j", "1", ".")
    assert "too slow to check" in first.stdout, first.stdout + first.stderr
    assert entries(root) == []
    again = detlint(root, ".")  # the default limit: checked now, not read back from the cache as too slow
    assert "a_slow.py" not in again.stdout, again.stdout


def test_a_replay_writes_stdout_and_stderr_in_their_order(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("tool = 1\n")  # a warning on stderr, before the findings
    (root / "train.py").write_text(TRAIN)
    merged = [sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.call("
              "[sys.executable, '-m', 'detlint', '.'], stderr=subprocess.STDOUT))"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "user-cache"), "NO_COLOR": "1"}
    first = subprocess.run(merged, cwd=root, capture_output=True, text=True, env=env, timeout=300)
    assert "warning" in first.stdout and first.stdout.index("warning") < first.stdout.index("DET601"), first.stdout
    assert len(entries(root)) == 1
    again = subprocess.run(merged, cwd=root, capture_output=True, text=True, env=env, timeout=300)
    assert again.stdout == first.stdout


def test_the_repositorys_own_excludes_file_is_an_input(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "train.py").write_text(TRAIN)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    excludes = tmp_path / "excludes"
    excludes.write_text("")
    subprocess.run(["git", "config", "core.excludesFile", str(excludes)], cwd=root, check=True)
    assert detlint(root, ".").returncode == 1
    mark(root)
    assert detlint(root, ".").stdout == MARKER
    excludes.write_text("pkg/\n")
    assert detlint(root, ".").stdout != MARKER


def test_an_input_that_changes_while_the_run_goes_on_refuses_the_snapshot(tmp_path: Path) -> None:
    from detlint import run_inputs

    probed, opened, listed = tmp_path / "probed", tmp_path / "opened", tmp_path / "listed"
    opened.write_text("a")
    listed.mkdir()
    for change in (lambda: probed.write_text("now here"), lambda: opened.write_text("bb"),
                   lambda: (listed / "new").write_text("")):
        with run_inputs.recording() as journal:
            probed.exists()
            opened.read_text()
            os.listdir(listed)
        assert journal.snapshot() is not None
        with run_inputs.recording() as journal:
            probed.exists()
            opened.read_text()
            os.listdir(listed)
            change()
        assert journal.snapshot() is None


def test_the_stat_wrapper_keeps_what_os_says_it_supports() -> None:
    from detlint import run_inputs

    with run_inputs.recording():
        assert os.stat in os.supports_dir_fd and os.stat in os.supports_follow_symlinks
    assert os.stat in os.supports_dir_fd and len([f for f in os.supports_dir_fd if f.__name__ == "probe"]) == 0
