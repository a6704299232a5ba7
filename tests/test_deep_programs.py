"""Programs far deeper or larger than real ones still get their findings (issue 27, item 11).

The walks over a program's modules and functions (linking names across modules, the trace of
what runs, outlines of imported modules, re-exports, dispatch tables) keep their own stacks: a
chain of 400 imports, a package of 5,000 modules, a cycle of imports or a chain of 1,000 calls
must never end the run in a RecursionError (exit 2, no findings). Each runs the CLI in a child
process, as a user does, so a crash is an exit code and a hang a timeout.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from test_safety_inputs import check_process, project

TRAIN = ("import numpy as np\nimport tensorflow as tf\n\n"
         "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
         "model.compile('sgd', 'mse')\n"
         "model.fit(np.zeros((2, 1)), np.zeros((2, 1)))\n")
TRAIN_LINE = 4  # where TRAIN's Dense draws its weights: DET101 (no global seed) is reported there


def lint(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return check_process(root, *args, "--no-cache", timeout=300, env={"TMPDIR": str(root.parent)})


def findings(proc: subprocess.CompletedProcess[str], name: str) -> list[str]:
    """``line:code`` of each finding in ``name``, after checking the run ended as one with findings."""
    assert "internal error" not in proc.stderr and "RecursionError" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    out = []
    for line in proc.stdout.splitlines():
        if line.startswith(name + ":"):  # train.py:5:30: DET101 the weight initialiser ...
            where, code = line.split(" ")[:2]
            out.append(f"{where.split(':')[1]}:{code}")
    return out


def chain(n: int, last: str, cycle: bool = False) -> dict[str, str]:
    """``pkg/mod_i.py: from pkg import mod_{i+1}``; the last module holds ``last`` (and, for a
    cycle, imports the first)."""
    files = {"pkg/__init__.py": ""}
    for i in range(n - 1):
        files[f"pkg/mod_{i}.py"] = f"from pkg import mod_{i + 1}\n"
    files[f"pkg/mod_{n - 1}.py"] = ("from pkg import mod_0\n" if cycle else "") + last
    return files


def test_a_400_module_import_chain_that_ends_in_training(tmp_path: Path) -> None:
    root = project(tmp_path, {**chain(400, TRAIN), "train.py": "from pkg import mod_0\n"})
    # the module that trains is a program of its own (train.py's program follows imports only
    # MAX_IMPORT_DEPTH deep, so it never reaches it)
    assert f"{TRAIN_LINE}:DET101" in findings(lint(root, "."), "pkg/mod_399.py")


def test_a_5000_module_package(tmp_path: Path) -> None:
    files = chain(5000, "VALUE = 1\n")
    files["pkg/__init__.py"] = "from pkg import mod_0\n"
    root = project(tmp_path, {**files, "train.py": "import pkg\n" + TRAIN})
    assert f"{TRAIN_LINE + 1}:DET101" in findings(lint(root, "."), "train.py")


def test_a_cycle_of_400_imports_one_of_which_trains(tmp_path: Path) -> None:
    root = project(tmp_path, {**chain(400, TRAIN, cycle=True), "train.py": "from pkg import mod_0\n"})
    assert f"{TRAIN_LINE + 1}:DET101" in findings(lint(root, "."), "pkg/mod_399.py")


def call_chain(n: int) -> str:
    """``f0`` calls ``f1`` ... calls ``f{n-1}``, which trains a Keras model."""
    defs = [f"def f{i}():\n    return f{i + 1}()\n\n\n" for i in range(n - 1)]
    last = (f"def f{n - 1}():\n    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
            "    model.compile('sgd', 'mse')\n    model.fit(np.zeros((2, 1)), np.zeros((2, 1)))\n\n\n")
    return "import numpy as np\nimport tensorflow as tf\n\n\n" + "".join(defs) + last


def test_a_chain_of_1000_calls_that_ends_in_training(tmp_path: Path) -> None:
    text = call_chain(1000) + "f0()\n"
    root = project(tmp_path, {"train.py": text})
    dense = text.splitlines().index("    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])") + 1
    assert f"{dense}:DET101" in findings(lint(root, "."), "train.py")


def test_an_imported_module_whose_top_level_starts_a_chain_of_1000_calls(tmp_path: Path) -> None:
    # train.py alone is named: helpers.py is first read as an outline (a text scan that follows
    # its own functions' bodies), then parsed and traced through the chain
    helpers = call_chain(1000) + "f0()\n"
    root = project(tmp_path, {"helpers.py": helpers, "train.py": "import helpers\n" + TRAIN})
    proc = lint(root, "train.py")
    # the program's first draw is the Dense at the end of the chain, run by `import helpers`
    dense = helpers.splitlines().index("    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])") + 1
    assert "1:DET101" in findings(proc, "train.py")
    assert f"(in helpers.py:{dense})" in proc.stdout


def test_a_model_class_re_exported_through_1000_modules(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": ""}
    for i in range(999):
        files[f"pkg/mod_{i}.py"] = f"from pkg.mod_{i + 1} import Net\n"
    files["pkg/mod_999.py"] = ("import tensorflow as tf\n\n\nclass Net(tf.keras.Model):\n"
                               "    def __init__(self):\n        super().__init__()\n"
                               "        self.dense = tf.keras.layers.Dense(1)\n")
    files["train.py"] = TRAIN + "\nfrom pkg.mod_0 import Net\n\nnet = Net()\n"
    root = project(tmp_path, files)
    assert f"{TRAIN_LINE}:DET101" in findings(lint(root, "."), "train.py")
    # named alone, the other modules are first read as outlines, which follow re-exports
    assert f"{TRAIN_LINE}:DET101" in findings(lint(root, "train.py"), "train.py")


def test_dispatch_tables_that_name_each_other(tmp_path: Path) -> None:
    text = ("import numpy as np\nimport tensorflow as tf\n\n\n"
            "def small():\n    return tf.keras.Sequential([tf.keras.layers.Dense(1)])\n\n\n"
            "A = {'a': small, 'b': None}\nB = {'a': A}\nA['b'] = B\n\n"
            "model = A['a']()\nmodel.compile('sgd', 'mse')\nmodel.fit(np.zeros((2, 1)), np.zeros((2, 1)))\n")
    root = project(tmp_path, {"train.py": text})
    assert "6:DET101" in findings(lint(root, "."), "train.py")  # the Dense that small() makes


def star_package(n: int, module: str) -> dict[str, str]:
    """``pkg/__init__.py`` star-imports ``n`` modules (a model zoo's ``from .vanilla_vae import *``
    lines); each module is ``module`` with ``{i}`` its number."""
    files = {"pkg/__init__.py": "from .base import *\n" + "".join(f"from .m{i} import *\n" for i in range(n)),
             "pkg/base.py": "import torch\n\n\nclass Base(torch.nn.Module):\n    pass\n"}
    for i in range(n):
        files[f"pkg/m{i}.py"] = module.replace("{i}", str(i))
    return files


TORCH_LOOP = ("opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor _ in range(3):\n"
              "    loss = model(torch.randn(2, 3, 8, 8).cuda()).sum()\n    loss.backward()\n    opt.step()\n")


def test_modules_of_a_star_importing_package_that_import_back_from_it(tmp_path: Path) -> None:
    # every model imports its base class back from the package (`from models import BaseVAE` in a
    # VAE zoo): a method of it the project does not define was looked for through each of the 20
    # modules, then through the package again, once per path: 20 ** 4 walks, a run that never ended
    module = ("import torch\nfrom pkg import Base\n\n\nclass M{i}(Base):\n    def __init__(self):\n"
              "        super().__init__()\n        Base.describe(self)\n"
              "        self.conv = torch.nn.Conv2d(3, 3, 3)\n\n"
              "    def forward(self, x):\n        return self.conv(x)\n")
    train = "import torch\nfrom pkg import *\n\ntorch.manual_seed(0)\nmodel = M3().cuda()\n" + TORCH_LOOP
    root = project(tmp_path, {**star_package(20, module), "train.py": train})
    assert findings(lint(root, "."), "train.py") == ["5:DET602"]


def test_modules_of_a_star_importing_package_that_star_import_it_back(tmp_path: Path) -> None:
    # a base class no module defines, looked for through star imports that form a cycle, and
    # getattr(pkg, name)() choosing among the package's members: each module is read once, and
    # the choice counts each model once
    module = ("import torch\nfrom pkg import *\n\n\nclass M{i}(Mixin):\n    def __init__(self):\n"
              "        super().__init__()\n        self.conv = torch.nn.Conv2d(3, 3, 3)\n\n"
              "    def forward(self, x):\n        return self.conv(x)\n")
    train = ("import sys\nimport torch\nimport pkg\n\ntorch.manual_seed(0)\n"
             "model = getattr(pkg, sys.argv[1])().cuda()\n" + TORCH_LOOP)
    root = project(tmp_path, {**star_package(20, module), "train.py": train})
    proc = lint(root, ".")
    assert findings(proc, "train.py") == ["6:DET602"]
    assert "one of 20 callables of pkg" in proc.stdout, proc.stdout
