"""How sure each finding is (certain, likely, possible): in JSON, SARIF and the one-line formats,
the default (--min-confidence likely) hiding what no program was seen to run, flake8 agreeing."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import detlint_here

TRAIN = """\
import torch
import models
from layers import blocks

net = getattr(models, NAME)().cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x, y in batches:
    opt.zero_grad()
    torch.nn.functional.cross_entropy(blocks.head(net(x)), y).backward()
    opt.step()
"""
MODELS = """\
import torch


def small():
    return torch.nn.Conv2d(3, 8, 3)


def large():
    return torch.nn.Conv2d(3, 64, 3)
"""
# head() is what the program runs; upsample() nothing in the project names
BLOCKS = """\
import torch


def head(x):
    return x.mean((2, 3))


def upsample(x):
    return torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear")
"""
DIRECT = """\
import torch

net = torch.nn.Conv2d(3, 8, 3).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x, y in batches:
    opt.zero_grad()
    net(x).sum().backward()
    opt.step()
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.detlint]\ntorch-version = \"2.0\"\n")
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "direct.py").write_text(DIRECT)
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "layers").mkdir()
    (tmp_path / "layers" / "__init__.py").write_text("")
    (tmp_path / "layers" / "blocks.py").write_text(BLOCKS)
    return tmp_path


def findings(project: Path, *args: str) -> list[dict]:
    run = detlint_here(("--output-format", "json", "--no-cache", *args, "."), project, None, None)
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout)


def by_place(records: list[dict]) -> dict[tuple[str, int, str], dict]:
    return {(Path(r["filename"]).name, r["location"]["row"], r["code"]): r for r in records}


def test_each_level_with_its_reason(project: Path) -> None:
    every = by_place(findings(project, "--min-confidence", "possible"))
    # every link resolved: the program builds the convolution itself
    assert every[("direct.py", 3, "DET601")]["confidence"] == "certain"
    assert every[("direct.py", 3, "DET601")]["unsure"] is None
    # the model is one of two functions looked up by name: the finding assumes one of them runs
    chosen = every[("train.py", 5, "DET602")]
    assert chosen["confidence"] == "likely" and "one of 2 callables of models" in chosen["unsure"]
    # nothing in the project calls upsample(): its backward may never run
    helper = every[("blocks.py", 9, "DET603")]
    assert helper["confidence"] == "possible" and helper["unsure"] == "nothing in the project calls upsample"


def test_a_program_that_never_uses_a_gpu_gets_possible_gpu_findings(project: Path) -> None:
    (project / "direct.py").write_text(DIRECT.replace(".cuda()", ""))
    every = by_place(findings(project, "--min-confidence", "possible"))
    cpu = every[("direct.py", 3, "DET602")]
    assert cpu["confidence"] == "possible"
    assert cpu["unsure"] == "the program never moves a model or tensor to a GPU: PyTorch then runs no CUDA kernel"
    assert ("direct.py", 3, "DET602") not in by_place(findings(project))
    assert every[("direct.py", 3, "DET601")]["confidence"] == "certain"  # seeds matter on the CPU too


TF1_DENSE = """\
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 4])
y = tf.layers.dense(x, 1)
train = tf.train.AdamOptimizer(1e-3).minimize(tf.reduce_mean(tf.square(y)))
with tf.Session() as sess:
    sess.run(train, {x: [[1.0, 2.0, 3.0, 4.0]]})
"""
KERAS_CONV = """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Conv2D(8, 3), tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
model.compile("adam", "mse")
model.fit(tf.random.normal([8, 8, 8, 3]), tf.zeros([8, 1]))
"""


