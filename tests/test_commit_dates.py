"""A program's last commit caps the framework versions it was written for: real git checkouts with
commits dated in the past, checked end to end by the CLI and by flake8."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from test_program_versions import TF1, TF2, TORCH, lines_of, notebook, run, write

from detlint.knowledge.kb import load
from detlint.settings.commit_dates import SWEEP, CommitDates

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def commit(root: Path, day: str, files: dict[str, str] | None = None, message: str = "work") -> None:
    """Write ``files`` and commit everything as of ``day``."""
    write(root, files or {})
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    stamp = f"{day}T12:00:00+00:00"
    env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp, "GIT_AUTHOR_NAME": "a",
           "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"}
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=root, check=True, env=env)


def programs(root: Path) -> dict[str, dict[str, str]]:
    return json.loads(run(".", "--show-settings", cwd=root).stdout)["programs"]


def test_the_release_dates_are_in_the_knowledge_base_oldest_first() -> None:
    released = load().released
    assert set(released) == {"tensorflow", "torch", "jax", "lightning"}
    tf = dict(released["tensorflow"])
    assert str(tf[next(v for v in tf if str(v) == "2.4")]) == "2020-12-14"
    for key, dates in released.items():
        assert [v for v, _ in dates] == sorted(v for v, _ in dates), key


def test_old_programs_get_the_release_that_was_out_when_they_were_last_changed(tmp_path: Path) -> None:
    """TF 1 code from 2018 is checked as the oldest TF detlint knows (1.13), not 1.15; PyTorch code
    from March 2020 as 1.4, not the installed release; the message says why, and flake8 agrees."""
    commit(tmp_path, "2018-03-05", {"tf1/lesson.py": TF1})
    commit(tmp_path, "2020-03-02", {"torch/train.py": TORCH})
    shown = programs(tmp_path)
    assert shown["tf1/lesson.py"]["tensorflow-version"] == "1.13"
    assert "last changed on 2018-03-05, when TensorFlow 1.6 was current" in shown["tf1/lesson.py"]["tensorflow-version-source"]
    assert shown["torch/train.py"]["torch-version"] == "1.4"
    assert "the newest release when train.py was last changed on 2020-03-02" in shown["torch/train.py"]["torch-version-source"]
    out = run(".", "--output-format", "full", cwd=tmp_path).stdout
    det602 = lines_of(out, "torch/train.py", "DET602")[0]
    assert "torch.backends.cudnn.deterministic = True" in det602 and "use_deterministic_algorithms" not in det602
    assert "PyTorch 1.4 assumed: train.py was last changed on 2020-03-02" in det602
    flake8 = run("--select", "DET", "torch", cwd=tmp_path, tool="flake8").stdout
    assert [line.lstrip("./") for line in flake8.splitlines() if " DET602 " in line] == \
        lines_of(run("torch", cwd=tmp_path).stdout, "torch/train.py", "DET602")


def test_a_floor_pin_gives_the_newest_release_out_by_the_last_commit(tmp_path: Path) -> None:
    """``tensorflow>=1.15`` beside TF 2 code last changed in December 2020: TF 2.4, not 1.15; an
    exact pin still wins over the date."""
    commit(tmp_path, "2020-12-20", {"requirements.txt": "tensorflow>=1.15.0\n", "train.py": TF2})
    shown = programs(tmp_path)
    assert shown["train.py"]["tensorflow-version"] == "2.4"
    assert "pins tensorflow>=1.15.0" in shown["train.py"]["tensorflow-version-source"]
    commit(tmp_path, "2020-12-21", {"requirements.txt": "tensorflow==2.1.0\n"})
    assert programs(tmp_path) == {}  # the project's own pin, 2.1, for every program
    assert json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)["tensorflow-version"] == "2.1"


def test_a_floor_pin_holds_until_the_project_was_last_changed(tmp_path: Path) -> None:
    """An example last changed in 2020 in a project whose code changed until late 2023 under
    ``tensorflow>=2.2.0``: the project ran it on the release of late 2023 (2.15), not 2020's 2.4.
    Without a pin the program's own date stands."""
    commit(tmp_path, "2020-12-20", {"requirements.txt": "tensorflow>=2.2.0\n", "examples/old.py": TF2})
    commit(tmp_path, "2023-12-01", {"lib/layers.py": "import tensorflow as tf\n"})
    shown = programs(tmp_path)["examples/old.py"]
    assert shown["tensorflow-version"] == "2.15", shown
    assert "the project was last changed on 2023-12-01" in shown["tensorflow-version-source"]
    commit(tmp_path, "2023-12-02", {"requirements.txt": ""})
    assert programs(tmp_path)["examples/old.py"]["tensorflow-version"] == "2.4"


