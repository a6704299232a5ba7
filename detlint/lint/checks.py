"""Turns collected facts into diagnostics for the target version: file rules and program rules."""
from __future__ import annotations

import re
import string
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

from detlint.settings.config import Settings, Target
from detlint.lint.confidence import LEVELS, at_least, lower, of_trace, of_training
from detlint.lint.ftypes import LOCAL_FRAMEWORK, LOCAL_OTHER, Diagnostic, FileFacts, Hit, top_scope
from detlint.knowledge.frameworks import FRAMEWORKS
from detlint.knowledge.kb import KnowledgeBase, Matcher, Rule, expand_name
from detlint.knowledge.versions import Version
from detlint.lint.names import EXTERNAL_MODULES, evaluation_name, pretty
from detlint.lint.programs.program import Program, TraceHit

Span = tuple[int, int, int, int]  # (line, col, end_line, end_col)


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return ""


MAX_STAGE_MODULES = 3  # modules deep a stage's function is followed into the project
NAMED_VALUE_RE = re.compile(r"\w+=(?!UNKNOWN\b)[A-Za-z_][\w.]*(?: \[|$)")  # seed=args.seed [--seed defaults to None]


def render(template: str, **values: Any) -> str:
    """Fill ``{placeholders}``; unknown ones become empty, and doubled spaces are tidied."""
    text = string.Formatter().vformat(template, (), _Blank(values))
    # an empty placeholder before punctuation ("{where}, and") leaves no space before it
    return re.sub(r" ([,;:])", r"\1", " ".join(text.split()))


WHEN_RE = re.compile(r"\[(when (?:[^\[\]]|\[[^\]]*\])*)\]")  # a condition may hold brackets (cfg["fast"])