@pytest.mark.parametrize("code, pin, gpu", [
    (TF1_DENSE, "tensorflow>=1.8.0,<2.0", False),  # checked as 1.13: a wheel without CUDA
    (TF1_DENSE, "tensorflow-gpu>=1.8.0,<2.0", True),
    (TF1_DENSE, "tensorflow==1.15", True),  # the tensorflow package has CUDA from 1.15 ...
    (KERAS_CONV, "tensorflow==2.0.0", False),  # ... but not at 2.0
    (KERAS_CONV, "tensorflow==2.4", True),
    (KERAS_CONV, "tensorflow_cpu==2.4", False),
])
def test_a_pinned_package_without_gpu_kernels_makes_gpu_findings_possible(tmp_path: Path, code: str, pin: str,
                                                                           gpu: bool) -> None:
    (tmp_path / "train.py").write_text(code)
    (tmp_path / "requirements.txt").write_text(pin + "\n")
    every = findings(tmp_path, "--min-confidence", "possible")
    gpu_rules = [r for r in every if r["code"] in ("DET201", "DET202")]
    assert len(gpu_rules) == 1, every
    (finding,) = gpu_rules
    if gpu:
        assert finding["confidence"] == "certain", finding
    else:
        assert finding["confidence"] == "possible", finding
        assert finding["unsure"].startswith("the TensorFlow package the project pins for this version is built "
                                            "without GPU kernels")
        assert finding["code"] not in {r["code"] for r in findings(tmp_path)}  # hidden by default
    seed = [r for r in every if r["code"] == "DET101"]
    assert seed and seed[0]["confidence"] == "certain"  # seeds matter on the CPU too


JAX_STEP = """\
import jax
import jax.numpy as jnp
import optax

tx = optax.sgd(0.1)
params = {"w": jnp.zeros((4, 1))}
state = tx.init(params)
for _ in range(3):
    grads = jax.grad(lambda p: jnp.mean((jnp.ones((8, 4)) @ p["w"]) ** 2))(params)
    updates, state = tx.update(grads, state)
    params = optax.apply_updates(params, updates)
"""


@pytest.mark.parametrize("pin, tpu", [
    ("jax[tpu]==0.4.14 -f https://storage.googleapis.com/jax-releases/libtpu_releases.html", True),
    ("jax[cuda12]==0.4.30", False),
    ("jax==0.4.30", False),
])
def test_a_project_installing_jax_for_tpus_gets_xla_gpu_findings_as_possible(tmp_path: Path, pin: str,
                                                                              tpu: bool) -> None:
    (tmp_path / "train.py").write_text(JAX_STEP)
    (tmp_path / "requirements.txt").write_text(pin + "\n")
    (finding,) = [r for r in findings(tmp_path, "--min-confidence", "possible") if r["code"] == "DET701"]
    if tpu:
        assert finding["confidence"] == "possible", finding
        assert finding["unsure"].startswith("the project installs JAX for TPUs (jax[tpu])")
    else:
        assert finding["confidence"] == "certain", finding


def test_default_hides_what_only_may_run(project: Path) -> None:
    shown = by_place(findings(project))
    assert ("blocks.py", 9, "DET603") not in shown
    assert {("direct.py", 3, "DET601"), ("train.py", 5, "DET602")} <= set(shown)
    certain_only = by_place(findings(project, "--min-confidence", "certain"))
    assert ("direct.py", 3, "DET601") in certain_only and ("train.py", 5, "DET602") not in certain_only


def test_configured_minimum(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.detlint]\ntorch-version = \"2.0\"\nmin-confidence = \"possible\"\n")
    assert ("blocks.py", 9, "DET603") in by_place(findings(project))
    (project / "pyproject.toml").write_text("[tool.detlint]\nmin-confidence = \"sure\"\n")
    bad = detlint_here((".",), project, None, None)
    assert bad.returncode == 2 and "min-confidence must be one of certain, likely, possible" in bad.stderr


