"""Inside a JAX program run by ``detlint diverge``: record the outputs of every jitted computation
(``jax.jit`` is wrapped when the program imports JAX), each leaf named by its path in the output
(``params.Dense_0.kernel``) and by the function; keep, as states, the variables a Flax module's
``init`` returns and the first call of the training step (its first argument, the parameters or
train state, as the initial state, the others as the first batch); stop after the step limit.

The record is PyTorch's format (``oplog``).
"""
from __future__ import annotations

import atexit
import functools
import os
import sys
import time
from types import ModuleType
from typing import Any, Optional

from detlint.divergence import states
from detlint.divergence.oplog import OpLog



def _leaves(tree: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted path, leaf) of a pytree: ``params.Dense_0.kernel``."""
    import jax

    out = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        parts = []
        for key in path:
            for attr in ("key", "name", "idx"):
                if hasattr(key, attr):
                    parts.append(str(getattr(key, attr)))
                    break
        out.append((".".join([prefix, *parts] if prefix else parts) or prefix or "value", leaf))
    return out


def _concrete(leaf: Any) -> bool:
    import jax

    return hasattr(leaf, "shape") and not isinstance(leaf, jax.core.Tracer)


class _Run:
    def __init__(self, dump: str, roots: list[str], budget: int, max_steps: Optional[int],
                 deadline: Optional[float], max_mb: Optional[float]) -> None:
        self.dump, self.roots, self.budget = dump, roots, budget
        self.max_steps, self.deadline, self.max_mb = max_steps, deadline, max_mb
        self.log = OpLog(dump, "jax", budget)
        self.steps = 0
        self.step_function: Optional[str] = None  # the jitted function whose first call gave the states
        self.backend: Optional[str] = None  # "cpu", "gpu", "tpu"

    def _array(self, leaf: Any) -> Any:
        import numpy as np

        return np.asarray(leaf)

    def initialised(self, module: Any, variables: Any) -> None:
        """A Flax module's ``init`` returned its variables: they are the initial weights."""
        if os.path.exists(self.dump + f".{states.INIT}.json"):
            return
        site = states.user_site(self.roots)
        items = [(path.rpartition(".")[0] or path, type(module).__name__, site, path.rpartition(".")[2],
                  self._array(leaf)) for path, leaf in _leaves(variables) if _concrete(leaf)]
        states.write(self.dump, states.INIT, "jax", items, self.budget)

    def called(self, name: str, args: tuple[Any, ...], output: Any) -> None:
        if self.log.closed:
            return
        leaves = [(p, x) for p, x in _leaves(output) if hasattr(x, "shape")]
        if not leaves or not all(_concrete(x) for _, x in leaves):
            return  # a jitted function called inside another one's trace
        site = states.user_site(self.roots)
        if self.backend is None:  # asked only now: the backend has started (asking earlier would start it)
            import jax

            self.backend = jax.default_backend()
        if self.step_function is None and args:
            first = [(p, x) for p, x in _leaves(args[0]) if _concrete(x)]
            if len(first) >= 2:  # parameters or a train state: this is the training step
                self.step_function = name
                if not os.path.exists(self.dump + f".{states.INIT}.json"):
                    states.write(self.dump, states.INIT, "jax",
                                 [(p.rpartition(".")[0] or "arguments", name, site, p.rpartition(".")[2],
                                   self._array(x)) for p, x in first], self.budget)
                batch = [(p, x) for i, arg in enumerate(args[1:], start=1) for p, x in _leaves(arg, f"argument {i}")
                         if _concrete(x)]
                states.write(self.dump, states.BATCH, "jax",
                             [(name, "batch", site, p, self._array(x)) for p, x in batch], self.budget)
        for path, leaf in leaves:
            self.log.write(self._array(leaf), op=name, slot=0, module=path, phase="step", step=self.steps,
                           training=self.step_function is not None, site=site, inputs=[], device=self.backend)
        if name == self.step_function:
            self.steps += 1
            self.log.steps_done(self.steps)
            if (self.max_steps is not None and self.steps >= self.max_steps) or \
                    (self.deadline is not None and time.monotonic() > self.deadline) or \
                    (self.max_mb is not None and self.log.kept / 2**20 > self.max_mb):
                self.log.close()
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(0)



class _Recorded:
    """A jitted function that reports its outputs; everything else is the jitted function's."""

    def __init__(self, compiled: Any, name: str, run: _Run) -> None:
        self._compiled, self._name, self._run = compiled, name, run
        functools.update_wrapper(self, compiled, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self._compiled(*args, **kwargs)
        try:
            self._run.called(self._name, args, out)
        except Exception:  # recording must never break the program
            pass
        return out

    def __get__(self, instance: Any, owner: Any = None) -> Any:  # a jitted method
        return self if instance is None else functools.partial(self, instance)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._compiled, attr)


def install(jax: ModuleType, dump: str, roots: list[str], budget: int, max_steps: Optional[int],
            deadline: Optional[float], max_mb: Optional[float]) -> None:
    """Start recording in this process (called when the program imports JAX)."""
    run = _Run(dump, roots, budget, max_steps, deadline, max_mb)
    original = jax.jit

    def jit(fun: Any = None, *args: Any, **kwargs: Any) -> Any:
        if fun is None:  # jax.jit(static_argnums=...) as a decorator factory
            return functools.partial(jit, *args, **kwargs)
        name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or type(fun).__name__
        return _Recorded(original(fun, *args, **kwargs), name, run)

    jax.jit = jit
    atexit.register(run.log.close)

    def on_flax(linen: ModuleType) -> None:
        module = getattr(linen, "Module", None)
        init = getattr(module, "init", None)
        if init is None:
            return

        def recorded_init(self: Any, *args: Any, **kwargs: Any) -> Any:
            variables = init(self, *args, **kwargs)
            try:
                run.initialised(self, variables)
            except Exception:
                pass
            return variables

        module.init = recorded_init

    from detlint.runtime.imports_hook import when_imported

    when_imported("flax.linen", on_flax)
