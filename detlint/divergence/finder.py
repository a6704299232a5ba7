"""``detlint diverge``: run the same program (or step function) twice, record every op's output
with TensorFlow's debugger, and point at the first op whose outputs differ.

Recording happens in the child processes (``recorder``); this module starts them, reads the two
dumps with TensorFlow's ``DebugDataReader`` one tensor at a time (only digests are kept, so
memory does not grow with the model), compares them in execution order, and names the first
difference with its op type, op name, the source line that created it and, where the knowledge
base knows the op, the rule and its fix for the installed TensorFlow version.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from detlint.divergence import limits, states
from detlint.divergence.graph_order import GraphOrder
from detlint.divergence.states import is_library_frame
from detlint.knowledge import kb as kb_module
from detlint.knowledge.frameworks import framework as framework_of
from detlint.settings.config import check_seed
from detlint.divergence.recorder import (ENV_DUMP, ENV_MB, ENV_PATHS, ENV_SECONDS, ENV_SEED, ENV_STEPS,
                                        dump_size_mb, library_roots)
from detlint.child_processes import Terminated, ended_by_signals
from detlint.divergence.runs import RunResult, records_folder, run_program
from detlint.lint.escapes import shown
from detlint.runtime.shim import target_versions, tf_version

LOG_LEVEL = "TF_CPP_MIN_LOG_LEVEL"
QUIET_LEVEL = "2"  # TensorFlow's C++ INFO and WARNING lines (its start-up banner) are not shown
NEARBY = 6  # how many earlier ops to look at when the differing op itself is not in the knowledge base
SHOWN = 8  # variables listed for a differing state
TIMELINE_LIMIT = 5000  # points the HTML report plots
# TensorFlow ops that pass a value on unchanged (or only retyped, reshaped): a difference that
# starts at one of them began in what it was given
TF_PASS_THROUGH = frozenset({"Cast", "Identity", "IdentityN", "Reshape", "ReadVariableOp", "Squeeze", "ExpandDims",
                             "Transpose", "StopGradient", "Snapshot", "CheckNumerics"})
STATE_TITLES = {states.INIT: "the initial weights, before the first training step",
                states.BATCH: "the first batch the model is given"}
STATE_RULES = {states.INIT: "initial-state", states.BATCH: "first-batch"}
STATE_NAMES = {states.INIT: "the initial weights", states.BATCH: "the first batch"}


@dataclass
class Record:
    stream: str  # "graph" (ops inside tf.function graphs) or "eager"
    position: int
    op_type: str
    op_name: str
    slot: int
    digest: str
    values: int
    wall_time: float
    handle: Any = field(repr=False, compare=False, default=None)
    graph: str = ""  # the tf.function graph the op ran in ("" when eager)


@dataclass
class Divergence:
    stream: str
    position: int
    op_type: str
    op_name: str
    location: str
    max_abs_diff: Optional[float]
    detail: str
    rule: Optional[str] = None
    rule_name: Optional[str] = None
    fix: Optional[str] = None
    # "init" (the variables before the first training step), "batch" (the first batch) or "ops"
    phase: str = "ops"
    variables: list[dict[str, Any]] = field(default_factory=list)  # for init and batch: what differs
    total: int = 0  # ... out of how many
    # only that one run recorded more of this output than the other: when a run failed or was
    # stopped, that is its failure, not a difference
    count_only: bool = False


@dataclass
class DivergeReport:
    command: str
    runs: int
    ops_compared: int = 0
    values_compared: int = 0
    first: Optional[Divergence] = None
    exit_codes: list[int] = field(default_factory=list)
    dump_mb: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    compared: bool = False  # False when a run recorded nothing, so there was nothing to compare
    states_compared: dict[str, int] = field(default_factory=dict)  # state -> variables compared
    # every compared output in execution order, for the HTML report: {"i", "label", "phase",
    # "diff" (0.0 equal, None not comparable), "where"}; at most TIMELINE_LIMIT points
    timeline: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # one line per run that failed or was stopped
    unreadable: str = ""  # why the runs' records could not be read (one line), or ""
    records_left: list[str] = field(default_factory=list)  # the records' folder when it could not be removed

    @property
    def verdict(self) -> str:
        """"differ" (exit 1), "same" (exit 0), or "incomplete" (exit 2): a run recorded nothing, or
        failed or was stopped with no difference before that (then the runs were not the same)."""
        if self.first is not None and not (self.failures and self.first.count_only):
            return "differ"
        return "same" if self.compared and not self.failures else "incomplete"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict}

    def _identical(self) -> str:
        seen = [f"{STATE_NAMES[phase]} ({n} {'variable' if phase == states.INIT else 'array'}{'s' * (n != 1)})"
                for phase, n in self.states_compared.items()]
        return f"{', '.join(seen + [''])}{self.ops_compared} op outputs ({self.values_compared} values)"

    def __str__(self) -> str:
        lines = [f"detlint diverge: {self.runs} runs of {self.command}"]
        verdict = self.verdict
        if self.unreadable:
            lines.append(f"no verdict: the runs' records could not be read: {self.unreadable}")
            lines.extend(f"  {failure}" for failure in self.failures)
        elif not self.compared:
            lines.append("nothing to compare: a run recorded no TensorFlow, PyTorch or JAX ops")
            lines.extend(f"  {failure}" for failure in self.failures)
        elif verdict == "incomplete":
            lines.append("no verdict: a run failed or was stopped, so the runs cannot be called the same")
            lines.extend(f"  {failure}" for failure in self.failures)
            if self.first is not None:
                lines.append(f"  {self.first.detail}")
            lines.append(f"  before that, {self._identical()} were identical")
        elif self.first is None:
            lines.append(f"no difference: {self._identical()} were identical in every run")
        elif self.first.phase in STATE_TITLES:
            d = self.first
            owners = {v["owner"] for v in d.variables}
            counted = f"{len(d.variables)} of {d.total} variables differ, in {len(owners)} layer{'s' * (len(owners) != 1)}" \
                if d.phase == states.INIT else f"{len(d.variables)} of {d.total} input{'s' * (d.total != 1)} differ"
            lines.append(f"first difference: {STATE_TITLES[d.phase]} ({counted})")
            for v in d.variables[:SHOWN]:
                made = f", created at {v['created']}" if v["created"] else ""
                diff = f"max |run 1 - run 2| = {v['max_abs_diff']:.6g}" if v["max_abs_diff"] is not None else "differs"
                lines.append(f"  {v['owner']} ({v['kind']}{made}): {v['name']} {v['shape']} {diff}")
            if len(d.variables) > SHOWN:
                lines.append(f"  ... and {len(d.variables) - SHOWN} more")
            if d.rule:
                lines.append(f"  known source: {d.rule} {d.rule_name}; {d.fix}")
            if d.detail:
                lines.append(f"  {d.detail}")
        else:
            d = self.first
            name = f" '{d.op_name}'" if d.op_name and d.op_name != d.op_type and d.stream else ""
            where = {"graph": "inside a tf.function graph", "eager": "run eagerly"}.get(d.stream) or (
                f"in {d.op_name}" if d.op_name else "outside any module")
            lines.append(f"first difference: {d.op_type}{name} ({where})")
            lines.append(f"  created at {d.location}")
            if d.max_abs_diff is not None:
                lines.append(f"  max |run 1 - run 2| = {d.max_abs_diff:.6g}")
            if d.detail:
                lines.append(f"  {d.detail}")
            if d.rule:
                lines.append(f"  known source: {d.rule} {d.rule_name}; {d.fix}")
            lines.append(f"  ({self.ops_compared} op outputs, {self.values_compared} values compared before it)")
        if verdict == "differ":
            lines.extend(f"note: {failure}" for failure in self.failures)
        lines.extend(f"note: {n}" for n in self.notes)
        gone = f"left in {shown(self.records_left[0])}" if self.records_left else "removed"
        lines.append(f"disk used per run: {', '.join(f'{mb:.1f} MB' for mb in self.dump_mb)} ({gone})")
        return "\n".join(lines)


# ---- reading a dump -----------------------------------------------------------------------------
def _digest(value: Any) -> tuple[str, int]:
    import numpy as np

    array = np.asarray(value)
    payload = array.tobytes() if array.dtype != object else repr(array.tolist()).encode()
    head = f"{array.dtype}|{array.shape}|".encode()
    return hashlib.sha1(head + payload).hexdigest(), int(array.size)


def _comparable(value: Any) -> bool:
    """Numbers and strings; not resource or variant handles, whose ids differ in every run."""
    import numpy as np

    if value is None:
        return False
    array = np.asarray(value)
    return array.dtype.kind in "fciubSU"


def read_records(dump_root: str) -> tuple[Any, list[Record], list[Record]]:
    """The reader (kept open to re-read values) and the graph and eager records, in order."""
    from tensorflow.python.debug.lib import debug_events_reader  # type: ignore[import-not-found]

    reader = debug_events_reader.DebugDataReader(dump_root)
    reader.update()
    graph: list[Record] = []
    for trace in reader.graph_execution_traces(digest=False):
        value = reader.graph_execution_trace_to_tensor_value(trace)
        if not _comparable(value):
            continue
        digest, size = _digest(value)
        try:
            graph_name = reader.graph_by_id(trace.graph_id).name or ""
        except Exception:
            graph_name = ""
        graph.append(Record("graph", len(graph), trace.op_type, trace.op_name, trace.output_slot, digest, size,
                            trace.wall_time, trace, graph_name))
    eager: list[Record] = []
    for execution in reader.executions(digest=False):
        for slot, value in enumerate(reader.execution_to_tensor_values(execution)):
            if not _comparable(value):
                continue
            digest, size = _digest(value)
            eager.append(Record("eager", len(eager), execution.op_type, execution.op_type, slot, digest, size,
                                execution.wall_time, (execution, slot)))
    return reader, graph, eager


def close(reader: Any) -> None:
    """Close a reader's files (``DebugDataReader`` closes them as a context manager only)."""
    try:
        reader.__exit__(None, None, None)
    except Exception:  # noqa: BLE001 - a file already gone: nothing left open
        pass


