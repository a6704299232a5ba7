"""Framework versions per program: what a notebook states, a program's own code era, its folder's
pins, evidence kept to its own framework, a library module at the lowest of its programs, and
requirement lines read the way pip reads them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import detlint_here

from detlint.knowledge.versions import Version
from detlint.settings.pins import pinned_framework_version, pinned_tf_version
from detlint.settings.stated_versions import stated_versions

TF1 = """\
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 8, 8, 1])
h = tf.layers.conv2d(x, 4, 3)
train_op = tf.train.AdamOptimizer().minimize(tf.reduce_mean(h))
with tf.Session() as sess:
    sess.run(train_op)
"""
TF2 = """\
import tensorflow as tf

tf.random.set_seed(1)
model = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])
model.compile("adam", "mse")
model.fit(x, y)
"""
TORCH = """\
import torch

model = torch.nn.Conv2d(3, 8, 3).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in data:
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""


def notebook(*cells: tuple[str, str]) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": source,
         "outputs": [{"output_type": "stream", "name": "stdout", "text": out}] if out else []}
        for source, out in cells]})


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def run(*args: str, cwd: Path, tool: str = "detlint") -> subprocess.CompletedProcess[str]:
    if tool == "detlint":
        return detlint_here(["--no-cache", *args], cwd, unset=("VIRTUAL_ENV", "CONDA_PREFIX"))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    return subprocess.run([sys.executable, "-m", "flake8", *args], cwd=cwd, capture_output=True, text=True,
                          env={**env, "NO_COLOR": "1"}, timeout=180)


def lines_of(out: str, prefix: str, code: str) -> list[str]:
    """The findings of ``code`` in files starting with ``prefix``; from ``--output-format full``,
    each with its whole message (the "= why:" line: the version note, the confidence's reason)."""
    lines = out.splitlines()
    found = []
    for i, line in enumerate(lines):
        if line.lstrip("./").startswith(prefix) and f" {code} " in line:
            why = next((w.strip() for w in lines[i + 1:i + 6] if w.strip().startswith("= why: ")), "")
            found.append(f"{line} {why}" if why else line)
    return found


# ---- what a notebook states ---------------------------------------------------------------------
@pytest.mark.parametrize("cells, expected", [
    ([("import torch\nprint(torch.__version__)", "1.0.0\n")], {"torch": "1.0"}),
    ([("%watermark -v -p torch,numpy", "CPython 3.7.1\ntorch 1.10.1\nnumpy 1.21.0\n")], {"torch": "1.10"}),
    ([("%load_ext watermark\n%watermark -p tensorflow", "tensorflow     : 1.2.0\n")], {"tensorflow": "1.2"}),
    ([("!pip install -q tensorflow-gpu==2.0.0-beta1", "")], {"tensorflow": "2.0"}),
    ([("!pip install flax", "Successfully installed flax-0.1.0 jax-0.1.69 jaxlib-0.1.47\n")], {"jax": "0.1"}),
    ([("!pip install torch", "Requirement already satisfied: torch in /usr/lib/python3.6/dist-packages (1.4.0)\n")],
     {"torch": "1.4"}),
    ([("%tensorflow_version 1.x", "")], {"tensorflow": "1.15"}),
    ([("print('TensorFlow version:', tf.__version__)", "TensorFlow version: 2.2.0\n")], {"tensorflow": "2.2"}),
    # the module under another name, the version as a cell's value
    ([("import torch as t\nt.__version__", "'1.6.0'")], {"torch": "1.6"}),
    ([("import torch as t", ""), ("print(t.__version__)", "1.6.0\n")], {"torch": "1.6"}),
    ([("import numpy as t\nt.__version__", "'1.6.0'")], {}),
    # several versions printed together, in the order the cell names them
    ([("print(tf.__version__, np.__version__)", "2.3.0 1.18.5\n")], {"tensorflow": "2.3"}),
    ([("print(torch.__version__)\nprint(torchvision.__version__)", "0.4.0\n0.2.1\n")], {"torch": "0.4"}),
    # negatives: versions that cannot be told apart, another library's version, a floor, prose
    ([("print(tf.__version__, np.__version__)", "versions: 2.3.0\n")], {}),
    ([("import numpy as np\nprint(np.__version__)", "1.19.2\n")], {}),
    ([("!pip install 'torch>=1.4'", "")], {}),
    ([("# pip install torch==1.4.0", "")], {}),
])
def test_what_a_notebook_states(cells: list[tuple[str, str]], expected: dict[str, str]) -> None:
    found = {key: str(version) for key, (version, _) in stated_versions(notebook(*cells)).items()}
    assert found == expected


