"""What a project's own files say about the TensorFlow and Keras it runs: dependency pins, and
the versions installed in the project's interpreter. Nothing here imports or runs project code
(``setup.py`` is read with ``ast``, never executed).

A folder with its own dependency file (``requirements.txt``, ``setup.py``, ``environment.yml``,
...) is its own project for version purposes: a repository of examples often holds one folder
per TensorFlow era.
"""
from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from detlint.knowledge.frameworks import framework
from detlint.settings.tomlfile import TomlError, parse_toml
from detlint.knowledge.versions import Version, known_versions, newest_known, release_of
from detlint.settings.requirements import allowed, allows_minor, canonical, pins_of, readable
from detlint.lint.files.named_paths import home_folder
from detlint.lint.files.sources import read_regular
from detlint.run_inputs import names_matching

TF_DISTRIBUTIONS = framework("tensorflow").distributions
DEPENDENCY_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "environment.yml", "environment.yaml", "Pipfile")
# requirements.txt in any case (REQUIREMENTS.txt, Requirements.txt: pip reads whatever it is given)
REQUIREMENTS_GLOB = "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in "requirements*.txt")
MAX_BYTES = 1 << 20

Warn = Callable[[str], None]


def has_dependency_file(folder: Path) -> bool:
    """Asked of every folder above a checked path: only what matches is an input of a replay."""
    return any((folder / name).is_file() for name in DEPENDENCY_FILES) or bool(names_matching(folder, REQUIREMENTS_GLOB))


def version_root(start: Path, project_root: Path) -> Path:
    """The folder whose dependency files say which versions ``start`` runs on: the nearest one at
    or above it, up to the project root, that has any. A folder on the way that is a link out of
    the project (``sub -> ../outside``) is passed over: its pins are not the project's."""
    root = project_root.resolve()
    folder = home_folder(start)
    for candidate in (folder, *folder.parents):
        real = candidate.resolve()
        if real == root:
            return root
        if root in real.parents and has_dependency_file(real):
            return real
    return root


def _read(path: Path) -> str:
    """The file's text: UTF-8, or UTF-16 with its byte-order mark (conda on Windows writes it)."""
    try:
        data = read_regular(path, MAX_BYTES)  # a FIFO named requirements.txt is not waited on
    except OSError:
        return ""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def _strings(value: Any, what: str, where: str, warn: Warn) -> list[str]:
    """A list of requirement strings; anything else is warned about and ignored."""
    if value is None:
        return []
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    warn(f"{where}: {what} is not a list; ignored")
    return []


def _table(value: Any, what: str = "", where: str = "", warn: Optional[Warn] = None) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if value is not None and warn is not None:
        warn(f"{where}: {what} is not a table; ignored")
    return {}


