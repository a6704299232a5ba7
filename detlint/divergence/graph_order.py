"""Which recorded graph outputs came before which, from the graphs' structure, not the clock.

TensorFlow's debugger stamps an output when the op that records it runs; inside a graph that op
is scheduled alongside the ones consuming the same value, so a consumer can be stamped first
(seen in Keras's training step: a MatMul stamped before the IteratorGetNext that fed it). What an
op is computed from is sure: its inputs, through the graph that calls a function's graph.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Optional, Protocol, Sequence

Names = frozenset[tuple[str, str]]  # (graph name, op name)
# ops that run another graph (a function, a branch, a loop body): what follows them in the calling
# graph runs after what they call
CALLS = frozenset({"PartitionedCall", "StatefulPartitionedCall", "If", "StatelessIf", "While", "StatelessWhile",
                   "Case", "StatelessCase"})


class Recorded(Protocol):
    stream: str
    op_name: str
    graph: str
    wall_time: float
    handle: Any


class GraphOrder:
    """Reads a ``DebugDataReader``'s graphs once, on demand."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self._upstream: dict[tuple[Any, str], Names] = {}
        self._family: dict[Any, frozenset[str]] = {}
        self._calling: dict[Any, tuple[frozenset[str], bool]] = {}

    def _graph(self, graph_id: Any) -> Any:
        return self.reader.graph_by_id(graph_id)

    def _inputs(self, graph: Any, name: str) -> Optional[tuple[str, ...]]:
        try:
            digest = graph.get_op_creation_digest(name)
        except (KeyError, ValueError):
            return None  # not an op the debugger saw: a function call
        if digest.op_type in CALLS:
            return None
        return tuple(source.split(":")[0].lstrip("^") for source in digest.input_names or ())

    def _is_argument(self, graph: Any, name: str) -> bool:
        try:
            return graph.get_op_creation_digest(name).op_type == "Placeholder"
        except (KeyError, ValueError):
            return False

    def _within(self, graph: Any, name: str) -> tuple[set[str], bool, bool]:
        """The ops ``name`` is computed from in ``graph``; whether one is an argument of the graph,
        and whether one is unknown (a call's result)."""
        seen: set[str] = set()
        argument = unknown = False
        todo = [name]
        while todo:
            sources = self._inputs(graph, todo.pop())
            unknown = unknown or sources is None
            for op in sources or ():
                if op not in seen:
                    seen.add(op)
                    todo.append(op)
                    argument = argument or self._is_argument(graph, op)
        return seen, argument, unknown

    def upstream(self, record: Recorded) -> Names:
        """What a graph record's output is computed from. A function's graph takes its arguments
        from the graph calling it (Keras's ``one_step_on_data`` from ``multi_step_on_iterator``);
        the call is not among the debugger's ops, so of the calling graph only the ops that do not
        depend on a call's result count."""
        graph_id = record.handle.graph_id
        if (graph_id, record.op_name) not in self._upstream:
            out: set[tuple[str, str]] = set()
            try:
                graph = self._graph(graph_id)
                seen, argument, _ = self._within(graph, record.op_name)
                out = {(graph.name or "", op) for op in seen}
                while argument and graph.outer_graph_id:
                    graph = self._graph(graph.outer_graph_id)
                    names, argument = self._before_calls(graph)
                    out |= {(graph.name or "", name) for name in names}
            except Exception:  # an older reader without creation digests: the clock's order stays
                out = set()
            self._upstream[graph_id, record.op_name] = frozenset(out)
        return self._upstream[graph_id, record.op_name]

    def _before_calls(self, graph: Any) -> tuple[frozenset[str], bool]:
        """The ops of ``graph`` that depend on no call's result (they run before the graphs it
        calls), and whether one takes an argument of ``graph``; once per graph."""
        if graph.graph_id not in self._calling:
            names: set[str] = set()
            argument = False
            for digest in self.reader.graph_op_digests():
                if digest.graph_id != graph.graph_id:
                    continue
                _, takes_argument, unknown = self._within(graph, digest.op_name)
                if not unknown:
                    names.add(digest.op_name)
                    argument = argument or takes_argument
            self._calling[graph.graph_id] = (frozenset(names), argument)
        return self._calling[graph.graph_id]

    def family(self, record: Recorded) -> frozenset[str]:
        """The names of the graphs one execution of the record's graph runs through: the graphs
        calling it and the ones it calls."""
        graph_id = record.handle.graph_id
        if graph_id not in self._family:
            names: set[str] = set()
            try:
                top = self._graph(graph_id)
                while top.outer_graph_id:
                    top = self._graph(top.outer_graph_id)
                todo = [top]
                while todo:
                    graph = todo.pop()
                    names.add(graph.name or "")
                    todo.extend(self._graph(inner) for inner in graph.inner_graph_ids)
            except Exception:
                names = set()
            self._family[graph_id] = frozenset(names)
        return self._family[graph_id]

    def before(self, timeline: Sequence[Recorded], record: Recorded,
               key: Callable[[Any], Hashable]) -> list[Any]:
        """The outputs of ``timeline`` (in time order) that ran before ``record``. In the graphs
        its execution runs through: every output of an earlier execution and, of its own, the ones
        it is computed from (the clock cannot tell, ops there run side by side); elsewhere, what
        was recorded earlier."""
        index = None
        if record.stream == "graph":
            same = [r for r in timeline if key(r) == key(record)]
            index = next((i for i, r in enumerate(same) if r is record), None)
        if index is None:
            return [r for r in timeline if r.wall_time < record.wall_time]
        sources, family = self.upstream(record), self.family(record)
        seen: dict[Hashable, int] = {}
        out = []
        for r in timeline:
            n = seen[key(r)] = seen.get(key(r), -1) + 1
            if r.stream == "graph" and r.graph in family:
                if n < index or (n == index and (r.graph, r.op_name) in sources):
                    out.append(r)
            elif r.wall_time < record.wall_time:
                out.append(r)
        return out
