"""flake8 adapter: ``flake8 --select DET`` reports the same findings as the CLI.

flake8 owns selection and ``# noqa``, so the plugin reports everything it finds and passes
libcst's 0-based columns through unchanged (flake8 adds 1). It never fixes anything.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, ClassVar, Iterator, Optional

from detlint._version import __version__
from detlint.knowledge.frameworks import FRAMEWORKS
from detlint.lint.brief import one_line


class Plugin:
    name = "detlint"
    version = __version__
    _options: ClassVar[dict[str, Any]] = {}
    _linters: ClassVar[dict[tuple[Any, ...], Any]] = {}

    def __init__(self, tree: Any, lines: list[str], filename: str) -> None:
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, manager: Any) -> None:
        from detlint.knowledge.kb import KnowledgeBaseError, load

        try:  # opt-in rules stay off unless selected by their own code, as bugbear's B9xx do
            opt_in = [code for code, rule in load().rules.items() if not rule.default_enabled]
        except KnowledgeBaseError:
            opt_in = []
        if opt_in and hasattr(manager, "extend_default_ignore"):
            manager.extend_default_ignore(opt_in)
        add = manager.add_option
        for fw in FRAMEWORKS.values():  # --detlint-tf-version, --detlint-torch-version, ...
            add(f"--detlint-{fw.option[2:]}", parse_from_config=True, default=None,
                help=f"detlint: target {fw.title} version (default: pyproject [tool.detlint], pins, installed)")
        add("--detlint-keras-version", parse_from_config=True, default=None, type=int,
            help="detlint: Keras major version, 2 or 3 (default: from the TensorFlow version)")
        add("--detlint-keras-backend", parse_from_config=True, default=None,
            help="detlint: the backend Keras 3 runs on where a program does not set KERAS_BACKEND")
        add("--detlint-entry-points", parse_from_config=True, comma_separated_list=True, default=None,
            help="detlint: globs of files that are programs even without a main guard")
        add("--detlint-not-training", parse_from_config=True, comma_separated_list=True, default=None,
            help="detlint: globs of files and folders that are not training (tests, benchmarks, ...)")
        add("--detlint-seed", parse_from_config=True, default=None, type=int,
            help="detlint: seed value shown in suggested fixes")
        add("--detlint-min-confidence", parse_from_config=True, default=None,
            help="detlint: show findings at least this sure: certain, likely (default) or possible")

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        cls._options = {
            **{fw.setting: getattr(options, f"detlint_{fw.option[2:].replace('-', '_')}", None)
               for fw in FRAMEWORKS.values()},
            "keras-version": getattr(options, "detlint_keras_version", None),
            "keras-backend": getattr(options, "detlint_keras_backend", None),
            "entry-points": getattr(options, "detlint_entry_points", None) or None,
            "seed": getattr(options, "detlint_seed", None),
            "not-training": getattr(options, "detlint_not_training", None),
            "min-confidence": getattr(options, "detlint_min_confidence", None),
        }
        cls._linters.clear()

    def _linter(self, path: Path) -> Any:
        from detlint.settings.config import find_project_root, load_settings
        from detlint.lint.engine import Linter
        from detlint.knowledge.kb import load
        from detlint.settings.pins import version_root

        root = find_project_root(path)
        key = (root, version_root(path, root), tuple(sorted((k, str(v)) for k, v in self._options.items())))
        if key not in self._linters:
            kb = load()
            settings = load_settings([path], {k: v for k, v in self._options.items() if v is not None},
                                     eras=kb.eras)
            self._linters[key] = Linter(settings, kb, standalone=False)
        return self._linters[key]

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from detlint.settings.config import ConfigError
        from detlint.knowledge.kb import KnowledgeBaseError

        path = Path(self.filename)
        try:
            linter = self._linter(path)
        except (ConfigError, KnowledgeBaseError) as exc:
            yield 1, 0, f"DET000 detlint configuration error: {exc}", type(self)
            return
        linter.set_source(path, "".join(self.lines))
        display: Optional[str] = self.filename
        for diag in linter.lint_file(path, display):
            yield diag.line, diag.col, f"{diag.code} {one_line(diag)}", type(self)