def test_concise_marks_and_sarif_ranks(project: Path) -> None:
    concise = detlint_here(("--no-cache", "train.py"), project, None, None).stdout
    line = next(text for text in concise.splitlines() if "DET602" in text)
    assert line.endswith(" [likely]")  # the reason is in the full output
    full = detlint_here(("--no-cache", "--output-format", "full", "train.py"), project, None, None).stdout
    assert any(text.strip().startswith("= why: ") and
               text.endswith("[likely: assumes the program runs it: one of 2 callables of models]")
               for text in full.splitlines()), full
    sarif = json.loads(detlint_here(("--no-cache", "--output-format", "sarif", "--min-confidence", "possible", "."),
                                    project, None, None).stdout)
    results = sarif["runs"][0]["results"]
    ranks = {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["ruleId"]):
             (r["rank"], r["properties"]["confidence"]) for r in results}
    assert ranks[("direct.py", "DET601")] == (90.0, "certain")
    assert ranks[("train.py", "DET602")] == (60.0, "likely")
    assert ranks[("layers/blocks.py", "DET603")] == (30.0, "possible")


def test_flake8_agrees(project: Path) -> None:
    def flake8(*extra: str) -> set[tuple[str, int, str]]:
        run = subprocess.run([sys.executable, "-m", "flake8", "--select", "DET", "--detlint-torch-version", "2.0",
                              *extra, "."], cwd=project, capture_output=True, text=True)
        return {(Path(p).name, int(line), rest.split()[0]) for p, line, _, rest in
                (text.split(":", 3) for text in run.stdout.splitlines())}

    cli = set(by_place(findings(project)))
    assert flake8() == cli
    assert ("blocks.py", 9, "DET603") in flake8("--detlint-min-confidence", "possible")


def test_a_seed_the_program_never_runs_leaves_the_finding_likely() -> None:
    from conftest import FIXTURES, lint_paths

    base = FIXTURES / "programs" / "seed_defined_not_run"
    diags = lint_paths(sorted(base.glob("*.py")), "2.21", **{"torch-version": "2.4"})
    (det601,) = [d for d in diags if d.code == "DET601"]
    assert det601.path.endswith("train.py") and det601.confidence == "likely"
    assert det601.unsure.startswith("assumes torch.manual_seed at ") and "common.py:5" in det601.unsure


def test_findings_that_rest_on_a_spelled_class_are_likely() -> None:
    from conftest import FIXTURES, lint_paths

    base = FIXTURES / "programs" / "spelled_class"
    diags = lint_paths(sorted(base.glob("*.py")), "2.21", **{"torch-version": "2.4"})
    (det604,) = [d for d in diags if d.code == "DET604"]
    assert det604.path.endswith("train.py") and det604.confidence == "likely"
    assert det604.unsure == "assumes trainer is a Trainer (trainer.py)"


UNUSED_TRAIN = """\
import torch
from nets import Net, Losses

net = Net().cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x, y in batches:
    opt.zero_grad()
    Losses().mse(net(x), y).backward()
    opt.step()
"""
# Losses.ce and Net.pad2 are never used; Net.forward is called by nn.Module, unnamed
UNUSED_NETS = """\
import torch


class Losses:
    def mse(self, a, b):
        return ((a - b) ** 2).mean()

    def ce(self, a, b):
        return torch.nn.functional.nll_loss(torch.nn.functional.interpolate(a, scale_factor=2, mode="bilinear"), b)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.pad1 = torch.nn.ReplicationPad1d((0, 2))
        self.pad2 = torch.nn.ReplicationPad1d((0, 2))

    def forward(self, x):
        return torch.nn.functional.interpolate(self.pad1(self.conv(x)), scale_factor=2, mode="bilinear")
"""


