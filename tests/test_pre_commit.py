"""The pre-commit hook, run by real pre-commit against a temporary repository."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

BAD = "import os\nos.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'\n"
GOOD = "import os\nprint(os.getcwd())\n"


def test_manifest_declares_both_hooks() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"detlint", "detlint-fix"}
    for hook in hooks.values():
        assert hook["types_or"] == ["python", "jupyter"]
        assert hook["require_serial"] is True
        assert hook["language"] == "python"
    assert "--fix" in hooks["detlint-fix"]["entry"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_try_repo_fails_on_bad_file_and_passes_on_good(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    (repo / "bad.py").write_text(BAD)
    (repo / "good.py").write_text(GOOD)
    subprocess.run(["git", "add", "."], cwd=repo, check=True, env=env)

    def try_repo(name: str, hook: str = "detlint") -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), hook,
                               "--files", name], cwd=repo, capture_output=True, text=True, env=env, timeout=900)

    bad = try_repo("bad.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "bad.py:2:1: DET203" in bad.stdout
    good = try_repo("good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout

    # the fix hook rewrites the file and so fails the commit, as ruff's does; then it passes
    fixing = try_repo("bad.py", "detlint-fix")
    assert fixing.returncode == 1 and "files were modified by this hook" in fixing.stdout, fixing.stdout
    assert (repo / "bad.py").read_text() == "\n"  # the removed line was all os served
    subprocess.run(["git", "add", "."], cwd=repo, check=True, env=env)
    again = try_repo("bad.py", "detlint-fix")
    assert again.returncode == 0, again.stdout


def readme_yaml_block(marker: str) -> str:
    """The README's ```yaml block that contains ``marker``, as a user would copy it."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"expected one README yaml block with {marker!r}"
    return found[0]


def test_readme_remote_snippet_names_no_tag_that_does_not_exist() -> None:
    config = yaml.safe_load(readme_yaml_block("rev:"))
    repo = config["repos"][0]
    assert (repo["repo"], repo["rev"]) == ("URL", "REV")  # placeholders the text tells the user to fill in
    assert {h["id"] for h in repo["hooks"]} <= {h["id"] for h in yaml.safe_load(
        (ROOT / ".pre-commit-hooks.yaml").read_text())}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_readme_local_hook_runs_the_installed_detlint(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    bin_dir = str(Path(sys.executable).parent)  # where this environment's `detlint` script lives
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    (repo / ".pre-commit-config.yaml").write_text(readme_yaml_block("repo: local"))
    (repo / "bad.py").write_text(BAD)
    (repo / "good.py").write_text(GOOD)
    subprocess.run(["git", "add", "."], cwd=repo, check=True, env=env)

    def run(name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--files", name], cwd=repo,
                              capture_output=True, text=True, env=env, timeout=300)

    bad = run("bad.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "bad.py:2:1: DET203" in bad.stdout
    good = run("good.py")
    assert good.returncode == 0 and "Passed" in good.stdout, good.stdout + good.stderr