# ---- requirements as pip reads them -------------------------------------------------------------
@pytest.mark.parametrize("text, version, note", [
    ("tensorflow_gpu==1.3.0\n", "1.13", "older than any version detlint knows"),
    ("Tensorflow-GPU==2.4.1\n", "2.4", ""),
    ("tensorflow==1.4.0rc1\n", "1.13", "older than any version detlint knows"),
    ("tf-nightly==2.14.0.dev20230712\n", "2.14", ""),
    ("tf-nightly==2.14.0.dev20230712,<3\n", "2.14", ""),
    ("tensorflow==2.15.0.post1\n", "2.15", ""),
    ("tensorflow[and-cuda]==2.15.0; sys_platform == 'linux'\n", "2.15", ""),
    ("tensorflow~=2.4.1\n", "2.4", ""),
    ("tensorflow===2.6.0\n", "2.6", ""),
    ("tensorflow >= 2.3.0rc0, < 2.5\n", "2.3", ""),
    ("-r base.txt\nnumpy\n", "2.9", "via base.txt"),
    ("tensorflow-datasets==4.0\ntensorflow-hub\n", None, ""),
])
def test_requirement_lines_are_read_as_pip_reads_them(tmp_path: Path, text: str, version: str | None, note: str) -> None:
    write(tmp_path, {"requirements.txt": text, "base.txt": "tensorflow==2.9.1  # the base\n"})
    found = pinned_tf_version(tmp_path, print)
    assert (str(found[0]) if found else None) == version
    assert found is None or note in found[1]


@pytest.mark.parametrize("name", ["REQUIREMENTS.txt", "Requirements-gpu.txt"])
def test_a_requirements_file_is_read_whatever_the_case_of_its_name(tmp_path: Path, name: str) -> None:
    write(tmp_path, {name: "tensorflow==2.4.1\n"})
    found = pinned_tf_version(tmp_path, print)
    assert found is not None and str(found[0]) == "2.4" and name in found[1]


def test_a_pytorch_pin_before_the_oldest_known_release_is_checked_there(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "torch==0.4.1\n"})
    assert pinned_framework_version(tmp_path, "torch", print)[0] == Version(1, 0)
    write(tmp_path, {"requirements.txt": "torch>=0.4.1\n"})  # a floor: a minimum, not the version
    assert pinned_framework_version(tmp_path, "torch", print) is None


# ---- versions per program, end to end ------------------------------------------------------------
def test_a_mixed_era_repository_gets_versions_per_program(tmp_path: Path) -> None:
    """One TF1 lesson among TF2 programs, a notebook that printed TF 1.2, one that printed torch
    1.0, PyTorch 0.3 code: each is checked at its own version, and flake8 agrees on the scripts."""
    write(tmp_path, {
        ".git/HEAD": "", "tf1/lesson.py": TF1, "tf2/a.py": TF2, "tf2/b.py": TF2, "tf2/c.py": TF2,
        "nbs/tf12.ipynb": notebook(("import tensorflow as tf\nprint(tf.__version__)", "1.2.0\n"),
                                   ("model = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\n"
                                    "model.compile('adam', 'mse')\nmodel.fit(x, y)", "")),
        "nbs/torch10.ipynb": notebook(("import torch\nprint(torch.__version__)", "1.0.0\n"), (TORCH, "")),
        "old/train.py": TORCH + "    print(loss.data[0])\n",
        "new/train.py": TORCH.replace("model = ", "model = torch.compile(").replace("3, 8, 3)", "3, 8, 3))"),
    })
    out = run(".", cwd=tmp_path).stdout
    assert "TF_CUDNN_DETERMINISTIC" in lines_of(out, "tf1/lesson.py", "DET201")[0]
    assert all("enable_op_determinism()" in line for line in lines_of(out, "tf2/", "DET201"))
    assert "no deterministic cuDNN mode before TF 1.14" in lines_of(out, "nbs/tf12.ipynb", "DET202")[0]
    for program in ("nbs/torch10.ipynb", "old/train.py"):
        det602 = lines_of(out, program, "DET602")[0]
        assert "PyTorch 1.0" in det602 and "torch.backends.cudnn.deterministic = True" in det602
    assert "use_deterministic_algorithms(True)" in lines_of(out, "new/train.py", "DET602")[0]
    shown = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)
    programs = shown["programs"]
    assert programs["tf1/lesson.py"]["tensorflow-version"] == "1.15"
    assert programs["nbs/tf12.ipynb"]["tensorflow-version"] == "1.13"
    assert "printed as 1.2.0" in programs["nbs/tf12.ipynb"]["tensorflow-version-source"]
    assert programs["old/train.py"]["torch-version"] == "1.0"
    assert "tf2/a.py" not in programs  # the same as the project's
    flake8 = run("--select", "DET", "tf1", "tf2", "old", cwd=tmp_path, tool="flake8").stdout
    cli = run("tf1", "tf2", "old", cwd=tmp_path).stdout
    assert sorted(line.lstrip("./") for line in flake8.splitlines()) == sorted(
        line for line in cli.splitlines() if line[:1] not in ("", "F") and ":" in line and " DET" in line)


def test_evidence_belongs_to_its_framework(tmp_path: Path) -> None:
    """A PyTorch repository's SGD(params, lr=...) is no Keras evidence: TensorFlow's version is
    not 'assumed from SGD(lr= use', and no TensorFlow note reaches a PyTorch finding."""
    write(tmp_path, {".git/HEAD": "", "train.py": TORCH, "other.py": TORCH})
    shown = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)
    assert "assumed" not in shown["tensorflow-version-source"] and shown["programs"] == {}
    out = run(".", cwd=tmp_path).stdout
    assert "TensorFlow" not in out and "DET602" in out


