"""Training steps a constructor compiles and another method runs.

A JAX model class often defines its step as a closure in ``__init__`` and keeps it compiled
(``self.train_xmap = xmap(fun=train, ...)``, ``self.update = jax.jit(update)``); ``train()``
then calls ``self.train_xmap(...)``. What the closure holds (``optax.apply_updates``, the
random draws of the step) runs where that attribute is called, not when the object is made: an
inference script that builds the model and calls only ``generate()`` trains nothing. Nested
functions are merged into the scope of the function they are defined in, so such a closure's
hits and calls are moved to the scope of the first method that calls the attribute. A closure
whose attribute no method of the class calls (``self.net.apply`` of a transformed function, or a
caller elsewhere) keeps its scope, as before.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence, TypeVar

from detlint.lint.ftypes import CallSite, Hit

Span = tuple[int, int, int, int]
T = TypeVar("T", Hit, CallSite)


class DeferredSteps:
    def __init__(self) -> None:
        self.kept: list[tuple[Span, str, str]] = []  # (closure's span, class, attribute it is kept in)
        self.callers: dict[tuple[str, str], str] = {}  # (class, attribute) -> first method calling it

    def note_kept(self, klass: Optional[str], target: Optional[str], span: Optional[Span]) -> None:
        """``self.<attribute> = runner(closure)`` in a method of ``klass``."""
        if klass and span and target and target.startswith("self.") and target.count(".") == 1:
            self.kept.append((span, klass, target[5:]))

    def note_call(self, scope: Optional[str], func: Optional[str]) -> None:
        """``self.<attribute>(...)`` called in ``scope`` (``Class.method``)."""
        if scope and "." in scope and func and func.startswith("self.") and func.count(".") == 1:
            self.callers.setdefault((scope.split(".")[0], func[5:]), scope)

    def moved(self, items: Sequence[T]) -> list[T]:
        """``items`` with those inside a kept closure moved to the method that calls it."""
        moves = [(span, self.callers[(klass, attribute)]) for span, klass, attribute in self.kept
                 if (klass, attribute) in self.callers]
        if not moves:
            return list(items)
        out = []
        for item in items:
            at = (item.line, item.col)
            scope = next((to for (l0, c0, l1, c1), to in moves if (l0, c0) <= at <= (l1, c1)), None)
            out.append(replace(item, scope=scope) if scope is not None and scope != item.scope else item)
        return out
