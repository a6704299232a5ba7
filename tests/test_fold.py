"""One finding per cause, as shown: a shuffling loader folds into DET601's missing seed only where
that DET601 is shown (selected, not silenced at its line, sure enough for the output)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import detlint_here

TRAIN = ("import torch\nfrom torch.utils.data import DataLoader\n\n"
         "loader = DataLoader(list(range(8)), batch_size=2, shuffle=True)\n"
         "model = torch.nn.Linear(1, 1){noqa}\n"
         "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
         "for x in loader:\n    opt.zero_grad()\n    model(x.float().unsqueeze(1)).sum().backward()\n    opt.step()\n")


def codes(tmp_path: Path, *args: str, noqa: str = "") -> list[str]:
    (tmp_path / "train.py").write_text(TRAIN.format(noqa=noqa))
    result: subprocess.CompletedProcess[str] = detlint_here(
        ["--no-cache", "--isolated", "--torch-version", "2.4", "train.py", *args], tmp_path)
    return sorted(line.split(": ")[1].split()[0] for line in result.stdout.splitlines() if ": DET" in line)


def test_the_loader_folds_into_the_missing_seed(tmp_path: Path) -> None:
    assert codes(tmp_path) == ["DET601"]


@pytest.mark.parametrize("args, noqa", [(("--ignore", "DET601"), ""), (("--select", "DET606"), ""),
                                        ((), "  # noqa: DET601")])
def test_a_silenced_seed_finding_leaves_the_loader_its_own(tmp_path: Path, args: tuple[str, ...], noqa: str) -> None:
    assert codes(tmp_path, *args, noqa=noqa) == ["DET606"]


def test_a_seed_finding_ignored_for_the_file_leaves_the_loader_its_own(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.detlint]\nper-file-ignores = {"train.py" = ["DET601"]}\n')
    (tmp_path / "train.py").write_text(TRAIN.format(noqa=""))
    result = detlint_here(["--no-cache", "--torch-version", "2.4", "train.py"], tmp_path)
    assert [line.split(": ")[1].split()[0] for line in result.stdout.splitlines() if ": DET" in line] == ["DET606"], \
        result.stdout + result.stderr