def _value(reader: Any, record: Record) -> Any:
    if record.stream == "graph":
        return reader.graph_execution_trace_to_tensor_value(record.handle)
    execution, slot = record.handle
    return reader.execution_to_tensor_values(execution)[slot]


def _location(reader: Any, record: Record, roots: Sequence[str] = ()) -> str:
    try:
        if record.stream == "graph":
            trace = record.handle
            creation = reader.graph_by_id(trace.graph_id).get_op_creation_digest(trace.op_name)
            _, frames = reader.read_graph_op_creation_stack_trace(creation)
        else:
            _, frames = reader.read_execution_stack_trace(record.handle[0])
    except Exception:
        return "unknown source location"
    roots = list(roots) or library_roots()
    user = [f for f in frames if not is_library_frame(f[0], roots)]
    if not user:
        return "unknown source location (only library frames)"
    path, line, func = user[-1][:3]
    return f"{states.shown_path(path)}:{line} (in {func})"


def _max_abs_diff(a: Any, b: Any) -> tuple[Optional[float], str]:
    import numpy as np

    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return None, f"shapes differ: {a.shape} vs {b.shape}"
    if a.dtype.kind in "fciub" and b.dtype.kind in "fciub":
        diff = np.abs(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) - b.astype(np.float64))
        return float(np.max(diff)) if diff.size else 0.0, ""
    return None, "non-numeric values differ"


