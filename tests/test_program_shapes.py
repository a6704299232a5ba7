"""Program shapes of real repositories, checked end to end with the CLI in a child process: a
checkout that is itself a namespace package (`import vdm.experiment` in vdm/main.py, run as
`python -m vdm.main`), and a training step an object keeps as a wrapped method
(`self.p_train_step = jax.pmap(functools.partial(self.train_step, rng))`)."""
from __future__ import annotations

from test_deep_programs import findings, lint
from test_safety_inputs import project

STEP = '''\
import functools

import jax
import optax


class Experiment:
    def __init__(self, params):
        self.params = params
        self.optimizer = optax.adam(1e-3)
        self.opt_state = self.optimizer.init(params)
        self.p_train_step = functools.partial(self.train_step, 0.5)
        self.p_train_step = jax.pmap(self.p_train_step, "batch")

    def loss(self, params, batch, scale):
        return scale * ((params["w"] * batch) ** 2).sum()

    def train_step(self, scale, params, opt_state, batch):
        grads = jax.grad(self.loss)(params, batch, scale)
        updates, opt_state = self.optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state

    def train(self, batches):
        for batch in batches:
            self.params, self.opt_state = self.p_train_step(self.params, self.opt_state, batch)
'''
MAIN = '''\
import jax.numpy as jnp

import {package}.experiment


def main():
    experiment = {package}.experiment.Experiment({{"w": jnp.ones(3)}})
    experiment.train([jnp.ones(3)] * 4)


if __name__ == "__main__":
    main()
'''
DET701_LINE = 7  # where main() builds the experiment whose kept step trains


def test_a_checkout_that_is_a_namespace_package_and_a_step_kept_as_a_wrapped_method(tmp_path) -> None:
    root = project(tmp_path, {"experiment.py": STEP, "main.py": MAIN.format(package="vdmlike")}, name="vdmlike")
    assert findings(lint(root, "--jax-version", "0.4"), "main.py") == [f"{DET701_LINE}:DET701"]


def test_the_package_name_must_be_the_checkouts_own(tmp_path) -> None:
    """Another name is not this folder, even where a folder of that name sits beside the checkout
    (the folder above is searched for the checkout's own name only): nothing resolves, nothing trains."""
    root = project(tmp_path, {"experiment.py": STEP, "main.py": MAIN.format(package="otherpkg")}, name="vdmlike")
    (tmp_path / "otherpkg").mkdir()
    (tmp_path / "otherpkg" / "experiment.py").write_text(STEP)
    proc = lint(root, "--jax-version", "0.4")
    assert proc.returncode == 0 and "DET701" not in proc.stdout, proc.stdout


def test_a_kept_partial_of_a_method_that_never_trains(tmp_path) -> None:
    """An attribute bound to a partial of a method that only evaluates: calling it trains nothing
    (the alias runs the method it holds, not every method of the class)."""
    step = STEP.replace("functools.partial(self.train_step, 0.5)", "functools.partial(self.loss, scale=0.5)")
    root = project(tmp_path, {"experiment.py": step, "main.py": MAIN.format(package="vdmlike")}, name="vdmlike")
    proc = lint(root, "--jax-version", "0.4")
    assert "DET701" not in proc.stdout, proc.stdout


AUGMENT = '''\
import tensorflow as tf


def upsample(masks):
    return tf.image.resize(masks, (64, 64), method="nearest")


HEADS = {"upsample": upsample}
'''
PLUGIN_TRAIN = '''\
import tensorflow as tf

from tasks import detection
{extra}
tf.keras.utils.set_random_seed(0)
inputs = tf.keras.Input((8,))
model = tf.keras.Model(inputs, detection.head(inputs))
model.compile("sgd", "mse")
model.fit(tf.zeros((4, 8)), tf.zeros((4, 4)))
'''
DETECTION = "import tensorflow as tf\n\n\ndef head(features):\n    return tf.keras.layers.Dense(4)(features)\n"