def test_only_the_frameworks_code_dates_the_project(tmp_path: Path) -> None:
    """A later README edit or a port to another framework runs none of this code: the example
    stays at its own date's release under the floor pin."""
    commit(tmp_path, "2020-12-20", {"requirements.txt": "tensorflow>=2.2.0\n", "examples/old.py": TF2})
    commit(tmp_path, "2024-06-01", {"README.md": "# now on TF 2.16\n", "torch_port/train.py": TORCH})
    assert programs(tmp_path)["examples/old.py"]["tensorflow-version"] == "2.4"


def test_what_a_notebook_printed_outweighs_its_date(tmp_path: Path) -> None:
    commit(tmp_path, "2018-06-01", {"nb.ipynb": notebook(("import torch\nprint(torch.__version__)", "1.10.0\n"),
                                                         (TORCH, ""))})
    assert programs(tmp_path)["nb.ipynb"]["torch-version"] == "1.10"


def test_a_date_older_than_the_code_needs_is_not_trusted(tmp_path: Path) -> None:
    """torch.compile needs 2.0: a commit dated 2019 cannot have run it; the code era decides."""
    code = TORCH.replace("model = torch.nn.Conv2d(3, 8, 3)", "model = torch.compile(torch.nn.Conv2d(3, 8, 3))")
    commit(tmp_path, "2019-05-01", {"train.py": code})
    shown = programs(tmp_path).get("train.py", {})
    assert "last changed" not in shown.get("torch-version-source", "")


def test_renames_are_followed_sweeps_and_edits_are_not_dates(tmp_path: Path) -> None:
    """A file moved unchanged keeps its date; a commit that touches more than SWEEP files (a
    reformat) does not date them; a file edited since its last commit has no date."""
    commit(tmp_path, "2019-05-01", {"old/a.py": TORCH, "b.py": TORCH, "c.py": TORCH})
    subprocess.run(["git", "mv", "old/a.py", "new_a.py"], cwd=tmp_path, check=True)
    commit(tmp_path, "2023-06-01", message="move")
    many = {f"pkg/m{i}.py": f"X = {i}\n" for i in range(SWEEP + 1)}
    commit(tmp_path, "2020-01-05", {**many, "b.py": TORCH + "# formatted\n"}, message="sweep")
    (tmp_path / "c.py").write_text(TORCH + "# edited\n")
    dates = CommitDates(tmp_path, cache_dir=tmp_path / "cache")
    assert str(dates.date(tmp_path / "new_a.py")) == "2019-05-01"
    assert str(dates.date(tmp_path / "b.py")) == "2019-05-01"
    assert str(dates.date(tmp_path / "pkg/m1.py")) == "2020-01-05"  # created by the sweep: its only date
    assert dates.date(tmp_path / "c.py") is None


def test_no_checkout_no_date(tmp_path: Path) -> None:
    write(tmp_path, {".git/HEAD": "", "train.py": TORCH})  # a folder git does not read
    assert CommitDates(tmp_path, keep=False).date(tmp_path / "train.py") is None
    plain = tmp_path / "plain"
    write(plain, {"train.py": TORCH})
    assert CommitDates(plain, keep=False).date(plain / "train.py") is None


def test_a_programs_own_date_outweighs_what_the_programs_beside_it_show(tmp_path: Path) -> None:
    """A notebook rewritten in March 2021 beside one that printed PyTorch 0.3 tensors in 2018: the
    old outputs speak for a program with no evidence of its own, not for one with a date."""
    old = notebook(("import torch\nx = torch.ones(2)\nx", "\n 1\n 1\n[torch.FloatTensor of size 2]\n"), (TORCH, ""))
    commit(tmp_path, "2018-05-01", {"lessons/A.ipynb": old, "lessons/B.ipynb": notebook((TORCH, ""))})
    assert programs(tmp_path)["lessons/B.ipynb"]["torch-version"] == "1.0"
    commit(tmp_path, "2021-03-12", {"lessons/B.ipynb": notebook((TORCH + "# torchtext.legacy\n", ""))})
    shown = programs(tmp_path)["lessons/B.ipynb"]
    assert shown["torch-version"] == "1.8" and "2021-03-12" in shown["torch-version-source"]


def test_a_companion_librarys_era_bounds_a_later_date(tmp_path: Path) -> None:
    """torchtext.legacy existed with torchtext 0.9-0.11, which required PyTorch 1.8-1.10: a notebook
    moved in 2024 with its kernel metadata touched is still checked at 1.10, not 2.1; the old
    torchtext.data.Field at 1.7 or older."""
    legacy = TORCH.replace("import torch\n", "import torch\nfrom torchtext.legacy import data\n")
    field = TORCH.replace("import torch\n", "import torch\nfrom torchtext.data import Field, BucketIterator\n")
    commit(tmp_path, "2024-01-22", {"legacy/1.ipynb": notebook((legacy, "")), "old/train.py": field})
    shown = programs(tmp_path)
    assert shown["legacy/1.ipynb"]["torch-version"] == "1.10"
    assert shown["old/train.py"]["torch-version"] == "1.7"


