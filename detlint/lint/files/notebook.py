"""Jupyter notebooks: code cells as one program in notebook order, with IPython syntax made
parseable, diagnostics mapped back to cells, and fixes written back into the same cells.

Magics and shell lines become ``pass  # __detlint_magic_N__`` (same indentation, so blocks still
parse); ``%env NAME=VALUE`` becomes a real ``os.environ`` assignment so the env rules see it.
Cells are joined with a boundary comment that fixes keep, which is how fixed text is split back.
Markers carry a stem that does not occur anywhere in the notebook, so a user's text can never be
mistaken for one.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from detlint.lint.files.cell_lines import join_like, split_lines
from detlint.lint.files.notebook_json import source_json, source_spans, splice
from detlint.lint.ftypes import quiet_compile
from detlint.lint.python2 import python3_text

PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
ENV_ASSIGN = re.compile(r"environ\[['\"](?P<name>\w+)['\"]\]\s*=\s*['\"](?P<value>[^'\"]*)['\"]")
ENV_MAGIC = re.compile(r"^(?P<indent>\s*)%env\s+(?P<name>\w+)(?:\s*=\s*|\s+)(?P<value>.*?)\s*$")


NOT_TEXT = "its source is not text (nbformat wants a string or a list of strings)"


class NotebookError(Exception):
    """Not a notebook detlint can read (bad JSON, not nbformat 4)."""


@dataclass
class Notebook:
    data: dict[str, Any]
    raw: str
    code_cells: list[int] = field(default_factory=list)  # indexes into data["cells"]
    source: str = ""  # the joined, parseable program
    line_map: list[tuple[int, int]] = field(default_factory=list)  # program line -> (cell index, cell line)
    magics: dict[int, str] = field(default_factory=dict)
    generated: dict[int, str] = field(default_factory=dict)  # %env lines as the Python we parsed
    dedent: dict[int, int] = field(default_factory=dict)  # cell index -> indent IPython stripped
    cell_errors: list[tuple[int, int, str]] = field(default_factory=list)  # (cell index, line, reason)
    # cells of a Python 2 kernel's notebook, read as their Python 3 equivalent (python2.py), and
    # the first such construct: (its name, program line, column)
    python2_cells: set[int] = field(default_factory=set)
    legacy: Optional[tuple[str, int, int]] = None
    tag: str = "__detlint"  # marker stem, unique to this notebook's text

    @property
    def runtime(self) -> Optional[str]:
        """The accelerator the notebook was saved with (Colab's ``metadata.accelerator``:
        "GPU", "TPU"), None where it does not say."""
        metadata = self.data.get("metadata")
        value = metadata.get("accelerator") if isinstance(metadata, dict) else None
        return value.upper() if isinstance(value, str) and value.isalnum() and len(value) <= 16 else None

    @property
    def _magic_re(self) -> "re.Pattern[str]":
        return re.compile(rf"{self.tag}_magic_(\d+)__")

    @property
    def _boundary_re(self) -> "re.Pattern[str]":
        return re.compile(rf"^# {self.tag}_cell_(\d+)__$")

    def _mark(self, n: int) -> str:
        return f"{self.tag}_magic_{n}__"

    @classmethod
    def parse(cls, raw: str) -> "Notebook":
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise NotebookError(f"not valid notebook JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
        except RecursionError:
            raise NotebookError("not a notebook detlint can read: the JSON is nested too deeply") from None
        if not isinstance(data, dict):
            raise NotebookError("not a Jupyter notebook: the JSON is not an object")
        if data.get("nbformat") != 4:
            raise NotebookError(f"nbformat {data.get('nbformat')!r} is not supported (only nbformat 4)")
        if not isinstance(data.get("cells"), list):
            raise NotebookError("not a Jupyter notebook: no list of cells")
        nb = cls(data=data, raw=raw, tag=_unique_tag(raw))
        nb._build()
        return nb

    def _build(self) -> None:
        lines: list[str] = []
        for index, cell in enumerate(self.data["cells"]):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            self.code_cells.append(index)
            lines.append(f"# {self.tag}_cell_{index}__")
            self.line_map.append((index, 0))
            if not _is_text(cell.get("source", "")):  # reported for this cell; the others are checked
                self.cell_errors.append((index, 1, NOT_TEXT))
                lines.append("# __detlint_unparsable_cell__")
                self.line_map.append((index, 1))
                continue
            start = len(lines)  # the program line before the cell's first
            program, python2 = self._cell_program(index, cell_text(cell))
            for number, line in enumerate(program, start=1):
                lines.append(line)
                self.line_map.append((index, number))
            if python2 is not None and self.legacy is None:
                construct, line, col = python2
                self.legacy = (construct, start + line, col)
        self.source = "\n".join(lines) + "\n"

    def _cell_program(self, index: int, text: str) -> tuple[list[str], Optional[tuple[str, int, int]]]:
        """One cell as Python: magics replaced, a common indent removed (IPython accepts it);
        a cell that still does not parse is blanked and reported on its own (DET001). With it,
        a Python 2 cell's first Python 2 construct (name, line, column), else None."""
        lines = self._python_lines(text)
        # IPython's leading_indent: the first line's indentation is removed from every line that
        # starts with it (a pasted block, or a cell indented by mistake, still runs)
        first = next((line for line in lines if line.strip() and not self._magic_re.search(line)), "")
        prefix = first[: len(first) - len(first.lstrip())]
        if prefix:
            lines = [line[len(prefix):] if line.startswith(prefix) else line for line in lines]
            self.dedent[index] = len(prefix)
        try:
            quiet_compile("\n".join(lines) + "\n", f"<cell {index + 1}>")
        except SyntaxError as exc:
            # a Python 2 kernel's cell (`print "step", i`): its Python 3 equivalent, same lines
            old = python3_text("\n".join(lines) + "\n")
            if old is not None and len(old[0].split("\n")) == len(lines) + 1:
                self.python2_cells.add(index)
                return old[0].split("\n")[:-1], (old[1], old[2], old[3])
            self.cell_errors.append((index, exc.lineno or 1, exc.msg))
            return ["# __detlint_unparsable_cell__"] * len(lines), None
        except (ValueError, RecursionError) as exc:
            self.cell_errors.append((index, 1, str(exc)))
            return ["# __detlint_unparsable_cell__"] * len(lines), None
        return lines, None

    def _python_lines(self, text: str) -> list[str]:
        raw_lines, _ = split_lines(text)  # CR, LF and CRLF: each a line of the program, as Python counts
        first = raw_lines[0].strip() if raw_lines else ""
        whole_cell_magic = first.startswith("%%")
        keep_body = whole_cell_magic and first[2:].split()[0] in PYTHON_CELL_MAGICS if first[2:].split() else False
        out = []
        in_magic = False  # a magic or shell line continued with a backslash
        magic_indent = ""
        depth = 0  # open brackets: a line starting with % inside them is the modulo operator
        quote: Optional[str] = None  # the triple quote of a string still open: its lines are text
        for number, line in enumerate(raw_lines):
            if quote is not None:
                out.append(line)
                quote, _ = _open_string(line, quote)
                continue
            stripped = line.lstrip()
            indent = line[: len(line) - len(stripped)]
            continued = number > 0 and raw_lines[number - 1].rstrip().endswith("\\")
            if in_magic:  # same indentation as the line it continues
                out.append(self._magic(magic_indent, line))
                in_magic = line.rstrip().endswith("\\")
                continue
            magic_indent = indent
            if whole_cell_magic and (number == 0 or not keep_body):
                out.append(self._magic("", line))  # %%bash, %%writefile: not Python at all
            elif depth > 0 or continued:
                out.append(line)
                quote, code_end = _open_string(line, None)
                depth = max(depth + _bracket_balance(line[:code_end]), 0)
                continue
            elif ENV_MAGIC.match(line):
                match = ENV_MAGIC.match(line)
                assert match is not None
                n = len(self.magics)
                self.magics[n] = line
                value = match.group("value").strip("'\"")
                generated = (f'{indent}import os as __detlint_os; __detlint_os.environ[{match.group("name")!r}] = '
                             f'{value!r}  # {self._mark(n)}')
                self.generated[n] = generated
                out.append(generated)
            elif stripped.startswith(("%", "!")) or (stripped.endswith("?") and not stripped.startswith("#")):
                out.append(self._magic(indent, line))
                in_magic = line.rstrip().endswith("\\")
            elif _automagic(stripped):  # ls ./data, cd models, pip install x: IPython runs them
                out.append(self._magic(indent, line))
                in_magic = line.rstrip().endswith("\\")
            elif re.match(r"^\s*[\w.]+\s*=\s*[!%]", line):  # files = !ls
                out.append(self._magic(indent, line))
                in_magic = line.rstrip().endswith("\\")
            else:
                out.append(line)
                quote, code_end = _open_string(line, None)
                depth = max(depth + _bracket_balance(line[:code_end]), 0)
        return out

    def _magic(self, indent: str, line: str) -> str:
        """A comment at top level (so import blocks stay contiguous), ``pass`` inside a block."""
        n = len(self.magics)
        self.magics[n] = line
        return f"{indent}pass  # {self._mark(n)}" if indent else f"# {self._mark(n)}"

    def code_size(self) -> int:
        """Bytes of code in the notebook's code cells, as written (what the size limit counts)."""
        cells = [self.data["cells"][index] for index in self.code_cells]
        return sum(len(cell_text(cell).encode("utf-8", "surrogatepass")) for cell in cells
                   if _is_text(cell.get("source", "")))

    def locate(self, line: int) -> tuple[int, int]:
        """Program line (1-based) -> (1-based cell number in the notebook, line within the cell)."""
        if 1 <= line <= len(self.line_map):
            cell, in_cell = self.line_map[line - 1]
            return cell + 1, max(in_cell, 1)
        return (self.code_cells[-1] + 1 if self.code_cells else 1), line

    def magic_line(self, line: int) -> bool:
        if 1 <= line <= len(self.line_map):
            return bool(self._magic_re.search(self.source.split("\n")[line - 1]))
        return False

    def with_source(self, fixed: str) -> str:
        """The notebook's text with the source of each code cell ``fixed`` (the program text after
        fixes) changed, and nothing else: only those bytes of the JSON are replaced, in the
        file's own layout; each kept line ends as it did, and a line a fix adds as the line before it.
        A cell whose lines the fixes left as they were is not rewritten at all."""
        cells, before = self._cell_lines(fixed), self._cell_lines(self.source)
        broken = {index for index, _, _ in self.cell_errors} | self.python2_cells
        try:
            spans = source_spans(self.raw)
        except ValueError as exc:
            raise NotebookError(str(exc)) from None
        replacements: dict[int, str] = {}
        for index in self.code_cells:
            if index in broken or cells.get(index, []) == before.get(index, []):
                continue  # never rewrite a cell detlint could not read, nor one no fix edited
            lines = [kept for kept in map(self._restore, cells.get(index, [])) if kept is not None]
            if self.dedent.get(index):
                pad = " " * self.dedent[index]
                lines = [pad + line if line.strip() else line for line in lines]
            cell = self.data["cells"][index]
            original = cell_text(cell)
            if lines and lines[-1] == "" and original.endswith(("\r", "\n")):
                lines.pop()  # the empty line after the cell's last break; blank lines before it stay
            text = join_like(lines, original)  # each kept line ends as it did, added ones as the line before
            if text == original:
                continue
            if index not in spans:
                raise NotebookError(f"cell {index + 1} has no source to write the fix into")
            replacements[index] = source_json(self.raw, spans[index], cell["source"], text)
        return splice(self.raw, replacements, spans)

    def _cell_lines(self, program: str) -> dict[int, list[str]]:
        """Each code cell's lines in ``program`` (the joined program, before or after fixes), as
        they were put there: text a fix put before the first cell goes into the first."""
        cells: dict[int, list[str]] = {}
        current: Optional[int] = None
        lines = program.split("\n")
        if program.endswith("\n"):
            lines.pop()  # the break the joined program ends in belongs to no cell
        for line in lines:
            match = self._boundary_re.match(line)
            if match:
                current = int(match.group(1))
                cells.setdefault(current, [])  # text before the first cell stays in it
                continue
            if current is None:  # text before the first cell: keep it in the first code cell
                current = self.code_cells[0]
                cells[current] = []
            cells[current].append(line)
        return cells

    def _restore(self, line: str) -> Optional[str]:
        """The original magic for a placeholder line; None when a fix removed what it stood for."""
        match = self._magic_re.search(line)
        if not match:
            return line
        n = int(match.group(1))
        if n not in self.generated or line == self.generated[n]:
            return self.magics[n]
        env = ENV_ASSIGN.search(line)
        if env is None:  # the assignment was removed (e.g. PYTHONHASHSEED set in-process)
            return None
        indent = line[: len(line) - len(line.lstrip())]
        return f"{indent}%env {env.group('name')}={env.group('value')}"