class Evaluator:
    def __init__(self, kb: KnowledgeBase, settings: Settings) -> None:
        self.kb = kb
        self.settings = settings
        # rules that report only the ops that name them (reported-by), not every op of a status
        self.dedicated_rules = {op.reported_by for op in kb.ops.values() if op.reported_by}
        # see in_input_pipeline: per file (kept alive here, so its id stays its own), the spans and
        # scopes of the functions its tf.data stages run
        self._pipeline_scopes: dict[int, tuple[FileFacts, list[Span], set[str]]] = {}
        self._unseen_provider: Optional[TraceHit] = None  # set by _check_program for its findings
        self.text_of: Optional[Callable[[Path], str]] = None  # a module's text (set by the linter)
        # is a rule's finding in a file shown at all (--select/--ignore, per-file-ignores; set by
        # the linter, which applies them)
        self.code_shown: Callable[[str, Path], bool] = lambda code, path: True
        # set by _check_program for its findings: (the block, the seed outside it) where uses in a
        # scope group's block are reached by no provider inside it
        self._scoped: Optional[tuple[tuple[int, int, int, int], Optional[TraceHit]]] = None
        self._trained_kernels: Optional[set[str]] = None  # set by program_diagnostics (None: any)
        # is this module a test, benchmark, demo or plotting tool (the not-training setting)? Set
        # by the linter, which knows the project root
        self.not_training_path: Callable[[Path], bool] = lambda path: False
        # does a call from a file to a project function run the argument at (keyword, position)
        # as a tf.data stage? Set by the linter (programs/stage_parameters.py), which resolves names
        self.stage_of: Callable[[Path, str, str, int], bool] = lambda path, callee, keyword, position: False
        # the functions handed to a function's parameter, across files (the same module)
        self.handed_to: Callable[[Path, str, str, int], list[Any]] = lambda path, function, param, position: []
        # a program module's facts, by path (set by the linter; None where there is no project)
        self.facts_of: Optional[Callable[[Path], Optional[FileFacts]]] = None
        # the project file and name a dotted call target of a file stands for (set by the linter)
        self.resolve: Callable[[Path, str], Optional[tuple[Path, str]]] = lambda path, name: None
        # groups a setting makes present (see assumed)
        self.setting_groups = [(name, g.when_setting) for name, g in kb.groups.items() if g.when_setting]
        self.runtime_groups = [(name, g.when_runtime) for name, g in kb.groups.items() if g.when_runtime[0]]
        self._program_imported: set[str] = set()  # the program being checked imports these frameworks
        self._targets: Optional[dict[str, Target]] = None  # see versions()
        self._uses: Optional[frozenset[str]] = None

    # ---- helpers -------------------------------------------------------------------------------
    @contextmanager
    def versions(self, targets: Optional[dict[str, Target]], uses: Optional[frozenset[str]] = None) -> Iterator[None]:
        """Judge with ``targets`` (one program's versions, settings/program_versions.py) inside
        the block; None keeps the project's. ``uses``: the frameworks the program imports; a
        finding names an assumed version only of those (no TensorFlow note in a PyTorch program)."""
        before = self._targets, self._uses
        self._targets, self._uses = targets, uses
        try:
            yield
        finally:
            self._targets, self._uses = before

    def target(self, key: str) -> Target:
        return (self._targets or self.settings.targets)[key]

    def version(self, owner: Any) -> Version:
        """The target version of the framework a rule, op or matcher belongs to."""
        return self.target(owner.framework).version

    @property
    def keras_major(self) -> int:
        """Keras 2 or 3 as configured or pinned, else as the TensorFlow being judged ships it."""
        if self.settings.keras_set is not None:
            return self.settings.keras_set
        return 2 if self.target("tensorflow").version < Version(2, 16) else 3

    def rule_on(self, rule: Rule) -> bool:
        return rule.versions.contains(self.version(rule))

    def assumed(self, owners: set[str]) -> set[str]:
        """Groups present because of the project's settings (``keras-backend = "jax"``) where the
        code (``owners``: what it matched) does not decide itself (a group's ``unless-present``)."""
        out = set()
        for name, spec in self.setting_groups:
            if any(f"group:{other}" in owners for other in spec.get("unless-present", ())):
                continue
            if all(str(self.settings.setting(key)) in values for key, values in spec.items() if key != "unless-present"):
                out.add(f"group:{name}")
        return out

    def on_runtime(self, runtime: Optional[str], present: set[str]) -> set[str]:
        """Groups present because the entry notebook was saved with ``runtime`` (a TPU), where
        what the program shows does not say otherwise (``present``: its matched owners)."""
        if not runtime:
            return set()
        return {f"group:{name}" for name, (runtimes, unless) in self.runtime_groups
                if runtime in runtimes and not any(f"group:{g}" in present for g in unless)}

    def imports_here(self, matcher: Matcher, facts: Optional[FileFacts]) -> bool:
        """Does the file of a call import the matcher's framework itself?"""
        return facts is not None and bool(set(facts.frameworks) & self.kb.framework_modules.get(matcher.framework, set()))

    def gated(self, matcher: Matcher, imported: set[str]) -> bool:
        """A method-name match counts only where its framework is imported, a match with
        ``imports`` only beside one of those modules (``imported``: the top-level framework
        modules the file or program imports)."""
        if matcher.imports and not imported & set(matcher.imports):
            return False  # a match that counts only beside an import (standalone keras)
        return not matcher.needs_framework or bool(imported & self.kb.framework_modules.get(matcher.framework, set()))

    def fix_text(self, rule: Rule) -> str:
        fix = rule.fix_for(self.version(rule))
        return render(self._title(fix.data), seed=self.settings.seed, version=self.version(rule)) if fix else ""

    def _title(self, fix: dict[str, Any]) -> str:
        """A fix's title, with what it adds for a framework the program uses (``if-uses``: no
        keras.utils.set_random_seed aside in a PyTorch program)."""
        extra = fix.get("if-uses") or {}
        added = [text for key, text in extra.items() if self._uses is None or key in self._uses]
        return str(fix["title"]) + "".join(f" ({text})" for text in added)

    def fix_note(self, rule: Rule) -> str:
        fix = rule.fix_for(self.version(rule))
        return render(str(fix.data.get("note", "")), version=self.version(rule)) if fix else ""

    @staticmethod
    def version_dependent(rule: Rule) -> bool:
        """Does what the rule says depend on the TensorFlow version (its fixes or its ops)?"""
        return bool(rule.ops_status) or len({fix.versions.text for fix in rule.fixes}) > 1

    def _applies(self, matcher: Matcher, keras_major: int) -> bool:
        return matcher.applies(self.version(matcher), keras_major)

    def effective_fix(self, rule: Rule, matcher: Optional[Matcher], api: str = "") -> Optional[dict[str, Any]]:
        """The rule's fix for the target version, with the matched pattern's override on top."""
        fix = rule.fix_for(self.version(rule))
        spec: dict[str, Any] = dict(fix.data) if fix else {}
        if matcher is not None and matcher.fix:
            spec.update(matcher.fix)
        if not spec.get("title"):
            return None
        if matcher is not None and spec.get("action") == "set-args":
            spec["positions"] = {name: cond.pos for name, cond in matcher.kwargs.items() if cond.pos is not None}
        spec.setdefault("safety", "display")
        spec["title"] = render(self._title(spec), seed=self.settings.seed, version=self.version(rule), api=api)
        return spec

    def _diagnostic(self, rule: Rule, message: str, path: str, hit: Hit, matcher: Optional[Matcher] = None,
                    line: Optional[int] = None, col: Optional[int] = None) -> Diagnostic:
        fix = self.effective_fix(rule, matcher, pretty(hit.api))
        at_hit = line is None
        span = hit.span
        assumed = self.target(rule.framework).assumed
        if assumed and self.version_dependent(rule) and (self._uses is None or rule.framework in self._uses):
            message += f" ({assumed}; pin {rule.framework} to be sure)"
        return Diagnostic(
            code=rule.code, name=rule.name, message=message, path=path,
            line=span[0] if at_hit else line, col=span[1] if at_hit else (col or 0),
            end_line=span[2] if at_hit else line, end_col=span[3] if at_hit else (col or 0),
            fix_title=fix["title"] if fix else None, fix_safety=fix["safety"] if fix else None,
            fix_spec=fix if fix and fix.get("action") else None,
            target=(hit.line, hit.col, hit.end_line, hit.end_col) if at_hit and hit.at else None,
        )

    # ---- file rules ----------------------------------------------------------------------------
    def trains(self, program: Program, facts_of: Any) -> bool:
        """Does the program run backprop (fit, GradientTape, minimize, ...)?"""
        training = self.calls_of(program, facts_of, "training")
        return bool(training) and not self.unrun_train_ops(program, training, facts_of)

    def unrun_train_ops(self, program: Program, training: list[TraceHit], facts_of: Any) -> bool:
        """Does the program only build its train ops and never run them? Every training call
        builds a graph op (KB ``graph-op``) kept under a name that no module of the program reads
        again, and the program runs sessions: a ``sample.py`` that builds the shared model graph,
        restores the weights and fetches only the outputs."""
        if not training or self.text_of is None:
            return False
        names: set[str] = set()
        for th in training:
            name = th.hit.detail[3:] if th.hit.detail.startswith("op:") else ""
            if not (self.kb.matcher(th.hit.owner, th.hit.index).graph_op and name.isidentifier()):
                return False
            names.add(name)
        if not self.calls_of(program, facts_of, "tf1-sessions"):
            return False  # no session: nothing to tell about (eager code runs what it calls)
        word = re.compile(r"\b(?:" + "|".join(sorted(names)) + r")\b")
        mentions = sum(len(word.findall(self.text_of(path))) for path in program.modules)
        return mentions <= len({(th.path, th.hit.line) for th in training})  # only where they are bound

    def inference_only(self, program: Program, facts_of: Any) -> bool:
        """Does the program only run a model (predict, evaluate, load_model) and never train it?
        A program showing neither may train through code detlint cannot see."""
        return not self.trains(program, facts_of) and self.reaches(program, facts_of, "inference")

    def reaches(self, program: Program, facts_of: Any, group: str) -> bool:
        """Does the program run a call of ``group`` (in the trace, or anywhere in its entry file)?"""
        return bool(self.calls_of(program, facts_of, group))

    def calls_of(self, program: Program, facts_of: Any, group: str) -> list[TraceHit]:
        """The program's calls of ``group`` (in the trace, or anywhere in its entry file)."""
        all_facts = [facts_of(p) for p in program.modules]
        keras = self.keras_for(all_facts, [th.hit for th in program.all_hits])
        imported = {m for f in all_facts if f is not None for m in f.frameworks}
        reachable = program.trace + unreached_in_entry(program, facts_of)

        def in_group(th: TraceHit, name: str) -> bool:
            if th.hit.owner != f"group:{name}":
                return False
            matcher = self.kb.matcher(th.hit.owner, th.hit.index)
            return self._applies(matcher, keras) and self.gated(matcher, imported) \
                and (not matcher.framework_here or self.imports_here(matcher, facts_of(th.path)))

        return [th for th in reachable if in_group(th, group) and self._confirmed(th, reachable, in_group)]

    def _confirmed(self, th: TraceHit, reachable: list[TraceHit], in_group: Any) -> bool:
        """Does a group match count in this program: the group it ``needs-also`` is reached too?"""
        also = self.kb.matcher(th.hit.owner, th.hit.index).needs_also
        if also is None or any(in_group(other, also) for other in reachable):
            return True
        # or the settings put it there (keras-backend = "torch" for keras-torch-backend)
        return f"group:{also}" in self.assumed({other.hit.owner for other in reachable})

    def file_diagnostics(self, display: str, facts: FileFacts, trains: Optional[bool] = None,
                         training: bool = True, program: Optional[Program] = None,
                         no_grad: frozenset[str] = frozenset(), shared: Sequence[Hit] = ()) -> list[Diagnostic]:
        """``training=False``: the file is no training code (a test, a benchmark, an inference-only
        program), so the rules about training runs stay silent. ``program``: the program the file
        is the entry of; what it turns on anywhere (a determinism switch) counts for
        ``unless-present``. ``no_grad``: its functions that never get a gradient (gradients.py),
        where backprop kernels never run. ``shared``: what every training program that runs this
        library module turns on (a determinism switch), which counts for it too."""
        out: list[Diagnostic] = []
        if not any(h.owner.startswith(("rule:", "op:")) for h in facts.hits):
            return out  # only rule and op matches are reported here (and the versions stay undecided)
        keras = self.keras_for([facts], facts.hits)
        hits = facts.hits + ([th.hit for th in program.all_hits if not th.off_default] if program is not None else []) \
            + list(shared)
        # what is switched on: group matches that apply to the target version
        present = {h.owner for h in hits if not h.off_by_default
                   and (not h.owner.startswith("group:") or self._applies(self.kb.matcher(h.owner, h.index), keras))}
        present |= self.assumed(present)
        present |= self.on_runtime(facts.runtime, present)
        off_gradient = set(facts.off_gradient)
        op_rules = [r for r in self.kb.rules.values() if r.scope == "file" and r.ops_status
                    and (training or not r.training)]
        # the ops of a status fixed once for the program (an upgrade): one finding per file and
        # status, the first call standing for the others
        once: dict[tuple[str, ...], list[tuple[Diagnostic, str]]] = {}
        # (one-per-value key, scope, matched value) -> the first finding, and what else that value seeds
        per_value: dict[tuple[str, Optional[str], str], tuple[Diagnostic, list[str]]] = {}
        for hit in facts.hits:
            kind, _, key = hit.owner.partition(":")
            if kind == "rule":
                rule = self.kb.rules[key]
                matcher = rule.matchers[hit.index]
                if not self.rule_on(rule) or _switched_off(rule, present):
                    continue
                if rule.training and not training:
                    continue
                if rule.skip_version_guarded and hit.version_guarded:
                    continue
                if not self._applies(matcher, keras) or not self.gated(matcher, facts.frameworks):
                    continue
                if matcher.function_arg and not self._function_uses(facts, hit, matcher.function_arg["contains"]) \
                        and not self._handed_uses(facts, hit, matcher.function_arg["contains"]):
                    continue
                message = render(matcher.message or rule.message, api=pretty(hit.api), detail=hit.detail,
                                 label=render(matcher.label, api=pretty(hit.api)),
                                 value=hit.detail.partition(":")[2], version=self.version(rule), keras=keras,
                                 fix=(self.effective_fix(rule, matcher, pretty(hit.api)) or {}).get("title", ""),
                                 note=self.fix_note(rule), seed=self.settings.seed)
                # seed=args.seed fed to four seeders: one cause (a value named, not an expression)
                # (within one rule, so --ignore and noqa of one code leave the other's; not in a
                # notebook, whose joined lines are no places a reader knows)
                named = f"{rule.code}:{matcher.one_per_value}" if matcher.one_per_value \
                    and NAMED_VALUE_RE.match(hit.detail) and not display.endswith(".ipynb") else None
                if named:
                    value_key = (named, hit.scope, hit.detail)
                    if value_key in per_value:
                        per_value[value_key][1].append(f"{pretty(hit.api)} at {Path(display).name}:{hit.line}")
                        continue
                out.append(self._diagnostic(rule, message, display, hit, matcher))
                if named:
                    per_value[(named, hit.scope, hit.detail)] = (out[-1], [])
                condition = WHEN_RE.search(hit.detail)
                if condition:  # shuffle=(mode == "train"): a problem in the runs where it holds
                    lower(out[-1], "likely", f"only {condition.group(1)}")
            elif kind == "op":
                op = self.kb.ops[key]
                status = op.status_at(self.version(op))
                matcher = op.matchers[hit.index]
                if status is None or not self._applies(matcher, keras) or not self.gated(matcher, facts.frameworks) \
                        or (op.phase == "backprop" and (
                        trains is False or hit.scope in no_grad or (hit.line, hit.col) in off_gradient)):
                    continue
                if self.in_input_pipeline(facts, hit):
                    continue  # a tf.data stage: CPU kernels, no gradient
                if status.requires and f"group:{status.requires}" not in present:
                    continue  # the code does not use what the status needs (reference variables)
                for rule in op_rules:
                    if rule.framework != op.framework:
                        continue
                    if op.reported_by is not None and rule.code != op.reported_by:
                        continue
                    if op.reported_by is None and rule.code in self.dedicated_rules:
                        continue
                    if status.status in rule.ops_status and self.rule_on(rule) and not _switched_off(rule, present):
                        note = render(status.note or rule.status_text.get(status.status, ""), version=self.version(op))
                        message = render(rule.message, api=pretty(hit.api), op=op.title, note=note,
                                         workaround=status.workaround or op.workaround, version=self.version(op))
                        # a call the op's rewrite fixes where it is (bias_add -> x + b) keeps its own finding
                        group = (rule.code, "once", str(status.versions)) \
                            if status.once and not self._rewritable(key, hit) else None
                        if group is not None and group in once:
                            if all((d.line, d.col) != (hit.line, hit.col) for d, _ in once[group]):
                                # (a call two of the ops match, slim.conv2d: named once)
                                once[group].append((self._diagnostic(rule, message, display, hit), pretty(hit.api)))
                            continue
                        out.append(self._diagnostic(rule, message, display, hit))
                        if group is not None:
                            once[group] = [(out[-1], pretty(hit.api))]
        for (first, api), *more in once.values():
            if more:  # one fix for all of them: the first call stands for the others
                first.message += _also_at(api, more, notebook=display.endswith(".ipynb"))
        for first, others in per_value.values():
            if others:
                what, sep, rest = first.message.partition("; ")  # the aside belongs to the what: it names places
                aside = f" (the same value also seeds {', '.join(others[:4])}{', ...' if len(others) > 4 else ''})"
                first.message = what + aside + sep + rest
        for diag in out:  # in a program's entry, what the whole program shows is known
            self._rate_unsure(self.kb.rules[diag.code], diag, present, entry=program is not None)
        return out

    def _function_uses(self, facts: FileFacts, hit: Hit, group: str) -> bool:
        """Does the function passed to ``hit``'s call (a lambda, a function of this file, and the
        functions they call) contain a match of ``group``?"""
        owner = f"group:{group}"
        spans, scopes = _functions_run(facts, [hit])
        return any(h.owner == owner and _runs_in(h, spans, scopes) for h in facts.hits) \
            or self._uses_elsewhere(Path(facts.path), facts, spans, scopes, owner, 0, set())

    def _uses_elsewhere(self, path: Path, facts: FileFacts, spans: list[Span], scopes: set[str], owner: str,
                        depth: int, seen: set[tuple[Path, str]]) -> bool:
        """Does a project function those functions call in another module (``augmentation.
        weak_image_augmentation(example)`` in a method handed to ``ds.map``) contain a match of
        ``owner``, or the functions it calls, a few modules deep?"""
        if depth >= MAX_STAGE_MODULES or self.facts_of is None:
            return False
        for call in facts.calls:
            if "." not in call.target or call.target.startswith("self.") \
                    or not (call.scope in scopes or any(_inside(call.line, call.col, span) for span in spans)):
                continue
            found = self.resolve(path, call.target)
            if found is None or not found[1] or found in seen:
                continue
            seen.add(found)
            other = self.facts_of(found[0])
            if other is None:
                continue
            reached = _scopes_reached(other, [found[1]])
            if any(h.owner == owner and h.scope in reached for h in other.hits) \
                    or self._uses_elsewhere(found[0], other, [], reached, owner, depth + 1, seen):
                return True
        return False

    def _handed_uses(self, facts: FileFacts, hit: Hit, group: str) -> bool:
        """Does a function the project hands to the stage's parameter (``ds.map(lambda x, y:
        (prep(x), y))`` in ``configure(ds, prep)``) contain a match of ``group``?"""
        owner, scope = f"group:{group}", hit.scope or ""
        spans, _ = _functions_run(facts, [hit])
        called = {c.target for c in facts.calls if any(_inside(c.line, c.col, span) for span in spans)}
        for param, position in facts.stage_params.get(scope, ()):
            if hit.arg_ref != param and param not in called:
                continue
            for _, caller, ref, span in self.handed_to(Path(facts.path), scope, param, position):
                handed = Hit("", 0, "", 1, 0, 1, 0, None, arg_ref=ref or None, arg_span=span)
                their_spans, their_scopes = _functions_run(caller, [handed])
                if any(h.owner == owner and _runs_in(h, their_spans, their_scopes) for h in caller.hits):
                    return True
        return False

    def in_input_pipeline(self, facts: Optional[FileFacts], hit: Hit) -> bool:
        """Does ``hit`` sit in a function handed to a tf.data stage (``ds.map(load_image)``, a
        lambda there, or what they call in the same file)? It runs on the CPU, undifferentiated."""
        if facts is None:
            return False
        key = id(facts)
        if key not in self._pipeline_scopes:
            stages = [h for h in facts.hits if h.owner == "group:pipeline-stages"]
            spans, scopes = _functions_run(facts, stages)
            # ... or handed to a project helper that hands it to one (make_dataset(map_fn=parse))
            handed = [row for row in facts.handed if self.stage_of(Path(facts.path), row[0], row[1], row[2])]
            spans += [tuple(row[4]) for row in handed if row[4]]
            scopes |= _scopes_reached(facts, [row[3] for row in handed if row[3]])
            self._pipeline_scopes[key] = (facts, spans, scopes)
        _, spans, scopes = self._pipeline_scopes[key]
        return _runs_in(hit, spans, scopes)

    # ---- program rules -------------------------------------------------------------------------
    def keras_for(self, facts: list[Any], hits: list[Hit]) -> int:
        """Keras 2 or 3 for these files: tf_keras or TF_USE_LEGACY_KERAS=1 mean Keras 2 even
        on TF >= 2.16, unless keras-version was configured explicitly."""
        if self.settings.keras_source.endswith("keras-version"):
            return self.keras_major
        if any("tf_keras" in getattr(f, "keras_flavours", ()) for f in facts) or any(
                h.owner == "group:legacy-keras" for h in hits):
            return 2
        return self.keras_major

    def program_diagnostics(self, program: Program, display: str, where: Any, facts_of: Any,
                            training: bool = True, sites_in: Optional[Path] = None,
                            program_name: str = "the program") -> list[Diagnostic]:
        """Findings of the program whose entry is shown as ``display``; ``where(path, line)``
        names other places in messages (project-relative, and by cell in notebooks), so the CLI
        and flake8 say the same thing. ``training=False`` as for file_diagnostics. Checks marked
        ``each-site`` report every offending call where it is: in the entry's own findings for
        the entry's calls, and, with ``sites_in`` (a module the program reaches, shown as
        ``display``), for that module's calls, naming the program as ``program_name``."""
        all_facts = [facts_of(p) for p in program.modules]
        keras = self.keras_for(all_facts, [th.hit for th in program.all_hits])
        imported = {m for f in all_facts if f is not None for m in f.frameworks}
        self._program_imported = imported  # an op of a framework the program never imports never runs
        entry_hits = unreached_in_entry(program, facts_of)
        # ops in tf.data stages run on the CPU and are never differentiated: no GPU op evidence
        reachable = [th for th in program.trace + entry_hits
                     if not (th.hit.owner.startswith("op:") and self.in_input_pipeline(facts_of(th.path), th.hit))]

        def in_group(th: TraceHit, group: str) -> bool:
            if th.hit.owner != f"group:{group}":
                return False
            matcher = self.kb.matcher(th.hit.owner, th.hit.index)
            return self._applies(matcher, keras) and self.gated(matcher, imported) \
                and (not matcher.framework_here or self.imports_here(matcher, facts_of(th.path)))

        training_reached = [th for th in reachable if in_group(th, "training") and self._confirmed(th, reachable, in_group)]
        if self.unrun_train_ops(program, training_reached, facts_of):
            training_reached = []  # a train op built and never run: the program trains nothing
        trains = bool(training_reached)
        entry_facts = facts_of(program.entry)
        # whose kernels the program's training runs: a TF input pipeline feeding a PyTorch or JAX
        # model is never differentiated (Keras may train on any backend: then every framework's)
        kernels = {FRAMEWORKS[fw].kernels_of or fw if fw in FRAMEWORKS else fw
                   for fw in (self.kb.matcher(th.hit.owner, th.hit.index).framework for th in training_reached)}
        self._trained_kernels = None if not kernels or "tensorflow" in kernels else kernels
        training_calls = [th for th in program.all_hits
                          if in_group(th, "training") and self._confirmed(th, program.all_hits, in_group)]

        def thrown_away(index: int, seeded: int) -> bool:
            """Does the use at trace ``index``, a layer or model built before the seed at
            ``seeded``, not matter? A reset (clear_session, a new graph) lies between them, or it
            goes into a module-level name that is not trained before the name is bound again (a
            notebook cell trying a layer out, a model rebuilt after the seed). A reset also drops
            what training ran before it. Numbers drawn before the seed (a shuffle) always
            matter: no reset takes them back."""
            th = program.trace[index]
            builds = self.kb.matcher(th.hit.owner, th.hit.index).needs_training
            where = (th.path, th.hit.line, th.hit.col)
            if builds or any((t.path, t.hit.line, t.hit.col) == where for t in training_calls):
                if any(in_group(other, "graph-resets") for other in program.trace[index + 1:seeded]):
                    return True
            if not builds or th.path != program.entry or th.hit.scope is not None or entry_facts is None:
                return False
            spot = (th.hit.line, th.hit.col)
            bound = [(name, l1) for name, l0, c0, l1, c1 in entry_facts.assigned if (l0, c0) <= spot <= (l1, c1)]
            # only where every training call names what it trains (model.fit); an optimiser's
            # step or a loss's backward trains whatever built the loss
            if not all(self.kb.matcher(t.hit.owner, t.hit.index).trains_receiver for t in training_calls):
                return False
            return bool(bound) and all(_untrained(name, end, entry_facts.assigned, training_calls, program.entry)
                                       for name, end in bound)

        # what is bound to test or validation data (``test_ds = ds.shuffle(100)``) only evaluates,
        # ... and so is what a plotting or visualisation module of the project draws
        # ... and what runs after the last training call (sampling, plotting a prediction)
        training_calls_seen = [th for th in program.trace if in_group(th, "training")
                               and self._confirmed(th, reachable, in_group)]
        # a session run seen to fetch a train op is where training runs; without one, any loop
        # running a session may be
        session_loops = not any(self.kb.matcher(th.hit.owner, th.hit.index).fetches for th in training_calls_seen)
        after = _after_training(program, training_calls_seen, facts_of, session_loops)
        feeding = [th for th in reachable if not _evaluation_data(facts_of(th.path), th.hit)
                   and (th.path == program.entry or not self.not_training_path(th.path))
                   and id(th) not in after]
        out: list[Diagnostic] = []
        present = {th.hit.owner for th in program.all_hits if not th.off_default}
        present |= self.assumed(present)
        present |= self.on_runtime(entry_facts.runtime if entry_facts is not None else None, present)

        labels: dict[int, str] = {}  # id of a finding -> what it is about, and where

        def emit(rule: Rule, check: dict[str, Any], here: Optional[Path]) -> list[Diagnostic]:
            """The findings of one check, reported at ``here`` (a module's own sites) or at the entry."""
            diags: list[Diagnostic] = []
            found = self._check_program(rule, check, program, feeding, in_group, trains, keras,
                                        display, where, thrown_away)
            site_path = here or program.entry
            for first, uses, late_after in found:
                if check.get("each-site") and first.path != site_path:
                    continue  # reported when the module it is in is linted
                diag = self._program_diagnostic(rule, check, program, first, uses, late_after, display,
                                                where, program_name, here=here is not None)
                diags.append(diag)
                labels[id(diag)] = f"{self._label(first)} at {where(first.path, first.hit.span[0])}"
                opted = next((th for th in program.all_hits if late_after is None and check.get("requires")
                              and th.off_default and in_group(th, check["requires"])), None)
                if opted is not None:  # a seed only a command-line option or an edited value turns on
                    at = where(*(opted.optional or (opted.path, opted.hit.line)))
                    diag.message += (f" (the call at {at} is on a branch a run"
                                     " with the defaults does not take: its command-line options, and the"
                                     " values the code sets before the test)")
                    lower(diag, "likely", "assumes a run with the defaults")
                self._rate(diag, program, first, uses, training_reached if rule.training else None)
                partly = [self.partly_frozen(th, program) for th in uses] if check["uses"] == "ops" else []
                if partly and all(partly):
                    path, line = partly[0]
                    lower(diag, "possible", f"assumes the loop at {where(path, line)}, which freezes "
                          "parameters by name, keeps this layer or one before it training")
                self._rate_unsure(rule, diag, present)
                unseen = self._unseen_provider
                if unseen is not None:  # a provider the trace never reached may still run first
                    lower(diag, "likely", f"assumes {pretty(unseen.hit.api)} at "
                          f"{where(unseen.path, unseen.hit.line)}, which the program was not seen to run, "
                          "does not run first")
            return diags

        folds: list[tuple[Diagnostic, str]] = []  # (a finding, the rule it folds into)
        for rule in self.kb.rules.values():
            if not self.rule_on(rule) or _switched_off(rule, present):
                continue
            if rule.training and not training:
                continue
            for check in rule.program:
                if sites_in is not None and not check.get("each-site"):
                    continue
                diags = emit(rule, check, sites_in)
                out += diags
                if check.get("folds-into"):
                    folds += [(diag, check["folds-into"]) for diag in diags]
        if folds:
            out = self._fold(out, folds, sites_in is not None, program, training, present, emit, labels)
        return out

    def _fold(self, out: list[Diagnostic], folds: list[tuple[Diagnostic, str]], elsewhere: bool,
              program: Program, training: bool, present: set[str], emit: Any,
              labels: dict[int, str]) -> list[Diagnostic]:
        """One finding per cause: a finding folds into the other rule's finding for the program
        (DET606's loader into DET601's missing seed) where that one is shown: at least as sure,
        at the shown confidence, and not silenced at its line; that finding names what it covers."""
        entry_facts = self.facts_of(program.entry) if self.facts_of is not None else None
        noqa = entry_facts.noqa if entry_facts is not None else {}
        dropped: set[int] = set()
        for code in dict.fromkeys(code for _, code in folds):
            other = self.kb.rules.get(code)
            if other is None or not self.rule_on(other) or not self.code_shown(code, program.entry) \
                    or _switched_off(other, present) or (other.training and not training):
                continue
            if elsewhere:  # a module's own sites: the entry's finding, as its own linting makes it
                theirs = [d for check in other.program for d in emit(other, check, None)]
            else:
                theirs = [d for d in out if d.code == code]
            shown = [d for d in theirs if at_least(d.confidence, self.settings.min_confidence)
                     and not (d.line in noqa and (not noqa[d.line] or code in noqa[d.line]))]
            for diag, into in folds:
                host = next((d for d in shown if into == code and at_least(d.confidence, diag.confidence)), None)
                if host is None:
                    continue
                dropped.add(id(diag))
                if not elsewhere:
                    note = labels.get(id(diag), diag.code)
                    host.message += (f" (the seed also fixes the order of {note})" if "(the seed also fixes" not in
                                     host.message else "").rstrip()
                    if "(the seed also fixes" in host.message and note not in host.message:
                        host.message = host.message[:-1] + f", {note})"
        return [d for d in out if id(d) not in dropped]

    def _label(self, th: TraceHit) -> str:
        matcher = self.kb.matcher(th.hit.owner, th.hit.index)
        return render(matcher.label, api=pretty(th.hit.api), detail=th.hit.detail) if matcher.label \
            else pretty(th.hit.api)

    def _rate_unsure(self, rule: Rule, diag: Diagnostic, present: set[str], entry: bool = True) -> None:
        """A rule whose problem needs what the program never shows (a GPU), or what its
        installed package lacks (GPU kernels), is only possible. ``entry``: ``present`` is the
        whole program's (not only one module's)."""
        unless = rule.unsure_unless
        if entry and unless and not any(f"group:{group}" in present for group in unless["groups"]):
            lower(diag, "possible", unless["why"])
        unsure = rule.unsure_if
        if unsure and any(f"group:{group}" in present or self._pinned_package(group) for group in unsure["groups"]):
            lower(diag, "possible", unsure["why"])

    def _pinned_package(self, name: str) -> bool:
        """Is group ``name`` present because of the package the project pins for the version
        being judged (``tensorflow`` 1.14, built without CUDA)?"""
        group = self.kb.groups[name]
        if not group.when_package:
            return False
        target = self.target(group.framework)
        return any(target.package == package and versions.contains(target.version)
                   for package, versions in group.when_package)

    @staticmethod
    def _rate(diag: Diagnostic, program: Program, first: TraceHit, uses: list[TraceHit],
              training: Optional[list[TraceHit]]) -> None:
        """How sure a program finding is: its surest use's path from the entry, the surest
        training call's (for rules about training runs), and a condition on a run-time value."""
        levels = [of_trace(program, th) for th in uses or [first]]
        level, why = min(levels, key=lambda lv: LEVELS.index(lv[0]))
        lower(diag, level, why)
        if training is not None:
            lower(diag, *of_training(program, training))
        condition = WHEN_RE.search(first.hit.detail)
        if condition:
            lower(diag, "likely", f"only {condition.group(1)}")

    def _check_program(self, rule: Rule, check: dict[str, Any], program: Program, reachable: list[TraceHit],
                       in_group: Any, trains: bool, keras: int, display: str, where: Any,
                       thrown_away: Any = None) -> list[tuple[TraceHit, list[TraceHit], Optional[TraceHit]]]:
        """What to report: (where, the uses, the late provider) once per program, or once per
        offending use for ``each-site`` checks."""
        self._scoped = None
        present = check.get("when-present")
        witness = [th for th in program.all_hits if present and in_group(th, present)]
        if present and not witness and f"group:{present}" not in self.assumed({th.hit.owner for th in program.all_hits}):
            return []
        absent = check.get("when-absent")  # another check of the rule speaks for such programs
        if absent and any(in_group(th, absent) for th in program.all_hits):  # (as when-present reads it)
            return []
        uses = [th for th in reachable if self._is_use(rule, check, th, in_group, trains, keras, program)]
        yields = check.get("yields-to")
        if yields and self.rule_on(self.kb.rules[yields["rule"]]):  # what another rule reports on its own
            theirs = {(th.path, th.hit.line, th.hit.col) for th in reachable if in_group(th, yields["uses"])}
            uses = [th for th in uses if (th.path, th.hit.line, th.hit.col) not in theirs]
        if not uses:
            return []
        required = check.get("requires")
        providers = [th for th in program.all_hits if required and in_group(th, required)
                     and not th.off_default and not self._undone(required, th, program)
                     and self._confirmed(th, program.all_hits, in_group)]
        # a seed counts where it runs: one in another module's function the trace never reached
        # (a train() the program imports but does not call) is not the program's seed
        unseen = [th for th in providers if not th.ordered and th.path != program.entry]
        providers = [th for th in providers if th.ordered or th.path == program.entry]
        self._unseen_provider = unseen[0] if unseen and not providers else None
        scoped_by = self.kb.groups[required].scoped_by if required in self.kb.groups else None
        if scoped_by and program.scopes and check.get("message-scoped") and all(p.ordered for p in providers):
            # a graph seed reaches the graph it is set in: uses built in a `with
            # tf.Graph().as_default():` block of the entry need a seed set inside that block
            spans = [s[1:] for s in program.scopes if s[0] == scoped_by]
            ids = {id(th.hit) for th in providers}  # where the trace ran them (the calls that led there)
            covered = {_block_of(spans, th, program.entry) for th in program.trace if id(th.hit) in ids}
            stray = [u for u in uses if _block_of(spans, u, program.entry) not in covered | {None}]
            if stray:
                block = spans[_block_of(spans, stray[0], program.entry)]
                self._scoped = (block, providers[0] if providers else None)
                return [(stray[0], stray, None)]
        late_after: Optional[TraceHit] = None
        if providers:
            if not check.get("order") or any(not p.ordered for p in providers):
                return []
            provider_ids = {id(p.hit) for p in providers}
            use_ids = {id(u.hit) for u in uses}
            # where the default run seeds (a walk through an off-default branch may have met it first)
            first_provider = next((i for i, th in enumerate(program.trace) if id(th.hit) in provider_ids
                                   and th.optional is None), None)
            if first_provider is None:
                first_provider = next(i for i, th in enumerate(program.trace) if id(th.hit) in provider_ids)
            # the uses that run before the seed (a layer thrown away before it does not count)
            early = {id(th.hit) for i, th in enumerate(program.trace[:first_provider]) if id(th.hit) in use_ids
                     and not (thrown_away and thrown_away(i, first_provider))
                     and not self.kb.matcher(th.hit.owner, th.hit.index).draws_later}
            if not early:
                return []
            uses = [th for th in uses if id(th.hit) in early]
            late_after = program.trace[first_provider]
        elif check.get("late-only"):
            return []
        if check.get("each-site"):
            seen: set[int] = set()
            sites = [u for u in uses if not (id(u.hit) in seen or seen.add(id(u.hit)))]
            return [(u, [u], late_after) for u in sites]
        uses = sorted(uses, key=lambda th: th.off_default)  # reported at a use the default run makes
        report = {"use": uses[0], "requires": late_after, "when-present": _first(program, witness)}
        at = report.get(check.get("report-at", "use")) or uses[0]
        return [(at, uses, late_after)]

    def _undone(self, group: str, provider: TraceHit, program: Program) -> bool:
        """Does the provider's own function take it back later with the same call (the group's
        ``undone-by`` rule matching it: ``random.seed(None)`` after ``random.seed(0)``)?"""
        undoer = self.kb.groups[group].undone_by
        if undoer is None:
            return False
        hit = provider.hit
        return any(th.path == provider.path and th.hit.owner == f"rule:{undoer}" and th.hit.scope == hit.scope
                   and th.hit.api == hit.api and th.hit.line > hit.line for th in program.all_hits)

    def _is_use(self, rule: Rule, check: dict[str, Any], th: TraceHit, in_group: Any, trains: bool,
                keras: int, program: Program) -> bool:
        uses = check["uses"]
        if uses == "ops":
            kind, _, key = th.hit.owner.partition(":")
            if kind != "op":
                return False
            op = self.kb.ops[key]
            if op.framework != rule.framework:
                return False
            status = op.status_at(self.version(op))
            matcher = op.matchers[th.hit.index]
            if op.fixed_by and any(in_group(other, op.fixed_by) and not other.off_default
                                   for other in program.all_hits):
                return False  # a switch of its own (cuDNN's flag for convolutions) covers it
            differentiated = trains and (self._trained_kernels is None or op.framework in self._trained_kernels)
            return (status is not None and status.status in rule.ops_status and not status.requires
                    and self._applies(matcher, keras) and self.gated(matcher, self._program_imported)
                    and (op.phase == "forward" or (differentiated and not self.frozen(th, program))))
        if not in_group(th, uses):
            return False
        if th.hit.displayed and not check.get("late-only"):
            return False  # a draw that is only printed or plotted does not feed training (but it ran)
        return trains or not self.kb.matcher(th.hit.owner, th.hit.index).needs_training

    def frozen(self, th: TraceHit, program: Program) -> bool:
        """Is ``th`` a layer of a frozen model: built at, or by a call on, a line that binds a
        model whose backward never runs (flow/frozen_models.py)?"""
        return self._built_into(th, program, lambda facts, line: line in facts.frozen_bindings)

    def partly_frozen(self, th: TraceHit, program: Program) -> Optional[tuple[Path, int]]:
        """Where a loop freezes the parameters of the model ``th`` is a layer of by name, all but
        some (its backward runs only if the loop keeps it or a layer before it training)."""
        loops: list[tuple[Path, int]] = []

        def binds(facts: FileFacts, line: int) -> bool:
            loop = next((at for bound, at in facts.partly_frozen if bound == line), None)
            if loop is not None:
                loops.append((Path(facts.path), loop))
            return loop is not None
        return loops[0] if self._built_into(th, program, binds) and loops else None

    def _built_into(self, th: TraceHit, program: Program, binds: Callable[[FileFacts, int], bool]) -> bool:
        facts_of = self.facts_of
        if facts_of is None:
            return False

        def binds_frozen(path: Path, line: int) -> bool:
            facts = facts_of(path)
            return facts is not None and binds(facts, line)

        def only_frozen(path: Path, scope: Optional[str], seen: frozenset) -> bool:
            """Is every call that runs this function a frozen model's construction, or made in
            a function only those run? (A function reached no other way, or in a cycle: no.)"""
            callers = program.callers.get((path, scope))
            if not callers or (path, scope) in seen:
                return False
            seen = seen | {(path, scope)}
            return all(binds_frozen(p, line) or only_frozen(p, s, seen) for p, line, s in callers)

        return binds_frozen(th.path, th.hit.line) or only_frozen(th.path, th.hit.scope, frozenset())

    def _rewritable(self, op_id: str, hit: Hit) -> bool:
        """Is ``hit`` a call the op's rewrite is written for (``tf.nn.bias_add(x, b)``), not
        another of its sources (a Dense layer, ``tf.layers.dense``) that no template fits?"""
        op = self.kb.ops[op_id]
        calls = {expand_name(name) for name in (op.rewrite or {}).get("call", ())}
        return bool(calls) and bool(calls.intersection(op.matchers[hit.index].names))

    def _program_diagnostic(self, rule: Rule, check: dict[str, Any], program: Program, first: TraceHit,
                            uses: list[TraceHit], late_after: Optional[TraceHit], display: str,
                            where_of: Any, program_name: str = "the program", here: bool = False) -> Diagnostic:
        """``here``: reported at ``first`` itself, in the module it is in (shown as ``display``)."""
        matcher = self.kb.matcher(first.hit.owner, first.hit.index)
        kind, _, key = first.hit.owner.partition(":")
        op = self.kb.ops[key].title if kind == "op" else ""
        where = ""
        at_site = here or first.path == program.entry
        if not at_site:
            choice = next((program.choices[step] for step in first.via if step in program.choices), None)
            where = f"(in {where_of(first.path, first.hit.span[0])}{', ' + choice if choice else ''})"
        late = ""
        if late_after is not None:
            late = where_of(late_after.path, late_after.hit.span[0])
        message_late = check.get("message-late") or rule.message_late
        # a source's own message (a library that draws on its own terms) wins over the rule's
        template = message_late if late_after is not None and message_late else (
            matcher.message if matcher.message and kind == "group" else check.get("message") or rule.message)
        scoped, block_at = self._scoped, ""
        if scoped is not None:  # built in a block whose graph the program's seed does not reach
            (line, _, _, _), provider = scoped
            template, block_at = check["message-scoped"], where_of(program.entry, line)
            late = (f"the seed at {where_of(provider.path, provider.hit.span[0])} is set on another graph"
                    if provider is not None else "no seed is set inside it")
        label = self._label(first)
        condition = WHEN_RE.search(first.hit.detail)  # shuffle=(mode == "train"): for which runs
        if condition and condition.group(1) not in label:
            label = f"{label} ({condition.group(1)})"
        use = uses[0]
        message = render(template, api=pretty(first.hit.api), label=label, op=op, where=where,
                         version=self.version(rule), keras=self.keras_major, fix=self.fix_text(rule),
                         seeded_at=late, seed=self.settings.seed, detail=first.hit.detail,
                         value=first.hit.detail.partition(":")[2], use=pretty(use.hit.api),
                         use_at=where_of(use.path, use.hit.span[0]), program=program_name, block_at=block_at)
        if at_site:
            diag = self._diagnostic(rule, message, display, first.hit)
        else:
            diag = self._diagnostic(rule, message, display, first.hit, line=first.anchor_line, col=first.anchor_col)
        if not at_site and diag.fix_spec and diag.fix_spec.get("action") != "insert":
            diag.fix_spec = None  # the code to change is in another module; the message names it
        if check.get("no-fix") or scoped is not None:
            diag.fix_spec = None  # the message says what to change; the rule's fix would not do it
        if diag.fix_spec and diag.fix_spec.get("rewrite-ops"):
            wanted = set(diag.fix_spec["rewrite-ops"])
            for th in uses:
                kind, _, key = th.hit.owner.partition(":")
                if kind == "op" and key in wanted and self._rewritable(key, th.hit):
                    span = (th.hit.line, th.hit.col, th.hit.end_line, th.hit.end_col)
                    diag.rewrite_sites.append((str(th.path), span, key))
        return diag


