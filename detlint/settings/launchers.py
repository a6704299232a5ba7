"""Environment variables a project's launchers set for its programs.

``XLA_FLAGS=--xla_gpu_deterministic_ops=true python train.py`` in a shell script, ``export
CUBLAS_WORKSPACE_CONFIG=:4096:8`` before ``srun python train.py`` in a Slurm batch file, a
Makefile recipe, a Dockerfile's ``ENV PYTHONHASHSEED=0``: the program runs with them set before
it starts. The files are read as text (never run); a variable counts for the programs a
launcher starts by path (``python train.py``, ``python -m pkg.train``), and a Dockerfile's
``ENV`` for every program under its folder.
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from detlint.lint.files.sources import read_regular
from detlint.settings.eras import SKIP_DIRS

MAX_FILES = 500
MAX_BYTES = 256 * 1024
_SCRIPT = re.compile(r"(?:\.(?:sh|bash|zsh|slurm|sbatch|pbs|job)|^(?:Makefile|makefile|GNUmakefile))$")
_DOCKERFILE = re.compile(r"^(?:Dockerfile(?:\.[\w.-]+)?|[\w.-]+\.[Dd]ockerfile)$")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|\?=|=)\s*(.*)$")
_PYTHON = re.compile(r"^(?:python[\d.]*|pypy3?|torchrun|accelerate|deepspeed|horovodrun|mpirun|srun|uv|poetry)$")


@dataclass(frozen=True)
class LaunchSetting:
    name: str
    value: str
    where: str  # "scripts/train.sh:4", project-relative


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:  # an unclosed quote: words as written
        return line.split()


def _lines(text: str) -> list[tuple[int, str]]:
    """(line number, logical line): continuation backslashes joined."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append((start, pending + line))
        pending = ""
    if pending:
        out.append((start, pending))
    return out


class Launchers:
    """The launch settings of one project, read once, asked per program."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._by_program: Optional[dict[Path, list[LaunchSetting]]] = None
        self._docker: list[tuple[Path, LaunchSetting]] = []

    def for_program(self, entry: Path) -> list[LaunchSetting]:
        if self._by_program is None:
            self._by_program = {}
            self._scan()
        found = list(self._by_program.get(entry.resolve(), ()))
        found += [s for folder, s in self._docker if folder == entry.resolve().parent or folder in entry.resolve().parents]
        return found

    def _scan(self) -> None:
        count = 0
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                docker = bool(_DOCKERFILE.match(name))
                if not docker and not _SCRIPT.search(name):
                    continue
                count += 1
                if count > MAX_FILES:
                    return
                path = Path(folder) / name
                try:
                    text = read_regular(path, MAX_BYTES).decode("utf-8", errors="replace")
                except OSError:
                    continue
                if docker:
                    self._dockerfile(path, text)
                else:
                    self._script(path, text)

    def _where(self, path: Path, line: int) -> str:
        try:
            return f"{path.relative_to(self.root).as_posix()}:{line}"
        except ValueError:
            return f"{path}:{line}"

    def _dockerfile(self, path: Path, text: str) -> None:
        for number, line in _lines(text):
            words = line.strip().split(None, 1)
            if len(words) != 2 or words[0].upper() != "ENV":
                continue
            rest = words[1].strip()
            pairs = [w.split("=", 1) for w in _words(rest)] if "=" in rest.split()[0] else [rest.split(None, 1)]
            for pair in pairs:
                if len(pair) == 2 and re.match(r"^[A-Za-z_]\w*$", pair[0]):
                    self._docker.append((path.parent.resolve(), LaunchSetting(pair[0], pair[1].strip().strip("'\""),
                                                                              self._where(path, number))))

    def _script(self, path: Path, text: str) -> None:
        exported: list[LaunchSetting] = []
        makefile = "akefile" in path.name
        for number, line in _lines(text):
            for part in re.split(r"&&|;|\|\|", line.strip().lstrip("@-\t ")):
                words = _words(part)
                if not words:
                    continue
                if words[0] == "export":
                    for word in words[1:]:
                        assigned = _ASSIGN.match(word)
                        if assigned:
                            exported.append(LaunchSetting(assigned.group(1), assigned.group(2).strip("'\""),
                                                          self._where(path, number)))
                    if makefile and len(words) >= 2 and "=" not in words[1] and len(words) > 2:
                        assigned = _ASSIGN.match("".join(words[1:]))
                        if assigned:
                            exported.append(LaunchSetting(assigned.group(1), assigned.group(2),
                                                          self._where(path, number)))
                    continue
                inline: list[LaunchSetting] = []
                while words and _ASSIGN.match(words[0]) and "/" not in words[0].split("=")[0]:
                    assigned = _ASSIGN.match(words.pop(0))
                    assert assigned is not None
                    inline.append(LaunchSetting(assigned.group(1), assigned.group(2), self._where(path, number)))
                program = self._started(path, words)
                if program is not None:
                    self._by_program.setdefault(program, []).extend([*exported, *inline])  # type: ignore[union-attr]

    def _started(self, launcher: Path, words: list[str]) -> Optional[Path]:
        """The project file a command line starts: ``python train.py``, ``srun python -u x.py``,
        ``torchrun --nproc_per_node 2 x.py``, ``python -m pkg.train``."""
        if not words or not _PYTHON.match(os.path.basename(words[0])):
            return None
        for i, word in enumerate(words[1:], 1):
            if word == "-m" and i + 1 < len(words):
                module = words[i + 1].replace(".", "/")
                for base in (launcher.parent, self.root):
                    for candidate in (base / f"{module}.py", base / module / "__main__.py"):
                        if candidate.is_file():
                            return candidate.resolve()
                return None
            if word.endswith((".py", ".ipynb")):
                for base in (launcher.parent, self.root):
                    candidate = base / word
                    if candidate.is_file():
                        return candidate.resolve()
                return None
        return None
