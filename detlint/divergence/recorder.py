"""Inside a program run by ``detlint diverge``: record every op's output with TensorFlow's own
debugger (tfdbg v2, FULL_TENSOR mode), and stop Keras training at the step, time or disk limit.

Configured by environment variables the parent sets; started from ``_boot/sitecustomize.py``.
Nothing here imports TensorFlow: recording starts when the program imports it.
"""
from __future__ import annotations

import atexit
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

from detlint.divergence import states
from detlint.runtime.imports_hook import when_imported

ENV_DUMP = "DETLINT_DIVERGE_DUMP"
ENV_STEPS = "DETLINT_DIVERGE_STEPS"
ENV_SECONDS = "DETLINT_DIVERGE_SECONDS"
ENV_MB = "DETLINT_DIVERGE_MB"
ENV_SEED = "DETLINT_DIVERGE_SEED"
ENV_PATHS = "DETLINT_DIVERGE_PATHS"  # where to write this interpreter's library folders (JSON)
PROGRESS = ".progress"  # <dump>.progress: the training steps done so far, for the progress line
NOTES = ".notes"  # <dump>.notes: what the report should say about this run, one note a line
XLA_NOTE = ("XLA compilation (jit_compile) was turned off while recording: TensorFlow's debugger cannot record "
            "inside XLA-compiled functions, so they ran as ordinary tf.functions; a difference only XLA makes "
            "is not shown")


def note_steps(root: str, steps: int) -> None:
    try:
        Path(root + PROGRESS).write_text(str(steps))
    except OSError:
        pass


