"""Settings: ``[tool.detlint]`` in pyproject.toml, command-line overrides, and the target version."""
from __future__ import annotations

import argparse
import difflib
import fnmatch
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

from detlint.child_processes import in_background
from detlint.knowledge.frameworks import FRAMEWORKS, framework
from detlint.settings.pins import (has_dependency_file, installed_tf_version, installed_version,
                                   pinned_framework_version, pinned_keras_major, version_root)
from detlint.settings.limits import docs_url_problem, size_problem
from detlint.settings.tomlfile import TomlError, parse_toml
from detlint.knowledge.versions import Version, known_versions, newest_known, release_of
from detlint.lint.escapes import shown
from detlint.lint.files.display import printable_name
from detlint.lint.files.named_paths import below_named_links, home_folder
from detlint.lint.files.sources import read_regular, what_it_is

if TYPE_CHECKING:
    from detlint.knowledge.kb import Era

OUTPUT_FORMATS = ("concise", "full", "json", "sarif", "github")
CONFIDENCE_LEVELS = ("certain", "likely", "possible")  # as lint/confidence.py orders them
DEFAULT_SEED = 42
# how settings/pins.py says where a version comes from: "setup.py pins tensorflow>=1.8.0,<2.0"
_PINNED_PACKAGE = re.compile(r"\bpins ([A-Za-z0-9][A-Za-z0-9._-]*?)(\[[^\]]*\])?(?=[<>=!~ ;(]|$)")
KERAS_BACKENDS = ("tensorflow", "jax", "torch", "numpy", "openvino")
SEED_LIMIT = 2**32  # seeds are 0 <= seed < 2**32: the range NumPy's legacy seeding accepts
SEVERITIES = ("error", "warning", "note")
# Files that are not training programs: tests, benchmarks, demos and plots, converters. A pattern
# without "/" matches any folder or the file name; one with "/" the project-relative path.
DEFAULT_NOT_TRAINING = ("tests", "test", "testing", "test_*.py", "*_test.py", "conftest.py",
                        "benchmarks", "benchmark", "bench", "bench_*.py", "*_benchmark.py",
                        "demo", "demos", "visualization", "visualisation", "visualize*.py", "visualise*.py",
                        "plot_*.py", "convert*.py", "export*.py")
# default patterns that name a file only by how tests are often named: a file they match is a
# test when its code is one too (lint/engine.py), since scripts named `add_test.py` train
TEST_FILE_NAMES = ("test_*.py", "*_test.py")
DEFAULT_SEVERITY = "warning"
# the share of a project's TensorFlow/Keras files whose code must show its era before detlint
# checks the project as of that era rather than the installed (or newest) version
ERA_SHARE = 0.1


class ConfigError(Exception):
    """Bad configuration or arguments: reported with exit code 2."""


_warned: set[str] = set()


def warn(message: str) -> None:
    """A problem that does not stop the run, said once on stderr (the names it quotes written out
    as the reports show them: no line or escape sequence of their own)."""
    if message not in _warned:
        _warned.add(message)
        sys.stderr.write(f"detlint: warning: {shown(printable_name(message))}\n")


