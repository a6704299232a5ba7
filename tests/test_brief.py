"""The concise line says what and the fix; the reason, asides and the version note are in the full output."""
from __future__ import annotations

import statistics

from conftest import FIXTURES, lint_paths

from detlint.lint.brief import brief, one_line
from detlint.lint.ftypes import Diagnostic


def test_the_what_and_the_fix_stay_the_reason_and_asides_go() -> None:
    message = ("Conv2D (cuDNN convolution backprop and autotuned algorithm choice) is nondeterministic on GPU in TF "
               "2.21 and the program never enables op determinism; call tf.config.experimental."
               "enable_op_determinism() right after the imports (TensorFlow 2.21 assumed from tf.random.set_seed "
               "use; pin tensorflow to be sure)")
    assert brief(message, "call tf.config.experimental.enable_op_determinism() right after the imports") == (
        "Conv2D is nondeterministic on GPU in TF 2.21 and the program never enables op determinism; "
        "call tf.config.experimental.enable_op_determinism() right after the imports")
    # the reason after ", so " or " — " goes; a middle clause (more reason) goes
    assert brief("np.random.rand draws from NumPy's global generator, so splits change every run; call np.random.seed(42)",
                 None) == "np.random.rand draws from NumPy's global generator; call np.random.seed(42)"
    assert brief("nnx.grad trains with JAX — on GPU XLA picks algorithms by timing them; XLA has no switch; "
                 "set XLA_FLAGS", None) == "nnx.grad trains with JAX; set XLA_FLAGS"
    # a place in the code is part of the what; separators inside brackets are not clauses
    assert brief("the initialiser of Dense draws random numbers (in mypkg/models.py:5) but nothing seeds it; "
                 "call seed(42)", None) == "the initialiser of Dense draws random numbers (in mypkg/models.py:5) " \
                                           "but nothing seeds it; call seed(42)"
    assert brief("map(deterministic=x [--x defaults to False; run with --x True]) reorders; pass deterministic=True",
                 None) == "map(deterministic=x [--x defaults to False; run with --x True]) reorders; pass deterministic=True"


def test_the_fix_is_the_title_where_the_message_says_it_else_its_last_clause() -> None:
    message = ("the function given to ds.map() draws from stateful random ops on several threads; use stateless ops "
               "(tf.random.stateless_*) with per-element seeds; under op determinism TF 2.21 runs this map serially")
    assert brief(message, "use stateless ops (tf.random.stateless_*) with per-element seeds; under op determinism "
                          "TF 2.21 runs this map serially") == \
        "the function given to ds.map() draws from stateful random ops on several threads; use stateless ops with " \
        "per-element seeds"
    assert brief("nn.AdaptiveAvgPool2d: backward has no deterministic CUDA implementation; use AvgPool2d",
                 "use the workaround in the message") == \
        "nn.AdaptiveAvgPool2d: backward has no deterministic CUDA implementation; use AvgPool2d"


def test_detlints_own_findings_keep_their_reason() -> None:
    diag = Diagnostic(code="DET001", message="file cannot be checked: too large to check: 4 KB, over the limit of "
                                             "2 KB (max-file-size); the other files were checked",
                      path="big.py", line=1, col=0, end_line=1, end_col=0)
    assert one_line(diag) == diag.message


def test_concise_lines_are_much_shorter_than_the_messages_on_every_fixture() -> None:
    diags = lint_paths(sorted(p for p in FIXTURES.rglob("*.py")), "2.21", select=["DET"])
    assert len(diags) > 100
    full = statistics.median(len(d.message) for d in diags)
    concise = statistics.median(len(one_line(d)) for d in diags)
    assert concise <= 0.7 * full and concise <= 180, (concise, full)
    assert all(len(one_line(d)) <= len(d.message + " [possible]") for d in diags)


def test_no_keras_aside_in_a_pytorch_or_jax_programs_fix(tmp_path) -> None:
    """DET103/DET104's fix mentions keras.utils.set_random_seed only where the program uses
    TensorFlow or Keras (``if-uses`` on the fix)."""
    from conftest import make_linter

    programs = {
        "jax_train.py": "import jax\nimport numpy as np\nimport optax\nx = np.random.rand(4)\n"
                        "grads = jax.grad(loss)(params)\nparams = optax.apply_updates(params, grads)\n",
        "torch_train.py": "import random\nimport torch\nrandom.shuffle(rows)\nmodel = torch.nn.Linear(2, 1)\n"
                          "torch.manual_seed(0)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                          "model(x).sum().backward()\nopt.step()\n",
        "tf_train.py": "import numpy as np\nimport tensorflow as tf\nx = np.random.rand(4)\ntf.random.set_seed(0)\n"
                       "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.compile('sgd', 'mse')\n"
                       "model.fit(x, x)\n",
    }
    titles = {}
    for name, text in programs.items():
        (tmp_path / name).write_text(text)
        diags = make_linter("2.21", root=tmp_path).run([tmp_path / name]).diagnostics
        titles[name] = {d.code: d.fix_title for d in diags if d.code in ("DET103", "DET104")}
    assert titles["jax_train.py"]["DET103"] == "call np.random.seed(42) right after the imports"
    assert titles["torch_train.py"]["DET104"] == "call random.seed(42) right after the imports"
    assert titles["tf_train.py"]["DET103"].endswith("(keras.utils.set_random_seed also does it)")
