"""Settings: ``[tool.detlint]`` in pyproject.toml, command-line overrides, and the target version."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from .versions import NEWEST_KNOWN, Version, lowest_allowed

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.9/3.10 only
    import tomli as tomllib

TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly", "tensorflow-macos",
                    "tensorflow-intel", "tensorflow-aarch64")
_REQ_RE = re.compile(r"^\s*(tensorflow(?:-cpu|-gpu|-macos|-intel|-aarch64)?|tf-nightly)\s*(\[[^\]]*\])?"
                     r"\s*([^;#]*)", re.IGNORECASE)
OUTPUT_FORMATS = ("concise", "full", "json", "sarif", "github")
DEFAULT_SEED = 42


class ConfigError(Exception):
    """Bad configuration or arguments: reported with exit code 2."""


@dataclass
class Settings:
    project_root: Path
    config_file: Optional[Path] = None
    tf_version: Version = NEWEST_KNOWN
    tf_version_source: str = "newest version detlint knows"
    keras_major: int = 3
    keras_source: str = "TensorFlow >= 2.16 ships Keras 3"
    seed: int = DEFAULT_SEED
    select: list[str] = field(default_factory=lambda: ["DET"])
    select_explicit: bool = False  # the user chose `select` (the default does not turn on opt-in rules)
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    extend_exclude: list[str] = field(default_factory=list)
    entry_points: list[str] = field(default_factory=list)
    src: list[str] = field(default_factory=lambda: [".", "src"])
    respect_gitignore: bool = True
    output_format: str = "concise"
    cache_dir: str = ".detlint_cache"
    # per-file limits (0 turns one off): a larger file, or one whose parse runs longer, gets DET001
    max_file_size: int = 1024  # KiB of source (of code, for a notebook)
    file_timeout: float = 60.0  # seconds

    def describe(self) -> dict[str, Any]:
        return {
            "project-root": str(self.project_root),
            "config-file": str(self.config_file) if self.config_file else None,
            "tensorflow-version": str(self.tf_version),
            "tensorflow-version-source": self.tf_version_source,
            "keras-version": self.keras_major,
            "keras-version-source": self.keras_source,
            "seed": self.seed,
            "select": self.select, "extend-select": self.extend_select, "ignore": self.ignore,
            "per-file-ignores": self.per_file_ignores,
            "exclude": self.exclude, "extend-exclude": self.extend_exclude,
            "entry-points": self.entry_points, "src": self.src,
            "respect-gitignore": self.respect_gitignore, "output-format": self.output_format,
            "cache-dir": self.cache_dir,
            "max-file-size": self.max_file_size, "file-timeout": self.file_timeout,
        }


# key -> (type check, attribute)
_KEYS: dict[str, tuple[type, str]] = {
    "tensorflow-version": (str, "tf_version"), "keras-version": (int, "keras_major"),
    "seed": (int, "seed"), "select": (list, "select"), "extend-select": (list, "extend_select"),
    "ignore": (list, "ignore"), "extend-ignore": (list, "ignore"),
    "per-file-ignores": (dict, "per_file_ignores"), "exclude": (list, "exclude"),
    "extend-exclude": (list, "extend_exclude"), "entry-points": (list, "entry_points"),
    "src": (list, "src"), "respect-gitignore": (bool, "respect_gitignore"),
    "output-format": (str, "output_format"), "cache-dir": (str, "cache_dir"),
    "max-file-size": (int, "max_file_size"), "file-timeout": (float, "file_timeout"),
}


def find_project_root(start: Path) -> Path:
    start = start.resolve()
    if start.is_file():
        start = start.parent
    for directory in (start, *start.parents):
        if (directory / "pyproject.toml").is_file() or (directory / ".git").exists():
            return directory
    return start


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc


def _apply_table(settings: Settings, table: dict[str, Any], where: str) -> None:
    for key, value in table.items():
        if key not in _KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}; known keys: {', '.join(sorted(_KEYS))}")
        expected, attr = _KEYS[key]
        if key in ("max-file-size", "file-timeout"):  # a number >= 0 (KiB, seconds); 0 = no limit
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 \
                    or (expected is int and not isinstance(value, int)):
                raise ConfigError(f"{where}: {key} must be a {'whole ' if expected is int else ''}number >= 0 "
                                  f"(0 turns the limit off), got {value!r}")
            setattr(settings, attr, expected(value))
            continue
        if expected is str and isinstance(value, (int, float)) and key == "tensorflow-version":
            value = str(value)
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ConfigError(f"{where}: {key} must be a {expected.__name__}, got {value!r}")
        if expected is list and not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: {key} must be a list of strings")
        if key == "tensorflow-version":
            settings.tf_version = parse_version_option(value, f"{where}: tensorflow-version")
            settings.tf_version_source = f"{where} tensorflow-version"
            continue
        if key == "keras-version":
            if value not in (2, 3):
                raise ConfigError(f"{where}: keras-version must be 2 or 3, got {value!r}")
            settings.keras_source = f"{where} keras-version"
        if key == "output-format" and value not in OUTPUT_FORMATS:
            raise ConfigError(f"{where}: output-format must be one of {', '.join(OUTPUT_FORMATS)}")
        if key == "per-file-ignores":
            for pattern, codes in value.items():
                if isinstance(codes, str):
                    codes = [codes]
                if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                    raise ConfigError(f"{where}: per-file-ignores[{pattern!r}] must be a list of codes")
                value[pattern] = codes
        if key == "extend-ignore":
            value = settings.ignore + value
        if key == "select":
            settings.select_explicit = True
        setattr(settings, attr, value)


def parse_version_option(text: str, where: str) -> Version:
    try:
        return Version.parse(text)
    except ValueError:
        raise ConfigError(f"{where}: {text!r} is not a TensorFlow version such as 2.15") from None


def _dependency_lines(root: Path) -> list[tuple[str, str]]:
    """(requirement line, file it came from) from pyproject.toml, requirements*.txt, setup.cfg."""
    found: list[tuple[str, str]] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = _read_toml(pyproject)
        except ConfigError:
            data = {}
        project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
        deps = list(project.get("dependencies", []) or [])
        for extra in (project.get("optional-dependencies", {}) or {}).values():
            deps.extend(extra or [])
        poetry = data.get("tool", {}).get("poetry", {}).get("dependencies", {}) if isinstance(
            data.get("tool"), dict) else {}
        for name, spec in (poetry or {}).items():
            if isinstance(spec, str):
                deps.append(f"{name}{'' if spec[:1] in '<>=!~' else '=='}{spec.lstrip('^')}")
        found.extend((d, "pyproject.toml") for d in deps if isinstance(d, str))
    for req in sorted(root.glob("requirements*.txt")):
        try:
            found.extend((line, req.name) for line in req.read_text(encoding="utf-8", errors="replace").splitlines())
        except OSError:
            continue
    setup_cfg = root / "setup.cfg"
    if setup_cfg.is_file():
        try:
            text = setup_cfg.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        found.extend((line, "setup.cfg") for line in text.splitlines())
    return found


_KERAS_REQ_RE = re.compile(r"^\s*(keras)\s*(\[[^\]]*\])?\s*([^;#]*)", re.IGNORECASE)


def _pins(root: Path, pattern: "re.Pattern[str]") -> Iterator[tuple[str, str, str]]:
    """(package, version specifier, where) for each non-empty pin of ``pattern``'s package."""
    for line, where in _dependency_lines(root):
        match = pattern.match(line)
        if match and match.group(3).strip():
            yield match.group(1), match.group(3).strip(), where


