"""Which TensorFlow and Keras a project is checked against: its pins (every dependency file, a
subfolder with its own), its own environment, and, when nothing says, the era of its code."""
from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import detlint_here

from detlint.settings.config import load_settings
from detlint.knowledge.kb import load
from detlint.settings.pins import conda_requirements, pinned_keras_major, pinned_tf_version, setup_py_requirements
from detlint.knowledge.versions import Version

KB = load()
TF1_TRAINING = textwrap.dedent("""\
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    h = tf.layers.conv2d(x, 4, 3)
    train_op = tf.train.AdamOptimizer().minimize(tf.reduce_mean(h))
    with tf.Session() as sess:
        sess.run(train_op)
    """)
TF2_TRAINING = textwrap.dedent("""\
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])
    model.compile("adam", "mse")
    model.fit(x, y)
    """)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def settings_of(root: Path, start: Path | None = None, env: dict[str, str] | None = None):
    old = dict(os.environ)
    os.environ.pop("VIRTUAL_ENV", None)
    os.environ.pop("CONDA_PREFIX", None)
    os.environ.update(env or {})
    try:
        return load_settings([start or root], eras=KB.eras)
    finally:
        os.environ.clear()
        os.environ.update(old)


def detlint(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return detlint_here(["--no-cache", *args], cwd, env=env, unset=("VIRTUAL_ENV", "CONDA_PREFIX"))


@pytest.mark.parametrize("line, major", [
    ("keras-core>=0.1.6", 3), ("keras>=3.0", 3), ("keras==3.4.1", 3), ("keras<3", 2), ("keras==2.2.4", 2),
    ("tf-keras~=2.16", 2), ("keras-hub>=0.15\nkeras-tuner\nkeras-cv\nkeras_preprocessing==1.1", None),
    ("keras-nlp==0.6\nkeras_applications>=1.0", None),
])
def test_keras_family_packages_are_not_keras_pins(tmp_path: Path, line: str, major: int | None) -> None:
    (tmp_path / "requirements.txt").write_text(line + "\n")
    found = pinned_keras_major(tmp_path, print)
    assert (found[0] if found else None) == major


@pytest.mark.parametrize("line, version", [
    ("tensorflow-datasets==4.0\ntensorflow-hub\ntensorflow_addons>=0.9", None),
    ("tensorflow-gpu==2.4.1", "2.4"), ("tensorflow>=2.10,<2.13", "2.10"),
    ("tensorflow==1.7.0", "1.13"), ("tensorflow-gpu>=1.4,<1.6", "1.13"), ("keras==2.1.6", "1.15"),
])
def test_tensorflow_pins(tmp_path: Path, line: str, version: str | None) -> None:
    (tmp_path / "requirements.txt").write_text(line + "\n")
    found = pinned_tf_version(tmp_path, print)
    assert (str(found[0]) if found else None) == version


def test_a_pin_older_than_the_knowledge_base_is_its_oldest_version_and_says_so(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "tensorflow-gpu==1.7\n", "train.py": TF2_TRAINING})
    settings = settings_of(tmp_path)
    assert settings.tf_version == Version(1, 13)
    assert "older than any version detlint knows; checked as 1.13" in settings.tf_version_source
    out = detlint("train.py", cwd=tmp_path).stdout
    assert "DET202" in out and "no deterministic cuDNN mode before TF 1.14" in out
    assert "enable_op_determinism" not in out and "set_random_seed(42)" in out


def test_setup_py_environment_yml_and_pipfile_pins() -> None:
    setup = """
from setuptools import setup
REQUIRED = ["numpy", "tensorflow-gpu>=1.12,<1.15"]
setup(name="x", install_requires=REQUIRED + ["scipy"], extras_require={"gpu": ["tensorflow-gpu==1.14"]})
"""
    assert setup_py_requirements(setup) == ["numpy", "tensorflow-gpu>=1.12,<1.15", "scipy", "tensorflow-gpu==1.14"]
    assert setup_py_requirements("import os\nos.system('rm -rf /')\nsetup(") == []  # not valid: nothing read
    # a module-level dict of requirement lists, one item given (TensorFlowTTS's setup.py)
    table = 'requirements = {"install": ["tensorflow-gpu==2.7.0"], "test": ["pytest"]}\n' \
            'install_requires = requirements["install"]\nsetup(name="x", install_requires=install_requires)\n'
    assert setup_py_requirements(table) == ["tensorflow-gpu==2.7.0"]
    conda = "name: tf\ndependencies:\n  - python=3.6\n  - tensorflow-gpu=1.15.0=gpu_py36h5a509aa_0\n  - pip:\n    - keras==2.3.1\n"
    assert conda_requirements(conda) == ["python==3.6", "tensorflow-gpu==1.15.0", "pip:", "keras==2.3.1"]