def _block_of(spans: list[tuple[int, int, int, int]], th: TraceHit, entry: Path) -> Optional[int]:
    """The innermost of ``spans`` (blocks of the entry) where ``th`` runs, if any: the block that
    holds it or one of the entry's calls the trace reached it through (a seed helper of the entry
    called first inside the block runs there)."""
    if not th.ordered:
        return None
    places = [(th.anchor_line, th.anchor_col)] + [(line, 0) for path, line in th.via if path == entry]
    inside = [i for i, (l0, c0, l1, c1) in enumerate(spans)
              if any((l0, c0) <= at <= (l1, c1) or l0 < at[0] <= l1 for at in places)]
    return max(inside, key=lambda i: spans[i][:2]) if inside else None


def _untrained(name: str, after: int, assigned: list[tuple[str, int, int, int, int]],
               training_calls: list[TraceHit], entry: Path) -> bool:
    """Is the object bound to ``name`` on the module-level line ``after`` never trained
    (``name.fit(...)``) before ``name`` is bound again? Training of that name anywhere but the
    entry's module level (a function may use the global) counts as training it."""
    rebound = min((l0 for n, l0, _, _, _ in assigned if n == name and l0 > after), default=None)
    for th in training_calls:
        if th.hit.api.rpartition(".")[0] != name:
            continue
        if th.path != entry or th.hit.scope is not None:
            return False
        if th.hit.line > after and (rebound is None or th.hit.line < rebound):
            return False
    return True