def pyproject_requirements(path: Path, warn: Warn) -> list[str]:
    """[project] dependencies and optional ones, [tool.poetry] dependencies; malformed parts are
    skipped with a warning (the file is read for its pins only, its shape is other tools' business)."""
    where = str(path)
    try:
        data = parse_toml(read_regular(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, TomlError):
        return []  # said where the settings are read
    project = _table(data.get("project"), "[project]", where, warn)
    deps = _strings(project.get("dependencies"), "[project] dependencies", where, warn)
    for extra, items in _table(project.get("optional-dependencies"), "[project] optional-dependencies",
                               where, warn).items():
        deps.extend(_strings(items, f"[project.optional-dependencies] {extra}", where, warn))
    tool = _table(data.get("tool"), "'tool'", where, warn)
    poetry = _table(tool.get("poetry"), "[tool.poetry]", where, warn)
    deps.extend(_named_requirements(_table(poetry.get("dependencies"), "[tool.poetry] dependencies", where, warn)))
    return deps


def _named_requirements(table: dict[str, Any]) -> list[str]:
    """``{"tensorflow": "^2.4"}`` (Poetry, Pipfile; a table with ``version`` too) as requirement
    strings: ``tensorflow==2.4``; ``*`` is any version."""
    deps = []
    for name, spec in table.items():
        if isinstance(spec, dict):
            spec = spec.get("version")
        if isinstance(spec, str):
            spec = spec.strip().lstrip("^")
            deps.append(name + ("" if spec in ("", "*") else spec if spec[:1] in "<>=!~" else "==" + spec))
    return deps


def pipfile_requirements(path: Path) -> list[str]:
    try:
        data = parse_toml(_read(path))
    except TomlError:
        return []
    return [dep for section in ("packages", "dev-packages") for dep in _named_requirements(_table(data.get(section)))]


def conda_requirements(text: str) -> list[str]:
    """``- tensorflow-gpu=1.15.0=py37_0`` (conda: one ``=`` is a prefix match) and the ``pip:``
    list, as requirement strings."""
    deps = []
    for line in text.splitlines():
        item = re.match(r"^\s*-\s*([A-Za-z0-9_.\-]+)\s*(.*)$", line)
        if not item:
            continue
        name, spec = item.group(1), item.group(2).strip().strip("'\"")
        if spec.startswith("=") and not spec.startswith("=="):
            spec = "==" + spec[1:].split("=")[0]
        deps.append(name + spec)
    return deps


def setup_py_requirements(text: str) -> list[str]:
    """String literals given to ``install_requires``/``extras_require`` (directly, or through a
    module-level name bound to a list). The file is parsed, never run."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    assigned: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned[node.targets[0].id] = node.value

    def literal_strings(node: Optional[ast.expr], depth: int = 0) -> list[str]:
        if isinstance(node, ast.Name) and depth < 3:
            return literal_strings(assigned.get(node.id), depth + 1)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if isinstance(node, ast.Dict):
            return [s for value in node.values for s in literal_strings(value, depth + 1)]
        if isinstance(node, ast.BinOp):
            return literal_strings(node.left, depth) + literal_strings(node.right, depth)
        # install_requires = requirements["install"], a module-level dict's item
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and depth < 3 \
                and isinstance(node.slice, ast.Constant) and isinstance(assigned.get(node.value.id), ast.Dict):
            table = assigned[node.value.id]
            assert isinstance(table, ast.Dict)
            return [s for key, value in zip(table.keys, table.values)
                    if isinstance(key, ast.Constant) and key.value == node.slice.value
                    for s in literal_strings(value, depth + 1)]
        return []

    deps: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg in ("install_requires", "extras_require", "requires"):
                    deps.extend(literal_strings(keyword.value))
    return deps


_INCLUDE = re.compile(r"^\s*(?:-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+)(\S+)")
MAX_INCLUDES = 20


def _requirements_file(path: Path, folder: Path, name: str, seen: Optional[set[Path]] = None) -> list[tuple[str, str]]:
    """A requirements file's lines, with those of the files it includes (``-r base.txt``, ``-c``)
    as pip reads them: relative to the including file, each once, inside ``folder``'s tree."""
    seen = set() if seen is None else seen
    real = path.resolve()
    if real in seen or len(seen) >= MAX_INCLUDES:
        return []
    seen.add(real)
    out: list[tuple[str, str]] = []
    for line in _read(path).splitlines():
        include = _INCLUDE.match(line)
        if include is None:
            out.append((line, name))
            continue
        target = (path.parent / include.group(1)).resolve()
        if target.is_file() and (target.parent == folder.resolve() or folder.resolve() in target.parents
                                 or target.parent in folder.resolve().parents):
            out.extend(_requirements_file(target, folder, f"{name} (via {include.group(1)})", seen))
    return out


def requirement_lines(folder: Path, warn: Warn) -> list[tuple[str, str]]:
    """(requirement, file it came from), from every dependency file of ``folder``."""
    found: list[tuple[str, str]] = []
    if (folder / "pyproject.toml").is_file():
        found.extend((d, "pyproject.toml") for d in pyproject_requirements(folder / "pyproject.toml", warn))
    for req in sorted(folder.glob(REQUIREMENTS_GLOB)):
        found.extend(_requirements_file(req, folder, req.name))
    for name, reader in (("setup.py", setup_py_requirements), ("setup.cfg", str.splitlines),
                         ("environment.yml", conda_requirements), ("environment.yaml", conda_requirements)):
        if (folder / name).is_file():
            found.extend((line, name) for line in reader(_read(folder / name)))
    if (folder / "Pipfile").is_file():
        found.extend((d, "Pipfile") for d in pipfile_requirements(folder / "Pipfile"))
    return found


CI_FILES = (".travis.yml", ".gitlab-ci.yml", "azure-pipelines.yml", ".circleci/config.yml", "tox.ini")
_PIP_INSTALL = re.compile(r"\b(?:pip3?|python3?\s+-m\s+pip)\s+install\s+([^\n#;&|]*)")
_CONDA_INSTALL = re.compile(r"\bconda\s+install\s+([^\n#;&|]*)")


def ci_requirement_lines(folder: Path) -> list[tuple[str, str]]:
    """Requirements the folder's CI configuration installs (``pip install tensorflow==1.0.0a0``
    in .travis.yml, a GitHub workflow step): what the repository's own checks ran on."""
    files = [folder / name for name in CI_FILES if (folder / name).is_file()]
    workflows = folder / ".github" / "workflows"
    if workflows.is_dir():
        files += sorted(p for p in workflows.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())
    found: list[tuple[str, str]] = []
    for path in files[:20]:
        where = path.relative_to(folder).as_posix()
        text = _read(path)
        for words in _PIP_INSTALL.findall(text) + _CONDA_INSTALL.findall(text):
            for word in words.split():
                word = word.strip("'\"")
                if word.endswith(".whl"):  # a wheel's file name says its package and version
                    parts = word.rsplit("/", 1)[-1].split("-")
                    if len(parts) >= 2:
                        found.append((f"{parts[0]}=={parts[1]}", where))
                    continue
                if word and not word.startswith(("-", "$", ".", "/")) and "://" not in word:
                    found.append((word.replace("=", "==", 1) if re.match(r"^[\w.-]+=[\d]", word) else word, where))
    return found


def conda_files_lines(folder: Path) -> list[tuple[str, str]]:
    """Requirements of conda environment files not named environment.yml (``environments/
    dl_env_linux.yml``): any YAML file with a ``dependencies:`` list."""
    found: list[tuple[str, str]] = []
    for path in sorted(folder.glob("*.y*ml"))[:20]:
        if path.name in ("environment.yml", "environment.yaml") or not path.is_file():
            continue
        text = _read(path)
        if re.search(r"^dependencies\s*:", text, re.MULTILINE):
            found.extend((line, path.name) for line in conda_requirements(text))
    return found


def _pins(lines: list[tuple[str, str]], names: tuple[str, ...]) -> Iterator[tuple[str, str, str]]:
    """(package, version specifier, where) for each requirement naming one of ``names`` (PEP 503
    names: ``tensorflow_gpu`` is ``tensorflow-gpu``; a bare name too)."""
    for pin in pins_of(lines, names):
        yield pin.name + (f"[{pin.extras}]" if pin.extras else ""), pin.spec, pin.where


def pinned_version(spec: str, key: str = "tensorflow") -> Optional[tuple[Version, str]]:
    """The version a specifier means for checking: the oldest known release it allows (the one
    the code must work on). A pin older than every known release means the oldest known one, and
    says so; None when the specifier allows every version (a bare name) or cannot be read."""
    if not spec.strip() or not readable(spec):
        return None
    releases = known_versions(key)
    found = allowed(spec, releases)
    if found:
        return found[0], ""
    oldest, newest = releases[0], newest_known(key)
    if any(allows_minor(spec, Version(major, minor)) for major in range(oldest.major + 1) for minor in range(30)
           if Version(major, minor) < oldest):
        about = framework(key).before_oldest
        return oldest, f"older than any version detlint knows; checked as {oldest}" + (f", {about}" if about else "")
    return newest, f"newer than any version detlint knows; checked as {newest}"


class Pinned(tuple):  # type: ignore[type-arg]
    """A pin: (version, where), and the known releases its specifier allows (``allows``): a
    floor or a range leaves the choice among them to nearer evidence (a program's last commit)."""

    allows: tuple[Version, ...] = ()
    in_project = False  # an installed version: found in the project's own environment

    @classmethod
    def of(cls, version: Version, where: str, spec: str, key: str) -> "Pinned":
        pin = cls((version, where))
        pin.allows = tuple(allowed(spec, known_versions(key))) if readable(spec) else ()
        return pin

    def moved(self, where: str) -> "Pinned":
        """The same pin, said as found elsewhere."""
        pin = Pinned((self[0], where))
        pin.allows = self.allows
        return pin


def _floor_only(spec: str) -> bool:
    clauses = [c.strip() for c in spec.split(",") if c.strip()]
    return bool(clauses) and all(c.startswith(">") for c in clauses)  # >= and > only


def pinned_framework_version(folder: Path, key: str, warn: Warn,
                             lines: Optional[list[tuple[str, str]]] = None) -> Optional[tuple[Version, str]]:
    """The version of framework ``key`` the dependency files of ``folder`` pin (or ``lines``,
    requirement lines found elsewhere), and where."""
    if key == "tensorflow":
        return pinned_tf_version(folder, warn, lines)
    lines = requirement_lines(folder, warn) if lines is None else lines
    for package, spec, where in _pins(lines, framework(key).distributions):
        if not framework(key).floor_is_era and _floor_only(spec):
            continue  # a minimum, met by the installed or newest release
        found = pinned_version(spec, key)
        if found is not None:
            version, note = found
            return Pinned.of(version, f"{where} pins {package}{spec}" + (f" ({note})" if note else ""), spec, key)
    return None


_KERAS_2 = [Version(2, minor) for minor in range(0, 16)]
_KERAS_3 = [Version(3, minor) for minor in range(0, 30)]


def pinned_tf_version(folder: Path, warn: Warn,
                      lines: Optional[list[tuple[str, str]]] = None) -> Optional[tuple[Version, str]]:
    """The TensorFlow version the dependency files of ``folder`` pin (or ``lines``), and where."""
    lines = requirement_lines(folder, warn) if lines is None else lines
    for package, spec, where in _pins(lines, TF_DISTRIBUTIONS):
        found = pinned_version(spec)
        if found is not None:
            version, note = found
            return Pinned.of(version, f"{where} pins {package}{spec}" + (f" ({note})" if note else ""), spec,
                             "tensorflow")
    for package, spec, where in _pins(lines, ("keras",)):
        # multi-backend Keras up to 2.2 ran on TensorFlow 1 only
        versions = allowed(spec, _KERAS_2 + _KERAS_3) if spec.strip() else []
        if versions and max(versions) <= Version(2, 2):
            return Version(1, 15), f"{where} pins keras{spec}, which runs on TensorFlow 1 (1.15 assumed)"
    return None


def pinned_keras_major(folder: Path, warn: Warn) -> Optional[tuple[int, str]]:
    """Keras 3 for ``keras-core`` or ``keras>=3``; Keras 2 for ``keras<3`` and ``tf-keras``
    (Keras 2 kept for TF >= 2.16). keras-tuner, keras-hub and the like are not Keras pins."""
    for package, spec, where in _pins(requirement_lines(folder, warn), ("keras", "keras-core", "tf-keras")):
        name = canonical(package)
        if name == "keras-core":
            return 3, f"{where} requires keras-core (Keras 3)"
        if name == "tf-keras":
            return 2, f"{where} requires {package} (Keras 2 on TensorFlow)"
        versions = allowed(spec, _KERAS_2 + _KERAS_3) if spec.strip() else []
        if versions:  # the oldest it allows: the one the code must work on
            return versions[0].major, f"{where} pins keras{spec}"
    return None


def _dist_versions(site_packages: Path, distributions: tuple[str, ...] = TF_DISTRIBUTIONS
                   ) -> Iterator[tuple[str, Version, str]]:
    """(distribution, version, full version text) of each of ``distributions`` installed there."""
    for dist in distributions:
        for info in sorted(site_packages.glob(dist.replace("-", "_") + "-*.dist-info")):
            full = info.name[len(dist) + 1:-len(".dist-info")]
            try:
                yield dist, Version.parse(full), full
            except ValueError:
                continue


def _site_packages(prefix: Path) -> list[Path]:
    return sorted(prefix.glob("lib/python3*/site-packages")) + sorted(prefix.glob("Lib/site-packages"))


def project_interpreters(root: Path) -> list[tuple[Path, str]]:
    """Environments the project's code runs in, most specific first: the active virtualenv or
    conda environment, then ``.venv``/``venv``/``env`` in the project."""
    found: list[tuple[Path, str]] = []
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if os.environ.get(variable):
            found.append((Path(os.environ[variable]), f"${variable}"))
    for name in (".venv", "venv", "env"):
        if (root / name / "pyvenv.cfg").is_file() or (root / name / "conda-meta").is_dir():
            found.append((root / name, str(root / name)))
    return found


def _real(path: Path) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return str(path)


def installed_tf_version(*roots: Path) -> Optional[tuple[Version, str]]:
    return installed_version("tensorflow", *roots)


def installed_version(key: str, *roots: Path) -> Optional[tuple[Version, str]]:
    """The installed framework ``key``, read from package metadata (it is never imported): in the
    project's own environment first (a pre-commit hook runs in an environment of its own, so the
    hook and the command line give the same answer), then the one detlint runs in."""
    distributions = framework(key).distributions
    prefixes = [found for root in dict.fromkeys(roots) for found in project_interpreters(root)]
    for prefix, label in dict.fromkeys(prefixes):
        for site in _site_packages(prefix):
            for dist, version, full in _dist_versions(site, distributions):
                found = Pinned((release_of(version, key), f"{dist} {full} installed in {label}"))
                # what the project runs (outweighs a program's last commit), unless it is the
                # environment detlint itself runs in (a pre-commit hook's sets $VIRTUAL_ENV)
                found.in_project = _real(prefix) != _real(Path(sys.prefix))
                return found
    # detlint's own environment: its site-packages folders are read the same way (importing
    # importlib.metadata alone costs a cold single-file run 70 ms); other layouts ask it
    own = [Path(p) for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]
    for site in own:
        for dist, version, full in _dist_versions(site, distributions):
            return release_of(version, key), f"installed {dist} {full}"
    if own:
        return None
    from importlib import metadata

    for dist in distributions:
        try:
            return release_of(Version.parse(metadata.version(dist)), key), f"installed {dist} {metadata.version(dist)}"
        except (metadata.PackageNotFoundError, ValueError):
            continue
    return None
