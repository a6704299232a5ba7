"""Which settings each checked file takes, and which files share one linter.

Each path named on the command line is in its own project, as flake8 sees each file: the folder
holding its pyproject.toml, repository or dependency files (``find_project_root``), else its own
folder. Projects whose settings come out the same and that have no marker of their own (60
folders of scripts named one by one) are then checked together, from the folder that holds them
all: one linter, one parser pool, one cache, instead of one per folder."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Callable, Sequence

from detlint.lint.files.named_paths import home_folder
from detlint.settings.config import Settings, find_project_root
from detlint.settings.pins import has_dependency_file


def group_by_project(files: list[Path], default_root: Path, named: Sequence[Path] = ()) -> dict[Path, list[Path]]:
    """Files by the folder whose settings and pins they take: the project root of the named path
    they were found under, or within it the nearest folder above a file with a pyproject.toml or
    another dependency file (requirements.txt, setup.py, environment.yml, ...)."""
    roots: dict[Path, Path] = {}  # named path -> its project root
    by_folder: dict[Path, Path] = {}  # named paths share folders (pre-commit): look each up once
    for path in named:
        folder = home_folder(path)
        if folder not in by_folder:
            by_folder[folder] = find_project_root(path)
        roots[Path(os.path.abspath(path))] = by_folder[folder]
    groups: dict[Path, list[Path]] = {}
    has_deps: dict[Path, bool] = {}  # files share folders: look at each once
    for path in files:
        where = Path(os.path.abspath(path))
        # the named path it was found under (the path itself for a named file)
        root = next((roots[p] for p in (where, *where.parents) if p in roots), default_root)
        key, folder = root, Path(os.path.realpath(home_folder(path)))
        for parent in (folder, *folder.parents):
            if parent == root or root not in parent.parents:  # a folder linking out is the root's
                break
            if parent not in has_deps:
                has_deps[parent] = has_dependency_file(parent)
            if has_deps[parent]:
                key = parent
                break
        groups.setdefault(key, []).append(path)
    return groups


def _unmarked(root: Path) -> bool:
    """A root that is only a folder: no pyproject.toml, repository or dependency file says so."""
    return not (has_dependency_file(root) or (root / ".git").exists())


def shared_settings(groups: dict[Path, list[Path]], settings_of: Callable[[Path], Settings]
                    ) -> list[tuple[Settings, list[Path]]]:
    """The settings each group is checked with, groups of unmarked roots whose settings are the
    same (versions, era and options alike) merged under the folder that holds them all."""
    plans: list[tuple[Settings, list[Path]]] = []
    merged: dict[str, list[tuple[Settings, list[Path]]]] = {}
    for root, files in groups.items():
        settings = settings_of(root)
        if settings.config_file is not None or not _unmarked(root):
            plans.append((settings, files))
            continue
        shown = {k: v for k, v in settings.describe().items() if k not in ("project-root", "version-root")}
        merged.setdefault(repr(sorted(shown.items())), []).append((settings, files))
    for same in merged.values():
        if len(same) == 1:
            plans.append(same[0])
            continue
        common = Path(os.path.commonpath([str(s.project_root) for s, _ in same]))
        first = same[0][0]
        plans.append((dataclasses.replace(first, project_root=common, version_root=common),
                      [f for _, files in same for f in files]))
    return plans