def test_a_module_no_program_loads_beside_ones_it_imports(tmp_path) -> None:
    """tasks/ has no __init__.py; train.py imports tasks/detection.py, nothing imports
    tasks/segmentation.py (a registered plugin the script never loads): its op is no finding. Named
    in a string the project loads by name (\"tasks.segmentation:upsample\", f\"tasks.{name}\"), it
    may run: its finding stays; a module at the project's root is never left out."""
    files = {"tasks/detection.py": DETECTION, "tasks/segmentation.py": AUGMENT}
    quiet = project(tmp_path, {**files, "train.py": PLUGIN_TRAIN.format(extra="")})
    shown = lint(quiet, "--min-confidence", "possible")
    assert "internal error" not in shown.stderr and "tasks/segmentation.py" not in shown.stdout, shown.stdout
    for extra in ('\nHEAD = "tasks.segmentation:upsample"\n', '\nmodule = f"tasks.{HEAD}"\n'):
        named = project(tmp_path, {**files, "train.py": PLUGIN_TRAIN.format(extra=extra)}, name=f"b{len(extra)}")
        assert findings(lint(named), "tasks/segmentation.py") == ["5:DET202"], extra
    root = project(tmp_path, {"detection.py": DETECTION, "segmentation.py": AUGMENT,
                                    "train.py": PLUGIN_TRAIN.replace("from tasks import", "import").format(extra="")},
                   name="flat")
    assert findings(lint(root), "segmentation.py") == ["5:DET202"]


def test_a_test_file_that_does_not_parse_is_only_a_possible_finding(tmp_path) -> None:
    """A unit test with a syntax error hides nothing a training program runs: its DET001 is
    `possible` (shown with --min-confidence possible); the training script's is shown as before."""
    root = project(tmp_path, {"tests/metrics_test.py": "tmpdir = flags.'/tmp/x'\n",
                              "train.py": "import torch\nmodel = torch.nn.Linear(2, 2\n"})
    assert findings(lint(root), "tests/metrics_test.py") == []
    assert findings(lint(root), "train.py") == ["2:DET001"]
    assert findings(lint(root, "--min-confidence", "possible"), "tests/metrics_test.py") == ["1:DET001"]


PYTHON2_OPS = 'import numpy as np\nimport tensorflow as tf\n\n\ndef linear(name, x, size):\n    print "linear", name, size\n    w = np.random.uniform(-0.1, 0.1, (4, size)).astype(\'float32\')\n    return tf.matmul(x, tf.Variable(w, name=name))\n\n\ndef shapes(path):\n    try:\n        return np.load(path).shape\n    except IOError, e:\n        raise ValueError, "cannot read %s" % path\n'
PYTHON2_TRAIN = 'import os\n\nimport numpy as np\nimport tensorflow as tf\n\nimport ops\n\nos.chmod("log", 0755)\nsteps = 100L\nx = tf.placeholder(tf.float32, [None, 4])\ny = ops.linear("out", x, 1)\nloss = tf.reduce_mean(tf.square(y - tf.random_normal([1])))\ntrain_op = tf.train.AdamOptimizer().minimize(loss)\nwith tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n    for step in xrange(steps):\n        print "step", step\n        sess.run(train_op, {x: np.ones((4, 4))})\n'


def test_a_python2_program_is_checked_as_its_python3_equivalent(tmp_path) -> None:
    """A Python 2 training script and its helper module (print statements, `except E, e:`,
    `raise E, msg`, 0777, 10L) are checked as their Python 3 equivalents: the program's seeds and
    draws are found; only the program's own file says it is Python 2 (DET001), and --fix writes
    nothing into either. (Under flake8, which parses with the running Python, both are E999.)"""
    root = project(tmp_path, {"ops.py": PYTHON2_OPS, "train.py": PYTHON2_TRAIN})
    assert findings(lint(root, "--tf-version", "1.15"), "train.py") == ["11:DET103", "12:DET101"]
    assert findings(lint(root, "--tf-version", "1.15", "--min-confidence", "possible"), "train.py") == [
        "8:DET001", "11:DET103", "12:DET101"]
    assert findings(lint(root, "--tf-version", "1.15", "--min-confidence", "possible"), "ops.py") == []
    before = {name: (root / name).read_bytes() for name in ("ops.py", "train.py")}
    lint(root, "--tf-version", "1.15", "--fix", "--unsafe-fixes")
    assert {name: (root / name).read_bytes() for name in ("ops.py", "train.py")} == before