def check_seed(value: object) -> int:
    """``value`` if it is a seed every generator accepts (0 <= seed < 2**32), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < SEED_LIMIT:
        raise ValueError(f"a seed must be an integer from 0 to {SEED_LIMIT - 1} (2**32 - 1), got {value!r}")
    return value


def seed_arg(text: str) -> int:
    """argparse type for ``--seed``: a usage error (exit 2) outside 0 <= seed < 2**32."""
    try:
        return check_seed(int(text))
    except ValueError as exc:
        message = str(exc) if text.strip().lstrip("+-").isdigit() else f"not an integer: {text!r}"
        raise argparse.ArgumentTypeError(message) from None


def check_codes(codes: list[str], known: Iterable[str], where: str) -> None:
    """Every entry must be ``ALL``, a rule code or a prefix of one (``DET``, ``DET2``, ``DET20``)."""
    known = sorted(known)
    for code in codes:
        if code == "ALL" or any(k.startswith(code) for k in known):
            continue
        near = difflib.get_close_matches(code.upper(), known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise ConfigError(f"{where}: unknown rule code or prefix {code!r}{hint} ('detlint rule --all' lists them)")


NEWEST_SOURCE = "newest version detlint knows"


class Target:
    """The version of one framework a run checks against, and why. It may be decided later
    (``decide_later``): TensorFlow's era scan of a large project runs in the background while
    the program is built, and is waited for when a rule first asks for the version."""

    def __init__(self, version: Version, source: str = NEWEST_SOURCE, assumed: str = "") -> None:
        self.explicit = False  # set by the user (settings or command line): used as it is everywhere
        self.pinned = False  # taken from a dependency file's pin
        self.allows: tuple[Version, ...] = ()  # the releases that pin allows (a floor or a range)
        # the version installed in the project's own environment, and where: what its programs run
        self.runs: Optional[tuple[Version, str]] = None
        self._version, self._source = version, source
        self._assumed = assumed  # set when the version was inferred from the code: messages say so
        self._pending: Optional[Callable[[], Optional[tuple[Version, str, str]]]] = None

    def decide_later(self, work: Callable[[], Optional[tuple[Version, str, str]]]) -> None:
        """``work`` gives (version, source, assumed), or None to keep what is here."""
        self._pending = work

    def _decide(self) -> None:
        if self._pending is not None:
            work, self._pending = self._pending, None
            found = work()
            if found is not None:
                self._version, self._source, self._assumed = found

    @property
    def version(self) -> Version:
        self._decide()
        return self._version

    @property
    def source(self) -> str:
        self._decide()
        return self._source

    @property
    def assumed(self) -> str:
        self._decide()
        return self._assumed

    @property
    def package(self) -> str:
        """The distribution a dependency file pins for this version (``tensorflow-gpu``), as PEP
        503 names it, with its extras (``jax[tpu]``); "" when the version comes from anything
        else (what detlint's own environment has installed says nothing of what the project
        trains with)."""
        found = _PINNED_PACKAGE.search(self.source)
        if not found:
            return ""
        return re.sub(r"[-_.]+", "-", found.group(1)).lower() + (found.group(2) or "").lower()

    def set(self, version: Version, source: str, assumed: str = "") -> None:
        self._pending = None
        self._version, self._source, self._assumed = version, source, assumed

    def __repr__(self) -> str:
        return f"Target({self.version}, {self.source!r})"


def _newest_targets() -> dict[str, Target]:
    return {key: Target(newest_known(key)) for key in FRAMEWORKS}


@dataclass
class Settings:
    project_root: Path
    config_file: Optional[Path] = None
    targets: dict[str, Target] = field(default_factory=_newest_targets)  # framework -> version
    # the folder whose dependency files were read (a subfolder with its own requirements.txt)
    version_root: Optional[Path] = None
    # Keras as configured or pinned; else it follows TensorFlow's version (see keras_major)
    keras_set: Optional[int] = None
    keras_set_source: str = ""
    seed: int = DEFAULT_SEED
    # the backend Keras 3 runs on where a program does not set KERAS_BACKEND itself (None:
    # TensorFlow, Keras's default; ~/.keras/keras.json is not read)
    keras_backend: Optional[str] = None
    select: list[str] = field(default_factory=lambda: ["DET"])
    select_explicit: bool = False  # the user chose `select` (the default does not turn on opt-in rules)
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    extend_exclude: list[str] = field(default_factory=list)
    entry_points: list[str] = field(default_factory=list)
    not_training: list[str] = field(default_factory=lambda: list(DEFAULT_NOT_TRAINING))
    src: list[str] = field(default_factory=lambda: [".", "src"])
    respect_gitignore: bool = True
    output_format: str = "concise"
    cache_dir: str = ".detlint_cache"
    severity: dict[str, str] = field(default_factory=dict)  # code or prefix -> error/warning/note
    docs_url: Optional[str] = None  # where the rules page is published; no rule URLs without it
    # per-file limits (0 turns one off): a larger file, or one whose parse runs longer, gets DET001
    max_file_size: int = 1024  # KiB of source (of code, for a notebook)
    file_timeout: float = 60.0  # seconds
    # the least sure findings shown: certain, likely or possible (lint/confidence.py)
    min_confidence: str = "likely"

    def setting(self, key: str) -> Any:
        """A setting's value by its [tool.detlint] name (``keras-backend``)."""
        return getattr(self, _KEYS[key][1])

    def version_of(self, key: str) -> Version:
        return self.targets[key].version

    # TensorFlow's target, which the TensorFlow-only settings logic (eras, Keras) reads
    @property
    def tf_version(self) -> Version:
        return self.targets["tensorflow"].version

    @property
    def tf_version_source(self) -> str:
        return self.targets["tensorflow"].source

    @property
    def tf_version_assumed(self) -> str:
        return self.targets["tensorflow"].assumed

    @property
    def keras_major(self) -> int:
        if self.keras_set is not None:
            return self.keras_set
        return 2 if self.tf_version < Version(2, 16) else 3

    @keras_major.setter
    def keras_major(self, value: int) -> None:
        self.keras_set = value

    @property
    def keras_source(self) -> str:
        if self.keras_set is not None:
            return self.keras_set_source
        return f"tf.keras is Keras {self.keras_major} in TensorFlow {self.tf_version}"

    @keras_source.setter
    def keras_source(self, value: str) -> None:
        self.keras_set_source = value

    def describe(self) -> dict[str, Any]:
        versions: dict[str, Any] = {}
        for key, target in self.targets.items():
            setting = framework(key).setting
            versions[setting], versions[f"{setting}-source"] = str(target.version), target.source
        return {
            "project-root": str(self.project_root),
            "config-file": str(self.config_file) if self.config_file else None,
            **versions,
            "version-root": str(self.version_root) if self.version_root else None,
            "keras-version": self.keras_major,
            "keras-version-source": self.keras_source,
            "seed": self.seed, "keras-backend": self.keras_backend or "tensorflow",
            "select": self.select, "extend-select": self.extend_select, "ignore": self.ignore,
            "per-file-ignores": self.per_file_ignores,
            "exclude": self.exclude, "extend-exclude": self.extend_exclude,
            "entry-points": self.entry_points, "not-training": self.not_training, "src": self.src,
            "respect-gitignore": self.respect_gitignore, "output-format": self.output_format,
            "cache-dir": self.cache_dir, "severity": self.severity, "docs-url": self.docs_url,
            "max-file-size": self.max_file_size, "file-timeout": self.file_timeout,
            "min-confidence": self.min_confidence,
        }


