"""Files named one by one (as pre-commit passes them): the programs that import them are checked
too, and their program-level findings are reported at their entry files."""
from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import detlint_here

SEED = "import random\n\nimport numpy as np\n\n\ndef seed_all(seed=0):\n    random.seed(seed)\n    np.random.seed(seed)\n"
TRAIN = ("import random\n\nfrom utils.seed import seed_all\n\n\ndef main():\n    seed_all()\n"
         "    files = ['a', 'b', 'c']\n    random.shuffle(files)\n    import tensorflow as tf\n\n"
         "    tf.keras.optimizers.SGD().apply_gradients([])  # it trains\n\n\nif __name__ == '__main__':\n    main()\n")


def detlint(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return detlint_here(["--no-cache", *args], project)


def make_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "utils").mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    (project / "utils" / "seed.py").write_text(SEED)
    (project / "train.py").write_text(TRAIN)
    # unrelated: a program that does not import the module, and a module with a file finding
    (project / "other.py").write_text("import random\n\nif __name__ == '__main__':\n    random.shuffle([1, 2])\n")
    (project / "utils" / "env.py").write_text("import os\nimport utils.seed\nos.environ['TF_CUDNN_USE_AUTOTUNE'] = '0'\n")
    return project


def test_removing_the_seed_from_a_named_helper_fails_at_the_program(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert detlint(project, "utils/seed.py").returncode == 0
    (project / "utils" / "seed.py").write_text(SEED.replace("    random.seed(seed)\n", ""))
    result = detlint(project, "utils/seed.py")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if ": DET" in line]
    assert len(lines) == 1 and lines[0].startswith("train.py:9:5: DET104"), result.stdout


def test_a_program_two_imports_away_is_found(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (project / "utils" / "seed.py").write_text(SEED.replace("    random.seed(seed)\n", ""))
    (project / "utils" / "setup.py").write_text("from utils.seed import seed_all\n\n\ndef setup():\n    seed_all()\n")
    (project / "train.py").write_text(TRAIN.replace("from utils.seed import seed_all", "from utils.setup import setup")
                                      .replace("    seed_all()", "    setup()"))
    result = detlint(project, "utils/seed.py")
    assert "train.py:9:5: DET104" in result.stdout, result.stdout + result.stderr


def test_folders_are_checked_as_before(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (project / "utils" / "seed.py").write_text(SEED.replace("    random.seed(seed)\n", ""))
    result = detlint(project, "utils/")
    assert "DET104" not in result.stdout and "DET203" in result.stdout, result.stdout


def test_the_fix_hook_fails_too(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (project / "utils" / "seed.py").write_text(SEED.replace("    random.seed(seed)\n", ""))
    result = detlint(project, "--fix", "utils/seed.py")
    assert result.returncode == 1 and "train.py:9:5: DET104" in result.stdout, result.stdout + result.stderr
    assert (project / "train.py").read_text() == TRAIN


def test_an_import_names_a_module_only_by_the_end_of_its_path(tmp_path: Path) -> None:
    """`from nets.resnet import f` loads a nets package's resnet module, never a nets.py elsewhere
    in the project; bare, package-qualified, from- and relative imports of nets.py all name it."""
    from detlint.lint.programs.reach import ImportIndex

    files = {
        "lib/nets.py": "def build():\n    return 1\n",
        "other/nets/__init__.py": "", "other/nets/resnet.py": "def f():\n    return 2\n",
        "other/train.py": "from nets.resnet import f\nimport nets.resnet as r\n",  # the other package
        "lib/bare.py": "import nets\n", "lib/named.py": "from nets import build\n",
        "top.py": "import lib.nets as n\n", "top_from.py": "from lib import nets, bare\n",
        "lib/sibling.py": "from . import nets\n", "lib/unrelated.py": "from lib.other import nets_like\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    index = ImportIndex(tmp_path.resolve())
    found = {p.relative_to(tmp_path.resolve()).as_posix() for p in index.importers((tmp_path / "lib/nets.py").resolve(), 1)}
    assert found == {"lib/bare.py", "lib/named.py", "top.py", "top_from.py", "lib/sibling.py"}
    resnet = (tmp_path / "other/nets/resnet.py").resolve()
    assert {p.name for p in index.importers(resnet, 1)} == {"train.py"}


def test_a_star_import_makes_the_importer_a_program_of_the_module(tmp_path: Path) -> None:
    # `from run_helpers import *`: the helpers' findings are judged with the program that runs
    # them (its call sites), as for any other import
    from detlint.lint.programs.reach import ImportIndex

    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "helpers.py").write_text("def f():\n    return 1\n")
    (project / "pkg" / "models.py").write_text("def g():\n    return 2\n")
    (project / "train.py").write_text("from helpers import *\nfrom pkg.models import *  # all of them\nf()\n")
    (project / "other.py").write_text("import helpers_old\n")
    index = ImportIndex(project.resolve())
    train = (project / "train.py").resolve()
    assert index.importers((project / "helpers.py").resolve(), 1) == [train]
    assert index.importers((project / "pkg" / "models.py").resolve(), 1) == [train]
