"""Which ops feed the loss their block takes the gradient of: the others get no gradient from it.

A TF1 script builds its graph in one block and takes one gradient, ``opt.minimize(loss)``; the
ops it builds beside the loss (the similarity of validation words in a word2vec script, computed
only to be printed) are never differentiated. Within one block (a function, or the module level)
the names each assignment binds are linked to the names its value reads; an op bound to names
from which no gradient target (``minimize(loss)``, ``tape.gradient(loss, ...)``, the
gradient-targets group) can be reached is off the gradient path, and so is one that reads none
of the variables a target is limited to (``minimize(loss, var_list=[A, b])`` differentiates only
what lies between ``A``, ``b`` and the loss; an embedding looked up before them is not). Kept simple on purpose: names
only, every binding of a name counted (a name rebound anywhere in the block may feed the loss),
and a block whose loss comes from a collection (``get_total_loss()``, ``add_loss``) is not judged.
An op that is not bound to a name (returned, stored on ``self``) always counts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

import libcst as cst

from detlint.lint.ftypes import Hit

Span = tuple[int, int, int, int]


def read_names(node: cst.CSTNode) -> set[str]:
    """The names an expression reads (``a.b[c](d)`` reads a, c and d)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, cst.Name):
            out.add(item.value)
        elif isinstance(item, cst.Attribute):
            stack.append(item.value)
        else:
            stack.extend(item.children)
    return out


@dataclass
class Block:
    # (names bound, the value and the names bound before it that it reads, where); what a value
    # reads is worked out only for a block that takes a gradient (most take none)
    bindings: list[tuple[tuple[str, ...], cst.CSTNode, tuple[str, ...], Optional[Span]]] = field(default_factory=list)
    # each gradient target: the names its loss reads, and the variables it is limited to
    # (``minimize(loss, var_list=[A, b])``), None for all
    roots: list[tuple[frozenset[str], Optional[frozenset[str]]]] = field(default_factory=list)
    opaque: bool = False  # its loss is gathered from a collection: not judged

    def reads(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for targets, value, also, _ in self.bindings:
            deps = read_names(value) | set(also)
            for name in targets:
                out.setdefault(name, set()).update(deps)
        return out

    def paths(self) -> list[tuple[set[str], Optional[set[str]]]]:
        """For each gradient target, the names its loss reads directly or through the names
        they bind, and (when it is limited to some variables) the names that read those."""
        reads = self.reads()
        readers: dict[str, set[str]] = {}
        for name, deps in reads.items():
            for dep in deps:
                readers.setdefault(dep, set()).add(name)
        return [(_closure(names, reads), None if variables is None else _closure(variables, readers))
                for names, variables in self.roots]


def _closure(start: Iterable[str], edges: dict[str, set[str]]) -> set[str]:
    seen, todo = set(start), list(start)
    while todo:
        for name in edges.get(todo.pop(), ()):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


class GradientPaths:
    """Filled during the walk, one ``Block`` per scope; read once at its end."""

    def __init__(self) -> None:
        self.blocks: dict[Optional[str], Block] = {}

    def block(self, scope: Optional[str]) -> Block:
        return self.blocks.setdefault(scope, Block())

    def bind(self, scope: Optional[str], targets: Iterable[str], value: cst.CSTNode, span: Optional[Span],
             also: Iterable[str] = ()) -> None:
        names = tuple(targets)
        if names:
            self.block(scope).bindings.append((names, value, tuple(also), span))

    def root(self, scope: Optional[str], loss: cst.CSTNode, variables: Optional[Iterable[str]] = None) -> None:
        self.block(scope).roots.append((frozenset(read_names(loss)), None if variables is None else frozenset(variables)))

    def opaque(self, scope: Optional[str]) -> None:
        self.block(scope).opaque = True

    def off_gradient(self, hits: Iterable[Hit]) -> list[tuple[int, int]]:
        """The places of ``hits`` (backprop ops) bound only to names no gradient target reads."""
        out = []
        paths = {scope: block.paths() for scope, block in self.blocks.items() if block.roots and not block.opaque}
        for hit in hits:
            block = self.blocks.get(hit.scope)
            if hit.scope not in paths or block is None:
                continue
            bound = {name for targets, _, _, span in block.bindings
                     if span is not None and (span[0], span[1]) <= (hit.line, hit.col) <= (span[2], span[3])
                     for name in targets}
            if bound and not any(bound & feeding and (after is None or bound & after)
                                 for feeding, after in paths[hit.scope]):
                out.append((hit.line, hit.col))
        return out