def test_a_program_that_runs_tensorflow_through_tensorflow_datasets_gets_a_tensorflow_version(tmp_path: Path) -> None:
    """A JAX example whose input pipeline is tensorflow_datasets runs TensorFlow: its TF version is
    its own (from its last commit), not the project's installed one."""
    jax_tfds = ("import jax\nimport optax\nimport tensorflow_datasets as tfds\n\n"
                "ds = tfds.load('mnist', split='train')\nparams = optax.apply_updates(params, updates)\n")
    commit(tmp_path, "2020-12-20", {"examples/mnist.py": jax_tfds})
    shown = programs(tmp_path)["examples/mnist.py"]
    assert shown["tensorflow-version"] == "2.4" and shown["jax-version"] == "0.2"


def test_the_projects_own_environment_outweighs_the_date(tmp_path: Path) -> None:
    """PyTorch 2.3 installed in the project's .venv is what the 2019 program runs today; the
    version installed beside detlint is not (a pre-commit hook's own environment)."""
    commit(tmp_path, "2019-05-01", {"train.py": TORCH, ".gitignore": ".venv/\n"})
    assert programs(tmp_path)["train.py"]["torch-version"] == "1.1"
    site = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages" / "torch-2.3.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Name: torch\nVersion: 2.3.0\n")
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    shown = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)
    assert shown["torch-version"] == "2.3" and "train.py" not in shown["programs"]


def test_the_date_replaces_a_guess_from_the_codes_era(tmp_path: Path) -> None:
    """fit_generator and lr= are Keras 2 code, "typically written for TF 2.0": a notebook last
    changed in May 2020 ran TF 2.2 (Colab's %tensorflow_version 2.x), not 2.0."""
    keras2 = TF2.replace("model.fit(x, y)", "model.fit_generator(gen)").replace(
        'model.compile("adam", "mse")', 'model.compile(tf.keras.optimizers.RMSprop(lr=0.001), "mse")')
    commit(tmp_path, "2020-05-20", {"nb.ipynb": notebook(("%tensorflow_version 2.x", ""), (keras2, ""))})
    shown = programs(tmp_path)["nb.ipynb"]
    assert shown["tensorflow-version"] == "2.2" and "2020-05-20" in shown["tensorflow-version-source"]


def test_keras_core_code_ran_on_the_tensorflow_of_its_day(tmp_path: Path) -> None:
    """keras_core (the Keras 3 preview, its own package in 2023) is no evidence of TF >= 2.16, where
    TF's bundled Keras became Keras 3: a keras_core example pinned to a TF 2.14 nightly is TF 2.14."""
    example = ("import keras_core as keras\nimport tensorflow as tf\n\nx = keras.ops.ones((2, 3))\n"
               "model = keras.Sequential([keras.layers.Dense(1)])\nmodel.compile('adam', 'mse')\nmodel.fit(x, x)\n")
    commit(tmp_path, "2023-08-01", {"requirements.txt": "tf-nightly==2.14.0.dev20230712\n", "examples/demo.py": example})
    shown = json.loads(run(".", "--show-settings", cwd=tmp_path).stdout)
    assert shown["tensorflow-version"] == "2.14" and "examples/demo.py" not in shown["programs"]


def test_a_file_only_sweeps_touched_is_dated_by_the_oldest(tmp_path: Path) -> None:
    many = {f"m{i}.py": f"X = {i}\n" for i in range(SWEEP + 5)}
    commit(tmp_path, "2019-12-01", many, message="import")
    commit(tmp_path, "2024-06-01", {name: "# licence\n" + text for name, text in many.items()}, message="headers")
    assert str(CommitDates(tmp_path, keep=False).date(tmp_path / "m1.py")) == "2019-12-01"


