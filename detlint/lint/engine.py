"""A lint run: read each file once, collect its facts, build programs, evaluate, filter."""
from __future__ import annotations

import fnmatch
import os
import re
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from detlint.lint.flow import gradients
from detlint.fix.raising import settle
from detlint.knowledge import kb as kb_module
from detlint.lint.checks import Evaluator
from detlint.lint.cache import FactsCache
from detlint.lint.program_context import ProgramContext
from detlint.settings.config import TEST_FILE_NAMES, Settings, Target, not_training
from detlint.lint.confidence import FileReach, at_least, lower, of_training
from detlint.lint.programs.stage_parameters import StageParameters
from detlint.lint.ftypes import CallSite, Diagnostic, FileFacts, Hit, quiet_compile, top_scope
from detlint.lint.isolation import ParserPool, Task, python_recursion, run_deep, transient, work_here
from detlint.knowledge.kb import KnowledgeBase
from detlint.lint.programs.links import OutlineExports, link_in_order, links_for
from detlint.lint.names import EXTERNAL_MODULES
from detlint.lint.files.notebook import NOT_TEXT, Notebook, NotebookError
from detlint.lint.programs.outline import Outline, kb_tokens, maker_tokens, outline, provider_tokens
from detlint.lint.programs import console_scripts
from detlint.lint.programs.config_targets import config_targets
from detlint.lint.programs.program import MAIN_GUARD, MAX_IMPORT_DEPTH, ModuleResolver, Program, ProgramBuilder, TraceHit
from detlint.lint.programs.unused import UnusedCode, library_hooks
from detlint.lint.programs.reach import ImportIndex
from detlint.lint.files.sources import (NOTEBOOK_SIZE_FACTOR, SourceFile, file_problem, read_bytes, read_source,
                                        too_large, too_large_json)

__all__ = ["Linter", "Result", "SourceFile", "read_source", "real", "selected"]


MAX_NEIGHBOURS = 200  # modules of a folder asked whether the project imports them
_REAL: dict[str, Path] = {}  # realpath walks every component with lstat: asked thousands of times a run


def real(path: Path) -> Path:
    """Absolute path with symlinks resolved; unlike Path.resolve it never raises on a loop.
    Answers are kept until the next ``Linter`` is made (links do not change during a run)."""
    key = os.fspath(path)
    found = _REAL.get(key)
    if found is None:
        found = _REAL[key] = Path(os.path.realpath(key))
    return found


def refused_by_python(text: str, path: Path) -> Optional[FileFacts]:
    """Python's own compiler looks first (it is quick): nesting it refuses is reported as it says,
    and never reaches libcst, which can crash or run for minutes on it. Other syntax errors go
    on to libcst, which may know a grammar newer than this interpreter's."""
    try:
        with python_recursion():
            quiet_compile(text, str(path))
    except SyntaxError as exc:
        if (exc.msg or "").startswith("too many"):
            return FileFacts(path=str(path), error=f"syntax error: {exc.msg}", error_line=exc.lineno or 1,
                             error_col=max((exc.offset or 1) - 1, 0))
    except (RecursionError, MemoryError):
        return FileFacts(path=str(path), error="too deeply nested: Python itself cannot compile it "
                                               "(maximum recursion depth exceeded)")
    except ValueError:
        pass  # NUL bytes and the like: the parser reports them
    return None


def collect_text(kb: KnowledgeBase, path: Path, text: str, max_bytes: int = 0,
                 links: Optional[dict[str, str]] = None) -> FileFacts:
    if max_bytes and len(text) > max_bytes and len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        return FileFacts(path=str(path), error=too_large(len(text.encode("utf-8", "surrogatepass")), max_bytes))
    refused = refused_by_python(text, path)
    if refused is not None:
        return refused
    from detlint.lint.collect import collect  # libcst is imported only when a file really has to be parsed

    try:  # callers run this on a deep stack (run_deep), where libcst's recursion fits
        return collect(kb, str(path), text, links)
    except RecursionError:
        return FileFacts(path=str(path), error="too deeply nested to parse")


def facts_for_file(kb: KnowledgeBase, path: Path, data: Optional[bytes] = None, max_bytes: int = 0,
                   links: Optional[dict[str, str]] = None) -> tuple[FileFacts, Optional[Notebook]]:
    """Read and collect one file (what a worker process does). For a notebook the size limit
    applies to its code, its JSON may be larger."""
    notebook_file = path.suffix == ".ipynb"
    source = read_source(path, data, max_bytes * NOTEBOOK_SIZE_FACTOR, too_large_json) if notebook_file \
        else read_source(path, data, max_bytes)
    notebook = None
    if source.text is not None and notebook_file:
        try:
            with python_recursion():  # each cell is compiled, as refused_by_python does for files
                notebook = Notebook.parse(source.text)
        except NotebookError as exc:
            return FileFacts(path=str(path), error=str(exc)), None
        code_size = notebook.code_size()  # its code, not the markers detlint adds
        if max_bytes and code_size > max_bytes:
            return FileFacts(path=str(path), error=too_large(code_size, max_bytes)), None
        source = SourceFile(path, text=notebook.source)
    if source.error is not None or source.text is None:
        return FileFacts(path=str(path), error=source.error or "cannot read file"), None
    facts = collect_text(kb, path, source.text, 0 if notebook is not None else max_bytes, links)
    if notebook is not None:
        facts.runtime = notebook.runtime
        if notebook.legacy is not None and facts.legacy is None:  # Python 2 cells: checked, never fixed
            facts.legacy, facts.legacy_line, facts.legacy_col = notebook.legacy
    return facts, notebook


def selected(code: str, settings: Settings, default_enabled: bool = True) -> bool:
    """ruff/flake8 selection: the longest matching prefix decides; ignore wins a tie. Opt-in
    rules need a selection the user made (``--select DET``, ``extend-select = ["DET208"]``),
    as flake8 treats its default-ignored codes."""
    chosen = settings.select + settings.extend_select if default_enabled or settings.select_explicit \
        else settings.extend_select
    best_select = max((len(p) for p in chosen if p == "ALL" or code.startswith(p)), default=-1)
    best_ignore = max((len(p) for p in settings.ignore if p == "ALL" or code.startswith(p)), default=-1)
    return best_select >= 0 and best_ignore < best_select


@dataclass
class Result:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: int = 0
    internal_errors: list[str] = field(default_factory=list)