# key -> (type check, attribute)
_KEYS: dict[str, tuple[type, str]] = {
    **{fw.setting: (str, "targets") for fw in FRAMEWORKS.values()}, "keras-version": (int, "keras_major"),
    "keras-backend": (str, "keras_backend"), "seed": (int, "seed"), "select": (list, "select"), "extend-select": (list, "extend_select"),
    "ignore": (list, "ignore"), "extend-ignore": (list, "ignore"),
    "per-file-ignores": (dict, "per_file_ignores"), "exclude": (list, "exclude"),
    "extend-exclude": (list, "extend_exclude"), "entry-points": (list, "entry_points"),
    "not-training": (list, "not_training"), "src": (list, "src"), "respect-gitignore": (bool, "respect_gitignore"),
    "output-format": (str, "output_format"), "cache-dir": (str, "cache_dir"),
    "severity": (dict, "severity"), "docs-url": (str, "docs_url"),
    "max-file-size": (int, "max_file_size"), "file-timeout": (float, "file_timeout"),
    "min-confidence": (str, "min_confidence"),
}
_CODE_KEYS = ("select", "extend-select", "ignore", "extend-ignore")


def not_training(rel_path: str, patterns: Iterable[str]) -> bool:
    """Does the project-relative ``rel_path`` match a ``not-training`` pattern? Without "/" a
    pattern names a folder anywhere or the file itself (``tests``, ``test_*.py``); with "/" it is
    matched against the path (``tools/plots/*``), a folder pattern covering what is inside."""
    parts = rel_path.split("/")
    for pattern in patterns:
        pattern = pattern.strip("/")
        if not pattern:
            continue
        if "/" not in pattern:
            if any(fnmatch.fnmatchcase(part, pattern) for part in parts):
                return True
        elif any(fnmatch.fnmatchcase("/".join(parts[:i]), pattern) for i in range(1, len(parts) + 1)):
            return True
    return False