def test_a_folder_pin_the_code_cannot_run_on_gives_way_to_the_code(tmp_path: Path) -> None:
    """tf.Session code under a folder pinned to TF 2.4 (a requirements file written later) is
    checked as TF1; a pin the code allows (1.14) is used as it is."""
    write(tmp_path, {".git/HEAD": "", "a/requirements.txt": "tensorflow==2.4\n", "a/train.py": TF1,
                     "b/requirements.txt": "tensorflow-gpu==1.14.0\n", "b/train.py": TF1})
    out = run(".", "--output-format", "full", cwd=tmp_path).stdout
    a, b = lines_of(out, "a/train.py", "DET201")[0], lines_of(out, "b/train.py", "DET201")[0]
    assert "TF 1.15" in a and "TensorFlow 1.15 assumed from tf.placeholder use" in a
    assert "TF 1.14" in b and "assumed" not in b


def test_a_library_module_is_checked_at_the_lowest_version_of_its_programs(tmp_path: Path) -> None:
    """A loss module run by a Keras 2 era script (fit_generator: TF 2.0) and by a script on the
    installed TF: its fused softmax cross-entropy (no deterministic GPU kernel before TF 2.6) is
    reported at 2.0, and the finding says the version is the lowest of its programs'."""
    write(tmp_path, {
        ".git/HEAD": "",
        "model.py": "import tensorflow as tf\n\ndef loss(labels, logits):\n"
                    "    return tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)\n",
        "old/train.py": "import tensorflow as tf\nfrom model import loss\nm = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\n"
                        "m.compile('adam', loss)\nm.fit_generator(batches)\n",
        "apps/new.py": "import tensorflow as tf\nfrom model import loss\ntf.keras.utils.set_random_seed(1)\n"
                       "m = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\n"
                       "m.compile('adam', loss)\nm.fit(x, y)\n",
    })
    out = run(".", "--output-format", "full", cwd=tmp_path).stdout
    assert "TF_CUDNN_DETERMINISTIC" in lines_of(out, "old/train.py", "DET201")[0]
    assert "enable_op_determinism" in lines_of(out, "apps/new.py", "DET201")[0]
    det202 = lines_of(out, "model.py", "DET202")
    assert det202 and "TF 2.0" in det202[0] and "the lowest TensorFlow of the 2 programs" in det202[0], out


def test_keras3_programs_on_three_backends_in_one_repository(tmp_path: Path) -> None:
    body = ("import keras\nmodel = keras.Sequential([keras.layers.Conv2D(4, 3), keras.layers.Dense(2)])\n"
            "model.compile('adam', 'mse')\nmodel.fit(x, y)\n")
    backend = "import os\nos.environ['KERAS_BACKEND'] = '{}'\n"
    write(tmp_path, {".git/HEAD": "", "requirements.txt": "keras>=3\n",
                     "on_jax.py": backend.format("jax") + body, "on_torch.py": backend.format("torch") + body,
                     "on_tf.py": backend.format("tensorflow") + body})
    out = run(".", cwd=tmp_path).stdout
    assert lines_of(out, "on_jax.py", "DET701") and not lines_of(out, "on_jax.py", "DET201")
    assert lines_of(out, "on_torch.py", "DET602") and not lines_of(out, "on_torch.py", "DET201")
    assert lines_of(out, "on_tf.py", "DET201") and not lines_of(out, "on_tf.py", "DET701")


def test_a_jax_program_written_for_an_old_release_is_checked_there(tmp_path: Path) -> None:
    old = textwrap.dedent("""\
        import jax
        from jax.experimental import stax, optimizers
        init, apply = stax.serial(stax.Dense(8))
        grads = jax.grad(loss)(params)
        """)
    new = "import jax\nkey = jax.random.key(0)\ngrads = jax.grad(loss)(params)\nparams = jax.tree.map(lambda p, g: p - g, params, grads)\n"
    write(tmp_path, {".git/HEAD": "", "old.py": old, "new.py": new})
    programs = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)["programs"]
    assert programs["old.py"]["jax-version"] == "0.2"
    assert "new.py" not in programs or programs["new.py"]["jax-version"] != "0.2"


# ---- devices per program ---------------------------------------------------------------------
def test_programs_that_never_run_on_a_gpu_get_no_gpu_findings(tmp_path: Path) -> None:
    """CUDA_VISIBLE_DEVICES hidden in code or with %env, JAX kept on the CPU, JAX asked for TPUs:
    no GPU-kernel findings there; the same programs with a GPU keep theirs; seeds still count."""
    jax_training = "import jax\nimport optax\ngrads = jax.grad(loss)(params)\nparams = optax.apply_updates(params, grads)\n"
    write(tmp_path, {
        ".git/HEAD": "",
        "torch_cpu.py": 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = ""\n' + TORCH,
        "torch_gpu.py": TORCH,
        "torch_cpu.ipynb": notebook(("%env CUDA_VISIBLE_DEVICES=-1", ""), (TORCH, "")),
        "tf_cpu.py": 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "-1"\n' + TF2,
        "jax_tpu.py": 'import jax\ndevices = jax.devices("tpu")\n' + jax_training,
        "jax_cpu.py": 'import jax\njax.config.update("jax_platforms", "cpu")\n' + jax_training,
        "jax_gpu.py": jax_training,
    })
    out = run(".", cwd=tmp_path).stdout
    gpu_codes = ("DET201", "DET202", "DET602", "DET603", "DET701")
    for program in ("torch_cpu.py", "torch_cpu.ipynb", "tf_cpu.py", "jax_tpu.py", "jax_cpu.py"):
        assert not any(lines_of(out, program, code) for code in gpu_codes), program
    assert lines_of(out, "torch_gpu.py", "DET602") and lines_of(out, "jax_gpu.py", "DET701")
    assert lines_of(out, "torch_cpu.py", "DET601")  # the seed still matters on the CPU