class Linter:
    """Lints files for one configuration. ``standalone=False`` leaves selection and ``# noqa``
    to the host (flake8 owns both, and flake8-noqa relies on seeing every report)."""

    def __init__(self, settings: Settings, kb: Optional[KnowledgeBase] = None, standalone: bool = True) -> None:
        self.settings = settings
        self.standalone = standalone
        self.kb = kb or kb_module.load()
        self.evaluator = Evaluator(self.kb, settings)
        self.evaluator.not_training_path = self.not_training
        self.evaluator.facts_of = self.facts_of
        self.evaluator.text_of = self.text_of
        self.evaluator.code_shown = self._shown_in
        self._facts: dict[Path, Optional[FileFacts]] = {}
        self._commands: Optional[dict[Path, list[str]]] = None  # console scripts (commands)
        self._commanded: dict[Path, tuple[FileFacts, FileFacts]] = {}  # facts -> as the command runs them
        self.notebooks: dict[Path, Notebook] = {}
        self._entry_programs: dict[Path, Program] = {}  # full programs is_entry had to build
        self._programs: dict[Path, Program] = {}  # programs built to find those reaching a module
        self._gradient_free: dict[frozenset[Path], dict[str, set[str]]] = {}  # by the files judged
        # tensor methods that return a new value and change nothing (KB group pure-methods)
        self.pure_methods = frozenset(name for name, owners in self.kb.index["method"].items()
                                      if any(owner == "group:pure-methods" for owner, _ in owners))
        self.library_hooks = library_hooks(self.kb)  # what a library calls on a subclass (KB library-hooks)
        self._not_training: dict[Path, bool] = {}  # not_training's answers
        self._kb_roots: Optional[tuple[set[str], set[str]]] = None  # (modules, methods) the KB names
        self._import_index: Optional[ImportIndex] = None
        self._entries: dict[Path, bool] = {}  # is_entry's answers
        self._importing: dict[Path, list[Path]] = {}  # entries_importing's answers
        _REAL.clear()
        self._unlinked: dict[Path, Optional[bytes]] = {}  # first-walk facts, their bytes if read
        self._linking = False
        self.cache: Optional[FactsCache] = None
        self._overrides: dict[Path, str] = {}
        self._named: set[Path] = set()  # files asked for (not just reached by following imports)
        # parsing happens in worker processes, except under flake8, which runs its own
        self._pool: Optional[ParserPool] = None
        self.isolate = standalone
        roots = [settings.project_root / s for s in settings.src]
        self.builder = ProgramBuilder(self.facts_of, ModuleResolver([r for r in roots if r.is_dir()]),
                                      self.outline_of)
        self.builder.provider_tokens = provider_tokens(self.kb)
        stages = StageParameters(self.builder.resolver, self.facts_of, lambda path: self.import_index.importers(path, 1))
        self.evaluator.stage_of, self.evaluator.handed_to = stages.is_stage, stages.handed_to
        self.evaluator.resolve = self.builder.resolver.resolve
        self.context = ProgramContext(settings, self.kb, real(settings.project_root), self.facts_of)
        self.builder.launch_hits = self.context.launch_hits
        self._config_targets: Optional[list[str]] = None
        self.builder.config_targets = self.config_targets
        self.builder.files_naming = lambda name: self.import_index.naming_word(name)
        self.builder.flag_off = self._flag_off
        self._unused: dict[Path, UnusedCode] = {}
        self._path_folders: Optional[list[str]] = None
        self.builder.resolver.path_folders = self.path_folders
        self._outlines: dict[Path, Optional[Outline]] = {}
        self._tokens: Optional[frozenset[str]] = None
        self._makers: Optional[frozenset[str]] = None  # outline.maker_tokens
        self._imported_neighbours: dict[Path, list[Path]] = {}  # folder -> its modules the project imports
        self.marker_owners = {f"group:{n}" for n, g in self.kb.groups.items() if g.marks_entry}
        self._settling: set[Path] = set()  # files whose switch fixes are being settled (fix/raising.py)
        # each file's findings before select/ignore/noqa: a suppressed op still raises under a switch
        self.unfiltered: dict[Path, list[Diagnostic]] = {}
        # groups whose calls are reported where they are, in whichever file (each-site checks)
        self.site_owners = {f"group:{check['uses']}" for rule in self.kb.rules.values()
                            for check in rule.program if check.get("each-site")}

    def path_folders(self) -> list[str]:
        """The folders any project module puts on sys.path (absolute), found once per run from the
        modules whose text mentions it."""
        if self._path_folders is None:
            self._path_folders = []  # a module parsed on the way resolves without them
            found: list[str] = []
            for path in self.import_index.matching(r"path\s*\.\s*(?:insert|append|extend)\s*\(|addsitedir"):
                facts = self.facts_of(path)
                for folder in facts.path_folders if facts is not None else ():
                    absolute = os.path.normpath(os.path.join(path.parent, folder))
                    if absolute not in found and os.path.isdir(absolute):
                        found.append(absolute)
            self._path_folders = found
        return self._path_folders

    # ---- facts ---------------------------------------------------------------------------------
    def set_source(self, path: Path, text: str) -> None:
        """Lint ``text`` as the content of ``path`` (stdin, flake8's lines, notebooks)."""
        self._overrides[real(path)] = text
        self._facts.pop(real(path), None)
        self.unfiltered.clear()
        self._entry_programs.clear()  # built from the text before
        self._entries.clear()
        self._importing.clear()
        self._programs.clear()
        self._gradient_free.clear()
        self.builder.forget()

    def text_of(self, path: Path) -> str:
        """The text being checked as ``path`` (what a fix has written so far, or the file's)."""
        if real(path) in self._overrides:
            return self._overrides[real(path)]
        data, _ = read_bytes(path)
        return (read_source(path, data).text or "") if data is not None else ""

    def set_error(self, path: Path, facts: FileFacts) -> None:
        self._facts[real(path)] = facts

    def facts_of(self, path: Path) -> Optional[FileFacts]:
        key = real(path)
        if key not in self._facts:
            self._facts[key] = self._collect(key)
        facts = self._facts[key]
        if facts is not None and key in self.commands and facts.error is None:
            return self._as_command(key, facts)
        return facts

    @property
    def commands(self) -> dict[Path, list[str]]:
        """The project's command modules (console scripts) and the functions they call."""
        if self._commands is None:
            self._commands = console_scripts.declared(real(self.settings.project_root))
        return self._commands

    def _as_command(self, path: Path, facts: FileFacts) -> FileFacts:
        """A command module's facts as the command runs it: its module level, then the
        functions the command calls, as a main guard would (not when another module imports it)."""
        made = self._commanded.get(path)
        if made is not None and made[0] is facts:
            return made[1]
        end = self.text_of(path).count("\n") + 2
        calls = [CallSite(name, end, 0, MAIN_GUARD) for name in self.commands[path] if name in facts.functions]
        run = replace(facts, calls=facts.calls + calls, main_guard=facts.main_guard or (end if calls else None))
        self._commanded[path] = (facts, run)
        return run

    def outline_of(self, path: Path) -> Optional[Outline]:
        """A cheap outline of a module the program imports (None: parse it in full)."""
        key = real(path)
        if key in self._facts or key.suffix != ".py" or self._outside(key):
            return None  # already parsed (the facts say more), a notebook, or not to be read
        if key not in self._outlines:
            self._outlines[key] = self._make_outline(key)
        return self._outlines[key]

    def _make_outline(self, path: Path) -> Optional[Outline]:
        if path in self._overrides:
            text: Optional[str] = self._overrides[path]
            data, cache_key = None, None
        else:
            data, _ = read_bytes(path, self.max_bytes)
            if data is None:
                return None
            cache_key = self.cache.key(path, data) if self.cache is not None else None
            if cache_key is not None:
                cached = self.cache.get_outline(cache_key)
                if cached is not None:
                    return cached
            text = read_source(path, data).text
        if text is None:
            return None
        if self._tokens is None:
            self._tokens = kb_tokens(self.kb)
        sketch = outline(text, self._tokens, EXTERNAL_MODULES | self.builder_framework_tops)
        if cache_key is not None and self.cache is not None:
            self.cache.put_outline(cache_key, sketch)
        return sketch

    @property
    def builder_framework_tops(self) -> frozenset[str]:
        frameworks = self.kb.groups.get("frameworks")
        return frozenset(m.split(".")[0] for m in frameworks.imports) if frameworks else frozenset()

    @property
    def max_bytes(self) -> int:
        return self.settings.max_file_size * 1024

    def _outside(self, path: Path) -> bool:
        """Reached through a symlink that leaves the project (an import's module; files named
        on the command line are read wherever they are)."""
        root = real(self.settings.project_root)
        return path not in self._named and path not in self._overrides and root not in path.parents

    def _collect(self, path: Path) -> FileFacts:
        if self._outside(path):
            return FileFacts(path=str(path), error="outside the project (reached through a symlink); not read")
        self.prefetch([path], 1, self.cache)  # project modules a program imports are cached too
        facts = self._facts.get(path)
        assert facts is not None
        return facts

    def _parse(self, tasks: list[Task], jobs: int) -> list[tuple[FileFacts, Optional[Notebook]]]:
        if not self.isolate:
            return run_deep(work_here, self.kb, tasks)
        if self._pool is None:
            self._pool = ParserPool(self.kb, self.settings.file_timeout)
            weakref.finalize(self, self._pool.close)
        return self._pool.run(tasks, jobs)

    def close(self) -> None:
        """Stop the parser workers (a later parse starts new ones)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def prefetch(self, files: list[Path], jobs: int = 1, cache: Optional[FactsCache] = None) -> None:
        """Collect the facts of many files up front: from the cache, else in ``jobs`` processes."""
        todo: list[tuple[Path, Optional[str], Task]] = []
        fresh: list[Path] = []
        for path in files:
            key = real(path)
            if key in self._facts:
                continue
            fresh.append(key)
            if key in self._overrides:
                todo.append((key, None, Task(str(key), text=self._overrides[key], max_bytes=self.max_bytes)))
                continue
            problem = file_problem(Path(path), self.max_bytes)  # the path as given: a dangling link says so
            if problem is not None:
                self._facts[key] = FileFacts(path=str(key), error=problem)
                continue
            data, cache_key = None, None
            if cache is not None:
                data, _ = read_bytes(key, self.max_bytes * NOTEBOOK_SIZE_FACTOR)
                self._unlinked[key] = data
                if data is not None:
                    cache_key = cache.key(key, data)
                    if self._from_cache(key, data, cache.get(cache_key, self._fits_kb)):
                        continue
            todo.append((key, cache_key, Task(str(key), data=data, max_bytes=self.max_bytes)))
        if todo:
            results = self._parse([task for _, _, task in todo], jobs if len(todo) >= 2 * jobs else 1)
            for (path, cache_key), (facts, notebook) in zip([(p, k) for p, k, _ in todo], results):
                self._facts[path] = facts
                if notebook is not None:
                    self.notebooks[path] = notebook
                if cache is not None and cache_key is not None and not transient(facts):
                    cache.put(cache_key, facts)
        for key in fresh:
            self._unlinked.setdefault(key, None)
        self._link(fresh, cache)

    def _link(self, paths: list[Path], cache: Optional[FactsCache]) -> None:
        """Walk files again if they take names from project modules (a star import, a framework
        re-exported by a shim, a keras.Model subclass), now knowing what those names are. The
        modules they take them from are linked first, so shims of shims resolve too."""
        if self._linking:
            return  # a module first read while linking: the linking under way takes it
        self._linking = True
        try:
            link_in_order(paths, self._unlinked, lambda path, data: self._link_one(path, data, cache))
        finally:
            self._linking = False

    def _link_one(self, path: Path, data: Optional[bytes], cache: Optional[FactsCache]) -> list[Path]:
        """Link one file, or name the modules it takes names from that are to be linked first."""
        facts = self._facts.get(path)
        if facts is None or facts.error is not None or not (facts.star_imports or facts.imports):
            return []
        first: list[Path] = []

        def exporter(module: Path) -> Optional[FileFacts]:
            found = self.facts_of(module)
            if real(module) in self._unlinked:
                first.append(real(module))
            return self._facts.get(real(module), found)

        frameworks = self.kb.groups["frameworks"].imports if "frameworks" in self.kb.groups else ()
        if self._makers is None:
            self._makers = maker_tokens(self.kb)
        guess = OutlineExports(self._known_exports, self.outline_of, self.builder.resolver, frameworks, self._makers)
        links = links_for(path, facts, self.builder.resolver, exporter, frameworks, guess.export_of, guess.factories)
        if first or not links:
            return first
        cache_key = cache.key(path, data, links) if cache is not None and data is not None else None
        if cache_key is not None and self._from_cache(path, data or b"", cache.get(cache_key, self._fits_kb)):
            return []
        task = Task(str(path), text=self._overrides.get(path), data=data, max_bytes=self.max_bytes, links=links)
        ((linked, notebook),) = self._parse([task], 1)
        self._facts[path] = linked
        if notebook is not None:
            self.notebooks[path] = notebook
        if cache is not None and cache_key is not None:
            cache.put(cache_key, linked)
        return []

    def _known_exports(self, module: Path) -> Optional[dict[str, str]]:
        """A parsed and linked module's exports (None: not yet, or not fully)."""
        key = real(module)
        facts = self._facts.get(key)
        if facts is None or key in self._unlinked:
            return None
        return {} if facts.error else facts.exports

    def _from_cache(self, path: Path, data: bytes, facts: Optional[FileFacts]) -> bool:
        if facts is None:
            return False
        if path.suffix == ".ipynb" and facts.error is None:
            try:
                self.notebooks[path] = Notebook.parse(data.decode("utf-8", errors="replace"))
            except (NotebookError, ValueError, TypeError):
                return False
        self._facts[path] = facts
        return True

    def _fits_kb(self, facts: FileFacts) -> bool:
        """A cached entry may only name matchers this knowledge base has."""
        try:
            return all(0 <= hit.index < len(self.kb.owner_matchers(hit.owner))
                       for hit in facts.hits + facts.worker_hits)
        except (KeyError, ValueError):
            return False

    # ---- entries and programs ----------------------------------------------------------------------
    def is_entry(self, path: Path, facts: FileFacts) -> bool:
        key = real(path)
        if key not in self._entries:
            self._entries[key] = self._is_entry(path, facts)
        return self._entries[key]

    def _is_entry(self, path: Path, facts: FileFacts) -> bool:
        if facts.main_guard is not None or path.suffix == ".ipynb":
            return True
        try:
            rel = real(path).relative_to(self.settings.project_root).as_posix()
        except ValueError:
            rel = path.as_posix()
        if any(fnmatch.fnmatch(rel, pattern) for pattern in self.settings.entry_points):
            return True
        if not any(h.scope is None for h in facts.hits) and not any(c.scope is None for c in facts.calls):
            return False
        program = self.builder.build(path, local_only=True)
        # what only a transformed function runs (``update = jax.jit(_update)``) runs where a
        # program calls it: a module that does only this at its top level is a library
        later = {c.line for c in facts.calls if c.scope is None and c.deferred} \
            - {c.line for c in facts.calls if c.scope is None and not c.deferred}

        def runs_here(th: TraceHit) -> bool:
            return th.hit.owner in self.marker_owners and not (th.via and th.via[0][0] == program.entry
                                                                and th.via[0][1] in later)
        if any(runs_here(th) for th in program.trace):
            return True
        # a script that trains through project code (`from nn import train; train(cfg)`) is a
        # program too: follow its module-level calls into project modules
        resolve = self.builder.resolver.resolve
        if not any(c.scope is None and "." in c.target and (
                resolve(path, c.target) or self.builder.imported_methods(path, facts, c.target, self.facts_of))
                for c in facts.calls):
            return False
        program = self.builder.build(path)
        self._entry_programs[real(path)] = program  # _lint_file takes it instead of building it again
        return any(runs_here(th) for th in program.trace)

    def config_targets(self) -> list[str]:
        """The classes the project's configuration files name (read once per run, when a
        program instantiates from a config)."""
        if self._config_targets is None:
            self._config_targets = config_targets(real(self.settings.project_root))
        return self._config_targets

    def not_training(self, path: Path) -> bool:
        """Is ``path`` a test, benchmark, demo, ... (the ``not-training`` patterns)? Outside the
        project only its name is matched. A file named like a test (``*_test.py``) is one when
        its code is (``looks_like_test``). Asked for every module of a program: kept per path."""
        answer = self._not_training.get(path)
        if answer is None:
            try:
                rel = real(path).relative_to(self.settings.project_root).as_posix()
            except ValueError:
                rel = path.name
            patterns = self.settings.not_training
            answer = not_training(rel, [p for p in patterns if p not in TEST_FILE_NAMES])
            if not answer and not_training(rel, [p for p in patterns if p in TEST_FILE_NAMES]):
                facts = self.facts_of(path) if path.is_file() else None
                answer = facts is None or facts.error is not None or looks_like_test(facts)
            self._not_training[path] = answer
        return answer

    def launches_other_program(self, path: Path, training_calls: list[TraceHit]) -> bool:
        """A launcher (a SLURM or submitit script calling ``main_vicreg.main(args)``) whose training
        runs entirely in another program of the project: that program's findings are its
        findings, reported once, there (whether or not this run checks that file: flake8 and
        the CLI agree, and pre-commit reports them when the training script changes)."""
        where = {th.path for th in training_calls}
        if len(where) != 1:
            return False
        other = next(iter(where))
        facts = self.facts_of(other) if other != real(path) else None
        # a script of its own (a main guard), not a library module whose level runs code; and
        # one whose main guard sets nothing itself (a seed there never runs for the launcher)
        return facts is not None and facts.error is None and bool(facts.main_guard) \
            and not any(h.scope == MAIN_GUARD for h in facts.hits) and self.is_entry(other, facts)

    def program_trains(self, program: Program, trains: Optional[bool] = None) -> bool:
        """May the training rules judge this program? Not when its entry is a test, benchmark or
        demo by path, nor when it only runs inference (predicts, evaluates) and never trains."""
        if self.not_training(program.entry):
            return False
        if trains is None:
            with self.evaluator.versions(self.targets_of(program)):
                trains = self.evaluator.trains(program, self.facts_of)
        return trains

    # ---- what a program runs with (program_context.py) ----------------------------------------
    def targets_of(self, program: Program) -> dict[str, Target]:
        return self.context.targets_of(program)

    def frameworks_used(self, modules: list[Path]) -> frozenset[str]:
        return self.context.frameworks_used(modules)

    def module_targets(self, path: Path) -> dict[str, Target]:
        module = real(path)
        return self.context.module_targets(module, lambda: self.programs_reaching(module))

    def display(self, path: Path) -> str:
        try:
            return os.path.relpath(path, Path.cwd()) if path.is_absolute() else str(path)
        except ValueError:
            return str(path)

    # ---- the run -------------------------------------------------------------------------------------
    def lint_file(self, path: Path, display: Optional[str] = None, map_cells: bool = True,
                  program_only: bool = False) -> list[Diagnostic]:
        """Findings for one file; notebook findings carry their cell and in-cell line unless
        ``map_cells`` is False (the fixer works on the joined program text). ``program_only``:
        only the findings of the program it is the entry of (none for a library module)."""
        self._named.add(real(path))
        diags = self._lint_file(path, display or str(path), program_only)
        if real(path) not in self._settling:  # a switch fix in a program with ops that raise under it
            self._settling.add(real(path))
            try:
                settle(self, path, diags, self._settling)
            finally:
                self._settling.discard(real(path))
        notebook = self.notebooks.get(real(path))
        if map_cells and notebook is not None and real(path) not in self._overrides:
            for diag in diags:
                magic = notebook.magic_line(diag.line)
                cell, line = notebook.locate(diag.line)
                end_cell, end_line = notebook.locate(diag.end_line)
                diag.cell, diag.line = cell, line
                diag.end_line = end_line if end_cell == cell else line
                shift = notebook.dedent.get(cell - 1, 0)
                diag.col, diag.end_col = (0, 0) if magic else (diag.col + shift, diag.end_col + shift)
            diags.sort(key=Diagnostic.sort_key)
        return diags

    def _legacy_syntax(self, facts: FileFacts, display: str, entry: bool) -> list[Diagnostic]:
        """DET001 for a file that only Python 3.6 or earlier runs (checked as it reads it). A
        Python 2 file is checked as its Python 3 equivalent; only a program's own file says so
        (a helper module's print statements hide nothing), at ``possible``: shown on request."""
        reserved = facts.legacy in ("async", "await")  # stand_ins.OLD_NAMES (not imported: libcst)
        if facts.legacy is None or not (reserved or entry):
            return []
        rule = self.kb.rules.get("DET001")
        if reserved:
            message = (f"file cannot run on Python 3.7 or later: `{facts.legacy}` is a reserved word there; rename "
                       f"it (see `detlint rule DET001`). The rest of the file was checked as Python 3.6 reads it")
        else:
            article = "an" if facts.legacy[:1] in "aeiou" else "a"
            message = (f"program written for Python 2 ({article} {facts.legacy}): it was checked as its Python 3 "
                       f"equivalent, and no fix is written into it")
        diag = Diagnostic(code="DET001", name=rule.name if rule else "unparsable-file", message=message,
                          path=display, line=facts.legacy_line, col=facts.legacy_col, end_line=facts.legacy_line,
                          end_col=facts.legacy_col + (len(facts.legacy) if reserved else 0))
        if not reserved:  # the file was checked whole: a notice, not a problem with what training does
            lower(diag, "possible", "a notice: nothing in the file was left unchecked")
        return [diag]

    def _lint_file(self, path: Path, display: str, program_only: bool = False) -> list[Diagnostic]:
        facts = self.facts_of(path)
        assert facts is not None
        if facts.error is not None and program_only:
            return []
        if facts.error is not None:
            rule = self.kb.rules.get("DET001")
            diag = Diagnostic(code="DET001", name=rule.name if rule else "unparsable-file",
                              message=f"file cannot be checked: {facts.error}", path=display,
                              line=facts.error_line, col=facts.error_col, end_line=facts.error_line,
                              end_col=facts.error_col)
            if self.not_training(path) and not self.imported(path):  # a unit test no program imports
                lower(diag, "possible", "a file the settings say does not train (not-training)")
            return self._filter([diag], facts, path)
        try:
            notebook = self.notebooks.get(real(path))
            cell_errors = self._cell_errors(notebook, display, facts) if notebook is not None else []
            entry = self.is_entry(path, facts)
            built = self._entry_programs.pop(real(path), None)
            program = (built or self.builder.build(path)) if entry else None
            targets = self.targets_of(program) if program is not None else self.module_targets(path)
            with self.evaluator.versions(targets, self.frameworks_used(program.modules if program else [path])):
                # an inference-only program is not asked about backprop; a library module may be trained
                training_calls = self.evaluator.calls_of(program, self.facts_of, "training") if program is not None else []
                trains = bool(training_calls) if program is not None else None
                training = not self.not_training(path) and (
                    self.program_trains(program, trains) if program is not None else self.library_trained(path, facts))
                diags = [] if program_only else self._file_diagnostics(path, facts, display, program, trains, training,
                                                                       training_calls)
                if program is not None and not self.launches_other_program(path, training_calls):
                    diags += self.evaluator.program_diagnostics(program, display, self.where, self.facts_of, training)
            if not program_only:  # a script other programs import has their sites too (once each)
                seen = {(d.code, d.line, d.col) for d in diags}
                diags += [d for d in self._site_diagnostics(path, facts, display, program)
                          if (d.code, d.line, d.col) not in seen]
            diags += [] if program_only else cell_errors + self._legacy_syntax(facts, display, program is not None)
            if facts.legacy is not None:  # read with stand-in names: no fix is written into it
                for diag in diags:
                    diag.fix_spec, diag.edits = None, []
                    diag.fix_safety = "display" if diag.fix_safety else None
        except Exception as exc:  # a crash in one rule must be visible, not silent
            diag = Diagnostic(code="DET000", name="internal-error",
                              message=f"internal error while checking {display}: {type(exc).__name__}: {exc}",
                              path=display, line=1, col=0, end_line=1, end_col=0)
            return [diag]
        self.unfiltered[real(path)] = diags
        return self._filter(diags, facts, path)

    def _site_diagnostics(self, path: Path, facts: FileFacts, display: str,
                          own: Optional[Program] = None) -> list[Diagnostic]:
        """Findings at this module's own call sites that depend on the programs reaching it
        (an unseeded shuffle in a program that sets no seed): each site once, naming the first
        program by path and counting the others."""
        if not any(h.owner in self.site_owners for h in facts.hits) or self.not_training(path):
            return []
        found: dict[tuple[str, int, int], list[Program]] = {}
        first: dict[tuple[str, int, int], Diagnostic] = {}
        for program in self.programs_reaching(path):
            if program is own or program.entry == real(path) or not self.program_trains(program):
                continue
            name = f"the program ({self._relative(program.entry)})"
            with self.evaluator.versions(self.targets_of(program), self.frameworks_used(program.modules)):
                found_here = self.evaluator.program_diagnostics(program, display, self.where, self.facts_of,
                                                                sites_in=real(path), program_name=name)
            for diag in found_here:
                key = (diag.code, diag.line, diag.col)
                found.setdefault(key, []).append(program)
                first.setdefault(key, diag)
        out = []
        for key, programs in found.items():
            if len(programs) == 1:
                out.append(first[key])
                continue
            others = len(programs) - 1
            name = f"the program ({self._relative(programs[0].entry)} and {others} other{'s' if others > 1 else ''})"
            with self.evaluator.versions(self.targets_of(programs[0]), self.frameworks_used(programs[0].modules)):
                again = self.evaluator.program_diagnostics(programs[0], display, self.where, self.facts_of,
                                                           sites_in=real(path), program_name=name)
            out.extend(d for d in again if (d.code, d.line, d.col) == key)
        return out

    def library_trained(self, path: Path, facts: FileFacts) -> bool:
        """May a library module's code run in training? Not when the project's programs that
        import it are all tests, benchmarks, converters or programs that never train (a model's
        ``generate_step`` reached only by a conversion script). A module no program imports is
        the project's API, which its users may train with: it is judged as training code."""
        if not any(h.owner.startswith(("rule:", "op:")) for h in facts.hits):
            return True  # no file finding to judge: no need to look for programs
        module, reached = real(path), False
        for entry in self.entries_importing(module):
            if self.not_training(entry):
                reached = True  # a test or a converter: it imports the module, it does not train
                continue
            program = self.program_for(entry)
            if module in program.modules:
                if self.program_trains(program):
                    return True
                reached = True
        return not reached and not self.left_out_of_package(module)

    def _backprop(self, hit: Hit) -> bool:
        kind, _, key = hit.owner.partition(":")
        return kind == "op" and self.kb.ops[key].phase == "backprop"

    def left_out_of_package(self, module: Path) -> bool:
        """Is ``module`` a package's module that no file imports, in a package the project's
        programs do import (``models/old_xception.py`` beside the models ``models/__init__.py``
        names; in a folder without ``__init__.py``, ``tasks/panoptic.py`` beside the
        ``tasks/detection.py`` a program imports)? No program can run it: it is not the
        project's API either."""
        init = module.parent / "__init__.py"
        if module.name == "__init__.py" or self.import_index.importers(module, 1):
            return False
        if init.is_file():
            return bool(self.entries_importing(init))
        # a flat repository's root holds scripts and modules alike: only a subfolder counts
        if real(module.parent) == real(self.settings.project_root) \
                or not any(self.entries_importing(other) for other in self._neighbours(module)):
            return False
        # a module a string names may be loaded by name: func='loss.G_wgan', 'envs.pinpad:PinPad',
        # import_module(f"tasks.{name}"), "tasks." + name; where the project imports by name at
        # all (import_module, __import__), a bare "segmentation" may be one of those names too
        stem, folder = re.escape(module.stem), re.escape(module.parent.name)
        bare = rf"|{stem}['\"]" if self.import_index.matching(r"\b(?:import_module|__import__)\(") else ""
        named = [p for p in self.import_index.matching(
            rf"['\"](?:[\w.]*(?:\.{stem}\b|\b{stem}[.:]\w)|{folder}\.(?:\{{|['\"]){bare})") if real(p) != real(module)]
        return not named

    def _neighbours(self, module: Path) -> list[Path]:
        """The other modules of ``module``'s folder that files of the project import."""
        folder = module.parent
        if folder not in self._imported_neighbours:
            try:
                found = sorted(p for p in folder.iterdir() if p.suffix == ".py")[:MAX_NEIGHBOURS]
            except OSError:
                found = []
            self._imported_neighbours[folder] = [p for p in found if self.import_index.importers(p, 1)]
        return [p for p in self._imported_neighbours[folder] if p != module]

    def _file_diagnostics(self, path: Path, facts: FileFacts, display: str, program: Optional[Program],
                          trains: Optional[bool], training: bool,
                          training_calls: Optional[list[TraceHit]] = None) -> list[Diagnostic]:
        """The file rules' findings. A script whose own program does not train (a model module's
        ``__main__`` demo) still has what the programs importing it run judged as training code;
        in a library module, what only programs that never train run (a demo's drawing helper) is
        not; the ops of functions the training programs never differentiate do not count
        (gradients.py)."""
        if facts.safe_defaults:  # what a parameter no file passes would make a problem never happens
            here = real(path)
            unset = {(line, col, f"when {word} is ") for line, col, word in facts.safe_defaults
                     if all(p == here for p in self.import_index.naming_word(word))}
            facts = replace(facts, hits=[h for h in facts.hits if not any(
                (h.line, h.col) == (line, col) and note in h.detail for line, col, note in unset)])
        if any(h.needs is not None for h in facts.hits):  # a match only where a caller passes its value
            here = real(path)
            runs = ([program] if program is not None else []) + self.programs_reaching(path)
            held = {id(th.hit) for p in runs for th in p.trace if th.path == here}
            facts = replace(facts, hits=[h for h in facts.hits if h.needs is None or id(h) in held])
        if self.not_training(path) or not any(h.owner.startswith(("op:", "rule:")) for h in facts.hits):
            return self.evaluator.file_diagnostics(display, facts, trains, training, program)
        own = program is not None and training
        reaching = [] if own else [p for p in self.programs_reaching(path) if p.entry != real(path)]
        others = [p for p in reaching if self.program_trains(p)]
        here, diags = real(path), []
        if program is None and training:
            trained = {id(th.hit) for p in others for th in p.trace if th.path == here}
            shown = {id(th.hit) for p in reaching if not any(p is o for o in others)
                     for th in p.trace if th.path == here}
            if shown - trained:  # judged as training code without them, as other code with them
                diags = self.evaluator.file_diagnostics(display, facts, trains, False, program)
                facts = replace(facts, hits=[h for h in facts.hits if id(h) not in shown - trained])
            # layers every training program builds into a frozen model only: their backward never runs
            backward = {id(th.hit) for p in others for th in p.trace if th.path == here
                        and not self.evaluator.frozen(th, p)}
            frozen = trained - backward
            if frozen:
                facts = replace(facts, hits=[h for h in facts.hits if id(h) not in frozen or not self._backprop(h)])
        runners = [program] if own else others
        no_grad = self.gradient_free(path, facts, runners) if training else frozenset()
        # a script's functions it never names never run (a loss kept from an earlier version);
        # the project's imports are read only when such a function holds an op
        dead = set(facts.unreferenced) & {top_scope(h.scope) for h in facts.hits if h.owner.startswith("op:")}
        if program is not None and dead and not self.imported(path):  # none of their ops runs, forward or back
            facts = replace(facts, hits=[h for h in facts.hits
                                         if not (top_scope(h.scope) in dead and h.owner.startswith("op:"))])
        extra = self.evaluator.file_diagnostics(display, facts, trains, training, program, no_grad,
                                                shared_switches(others) if program is None else ())
        if program is not None and not training and others:
            # only what those programs run: not the script's own demo under its main guard, nor
            # the functions they never call
            reached = {id(th.hit) for p in others for th in p.trace if th.path == here}
            ran = replace(facts, hits=[h for h in facts.hits if id(h) in reached])
            extra += self.evaluator.file_diagnostics(display, ran, True, True, program,
                                                     self.gradient_free(path, facts, others))
        seen: set[tuple[str, int, int]] = set()
        out = []
        for diag in diags + extra:
            if (diag.code, diag.line, diag.col) not in seen:
                seen.add((diag.code, diag.line, diag.col))
                out.append(diag)
        if training and out:  # how surely a training program runs each finding's line
            index = self.import_index
            configured = {t.rsplit(".", 1)[-1] for t in self.config_targets()}
            program_files = {m for p in runners if p is not None for m in p.modules} - {here}

            def named_in_programs(name: str) -> str:
                # in code, not a comment or docstring; and not where that file's own calls of
                # the name were seen to run another definition (`from utils import *`)
                elsewhere = {site[0] for p in runners if p is not None for (where, scope), sites
                             in p.callers.items() if scope == name and where != here for site in sites}
                found = [f for f in index.using_in_code(name) if f in program_files and f not in elsewhere]
                return self._relative(found[0]) if found else ""
            reach = FileReach(here, [p for p in runners if p is not None], facts.unreferenced,
                              lambda name: name in configured or bool(set(index.naming_word(name)) - {here}),
                              imported=program is not None or bool(index.importers(here, 1)), entry=own,
                              defined_at=facts.functions, configured=configured,
                              named_in_programs=named_in_programs,
                              unused=self._unused_code(here, facts).reason)
            reach.apply(out, facts.hits)
        if own and out:  # rules about training runs are as sure as the program's training is
            level, why = of_training(program, training_calls or [])
            for diag in out:
                rule = self.kb.rules.get(diag.code)
                if rule is not None and rule.training:
                    lower(diag, level, why)
        return out

    @property
    def import_index(self) -> ImportIndex:
        """The import statements of the project's files, read once per run."""
        if self._import_index is None:
            self._import_index = ImportIndex(real(self.settings.project_root))
        return self._import_index

    def imported(self, path: Path) -> bool:
        """Does another file of the project name this module in an import?"""
        return bool(self.import_index.importers(real(path), 1))

    def gradient_free(self, path: Path, facts: FileFacts, programs: list[Program]) -> frozenset[str]:
        """This file's functions that never get a gradient (gradients.py), judged over the call
        sites in the modules of the training programs that run it, tests and demos left out."""
        files = {real(path): facts}
        for prog in programs:
            for module in prog.modules:
                other = self.facts_of(module) if module not in files and not self.not_training(module) else None
                if other is not None and other.error is None:
                    files[module] = other
        key = frozenset(files)
        if key not in self._gradient_free:
            self._gradient_free[key] = gradients.gradient_free(files.values(), self.pure_methods)
        return frozenset(self._gradient_free[key].get(facts.path, ()))

    def entries_importing(self, module: Path) -> list[Path]:
        """Program entries of the project that may import ``module`` (by the text of their
        imports, up to the depth a program follows them), in path order."""
        module = real(module)
        if module in self._importing:
            return self._importing[module]
        out = []
        for path in sorted(self.import_index.importers(module, MAX_IMPORT_DEPTH)):
            facts = self.facts_of(path)
            if facts is not None and facts.error is None and self.is_entry(path, facts):
                out.append(path)
        self._importing[module] = out
        return out

    def program_for(self, entry: Path) -> Program:
        program = self._entry_programs.get(entry) or self._programs.get(entry)
        if program is None:
            program = self._programs[entry] = self.builder.build(entry)
        return program

    def programs_reaching(self, module: Path) -> list[Program]:
        """The programs of the project that run ``module`` (their entries in path order)."""
        module = real(module)
        programs = (self.program_for(entry) for entry in self.entries_importing(module))
        return [program for program in programs if module in program.modules]

    def _cell_errors(self, notebook: Notebook, display: str, facts: FileFacts) -> list[Diagnostic]:
        """DET001 for each cell that does not parse; the other cells are still checked. A cell
        that names nothing detlint checks for (a shell command without ``!``, pasted output) can
        hide no finding: ``possible``."""
        out = []
        starts = {cell: i + 1 for i, (cell, n) in enumerate(notebook.line_map) if n == 0}
        for index, line, reason in notebook.cell_errors:
            program_line = starts.get(index, 0) + line
            detail = reason if reason == NOT_TEXT else f"syntax error: {reason}"
            diag = Diagnostic(code="DET001", name="unparsable-file", path=display, line=program_line, col=0,
                              end_line=program_line, end_col=0,
                              message=f"cell cannot be checked: {detail}; the other cells were")
            source = notebook.data["cells"][index].get("source", "") if reason != NOT_TEXT else None
            text = "".join(source) if isinstance(source, list) and all(isinstance(x, str) for x in source) else source
            if isinstance(text, str) and not self._names_checked(text, facts):
                lower(diag, "possible", "the cell names nothing detlint checks for (a shell command, pasted output)")
            out.append(diag)
        return out

    def _names_checked(self, text: str, facts: FileFacts) -> bool:
        """Does ``text`` use a name the knowledge base matches: a module it names (or an alias the
        file imports one as) followed by ``.`` or ``(``, or one of its methods called (``.fit(``)?"""
        if self._kb_roots is None:
            names = self.kb.all_names()
            self._kb_roots = {n.split(".")[0] for n in names if "." in n}, {n for n in names if "." not in n}
        modules, methods = self._kb_roots
        # the cell's own imports too: it was not parsed, so they are not among the file's
        imported = {m.group(1) or m.group(2) for m in re.finditer(
            r"(?m)^\s*(?:from\s+([A-Za-z_]\w*)[\w.]*\s+import|import\s+([A-Za-z_]\w*))", text)}
        if imported & modules:
            return True
        aliases = {alias for alias, qual in facts.imports.items() if qual.split(".")[0] in modules}
        used = {m.group(1) for m in re.finditer(r"(?<![.\w])([A-Za-z_]\w*)\s*[.(]", text)}
        called = {m.group(1) for m in re.finditer(r"\.\s*([A-Za-z_]\w*)\s*\(", text)}
        return bool(used & (modules | aliases) or called & methods)

    def where(self, path: Path, line: int) -> str:
        """``models/net.py:12``, or ``nb.ipynb:cell 4:3`` for a notebook."""
        notebook = self.notebooks.get(real(path))
        if notebook is not None and real(path) not in self._overrides:
            cell, in_cell = notebook.locate(line)
            return f"{self._relative(path)}:cell {cell}:{in_cell}"
        return f"{self._relative(path)}:{line}"

    def _unused_code(self, path: Path, facts: FileFacts) -> UnusedCode:
        found = self._unused.get(path)
        if found is None or found.facts is not facts:
            found = self._unused[path] = UnusedCode(path, facts, self.import_index, self.facts_of, self.library_hooks)
        return found

    def _flag_off(self, path: Path, facts: FileFacts, line: int, col: int) -> bool:
        return bool(self._unused_code(path, facts).flag_off_at(line, col))

    def _relative(self, path: Path) -> str:
        try:
            return real(path).relative_to(self.settings.project_root).as_posix()
        except ValueError:
            return str(path)

    def _filter(self, diags: list[Diagnostic], facts: FileFacts, path: Path) -> list[Diagnostic]:
        # below the configured confidence: not shown, by the CLI and flake8 alike
        diags = [d for d in diags if at_least(d.confidence, self.settings.min_confidence)]
        if not self.standalone:
            return sorted(diags, key=Diagnostic.sort_key)
        ignored = self._ignored_in(path)
        out = []
        for diag in diags:
            rule = self.kb.rules.get(diag.code)
            if diag.code != "DET000" and not selected(diag.code, self.settings,
                                                      rule.default_enabled if rule else True):
                continue
            if any(diag.code.startswith(c) for c in ignored):
                continue
            if is_suppressed(diag, facts):
                continue
            out.append(diag)
        return sorted(out, key=Diagnostic.sort_key)

    def _ignored_in(self, path: Path) -> set[str]:
        """The codes ``per-file-ignores`` silences in ``path``."""
        rel = self._relative(path)
        ignored: set[str] = set()
        for pattern, codes in self.settings.per_file_ignores.items():
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(path.name, pattern):
                ignored.update(codes)
        return ignored

    def _shown_in(self, code: str, path: Path) -> bool:
        """Is a finding of ``code`` in ``path`` selected and not ignored there? (flake8 applies
        its own selection: there every code counts as shown.)"""
        if not self.standalone:
            return True
        rule = self.kb.rules.get(code)
        return selected(code, self.settings, rule.default_enabled if rule else True) \
            and not any(code.startswith(c) for c in self._ignored_in(path))

    def program_versions_table(self, files: list[Path], jobs: int = 1, cache: Optional[FactsCache] = None,
                               relative_to: Optional[Path] = None,
                               shown: Optional[dict[str, Target]] = None) -> dict[str, dict[str, str]]:
        """For --show-settings: the programs among ``files`` whose versions differ from the
        versions shown for the project (``shown``; else their own settings group's), each with
        those versions and where they came from, by path relative to ``relative_to`` (else this
        project's root)."""
        table: dict[str, dict[str, str]] = {}
        try:
            self.prefetch(files, jobs, cache)
            for path in files:
                facts = self.facts_of(path)
                if facts is None or facts.error is not None or not self.is_entry(path, facts):
                    continue
                row = self.context.differing(self._entry_programs.get(real(path)) or self.program_for(real(path)),
                                             shown)
                if row:
                    try:
                        name = real(path).relative_to(real(relative_to)).as_posix() if relative_to else self._relative(path)
                    except ValueError:
                        name = self._relative(path)
                    table[name] = row
        finally:
            self.close()
        return table

    def run(self, files: list[Path], jobs: int = 1, cache: Optional[FactsCache] = None) -> Result:
        result = Result(files=len(files))
        self.cache = cache
        self._named.update(real(path) for path in files)
        try:
            self.prefetch(files, jobs, cache)
            for path in files:
                result.diagnostics.extend(self.lint_file(path, self.display(path)))
        finally:
            self.close()
        result.diagnostics.sort(key=Diagnostic.sort_key)
        return result