def _also_at(api: str, more: list[tuple[Diagnostic, str]], notebook: bool) -> str:
    """`` (also at lines 7, 9 of this file)``; other ops named (`` (also tf.nn.max_pool at line
    7 ...)``). A notebook's lines are those of its joined cells, no place a reader knows: counted."""
    if notebook:
        return f" (and {len(more)} more place{'s' if len(more) > 1 else ''} in this notebook)"
    tail = f"{', ...' if len(more) > 5 else ''} of this file)"
    if all(other == api for _, other in more):
        lines = ", ".join(str(d.line) for d, _ in more[:5])
        return f" (also at line{'s' if len(more) > 1 else ''} {lines}{tail}"
    return " (also " + ", ".join(f"{other} at line {d.line}" for d, other in more[:5]) + tail


def _evaluation_data(facts: Optional[FileFacts], hit: Hit) -> bool:
    """Is ``hit`` part of an assignment to a name for test or validation data (``test_dataset``,
    ``x_val``, ``ds_eval``), at module level or in a function? Their order and draws never
    reach the weights."""
    if facts is None:
        return False
    spot = (hit.line, hit.col)
    if hit.scope is None and any((l0, c0) <= spot <= (l1, c1) and evaluation_name(name)
                                 for name, l0, c0, l1, c1 in facts.assigned):
        return True
    return any((l0, c0) <= spot <= (l1, c1) for l0, c0, l1, c1 in facts.evaluation_spans)


