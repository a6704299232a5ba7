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