# ---- comparing --------------------------------------------------------------------------------------
def _graph_rules(kb: kb_module.KnowledgeBase) -> list[tuple[str, str]]:
    """(pattern, rule code): ops running in graphs named like this belong to a rule's area
    (tf.data functions run in graphs named ``...Dataset_map_<fn>...``)."""
    return [(pattern, rule.code) for rule in kb.rules.values() for pattern in rule.graph_patterns]


def _raw_op_rules(kb: kb_module.KnowledgeBase, version: Any) -> dict[str, str]:
    """TensorFlow op type -> rule code, from the knowledge base's raw-op lists."""
    out: dict[str, str] = {}
    for rule in kb.rules.values():
        for op_type in rule.raw_ops:
            out.setdefault(op_type, rule.code)
    for op in kb.ops.values():
        status = op.status_at(version)
        if status is None:
            continue
        code = "DET201" if status.status == "determinism" else "DET202"
        for op_type in op.raw_ops:
            out.setdefault(op_type, code)
    return out


def _key(record: Record) -> tuple[str, str, str, int]:
    return record.stream, record.op_type, record.op_name, record.slot


def _sequences(records: list[Record]) -> dict[tuple[str, str, str, int], list[Record]]:
    """Records per op output, in time order. Graphs that run concurrently (tf.data functions
    on their own threads) interleave differently from run to run; per-op sequences do not."""
    out: dict[tuple[str, str, str, int], list[Record]] = {}
    for record in records:
        out.setdefault(_key(record), []).append(record)
    return out