def _functions_run(facts: FileFacts, hits: list[Hit]) -> tuple[list[Span], set[str]]:
    """What the functions passed to ``hits``' calls are: the spans of lambdas and nested defs, and
    the file's functions they name or call, transitively."""
    spans = [h.arg_span for h in hits if h.arg_span is not None]
    refs = [h.arg_ref for h in hits if h.arg_ref]
    refs += [c.target for c in facts.calls if any(_inside(c.line, c.col, span) for span in spans)]
    return spans, _scopes_reached(facts, refs)


def _inside(line: int, col: int, span: Span) -> bool:
    return (span[0], span[1]) <= (line, col) <= (span[2], span[3])


def _runs_in(hit: Hit, spans: list[Span], scopes: set[str]) -> bool:
    return hit.scope in scopes or any(_inside(hit.line, hit.col, span) for span in spans)


def _scopes_reached(facts: FileFacts, refs: list[str]) -> set[str]:
    """The functions of this file named by ``refs`` and those they call, transitively."""
    scopes: set[str] = set()
    todo = [ref.rsplit(".", 1)[-1] for ref in refs]
    while todo:
        name = todo.pop()
        for scope in [s for s in facts.functions if s == name or s.endswith("." + name)]:
            if scope not in scopes:
                scopes.add(scope)
                todo.extend(c.target.rsplit(".", 1)[-1] for c in facts.calls if c.scope == scope)
    return scopes


