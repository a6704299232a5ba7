"""Programs a project declares as commands: a console script's module runs its module level and
then the function the command names, as a main guard would; imported elsewhere, it does not."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import detlint_here
from detlint.lint.programs import console_scripts

TRAIN = ("import torch\n\nfrom .model import Net\n\n\ndef train():\n    net = Net()\n"
         "    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n    for x in range(3):\n"
         "        opt.zero_grad()\n        net(torch.ones(1, 4)).sum().backward()\n        opt.step()\n")
MODEL = "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n" \
        "        self.fc = torch.nn.Linear(4, 1)\n\n    def forward(self, x):\n        return self.fc(x)\n"
DECLARATIONS = {
    "setup.py": "from setuptools import setup\nsetup(name='pkg', entry_points={'console_scripts': "
                "['pkg-train = pkg.cli:train']})\n",
    "setup.cfg": "[options.entry_points]\nconsole_scripts =\n    pkg-train = pkg.cli:train\n",
    "pyproject.toml": "[project]\nname = 'pkg'\n[project.scripts]\npkg-train = 'pkg.cli:train'\n",
}


def detlint(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return detlint_here(["--no-cache", "--torch-version", "2.4", *args], project)


def make(tmp_path: Path, declaration: str, layout: str = "") -> Path:
    project = tmp_path / "project"
    package = project / layout / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text(TRAIN)
    (package / "model.py").write_text(MODEL)
    (project / ".git").mkdir()
    if declaration:
        (project / declaration).write_text(DECLARATIONS[declaration])
    return project


@pytest.mark.parametrize("declaration", sorted(DECLARATIONS))
def test_a_declared_command_is_a_program(tmp_path: Path, declaration: str) -> None:
    project = make(tmp_path, declaration)
    result = detlint(project, ".")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if ": DET" in line]
    assert lines and lines[0].startswith("pkg/cli.py:7:") and "DET601" in lines[0], result.stdout
    assert "pkg/model.py:7" in lines[0]


def test_without_a_declaration_the_module_is_a_library(tmp_path: Path) -> None:
    result = detlint(make(tmp_path, ""), ".")
    assert result.returncode == 0 and "DET6" not in result.stdout, result.stdout


def test_a_src_layout_and_what_is_not_a_project_module(tmp_path: Path) -> None:
    project = make(tmp_path, "pyproject.toml", layout="src")
    (project / "pyproject.toml").write_text(
        "[project]\nname = 'pkg'\n[project.scripts]\npkg-train = 'pkg.cli:train'\nother = 'numpy.f2py:main'\n"
        "broken = 'no colon here'\n[tool.poetry.scripts]\npoetry-train = 'pkg.model:Net'\n")
    assert console_scripts.declared(project) == {
        (project / "src/pkg/cli.py").resolve(): ["train"], (project / "src/pkg/model.py").resolve(): ["Net"]}


def test_unreadable_declarations_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("setup(entry_points={'console_scripts': [f'x = {name}']})\n(")
    (tmp_path / "setup.cfg").write_text("[options.entry_points\nconsole_scripts = x = a:b\n")
    (tmp_path / "pyproject.toml").write_text("[project.scripts\n")
    assert console_scripts.declared(tmp_path) == {}


def test_imported_elsewhere_the_command_does_not_run(tmp_path: Path) -> None:
    """Another program importing the command module runs its module level only (train() is the
    command's, not the importer's)."""
    project = make(tmp_path, "setup.cfg")
    (project / "evaluate.py").write_text("from pkg.cli import train\n\nif __name__ == '__main__':\n    print(train)\n")
    result = detlint(project, ".")
    lines = [line for line in result.stdout.splitlines() if ": DET" in line]
    assert lines and all(line.startswith("pkg/cli.py") for line in lines), result.stdout


@pytest.mark.parametrize("setup_py", [
    "setup(entry_points={'console_scripts': None})\n",
    "setup(entry_points={'console_scripts': 5})\n",
    "setup(entry_points={'console_scripts': ['up = ..:main', 'x = a..b:main']})\n",
])
def test_odd_declarations_declare_nothing(tmp_path: Path, setup_py: str) -> None:
    (tmp_path / "setup.py").write_text(setup_py)
    assert console_scripts.declared(tmp_path) == {}


def test_a_name_too_long_for_the_file_system_and_a_bom(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[project.scripts]\nfoo = '{'a' * 300}:main'\n")
    assert console_scripts.declared(tmp_path) == {}
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / "cli.py").write_text("def main():\n    pass\n")
    (tmp_path / "setup.py").write_bytes(b"\xef\xbb\xbfsetup(entry_points={'console_scripts': ['c = cli:main']})\n")
    assert console_scripts.declared(tmp_path) == {(tmp_path / "cli.py").resolve(): ["main"]}
