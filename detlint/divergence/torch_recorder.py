"""Inside a PyTorch program run by ``detlint diverge``: record every op's output with PyTorch's own
dispatch-level hooks (a ``TorchDispatchMode``), named by the module running it (``Net.layer3.conv1``,
from global forward hooks) and the program's source line; keep the parameters before the first
optimizer step and the first batch a model is given (``states``); stop after the step limit.

Only digests and, within the budget, the values are written (``oplog``), one op at a time.
"""
from __future__ import annotations

import atexit
import os
import sys
import time
import weakref
from types import ModuleType
from typing import Any, Callable, Optional

from detlint.divergence import states
from detlint.divergence.oplog import OpLog

# ops that pass a value on unchanged (or only reshaped, retyped, copied): a difference that
# starts at one of them began in what it was computed from
PASS_THROUGH = frozenset({"_to_copy", "to", "view", "_unsafe_view", "reshape", "t", "transpose", "permute",
                          "clone", "detach", "alias", "expand", "squeeze", "unsqueeze", "contiguous", "copy_",
                          "slice", "select", "lift_fresh", "_reshape_alias", "as_strided", "flatten", "lift_fresh_copy"})


# ops whose output is uninitialised memory (whatever was there): it differs between runs and is
# written over before it is read, so it is no evidence
UNINITIALISED = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
                           "empty_permuted"})


def op_short_name(op: str) -> str:
    """``aten.addmm.default`` -> ``addmm``."""
    parts = op.split(".")
    return parts[1] if len(parts) > 2 else parts[-1]