def find_project_root(start: Path) -> Path:
    """The folder holding ``start``'s pyproject.toml or repository, found from the path as named
    (links not followed, then resolved): ``proj/lnk.py -> ../outside/victim.py`` and
    ``proj/sub/victim.py`` through ``proj/sub -> ../outside`` belong to ``proj``, whose --fix and
    cache do not write outside it."""
    named, start = start, home_folder(start)
    for directory in (start, *start.parents):
        if (directory / "pyproject.toml").is_file() or (directory / ".git").exists():
            return directory.resolve()
    # no pyproject.toml and no repository (an unpacked archive): a package's setup.py or
    # setup.cfg, or a dependency file (requirements.txt, ...) marks the root, so `detlint
    # examples/nb.ipynb` still sees the project's own package next to examples/ and
    # `detlint scripts/run.py` the pins above it (never the working folder: the answer must not
    # depend on it)
    for directory in (start, *start.parents):
        if has_dependency_file(directory):
            return directory.resolve()
    return below_named_links(start, named).resolve()


def _target_version(settings: Settings, root: Path, eras: Sequence["Era"], background: bool = False) -> None:
    """No TensorFlow version in the settings: the pins of the version root, else what is installed
    in the project's environment, unless the code cannot run on that (TF1 graph code, TF 2.21
    installed): then the newest version the code's evidence allows, said as assumed. The scan of
    the code runs in the background with ``background``, decided when first asked for."""
    assert settings.version_root is not None
    target = settings.targets["tensorflow"]
    found = _pinned_upward(settings, "tensorflow", root)
    installed = installed_tf_version(settings.version_root, root)
    if installed is not None and getattr(installed, "in_project", False):
        target.runs = (installed[0], installed[1])
    if found is not None:
        target.set(*found)
        target.pinned = True
        target.allows = getattr(found, "allows", ())
        return
    if installed is not None:
        target.set(*installed)
    if not eras:
        return
    from detlint.settings.eras import code_era, project_files

    folder = settings.version_root
    scan = (lambda: code_era(project_files(folder), eras))
    guess_of = in_background(scan) if background else scan

    def decide() -> Optional[tuple[Version, str, str]]:
        guess = guess_of()
        # a few files of another era (a migration guide among current notebooks) decide nothing
        if guess is not None and guess.share >= ERA_SHARE and (installed is None or installed[0] not in guess.versions):
            return guess.version, guess.describe(), f"TensorFlow {guess.version} assumed from {guess.evidence[0]} use"
        return None

    target.decide_later(decide)


def _pinned_upward(settings: Settings, key: str, root: Path) -> Optional[tuple[Version, str]]:
    """The pin of framework ``key`` in the version root's dependency files, else in those of the
    folders above it up to the project root (a subfolder's requirements.txt that names only its
    extra packages leaves the framework to the project's own pin)."""
    assert settings.version_root is not None
    folder = settings.version_root
    while True:
        found = pinned_framework_version(folder, key, warn)
        if found is not None or folder == root or root not in folder.parents:
            return found
        folder = folder.parent