def _first_difference(base: list[Record], other: list[Record], unordered: Sequence[str] = (),
                      order: Optional[GraphOrder] = None,
                      ) -> Optional[tuple[Record, Record, str]]:
    """The earliest output (by time in the first run) whose value, or count, differs.

    Ops in graphs matching ``unordered`` (tf.data functions) are left out: they run on several
    threads, and how far ahead they work depends on prefetching, even when the pipeline's output
    is fixed. A reordered or changed pipeline shows where its output is consumed (IteratorGetNext).

    Inside one graph, times do not give the order: the debugger records an output when its own
    op is scheduled, which can be after the ops that consume it already ran. ``order`` knows the
    ops a graph op is computed from; a difference in one of them, at the same or an earlier
    execution, came first whatever the clock says."""
    mine, theirs = _sequences(base), _sequences(other)
    found: dict[tuple[str, str, str, int], tuple[int, tuple[Record, Record, str]]] = {}
    for key in set(mine) | set(theirs):
        a, b = mine.get(key, []), theirs.get(key, [])
        sample = (a or b)[0]
        if any(pattern in sample.graph for pattern in unordered):
            continue
        for i in range(max(len(a), len(b))):
            if i >= len(a) or i >= len(b):
                x = a[i] if i < len(a) else b[i]
                found[key] = (i, (x, x, f"{key[2] or key[1]} ran {len(a)} times in one run and {len(b)} in the other"))
            elif a[i].digest != b[i].digest:
                found[key] = (i, (a[i], b[i], ""))
            else:
                continue
            break
    if not found:
        return None
    best = min(found.values(), key=lambda entry: entry[1][0].wall_time)
    visited: set[int] = set()
    while order is not None and best[1][0].stream == "graph" and id(best[1][0]) not in visited:
        record = best[1][0]
        visited.add(id(record))
        sources = order.upstream(record)
        # a cause in another graph counts where both ran as often (one call per execution)
        causes = [entry for key, entry in found.items()
                  if key[0] == "graph" and (entry[1][0].graph, key[2]) in sources and entry[0] <= best[0]
                  and id(entry[1][0]) not in visited
                  and (entry[1][0].graph == record.graph or len(mine.get(key, [])) == len(mine.get(_key(record), [])))]
        if not causes:
            break
        best = min(causes, key=lambda entry: (entry[0], entry[1][0].wall_time))
    return best[1]


def _tf_timeline(timeline: list[Record], reader0: Any, other: tuple[Any, list[Record], list[Record]]
                 ) -> list[dict[str, Any]]:
    """The largest difference of each op output of run 1 (by time) against its twin in run 2 (the
    same op output's same occurrence)."""
    reader1, graph1, eager1 = other
    twins = _sequences(graph1 + eager1)
    seen: dict[tuple[str, str, str, int], int] = {}
    out = []
    reads = 0
    for record in timeline[:TIMELINE_LIMIT]:
        key = _key(record)
        n = seen.get(key, 0)
        seen[key] = n + 1
        twin = twins.get(key, [])
        diff: Optional[float] = None
        if n < len(twin):
            if twin[n].digest == record.digest:
                diff = 0.0
            elif reads < 500:  # reading values back is the slow part: the first 500 differences
                reads += 1
                diff = _max_abs_diff(_value(reader0, record), _value(reader1, twin[n]))[0]
        out.append({"i": len(out), "label": record.op_name or record.op_type, "phase": "ops", "diff": diff,
                    "where": record.op_type})
    return out


def _passed_on(reader: Any, record: Record, records: list[Record]) -> str:
    """What a pass-through op (a cast, an identity, a reshape) whose output differs was given: the
    op that made its input, or a value from outside TensorFlow's ops (Python, NumPy)."""
    source: Optional[str] = None
    try:
        if record.stream == "graph":
            graph = reader.graph_by_id(record.handle.graph_id)
            names = graph.get_op_creation_digest(record.op_name).input_names
            if names:
                producer = names[0].split(":")[0]
                kind = graph.get_op_creation_digest(producer).op_type
                source = f"{kind} '{producer}'"
        else:
            execution = record.handle[0]
            made = {tid: r for r in records if r.stream == "eager"
                    for tid in (r.handle[0].output_tensor_ids or ())}
            inputs = [made[t] for t in (execution.input_tensor_ids or ()) if t in made]
            if inputs:
                source = f"{inputs[0].op_type} (run eagerly, created at {_location(reader, inputs[0])})"
    except Exception:  # an older reader without these fields: say what is sure
        return f"{record.op_type} only passes on its input, which differs already"
    if source is None:
        return (f"{record.op_type} only passes on its input, which differs already and was made outside "
                f"TensorFlow's ops (a Python or NumPy value: a seed or number drawn there)")
    return f"{record.op_type} only passes on its input, which differs already: it came from {source}"