# modules a unit test imports (the test runner's, or its helpers')
TEST_MODULES = ("unittest", "pytest", "absl.testing", "nose", "hypothesis", "tensorflow.test", "torch.testing",
                "numpy.testing", "chex")


def looks_like_test(facts: FileFacts) -> bool:
    """Is a file's code a unit test's: a test framework imported, a ``test_...`` function or a
    ``Test...`` class defined? (A training script named ``add_test.py`` with a ``def test():``
    that evaluates is none of these.)"""
    if any(qual == m or qual.startswith(m + ".") for qual in facts.imports.values() for m in TEST_MODULES):
        return True
    return any(name.startswith("test_") for name in facts.functions if "." not in name) or any(
        name.startswith("Test") or name.endswith(("Test", "Tests", "TestCase"))
        or any(method.startswith("test") for method in methods) for name, methods in facts.classes.items())


def is_suppressed(diag: Diagnostic, facts: FileFacts) -> bool:
    if facts.file_noqa:
        return True
    if diag.line not in facts.noqa:
        return False
    codes = facts.noqa[diag.line]
    return codes is None or any(diag.code.startswith(c) for c in codes)


def hits_of(facts: FileFacts, owner: str) -> list[Hit]:
    return [h for h in facts.hits if h.owner == owner]


def shared_switches(programs: list[Program]) -> list[Hit]:
    """The group matches on the default path of every one of ``programs`` (a determinism switch
    each training program that runs a library module sets): they count in that module too."""
    if not programs:
        return []
    common = set.intersection(*({th.hit.owner for th in p.all_hits if not th.off_default
                                 and th.hit.owner.startswith("group:")} for p in programs))
    return [th.hit for th in programs[0].all_hits if th.hit.owner in common and not th.off_default]