def test_code_nothing_in_the_project_runs_is_possible(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.detlint]\ntorch-version = \"2.0\"\n")
    (tmp_path / "train.py").write_text(UNUSED_TRAIN)
    (tmp_path / "nets.py").write_text(UNUSED_NETS)
    every = by_place(findings(tmp_path, "--min-confidence", "possible"))
    # a method of a class with no library base, named after a dot or in a string nowhere
    ce = every[("nets.py", 9, "DET603")]
    assert ce["confidence"] == "possible" and ce["unsure"] == "nothing in the project calls Losses.ce"
    # a module stored on self whose attribute nothing names again
    pad2 = every[("nets.py", 17, "DET603")]
    assert pad2["confidence"] == "possible" and pad2["unsure"] == "nothing in the project uses self.pad2"
    # used: the module called in forward, and forward itself (nn.Module calls it)
    assert every[("nets.py", 16, "DET603")]["confidence"] == "certain"
    assert every[("nets.py", 20, "DET603")]["confidence"] == "certain"
    default = by_place(findings(tmp_path))
    assert ("nets.py", 9, "DET603") not in default and ("nets.py", 17, "DET603") not in default

    # named after all: by a string (getattr), by another file, or a library base that may call it
    (tmp_path / "eval.py").write_text("import nets\nfn = getattr(nets.Losses(), 'ce')\nprint(nets.Net().pad2)\n")
    named = by_place(findings(tmp_path, "--min-confidence", "possible"))
    assert named[("nets.py", 9, "DET603")]["confidence"] != "possible"
    assert named[("nets.py", 17, "DET603")]["confidence"] == "certain"
    (tmp_path / "eval.py").unlink()
    # an nn.Module calls forward, extra_repr, train, ... (KB library-hooks), never ce
    (tmp_path / "nets.py").write_text(UNUSED_NETS.replace("class Losses:", "class Losses(torch.nn.Module):"))
    module = by_place(findings(tmp_path, "--min-confidence", "possible"))
    assert module[("nets.py", 9, "DET603")]["unsure"] == "nothing in the project calls Losses.ce"
    # ... but a hook is called unnamed, and a base the knowledge base does not describe may call anything
    (tmp_path / "nets.py").write_text(UNUSED_NETS.replace("class Losses:", "class Losses(torch.nn.Module):")
                                      .replace("def ce(", "def extra_repr("))
    hook = by_place(findings(tmp_path, "--min-confidence", "possible"))
    assert hook[("nets.py", 9, "DET603")]["confidence"] != "possible"
    (tmp_path / "nets.py").write_text(UNUSED_NETS.replace("class Losses:", "class Losses(torch.nn.Linear):"))
    inherited = by_place(findings(tmp_path, "--min-confidence", "possible"))
    assert inherited[("nets.py", 9, "DET603")]["confidence"] != "possible"
    # a project subclass that adds such a base (a mixin): that library may call the method
    (tmp_path / "nets.py").write_text(UNUSED_NETS + "\n\nclass Mixed(Losses, torch.nn.Linear):\n    pass\n")
    mixed = by_place(findings(tmp_path, "--min-confidence", "possible"))
    assert mixed[("nets.py", 9, "DET603")]["confidence"] != "possible"
    # called without its name after a dot: an alias in the class body, a lookup by a computed
    # name, a decorator that may keep it
    for changed in (UNUSED_NETS.replace("    def mse(", "    __call__ = ce\n\n    def mse("),
                    UNUSED_NETS + "\n\ndef pick(losses, kind):\n    return losses.run(kind)\n",
                    UNUSED_NETS.replace("        return ((a - b)", "        getattr(self, 'c' + 'e')\n        return ((a - b)"),
                    UNUSED_NETS.replace("    def ce(", "    @keep\n    def ce(").replace("import torch\n", "import torch\nkeep = list\n", 1)):
        (tmp_path / "nets.py").write_text(changed)
        line = 9 + changed.count("\n", 0, changed.index("def ce(")) - UNUSED_NETS.count("\n", 0, UNUSED_NETS.index("def ce("))
        kept = by_place(findings(tmp_path, "--min-confidence", "possible"))[("nets.py", line, "DET603")]
        assert (kept["confidence"] == "possible") == ("pick(" in changed), changed
    # a module whose submodules another file iterates: its attributes may all run
    (tmp_path / "nets.py").write_text(UNUSED_NETS)
    (tmp_path / "features.py").write_text("import torch\nfrom nets import Net\n"
                                          "trunk = torch.nn.Sequential(*list(Net().children()))\n")
    assert by_place(findings(tmp_path, "--min-confidence", "possible"))[("nets.py", 17, "DET603")][
        "confidence"] != "possible"


