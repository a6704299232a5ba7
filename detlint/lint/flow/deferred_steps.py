"""Training steps a constructor compiles and another method runs.

A JAX model class often defines its step as a closure in ``__init__`` and keeps it compiled
(``self.train_xmap = xmap(fun=train, ...)``, ``self.update = jax.jit(update)``); ``train()``
then calls ``self.train_xmap(...)``. What the closure holds (``optax.apply_updates``, the
random draws of the step) runs where that attribute is called, not when the object is made: an
inference script that builds the model and calls only ``generate()`` trains nothing. Nested
functions are merged into the scope of the function they are defined in, so such a closure's
hits and calls are moved to a scope of their own, ``Class.attribute``, which the class gets as a
method: calls of the attribute run it, from its own methods or from elsewhere.

A method kept the same way (``self.p_train_step = functools.partial(self.train_step, rng)``, then
``jax.pmap(self.p_train_step)``) makes the attribute an alias of that method: calling it runs
the method.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence, TypeVar

from detlint.lint.ftypes import CallSite, Hit

Span = tuple[int, int, int, int]
T = TypeVar("T", Hit, CallSite)


class DeferredSteps:
    def __init__(self) -> None:
        self.kept: list[tuple[Span, str, str, int]] = []  # (closure's span, class, attribute, line)
        self.aliases: dict[tuple[str, str], tuple[str, int]] = {}  # (class, attribute) -> (method, line)

    def note_alias(self, klass: Optional[str], target: Optional[str], method: Optional[str], line: int) -> None:
        """``self.<attribute> = partial(self.<method>, ...)`` (or jit, pmap of it) in ``klass``."""
        if klass and method and target and target.startswith("self.") and target.count(".") == 1 \
                and target[5:] != method:
            self.aliases[(klass, target[5:])] = (method, line)

    def alias_calls(self, defined: dict[str, list[str]]) -> list[tuple[str, str, int, CallSite]]:
        """(class, attribute, line, the call of its method) for each alias that is no method of
        its own: the attribute becomes a method whose body calls the one it holds."""
        return [(klass, attribute, line, CallSite(f"self.{method}", line, 0, f"{klass}.{attribute}"))
                for (klass, attribute), (method, line) in self.aliases.items()
                if attribute not in defined.get(klass, [])]

    def note_kept(self, klass: Optional[str], target: Optional[str], span: Optional[Span], line: int = 0) -> None:
        """``self.<attribute> = runner(closure)`` in a method of ``klass``."""
        if klass and span and target and target.startswith("self.") and target.count(".") == 1:
            self.kept.append((span, klass, target[5:], line))

    def methods(self) -> list[tuple[str, str, int]]:
        """(class, attribute, line): attributes that now act as methods of their class."""
        return [(klass, attribute, line) for _, klass, attribute, line in self.kept]

    def moved(self, items: Sequence[T]) -> list[T]:
        """``items`` with those inside a kept closure moved to the scope ``Class.attribute``: they
        run where that attribute is called (``self.train_step(...)`` in any method, or
        ``model.train_step(...)`` elsewhere), as a method of that name would."""
        if not self.kept:
            return list(items)
        out = []
        for item in items:
            at = (item.line, item.col)
            scope = next((f"{klass}.{attribute}" for (l0, c0, l1, c1), klass, attribute, _ in self.kept
                          if (l0, c0) <= at <= (l1, c1)), None)
            out.append(replace(item, scope=scope) if scope is not None and scope != item.scope else item)
        return out