@pytest.mark.parametrize("name, text, version", [
    ("setup.py", "from setuptools import setup\nsetup(install_requires=['tensorflow>=2.3'])\n", "2.3"),
    ("environment.yml", "dependencies:\n  - tensorflow=2.6\n", "2.6"),
    ("Pipfile", '[packages]\ntensorflow = "==2.9.1"\n', "2.9"),
    ("setup.cfg", "[options]\ninstall_requires =\n    tensorflow>=2.11\n", "2.11"),
    ("pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.8"\ntensorflow = {version = "^2.5"}\n', "2.5"),
    ("Pipfile", '[packages]\ntensorflow = "*"\n[dev-packages]\ntensorflow-gpu = "==2.7"\n', "2.7"),
])
def test_each_dependency_file_pins(tmp_path: Path, name: str, text: str, version: str) -> None:
    write(tmp_path, {name: text, "train.py": TF2_TRAINING})
    settings = settings_of(tmp_path)
    assert str(settings.tf_version) == version and settings.tf_version_source.startswith(name)


def test_a_subfolder_with_its_own_requirements_is_its_own_project_for_versions(tmp_path: Path) -> None:
    write(tmp_path, {
        ".git/HEAD": "", "README.md": "examples of two eras\n",
        "v1/requirements.txt": "tensorflow==1.15\n", "v1/train.py": TF2_TRAINING,
        "v2/requirements.txt": "tensorflow==2.12\n", "v2/train.py": TF2_TRAINING,
    })
    assert str(settings_of(tmp_path, tmp_path / "v1" / "train.py").tf_version) == "1.15"
    assert str(settings_of(tmp_path, tmp_path / "v2").tf_version) == "2.12"
    lines = detlint(".", cwd=tmp_path).stdout.splitlines()
    v1 = [line for line in lines if line.startswith("v1/train.py") and "DET201" in line]
    v2 = [line for line in lines if line.startswith("v2/train.py") and "DET201" in line]
    assert v1 and "TF_CUDNN_DETERMINISTIC" in v1[0] and "TF 1.15" in v1[0]
    assert v2 and "enable_op_determinism()" in v2[0] and "TF 2.12" in v2[0]


def test_tf1_code_with_nothing_pinned_is_checked_as_tf1_and_says_so(tmp_path: Path) -> None:
    write(tmp_path, {".git/HEAD": "", "train.py": TF1_TRAINING})
    settings = json.loads(detlint(".", "--show-settings", cwd=tmp_path).stdout)
    assert settings["tensorflow-version"] == "1.15"
    assert settings["tensorflow-version-source"].startswith("TensorFlow 1.15 assumed from tf.placeholder use (1 file)")
    out = detlint(".", cwd=tmp_path).stdout
    det201 = next(line for line in out.splitlines() if "DET201" in line)
    assert "TF_CUDNN_DETERMINISTIC" in det201 and "assumed" not in det201  # the concise line: what and the fix
    full = detlint(".", "--output-format", "full", cwd=tmp_path).stdout
    why = next(line for line in full.splitlines() if line.strip().startswith("= why: ") and "DET201" not in line
               and "TF_CUDNN_DETERMINISTIC" in line)
    assert "TensorFlow 1.15 assumed from tf.placeholder use" in why
    assert "enable_op_determinism" not in out


@pytest.mark.parametrize("text, version", [
    # TF 2 code written in the TF 1 style: no evidence of TF 1
    ("import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\nx = tf.placeholder(tf.float32)\n", "2.21"),
    ("from tensorflow.contrib import slim\n", "1.15"),
    # Keras 2 code is TF 2.0-era code (it runs up to 2.15; the older advice works on both)
    ("from keras.layers import Dense, merge\nmodel.fit_generator(gen)\n", "2.0"),
    # prose and comments are not code
    ("import tensorflow as tf\n# sess = tf.Session()\n    # x = tf.placeholder(tf.float32)\n", "2.21"),
    ("import tensorflow as tf\nmodel.fit_generator(gen)\ntf.config.experimental.enable_op_determinism()\n", "2.15"),
    # a file that never imports TensorFlow or Keras says nothing of their era (a PyTorch SGD(lr=))
    ("import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.fit_generator(gen)\n", "2.21"),
    ("import keras\nkeras.utils.set_random_seed(1)\ny = keras.ops.relu(x)\n", "2.21"),
])
def test_evidence_of_the_era(tmp_path: Path, text: str, version: str) -> None:
    write(tmp_path, {".git/HEAD": "", "train.py": text})
    assert str(settings_of(tmp_path).tf_version) == version


def test_most_files_decide_when_the_code_mixes_eras(tmp_path: Path) -> None:
    write(tmp_path, {".git/HEAD": "", "a.py": TF1_TRAINING, "b.py": TF1_TRAINING,
                     "c.py": "import tensorflow as tf\ntf.config.experimental.enable_op_determinism()\n"})
    settings = settings_of(tmp_path)
    assert str(settings.tf_version) == "1.15" and "(2 files)" in settings.tf_version_source


def test_a_pin_wins_over_the_code(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "tensorflow==2.4\n", "train.py": TF1_TRAINING})
    settings = settings_of(tmp_path)
    assert str(settings.tf_version) == "2.4" and settings.tf_version_assumed == ""