# ---- environment from launchers ----------------------------------------------------------------
def test_what_a_launcher_sets_counts_for_the_program_it_starts(tmp_path: Path) -> None:
    """A Slurm script's export, a Makefile recipe's inline variable and a Dockerfile ENV hold for
    the programs they start (or, for the Dockerfile, every program under its folder); a program no
    launcher starts keeps its findings."""
    jax_training = "import jax\nimport optax\ngrads = jax.grad(loss)(params)\nparams = optax.apply_updates(params, grads)\n"
    write(tmp_path, {
        ".git/HEAD": "", "train.py": TORCH, "other.py": TORCH, "jx.py": jax_training, "jx_plain.py": jax_training,
        "svc/serve_train.py": "import random\n" + TORCH.replace("model = ", "random.seed(0)\nmodel = "),
        "scripts/job.sbatch": "#!/bin/bash\n#SBATCH --gres=gpu:1\nexport CUDA_VISIBLE_DEVICES=\\\n\nsrun python train.py \\\n  --epochs 3\n",
        "Makefile": "run:\n\t@XLA_FLAGS=--xla_gpu_deterministic_ops=true python jx.py\n",
        "svc/Dockerfile": "FROM python:3.11\nENV CUDA_VISIBLE_DEVICES=-1 OTHER=1\n",
    })
    out = run(".", cwd=tmp_path).stdout
    assert not lines_of(out, "train.py", "DET602") and lines_of(out, "other.py", "DET602")
    assert not lines_of(out, "jx.py", "DET701") and lines_of(out, "jx_plain.py", "DET701")
    assert not lines_of(out, "svc/serve_train.py", "DET602")


def test_nearer_evidence_for_programs_whose_own_code_says_nothing(tmp_path: Path) -> None:
    """A lesson whose code shows no era takes what the notebooks beside it printed; a pin kept in
    a setup/ folder (no code there) holds for the programs beside and below it; wrapping tensors
    in Variable marks PyTorch code written before the determinism switch, unless a pin says
    otherwise; DataLoader's generator= fix only from PyTorch 1.6 (a fine-tuning program whose only
    draw from torch is its loader); no TensorFlow note on a
    PyTorch program's finding."""
    variable = TORCH.replace("import torch\n", "import torch\nfrom torch.autograd import Variable\n").replace(
        "model(x)", "model(Variable(x))")
    loader = ("import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader\nfrom torch.autograd import Variable\n"
              "loader = DataLoader(data, batch_size=8, shuffle=True)\nx = np.random.rand(3)\n"
              + TORCH.split("\n", 1)[1].replace("torch.nn.Conv2d(3, 8, 3)", "torch.load('m.pt')"))
    write(tmp_path, {
        ".git/HEAD": "",
        "lessons/a.ipynb": notebook(("import tensorflow as tf\nprint(tf.__version__)", "1.2.0\n"), (TF2, "")),
        "lessons/b.ipynb": notebook(("import tensorflow as tf\nprint(tf.__version__)", "1.4.0\n"), (TF2, "")),
        "lessons/c.py": TF2.replace("tf.random.set_seed(1)\n", ""),
        "course/setup/requirements.txt": "tensorflow==2.3.0\n", "course/week1/train.py": TF2.replace("tf.random.set_seed(1)\n", ""),
        "torch_old/train.py": variable, "torch_pinned/requirements.txt": "torch==1.9.0\n", "torch_pinned/train.py": variable,
        "torch_loader/train.py": loader, "keras_era.py": "import tensorflow as tf\nmodel.fit_generator(g)\n",
    })
    out = run(".", cwd=tmp_path).stdout
    assert "no deterministic cuDNN mode before TF 1.14" in lines_of(out, "lessons/c.py", "DET202")[0]
    assert "TF_DETERMINISTIC_OPS" in lines_of(out, "course/week1/train.py", "DET201")[0]
    assert "cudnn.deterministic = True" in lines_of(out, "torch_old/train.py", "DET602")[0]
    assert "use_deterministic_algorithms(True)" in lines_of(out, "torch_pinned/train.py", "DET602")[0]
    det606 = lines_of(out, "torch_loader/train.py", "DET606")[0]
    assert "torch.manual_seed(42) before it draws" in det606 and "generator=" not in det606.split(";")[-1]
    assert not [line for line in out.splitlines() if line.startswith("torch_") and "TensorFlow" in line]
    programs = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)["programs"]
    assert "the programs beside it" in programs["lessons/c.py"]["tensorflow-version-source"]
    assert programs["course/week1/train.py"]["tensorflow-version-source"].startswith("setup/requirements.txt pins")


