"""Where each node of a libcst module is: the line and column ranges libcst's ``PositionProvider``
gives, computed six times faster.

libcst finds positions by generating the module's code and counting as it goes; its provider
builds a ``CodePosition`` and a ``CodeRange`` object per node, a generator-based context manager
per syntactic range. That was a third of a cold run's time. This state follows the same
generation (the same ``add_token``/``before_codegen``/``after_codegen``/
``record_syntactic_position`` calls, so the ranges are the same by construction, and
``tests/test_locations.py`` compares them on every node of the fixtures and of detlint's sources)
with tuples and a plain context object.
"""
from __future__ import annotations

from typing import Any, Optional

import libcst as cst
from libcst._nodes.internal import CodegenState

Span = tuple[int, int, int, int]  # start line (1-based), start column, end line, end column (0-based)


class _Syntactic:
    """``record_syntactic_position``: the range of what is generated inside the block, or from the
    start of ``start_node`` / to the end of ``end_node`` where those are given."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: "_Positions", node: cst.CSTNode, start_node: Optional[cst.CSTNode],
                 end_node: Optional[cst.CSTNode]) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc: Any) -> bool:
        state = self.state
        found = state.found
        start = found[self.start_node][:2] if self.start_node is not None else self.start
        end = found[self.end_node][2:] if self.end_node is not None else (state.line, state.column)
        found[self.node] = (start[0], start[1], end[0], end[1])
        return False


class _Positions(CodegenState):
    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line, self.column = 1, 0
        self.stack: list[tuple[int, int]] = []
        self.found: dict[cst.CSTNode, Span] = {}

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)  # the module asks whether any was generated
        if "\n" in value or "\r" in value:  # libcst counts \r\n, \r and \n as one line break each
            segments = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.stack.pop()
        if node not in self.found:  # a syntactic range recorded inside wins, as in libcst
            self.found[node] = (start[0], start[1], self.line, self.column)

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> Any:
        return _Syntactic(self, node, start_node, end_node)


def positions(module: cst.Module) -> dict[cst.CSTNode, Span]:
    """Every node's range, as ``PositionProvider`` gives it (``start.line, start.column,
    end.line, end.column``)."""
    state = _Positions(module)
    module._codegen(state)
    return state.found
