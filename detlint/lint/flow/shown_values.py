"""Draws whose value is only shown.

``uid = random.randint(1, 100)`` read only in ``print("UID: %s" % uid)`` names a run in a log:
like a draw written inside a print call, it feeds no training. A value bound to a name counts as
shown when every later read of that name in the file (in any function: names are not told apart
by scope, so a read anywhere keeps it) is inside a display call or its formatting.
"""
from __future__ import annotations

from dataclasses import replace

from detlint.lint.ftypes import Hit


class ShownValues:
    def __init__(self) -> None:
        self.bound: dict[str, list[int]] = {}  # name -> ids of the hits whose value it holds
        self.read: dict[str, bool] = {}  # name -> read (False: only shown so far; True: used)

    def note_bound(self, name: str, hit: Hit) -> None:
        self.bound.setdefault(name, []).append(id(hit))
        self.read.setdefault(name, False)

    def note_read(self, name: str, shown: bool) -> None:
        if name in self.read and not shown:
            self.read[name] = True
        elif name in self.read and shown:
            self.read.setdefault(f"{name}\0shown", True)

    def finish(self, hits: list[Hit]) -> list[Hit]:
        """``hits`` with those whose value is only ever shown marked as displayed."""
        only_shown = {i for name, indexes in self.bound.items()
                      if not self.read[name] and f"{name}\0shown" in self.read for i in indexes}
        return [replace(h, displayed=True) if id(h) in only_shown and not h.displayed else h for h in hits]
