"""A lint run: read each file once, collect its facts, build programs, evaluate, filter."""
from __future__ import annotations

import fnmatch
import io
import os
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import kb as kb_module
from .checks import Evaluator
from .cache import FactsCache
from .config import Settings
from .ftypes import Diagnostic, FileFacts, Hit
from .kb import KnowledgeBase
from .notebook import Notebook, NotebookError
from .program import ModuleResolver, ProgramBuilder


COOKIE_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)


def real(path: Path) -> Path:
    """Absolute path with symlinks resolved; unlike Path.resolve it never raises on a loop."""
    return Path(os.path.realpath(path))


@dataclass
class SourceFile:
    path: Path
    text: Optional[str] = None
    encoding: str = "utf-8"
    error: Optional[str] = None


def read_source(path: Path, data: Optional[bytes] = None) -> SourceFile:
    """Decode a Python file as the interpreter would (BOM, coding cookie), or say why not."""
    try:
        if data is None:
            data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if isinstance(exc, FileNotFoundError):
            reason = "file not found (removed during the run?)" if not path.is_symlink() else "dangling symlink"
        elif exc.errno == 40:  # ELOOP
            reason = "symlink loop"
        return SourceFile(path, error=f"cannot read file: {reason}")
    if b"\0" in data:
        return SourceFile(path, error="file contains NUL bytes; not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if COOKIE_RE.search(b"\n".join(data.splitlines()[:2])):
            return SourceFile(path, error=f"bad encoding declaration: {exc}")
        encoding = "utf-8"  # no declaration: the bytes themselves are not UTF-8
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        return SourceFile(path, error=f"cannot decode as {encoding}: {exc}")
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(path, text=text, encoding=encoding)


def collect_text(kb: KnowledgeBase, path: Path, text: str) -> FileFacts:
    from .collect import collect  # libcst is imported only when a file really has to be parsed

    try:
        return collect(kb, str(path), text)
    except RecursionError:
        return FileFacts(path=str(path), error="too deeply nested to parse")


def facts_for_file(kb: KnowledgeBase, path: Path) -> tuple[FileFacts, Optional[Notebook]]:
    """Read and collect one file (what a worker process does)."""
    source = read_source(path)
    notebook = None
    if source.text is not None and path.suffix == ".ipynb":
        try:
            notebook = Notebook.parse(source.text)
        except NotebookError as exc:
            return FileFacts(path=str(path), error=str(exc)), None
        source = SourceFile(path, text=notebook.source)
    if source.error is not None or source.text is None:
        return FileFacts(path=str(path), error=source.error or "cannot read file"), None
    return collect_text(kb, path, source.text), notebook


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
        self._facts: dict[Path, Optional[FileFacts]] = {}
        self.notebooks: dict[Path, Notebook] = {}
        self.cache: Optional[FactsCache] = None
        self._overrides: dict[Path, str] = {}
        roots = [settings.project_root / s for s in settings.src]
        self.builder = ProgramBuilder(self.facts_of, ModuleResolver([r for r in roots if r.is_dir()]))
        self.marker_owners = {f"group:{n}" for n, g in self.kb.groups.items() if g.marks_entry}

    # ---- facts ---------------------------------------------------------------------------------
    def set_source(self, path: Path, text: str) -> None:
        """Lint ``text`` as the content of ``path`` (stdin, flake8's lines, notebooks)."""
        self._overrides[real(path)] = text
        self._facts.pop(real(path), None)

    def set_error(self, path: Path, facts: FileFacts) -> None:
        self._facts[real(path)] = facts

    def facts_of(self, path: Path) -> Optional[FileFacts]:
        key = real(path)
        if key not in self._facts:
            self._facts[key] = self._collect(key)
        return self._facts[key]

    def _collect(self, path: Path) -> FileFacts:
        if path in self._overrides:
            return collect_text(self.kb, path, self._overrides[path])
        if self.cache is not None:  # project modules a program imports are cached too
            self.prefetch([path], 1, self.cache)
            facts = self._facts.get(path)
            if facts is not None:
                return facts
        facts, notebook = facts_for_file(self.kb, path)
        if notebook is not None:
            self.notebooks[path] = notebook
        return facts

    def prefetch(self, files: list[Path], jobs: int = 1, cache: Optional[FactsCache] = None) -> None:
        """Collect the facts of many files up front: from the cache, else in ``jobs`` processes."""
        todo: list[tuple[Path, Optional[str]]] = []
        for path in files:
            key = real(path)
            if key in self._facts or key in self._overrides:
                continue
            cache_key = None
            if cache is not None:
                try:
                    data = key.read_bytes()
                except OSError:
                    todo.append((key, None))  # reported as DET001 by the normal path
                    continue
                cache_key = cache.key(key, data)
                facts = cache.get(cache_key)
                if facts is not None:
                    self._facts[key] = facts
                    if key.suffix == ".ipynb" and facts.error is None:
                        self.notebooks[key] = Notebook.parse(data.decode("utf-8", errors="replace"))
                    continue
            todo.append((key, cache_key))
        if jobs > 1 and len(todo) >= 2 * jobs:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=jobs) as pool:
                results = list(pool.map(_collect_in_worker, [str(p) for p, _ in todo],
                                        chunksize=max(1, min(16, len(todo) // (jobs * 4)))))
        else:
            results = [facts_for_file(self.kb, path) for path, _ in todo]
        for (path, cache_key), (facts, notebook) in zip(todo, results):
            self._facts[path] = facts
            if notebook is not None:
                self.notebooks[path] = notebook
            if cache is not None and cache_key is not None:
                cache.put(cache_key, facts)

    # ---- entries and programs ----------------------------------------------------------------------
    def is_entry(self, path: Path, facts: FileFacts) -> bool:
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
        return any(th.hit.owner in self.marker_owners for th in program.trace)

    def display(self, path: Path) -> str:
        try:
            return os.path.relpath(path, Path.cwd()) if path.is_absolute() else str(path)
        except ValueError:
            return str(path)

    # ---- the run -------------------------------------------------------------------------------------
    def lint_file(self, path: Path, display: Optional[str] = None, map_cells: bool = True) -> list[Diagnostic]:
        """Findings for one file; notebook findings carry their cell and in-cell line unless
        ``map_cells`` is False (the fixer works on the joined program text)."""
        diags = self._lint_file(path, display or str(path))
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

    def _lint_file(self, path: Path, display: str) -> list[Diagnostic]:
        facts = self.facts_of(path)
        assert facts is not None
        if facts.error is not None:
            rule = self.kb.rules.get("DET001")
            diag = Diagnostic(code="DET001", name=rule.name if rule else "unparsable-file",
                              message=f"file cannot be checked: {facts.error}", path=display,
                              line=facts.error_line, col=facts.error_col, end_line=facts.error_line,
                              end_col=facts.error_col)
            return self._filter([diag], facts, path)
        try:
            notebook = self.notebooks.get(real(path))
            cell_errors = self._cell_errors(notebook, display) if notebook is not None else []
            program = self.builder.build(path) if self.is_entry(path, facts) else None
            # an inference-only program is not asked about backprop; a library module may be trained
            trains = self.evaluator.trains(program, self.facts_of) if program is not None else None
            diags = self.evaluator.file_diagnostics(display, facts, trains)
            if program is not None:
                diags += self.evaluator.program_diagnostics(program, display, self.where, self.facts_of)
            diags += cell_errors
        except Exception as exc:  # a crash in one rule must be visible, not silent
            diag = Diagnostic(code="DET000", name="internal-error",
                              message=f"internal error while checking {display}: {type(exc).__name__}: {exc}",
                              path=display, line=1, col=0, end_line=1, end_col=0)
            return [diag]
        return self._filter(diags, facts, path)

    def _cell_errors(self, notebook: Notebook, display: str) -> list[Diagnostic]:
        """DET001 for each cell that does not parse; the other cells are still checked."""
        out = []
        starts = {cell: i + 1 for i, (cell, n) in enumerate(notebook.line_map) if n == 0}
        for index, line, reason in notebook.cell_errors:
            program_line = starts.get(index, 0) + line
            out.append(Diagnostic(code="DET001", name="unparsable-file", path=display, line=program_line, col=0,
                                  end_line=program_line, end_col=0,
                                  message=f"cell cannot be checked: syntax error: {reason}; the other cells were"))
        return out

    def where(self, path: Path, line: int) -> str:
        """``models/net.py:12``, or ``nb.ipynb:cell 4:3`` for a notebook."""
        notebook = self.notebooks.get(real(path))
        if notebook is not None and real(path) not in self._overrides:
            cell, in_cell = notebook.locate(line)
            return f"{self._relative(path)}:cell {cell}:{in_cell}"
        return f"{self._relative(path)}:{line}"

    def _relative(self, path: Path) -> str:
        try:
            return real(path).relative_to(self.settings.project_root).as_posix()
        except ValueError:
            return str(path)

    def _filter(self, diags: list[Diagnostic], facts: FileFacts, path: Path) -> list[Diagnostic]:
        if not self.standalone:
            return sorted(diags, key=Diagnostic.sort_key)
        rel = self._relative(path)
        ignored: set[str] = set()
        for pattern, codes in self.settings.per_file_ignores.items():
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(path.name, pattern):
                ignored.update(codes)
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

    def run(self, files: list[Path], jobs: int = 1, cache: Optional[FactsCache] = None) -> Result:
        result = Result(files=len(files))
        self.cache = cache
        self.prefetch(files, jobs, cache)
        for path in files:
            result.diagnostics.extend(self.lint_file(path, self.display(path)))
        result.diagnostics.sort(key=Diagnostic.sort_key)
        return result


def is_suppressed(diag: Diagnostic, facts: FileFacts) -> bool:
    if facts.file_noqa:
        return True
    if diag.line not in facts.noqa:
        return False
    codes = facts.noqa[diag.line]
    return codes is None or any(diag.code.startswith(c) for c in codes)


def hits_of(facts: FileFacts, owner: str) -> list[Hit]:
    return [h for h in facts.hits if h.owner == owner]


def _collect_in_worker(path: str) -> tuple[FileFacts, Optional[Notebook]]:
    return facts_for_file(kb_module.load(), Path(path))
