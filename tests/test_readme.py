"""The README's examples, and the `detlint diverge` walkthrough of docs/diverge.md, run as a reader
would run them, with their shown output compared; the README stays short and links the docs pages."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
DIVERGE = (ROOT / "docs" / "diverge.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent  # the environment the README's set-up command made


def env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "TF_CPP_MIN_LOG_LEVEL": "3"}


def fenced_blocks(lang: str = "", text: str = README) -> list[str]:
    """The fenced code blocks of ``text`` (the README unless given) whose info string is ``lang``,
    in order."""
    blocks: list[str] = []
    current: list[str] | None = None
    info = ""
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current, info = [], line[3:].strip()
            else:
                if info == lang:
                    blocks.append("\n".join(current) + "\n")
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def test_the_opening_example_is_what_detlint_prints_on_the_examples() -> None:
    """One finding per framework, each a line `detlint examples/` prints."""
    shown = fenced_blocks()[0].strip().splitlines()
    assert [line.split(":")[0] for line in shown] == [
        "examples/mnist_convnet.py", "examples/torch_train.py", "examples/jax_train.py"]
    proc = subprocess.run(["detlint", "examples/"], cwd=ROOT, capture_output=True, text=True, env=env())
    for line in shown:
        assert line in proc.stdout.splitlines(), proc.stdout


TRAIN = """import numpy as np
import tensorflow as tf

x = np.linspace(0.0, 1.0, 32).reshape(8, 4).astype("float32")
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(x, x[:, :1], epochs=1, verbose=0)
print("trained")
"""


def test_every_command_of_using_it_runs(tmp_path: Path) -> None:
    block = next(b for b in fenced_blocks("sh") if "detlint rule DET201" in b)
    commands = [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
    assert len(commands) >= 9
    (tmp_path / "src").mkdir()
    shutil.copy(ROOT / "examples" / "mnist_convnet.py", tmp_path / "src" / "mnist_convnet.py")
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "t.py").write_text("import os\nos.environ['PYTHONHASHSEED'] = '0'\n")
    for command in commands:
        argv = shlex.split(command.replace("...", "examples"))
        if argv[:3] == ["python", "-m", "detlint"]:
            argv = [sys.executable, *argv[1:3], "src"]
        stdin = (tmp_path / "t.py").read_text() if "-" in argv[1:2] else None
        proc = subprocess.run(argv, cwd=tmp_path, input=stdin, capture_output=True, text=True, env=env(), timeout=600)
        assert proc.returncode in (0, 1), (command, proc.stdout[-2000:], proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and proc.stdout.strip(), (command, proc.stderr[-2000:])
        if argv[0] == "flake8":
            assert ": DET201 " in proc.stdout
        if argv[:2] == ["detlint", "run"]:
            assert proc.stdout.strip() == "trained"


def _normalise(text: str) -> list[str]:
    """Numbers that differ from run to run (the size of a random difference, disk use) go."""
    text = re.sub(r"max \|run 1 - run 2\| = \S+", "max |run 1 - run 2| = N", text)
    text = re.sub(r"disk used per run: .*", "disk used per run: N", text)
    return [line.rstrip() for line in text.strip().splitlines()]


WALKTHROUGH = [b for b in fenced_blocks(text=DIVERGE) if b.startswith("$ detlint diverge")]


@pytest.mark.parametrize("block", WALKTHROUGH, ids=[b.splitlines()[0][2:] for b in WALKTHROUGH])
def test_the_diverge_walkthrough_prints_what_the_readme_shows(block: str) -> None:
    command, *shown = block.strip().splitlines()
    program = next(word for word in command.split() if word.endswith(".py"))
    folder = next(f for f in (ROOT / "tests" / name for name in ("realtf", "realtorch", "realjax"))
                  if (f / program).is_file())
    proc = subprocess.run(shlex.split(command[2:]), cwd=folder, capture_output=True,
                          text=True, env=env(), timeout=600)
    assert _normalise(proc.stdout) == _normalise("\n".join(shown)), proc.stdout + proc.stderr[-2000:]


def test_the_walkthrough_is_there() -> None:
    assert len(WALKTHROUGH) == 9


# ---- the README is a short manual; the rest lives in docs/ pages it links ------------------------
README_MAX_LINES = 250
# the pages the README's long sections moved to (docs/rules.md and docs/kb-evidence.md are generated)
DOCS_PAGES = ["accuracy.md", "performance.md", "versions.md", "programs.md", "runtime.md", "diverge.md",
              "knowledge-base.md", "internals.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_the_readme_is_short() -> None:
    lines = README.count("\n") + (not README.endswith("\n"))
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/"


def test_the_readme_links_every_docs_page() -> None:
    links = set(LINK.findall(README))
    for page in DOCS_PAGES:
        assert (ROOT / "docs" / page).is_file(), page
        assert any(link.split("#")[0] == f"docs/{page}" for link in links), f"README does not link docs/{page}"


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    found: set[str] = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", ["README.md", *(f"docs/{p}" for p in DOCS_PAGES)])
def test_every_relative_link_leads_somewhere(page: str) -> None:
    source = ROOT / page
    for link in LINK.findall(source.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", link):
            continue  # a URL
        target, _, anchor = link.partition("#")
        path = (source.parent / target).resolve() if target else source
        assert path.exists(), f"{page}: {link} leads nowhere"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{page}: {link}: no such heading"


def test_the_quick_start_says_what_the_test_command_costs() -> None:
    """The second command installs the real frameworks: the README says how much and how long,
    and gives the quicker lint-only command."""
    start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "3.1 GB" in start and "on 2 cores the suite then takes 16–20 minutes" in " ".join(start.split())
    assert '-m "not frameworks and not corpus"' in start