def test_shallow_clones_and_impossible_dates_give_no_date(tmp_path: Path) -> None:
    source = tmp_path / "source"
    commit(source, "2019-05-01", {"train.py": TORCH})
    commit(source, "2024-05-01", {"README.md": "news\n"})
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{source}", str(shallow)], check=True)
    assert CommitDates(shallow, keep=False).date(shallow / "train.py") is None  # its oldest commit adds all
    assert str(CommitDates(source, keep=False).date(source / "train.py")) == "2019-05-01"
    far = tmp_path / "far"
    write(far, {"train.py": TORCH})
    subprocess.run(["git", "init", "-q"], cwd=far, check=True)
    subprocess.run(["git", "add", "-A"], cwd=far, check=True)
    stamp = "@253402300800 +0000"  # the year 10000
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-q", "-m", "x"], cwd=far,
                   check=True, env={**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
    assert CommitDates(far, keep=False).date(far / "train.py") is None
    assert run(".", "--show-settings", cwd=far).returncode == 0


def test_git_never_runs_a_command_the_repository_configures(tmp_path: Path) -> None:
    """core.fsmonitor and clean filters are commands a repository's own .git/config names: reading
    dates must not start them (detlint never runs the code it checks)."""
    commit(tmp_path, "2019-05-01", {"train.py": TORCH, ".gitattributes": "*.py filter=x\n"})
    planted = tmp_path / "planted"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {planted}\ncat\n")
    hook.chmod(0o755)
    subprocess.run(["git", "config", "core.fsmonitor", str(hook)], cwd=tmp_path, check=True)
    subprocess.run(["git", "config", "filter.x.clean", str(hook)], cwd=tmp_path, check=True)
    os.utime(tmp_path / "train.py", (2_000_000_000, 2_000_000_000))  # looks changed to a status refresh
    assert str(CommitDates(tmp_path, keep=False).date(tmp_path / "train.py")) == "2019-05-01"
    run(".", "--show-settings", cwd=tmp_path)
    assert not planted.exists()


def test_dates_are_kept_for_the_next_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm run reads the dates of the commit checked out from the cache, and runs no git log."""
    repo = tmp_path / "repo"
    commit(repo, "2019-05-01", {"train.py": TORCH})
    cache = tmp_path / "cache"
    assert str(CommitDates(repo, cache_dir=cache).date(repo / "train.py")) == "2019-05-01"
    import detlint.settings.commit_dates as module

    monkeypatch.setattr(module, "_read_history", lambda *a, **k: pytest.fail("read the history again"))
    assert str(CommitDates(repo, cache_dir=cache).date(repo / "train.py")) == "2019-05-01"


def test_the_projects_environment_within_a_floor_pin_outweighs_the_date(tmp_path: Path) -> None:
    """tensorflow>=1.15 with TF 2.3 in the project's .venv: 2.3, not the newest release out in 2022."""
    commit(tmp_path, "2022-06-01", {"requirements.txt": "tensorflow>=1.15\n", "train.py": TF2, ".gitignore": ".venv/\n"})
    assert programs(tmp_path)["train.py"]["tensorflow-version"] == "2.9"
    site = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages" / "tensorflow-2.3.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Name: tensorflow\nVersion: 2.3.0\n")
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    shown = programs(tmp_path)["train.py"]
    assert shown["tensorflow-version"] == "2.3" and "installed in" in shown["tensorflow-version-source"]


def test_a_readme_cannot_state_a_release_that_came_after_it(tmp_path: Path) -> None:
    """"Download Pytorch 2.7" in a README last changed in 2018 means Python 2.7: PyTorch 2.7 came
    out in 2025. The statement is passed over and the program's own date decides; the same words
    in a README changed in 2025 are the version."""
    readme = "# Wide-ResNet\n\n- Download [Pytorch 2.7](https://pytorch.org) and clone the repository.\n"
    commit(tmp_path, "2018-04-05", {"README.md": readme})
    commit(tmp_path, "2020-03-02", {"train.py": TORCH})
    shown = programs(tmp_path)["train.py"]
    assert shown["torch-version"] == "1.4", shown
    assert "README" not in shown["torch-version-source"]
    commit(tmp_path, "2025-06-01", {"README.md": readme + "\nTested again.\n"})
    shown = programs(tmp_path)["train.py"]
    assert shown["torch-version"] == "2.7", shown
    assert "README.md says Pytorch 2.7" in shown["torch-version-source"]


def test_one_old_line_in_an_imported_module_gives_way_to_a_recent_date(tmp_path: Path) -> None:
    """A 2023 script with no era of its own imports a module holding one TF1-only line (a dead
    `tf.logging.info`): the program is TF 2.12, the newest release then, not TF 1.15. The same
    module in a 2020 project (TF 1.15 a few months old) still makes it TF 1 code."""
    layers = "import tensorflow as tf\n\n\ndef block(x, log=False):\n    if log:\n        tf.logging.info('x')\n" \
             "    return tf.keras.layers.Dense(4)(x)\n"
    train = "import tensorflow as tf\n\nfrom layers import block\n\ninputs = tf.keras.Input((8,))\n" \
            "model = tf.keras.Model(inputs, block(inputs))\nmodel.compile('sgd', 'mse')\nmodel.fit(x, y)\n"
    recent = tmp_path / "recent"
    commit(recent, "2023-05-22", {"layers.py": layers, "train.py": train})
    shown = programs(recent)["train.py"]
    assert shown["tensorflow-version"] == "2.12", shown
    old = tmp_path / "old"
    commit(old, "2020-02-10", {"layers.py": layers, "train.py": train})
    assert programs(old)["train.py"]["tensorflow-version"] == "1.15", programs(old)