def _framework_version(settings: Settings, key: str, root: Path) -> None:
    """No version of framework ``key`` in the settings: its pins, else what is installed."""
    assert settings.version_root is not None
    pinned = _pinned_upward(settings, key, root)
    installed = installed_version(key, settings.version_root, root)
    if installed is not None and getattr(installed, "in_project", False):
        settings.targets[key].runs = (installed[0], installed[1])
    found = pinned or installed
    if found:
        settings.targets[key].set(*found)
        settings.targets[key].pinned = pinned is not None
        settings.targets[key].allows = getattr(pinned, "allows", ())


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return parse_toml(read_regular(path).decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except TomlError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _read_pyproject(path: Path, ours: bool = False) -> dict[str, Any]:
    """The parsed file, or {} with a warning when a pyproject.toml that does not configure
    detlint cannot be read: it belongs to other tools, and judging it is not detlint's job."""
    try:
        return _read_toml(path)
    except ConfigError as exc:
        try:
            mentions_us = b"tool.detlint" in read_regular(path)
        except OSError:
            mentions_us = False
        if ours or mentions_us:
            raise
        warn(f"{exc}; its settings and dependency pins are ignored")
        return {}


def _apply_table(settings: Settings, table: dict[str, Any], where: str,
                 known_codes: Optional[Iterable[str]] = None) -> None:
    for key, value in table.items():
        if key not in _KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}; known keys: {', '.join(sorted(_KEYS))}")
        expected, attr = _KEYS[key]
        label = f"--{key}" if where == "command line" else f"{where}: {key}"
        problem = size_problem(value)  # first: later messages quote the value
        if problem:
            raise ConfigError(f"{label}: {problem}")
        if attr == "targets" and isinstance(value, (int, float)) and not isinstance(value, bool):
            raise ConfigError(f"{where}: {key} must be a quoted string such as \"2.10\"; "
                              f"unquoted, TOML reads it as the number {value!r}")
        if key in ("max-file-size", "file-timeout"):  # a number >= 0 (KiB, seconds); 0 = no limit
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 \
                    or (expected is int and not isinstance(value, int)):
                raise ConfigError(f"{where}: {key} must be a {'whole ' if expected is int else ''}number >= 0 "
                                  f"(0 turns the limit off), got {value!r}")
            setattr(settings, attr, expected(value))
            continue
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ConfigError(f"{where}: {key} must be a {expected.__name__}, got {value!r}")
        if expected is list and not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: {key} must be a list of strings")
        if attr == "targets":
            fw = next(f for f in FRAMEWORKS.values() if f.setting == key)
            version = parse_version_option(value, f"{where}: {key}", fw.key)
            source = fw.option if where == "command line" else f"{where} {key}"
            settings.targets[fw.key].set(version, source)
            settings.targets[fw.key].explicit = True
            continue
        if key == "seed":
            try:
                check_seed(value)
            except ValueError as exc:
                raise ConfigError(f"{where}: {exc}") from None
        if key == "keras-version":
            if value not in (2, 3):
                raise ConfigError(f"{where}: keras-version must be 2 or 3, got {value!r}")
            settings.keras_source = f"{where} keras-version"
        if key == "keras-backend" and value not in KERAS_BACKENDS:
            raise ConfigError(f"{where}: keras-backend must be one of {', '.join(KERAS_BACKENDS)}, got {value!r}")
        if key == "min-confidence" and value not in CONFIDENCE_LEVELS:
            raise ConfigError(f"{where}: min-confidence must be one of {', '.join(CONFIDENCE_LEVELS)}, got {value!r}")
        if key == "output-format" and value not in OUTPUT_FORMATS:
            raise ConfigError(f"{where}: output-format must be one of {', '.join(OUTPUT_FORMATS)}")
        if key in _CODE_KEYS and known_codes is not None:
            check_codes(value, known_codes, label)
        if key == "per-file-ignores":
            for pattern, codes in value.items():
                if isinstance(codes, str):
                    codes = [codes]
                if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                    raise ConfigError(f"{where}: per-file-ignores[{pattern!r}] must be a list of codes")
                if known_codes is not None:
                    check_codes(codes, known_codes, f"{label}[{pattern!r}]")
                value[pattern] = codes
        if key == "severity":
            for code, level in value.items():
                if level not in SEVERITIES:
                    raise ConfigError(f"{where}: severity[{code!r}] must be one of {', '.join(SEVERITIES)}, "
                                      f"got {level!r}")
            if known_codes is not None:
                check_codes(list(value), known_codes, label)
        if key == "docs-url":
            problem = docs_url_problem(value)
            if problem:
                raise ConfigError(f"{label} {problem}")
        if key == "extend-ignore":
            value = settings.ignore + value
        if key == "select":
            settings.select_explicit = True
        setattr(settings, attr, value)