def compare(dumps: list[str], seed: int = 42, roots: Sequence[str] = ()) -> DivergeReport:
    """Compare run 1 with every other run; the earliest difference (by time) is reported.
    ``roots``: the library folders of the programs' interpreter (this one's when empty)."""
    kb = kb_module.load()
    version = tf_version() or kb_module.Version.parse("2.21")
    raw = _raw_op_rules(kb, version)
    report = DivergeReport(command="", runs=len(dumps))
    opened: list[tuple[Any, list[Record], list[Record]]] = []
    try:
        for dump in dumps:  # readers opened before one that fails are still closed
            opened.append(read_records(dump))
        reader0, graph0, eager0 = opened[0]
        unordered = [p for p, _ in _graph_rules(kb)]
        timeline = sorted((r for r in graph0 + eager0 if not any(p in r.graph for p in unordered)),
                          key=lambda r: r.wall_time)
        report.timeline = _tf_timeline(timeline, reader0, opened[1])
        best: Optional[tuple[Record, Record, Any, str]] = None
        order = GraphOrder(reader0)
        for reader1, graph1, eager1 in opened[1:]:
            found = _first_difference(graph0 + eager0, graph1 + eager1, unordered, order)
            if found is not None and (best is None or found[0].wall_time < best[0].wall_time):
                best = (found[0], found[1], reader1, found[2])
        if best is None:
            report.ops_compared, report.values_compared = len(timeline), sum(r.values for r in timeline)
            return report
        record, twin, reader1, detail = best
        count_only = bool(detail)  # _first_difference explains only a count
        earlier = order.before(timeline, record, _key)
        report.ops_compared, report.values_compared = len(earlier), sum(r.values for r in earlier)
        diff: Optional[float] = None
        if not detail and twin is not record:
            diff, detail = _max_abs_diff(_value(reader0, record), _value(reader1, twin))
        elif not detail:
            detail = "this output value never occurred in the other run"
        code = None
        for candidate in [record, *reversed(earlier[-NEARBY:])]:
            code = raw.get(candidate.op_type)
            if code:
                if candidate is not record:
                    detail = (detail + "; " if detail else "") + f"near {candidate.op_type} '{candidate.op_name}'"
                break
        if code is None or code == "DET101":
            for pattern, graph_code in _graph_rules(kb):
                if pattern in record.graph:
                    detail = (detail + "; " if detail else "") + f"in the input pipeline function {record.graph}"
                    code = code or graph_code
                    break
        if record.op_type in TF_PASS_THROUGH:
            detail = (detail + "; " if detail else "") + _passed_on(reader0, record, graph0 + eager0)
        rule = kb.rules.get(code) if code else None
        if rule is not None and STATE_RULES[states.BATCH] in rule.explains:  # a batch from the input pipeline
            others = [f"{r.code} {r.name}" for r in kb.rules.values() if STATE_RULES[states.BATCH] in r.explains
                      and r.framework == rule.framework and r.code != rule.code and r.versions.contains(version)]
            detail = (detail + "; " if detail else "") + "the batch the pipeline gave differs" + (
                f" (also possible: {', '.join(others)})" if others else "")
        fix = rule.fix_for(version) if rule else None
        report.first = Divergence(
            stream=record.stream, position=len(earlier), op_type=record.op_type, op_name=record.op_name,
            location=_location(reader0, record, roots), max_abs_diff=diff, detail=detail,
            rule=code, rule_name=rule.name if rule else None,
            fix=(fix.title.replace("{seed}", str(seed)) + f" (TF {version})") if fix else None,
            count_only=count_only)
        return report
    finally:
        for reader, _, _ in opened:
            close(reader)


def compare_states(dumps: list[str], seed: int = 42, counted: Optional[dict[str, int]] = None,
                   points: Optional[list[dict[str, Any]]] = None) -> Optional[Divergence]:
    """The first state (initial weights, then the first batch) that differs between run 1 and
    another run, with the knowledge base's rule for it in the framework that recorded it.
    ``counted`` receives how many variables of each state were compared, ``points`` the largest
    difference of each variable against run 2 (the report's first points)."""
    found: Optional[Divergence] = None
    for phase in (states.INIT, states.BATCH):
        for k, other in enumerate(dumps[1:]):
            compared = states.differences(dumps[0], other, phase)
            if compared is None:
                continue
            if counted is not None:
                counted[phase] = compared.variables
            if k == 0 and points is not None:
                differing = {(d.owner, d.name): d for d in compared.differing}
                for entry in compared.entries:
                    d = differing.get((entry.owner, entry.name))
                    points.append({"i": 0, "label": f"{entry.owner}.{entry.name}", "phase": phase,
                                   "diff": 0.0 if d is None else d.max_abs_diff, "where": entry.created})
            if found is None and compared.differing:
                found = _state_divergence(phase, compared, seed)
    return found


def _state_divergence(phase: str, compared: states.Compared, seed: int) -> Divergence:
    kb = kb_module.load()
    version = target_versions()[compared.framework]
    rules = [r for r in kb.rules.values() if STATE_RULES[phase] in r.explains
             and r.framework == compared.framework and r.versions.contains(version)]
    rule = rules[0] if rules else None
    fix = rule.fix_for(version) if rule else None
    title = framework_of(compared.framework).title
    others = ", ".join(f"{r.code} {r.name}" for r in rules[1:])
    first = compared.differing[0]
    return Divergence(
        stream="", position=0, op_type="", op_name="", location=first.created or "unknown source location",
        max_abs_diff=first.max_abs_diff, detail=f"also possible: {others}" if others else "",
        rule=rule.code if rule else None, rule_name=rule.name if rule else None,
        fix=(fix.title.replace("{seed}", str(seed)) + f" ({title} {version})") if fix else None,
        phase=phase, total=compared.variables,
        variables=[{"owner": d.owner, "kind": d.kind, "created": d.created, "name": d.name,
                    "shape": list(d.shape), "max_abs_diff": d.max_abs_diff} for d in compared.differing])