def test_keras_backend_set_after_import_chooses_nothing(tmp_path: Path) -> None:
    body = ("model = keras.Sequential([keras.layers.Conv2D(4, 3)])\nmodel.compile('adam', 'mse')\nmodel.fit(x, y)\n")
    write(tmp_path, {
        ".git/HEAD": "",
        "early.py": "import os\nos.environ.setdefault('KERAS_BACKEND', 'jax')\nimport keras\n" + body,
        "late.py": "import keras\nimport os\nos.environ['KERAS_BACKEND'] = 'jax'\n" + body,
        "late.ipynb": notebook(("import keras", ""), ("%env KERAS_BACKEND=torch", ""), (body, "")),
    })
    out = run(".", cwd=tmp_path).stdout
    assert lines_of(out, "early.py", "DET701") and not lines_of(out, "early.py", "DET108")
    assert lines_of(out, "late.py", "DET108") and lines_of(out, "late.py", "DET201") and not lines_of(out, "late.py", "DET701")
    assert lines_of(out, "late.ipynb", "DET108") and not lines_of(out, "late.ipynb", "DET602")


def test_pins_kept_apart_ci_installs_colab_magics_and_tpu_programs(tmp_path: Path) -> None:
    """A CI configuration that installs a TensorFlow wheel, a conda environment file of another
    name in a folder without code, Colab's %tensorflow_version 2.x beside TF1 notebooks, an
    Estimator told to run on a TPU, jax.tree_multimap (gone in JAX 0.3.16), a tensor's .data[0]
    (a row in every PyTorch, unlike a loss's)."""
    travis = ("install:\n  - pip install numpy\n  - pip install "
              "https://storage.googleapis.com/tensorflow/linux/cpu/tensorflow-1.0.0a0-cp34-cp34m-linux_x86_64.whl\n")
    plain = TF2.replace("tf.random.set_seed(1)\n", "")  # no era of its own
    write(tmp_path / "ci", {".git/HEAD": "", ".travis.yml": travis, "train.py": plain})
    write(tmp_path / "envs", {".git/HEAD": "", "environments/dl_env_linux.yml": "name: dl\ndependencies:\n  - tensorflow=2.3.0\n",
                              "course/train.py": plain})
    write(tmp_path / "colab", {
        ".git/HEAD": "",
        "old1.ipynb": notebook(("import tensorflow as tf\nprint(tf.__version__)", "1.13.1\n"), (TF2, "")),
        "old2.ipynb": notebook(("import tensorflow as tf\nprint(tf.__version__)", "1.12.0\n"), (TF2, "")),
        "new.ipynb": notebook(("%tensorflow_version 2.x\nimport tensorflow as tf", ""), (TF2, "")),
    })
    tpu = TF1.replace("with tf.Session() as sess:\n    sess.run(train_op)\n",
                      "est = tf.contrib.tpu.TPUEstimator(model_fn=model_fn, use_tpu=True)\nest.train(input_fn)\n")
    write(tmp_path / "tpu", {".git/HEAD": "", "on_tpu.py": tpu, "off_tpu.py": tpu.replace("use_tpu=True", "use_tpu=False")})
    jax_old = "import jax\nimport optax\ngrads = jax.grad(loss)(params)\nparams = jax.tree_multimap(lambda p, g: p - g, params, grads)\n"
    write(tmp_path / "mix", {".git/HEAD": "", "old_jax.py": jax_old,
                             "rows.py": TORCH + "    print(model.weight.data[0])\n"})
    # the CI installs TensorFlow's CPU wheel: its GPU findings are only possible, hidden by default
    assert not lines_of(run(".", cwd=tmp_path / "ci").stdout, "train.py", "DET202")
    (ci_line,) = lines_of(run(".", "--min-confidence", "possible", "--output-format", "full", cwd=tmp_path / "ci").stdout,
                          "train.py", "DET202")
    assert "before TF 1.14" in ci_line and "[possible: the TensorFlow package the project pins" in ci_line
    assert "TF_DETERMINISTIC_OPS" in lines_of(run(".", cwd=tmp_path / "envs").stdout, "course/train.py", "DET201")[0]
    colab = json.loads(run(".", "--show-settings", cwd=tmp_path / "colab").stdout)["programs"]
    assert colab["new.ipynb"]["tensorflow-version"] == "2.2" and colab["old1.ipynb"]["tensorflow-version"] == "1.13"
    out = run(".", cwd=tmp_path / "tpu").stdout
    assert not lines_of(out, "on_tpu.py", "DET201") and lines_of(out, "off_tpu.py", "DET201")
    mix = json.loads(run(".", "--show-settings", cwd=tmp_path / "mix").stdout)["programs"]
    assert mix["old_jax.py"]["jax-version"] == "0.2" and "rows.py" not in mix


