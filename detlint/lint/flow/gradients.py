"""Which functions never get a gradient, so the backprop kernels of their ops never run.

An op's backprop kernel runs only where a gradient flows through it. Two things in real code say
that none does, and both are read from the call graph the walk records:

- the function runs only where no gradient is taken: its every call site sits in an inference
  branch (``else:`` of ``if training:``, ``if not is_training:``, ``if mode != ModeKeys.TRAIN:``),
  passes ``training=False``, is wrapped in a gradient stop, or lies in such a function itself
  (NMS post-processing reached from a detector's ``call`` only when ``training`` is false);
- every value the function returns passes a gradient stop (``return tf.stop_gradient(t)``, or a
  name last bound to one), and so does everything only it calls (detection target assignment);
- it is decorated with a project decorator that runs it without autograd (a
  ``smart_inference_mode()`` that returns ``torch.no_grad()(fn)``);
- it only computes values (it makes no layer or model and trains nothing) and runs only at module
  level outside any tape, in a file that takes its gradients only with tapes: eager code a tape
  never records (images loaded and resized once before training);
- it only computes values and every caller drops its result's gradient (``z = resample(...);
  z = z.detach()``: gradient_sinks.py follows the result like an op's).

Call sites are matched to functions by their last name (``self.head.get_bboxes`` ->
``get_bboxes``): a name called from several places stays differentiated unless every one of them
is gradient-free, so a shared name errs towards keeping the finding. Methods a framework calls
itself (``call``, ``train_step``) never count as gradient-free by their call sites. The walk
marks the call sites and the stopped functions (training_branches.py); no libcst here, so a
fully cached run does not load it.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Optional

from detlint.lint.ftypes import CallSite, FileFacts
from detlint.lint.programs.program import MAIN_GUARD

# methods frameworks call themselves: their call sites in project code are not all of them
FRAMEWORK_CALLED = frozenset({"call", "__call__", "train_step", "compute_loss", "model_fn", "forward"})


def gradient_free(files: Iterable[FileFacts], pure: frozenset[str] = frozenset()) -> dict[str, set[str]]:
    """For each file (by path), its functions that never get a gradient (or get it only on the
    CPU: no GPU backward kernel runs for them), judged over the call sites of ``files`` (the
    modules of the training programs that run them)."""
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
    # decorated with a project decorator that runs them without autograd (@smart_inference_mode())
    no_grad_decorators = {scope.rsplit(".", 1)[-1] for facts in files for scope in facts.no_grad_decorators}
    for facts in files:
        free[facts.path].update(scope for scope, names in facts.decorators.items()
                                if no_grad_decorators.intersection(names))
    values = value_only(files, pure)
    eager = eager_scopes(files, sites)
    changed = True
    while changed:  # least fixed point: a cycle of calls with no gradient-free way in stays live
        changed = False
        for facts in files:
            for scope in facts.functions:
                name = scope.rsplit(".", 1)[-1]
                if scope in free[facts.path] or name in FRAMEWORK_CALLED:
                    continue
                callers = sites.get((facts.path, scope), []) + sites.get(name, [])
                # Net(...) runs Net.__init__: what it builds is on the CPU where every Net(...) is
                # (a graph built under a gradient stop may still be differentiated later)
                made = sites.get(scope.split(".")[0], []) if name == "__init__" and "." in scope else []
                computes = (facts.path, scope) in values
                # a function only code placed on the CPU runs has no GPU backward either
                if (callers or made) and all(site.no_grad or site.on_cpu
                                             or (computes and (site.dropped or runs_eagerly(path, site, eager)))
                                             or (site.scope is not None and site.scope in free.get(path, ()))
                                             for path, site in callers) \
                        and all(site.on_cpu or (site.scope is not None and site.scope in free.get(path, ()))
                                for path, site in made):
                    free[facts.path].add(scope)
                    changed = True
    return free


def runs_eagerly(path: str, site: CallSite, eager: dict[str, set[Optional[str]]]) -> bool:
    return site.untaped and site.scope in eager.get(path, ())


def eager_scopes(files: list[FileFacts], sites: dict[Any, list[tuple[str, CallSite]]]) -> dict[str, set[Optional[str]]]:
    """Where code runs eagerly and no tape records it, in programs that take their gradients
    only with tapes: per file, its module level (unless a model is built there) and the
    functions that only such code calls, outside any tape."""
    styles = [set(f.gradient_style) for f in files]
    if not any("tape" in s for s in styles) or any("other gradients" in s for s in styles):
        return {}
    eager: dict[str, set[Optional[str]]] = {
        f.path: set() if "module model" in s else {None, MAIN_GUARD} for f, s in zip(files, styles)}
    changed = True
    while changed:
        changed = False
        for facts in files:
            if facts.path not in eager:
                continue
            for scope in facts.functions:
                name = scope.rsplit(".", 1)[-1]
                if scope in eager[facts.path] or name in FRAMEWORK_CALLED:
                    continue
                callers = sites.get((facts.path, scope), []) + sites.get(name, [])
                if callers and all(runs_eagerly(path, site, eager) for path, site in callers):
                    eager[facts.path].add(scope)
                    changed = True
    return eager


def value_only(files: list[FileFacts], pure: frozenset[str] = frozenset()) -> set[tuple[str, str]]:
    """Functions that only compute values: they make no object (no class is called: no layer,
    no model) and train nothing, and neither does any project function they call. Run eagerly
    outside a tape, nothing they compute is differentiated later."""
    by_name: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for facts in files:
        for scope in facts.functions:
            by_name[scope.rsplit(".", 1)[-1]].append((facts.path, scope))
    out = {(facts.path, scope) for facts in files for scope in facts.functions if scope not in facts.builders}
    callees = {key: [(site.target.split(".")[-1], "." in site.target) for site in facts.calls if site.scope == key[1]]
               for facts in files for key in ((facts.path, s) for s in facts.functions)}
    changed = True
    while changed:  # a call to something that is not a known function (a class) may make one; a
        # method no project code defines is a library's: only those that return a new value and
        # change nothing (``pure``: weights.sum(), x.unsqueeze(1)) keep the function value-only
        changed = False
        for key in sorted(out):
            if any(any(c not in out for c in by_name[name]) if by_name.get(name) else not (method and name in pure)
                   for name, method in callees[key]):
                out.discard(key)
                changed = True
    return out