def unreached_in_entry(program: Program, facts_of: Any) -> list[TraceHit]:
    """The entry file's hits the trace did not reach (a call it cannot follow may still run
    them), except those in the entry's functions and classes that nothing names: a program never
    runs a definition of its own entry file that it never mentions."""
    facts = facts_of(program.entry)
    dead = frozenset(facts.unreferenced) if facts is not None else frozenset()
    return [th for th in program.all_hits
            if th.path == program.entry and not th.ordered and top_scope(th.hit.scope) not in dead]


def _after_training(program: Program, training: list[TraceHit], facts_of: Any, session_loops: bool = False) -> set[int]:
    """The trace entries (by id) that run only after the program's last training call: they
    cannot change the trained model (sampling from it, plotting a prediction). Not so for one
    the trace also reaches before that call (a helper called twice), one that call runs (an
    Estimator's model_fn) or is given (a lambda among its arguments), or one in a loop that may train again (it holds a training call or
    a call into project code: the next epoch; with ``session_loops``, where no session run was
    seen to fetch a train op, a loop running a TF1 session, which may run one built elsewhere)."""
    if not training:
        return set()
    last = max(i for i, th in enumerate(program.trace) if any(th is t for t in training))
    before = {id(th.hit) for th in program.trace[:last + 1]}
    trained: dict[Path, set[int]] = {program.entry: {t.anchor_line for t in training}}
    for t in training:
        trained.setdefault(t.path, set()).add(t.hit.line)

    def in_training_loop(path: Path, line: int) -> bool:
        facts = facts_of(path)
        if facts is None:
            return True
        # ... or the first loop of the file running a TF1 session, which may run a train op built
        # elsewhere (a later one samples or evaluates)
        runs = [h.line for h in facts.hits if h.owner == "group:graph-runs"] if session_loops else []
        first = min(((start, end) for start, end in facts.loops if any(start <= r <= end for r in runs)), default=None)
        return any(start <= line <= end and (any(start <= t <= end for t in trained.get(path, ()))
                                             or any(start <= c.line <= end and _project_call(facts, c.target)
                                                    for c in facts.calls)
                                             or (start, end) == first)
                   for start, end in facts.loops)

    sites = {(t.path, t.hit.line) for t in training}
    # the lines of the calls that lead to training: what is written there is that call's
    # arguments (ddpg(lambda: gym.make(name)) makes its environment inside the training call)
    training_calls = {step for t in training for step in t.via}
    return {id(th) for th in program.trace[last + 1:]
            if id(th.hit) not in before and not sites.intersection(th.via) and (th.path, th.hit.line) not in sites
            and (th.path, th.hit.line) not in training_calls
            and not in_training_loop(th.path, th.hit.line) and not in_training_loop(program.entry, th.anchor_line)
            and not any(in_training_loop(path, line) for path, line in th.via)}  # called from such a loop


def _project_call(facts: FileFacts, target: str) -> bool:
    """Is ``target`` a function of the file or one imported from the project (it may train)?"""
    head = target.split(".")[0]
    # ... or a method of an object of a project class (``ddpg.learn()``: ``<local class>.learn``)
    if head in facts.functions or head in facts.classes or head in ("self", "super", LOCAL_OTHER, LOCAL_FRAMEWORK):
        return True
    qual = facts.imports.get(head)
    return qual is not None and (qual.startswith(".") or qual.split(".")[0] not in EXTERNAL_MODULES | facts.frameworks)


def _first(program: Program, hits: list[TraceHit]) -> Optional[TraceHit]:
    """The earliest of ``hits`` in execution order (else the first one found)."""
    ids = {id(th.hit) for th in hits}
    for th in program.trace:
        if id(th.hit) in ids:
            return th
    return hits[0] if hits else None


def _switched_off(rule: Rule, present_owners: set[str]) -> bool:
    """``unless-present`` groups (e.g. a non-TensorFlow Keras backend) seen in the file/program."""
    return any(f"group:{group}" in present_owners for group in rule.unless_present)
