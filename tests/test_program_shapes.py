"""Program shapes of real repositories, checked end to end with the CLI in a child process: a
checkout that is itself a namespace package (`import vdm.experiment` in vdm/main.py, run as
`python -m vdm.main`), and a training step an object keeps as a wrapped method
(`self.p_train_step = jax.pmap(functools.partial(self.train_step, rng))`)."""
from __future__ import annotations

from test_deep_programs import findings, lint
from test_safety_inputs import project

STEP = '''\
import functools

import jax
import optax


class Experiment:
    def __init__(self, params):
        self.params = params
        self.optimizer = optax.adam(1e-3)
        self.opt_state = self.optimizer.init(params)
        self.p_train_step = functools.partial(self.train_step, 0.5)
        self.p_train_step = jax.pmap(self.p_train_step, "batch")

    def loss(self, params, batch, scale):
        return scale * ((params["w"] * batch) ** 2).sum()

    def train_step(self, scale, params, opt_state, batch):
        grads = jax.grad(self.loss)(params, batch, scale)
        updates, opt_state = self.optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state

    def train(self, batches):
        for batch in batches:
            self.params, self.opt_state = self.p_train_step(self.params, self.opt_state, batch)
'''
MAIN = '''\
import jax.numpy as jnp

import {package}.experiment


def main():
    experiment = {package}.experiment.Experiment({{"w": jnp.ones(3)}})
    experiment.train([jnp.ones(3)] * 4)


if __name__ == "__main__":
    main()
'''
DET701_LINE = 7  # where main() builds the experiment whose kept step trains


def test_a_checkout_that_is_a_namespace_package_and_a_step_kept_as_a_wrapped_method(tmp_path) -> None:
    root = project(tmp_path, {"experiment.py": STEP, "main.py": MAIN.format(package="vdmlike")}, name="vdmlike")
    assert findings(lint(root, "--jax-version", "0.4"), "main.py") == [f"{DET701_LINE}:DET701"]


def test_the_package_name_must_be_the_checkouts_own(tmp_path) -> None:
    """Another name (an installed package, say) is not this folder: nothing resolves, nothing trains."""
    root = project(tmp_path, {"experiment.py": STEP, "main.py": MAIN.format(package="otherpkg")}, name="vdmlike")
    proc = lint(root, "--jax-version", "0.4")
    assert proc.returncode == 0 and "DET701" not in proc.stdout, proc.stdout


def test_a_method_kept_without_a_wrapper_that_never_trains(tmp_path) -> None:
    """An attribute bound to a partial of a method that only evaluates: calling it trains nothing."""
    step = STEP.replace("functools.partial(self.train_step, 0.5)", "functools.partial(self.loss, scale=0.5)")
    root = project(tmp_path, {"experiment.py": step, "main.py": MAIN.format(package="vdmlike")}, name="vdmlike")
    proc = lint(root, "--jax-version", "0.4")
    assert "DET701" not in proc.stdout, proc.stdout