def test_early_tensorflow_names_mark_code_written_before_the_switch(tmp_path: Path) -> None:
    """tf.initialize_all_variables (deprecated in 0.12) or tf.mul (renamed in 1.0) in TF1 code:
    checked as TF 1.13, where no switch exists, not 1.15; a pin still wins."""
    early = TF1.replace("with tf.Session()", "init = tf.initialize_all_variables()\nwith tf.Session()")
    write(tmp_path, {".git/HEAD": "", "early.py": early, "plain.py": TF1,
                     "pinned/requirements.txt": "tensorflow==1.15.0\n", "pinned/early.py": early})
    programs = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)["programs"]
    assert programs["early.py"]["tensorflow-version"] == "1.13"
    assert programs["plain.py"]["tensorflow-version"] == "1.15"
    out = run(".", cwd=tmp_path).stdout
    assert "TF_CUDNN_DETERMINISTIC" in lines_of(out, "pinned/early.py", "DET201")[0]


def test_conda_pytorch_jaxlib_beside_jax_and_keras_2_kept_beside_keras_3(tmp_path: Path) -> None:
    """conda's pytorch=1.7.0 is a torch pin; a notebook installing jaxlib 0.1.71 and jax 0.2.21
    is JAX 0.2; tf_keras code cannot run on the TF 2.14 the repository pins; an import statement
    is named by its era's words in the source of a version."""
    write(tmp_path, {
        ".git/HEAD": "", "environment.yaml": "dependencies:\n  - pytorch=1.7.0\n  - pip:\n    - tensorflow~=2.14.0\n",
        "train_torch.py": TORCH,
        "jax_nb.ipynb": notebook(("!pip install jaxlib==0.1.71\n!pip install jax==0.2.21\nimport jax", ""),
                                 ("grads = jax.grad(loss)(params)", "")),
        "legacy.py": "import os\nos.environ['TF_USE_LEGACY_KERAS'] = '1'\nimport tensorflow as tf\nimport tf_keras\n"
                     "model = tf_keras.Sequential([tf_keras.layers.Dense(2)])\nmodel.fit(x, y)\n",
    })
    write(tmp_path / "k", {".git/HEAD": "", "old_keras.py": "import tensorflow as tf\nfrom keras.layers import Dense, merge\n"
                                                         "model.fit(x, y)\n"})
    shown = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)
    assert shown["torch-version"] == "1.7" and "pytorch=1.7.0" in shown["torch-version-source"].replace("==", "=")
    programs = shown["programs"]
    assert programs["jax_nb.ipynb"]["jax-version"] == "0.2"
    assert programs["legacy.py"]["tensorflow-version"] not in ("2.14",)
    old = json.loads(run(".", "--show-settings", cwd=tmp_path / "k").stdout)["programs"]["old_keras.py"]
    assert "Keras 2 module paths" in old["tensorflow-version-source"] and "fromkeras" not in old["tensorflow-version-source"]


def test_show_settings_lists_programs_of_subfolder_projects(tmp_path: Path) -> None:
    """A year folder with its own setup.py is its own project: its programs whose versions differ
    from that project's are listed too, by their path from the top."""
    write(tmp_path, {".git/HEAD": "", "2019/setup.py": "from setuptools import setup\nsetup(install_requires=['tensorflow==2.1'])\n",
                     "2019/lab.py": TF1, "top.py": TF1})
    programs = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)["programs"]
    assert programs["2019/lab.py"]["tensorflow-version"] == "1.15" and "top.py" in programs


@pytest.mark.parametrize("readme, version", [
    ("The code was developed for PyTorch version 1.7.1 and torchvision 0.8.2.\n", "1.7"),
    ("## Requirements\n- [PyTorch](http://pytorch.org) install = 1.4.0\n- CUDA 10.1\n", "1.4"),
    ("```\nconda install pytorch=1.6.0 torchvision -c pytorch\n```\n", "1.6"),
    ("```\npip install torch==1.9.1\n```\n", "1.9"),
    ("# Notes\n\n-PyTorch 1.3.0\n\n-NumPy 1.13.3\n", "1.3"),  # a list item without its space
    # not a statement of the version the code is for: a floor, another package, another framework
    ("Needs PyTorch 1.4 or later.\n", None), ("pip install torch>=1.4\n", None),
    ("Uses torchvision 0.8.2 and PyTorch Lightning 1.5.\n", None), ("pip install horovod-torch 1.2\n", None), ("Tested with CUDA 10.1 and Python 3.8.\n", None),
])
def test_what_a_readme_states_for_unpinned_code(tmp_path: Path, readme: str, version: str | None) -> None:
    """A repository that pins nothing but says in its README what it was written for is checked
    at that version (below 1.7: cuDNN's flags); without such a statement, the installed version."""
    write(tmp_path, {".git/HEAD": "", "README.md": readme, "train.py": TORCH})
    settings = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)
    found = settings.get("programs", {}).get("train.py", settings)
    if version is None:
        assert "README" not in found["torch-version-source"]
        return
    assert found["torch-version"] == version and found["torch-version-source"].startswith("README.md says ")
    det602 = lines_of(run(".", cwd=tmp_path).stdout, "train.py", "DET602")[0]
    assert ("cudnn.deterministic = True" in det602) == (Version.parse(version) < Version.parse("1.7"))