def fake_environment(prefix: Path, dist: str, version: str) -> Path:
    """An environment as pip leaves it: pyvenv.cfg and the package's .dist-info folder."""
    (prefix / "lib" / "python3.11" / "site-packages" / f"{dist}-{version}.dist-info").mkdir(parents=True)
    (prefix / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return prefix


def test_the_installed_version_comes_from_the_projects_environment(tmp_path: Path) -> None:
    """A pre-commit hook runs in its own environment (its VIRTUAL_ENV has no TensorFlow): the
    project's .venv says which TensorFlow the code runs on, as it does for the command line."""
    write(tmp_path / "proj", {".git/HEAD": "", "train.py": TF2_TRAINING})
    fake_environment(tmp_path / "proj" / ".venv", "tensorflow_cpu", "2.6.2")
    hook_env = fake_environment(tmp_path / "hook-env", "flake8", "7.0.0")
    from_hook = settings_of(tmp_path / "proj", env={"VIRTUAL_ENV": str(hook_env)})
    from_cli = settings_of(tmp_path / "proj")
    assert (str(from_hook.tf_version), str(from_cli.tf_version)) == ("2.6", "2.6")
    assert from_cli.tf_version_source == f"tensorflow-cpu 2.6.2 installed in {tmp_path / 'proj' / '.venv'}"
    conda = fake_environment(tmp_path / "conda", "tensorflow", "2.9.0")
    assert str(settings_of(tmp_path / "proj", env={"CONDA_PREFIX": str(conda)}).tf_version) == "2.9"


def test_code_that_cannot_run_on_the_installed_version_is_checked_for_its_own_era(tmp_path: Path) -> None:
    write(tmp_path / "proj", {".git/HEAD": "", "train.py": TF1_TRAINING})
    fake_environment(tmp_path / "proj" / ".venv", "tensorflow", "2.12.0")
    settings = settings_of(tmp_path / "proj")
    assert str(settings.tf_version) == "1.15" and "assumed from tf.placeholder" in settings.tf_version_source
    write(tmp_path / "proj", {"train.py": TF2_TRAINING})
    assert str(settings_of(tmp_path / "proj").tf_version) == "2.12"


def notebook(*cells: tuple[str, list[str]]) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": [source],
         "outputs": [{"output_type": "stream", "name": "stdout", "text": text}]} for source, text in cells]})


def test_a_notebook_that_printed_its_tensorflow_version_says_it(tmp_path: Path) -> None:
    """The version is the notebook's own (tests/test_program_versions.py): the project's stays
    what its pins, environment and code say."""
    write(tmp_path, {".git/HEAD": "", "lesson.ipynb": notebook(
        ("import tensorflow as tf\nprint(tf.__version__)", ["2.3.0\n"]),
        ("model.fit(x, y)", ["Epoch 1/1\n"]))})
    assert str(settings_of(tmp_path).tf_version) != "2.3"
    shown = json.loads(detlint(".", "--show-settings", cwd=tmp_path).stdout)["programs"]["lesson.ipynb"]
    assert shown["tensorflow-version"] == "2.3"
    assert shown["tensorflow-version-source"] == "tf.__version__ printed as 2.3.0"