def parse_version_option(text: str, where: str, key: str = "tensorflow") -> Version:
    fw = framework(key)
    try:
        version = release_of(Version.parse(text), key)
    except ValueError:
        raise ConfigError(f"{where}: {text!r} is not a {fw.title} version such as {fw.releases[-1]}") from None
    if version not in known_versions(key):
        raise ConfigError(f"{where}: {fw.title} {version} is outside the versions detlint knows "
                          f"({fw.releases[0]} to {fw.releases[-1]})")
    return version


def load_settings(paths: list[Path], cli: Optional[dict[str, Any]] = None,
                  config_path: Optional[Path] = None, isolated: bool = False,
                  known_codes: Optional[Iterable[str]] = None, eras: Sequence["Era"] = (),
                  background: bool = False) -> Settings:
    """Settings for a run: defaults < pyproject ``[tool.detlint]`` < command line.

    With ``known_codes`` (the knowledge base's rule codes), selections naming no known code or
    prefix are an error; the flake8 plugin passes none, as flake8 owns selection there. ``eras``
    (the knowledge base's) let the code say its TensorFlow version when nothing pins it;
    ``background`` scans the code for that in a child process while the caller goes on."""
    cli = cli or {}
    start = config_path.parent if config_path else (paths[0] if paths else Path.cwd())
    start = start if start.exists() else Path.cwd()
    root = find_project_root(start)
    settings = Settings(project_root=root)
    if not isolated:
        pyproject = config_path or (root / "pyproject.toml")
        if config_path is not None and not config_path.is_file():
            try:  # from its metadata: a FIFO is never opened
                what = f"is {what_it_is(config_path.stat().st_mode)}"
            except FileNotFoundError:
                what = "does not exist"
            except OSError as exc:
                what = f"cannot be read ({exc.strerror or exc})"
            raise ConfigError(f"config file {config_path} {what}")
        if pyproject.is_file():
            data = _read_pyproject(pyproject, ours=config_path is not None)
            tool = data.get("tool", {})
            if not isinstance(tool, dict):
                warn(f"{pyproject}: 'tool' is not a table; ignored")
                tool = {}
            table = tool.get("detlint")
            if table is not None:
                if not isinstance(table, dict):
                    raise ConfigError(f"{pyproject}: [tool.detlint] must be a table")
                settings.config_file = pyproject
                _apply_table(settings, dict(table), f"{pyproject.name} [tool.detlint]", known_codes)
    if cli:
        _apply_table(settings, {k: v for k, v in cli.items() if v is not None}, "command line", known_codes)
    settings.version_root = version_root(start, root)
    for key, target in settings.targets.items():
        if target.source == NEWEST_SOURCE:
            if key == "tensorflow":
                _target_version(settings, root, eras, background)
            else:
                _framework_version(settings, key, root)
    if settings.keras_set is None:  # else configured; unpinned, it follows TensorFlow's version
        pinned_keras = pinned_keras_major(settings.version_root, warn)
        if pinned_keras is not None:
            settings.keras_major, settings.keras_source = pinned_keras
    return settings