TEST_NAMED_TRAINING = '''import argparse

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.tensor(np.random.rand(16, 4), dtype=torch.float32)


def test():
    with torch.no_grad():
        return model(x).mean()


for epoch in range(args.epochs):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(test())
'''
UNIT_TEST = '''import unittest

import torch


class ModelTest(unittest.TestCase):
    def test_step(self):
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 4)).sum().backward()
        opt.step()


if __name__ == "__main__":
    unittest.main()
'''
PYTEST_TEST = '''import torch


def test_step():
    model = torch.nn.Linear(4, 1)
    assert model(torch.randn(2, 4)).shape == (2, 1)


model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.randn(2, 4)).sum().backward()
opt.step()
'''


def test_a_training_script_named_like_a_test_is_checked(tmp_path) -> None:
    """`*_test.py`/`test_*.py` name tests by habit, but TCN's `add_test.py` trains (its `test()`
    evaluates): such a file is left out as a test only when its code is a test's (a test framework
    imported, a `test_...` function or a `Test...` class). A folder named `tests` still is."""
    root = project(tmp_path, {"add_test.py": TEST_NAMED_TRAINING, "model_test.py": UNIT_TEST,
                              "test_model.py": PYTEST_TEST, "tests/train_test.py": TEST_NAMED_TRAINING})
    proc = lint(root, "--torch-version", "2.5", "--min-confidence", "possible")
    assert findings(proc, "add_test.py") == ["9:DET601", "11:DET103"], proc.stdout
    assert not [line for line in proc.stdout.splitlines() if not line.startswith(("add_test.py:", "Found", " "))
                and ": DET" in line], proc.stdout


BRANCH_TRAINER = '''import torch


class Trainer:
    def __init__(self, loader):
        self.loader = loader
        self.model = torch.nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), 0.1)

    def train(self):
        for x, y in self.loader:
            loss = (self.model(x) - y).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
'''
BRANCH_MAIN = '''from torch.backends import cudnn

from parameter import *
from trainer import Trainer


def main(config):
    cudnn.benchmark = True
    if config.model == "sagan":
        trainer = Trainer(config.loader)
    elif config.model == "qgan":
        trainer = qgan_trainer(config.loader)
    trainer.train()


if __name__ == "__main__":
    main(get_parameters())
'''
BRANCH_PARAMETER = '''import argparse


def get_parameters():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="sagan")
    return parser.parse_args()
'''


def test_an_object_bound_in_one_arm_of_a_ladder_is_what_a_later_call_reaches(tmp_path) -> None:
    """`trainer = Trainer(...)` in one arm, `trainer = qgan_trainer(...)` (defined nowhere) in
    another: `trainer.train()` after the ladder may run Trainer.train, so the program trains."""
    root = project(tmp_path, {"main.py": BRANCH_MAIN, "trainer.py": BRANCH_TRAINER, "parameter.py": BRANCH_PARAMETER})
    proc = lint(root, "--torch-version", "2.5")
    assert findings(proc, "main.py") == ["8:DET604", "10:DET601"], proc.stdout


EXTENSIONLESS_TRAIN = '''#!/usr/bin/python3
import random

import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.ones(2, 4) * random.uniform(0, 1)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def test_an_executable_python_script_without_a_suffix_is_a_program(tmp_path) -> None:
    """`./train` with `#!/usr/bin/python3` (PyTorch-CycleGAN's README) is found when a folder is
    checked; an executable file without a Python first line, or a script not executable, is not."""
    root = project(tmp_path, {"train": EXTENSIONLESS_TRAIN, "run_all": "#!/bin/sh\npython train\n",
                              "notes": EXTENSIONLESS_TRAIN})
    (root / "train").chmod(0o755)
    (root / "run_all").chmod(0o755)
    proc = lint(root, "--torch-version", "2.5")
    assert findings(proc, "train") == ["6:DET601", "9:DET104"], proc.stdout
    assert not [line for line in proc.stdout.splitlines() if line.startswith(("run_all:", "notes:"))], proc.stdout