@pytest.mark.parametrize("guide", ["get_started.md", "INSTALL.md", "docs/install.md"])
def test_an_installation_guide_states_the_version_after_the_readme(tmp_path: Path, guide: str) -> None:
    """A README that names no version and an installation guide beside it that does (Swin
    Transformer's get_started.md: conda install pytorch==1.8.0): the guide's version; a README
    that states one is read first."""
    write(tmp_path, {".git/HEAD": "", "README.md": "# Models\nSee the guide.\n",
                     guide: "```\nconda install pytorch==1.8.0 torchvision==0.9.0 cudatoolkit=10.2 -c pytorch\n```\n",
                     "train.py": TORCH})
    settings = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)
    found = settings.get("programs", {}).get("train.py", settings)
    assert found["torch-version"] == "1.8" and found["torch-version-source"] == f"{guide} says pytorch==1.8.0"
    write(tmp_path, {"README.md": "```\npip install torch==1.9.1\n```\n"})
    settings = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)
    found = settings.get("programs", {}).get("train.py", settings)
    assert found["torch-version"] == "1.9" and found["torch-version-source"].startswith("README.md says ")


def test_a_pin_outranks_the_readme_and_a_nearer_readme_the_farther_one(tmp_path: Path) -> None:
    write(tmp_path, {".git/HEAD": "", "README.md": "Developed for PyTorch version 1.7.1.\n",
                     "requirements.txt": "torch==2.1.0\n", "train.py": TORCH})
    settings = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)
    assert settings.get("programs", {}).get("train.py", settings)["torch-version"] == "2.1"
    nested = tmp_path / "nested"
    write(nested, {".git/HEAD": "", "README.md": "Developed for PyTorch version 1.7.1.\n",
                   "old/README.md": "Written for PyTorch 1.4.0.\n", "old/train.py": TORCH, "new/train.py": TORCH})
    settings = json.loads(run(".", "--show-settings", cwd=nested).stdout)
    programs = settings.get("programs", {})
    assert programs["old/train.py"]["torch-version"] == "1.4"
    assert programs.get("new/train.py", settings)["torch-version"] == "1.7"


@pytest.mark.parametrize("dockerfile, version", [
    ("FROM pytorch/pytorch:1.5-cuda10.1-cudnn7-runtime\nRUN pip install cython\n", "1.5"),
    ("FROM ubuntu:18.04\nRUN pip install torch==1.6.0 torchvision==0.7.0\n", "1.6"),
    # NVIDIA's NGC images are tagged by container release, not by PyTorch version
    ("FROM nvcr.io/nvidia/pytorch:20.03-py3\n", None),
])
def test_what_a_dockerfile_states_for_unpinned_code(tmp_path: Path, dockerfile: str, version: str | None) -> None:
    """A Dockerfile's official base image (its tag is the framework's version) or its pip pins say
    what the code was written for, as a README does."""
    write(tmp_path, {".git/HEAD": "", "Dockerfile": dockerfile, "train.py": TORCH})
    settings = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)
    found = settings.get("programs", {}).get("train.py", settings)
    if version is None:
        assert "Dockerfile" not in found["torch-version-source"]
        return
    assert found["torch-version"] == version and found["torch-version-source"].startswith("Dockerfile says ")


@pytest.mark.parametrize("spec, key, version", [
    ("==0.4.28", "jax", "0.4"), ("==0.4.29", "jax", "0.4.29"), ("==0.4.35", "jax", "0.4.29"),
    ("==0.4.38", "jax", "0.4.36"), ("~=0.4.30", "jax", "0.4.29"), (">=0.4.33,<0.5", "jax", "0.4.29"),
    ("==0.4.*", "jax", "0.4"), (">=0.4.36", "jax", "0.4.36"),
    ("==1.15.5", "tensorflow", "1.15"), ("==2.1.0", "torch", "2.1"), ("==2.15.1", "tensorflow", "2.15"),
])
def test_a_pin_with_a_late_patch_release_is_in_its_minor(spec: str, key: str, version: str) -> None:
    """JAX's 0.4 line has patch releases past 0.4.20: `jax==0.4.28` is JAX 0.4, not a version newer
    than any detlint knows. Within 0.4 the knowledge base lists the patch releases that changed
    determinism (0.4.29, 0.4.36): a pin is the listed release it falls in."""
    from detlint.settings.pins import pinned_version

    found, note = pinned_version(spec, key)
    assert str(found) == version and note == ""


