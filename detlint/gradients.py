"""Which functions never get a gradient, so the backprop kernels of their ops never run.

An op's backprop kernel runs only where a gradient flows through it. Two things in real code say
that none does, and both are read from the call graph the walk records:

- the function runs only where no gradient is taken: its every call site sits in an inference
  branch (``else:`` of ``if training:``, ``if not is_training:``, ``if mode != ModeKeys.TRAIN:``),
  passes ``training=False``, is wrapped in a gradient stop, or lies in such a function itself
  (NMS post-processing reached from a detector's ``call`` only when ``training`` is false);
- every value the function returns passes a gradient stop (``return tf.stop_gradient(t)``, or a
  name last bound to one), and so does everything only it calls (detection target assignment).

Call sites are matched to functions by their last name (``self.head.get_bboxes`` ->
``get_bboxes``): a name called from several places stays differentiated unless every one of them
is gradient-free, so a shared name errs towards keeping the finding. Methods a framework calls
itself (``call``, ``train_step``) never count as gradient-free by their call sites. The walk
marks the call sites and the stopped functions (training_branches.py); no libcst here, so a
fully cached run does not load it.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from .ftypes import CallSite, FileFacts

# methods frameworks call themselves: their call sites in project code are not all of them
FRAMEWORK_CALLED = frozenset({"call", "__call__", "train_step", "compute_loss", "model_fn", "forward"})


def gradient_free(files: Iterable[FileFacts]) -> dict[str, set[str]]:
    """For each file (by path), its functions that never get a gradient, judged over the call
    sites of ``files`` (the modules of the training programs that run them)."""
    files = list(files)
    # call sites by the function they may run: `self.m()` in a method of a class that defines m
    # runs that method (file, "Class.m"); any other call, every function of its last name
    sites: dict[Any, list[tuple[str, CallSite]]] = defaultdict(list)
    for facts in files:
        for site in facts.calls:
            parts = site.target.split(".")
            own = f"{site.scope.split('.')[0]}.{parts[1]}" if (
                len(parts) == 2 and parts[0] == "self" and site.scope and "." in site.scope) else None
            if own is not None and own in facts.functions:
                sites[(facts.path, own)].append((facts.path, site))
            else:
                sites[parts[-1]].append((facts.path, site))
    # a framework-called method may hand gradients on beside its result (Keras' add_loss)
    free: dict[str, set[str]] = {facts.path: {s for s in facts.stopped if s.rsplit(".", 1)[-1] not in FRAMEWORK_CALLED}
                                 for facts in files}
    changed = True
    while changed:  # least fixed point: a cycle of calls with no gradient-free way in stays live
        changed = False
        for facts in files:
            for scope in facts.functions:
                name = scope.rsplit(".", 1)[-1]
                if scope in free[facts.path] or name in FRAMEWORK_CALLED:
                    continue
                callers = sites.get((facts.path, scope), []) + sites.get(name, [])
                if callers and all(site.no_grad or (site.scope is not None and site.scope in free.get(path, ()))
                                   for path, site in callers):
                    free[facts.path].add(scope)
                    changed = True
    return free
