"""Files named one by one (as pre-commit passes them): the programs that import them are checked
too, and their program-level findings are reported at their entry files."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SEED = "import random\n\nimport numpy as np\n\n\ndef seed_all(seed=0):\n    random.seed(seed)\n    np.random.seed(seed)\n"
TRAIN = ("import random\n\nfrom utils.seed import seed_all\n\n\ndef main():\n    seed_all()\n"
         "    files = ['a', 'b', 'c']\n    random.shuffle(files)\n    import tensorflow as tf\n\n"
         "    tf.keras.optimizers.SGD().apply_gradients([])  # it trains\n\n\nif __name__ == '__main__':\n    main()\n")


def detlint(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "detlint", "--no-cache", *args], cwd=project,
                          capture_output=True, text=True, timeout=300)


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