def test_a_notebooks_prose_is_no_evidence(tmp_path: Path) -> None:
    guide = json.loads(notebook(("import tensorflow as tf\nmodel.fit(x, y)", [])))
    guide["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": ["In TF1 you wrote `tf.Session()`."]})
    write(tmp_path, {".git/HEAD": "", "migrate.ipynb": json.dumps(guide)})
    assert str(settings_of(tmp_path).tf_version) == "2.21"


def test_a_few_files_of_another_era_decide_nothing(tmp_path: Path) -> None:
    """A migration example among current code: one TF1 file of twelve that use TensorFlow."""
    files = {".git/HEAD": "", "legacy/old_way.py": TF1_TRAINING}
    files.update({f"models/m{i}.py": TF2_TRAINING for i in range(11)})
    write(tmp_path, files)
    assert str(settings_of(tmp_path).tf_version) == "2.21"
    write(tmp_path, {"legacy/old_way_2.py": TF1_TRAINING})  # two of thirteen: more than a tenth
    assert str(settings_of(tmp_path).tf_version) == "1.15"


def test_a_utf16_environment_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "environment.yml").write_bytes("dependencies:\n  - tensorflow=2.8\n".encode("utf-16"))
    write(tmp_path, {"train.py": TF2_TRAINING})
    assert str(settings_of(tmp_path).tf_version) == "2.8"


def test_tf2_seeding_and_lr_mean_early_tf2_whatever_a_few_tf1_lessons_say(tmp_path: Path) -> None:
    """A TF 2.0 tutorial repository: tf.random.set_seed (2.0 on) in some lessons, optimizers
    given lr= (before 2.11) in others, and a few TF1 lessons: checked as TF 2.0."""
    files = {".git/HEAD": "", "lesson1/tf1.py": TF1_TRAINING}
    files.update({f"lesson{i}/main.py": "import tensorflow as tf\ntf.random.set_seed(22)\n" for i in range(2, 5)})
    files.update({f"lesson{i}/train.py": "from tensorflow import keras\nopt = keras.optimizers.Adam(lr = 1e-3)\n"
                  for i in range(5, 7)})
    write(tmp_path, files)
    settings = settings_of(tmp_path)
    assert str(settings.tf_version) == "2.0"
    assert "tf.random.set_seed" in settings.tf_version_source and "Adam(lr=" in settings.tf_version_source


def test_a_damaged_notebook_cell_is_no_evidence_and_no_crash(tmp_path: Path) -> None:
    """Cell sources of numbers or null (a notebook a tool wrote badly) are read as no text."""
    broken = json.loads(notebook(("import tensorflow as tf\nsess = tf.Session()", [])))
    broken["cells"].append({"cell_type": "code", "metadata": {}, "source": [1, None, "x = 1\n"], "outputs": []})
    broken["cells"].append({"cell_type": "code", "metadata": {}, "source": 7, "outputs": []})
    write(tmp_path, {".git/HEAD": "", "old.ipynb": json.dumps(broken)})
    assert str(settings_of(tmp_path).tf_version) == "1.15"
    result = detlint(".", cwd=tmp_path)
    assert result.returncode in (0, 1) and "internal error" not in result.stderr