def test_a_range_bound_names_a_minor_or_a_patch_release() -> None:
    """A bound without a patch compares by minor release; one with a patch, exactly."""
    from detlint.knowledge.versions import VersionRange, release_of

    v = Version.parse
    assert VersionRange.parse("<0.5").contains(v("0.4.36")) and not VersionRange.parse("<0.4").contains(v("0.4.29"))
    assert VersionRange.parse("==2.15").contains(v("2.15.3")) and not VersionRange.parse("<2.15").contains(v("2.15.3"))
    assert VersionRange.parse("<0.4.36").contains(v("0.4.29")) and not VersionRange.parse("<0.4.36").contains(v("0.4.36"))
    assert VersionRange.parse(">=0.4.29").contains(v("0.5")) and not VersionRange.parse(">=0.4.29").contains(v("0.4"))
    # each clause compares at its own precision, in any order
    assert VersionRange.parse("<0.5,>=0.4.29").contains(v("0.4.36")) and not VersionRange.parse("<0.5,>=0.4.29").contains(v("0.4"))
    assert [str(release_of(v(t), k)) for t, k in [("0.4.31", "jax"), ("0.4.3", "jax"), ("0.4.40", "jax"),
                                                  ("2.15.1", "tensorflow"), ("0.5.2", "jax")]] == \
        ["0.4.29", "0.4", "0.4.36", "2.15", "0.5"]


MAX_POOL_UNDER_FLAG = textwrap.dedent("""\
    import os
    os.environ["XLA_FLAGS"] = "{flag}=true"
    import jax
    import optax
    from flax import linen as nn

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.max_pool(nn.Conv(8, (3, 3))(x), (2, 2), strides=(2, 2))

    model = CNN()
    grads = jax.grad(loss)(params, batch)
    params = optax.apply_updates(params, updates)
    """)


@pytest.mark.parametrize("pin, flag, codes", [
    ("jax==0.4.35", "--xla_gpu_deterministic_ops", ["DET705"]),
    ("jax==0.4.36", "--xla_gpu_deterministic_ops", []),
    ("jax[cuda12]==0.4.28", "--xla_gpu_exclude_nondeterministic_ops", ["DET701"]),
    ("jax[cuda12]==0.4.30", "--xla_gpu_exclude_nondeterministic_ops", ["DET705"]),
    ("jax>=0.5", "--xla_gpu_exclude_nondeterministic_ops", []),
])
def test_jax_patch_releases_that_changed_determinism(tmp_path: Path, pin: str, flag: str, codes: list[str]) -> None:
    """jaxlib 0.4.29 brought --xla_gpu_exclude_nondeterministic_ops (older XLA aborts on it);
    from 0.4.36 the max-pool gradient has a deterministic GPU implementation under the flags."""
    write(tmp_path, {".git/HEAD": "", "requirements.txt": pin + "\n", "train.py": MAX_POOL_UNDER_FLAG.format(flag=flag)})
    found = json.loads(run(".", "--output-format", "json", "--select", "DET7", cwd=tmp_path).stdout)
    assert sorted(f["code"] for f in found) == codes, found


def test_show_settings_lists_the_programs_of_a_nested_project(tmp_path: Path) -> None:
    """A subfolder with its own setup.py is checked with its own pins; --show-settings says so for
    its programs (their versions differ from the project's shown above them)."""
    write(tmp_path, {".git/HEAD": "", "requirements.txt": "tensorflow==1.15\n", "train1.py": TF1,
                     "sub/setup.py": "from setuptools import setup\nsetup(name='x', install_requires=['tensorflow==2.4.0'])\n",
                     "sub/train.py": TF2})
    shown = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)
    assert shown["tensorflow-version"] == "1.15" and "train1.py" not in shown["programs"]
    assert shown["programs"]["sub/train.py"] == {"tensorflow-version": "2.4",
                                                 "tensorflow-version-source": "setup.py pins tensorflow==2.4.0"}
    assert "in TF 2.4" in lines_of(run(".", cwd=tmp_path).stdout, "sub/train.py", "DET201")[0]


SHIMMED = """\
import tensorflow as tf

try:
    scope = tf.variable_scope
except AttributeError:
    scope = tf.compat.v1.variable_scope
if tf.__version__.startswith("1."):
    sess = tf.Session()
else:
    sess = None
x = tf.cast(mask, tf.float32)  # was tf.to_float(mask)
model = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])
model.compile("adam", "mse")
model.fit(x, y)
"""


def test_compatibility_shims_say_nothing_of_the_version(tmp_path: Path) -> None:
    """A TF1 name inside a ``try`` that falls back on AttributeError, under ``if tf.__version__``,
    or in a comment after code runs (or is read) on TF2 as well: it does not make a TF2 program
    TF 1.15. The same name outside a shim still does."""
    plain = SHIMMED.replace("try:\n    scope = tf.variable_scope\nexcept AttributeError:\n"
                            "    scope = tf.compat.v1.variable_scope\n", "scope = tf.variable_scope\n")
    assert plain != SHIMMED
    write(tmp_path / "shim", {".git/HEAD": "", "train.py": SHIMMED})
    write(tmp_path / "plain", {".git/HEAD": "", "train.py": plain})
    shim = json.loads(run(".", "--show-settings", cwd=tmp_path / "shim").stdout)
    assert not shim["tensorflow-version"].startswith("1."), shim["tensorflow-version-source"]
    assert shim["programs"] == {}
    old = json.loads(run(".", "--show-settings", cwd=tmp_path / "plain").stdout)
    assert old["tensorflow-version"] == "1.15"
    assert "tf.variable_scope" in old["tensorflow-version-source"]
