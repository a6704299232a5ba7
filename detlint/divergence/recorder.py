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

from detlint.runtime.imports_hook import when_imported

ENV_DUMP = "DETLINT_DIVERGE_DUMP"
ENV_STEPS = "DETLINT_DIVERGE_STEPS"
ENV_SECONDS = "DETLINT_DIVERGE_SECONDS"
ENV_MB = "DETLINT_DIVERGE_MB"
ENV_SEED = "DETLINT_DIVERGE_SEED"
ENV_PATHS = "DETLINT_DIVERGE_PATHS"  # where to write this interpreter's library folders (JSON)


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
    total = 0
    for path in Path(root).rglob("*"):
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
    """Seed both runs alike (only seeds: op determinism stays as the program has it)."""
    import random

    random.seed(seed)
    when_imported("numpy", lambda np: np.random.seed(seed))

    def seed_tf(tf: ModuleType) -> None:
        setter = getattr(getattr(tf.keras, "utils", None), "set_random_seed", None)
        setter(seed) if setter else tf.random.set_seed(seed)

    when_imported("tensorflow", seed_tf)


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

    def on_keras(keras: ModuleType) -> None:
        model = getattr(keras, "Model", None)
        fit = getattr(model, "fit", None)
        if fit is None or getattr(fit, "__detlint_limited__", False):
            return
        callback_base = keras.callbacks.Callback

        class Limit(callback_base):  # type: ignore[misc, valid-type]
            def __init__(self) -> None:
                super().__init__()
                self.steps = 0

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                self.steps += 1
                over_steps = steps is not None and self.steps >= steps
                over_time = deadline is not None and time.monotonic() > deadline
                over_disk = budget is not None and dump_size_mb(root) > budget
                if over_steps or over_time or over_disk:
                    self.model.stop_training = True
                    state["limited"] = True

        def limited_fit(self: Any, *args: Any, **kwargs: Any) -> Any:
            callbacks = list(kwargs.pop("callbacks", None) or [])
            kwargs["callbacks"] = callbacks + [Limit()]
            return fit(self, *args, **kwargs)

        limited_fit.__detlint_limited__ = True  # type: ignore[attr-defined]
        model.fit = limited_fit

    when_imported("tensorflow", on_tensorflow)
    when_imported("keras", on_keras)
