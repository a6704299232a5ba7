"""Where no gradient is taken: inference branches, training=False calls, stopped returns."""
from __future__ import annotations

import libcst as cst
import pytest

from detlint.lint.collect import collect
from detlint.lint.facts_json import dump_facts, load_facts
from detlint.lint.flow.gradients import gradient_free
from detlint.knowledge.kb import load
from detlint.lint.flow.training_branches import training_test


@pytest.mark.parametrize("test, expected", [
    ("training", True), ("not training", False), ("self.is_training", True), ("FLAGS.train", True),
    ("training is False", False), ("training == True", True), ("is_training != True", False),
    ("mode == tf.estimator.ModeKeys.TRAIN", True), ("mode != tf.estimator.ModeKeys.TRAIN", False),
    ("mode == tf.estimator.ModeKeys.PREDICT", False), ("mode != ModeKeys.EVAL", None),
    ("use_xla", None), ("training and x", None), ("n > 2", None),
])
def test_training_tests(test: str, expected: object) -> None:
    assert training_test(cst.parse_expression(test)) is expected


SOURCE = '''\
import tensorflow as tf

class Model(tf.keras.Model):
    def call(self, x, training=True):
        if training:
            t = self.targets(x)
        else:
            out = self.decode(x)
        self.score(x, training=False)
        return tf.stop_gradient(self.sample(x))

    def targets(self, x):
        y = tf.gather(x, [0])
        y = tf.stop_gradient(y)
        return y, tf.stop_gradient(x)

    def decode(self, x):
        return tf.gather(x, [1])

    def score(self, x, training):
        return x

    def sample(self, x):
        return x

    def mixed(self, x):
        a = tf.stop_gradient(x)
        a = x * 2
        return a
'''


def test_call_sites_and_stopped_functions_survive_the_cache() -> None:
    facts = collect(load(), "m.py", SOURCE)
    no_grad = {c.target: c.no_grad for c in facts.calls}
    assert no_grad == {"self.targets": False, "self.decode": True, "self.score": True, "self.sample": True}
    # a gradient stop still runs in training; an inference branch or training=False does not
    assert {c.target for c in facts.calls if c.inference} == {"self.decode", "self.score"}
    assert facts.stopped == ["Model.call", "Model.targets"]  # mixed rebinds its stopped name
    again = load_facts(dump_facts(facts, "k"), "k")
    assert again.calls == facts.calls and again.stopped == facts.stopped
    # Keras calls `call` itself, and add_loss there would pass gradients on: never gradient-free
    assert gradient_free([facts])["m.py"] == {"Model.targets", "Model.decode", "Model.score", "Model.sample"}


def test_one_differentiated_caller_keeps_a_function() -> None:
    other = collect(load(), "other.py", "def run(model, x):\n    return model.decode(x)\n")
    facts = collect(load(), "m.py", SOURCE)
    assert "Model.decode" not in gradient_free([facts, other])["m.py"]


def test_ops_off_the_loss_path_survive_the_cache() -> None:
    source = ("import tensorflow as tf\n"
              "e = tf.nn.embedding_lookup(w, ids)\n"
              "loss = tf.reduce_sum(e)\n"
              "step = tf.train.AdamOptimizer().minimize(loss)\n"
              "v = tf.nn.embedding_lookup(w, valid)\n")
    facts = collect(load(), "w2v.py", source)
    assert facts.off_gradient == [(5, 4)]
    assert load_facts(dump_facts(facts, "k"), "k").off_gradient == [(5, 4)]