def add_note(root: str, text: str) -> None:
    try:
        with open(root + NOTES, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")
    except OSError:
        pass


def without_xla(tf: ModuleType, root: str) -> None:
    """The debugger puts a DebugIdentityV2 op after every op, and XLA cannot compile it (the first
    step fails): functions asked for XLA (``tf.function(jit_compile=True)``, Keras's
    ``jit_compile=True``, or ``"auto"`` where a GPU is seen) are made without it, noted once."""
    import inspect

    original = tf.function
    if getattr(original, "__detlint_no_xla__", False):
        return
    signature = inspect.signature(original)
    noted: list[bool] = []

    def function(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind_partial(*args, **kwargs)
        for key in ("jit_compile", "experimental_compile"):  # the second is the old name of the first
            if bound.arguments.get(key):
                bound.arguments[key] = False
                if not noted:
                    noted.append(True)
                    add_note(root, XLA_NOTE)
        return original(*bound.args, **bound.kwargs)

    function.__detlint_no_xla__ = True  # type: ignore[attr-defined]
    function.__doc__, function.__wrapped__ = original.__doc__, original  # type: ignore[attr-defined]
    tf.function = function


def library_roots() -> list[str]:
    """The folders whose code is library code for this interpreter: the standard library, every
    site-packages folder and detlint's own package, as real paths. Frames are told apart by these
    locations, never by a name in the path (a checkout of detlint is itself called ``detlint``)."""
    import site
    import sysconfig

    roots = {sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    for getter in ("getsitepackages", "getusersitepackages"):
        try:
            found = getattr(site, getter)()
        except AttributeError:  # some embedded or old virtualenv site modules lack them
            continue
        roots.update([found] if isinstance(found, str) else found)
    roots.add(str(Path(__file__).resolve().parents[1]))  # detlint itself
    return sorted({os.path.realpath(r) for r in roots if r})


def dump_size_mb(root: str) -> float:
    """The disk a run's record uses: its folder and the states beside it (``<root>.init.bin``)."""
    total = 0
    base = Path(root)
    for path in [*base.rglob("*"), *base.parent.glob(base.name + ".*")]:
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total / 2**20


def _limits() -> tuple[Optional[int], Optional[float], Optional[float]]:
    steps = os.environ.get(ENV_STEPS)
    seconds = os.environ.get(ENV_SECONDS)
    mb = os.environ.get(ENV_MB)
    return (int(steps) if steps else None, time.monotonic() + float(seconds) if seconds else None,
            float(mb) if mb else None)


def _seed(seed: int) -> None:
    """Seed both runs alike (only seeds: op determinism stays as the program has it): Python,
    NumPy, TensorFlow (and Keras), PyTorch, each when the program imports it."""
    import random

    random.seed(seed)
    when_imported("numpy", lambda np: np.random.seed(seed))

    def seed_tf(tf: ModuleType) -> None:
        setter = getattr(getattr(tf.keras, "utils", None), "set_random_seed", None)
        setter(seed) if setter else tf.random.set_seed(seed)

    when_imported("tensorflow", seed_tf)
    when_imported("torch", lambda torch: torch.manual_seed(seed))
    # JAX has no global generator: its keys are the program's own


def start() -> None:
    root = os.environ.get(ENV_DUMP)
    if not root:
        return
    steps, deadline, budget = _limits()
    if os.environ.get(ENV_PATHS):  # the parent reads the program's frames with these
        try:
            Path(os.environ[ENV_PATHS]).write_text(json.dumps(library_roots()))
        except OSError:
            pass
    if os.environ.get(ENV_SEED):
        _seed(int(os.environ[ENV_SEED]))

    state = {"failed": False, "limited": False}
    previous_hook = sys.excepthook

    def excepthook(*exc_info: Any) -> None:
        state["failed"] = True
        previous_hook(*exc_info)

    sys.excepthook = excepthook

    def on_tensorflow(tf: ModuleType) -> None:
        without_xla(tf, root)
        tf.debugging.experimental.enable_dump_debug_info(root, tensor_debug_mode="FULL_TENSOR",
                                                         circular_buffer_size=-1)

        def finish() -> None:
            tf.debugging.experimental.disable_dump_debug_info()  # flushes the record
            if state["limited"]:
                # training was cut short with input-pipeline threads still busy (py_function
                # elements in flight can deadlock interpreter shutdown): leave now
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(1 if state["failed"] else 0)

        atexit.register(finish)

    roots = library_roots()
    state_budget = int((float(os.environ.get(ENV_MB) or 512) * 2**20) // 4)  # a quarter of the disk for states

    def on_keras(keras: ModuleType) -> None:
        model = getattr(keras, "Model", None)
        fit = getattr(model, "fit", None)
        if fit is None or getattr(fit, "__detlint_limited__", False):
            return
        callback_base = keras.callbacks.Callback
        created = _note_layer_sites(keras, roots)

        class Snapshot(callback_base):  # type: ignore[misc, valid-type]
            """The model's variables before its first training step (once per run)."""

            def on_train_begin(self, logs: Any = None) -> None:
                if not os.path.exists(root + f".{states.INIT}.json"):
                    states.write(root, states.INIT, "tensorflow", _keras_variables(self.model, created), state_budget)

        class Limit(callback_base):  # type: ignore[misc, valid-type]
            def __init__(self) -> None:
                super().__init__()
                self.steps = 0

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                self.steps += 1
                note_steps(root, self.steps)
                over_steps = steps is not None and self.steps >= steps
                over_time = deadline is not None and time.monotonic() > deadline
                over_disk = budget is not None and dump_size_mb(root) > budget
                if over_steps or over_time or over_disk:
                    self.model.stop_training = True
                    state["limited"] = True

        def limited_fit(self: Any, *args: Any, **kwargs: Any) -> Any:
            callbacks = list(kwargs.pop("callbacks", None) or [])
            kwargs["callbacks"] = callbacks + [Snapshot(), Limit()]
            return fit(self, *args, **kwargs)

        limited_fit.__detlint_limited__ = True  # type: ignore[attr-defined]
        model.fit = limited_fit

    def on_torch(torch: ModuleType) -> None:
        from detlint.divergence import torch_recorder

        torch_recorder.install(torch, root, roots, state_budget, steps, deadline, budget)

    def on_jax(jax: ModuleType) -> None:
        from detlint.divergence import jax_recorder

        jax_recorder.install(jax, root, roots, state_budget, steps, deadline, budget)

    when_imported("tensorflow", on_tensorflow)
    when_imported("keras", on_keras)
    when_imported("torch", on_torch)
    when_imported("jax", on_jax)


def _note_layer_sites(keras: ModuleType, roots: list[str]) -> dict[int, str]:
    """Where each Keras layer is made (``train.py:11``), by layer id: kept from its ``__init__``."""
    created: dict[int, str] = {}
    layer = getattr(getattr(keras, "layers", None), "Layer", None)
    original = getattr(layer, "__init__", None)
    if original is None or getattr(original, "__detlint_sites__", False):
        return created

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        created.setdefault(id(self), states.user_site(roots, self))
        original(self, *args, **kwargs)

    init.__detlint_sites__ = True  # type: ignore[attr-defined]
    layer.__init__ = init
    return created


def _keras_variables(model: Any, created: dict[int, str]) -> Any:
    """(layer, class, where made, variable, value) for every variable a layer of ``model`` owns."""
    import numpy as np

    try:
        layers = list(model._flatten_layers(include_self=False, recursive=True))
    except Exception:  # not a Keras model as expected: only its top-level layers
        layers = list(getattr(model, "layers", []))
    seen: set[int] = set()
    for layer in layers:
        own = next((getattr(layer, a) for a in ("_trainable_variables", "_trainable_weights") if hasattr(layer, a)), [])
        rest = next((getattr(layer, a) for a in ("_non_trainable_variables", "_non_trainable_weights")
                     if hasattr(layer, a)), [])
        for variable in [*own, *rest]:
            if id(variable) in seen:
                continue
            seen.add(id(variable))
            name = str(getattr(variable, "name", "?")).split("/")[-1].split(":")[0]
            try:
                value = np.asarray(variable)
            except Exception:
                continue
            yield layer.name, type(layer).__name__, created.get(id(layer), ""), name, value