def _op_rule(kb: kb_module.KnowledgeBase, raw_op: str, framework: str, version: Any) -> Optional[kb_module.Rule]:
    """The rule that explains an op of ``framework`` by its raw name, at ``version``: the rule of
    the op's status (or the one the op names), or a rule that lists it (random ops: a seed)."""
    for rule in kb.rules.values():
        if rule.framework == framework and raw_op in rule.raw_ops and rule.versions.contains(version):
            return rule
    for op in kb.ops.values():
        if op.framework != framework or raw_op not in op.raw_ops:
            continue
        status = op.status_at(version)
        if status is None:
            continue
        for rule in kb.rules.values():
            if rule.framework == framework and status.status in rule.ops_status and rule.scope in ("file", "program") \
                    and (op.reported_by is None or rule.code == op.reported_by):
                return rule
    return None


RECORDED_OPS = ("torch", "jax")  # frameworks whose recorders write an oplog


def compare_recorded_ops(dumps: list[str], seed: int = 42, timeline: Optional[list[dict[str, Any]]] = None,
                         framework: str = "torch") -> Optional[tuple[Optional[Divergence], int, int]]:
    """PyTorch or JAX runs (torch_recorder, jax_recorder): the first op output, in execution order,
    that differs between run 1 and another run; None when the runs recorded no such ops. A
    difference that starts at a pass-through op (a copy, a cast, a view) is placed at what it
    passes on."""
    from detlint.divergence import oplog, torch_recorder

    timeline = [] if timeline is None else timeline
    runs = [oplog.read(d, framework) for d in dumps]
    if any(r is None for r in runs) or not runs[0]:
        return None
    if all(states.read(d, states.INIT) is not None and states.read(d, states.BATCH) is not None for d in dumps):
        # the weights and the first batch were compared and are equal: what ran before the model's
        # first call (initialisers later overwritten, data preparation) reached training only
        # through them
        runs = [[r for r in run if r.get("training", True)] for run in runs]  # type: ignore[union-attr]
    base = runs[0]
    first: Optional[tuple[int, int]] = None  # (index, run)
    for k, other in enumerate(runs[1:], start=1):
        for i, (a, b) in enumerate(zip(base, other)):
            if a["op"] != b["op"] or a["digest"] != b["digest"]:
                break
        else:
            if len(base) == len(other):
                continue
            i = min(len(base), len(other))
        if first is None or i < first[0]:
            first = (i, k)
    timeline.extend(_ops_timeline(dumps[0], base, dumps[1], runs[1], framework))
    if first is None:
        return None, len(base), sum(int(_count(r["shape"])) for r in base)
    i, k = first
    other = runs[k]
    before = base[:i]
    compared = (len(before), sum(int(_count(r["shape"])) for r in before))
    if i >= len(base) or i >= len(other):
        longer = base if len(base) > len(other) else other
        record = longer[i]
        return (Divergence(stream="", position=i, op_type=record["op"], op_name=record["module"],
                           location=record["site"] or "unknown source location", max_abs_diff=None,
                           detail=f"one run recorded {len(base)} op outputs and the other {len(other)}",
                           phase=record["phase"], count_only=True), *compared)
    a, b = base[i], other[i]
    diff: Optional[float] = None
    detail = ""
    if a["op"] != b["op"]:
        detail = f"the runs took different paths: {a['op']} in run 1, {b['op']} in run {k + 1}"
    else:
        x, y = oplog.values(dumps[0], framework, a), oplog.values(dumps[k], framework, b)
        if x is not None and y is not None:
            diff, detail = _max_abs_diff(x, y)
    short = torch_recorder.op_short_name(a["op"]) if framework == "torch" else a["op"]
    if framework == "torch" and short in torch_recorder.PASS_THROUGH:
        made = "from values made outside PyTorch's ops (NumPy, Python or a file)" if not a["inputs"] else \
            f"from {base[a['inputs'][0]]['op']}"
        detail = (detail + "; " if detail else "") + f"{short} only passes on its input, which differs already: it came {made}"
    kb = kb_module.load()
    version = target_versions()[framework]
    rule = _op_rule(kb, short, framework, version)
    if rule is None and a.get("device") == "gpu":  # equal inputs, another result: the GPU's kernels
        rule = next((r for r in kb.rules.values() if r.framework == framework and "gpu-computation" in r.explains
                     and r.versions.contains(version)), None)
    fix = rule.fix_for(version) if rule else None
    step = f"optimizer step {a['step'] + 1}" if framework == "torch" else f"training step {a['step'] + 1}"
    return (Divergence(stream="", position=i, op_type=a["op"], op_name=a["module"],
                       location=a["site"] or (f"the backward pass of {a['module']}" if a["module"] else "unknown source location"),
                       max_abs_diff=diff, detail=(detail + "; " if detail else "") + f"{a['phase']} of {step}",
                       rule=rule.code if rule else None, rule_name=rule.name if rule else None,
                       fix=(fix.title.replace("{seed}", str(seed)) + f" ({framework_of(framework).title} {version})")
                       if fix else None, phase=a["phase"]), *compared)


