"""Where --fix puts what it inserts: after the environment set-up and the framework import, after
calls that reset the graph, under the names the file really binds, and never twice."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import make_linter
from detlint.fix import autofix

CONV_TRAINING = """model = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])
model.compile("sgd", "mse")
model.fit(np.zeros((2, 8, 8, 1)), np.zeros((2, 6, 6, 4)))
"""


def fix(tmp_path: Path, source: str, version: str = "2.21") -> str:
    path = tmp_path / "train.py"
    path.write_text(source)
    results = autofix.fix_files(make_linter(version, root=tmp_path), [path], unsafe=True, write=True)
    assert all(r.error is None for r in results), [r.error for r in results]
    return path.read_text()


def test_inserted_imports_and_seeds_follow_the_environment_block(tmp_path: Path) -> None:
    head = ('import os\nimport numpy as np\nos.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"\n'
            'os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"\nimport tensorflow as tf\n\n')
    fixed = fix(tmp_path, head + CONV_TRAINING)
    assert fixed.startswith(head.rstrip("\n") + "\nimport keras\n\nkeras.utils.set_random_seed(42)\n"
                            "tf.config.experimental.enable_op_determinism()\n"), fixed


def test_seed_goes_after_disable_v2_behavior(tmp_path: Path) -> None:
    source = ("import numpy as np\nimport tensorflow as tf\ntf.compat.v1.disable_v2_behavior()\n"
              "x = tf.compat.v1.placeholder(tf.float32, [None, 3])\n"
              "w = tf.compat.v1.get_variable('w', [3, 1])\n"
              "loss = tf.reduce_sum(tf.matmul(x, w))\n"
              "step = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
              "with tf.compat.v1.Session() as sess:\n"
              "    sess.run(tf.compat.v1.global_variables_initializer())\n"
              "    sess.run(step, {x: np.ones((2, 3))})\n"
              "    print('W', sess.run(w).ravel().tolist())\n")
    fixed = fix(tmp_path, source)
    lines = fixed.splitlines()
    assert lines.index("keras.utils.set_random_seed(42)") > lines.index("tf.compat.v1.disable_v2_behavior()")
    # and it really seeds: two runs of the fixed program agree (real TensorFlow)
    runs = [subprocess.run([sys.executable, "train.py"], cwd=tmp_path, capture_output=True, text=True,
                           env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"}) for _ in range(2)]
    weights = [[line for line in r.stdout.splitlines() if line.startswith("W ")] for r in runs]
    assert weights[0] and weights[0] == weights[1], [r.stderr[-500:] for r in runs]


def test_rebound_names_are_resolved_in_order_and_fixes_are_idempotent(tmp_path: Path) -> None:
    source = "import tensorflow as np\nimport numpy as np\nimport tensorflow as tf\n" + CONV_TRAINING
    fixed = fix(tmp_path, source)
    assert "np.config" not in fixed
    assert fixed.count("tf.config.experimental.enable_op_determinism()") == 1
    again = fix(tmp_path, fixed)
    assert again == fixed


def test_a_statement_already_there_is_not_inserted_again(tmp_path: Path) -> None:
    source = ("import numpy as np\nimport tensorflow as tf\nimport keras\n\n"
              "tf.config.experimental.enable_op_determinism()\n" + CONV_TRAINING)
    fixed = fix(tmp_path, source)
    assert fixed.count("enable_op_determinism()") == 1
    assert fixed.count("keras.utils.set_random_seed(42)") == 1


LIBRARY = '''import numpy as np
import tensorflow as tf


def noise(n):
    return np.random.default_rng().normal(size=n)


def compiled(model):
    model.compile("sgd", "mse", jit_compile=True)
    return model
'''


def test_unsafe_fixes_leave_library_modules_alone(tmp_path: Path) -> None:
    (tmp_path / "lib.py").write_text(LIBRARY)
    (tmp_path / "train.py").write_text("import tensorflow as tf\nfrom lib import compiled, noise\n\n"
                                       "if __name__ == '__main__':\n"
                                       "    model = compiled(tf.keras.Sequential([tf.keras.layers.Dense(1)]))\n"
                                       "    model.fit(tf.zeros((4, 2)) + noise(2), tf.zeros((4, 1)), workers=4)\n")
    linter = make_linter("2.12", root=tmp_path)
    before = {d.code for d in linter.run([tmp_path / "lib.py"]).diagnostics if d.fix_safety == "unsafe"}
    assert {"DET103", "DET301"} <= before  # the findings are reported, with unsafe fixes
    results = autofix.fix_files(make_linter("2.12", root=tmp_path), [tmp_path / "lib.py", tmp_path / "train.py"],
                                unsafe=True, write=True)
    assert (tmp_path / "lib.py").read_text() == LIBRARY
    notes = {r.path.name: r.notes for r in results}
    assert notes["lib.py"] == [autofix.LIBRARY_NOTE]
    program = (tmp_path / "train.py").read_text()
    assert "workers=1" in program and "set_random_seed(42)" in program  # the program itself is fixed


def test_imports_the_fix_left_unused_go_and_no_others(tmp_path: Path) -> None:
    source = ("import os\nimport sys\nimport time\nimport random\n\n"
              "os.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'\nrandom.seed(int(time.time()))\n")
    fixed = fix(tmp_path, source)
    # os and time served only what the fixes changed; sys was unused before and is not ours to judge
    assert fixed == "import sys\nimport random\n\nrandom.seed(42)\n"


def test_fixes_reuse_the_programs_own_seed(tmp_path: Path) -> None:
    training = CONV_TRAINING.replace("Conv2D(4, 3)", "Conv2D(4, 3), tf.keras.layers.Dropout(0.5)")
    constant = "import random\nimport numpy as np\nimport tensorflow as tf\n\nSEED = 1234\nrandom.seed(SEED)\n"
    fixed = fix(tmp_path, constant + training, "2.12")
    assert "random.seed(SEED)\ntf.keras.utils.set_random_seed(SEED)\n" in fixed and "42" not in fixed
    literal = "import numpy as np\nimport tensorflow as tf\nnp.random.seed(seed=7)\n"
    assert "tf.keras.utils.set_random_seed(7)" in fix(tmp_path, literal + training, "2.12")
    # a seed only known at run time cannot be written at the top: the configured one is used
    runtime = "import sys\nimport numpy as np\nimport tensorflow as tf\nnp.random.seed(int(sys.argv[1]))\n"
    assert "tf.keras.utils.set_random_seed(42)" in fix(tmp_path, runtime + training, "2.12")


def test_two_fixes_that_produce_the_same_switch_leave_one(tmp_path: Path) -> None:
    source = ("import tensorflow as tf\nfrom tfdeterminism import patch\n\npatch()\n"
              "tf.config.experimental.enable_op_determinism\n")
    fixed = fix(tmp_path, source, "2.12")
    assert fixed == "import tensorflow as tf\n\ntf.config.experimental.enable_op_determinism()\n"
    # a repeated call the user wrote is theirs
    mine = "import numpy as np\nnp.random.seed(1)\nnp.random.seed(1)\n"
    assert fix(tmp_path, mine + "import os\nos.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'\n", "2.12") == mine


def test_a_seed_helper_or_seed_argument_is_extended_in_place(tmp_path: Path) -> None:
    training = "    " + CONV_TRAINING.replace("Conv2D(4, 3)", "Conv2D(4, 3), tf.keras.layers.Dropout(0.5)").replace(
        "\n", "\n    ").rstrip() + "\n"
    helper = ("import argparse\nimport random\nimport numpy as np\nimport tensorflow as tf\n\n\n"
              "def seed_everything(seed):\n    random.seed(seed)\n    np.random.seed(seed)\n\n\n"
              "def main():\n    args = argparse.ArgumentParser().parse_args()\n    seed_everything(args.seed)\n"
              + training + "\n\nif __name__ == '__main__':\n    main()\n")
    fixed = fix(tmp_path, helper, "2.12")
    assert "    np.random.seed(seed)\n    tf.keras.utils.set_random_seed(seed)\n" in fixed, fixed
    assert "42" not in fixed
    argument = helper.replace("    seed_everything(args.seed)\n", "    np.random.seed(args.seed)\n")
    fixed = fix(tmp_path, argument, "2.12")
    assert "    np.random.seed(args.seed)\n    tf.keras.utils.set_random_seed(args.seed)\n" in fixed, fixed
    # a helper that runs only after training cannot serve: the seed goes to the top instead
    late = helper.replace("    seed_everything(args.seed)\n", "").replace("    main()\n", "    main()\n    seed_everything(1)\n")
    fixed = fix(tmp_path, late, "2.12")
    assert "import tensorflow as tf\n\ntf.keras.utils.set_random_seed(" in fixed, fixed
    assert fixed.count("set_random_seed") == 1