@pytest.mark.parametrize("files, version, source", [
    ({"requirements.txt": "numpy\ntorch==1.8.1\n"}, "1.8", "requirements.txt pins torch==1.8.1"),
    ({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.2,<2.5"]\n'}, "2.2", "pyproject.toml pins torch>=2.2,<2.5"),
    # a floor is only a minimum for PyTorch: the installed release (or the newest) meets it
    ({"requirements.txt": "torch>=0.4.0\n"}, None, None),
    ({"requirements.txt": "torchvision==0.20\ntorch-geometric\n"}, None, None),
    ({"requirements.txt": "torch==1.4.0\n"}, "1.4", "requirements.txt pins torch==1.4.0"),
    ({"requirements.txt": "torch==0.4.1\n"}, "1.0", "older than any version detlint knows; checked as 1.0"),
])
def test_the_torch_version_comes_from_the_pins(tmp_path: Path, files: dict[str, str], version: str | None,
                                               source: str | None) -> None:
    """None: nothing pinned, so the torch installed here (the test extras') or the newest known."""
    from detlint.settings.pins import installed_version

    if version is None:
        here = installed_version("torch")
        version, source = (str(here[0]), "installed torch") if here else ("2.15", "newest version detlint knows")
    write(tmp_path, {".git/HEAD": "", "train.py": "import torch\n", **files})
    target = settings_of(tmp_path).targets["torch"]
    assert (str(target.version), source in target.source) == (version, True), target


def test_the_torch_version_from_the_environment_option_and_table(tmp_path: Path) -> None:
    write(tmp_path / "proj", {".git/HEAD": "", "train.py": "import torch\n"})
    fake_environment(tmp_path / "proj" / ".venv", "torch", "2.4.1+cu121")
    target = settings_of(tmp_path / "proj").targets["torch"]
    assert (str(target.version), target.source) == ("2.4", f"torch 2.4.1+cu121 installed in {tmp_path / 'proj' / '.venv'}")
    shown = json.loads(detlint("--show-settings", "--torch-version", "1.12", "train.py", cwd=tmp_path / "proj").stdout)
    assert (shown["torch-version"], shown["torch-version-source"]) == ("1.12", "--torch-version")
    assert shown["tensorflow-version-source"] != "--torch-version"
    write(tmp_path / "proj", {"pyproject.toml": '[tool.detlint]\ntorch-version = "2.9"\n'})
    shown = json.loads(detlint("--show-settings", "train.py", cwd=tmp_path / "proj").stdout)
    assert (shown["torch-version"], shown["torch-version-source"]) == ("2.9", "pyproject.toml [tool.detlint] torch-version")
    bad = detlint("--torch-version", "3.4", "train.py", cwd=tmp_path / "proj")
    assert bad.returncode == 2 and "PyTorch 3.4 is outside the versions detlint knows (1.0 to 2.15)" in bad.stderr


def test_the_torch_version_decides_the_message_and_fix(tmp_path: Path) -> None:
    program = ("import torch\ntorch.manual_seed(0)\nconv = torch.nn.Conv2d(3, 8, 3).cuda()\n"
               "opt = torch.optim.SGD(conv.parameters(), lr=0.1)\nconv(x).sum().backward()\nopt.step()\n")
    write(tmp_path, {".git/HEAD": "", "train.py": program})
    old = detlint("--torch-version", "1.7", "train.py", cwd=tmp_path).stdout
    new = detlint("--torch-version", "2.4", "train.py", cwd=tmp_path).stdout
    assert "PyTorch 1.7" in old and "torch.set_deterministic(True)" in old
    assert "PyTorch 2.4" in new and "torch.use_deterministic_algorithms(True)" in new


@pytest.mark.parametrize("pin, version", [("pytorch-lightning==1.4.9", "1.4"), ("lightning>=2.1,<2.3", "2.1"),
                                          ("pytorch-lightning>=1.0", None)])
def test_the_lightning_version_comes_from_its_pins_and_decides_what_deterministic_does(
        tmp_path: Path, pin: str, version: str | None) -> None:
    """Before Lightning 1.5, Trainer(deterministic=True) set only cuDNN's flag: the index_add_ in
    the loss stays nondeterministic, and the message says why. A floor pin decides nothing."""
    program = ("import torch\nimport pytorch_lightning as pl\n\n\nclass Net(pl.LightningModule):\n"
               "    def training_step(self, batch, i):\n        x, y = batch\n"
               "        return torch.zeros(4, 3).index_add_(0, y, x).mean()\n\n\n"
               "pl.seed_everything(1)\npl.Trainer(deterministic=True).fit(Net(), loader)\n")
    write(tmp_path, {".git/HEAD": "", "requirements.txt": f"torch==2.4.0\n{pin}\n", "train.py": program})
    target = settings_of(tmp_path).targets["lightning"]
    assert str(target.version) == (version or "2.6") and (pin in target.source) == (version is not None), target
    out = detlint("train.py", cwd=tmp_path).stdout
    if version == "1.4":
        assert "train.py:8:" in out and "DET602" in out and "only sets cuDNN's deterministic flag" in out, out
    else:
        assert "DET602" not in out, out


def test_a_subfolder_pinning_other_packages_keeps_the_projects_framework_pin(tmp_path: Path) -> None:
    write(tmp_path, {".git/HEAD": "", "requirements.txt": "torch<2.8,>=2.1\ntensorflow==2.12\n",
                     "lesson/requirements.txt": "matplotlib\n", "lesson/train.py": "import torch\n"})
    settings = settings_of(tmp_path, tmp_path / "lesson" / "train.py")
    assert settings.version_root == (tmp_path / "lesson").resolve()
    assert (str(settings.targets["torch"].version), str(settings.tf_version)) == ("2.1", "2.12")
    assert settings.targets["torch"].source.startswith("requirements.txt pins torch")