DEFAULT_AUGMENT = """\
from numpy.random import default_rng


def random_flip(data, rng=default_rng()):
    flip = rng.random(size=data.shape[:1]) < 0.5
    data[flip] = data[flip, ::-1]
    return data
"""
DEFAULT_TRAIN = """\
import numpy as np
import torch
from augment import random_flip

torch.manual_seed(0)
rng = np.random.default_rng(0)
net = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
data = np.zeros((8, 4), dtype=np.float32)
for step in range(10):
    x = torch.from_numpy(random_flip(data, rng=rng))
    opt.zero_grad()
    net(x).sum().backward()
    opt.step()
"""


def test_a_default_every_call_overrides_is_possible(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.detlint]\ntorch-version = \"2.0\"\n")
    (tmp_path / "augment.py").write_text(DEFAULT_AUGMENT)
    (tmp_path / "train.py").write_text(DEFAULT_TRAIN)
    every = by_place(findings(tmp_path, "--min-confidence", "possible"))
    unseeded = every[("augment.py", 4, "DET103")]
    assert unseeded["confidence"] == "possible" and unseeded["unsure"] == "every call of random_flip passes rng"
    assert ("augment.py", 4, "DET103") not in by_place(findings(tmp_path))
    # by position too
    (tmp_path / "train.py").write_text(DEFAULT_TRAIN.replace("rng=rng", "rng"))
    assert by_place(findings(tmp_path, "--min-confidence", "possible"))[("augment.py", 4, "DET103")][
        "confidence"] == "possible"
    # one call that keeps the default, the function handed on as a value, or named in a string:
    # the default may be used
    for extra in ("random_flip(data)\n", "fns = [random_flip]\n", "fn = getattr(augment, 'random_flip')\n",
                  "from augment import random_flip as flip\nflip(data)\n"):
        (tmp_path / "eval.py").write_text("import augment\nfrom augment import random_flip\ndata = None\n" + extra)
        kept = by_place(findings(tmp_path, "--min-confidence", "possible"))[("augment.py", 4, "DET103")]
        assert kept["confidence"] != "possible", extra


REEXPORT_LAYERS = """\
import torch


class Plain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


class Fancy(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear")
"""
REEXPORT_TRAIN = """\
import torch
from pkg import Plain

torch.manual_seed(0)
net = Plain().cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x, y in batches:
    opt.zero_grad()
    torch.nn.functional.mse_loss(net(x), y).backward()
    opt.step()
"""


def test_a_class_only_a_package_init_re_exports_is_possible(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.detlint]\ntorch-version = \"2.0\"\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .layers import (\n    Fancy,\n    Plain,\n)\n")
    (tmp_path / "pkg" / "layers.py").write_text(REEXPORT_LAYERS)
    (tmp_path / "train.py").write_text(REEXPORT_TRAIN)
    fancy = by_place(findings(tmp_path, "--min-confidence", "possible"))[("layers.py", 15, "DET603")]
    assert fancy["confidence"] == "possible", fancy
    # a training program that uses it: then it may run
    (tmp_path / "train.py").write_text(REEXPORT_TRAIN.replace("from pkg import Plain", "from pkg import Plain, Fancy")
                                       + "print(Fancy)\n")
    used = by_place(findings(tmp_path, "--min-confidence", "possible"))[("layers.py", 15, "DET603")]
    assert used["confidence"] == "likely" and "train.py names it" in used["unsure"], used
    # imported under another name: used too
    (tmp_path / "train.py").write_text(REEXPORT_TRAIN.replace("from pkg import Plain", "from pkg import Plain, Fancy as Up")
                                       + "print(Up)\n")
    aliased = by_place(findings(tmp_path, "--min-confidence", "possible"))[("layers.py", 15, "DET603")]
    assert aliased["confidence"] == "likely", aliased