def pinned_tf_version(root: Path) -> Optional[tuple[Version, str]]:
    """The TensorFlow version the project's dependency pins allow (the oldest allowed)."""
    for package, spec, where in _pins(root, _REQ_RE):
        version = lowest_allowed(spec)
        if version is not None:
            return version, f"{where} pins {package}{spec}"
    return None


def pinned_keras_major(root: Path) -> Optional[tuple[int, str]]:
    """Keras 3 when the project pins standalone keras >= 3 (it then runs on any TF >= 2.15)."""
    for _, spec, where in _pins(root, _KERAS_REQ_RE):
        numbers = re.findall(r"(>=|==|~=|>)\s*(\d+)", spec)
        if numbers:
            return (3 if int(numbers[0][1]) >= 3 else 2), f"{where} pins keras{spec}"
    return None


def installed_tf_version() -> Optional[tuple[Version, str]]:
    """The installed TensorFlow, read from package metadata (TensorFlow is never imported)."""
    from importlib import metadata

    for dist in TF_DISTRIBUTIONS:
        try:
            return Version.parse(metadata.version(dist)), f"installed {dist} {metadata.version(dist)}"
        except (metadata.PackageNotFoundError, ValueError):
            continue
    return None


def load_settings(paths: list[Path], cli: Optional[dict[str, Any]] = None,
                  config_path: Optional[Path] = None, isolated: bool = False) -> Settings:
    """Settings for a run: defaults < pyproject ``[tool.detlint]`` < command line."""
    cli = cli or {}
    start = config_path.parent if config_path else (paths[0] if paths else Path.cwd())
    root = find_project_root(start if start.exists() else Path.cwd())
    settings = Settings(project_root=root)
    if not isolated:
        pyproject = config_path or (root / "pyproject.toml")
        if config_path is not None and not config_path.is_file():
            raise ConfigError(f"config file {config_path} does not exist")
        if pyproject.is_file():
            table = _read_toml(pyproject).get("tool", {}).get("detlint")
            if table is not None:
                if not isinstance(table, dict):
                    raise ConfigError(f"{pyproject}: [tool.detlint] must be a table")
                settings.config_file = pyproject
                _apply_table(settings, dict(table), f"{pyproject.name} [tool.detlint]")
    if cli:
        _apply_table(settings, {k: v for k, v in cli.items() if v is not None}, "command line")
        if cli.get("tensorflow-version") is not None:
            settings.tf_version_source = "--tf-version"
    if settings.tf_version_source == "newest version detlint knows":
        found = pinned_tf_version(root) or installed_tf_version()
        if found:
            settings.tf_version, settings.tf_version_source = found
    if "keras-version" not in (settings.keras_source or "") and not settings.keras_source.endswith("keras-version"):
        pinned_keras = pinned_keras_major(root)
        if pinned_keras is not None:
            settings.keras_major, settings.keras_source = pinned_keras
        elif settings.tf_version < Version(2, 16):
            settings.keras_major, settings.keras_source = 2, f"tf.keras is Keras 2 in TensorFlow {settings.tf_version}"
        else:
            settings.keras_major, settings.keras_source = 3, f"tf.keras is Keras 3 in TensorFlow {settings.tf_version}"
    return settings
