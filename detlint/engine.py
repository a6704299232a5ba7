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
from .collect import collect
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


def selected(code: str, settings: Settings, default_enabled: bool = True) -> bool:
    """ruff/flake8 selection: the longest matching prefix decides; ignore wins a tie."""
    best_select = max((len(p) for p in settings.select + settings.extend_select
                       if p == "ALL" or code.startswith(p)), default=-1)
    best_ignore = max((len(p) for p in settings.ignore if p == "ALL" or code.startswith(p)), default=-1)
    if best_select < 0 or best_ignore >= best_select:
        return False
    return default_enabled or best_select >= 4


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
            source = SourceFile(path, text=self._overrides[path])
        else:
            source = read_source(path)
            if source.text is not None and path.suffix == ".ipynb":
                try:
                    notebook = Notebook.parse(source.text)
                except NotebookError as exc:
                    return FileFacts(path=str(path), error=str(exc))
                self.notebooks[path] = notebook
                source = SourceFile(path, text=notebook.source)
        if source.error is not None or source.text is None:
            return FileFacts(path=str(path), error=source.error or "cannot read file")
        try:
            return collect(self.kb, str(path), source.text)
        except RecursionError:
            return FileFacts(path=str(path), error="too deeply nested to parse")

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
        program = self.builder.build(path)
        return any(th.hit.owner in self.marker_owners and th.path == program.entry for th in program.trace)

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
                if diag.code == "DET001":
                    continue
                magic = notebook.magic_line(diag.line)
                cell, line = notebook.locate(diag.line)
                end_cell, end_line = notebook.locate(diag.end_line)
                diag.cell, diag.line = cell, line
                diag.end_line = end_line if end_cell == cell else line
                if magic:
                    diag.col, diag.end_col = 0, 0
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
            diags = self.evaluator.file_diagnostics(display, facts)
            if self.is_entry(path, facts):
                program = self.builder.build(path)
                diags += self.evaluator.program_diagnostics(program, display, self.where, self.facts_of)
        except Exception as exc:  # a crash in one rule must be visible, not silent
            diag = Diagnostic(code="DET000", name="internal-error",
                              message=f"internal error while checking {display}: {type(exc).__name__}: {exc}",
                              path=display, line=1, col=0, end_line=1, end_col=0)
            return [diag]
        return self._filter(diags, facts, path)

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

    def run(self, files: list[Path]) -> Result:
        result = Result(files=len(files))
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