def _unique_tag(raw: str) -> str:
    """A marker stem absent from the notebook's text (derived from the content, so the same
    notebook always maps the same way)."""
    digest = hashlib.sha1(raw.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    for n in itertools.count():
        tag = f"__detlint{digest}{n or ''}"
        if tag not in raw:
            return tag
    raise AssertionError("unreachable")


_STRINGS = re.compile(r"""("[^"\\]*(?:\\.[^"\\]*)*"|'[^'\\]*(?:\\.[^'\\]*)*')""")


# IPython's automagics and default shell aliases: written without % or !, they still run
AUTOMAGICS = frozenset({"ls", "cd", "pwd", "pip", "conda", "cat", "cp", "mv", "rm", "mkdir", "rmdir", "ll",
                        "less", "more", "man", "clear", "env", "load_ext", "matplotlib", "timeit", "time",
                        "history", "who", "whos", "reset", "run"})


def _automagic(stripped: str) -> bool:
    """A line IPython runs as a magic or alias although Python cannot parse it (``ls ./data``)."""
    word = stripped.split(None, 1)[0] if stripped else ""
    if word not in AUTOMAGICS or _bracket_balance(stripped) != 0 or stripped.rstrip().endswith((":", "\\", ",")):
        return False  # the start of a longer Python statement (`ls = [`) is not a magic
    try:
        compile(stripped, "<line>", "exec", dont_inherit=True)
    except SyntaxError:
        return True
    except (ValueError, RecursionError):
        return False
    return False


def _open_string(line: str, quote: Optional[str]) -> tuple[Optional[str], int]:
    """The triple quote still open at the end of ``line`` (None when every string closes) and
    where it opened (the code before it is the line's code). ``quote``: one open before it."""
    i, start = 0, len(line)
    while i < len(line):
        if quote is not None:
            end = line.find(quote, i)
            if end < 0:
                return quote, start
            i, quote, start = end + 3, None, len(line)
            continue
        char = line[i]
        if char == "#":
            break
        if line.startswith(('"""', "'''"), i):
            quote, start = line[i:i + 3], i
            i += 3
        elif char in "'\"":  # a one-line string: skip to its closing quote
            i += 1
            while i < len(line) and line[i] != char:
                i += 2 if line[i] == "\\" else 1
            i += 1
        else:
            i += 1
    return quote, start


def _bracket_balance(line: str) -> int:
    """Opening minus closing brackets on a line, strings and comments left out (roughly)."""
    code = _STRINGS.sub("", line).split("#", 1)[0]
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


def _is_text(source: Any) -> bool:
    return isinstance(source, str) or (isinstance(source, list) and all(isinstance(s, str) for s in source))


def cell_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def cell_source(raw: str, number: int) -> str:
    """The text of cell ``number`` (from 1, as findings name cells) in a notebook's JSON ``raw``,
    as written (the lines a finding's cell line and columns count); "" where there is none."""
    try:
        cells = json.loads(raw[1:] if raw.startswith("\ufeff") else raw).get("cells")  # a BOM, as read_source allows
    except (ValueError, RecursionError, AttributeError):
        return ""
    if not isinstance(cells, list) or not 1 <= number <= len(cells):
        return ""
    cell = cells[number - 1]
    return cell_text(cell) if isinstance(cell, dict) and _is_text(cell.get("source", "")) else ""
