"""The knowledge base: loads ``rules/*.yaml``, validates it and indexes matchers by name.

Everything detlint knows about nondeterminism is data in those files; this module only reads it.
A malformed entry raises ``KnowledgeBaseError`` naming the file, the entry and the field.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from detlint.knowledge.frameworks import DEFAULT_FRAMEWORK, FRAMEWORKS, before_import
from detlint.knowledge.versions import Version, VersionRange
from detlint.lint.files.sources import read_regular
from detlint.user_cache import user_cache

SHORT_PREFIXES = {"tf.": "tensorflow.", "np.": "numpy."}
MATCHER_KINDS = ("call", "method", "env", "attr-assign", "bare", "shape")  # shape: lint/flow/manual_updates.py
CONDITION_KEYS = {"eq", "ne", "in", "not-in", "gt", "ge", "lt", "le", "missing", "present",
                  "contains", "not-contains", "pos", "default", "uses-any", "not-from", "not-made-by",
                  "min-items", "not-number", "or-unknown"}
# where a version-dependent fact comes from, how benchmarks/verify_kb.py checks it in the wheels and,
# for a claim only a GPU can settle, its GPU report or `pending` (detlint/knowledge/provenance.py
# lists the facts; the engine itself never reads these)
PROVENANCE_KEYS = {"source", "check", "gpu-evidence"}
MATCHER_KEYS = set(MATCHER_KINDS) | {"kwargs", "value", "label", "needs-training", "needs-framework",
                                     "keras", "versions", "message", "fix", "function-arg", "api-versions", "holds",
                                     "runs-by-default", "defines-option", "order-free", "receiver-from", "fetches", "gradient-args",
                                     "trains-receiver", "receiver-not-from", "draws-later",
                                     "unless-only", "in-methods", "imported-before", "needs-also",
                                     "outside-methods", "runs-methods", "imports", "runs-later", "unless-reseeded",
                                     "unless-one-index", "receiver-named", "outside-try", "graph-op",
                                     "unless-optimises-inputs",
                                     "one-per-value"} | PROVENANCE_KEYS
OP_STATUSES = ("determinism", "raises", "no-fix")
PROGRAM_KEYS = {"uses", "requires", "order", "when-present", "when-absent", "no-fix", "late-only", "report-at", "message", "message-late",
                "each-site", "yields-to", "message-scoped", "folds-into"}
FIX_ACTIONS = ("insert", "remove-statement", "set-args", "remove-args", "replace-call", "add-call-parens",
               "edit-value", "wrap-call")
DOC_SECTIONS = ("what", "why", "example", "use-instead", "fix-safety", "options", "references")
RULE_KEYS = {"code", "name", "scope", "summary", "message", "message-late", "status-text", "versions", "match", "program",
             "ops-status", "fixes", "runtime", "doc", "examples", "default-enabled", "area", "unless-present", "skip-version-guarded", "raw-ops", "graph-patterns",
             "training", "explains", "unsure-unless", "unsure-if"} | PROVENANCE_KEYS
# what a rule may explain in `detlint diverge`: the states compared before the ops
# (divergence/states.py), and a computation whose output differs on a GPU from equal inputs
DIVERGE_EXPLAINS = ("initial-state", "first-batch", "gpu-computation")


class KnowledgeBaseError(Exception):
    """A rules file that does not follow the schema."""


def expand_name(name: str) -> str:
    """``tf.keras.layers.Dense`` -> ``keras.layers.Dense``: the spelling the collector looks up."""
    from detlint.lint.names import candidates

    for short, full in SHORT_PREFIXES.items():
        if name.startswith(short):
            name = full + name[len(short):]
            break
    return candidates(name)[0]


@dataclass(frozen=True)
class Condition:
    spec: dict[str, Any]

    @property
    def pos(self) -> Optional[int]:
        return self.spec.get("pos")


@dataclass
class Matcher:
    kind: str
    names: tuple[str, ...]
    kwargs: dict[str, Condition] = field(default_factory=dict)
    value: Optional[Condition] = None
    label: str = ""
    needs_training: bool = False
    needs_framework: bool = False
    keras: Optional[int] = None
    versions: VersionRange = VersionRange.parse("")
    message: Optional[str] = None
    fix: Optional[dict[str, Any]] = None  # overrides the rule's fix for this pattern
    # {pos, name, contains: group}: match only if the function passed there uses that group
    function_arg: Optional[dict[str, Any]] = None
    # the TensorFlow versions in which these names exist (checked against the real package)
    api_versions: VersionRange = VersionRange.parse("")
    # argument name -> position: functions the constructed object keeps and runs later, when a
    # function runner runs the object (``Estimator(model_fn=f)`` ... ``estimator.train()``)
    holds: dict[str, Optional[int]] = field(default_factory=dict)
    # the calling module's function a runner runs when given none (``tf.app.run()`` runs main)
    runs_by_default: Optional[str] = None
    # a function runner that returns the function transformed (``jax.jit(f)``): f runs where the
    # result is called, not here, so a module that only does this at its top level runs nothing
    runs_later: bool = False
    # builds a graph op (a TF1 train op): a program that runs sessions runs it only by naming it
    graph_op: bool = False
    # where a command-line option's name and default are (see group command-line-options)
    defines_option: Optional[dict[str, Any]] = None
    # calls whose result keeps nothing of the order of what they are given (sorted, len, set):
    # a match whose result only reaches them (or membership tests, or an in-place sort) is none
    order_free: tuple[str, ...] = ()
    # argument name -> position: the only arguments whose gradient the result passes on (the
    # others are indices; see group index-taking-calls)
    gradient_args: dict[str, Optional[int]] = field(default_factory=dict)
    # a method matched only on objects made by these modules (``pandas``: ``df.sample()`` where
    # ``df = pd.read_csv(...)``), directly, through variables, attributes or method chains
    receiver_from: tuple[str, ...] = ()
    # ...and not on objects these modules made (``accelerator.gather`` is a collective, not an index gather)
    receiver_not_from: tuple[str, ...] = ()
    # matched only outside a ``try:`` body (a TPU set up in a try block whose except goes on
    # without one is no promise the program runs there)
    outside_try: bool = False
    # a method matched only when an argument is the result of one of these methods, made there or
    # earlier in a variable (a TF1 session running a train op: ``sess.run([train_op, loss])``
    # where ``train_op = opt.minimize(loss)``)
    fetches: tuple[str, ...] = ()
    framework: str = DEFAULT_FRAMEWORK  # whose versions ``versions`` and ``api_versions`` are
    # an env matcher: True = only when one of these modules was imported earlier in the file
    # (KERAS_BACKEND set after ``import keras`` does nothing), False = only when none was;
    # None = either way
    imported_before: Optional[bool] = None
    imported_modules: tuple[str, ...] = ()
    # a training call that trains the object it is called on (``model.fit``), not one that trains
    # whatever built a loss (``optimizer.step()``, ``loss.backward()``)
    trains_receiver: bool = False
    # a group the program must also reach for this match to count (a backward pass trains only
    # where some optimiser steps: a backward alone differentiates a frozen model)
    needs_also: Optional[str] = None
    # the top-level modules one of which the file or program must import for the match to count
    # (`import keras`, the standalone package, as against tf.keras, which imports tensorflow)
    imports: tuple[str, ...] = ()
    # methods of objects the call is given that the library runs (Lightning's fit runs the model's
    # training_step): ((argument name or "" for the receiver, position or None, method names), ...)
    runs_methods: tuple[tuple[str, Optional[int], tuple[str, ...]], ...] = ()
    # draws only when used later (a shuffling loader draws when iterated): made before the seed
    # and used after it, it is seeded
    draws_later: bool = False
    # not matched when the call's result is only read through these attributes (a model cut
    # down to its ``features``)
    unless_only: tuple[str, ...] = ()
    # findings of matchers with the same key, in one function and with the same matched value
    # (``seed=args.seed``), are one cause: the first stands for the others
    one_per_value: Optional[str] = None
    # needs-framework: here: the file of the call must import the framework itself (a Flax
    # TrainState's apply_gradients, not a TensorFlow optimiser's in a program that also imports jax)
    framework_here: bool = False
    # a method matched only on a receiver of one of these names (``env.action_space.sample()``,
    # ``action_space.sample()``): the attribute or variable it is called on
    receiver_named: tuple[str, ...] = ()
    # (dim position, index position): not matched when the index has one entry per row along a
    # literal dim (a gather whose backward scatter cannot collide; flow/index_shapes.py)
    unless_one_index: Optional[tuple[int, int]] = None
    # methods that give the object made a seed later (``rng = random.Random()`` ... ``rng.seed(s)``):
    # a match whose object (a name or ``self.attr``) is given one in the same file is none
    unless_reseeded: tuple[str, ...] = ()
    # a step of an optimiser made of listed tensors a network is fed (flow/optimised_inputs.py)
    unless_optimises_inputs: tuple[str, ...] = ()  # the modules whose objects are optimisers
    # matched only inside methods of these names (a dataset's ``__getitem__``, which runs in the
    # loader's worker processes)
    in_methods: tuple[str, ...] = ()
    # ...and never in these methods of a file importing one of these modules: ``{names: [...],
    # in-files-importing: [...]}`` (a torch dataset's __getitem__ runs in reseeded loader workers)
    outside_methods: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    def applies(self, version: Version, keras_major: int) -> bool:
        return self.versions.contains(version) and (self.keras is None or self.keras == keras_major)


@dataclass
class Group:
    name: str
    doc: str
    matchers: list[Matcher]
    imports: tuple[str, ...] = ()
    marks_entry: bool = False  # module-level use makes a file a program's entry
    # a rule whose match of the same call later in the same function takes a member back: a
    # seed followed there by a reseed from entropy (``random.seed(0)`` ... ``random.seed(None)``)
    undone_by: Optional[str] = None
    # a provider of this group reaches only the uses in the same block that one of this other
    # group's objects opens (a graph seed set outside `with tf.Graph().as_default():` seeds
    # another graph than the one built inside)
    scoped_by: Optional[str] = None
    # the methods that open such a block on an object of this group (``as_default``)
    opens_with: tuple[str, ...] = ()
    framework: str = DEFAULT_FRAMEWORK
    extends: Optional[str] = None  # a group of another framework this one adds its matchers to
    # present in every program when a setting has one of these values (keras-backend = "jax"),
    # as if the code had matched: for what a project decides outside its code
    when_setting: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # present in a program whose framework version comes from one of these packages in this
    # range (``tensorflow`` before 1.15 was built without CUDA): what the project installs
    when_package: tuple[tuple[str, VersionRange], ...] = ()
    # present in a program whose entry notebook was saved with one of these runtimes (Colab's
    # ``metadata.accelerator``: "TPU"), where its author ran it, unless the program shows one of
    # the groups (it moves tensors to a GPU itself: the metadata may be stale)
    when_runtime: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())


@dataclass
class StatusRange:
    versions: VersionRange
    status: str
    note: str = ""
    workaround: str = ""  # for these versions, instead of the op's own (what it names may not exist yet)
    requires: str = ""  # a group the code must use for this status to hold (reference variables)
    # the fix is for the whole program (an upgrade), not for each call: one finding per file
    once: bool = False


@dataclass
class Op:
    id: str
    title: str
    phase: str
    matchers: list[Matcher]
    status: list[StatusRange]
    workaround: str
    references: list[dict[str, str]]
    rewrite: Optional[dict[str, Any]] = None  # a call rewrite some fixes apply (bias_add -> x + b)
    raw_ops: tuple[str, ...] = ()  # the framework's op names of this source: TF op types, ATen ops (detlint diverge)
    reported_by: Optional[str] = None  # a rule of its own instead of DET201/DET202
    framework: str = DEFAULT_FRAMEWORK  # whose versions the statuses are keyed by
    fixed_by: Optional[str] = None  # a group that makes this op deterministic on its own (cuDNN's flag)

    def status_at(self, version: Version) -> Optional[StatusRange]:
        for entry in self.status:
            if entry.versions.contains(version):
                return entry
        return None


@dataclass
class Fix:
    versions: VersionRange
    safety: str
    title: str
    data: dict[str, Any]


@dataclass
class Rule:
    code: str
    name: str
    scope: str
    area: str
    summary: str
    message: str
    message_late: Optional[str]
    status_text: dict[str, str]
    versions: VersionRange
    matchers: list[Matcher]
    program: list[dict[str, Any]]
    ops_status: tuple[str, ...]
    fixes: list[Fix]
    runtime: Optional[dict[str, Any]]
    doc: dict[str, Any]
    examples: dict[str, list[dict[str, Any]]]
    default_enabled: bool
    source: str
    unless_present: tuple[str, ...] = ()  # groups whose presence (file or program) turns the rule off
    # {groups: [...], why: "..."}: a program in which none of these groups is seen gives the rule's
    # findings as `possible`, saying why (a PyTorch program that never moves anything to a GPU)
    unsure_unless: Optional[dict[str, Any]] = None
    # {groups: [...], why: "..."}: where one of these groups is present (a package built without
    # GPU kernels), the rule's findings are `possible`, saying why
    unsure_if: Optional[dict[str, Any]] = None
    skip_version_guarded: bool = False  # ignore matches inside `if <version check>:` branches
    raw_ops: tuple[str, ...] = ()  # TensorFlow op types this rule explains (for detlint diverge)
    graph_patterns: tuple[str, ...] = ()  # ...and graphs whose ops it explains
    # ...and what else it explains when it differs between runs (DIVERGE_EXPLAINS): initial
    # weights that differ are a missing seed of the framework's own (DET101, DET601)
    explains: tuple[str, ...] = ()
    # about training runs only: silent in files that are not training (tests, benchmarks, ...)
    # and in programs that only run inference
    training: bool = False
    framework: str = DEFAULT_FRAMEWORK  # whose versions ``versions`` and the fixes' ranges are

    def fix_for(self, version: Version) -> Optional[Fix]:
        for fix in self.fixes:
            if fix.versions.contains(version):
                return fix
        return None


@dataclass(frozen=True)
class Era:
    """What a text pattern in code says about the version of its framework it was written for:
    evidence for the version to check against when nothing pins it (see ``eras.py``)."""

    id: str
    evidence: str  # as the settings and messages say it: "tf.Session / tf.placeholder"
    patterns: tuple["re.Pattern[str]", ...]
    unless: tuple["re.Pattern[str]", ...]  # in the same file, the patterns say nothing
    versions: VersionRange  # of ``framework``
    # the version such code was typically written for (fit_generator: TF 2.0, not the newest
    # the range allows); None: the newest the evidence allows
    assume: Optional[Version] = None
    framework: str = DEFAULT_FRAMEWORK  # the rules folder it came from
    # where the text is looked for: "code" (code cells, comment lines left out) or "notebook"
    # (the whole saved notebook, outputs included: a warning printed from a tensorflow_core path)
    scope: str = "code"
    # a guess about when such code was written, not a limit on where it runs: it outweighs the
    # installed version, never a pin
    hint: bool = False

    @property
    def tensorflow(self) -> VersionRange:  # the name TensorFlow's entries use
        return self.versions


@dataclass
class KnowledgeBase:
    rules: dict[str, Rule]
    groups: dict[str, Group]
    ops: dict[str, Op]
    digest: str
    eras: list[Era] = field(default_factory=list)
    # framework -> (release, "YYYY-MM-DD" it came out), oldest first
    released: dict[str, tuple[tuple[Version, str], ...]] = field(default_factory=dict)
    # name -> [(owner, matcher index)] for each matcher kind
    index: dict[str, dict[str, list[tuple[str, int]]]] = field(default_factory=dict)
    # framework -> the top-level modules whose import makes a file that framework's code (the
    # imports of its `frameworks` group): they gate its rules' method-name matches
    framework_modules: dict[str, frozenset[str]] = field(default_factory=dict)
    _method_classes: Optional[frozenset[str]] = field(default=None, repr=False, compare=False)

    def method_classes(self) -> frozenset[str]:
        """The classes whose methods a call matcher names through the class
        (``tensorflow.estimator.Estimator`` of ``tf.estimator.Estimator.train``): what a project
        function returns of one of them matters to its callers."""
        if self._method_classes is None:
            found = set()
            for name in self.index.get("call", {}):
                parts = name.split(".")
                if len(parts) >= 3 and parts[-2][:1].isupper() and parts[-1][:1].islower():
                    found.add(".".join(parts[:-1]))
            self._method_classes = frozenset(found)
        return self._method_classes

    def owner_matchers(self, owner: str) -> list[Matcher]:
        kind, _, key = owner.partition(":")
        if kind == "rule":
            return self.rules[key].matchers
        if kind == "group":
            return self.groups[key].matchers
        return self.ops[key].matchers

    def matcher(self, owner: str, index: int) -> Matcher:
        return self.owner_matchers(owner)[index]

    def all_names(self) -> set[str]:
        return {name for by_name in self.index.values() for name in by_name}


def rules_dir() -> Path:
    """The rules in use: ``$DETLINT_RULES_DIR`` if set (a project's own or extended knowledge base),
    else the shipped ones: ``detlint/rules`` in a wheel, ``rules/`` beside the package in a checkout."""
    override = os.environ.get("DETLINT_RULES_DIR")
    if override:
        return Path(override)
    here = Path(__file__).resolve().parents[1]  # the detlint package
    for candidate in (here / "rules", here.parent / "rules"):
        if candidate.is_dir() and rule_files(candidate):
            return candidate
    raise KnowledgeBaseError(f"no rules directory found next to {here}")


class _Reader:
    """Validates one YAML document, remembering where it is for error messages."""

    def __init__(self, source: str, framework: str = DEFAULT_FRAMEWORK) -> None:
        self.source = source
        self.framework = framework

    def fail(self, where: str, text: str) -> None:
        raise KnowledgeBaseError(f"{self.source}: {where}: {text}")

    def expect(self, cond: bool, where: str, text: str) -> None:
        if not cond:
            self.fail(where, text)

    def names(self, value: Any, where: str) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        self.expect(isinstance(value, list) and value and all(isinstance(v, str) and v for v in value),
                    where, "expected a non-empty list of names")
        return tuple(expand_name(v) for v in value)

    def condition(self, spec: Any, where: str) -> Condition:
        if not isinstance(spec, dict):
            spec = {"eq": spec}
        unknown = set(spec) - CONDITION_KEYS
        self.expect(not unknown, where, f"unknown condition key(s) {sorted(unknown)}; "
                                        f"allowed: {sorted(CONDITION_KEYS)}")
        return Condition(dict(spec))

    def era(self, spec: Any, where: str) -> Era:
        self.expect(isinstance(spec, dict), where, "expected a mapping")
        unknown = set(spec) - {"id", "evidence", "text", "unless", "tensorflow", "versions", "assume", "scope", "hint"} - PROVENANCE_KEYS
        self.expect(not unknown, where, f"unknown field(s) {sorted(unknown)}")
        for key in ("id", "evidence", "text"):
            self.expect(key in spec, where, f"missing field {key!r}")
        range_key = "tensorflow" if "tensorflow" in spec else "versions"
        self.expect(range_key in spec, where, "missing field 'versions'")
        self.expect(spec.get("scope", "code") in ("code", "notebook"), f"{where}.scope", "expected code or notebook")

        def patterns(value: Any, key: str) -> tuple["re.Pattern[str]", ...]:
            value = [value] if isinstance(value, str) else (value or [])
            self.expect(isinstance(value, list) and all(isinstance(v, str) for v in value),
                        f"{where}.{key}", "expected a list of regular expressions")
            try:
                return tuple(re.compile(v) for v in value)
            except re.error as exc:
                self.fail(f"{where}.{key}", f"bad regular expression: {exc}")
                raise

        return Era(id=str(spec["id"]), evidence=str(spec["evidence"]), patterns=patterns(spec["text"], "text"),
                   unless=patterns(spec.get("unless"), "unless"),
                   versions=self.version_range(spec[range_key], f"{where}.{range_key}"),
                   assume=Version.parse(str(spec["assume"])) if spec.get("assume") is not None else None,
                   framework=self.framework, scope=str(spec.get("scope", "code")), hint=bool(spec.get("hint", False)))

    def released(self, spec: Any, where: str) -> tuple[tuple[Version, str], ...]:
        """``released: {dates: {"2.4": "2020-12-14", ...}}``: when each release came out, oldest
        first (a release older than those the knowledge base describes may be listed: messages
        name it)."""
        self.expect(isinstance(spec, dict), where, "expected a mapping")
        unknown = set(spec) - {"dates", "distribution"} - PROVENANCE_KEYS
        self.expect(not unknown, where, f"unknown field(s) {sorted(unknown)}")
        dates = spec.get("dates")
        self.expect(isinstance(dates, dict) and bool(dates), f"{where}.dates", "expected a mapping of releases to dates")
        out = []
        for release, day in dates.items():
            self.expect(isinstance(day, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) is not None,
                        f"{where}.dates.{release}", "expected a date as \"YYYY-MM-DD\" (quoted)")
            try:
                out.append((Version.parse(str(release)), day))
            except ValueError as exc:
                self.fail(f"{where}.dates", str(exc))
        self.expect(out == sorted(out) and len({v for v, _ in out}) == len(out), f"{where}.dates",
                    "expected each release once, oldest first")
        return tuple(out)

    def runtimes(self, value: Any, where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``when-runtime: {runtimes: [TPU], unless-present: [group, ...]}``: the accelerators a
        notebook may be saved with, and the groups whose presence in the program outweighs it."""
        if value is None:
            return (), ()
        self.expect(isinstance(value, dict) and set(value) <= {"runtimes", "unless-present"}, where,
                    "expected a mapping with runtimes and unless-present")
        for key in ("runtimes", "unless-present"):
            items = value.get(key, [])
            self.expect(isinstance(items, list) and all(isinstance(v, str) and v for v in items)
                        and (key != "runtimes" or bool(items)), f"{where}.{key}", "expected a list of names")
        return tuple(v.upper() for v in value["runtimes"]), tuple(value.get("unless-present", ()))

    def version_range(self, text: Any, where: str) -> VersionRange:
        try:
            return VersionRange.parse(None if text is None else str(text))
        except ValueError as exc:
            self.fail(where, str(exc))
            raise

    def matcher(self, spec: Any, where: str) -> Matcher:
        self.expect(isinstance(spec, dict), where, "a matcher must be a mapping")
        unknown = set(spec) - MATCHER_KEYS
        self.expect(not unknown, where, f"unknown field(s) {sorted(unknown)}")
        kinds = [k for k in MATCHER_KINDS if k in spec]
        self.expect(len(kinds) == 1, where, f"a matcher needs exactly one of {MATCHER_KINDS}")
        kind = kinds[0]
        kwargs = spec.get("kwargs") or {}
        self.expect(isinstance(kwargs, dict), f"{where}.kwargs", "expected a mapping")
        keras = spec.get("keras")
        self.expect(keras in (None, 2, 3), f"{where}.keras", "expected 2 or 3")
        self.expect(spec.get("needs-framework", False) in (True, False, "here"), f"{where}.needs-framework",
                    'expected true, false or "here"')
        self.expect(spec.get("one-per-value") is None or isinstance(spec.get("one-per-value"), str),
                    f"{where}.one-per-value", "expected a name")
        names = self.names(spec[kind], f"{where}.{kind}")
        if kind in ("env", "method", "shape"):
            names = tuple(spec[kind]) if isinstance(spec[kind], list) else (spec[kind],)
        return Matcher(
            kind=kind, names=names,
            kwargs={k: self.condition(v, f"{where}.kwargs.{k}") for k, v in kwargs.items()},
            value=self.condition(spec["value"], f"{where}.value") if "value" in spec else None,
            label=str(spec.get("label", "")),
            needs_training=bool(spec.get("needs-training", False)),
            needs_framework=bool(spec.get("needs-framework", False)),
            framework_here=spec.get("needs-framework") == "here",
            keras=keras,
            versions=self.version_range(spec.get("versions"), f"{where}.versions"),
            message=spec.get("message"), fix=self.fix_override(spec.get("fix"), f"{where}.fix"),
            function_arg=spec.get("function-arg"),
            api_versions=self.version_range(spec.get("api-versions"), f"{where}.api-versions"),
            holds=self.holds(spec.get("holds"), f"{where}.holds"),
            runs_by_default=spec.get("runs-by-default"),
            runs_later=bool(spec.get("runs-later", False)),
            graph_op=bool(spec.get("graph-op", False)),
            defines_option=self.option_spec(spec.get("defines-option"), f"{where}.defines-option"),
            order_free=self.names(spec["order-free"], f"{where}.order-free") if "order-free" in spec else (),
            receiver_from=self.modules(spec.get("receiver-from"), f"{where}.receiver-from", kind),
            receiver_not_from=self.modules(spec.get("receiver-not-from"), f"{where}.receiver-not-from", kind),
            outside_try=bool(spec.get("outside-try", False)),
            fetches=self.fetched(spec.get("fetches"), f"{where}.fetches", kind),
            gradient_args=self.holds(spec.get("gradient-args"), f"{where}.gradient-args"),
            framework=self.framework, trains_receiver=bool(spec.get("trains-receiver", False)),
            draws_later=bool(spec.get("draws-later", False)), unless_only=tuple(spec.get("unless-only", ())),
            one_per_value=spec.get("one-per-value"),
            unless_reseeded=tuple(spec.get("unless-reseeded", ())),
            unless_optimises_inputs=self.module_list(spec.get("unless-optimises-inputs"), f"{where}.unless-optimises-inputs"),
            unless_one_index=self.index_positions(spec.get("unless-one-index"), f"{where}.unless-one-index"),
            receiver_named=tuple(str(n) for n in spec.get("receiver-named", ())),
            in_methods=tuple(spec.get("in-methods", ())),
            outside_methods=(tuple((spec.get("outside-methods") or {}).get("names", ())),
                             tuple((spec.get("outside-methods") or {}).get("in-files-importing", ()))),
            needs_also=str(spec["needs-also"]) if spec.get("needs-also") else None,
            imports=self.top_modules(spec.get("imports"), f"{where}.imports"),
            runs_methods=self.runs_methods(spec.get("runs-methods"), f"{where}.runs-methods"),
            **self.imported_before(spec.get("imported-before"), f"{where}.imported-before", kind),
        )

    def index_positions(self, value: Any, where: str) -> Optional[tuple[int, int]]:
        """``{dim: 0, index: 1}``: where a gather's dim and index arguments stand."""
        if value is None:
            return None
        self.expect(isinstance(value, dict) and set(value) == {"dim", "index"}
                    and all(isinstance(v, int) for v in value.values()), where, "expected {dim: N, index: N}")
        return int(value["dim"]), int(value["index"])

    def imported_before(self, value: Any, where: str, kind: str) -> dict[str, Any]:
        """``{modules: [keras], is: false}``: an env matcher that counts only when none of the
        modules was imported earlier in the file (true: only when one was)."""
        if value is None:
            return {}
        self.expect(kind == "env", where, "imported-before applies to env matchers only")
        self.expect(isinstance(value, dict) and set(value) == {"modules", "is"} and isinstance(value["is"], bool)
                    and isinstance(value["modules"], list) and all(isinstance(m, str) for m in value["modules"]),
                    where, "expected {modules: [names], is: true|false}")
        return {"imported_before": value["is"], "imported_modules": tuple(value["modules"])}

    def modules(self, value: Any, where: str, kind: str) -> tuple[str, ...]:
        if value is None:
            return ()
        self.expect(kind == "method", where, "receiver-from and receiver-not-from apply to method matchers only")
        self.expect(isinstance(value, list) and value and all(isinstance(v, str) and v for v in value),
                    where, "expected a non-empty list of module names")
        return tuple(value)

    def module_list(self, value: Any, where: str) -> tuple[str, ...]:
        if value is None:
            return ()
        self.expect(isinstance(value, list) and value and all(isinstance(v, str) and v for v in value),
                    where, "expected a non-empty list of module names")
        return tuple(value)

    def top_modules(self, value: Any, where: str) -> tuple[str, ...]:
        if value is None:
            return ()
        self.expect(isinstance(value, list) and value and all(isinstance(v, str) and v.isidentifier() for v in value),
                    where, "expected a non-empty list of top-level module names")
        return tuple(value)

    def unsure_unless(self, value: Any, where: str) -> Optional[dict[str, Any]]:
        if value is None:
            return None
        self.expect(isinstance(value, dict) and set(value) == {"groups", "why"} and isinstance(value["why"], str)
                    and isinstance(value["groups"], list) and value["groups"]
                    and all(isinstance(g, str) for g in value["groups"]),
                    where, "expected {groups: [group, ...], why: text}")
        return {"groups": tuple(value["groups"]), "why": value["why"]}

    def when_package(self, value: Any, where: str) -> tuple[tuple[str, VersionRange], ...]:
        if value is None:
            return ()
        self.expect(isinstance(value, list) and value and all(isinstance(v, dict) and isinstance(v.get("package"), str)
                                                               for v in value),
                    where, "expected a list of {package: name, versions: range, source: ..., check: ...}")
        out = []
        for i, entry in enumerate(value):
            unknown = set(entry) - {"package", "versions", "source", "check"} - PROVENANCE_KEYS
            self.expect(not unknown, f"{where}[{i}]", f"unknown key(s) {sorted(unknown)}")
            out.append((entry["package"], self.version_range(entry.get("versions"), f"{where}[{i}].versions")))
        return tuple(out)

    def fetched(self, value: Any, where: str, kind: str) -> tuple[str, ...]:
        if value is None:
            return ()
        self.expect(kind == "method", where, "fetches applies to method matchers only")
        return self.names(value, where)

    def option_spec(self, value: Any, where: str) -> Optional[dict[str, Any]]:
        if value is None:
            return None
        self.expect(isinstance(value, dict) and {"name", "default", "set"} <= set(value), where,
                    "expected a mapping with name, default ([keyword, position]) and set")
        for key in ("name", "default"):
            self.expect(isinstance(value[key], list) and len(value[key]) == 2, f"{where}.{key}",
                        "expected [keyword, position]")
        return dict(value)

    def runs_methods(self, value: Any, where: str) -> tuple[tuple[str, Optional[int], tuple[str, ...]], ...]:
        """``[{arg: model, pos: 0, methods: [training_step]}, {receiver: true, methods: [call]}]``."""
        if value is None:
            return ()
        self.expect(isinstance(value, list) and all(
            isinstance(v, dict) and isinstance(v.get("methods"), list) and (v.get("receiver") or "arg" in v)
            for v in value), where, "expected a list of {arg, pos, methods} or {receiver: true, methods}")
        return tuple(("" if v.get("receiver") else str(v["arg"]), v.get("pos"), tuple(map(str, v["methods"])))
                     for v in value)

    def holds(self, value: Any, where: str) -> dict[str, Optional[int]]:
        if value is None:
            return {}
        self.expect(isinstance(value, dict) and all(isinstance(k, str) and (v is None or isinstance(v, int))
                                                    for k, v in value.items()),
                    where, "expected a mapping argument name -> position (or null)")
        return dict(value)

    def fix_override(self, value: Any, where: str) -> Optional[dict[str, Any]]:
        if value is None:
            return None
        if isinstance(value, str):
            value = {"title": value}
        self.expect(isinstance(value, dict), where, "expected a fix title or mapping")
        self.fix_action(value, where)
        return dict(value)

    def fix_action(self, value: dict[str, Any], where: str) -> None:
        action = value.get("action")
        self.expect(action in (None,) + FIX_ACTIONS, f"{where}.action", f"one of {FIX_ACTIONS}")
        self.expect(value.get("safety") in (None, "safe", "unsafe", "display"), f"{where}.safety",
                    "safe, unsafe or display")
        if action == "insert":
            self.expect(isinstance(value.get("code"), list) and value["code"], f"{where}.code",
                        "insert needs a list of code lines")
            place = value.get("where", "after-imports")
            self.expect(place == "after-imports" or bool(before_import(place)), f"{where}.where",
                        "after-imports or before-<framework>-import (before-tf-import, before-torch-import, ...)")
        if action in ("set-args",):
            self.expect(isinstance(value.get("args"), dict), f"{where}.args", "expected a mapping name -> code")
        if action in ("remove-args",):
            self.expect(isinstance(value.get("args"), list), f"{where}.args", "expected a list of names")
        uses = value.get("if-uses")  # an aside the title gets where the program uses that framework
        self.expect(uses is None or isinstance(uses, dict) and set(uses) <= set(FRAMEWORKS), f"{where}.if-uses",
                    f"expected a mapping of framework ({', '.join(FRAMEWORKS)}) to text")
        raising = value.get("if-raising")
        if raising is not None:  # what the fix writes where the program has ops that raise under it
            self.expect(isinstance(raising, dict) and str(raising.get("rule", "")).startswith("DET")
                        and (bool(raising.get("code")) and bool(raising.get("title")) or bool(raising.get("withhold"))),
                        f"{where}.if-raising", "needs rule, and title and code (the fix instead) or withhold (why none)")
        if action == "wrap-call":
            self.expect("{call}" in str(value.get("template", "")), f"{where}.template",
                        "wrap-call needs a template with {call}, e.g. sorted({call})")

    def matchers(self, value: Any, where: str) -> list[Matcher]:
        self.expect(isinstance(value, list), where, "expected a list of matchers")
        return [self.matcher(m, f"{where}[{i}]") for i, m in enumerate(value)]

    def references(self, value: Any, where: str) -> list[dict[str, str]]:
        self.expect(isinstance(value, list), where, "expected a list of {title, url}")
        for i, ref in enumerate(value):
            self.expect(isinstance(ref, dict) and "title" in ref, f"{where}[{i}]", "a reference needs a title")
        return value


def _rule_file(path: Path) -> bytes:
    """A rule file's bytes, through the check every reader of files shares: a FIFO among the
    rules (a user's DETLINT_RULES_DIR) is an error, not a wait."""
    try:
        return read_regular(path)
    except OSError as exc:
        raise KnowledgeBaseError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _read_yaml(path: Path, data: bytes) -> Any:
    import yaml  # imported here so that a fully cached run never loads PyYAML

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 10x faster start-up
    try:
        return yaml.load(data.decode("utf-8"), Loader=loader) or {}
    except yaml.YAMLError as exc:
        raise KnowledgeBaseError(f"{path.name}: not valid YAML: {exc}") from exc


def framework_of(relative: str) -> str:
    """``torch/ops.yaml`` holds PyTorch rules; a file directly in the rules folder, TensorFlow's."""
    folder = relative.rpartition("/")[0]
    if folder and folder not in FRAMEWORKS:
        raise KnowledgeBaseError(f"{relative}: the folder {folder!r} is not a framework detlint knows "
                                 f"({', '.join(FRAMEWORKS)})")
    return folder or DEFAULT_FRAMEWORK


def _load_file(path: Path, into: dict[str, dict[str, Any]], data: Any, relative: str = "") -> None:
    relative = relative or path.name
    reader = _Reader(relative, framework_of(relative))
    reader.expect(isinstance(data, dict), "top level", "expected a mapping with groups/ops/rules")
    unknown = {k for k in data if not str(k).startswith("x-")} - {"groups", "ops", "rules", "eras", "released"}  # x-: YAML anchors
    reader.expect(not unknown, "top level", f"unknown key(s) {sorted(unknown)}")
    for i, spec in enumerate(data.get("eras") or []):
        into["eras"][f"{relative}#{i}"] = reader.era(spec, f"era #{i}")
    if "released" in data:
        reader.expect(reader.framework not in into["released"], "released", "given twice for this framework")
        into["released"][reader.framework] = reader.released(data["released"], "released")

    for name, spec in (data.get("groups") or {}).items():
        where = f"group {name}"
        reader.expect(isinstance(spec, dict), where, "expected a mapping")
        reader.expect(name not in into["groups"], where, "defined twice")
        into["groups"][name] = Group(
            name=name, doc=str(spec.get("doc", "")),
            matchers=reader.matchers(spec.get("matchers", []), f"{where}.matchers"),
            imports=tuple(spec.get("imports", ())), marks_entry=bool(spec.get("marks-entry", False)),
            undone_by=spec.get("undone-by"), framework=reader.framework, extends=spec.get("extends"),
            scoped_by=spec.get("scoped-by"), opens_with=tuple(spec.get("opens-with", ())),
            when_setting={str(k): tuple(str(x) for x in v) for k, v in (spec.get("when-setting") or {}).items()},
            when_package=reader.when_package(spec.get("when-package"), f"{where}.when-package"),
            when_runtime=reader.runtimes(spec.get("when-runtime"), f"{where}.when-runtime"),
        )

    for i, spec in enumerate(data.get("ops") or []):
        where = f"op #{i} {spec.get('id', '?') if isinstance(spec, dict) else ''}".strip()
        reader.expect(isinstance(spec, dict), where, "expected a mapping")
        unknown_op = set(spec) - {"id", "title", "phase", "matchers", "status", "workaround", "references",
                                  "rewrite", "raw-ops", "reported-by", "fixed-by"}
        reader.expect(not unknown_op, where, f"unknown field(s) {sorted(unknown_op)}")
        for key in ("id", "title", "phase", "matchers", "status", "workaround"):
            reader.expect(key in spec, where, f"missing field {key!r}")
        reader.expect(spec["phase"] in ("forward", "backprop"), f"{where}.phase", "forward or backprop")
        reader.expect(spec["id"] not in into["ops"], where, "id defined twice")
        status = []
        for j, entry in enumerate(spec["status"]):
            reader.expect(isinstance(entry, dict) and entry.get("status") in OP_STATUSES,
                          f"{where}.status[{j}]", f"status must be one of {OP_STATUSES}")
            unknown = set(entry) - {"versions", "status", "note", "workaround", "requires", "once"} - PROVENANCE_KEYS
            reader.expect(not unknown, f"{where}.status[{j}]", f"unknown field(s) {sorted(unknown)}")
            status.append(StatusRange(reader.version_range(entry.get("versions"), f"{where}.status[{j}]"),
                                      entry["status"], str(entry.get("note", "")),
                                      str(entry.get("workaround", "")).strip(), str(entry.get("requires", "")),
                                      bool(entry.get("once", False))))
        into["ops"][spec["id"]] = Op(
            id=spec["id"], title=spec["title"], phase=spec["phase"],
            matchers=reader.matchers(spec["matchers"], f"{where}.matchers"), status=status,
            workaround=str(spec["workaround"]).strip(),
            references=reader.references(spec.get("references", []), f"{where}.references"),
            rewrite=spec.get("rewrite"), raw_ops=tuple(spec.get("raw-ops", ())),
            reported_by=spec.get("reported-by"), framework=reader.framework, fixed_by=spec.get("fixed-by"),
        )

    for i, spec in enumerate(data.get("rules") or []):
        code = spec.get("code", f"#{i}") if isinstance(spec, dict) else f"#{i}"
        where = f"rule {code}"
        reader.expect(isinstance(spec, dict), where, "expected a mapping")
        unknown = set(spec) - RULE_KEYS
        reader.expect(not unknown, where, f"unknown field(s) {sorted(unknown)}")
        for key in ("code", "name", "scope", "summary", "message", "doc", "examples"):
            reader.expect(key in spec, where, f"missing field {key!r}")
        reader.expect(re.fullmatch(r"DET\d{3}", str(spec["code"])) is not None, f"{where}.code", "expected DETnnn")
        reader.expect(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", str(spec["name"])) is not None,
                      f"{where}.name", "expected a kebab-case name")
        reader.expect(spec["scope"] in ("file", "program", "run"), f"{where}.scope", "file, program or run")
        reader.expect(code not in into["rules"], where, "code defined twice")
        doc = spec["doc"]
        reader.expect(isinstance(doc, dict), f"{where}.doc", "expected a mapping")
        for section in ("what", "why", "references"):
            reader.expect(section in doc, f"{where}.doc", f"missing section {section!r}")
        unknown = set(doc) - set(DOC_SECTIONS)
        reader.expect(not unknown, f"{where}.doc", f"unknown section(s) {sorted(unknown)}")
        reader.references(doc["references"], f"{where}.doc.references")
        examples = spec["examples"]
        reader.expect(isinstance(examples, dict) and examples.get("invalid") and examples.get("valid"),
                      f"{where}.examples", "needs at least one valid and one invalid example")
        program = spec.get("program")
        if program is not None:
            program = program if isinstance(program, list) else [program]
            for j, check in enumerate(program):
                cwhere = f"{where}.program[{j}]"
                reader.expect(isinstance(check, dict) and "uses" in check, cwhere, "needs 'uses'")
                unknown = set(check) - PROGRAM_KEYS
                reader.expect(not unknown, cwhere, f"unknown field(s) {sorted(unknown)}")
                reader.expect(check.get("report-at", "use") in ("use", "requires", "when-present"),
                              f"{cwhere}.report-at", "use, requires or when-present")
        fixes = []
        for j, fix in enumerate(spec.get("fixes") or []):
            fwhere = f"{where}.fixes[{j}]"
            reader.expect(isinstance(fix, dict) and "title" in fix, fwhere, "a fix needs a title")
            reader.expect(fix.get("safety") in ("safe", "unsafe", "display"), f"{fwhere}.safety",
                          "safe, unsafe or display")
            reader.fix_action(fix, fwhere)
            fixes.append(Fix(reader.version_range(fix.get("versions"), f"{fwhere}.versions"),
                             fix["safety"], fix["title"], fix))
        into["rules"][code] = Rule(
            code=code, name=spec["name"], scope=spec["scope"], area=str(spec.get("area", path.stem)),
            summary=str(spec["summary"]).strip(), message=str(spec["message"]).strip(),
            message_late=spec.get("message-late"), status_text=dict(spec.get("status-text") or {}),
            versions=reader.version_range(spec.get("versions"), f"{where}.versions"),
            matchers=reader.matchers(spec.get("match", []), f"{where}.match"),
            program=program or [], ops_status=tuple(spec.get("ops-status", ())), fixes=fixes,
            runtime=spec.get("runtime"), doc=doc, examples=examples,
            default_enabled=bool(spec.get("default-enabled", True)), source=relative,
            unless_present=tuple(spec.get("unless-present", ())),
            unsure_unless=reader.unsure_unless(spec.get("unsure-unless"), f"{where}.unsure-unless"),
            unsure_if=reader.unsure_unless(spec.get("unsure-if"), f"{where}.unsure-if"),
            skip_version_guarded=bool(spec.get("skip-version-guarded", False)),
            raw_ops=tuple(spec.get("raw-ops", ())), graph_patterns=tuple(spec.get("graph-patterns", ())),
            training=bool(spec.get("training", False)), framework=reader.framework,
            explains=tuple(spec.get("explains", ())),
        )


def _check_references(kb: KnowledgeBase) -> None:
    for group in kb.groups.values():
        if group.undone_by is not None and group.undone_by not in kb.rules:
            raise KnowledgeBaseError(f"group {group.name}.undone-by: unknown rule {group.undone_by!r}")
        scope = kb.groups.get(group.scoped_by) if group.scoped_by is not None else None
        if group.scoped_by is not None and (scope is None or not scope.opens_with):
            raise KnowledgeBaseError(f"group {group.name}.scoped-by: {group.scoped_by!r} is no group with opens-with")
    for rule in kb.rules.values():
        unknown = set(rule.explains) - set(DIVERGE_EXPLAINS)
        if unknown:
            raise KnowledgeBaseError(f"{rule.source}: rule {rule.code}.explains: unknown {sorted(unknown)}; "
                                     f"known: {', '.join(DIVERGE_EXPLAINS)}")
        for j, check in enumerate(rule.program):
            for key in ("uses", "requires", "when-present", "when-absent"):
                group = check.get(key)
                if group and group != "ops" and group not in kb.groups:
                    raise KnowledgeBaseError(f"{rule.source}: rule {rule.code}.program[{j}].{key}: "
                                             f"unknown group {group!r}")
            yields = check.get("yields-to")
            if yields is not None and not (isinstance(yields, dict) and yields.get("rule") in kb.rules
                                           and yields.get("uses") in kb.groups):
                raise KnowledgeBaseError(f"{rule.source}: rule {rule.code}.program[{j}].yields-to: needs a known "
                                         f"rule and a known group ({{rule: DET606, uses: group}}), got {yields!r}")
            folds = check.get("folds-into")
            if folds is not None and folds not in kb.rules:
                raise KnowledgeBaseError(f"{rule.source}: rule {rule.code}.program[{j}].folds-into: needs a known "
                                         f"rule code, got {folds!r}")
        for key, spec in (("unsure-unless", rule.unsure_unless), ("unsure-if", rule.unsure_if)):
            for group in (spec or {}).get("groups", ()):
                if group not in kb.groups:
                    raise KnowledgeBaseError(f"{rule.source}: rule {rule.code}.{key}: unknown group {group!r}")
        for group in rule.unless_present:
            if group not in kb.groups:
                raise KnowledgeBaseError(f"{rule.source}: rule {rule.code}.unless-present: unknown group {group!r}")
        for status in rule.ops_status:
            if status not in OP_STATUSES:
                raise KnowledgeBaseError(f"{rule.source}: rule {rule.code}.ops-status: unknown status {status!r}")
    for op in kb.ops.values():
        if op.fixed_by and op.fixed_by not in kb.groups:
            raise KnowledgeBaseError(f"op {op.id}.fixed-by: unknown group {op.fixed_by!r}")
        for status in op.status:
            if status.requires and status.requires not in kb.groups:
                raise KnowledgeBaseError(f"op {op.id}.status: requires unknown group {status.requires!r}")


def _merge_extensions(kb: KnowledgeBase) -> None:
    """A group that ``extends`` another (PyTorch's training calls added to ``training``) hands its
    matchers and imports to it and goes: the rules see one group, each matcher keeping its
    framework. Each framework's ``frameworks`` imports are kept apart for the method gate."""
    modules: dict[str, set[str]] = {}
    own = kb.groups.get("frameworks")
    if own is not None:
        # "transformers.TF*" names some classes of a package another framework owns: the file
        # facts carry that pattern itself when such a class is imported
        modules[own.framework] = {m if "*" in m else m.split(".")[0] for m in own.imports}
    for name, group in list(kb.groups.items()):
        if group.extends is None:
            continue
        base = kb.groups.get(group.extends)
        if base is None or base.extends is not None:
            raise KnowledgeBaseError(f"group {name}.extends: unknown group {group.extends!r}")
        if group.extends == "frameworks":
            modules.setdefault(group.framework, set()).update(m if "*" in m else m.split(".")[0] for m in group.imports)
        base.matchers.extend(group.matchers)
        base.imports = base.imports + tuple(i for i in group.imports if i not in base.imports)
        base.doc = base.doc + " " + group.doc if group.doc else base.doc
        del kb.groups[name]
    kb.framework_modules = {key: frozenset(found) for key, found in modules.items()}


def _build_index(kb: KnowledgeBase) -> None:
    index: dict[str, dict[str, list[tuple[str, int]]]] = {kind: {} for kind in MATCHER_KINDS}
    owners = ([(f"rule:{c}", r.matchers) for c, r in kb.rules.items()]
              + [(f"group:{n}", g.matchers) for n, g in kb.groups.items()]
              + [(f"op:{i}", o.matchers) for i, o in kb.ops.items()])
    for owner, matchers in owners:
        for i, matcher in enumerate(matchers):
            for name in matcher.names:
                index[matcher.kind].setdefault(name, []).append((owner, i))
    kb.index = index


def rule_files(directory: Path) -> list[Path]:
    """The YAML files of a rules folder: its own and those of its framework folders, in a stable order."""
    return sorted([*directory.glob("*.yaml"), *directory.glob("*/*.yaml")],
                  key=lambda p: p.relative_to(directory).as_posix())


def _relative(directory: Path, path: Path) -> str:
    return path.relative_to(directory).as_posix()


def load(directory: Optional[Path] = None) -> KnowledgeBase:
    directory = directory or rules_dir()
    return _load_cached(str(directory))


@lru_cache(maxsize=4)
def _load_cached(directory: str) -> KnowledgeBase:
    """Parse and validate the rules. Reading YAML is most of a one-file run's start-up, so the
    documents an earlier run read are kept (per user, per content digest and per detlint code,
    which reads them) as JSON: data only, validated again like the YAML itself; an entry that does
    not load is rebuilt."""
    files = rule_files(Path(directory))
    if not files:
        raise KnowledgeBaseError(f"no *.yaml rule files in {directory}")
    names = [_relative(Path(directory), path) for path in files]
    contents = [_rule_file(path) for path in files]
    digest = hashlib.sha256()
    for name, data in zip(names, contents):
        digest.update(name.encode() + b"\0" + data)
    from detlint._version import __version__
    from detlint.code_digest import code_digest

    cache_dir = user_cache()
    cached = cache_dir / f"kb-{__version__}-{code_digest()}-{digest.hexdigest()[:24]}.json" if cache_dir else None
    if cached is not None:  # older versions' and knowledge bases' copies go once unused for an hour
        from detlint.stale_caches import KB_FILES, keep_only_used

        keep_only_used(cached, KB_FILES)
    documents = _read_cached_documents(cached, names, digest.hexdigest()) if cached is not None else None
    if documents is not None:
        try:
            return _parse(files, names, digest.hexdigest()[:16], documents)
        except Exception:  # a cached copy that does not validate (edited by hand?): read the YAML
            pass
    documents = [_read_yaml(path, data) for path, data in zip(files, contents)]
    kb = _parse(files, names, digest.hexdigest()[:16], documents)
    if cached is not None:
        _write_cached_documents(cached, names, digest.hexdigest(), documents)
    return kb


def _read_cached_documents(cached: Path, names: list[str], digest: str) -> Optional[list[Any]]:
    import json

    try:
        doc = json.loads(cached.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("digest") != digest or doc.get("files") != names:
        return None
    documents = doc.get("documents")
    if not isinstance(documents, list) or len(documents) != len(names):
        return None
    return documents


def _write_cached_documents(cached: Path, names: list[str], digest: str, documents: list[Any]) -> None:
    """Saved only when JSON gives back exactly what YAML gave (no dates, no non-string keys)."""
    import json
    from detlint.lint.files.whole_writes import replace_beside

    try:
        text = json.dumps({"digest": digest, "files": names, "documents": documents})
        if json.loads(text)["documents"] != documents:
            return
        cached.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        replace_beside(cached, text.encode("utf-8"), 0o600)
    except (OSError, TypeError, ValueError):  # a full disk, a file size limit: no half-written copy is left
        return


def _parse(files: list[Path], names: list[str], digest: str, documents: list[Any]) -> KnowledgeBase:
    into: dict[str, dict[str, Any]] = {"rules": {}, "groups": {}, "ops": {}, "eras": {}, "released": {}}
    for path, name, data in zip(files, names, documents):
        _load_file(path, into, data, name)
    kb = KnowledgeBase(rules=dict(sorted(into["rules"].items())), groups=into["groups"], ops=into["ops"],
                       digest=digest, eras=list(into["eras"].values()), released=into["released"])
    _merge_extensions(kb)
    _check_references(kb)
    _build_index(kb)
    return kb


def kb_digest(directory: Optional[Path] = None) -> str:
    """Hash of the rule files without parsing them (for cache keys)."""
    directory = Path(directory or rules_dir())
    digest = hashlib.sha256()
    for path in rule_files(directory):
        digest.update(_relative(directory, path).encode() + b"\0" + _rule_file(path))
    return digest.hexdigest()[:16]
