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


VARYING = ("import random\n\nimport numpy as np\nimport torch\n\n"
           "seed = random.randint(1, 10000)\nrandom.seed(seed)\nnp.random.seed(seed)\ntorch.manual_seed(seed)\n"
           "model = torch.nn.Linear(1, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
           "model(torch.ones(1)).sum().backward()\nopt.step()\n")


def test_one_varying_seed_is_one_finding_and_fix_still_fixes_every_seeder(tmp_path: Path) -> None:
    """A seed drawn every run and fed to three seeders: one finding per rule, at the first seeder,
    naming the others of that rule (in the concise line too); --fix --unsafe-fixes still fixes
    all three."""
    (tmp_path / "train.py").write_text(VARYING)
    result = detlint_here(["--no-cache", "--isolated", "--torch-version", "2.4", "train.py"], tmp_path)
    lines = [line for line in result.stdout.splitlines() if ": DET" in line]
    assert [line.split(": ")[0].rsplit(":", 1)[0] + " " + line.split(": ")[1].split()[0] for line in lines] \
        == ["train.py:7 DET106", "train.py:9 DET611"], result.stdout
    assert "the same value also seeds np.random.seed at train.py:8" in lines[0]
    # one rule's findings fold, not another's: ignoring DET106 leaves DET611 as it was
    ignored = detlint_here(["--no-cache", "--isolated", "--torch-version", "2.4", "--ignore", "DET106", "train.py"],
                           tmp_path)
    assert [line.split(": ")[1].split()[0] for line in ignored.stdout.splitlines() if ": DET" in line] == ["DET611"]
    fixed = detlint_here(["--no-cache", "--isolated", "--torch-version", "2.4", "--fix", "--unsafe-fixes",
                          "train.py"], tmp_path)
    text = (tmp_path / "train.py").read_text()
    assert "random.seed(42)" in text and "np.random.seed(42)" in text and "torch.manual_seed(42)" in text, \
        (fixed.stdout, fixed.stderr, text)


def test_ops_fixed_by_one_upgrade_fold_into_one_finding_that_names_each_call_once(tmp_path: Path) -> None:
    """Before TF 1.14 convolution, max-pooling and the layers' bias_add share one fix (an
    upgrade): one DET202 stands for them, naming the others; tf.layers.conv2d matches two of
    these ops (its convolution and its bias) and is named once."""
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\n\ntf.set_random_seed(0)\nx = tf.placeholder(tf.float32, [None, 8, 8, 1])\n"
        "h = tf.nn.conv2d(x, tf.get_variable('w', [3, 3, 1, 4]), [1, 1, 1, 1], 'SAME')\n"
        "h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], 'SAME')\n"
        "h = tf.layers.conv2d(h, 4, 3)\n"
        "train_op = tf.train.AdamOptimizer().minimize(tf.reduce_mean(h))\n")
    result = detlint_here(["--no-cache", "--isolated", "--tf-version", "1.13", "--output-format", "json",
                           "train.py"], tmp_path)
    import json
    found = [d for d in json.loads(result.stdout) if d["code"] == "DET202"]
    assert [d["location"]["row"] for d in found] == [5], found
    assert found[0]["message"].endswith("(also tf.nn.max_pool at line 6, tf.layers.conv2d at line 7 of this file)")