FLAG_GRAPHS = """\
import numpy as np


class Graphs:
    def __init__(self, name, shuffled=False, scale=1.0):
        self.name = name
        self.shuffled = shuffled
        self.scale = scale

    def read(self):
        order = np.arange(10)
        if self.shuffled:
            np.random.shuffle(order)
        return order


class SmallGraphs(Graphs):
    def __init__(self, shuffled=False, **kwargs):
        super().__init__("small", shuffled=shuffled, **kwargs)
"""
FLAG_TRAIN = """\
import numpy as np
import tensorflow as tf

from graphs import Graphs, SmallGraphs

tf.random.set_seed(0)
order = Graphs("cora", scale=2.0).read()
more = SmallGraphs().read()
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(np.zeros((10, 3)), np.zeros((10, 1)), shuffle=False)
"""


def test_a_flag_no_construction_sets_is_off(tmp_path: Path) -> None:
    """`if self.shuffled:` where shuffled is a constructor parameter defaulting to False that no
    construction of the class (or of a subclass keeping a False default) passes: not run."""
    (tmp_path / "pyproject.toml").write_text("[tool.detlint]\ntensorflow-version = \"2.15\"\n")
    (tmp_path / "graphs.py").write_text(FLAG_GRAPHS)
    (tmp_path / "train.py").write_text(FLAG_TRAIN)
    shuffle = by_place(findings(tmp_path, "--min-confidence", "possible"))[("train.py", 7, "DET103")]
    assert shuffle["confidence"] == "possible" and "graphs.py:13" in shuffle["unsure"], shuffle
    assert ("train.py", 7, "DET103") not in by_place(findings(tmp_path))
    # a construction that turns it on, by keyword, by position, or through the subclass
    for turned_on in ('Graphs("cora", shuffled=True', 'Graphs("cora", True', 'SmallGraphs(shuffled=True'):
        changed = FLAG_TRAIN.replace('Graphs("cora"', turned_on, 1) if "Small" not in turned_on else \
            FLAG_TRAIN.replace("SmallGraphs()", turned_on + ")")
        (tmp_path / "train.py").write_text(changed)
        drawn = [r for r in findings(tmp_path, "--min-confidence", "possible") if r["code"] == "DET103"]
        assert drawn and all(r["confidence"] != "possible" for r in drawn), turned_on
    # made without its name written (type(self)(...)), or a subclass whose own __init__ sets it
    for graphs in (FLAG_GRAPHS.replace("    def read(self):", "    def again(self):\n        return type(self)(self.name)\n\n    def read(self):"),
                   FLAG_GRAPHS + "\n\nclass Shuffled(Graphs):\n    def __init__(self):\n        super().__init__(\"s\", shuffled=True)\n"):
        (tmp_path / "graphs.py").write_text(graphs)
        (tmp_path / "train.py").write_text(FLAG_TRAIN)
        drawn = [r for r in findings(tmp_path, "--min-confidence", "possible") if r["code"] == "DET103"]
        assert drawn and all(r["confidence"] != "possible" for r in drawn), graphs
    (tmp_path / "graphs.py").write_text(FLAG_GRAPHS)
    # the attribute set again elsewhere: not known to stay off
    (tmp_path / "train.py").write_text(FLAG_TRAIN.replace("order = Graphs", "g = Graphs(\"x\")\ng.shuffled = True\norder = Graphs"))
    drawn = [r for r in findings(tmp_path, "--min-confidence", "possible") if r["code"] == "DET103"]
    assert drawn and all(r["confidence"] != "possible" for r in drawn)