class _Run:
    """What one run records; the hooks below call into it."""

    def __init__(self, dump: str, roots: list[str], budget: int, max_steps: Optional[int],
                 deadline: Optional[float], max_mb: Optional[float], on_limit: Callable[[], None]) -> None:
        self.dump, self.roots, self.budget = dump, roots, budget
        self.max_steps, self.deadline, self.max_mb, self.on_limit = max_steps, deadline, max_mb, on_limit
        self.log = OpLog(dump, "torch", budget)
        self.steps = 0
        self.phase = "forward"
        self.created: dict[int, str] = {}
        self.modules: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self.stack: list[Any] = []  # the modules whose forward is running, outermost first
        self.names: dict[int, str] = {}
        # which record made a tensor, by id (a tensor's == is elementwise, so no dict keys it)
        self.producers: dict[int, tuple[Any, int]] = {}
        self.sites: dict[tuple[Any, int], str] = {}
        self.batch_written = False
        self.init_written = False
        self.paused = False  # while detlint itself reads tensors (the states): not the program's ops

    # ---- names ------------------------------------------------------------------------------------
    def name_of(self, module: Any) -> str:
        if id(module) not in self.names:
            self._name_roots()
        return self.names.get(id(module), type(module).__name__)

    def _name_roots(self) -> None:
        """Each module's path from the outermost module that holds it: ``Net.layer3.conv1``."""
        modules = list(self.modules)
        children = {id(c) for m in modules for c in m.children()}
        for root in (m for m in modules if id(m) not in children):
            base = type(root).__name__
            for path, sub in root.named_modules():
                self.names.setdefault(id(sub), f"{base}.{path}" if path else base)

    # ---- records ----------------------------------------------------------------------------------
    def site(self) -> str:
        frame = sys._getframe(2)
        key = None
        while frame is not None:
            key = (frame.f_code, frame.f_lineno)
            if key in self.sites:
                return self.sites[key]
            if not states.is_library_frame(frame.f_code.co_filename, self.roots):
                self.sites[key] = f"{states.shown_path(frame.f_code.co_filename)}:{frame.f_lineno} " \
                                  f"(in {frame.f_code.co_name})"
                return self.sites[key]
            frame = frame.f_back
        return ""

    def record(self, op: str, inputs: list[Any], outputs: list[Any]) -> None:
        import torch

        if self.log.closed or self.paused or op_short_name(op) in UNINITIALISED:
            return
        module = self.name_of(self.stack[-1]) if self.stack else ""
        sources = sorted({self.producers[id(t)][1] for t in inputs if isinstance(t, torch.Tensor)
                          and id(t) in self.producers and self.producers[id(t)][0]() is t})
        where = self.site() if self.phase != "backward" else ""
        for slot, tensor in enumerate(outputs):
            if not isinstance(tensor, torch.Tensor) or tensor.is_meta or tensor.layout != torch.strided:
                continue
            try:
                array = tensor.detach().cpu().contiguous().numpy()
            except Exception:  # a dtype NumPy lacks (bfloat16): compare its float32 copy
                array = tensor.detach().float().cpu().contiguous().numpy()
            number = self.log.write(array, op=op, slot=slot, module=module, phase=self.phase, step=self.steps,
                                    training=self.batch_written, site=where, inputs=sources)
            key = id(tensor)
            try:
                self.producers[key] = (weakref.ref(tensor, lambda _, key=key: self.producers.pop(key, None)), number)
            except TypeError:
                pass

    def close(self) -> None:
        self.log.close()

    # ---- phases -----------------------------------------------------------------------------------
    def first_forward(self, module: Any, args: tuple[Any, ...]) -> None:
        """The outermost module's first call: its tensor arguments are the first batch."""
        import torch

        if self.batch_written:
            return
        self.batch_written = True
        tensors = [(f"input {i}", a) for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        self.paused = True
        try:
            states.write(self.dump, states.BATCH, "torch",
                         ((self.name_of(module), type(module).__name__, self.created.get(id(module), ""), name,
                           t.detach().cpu().numpy()) for name, t in tensors), self.budget)
        finally:
            self.paused = False

    def before_step(self, optimizer: Any) -> None:
        """The first optimizer step: the parameters it updates still hold their initial values."""
        self.phase = "update"
        if self.init_written:
            return
        self.init_written = True
        owned = {id(p) for group in optimizer.param_groups for p in group["params"]}
        self.paused = True
        try:
            self._write_initial(owned)
        finally:
            self.paused = False

    def _write_initial(self, owned: set[int]) -> None:
        self._name_roots()
        items = []
        seen: set[int] = set()
        for module in list(self.modules):
            for short, param in module.named_parameters(recurse=False):
                if id(param) in owned and id(param) not in seen:
                    seen.add(id(param))
                    items.append((self.name_of(module), type(module).__name__, self.created.get(id(module), ""), short,
                                  param.detach().cpu().numpy()))
        items.sort(key=lambda item: item[0])
        states.write(self.dump, states.INIT, "torch", items, self.budget)

    def after_step(self) -> None:
        self.steps += 1
        self.log.steps_done(self.steps)
        self.phase = "forward"
        over = ((self.max_steps is not None and self.steps >= self.max_steps)
                or (self.deadline is not None and time.monotonic() > self.deadline)
                or (self.max_mb is not None and (self.log.kept / 2**20) > self.max_mb))
        if over:
            self.on_limit()


def install(torch: ModuleType, dump: str, roots: list[str], budget: int, max_steps: Optional[int],
            deadline: Optional[float], max_mb: Optional[float]) -> None:
    """Start recording in this process (called when the program imports torch)."""
    from torch.nn.modules import module as module_hooks
    from torch.optim import optimizer as optimizer_hooks
    from torch.utils._python_dispatch import TorchDispatchMode

    def stop() -> None:  # the step limit: the record is complete, the program need not go on
        finish()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    run = _Run(dump, roots, budget, max_steps, deadline, max_mb, stop)

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            flat_in = [a for a in _flatten(args) + _flatten(list((kwargs or {}).values()))]
            run.record(str(func), flat_in, _flatten(out))
            return out

    original_init = torch.nn.Module.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        run.created.setdefault(id(self), states.user_site(roots, self))
        run.modules.add(self)

    torch.nn.Module.__init__ = init

    def pre_forward(module: Any, args: Any) -> None:
        if not run.stack:
            run.first_forward(module, args)
        run.stack.append(module)

    def post_forward(module: Any, args: Any, output: Any) -> None:
        if run.stack and run.stack[-1] is module:
            run.stack.pop()

    module_hooks.register_module_forward_pre_hook(pre_forward)
    module_hooks.register_module_forward_hook(post_forward)
    optimizer_hooks.register_optimizer_step_pre_hook(lambda opt, args, kwargs: run.before_step(opt))
    optimizer_hooks.register_optimizer_step_post_hook(lambda opt, args, kwargs: run.after_step())

    backward = torch.Tensor.backward

    def traced_backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        run.phase = "backward"
        try:
            return backward(self, *args, **kwargs)
        finally:
            run.phase = "forward"

    torch.Tensor.backward = traced_backward
    mode = Recorder()
    mode.__enter__()

    def finish() -> None:
        try:
            mode.__exit__(None, None, None)
        except Exception:
            pass
        run.close()

    atexit.register(finish)


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _flatten(item)]
    if isinstance(value, dict):
        return [x for item in value.values() for x in _flatten(item)]
    return [value]