def _ops_timeline(dump0: str, base: list[dict[str, Any]], dump1: str, other: list[dict[str, Any]],
                  framework: str) -> list[dict[str, Any]]:
    from detlint.divergence import oplog, torch_recorder

    out = []
    for a, b in list(zip(base, other))[:TIMELINE_LIMIT]:
        diff: Optional[float] = 0.0
        if a["op"] != b["op"]:
            diff = None
        elif a["digest"] != b["digest"]:
            x, y = oplog.values(dump0, framework, a), oplog.values(dump1, framework, b)
            diff = _max_abs_diff(x, y)[0] if x is not None and y is not None else None
        out.append({"i": len(out), "label": f"{torch_recorder.op_short_name(a['op'])}"
                    + (f" in {a['module']}" if a["module"] else ""), "phase": a["phase"], "diff": diff,
                    "where": a["site"]})
    return out


def _count(shape: list[int]) -> int:
    total = 1
    for n in shape:
        total *= n
    return total


def _numbered(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for i, point in enumerate(points[:TIMELINE_LIMIT]):
        point["i"] = i
    return points[:TIMELINE_LIMIT]


# ---- running --------------------------------------------------------------------------------------
def _quiet_level(value: Optional[str]) -> str:
    """A log level at least as quiet as ``QUIET_LEVEL`` (a quieter one the user set is kept)."""
    return value if value and value.isdigit() and int(value) >= int(QUIET_LEVEL) else QUIET_LEVEL


def _import_tensorflow_quietly(verbose: bool) -> None:
    """Import what reads the records with TensorFlow's start-up banner kept off stderr. The
    banner comes from native code that has read its log level before Python can set one, so the
    import runs with file descriptor 2 sent to a temporary file, shown only if the import fails."""
    if verbose or "tensorflow" in sys.modules:
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        return
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            from tensorflow.python.debug.lib import debug_events_reader  # type: ignore[import-not-found]  # noqa: F401
        except BaseException:
            os.dup2(saved, 2)
            caught.seek(0)
            sys.stderr.write(caught.read().decode("utf-8", errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _child_env(dump: str, seed: Optional[int], apply: bool, steps: Optional[int], seconds: Optional[float],
               max_mb: float, verbose: bool = False) -> dict[str, str]:
    from detlint.runtime.launcher import boot_environment

    env = dict(os.environ)
    for key in list(env):
        if key.startswith(("DETLINT_DIVERGE", "DETLINT_APPLY")):
            del env[key]
    boot_environment(env)
    env[ENV_DUMP] = dump
    env[ENV_PATHS] = dump + ".paths.json"
    env[ENV_MB] = str(max_mb)
    if steps:
        env[ENV_STEPS] = str(steps)
    if seconds:
        env[ENV_SECONDS] = str(seconds)
    if seed is not None:
        env[ENV_SEED] = str(seed)
    if apply:
        env["DETLINT_APPLY_SEED"] = str(seed if seed is not None else 42)
        env["PYTHONHASHSEED"] = "0"
    if not verbose:
        env[LOG_LEVEL] = _quiet_level(env.get(LOG_LEVEL))
    return env


def _add_run(report: DivergeReport, number: int, result: RunResult, dump: str) -> None:
    report.exit_codes.append(result.code)
    failure = result.failure(number)
    if failure:
        report.failures.append(failure)
    report.notes.extend(n for n in result.notes if n not in report.notes)
    report.dump_mb.append(dump_size_mb(dump))


def _roots(dumps: list[str]) -> list[str]:
    """Library folders of this interpreter and of the programs' (which may be another one)."""
    roots = set(library_roots())
    for dump in dumps:
        try:
            roots.update(str(r) for r in json.loads(Path(dump + ".paths.json").read_text()))
        except (OSError, ValueError, TypeError):
            continue
    return sorted(roots)


def diverge_command(cmd: Sequence[str], *, runs: int = 2, seed: Optional[int] = None, apply: bool = False,
                    max_steps: Optional[int] = 2, time_limit: Optional[float] = 300.0,
                    max_dump_mb: float = 512.0, verbose: bool = False) -> DivergeReport:
    """Run ``cmd`` (``python train.py ...``) ``runs`` times and compare what its ops computed.
    TensorFlow's log lines are kept quiet (in the runs and here) unless ``verbose``. SIGTERM and
    SIGHUP raise ``child_processes.Terminated`` (SIGINT KeyboardInterrupt) once the run in progress
    is stopped and the records are removed."""
    limits.check(runs=runs, max_steps=max_steps, time_limit=time_limit, max_dump_mb=max_dump_mb)
    if seed is not None:
        check_seed(seed)
    report = DivergeReport(command=" ".join(cmd), runs=runs)
    # the records are removed however this ends: a failure, a limit, an interrupt
    try:
        with ended_by_signals(), records_folder(report.records_left) as tmp:
            _run_and_compare(report, cmd, tmp, runs, seed, apply, max_steps, time_limit, max_dump_mb, verbose)
    except (KeyboardInterrupt, Terminated) as exc:
        exc.records_left = report.records_left  # type: ignore[union-attr]  # for the interrupted message
        raise
    return report


def _run_and_compare(report: DivergeReport, cmd: Sequence[str], tmp: str, runs: int, seed: Optional[int],
                     apply: bool, max_steps: Optional[int], time_limit: Optional[float], max_dump_mb: float,
                     verbose: bool) -> None:
    dumps: list[str] = []
    for i in range(runs):
        dump = os.path.join(tmp, f"run{i + 1}")
        dumps.append(dump)
        result = run_program(cmd, _child_env(dump, seed, apply, max_steps, time_limit, max_dump_mb, verbose), dump,
                             time_limit, max_dump_mb, verbose, run=f"run {i + 1}/{runs}")
        _add_run(report, i + 1, result, dump)
    points: list[dict[str, Any]] = []
    state = compare_states(dumps, seed if seed is not None else 42, report.states_compared, points)
    ops: list[dict[str, Any]] = []
    torch_ops = None
    for recorded in RECORDED_OPS:
        torch_ops = torch_ops or compare_recorded_ops(dumps, seed if seed is not None else 42, ops, recorded)
    if state is not None:  # the runs parted before any op of training ran
        report.first, report.compared = state, True
    elif torch_ops is not None:
        report.first, report.ops_compared, report.values_compared = torch_ops
        report.compared = True
    if state is not None or torch_ops is not None:
        report.timeline = _numbered(points + ops)
        return
    if not all(os.path.isdir(d) and os.listdir(d) for d in dumps):
        if not report.failures:
            report.notes.append("is TensorFlow, PyTorch or JAX installed for that interpreter, and does the "
                                "program import it?")
        return
    _import_tensorflow_quietly(verbose)
    try:
        compared = compare(dumps, seed if seed is not None else 42, _roots(dumps))
    except Exception as exc:  # noqa: BLE001 - a record cut short or not TensorFlow's: no verdict, not a crash
        report.unreadable = shown(f"{type(exc).__name__}: {exc}".splitlines()[0])
        return
    report.ops_compared, report.values_compared, report.first = (
        compared.ops_compared, compared.values_compared, compared.first)
    report.timeline = _numbered(points + compared.timeline)
    report.compared = True


def diverge(step_fn: Callable[..., Any], *, runs: int = 2, seed: Optional[int] = None,
            inputs: Sequence[Any] = (), apply: bool = False, max_steps: Optional[int] = 2,
            time_limit: Optional[float] = 300.0, max_dump_mb: float = 512.0,
            verbose: bool = False) -> DivergeReport:
    """Run ``step_fn(*inputs)`` in ``runs`` fresh processes and report the first op whose output
    differs. ``step_fn`` must be importable by name (a module-level function)."""
    with tempfile.TemporaryDirectory(prefix="detlint-step-") as tmp:
        payload = os.path.join(tmp, "step.pickle")
        with open(payload, "wb") as handle:
            pickle.dump((step_fn, tuple(inputs)), handle)
        module_dirs = [os.path.dirname(os.path.abspath(sys.modules[step_fn.__module__].__file__ or "."))] \
            if getattr(sys.modules.get(step_fn.__module__), "__file__", None) else []
        code = ("import pickle, sys; sys.path[:0] = %r; fn, args = pickle.load(open(%r, 'rb')); fn(*args)"
                % (module_dirs, payload))
        report = diverge_command([sys.executable, "-c", code], runs=runs, seed=seed, apply=apply,
                                 max_steps=max_steps, time_limit=time_limit, max_dump_mb=max_dump_mb,
                                 verbose=verbose)
        report.command = f"{step_fn.__module__}.{step_fn.__qualname__}"
        return report


def main(argv: Sequence[str]) -> int:
    """``detlint diverge ...`` (the command line lives in ``command``)."""
    from detlint.divergence.command import main as command_main

    return command_main(argv)
