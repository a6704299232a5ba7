"""Programs a project declares as commands (console scripts).

``pip install .`` turns ``bert = bert_pytorch.__main__:train`` into a command that imports
``bert_pytorch/__main__.py`` and calls ``train()``: that module is a program whose run ends with
the call, though it has no main guard. The declarations are read, never run, from
``pyproject.toml`` (``[project.scripts]``, ``[tool.poetry.scripts]``), ``setup.cfg``
(``[options.entry_points] console_scripts``) and a literal ``entry_points=`` of ``setup()`` in
``setup.py``. Only ``module:function`` targets whose module is a file of the project (at its root
or under ``src/``) count.
"""
from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path
from typing import Any, Iterable, Optional

from detlint.settings.tomlfile import TomlError, parse_toml

TARGET_RE = re.compile(r"^\s*(?:[^=\s]+\s*=\s*)?(?P<module>[\w.]+)\s*:\s*(?P<func>\w+)\s*(?:\[.*\])?\s*$")


def declared(root: Path) -> dict[Path, list[str]]:
    """The project's command modules, each with the functions its commands call (none where
    the declarations cannot be read: they are the project's packaging, not code to check)."""
    try:
        return _declared(root)
    except (OSError, ValueError, TypeError, RecursionError, MemoryError):
        return {}


def _declared(root: Path) -> dict[Path, list[str]]:
    out: dict[Path, list[str]] = {}
    for target in _targets(root):
        if not isinstance(target, str):
            continue
        match = TARGET_RE.match(target)
        if match is None:
            continue
        module = _module_file(root, match.group("module"))
        if module is not None and match.group("func") not in out.setdefault(module, []):
            out[module].append(match.group("func"))
    return out


def _targets(root: Path) -> Iterable[str]:
    yield from _from_pyproject(root / "pyproject.toml")
    yield from _from_setup_cfg(root / "setup.cfg")
    yield from _from_setup_py(root / "setup.py")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig", errors="replace") if path.is_file() else ""
    except OSError:
        return ""


def _from_pyproject(path: Path) -> Iterable[str]:
    text = _read(path)
    if not text:
        return
    try:
        doc = parse_toml(text)
    except (TomlError, ValueError):
        return  # the settings loader says what is wrong with it
    for table in (_get(doc, "project", "scripts"), _get(doc, "tool", "poetry", "scripts")):
        for value in (table or {}).values():
            if isinstance(value, str):
                yield value


def _get(doc: Any, *keys: str) -> Any:
    for key in keys:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc if isinstance(doc, dict) else None


def _from_setup_cfg(path: Path) -> Iterable[str]:
    text = _read(path)
    if "console_scripts" not in text:
        return
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
        value = parser.get("options.entry_points", "console_scripts", fallback="")
    except configparser.Error:
        return
    yield from (line for line in value.splitlines() if line.strip())


def _from_setup_py(path: Path) -> Iterable[str]:
    text = _read(path)
    if "console_scripts" not in text:
        return
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg != "entry_points":
                continue
            try:
                value = ast.literal_eval(keyword.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            if isinstance(value, str):  # the setup.cfg form, as one string
                yield from _from_setup_cfg_text(value)
            elif isinstance(value, dict):
                scripts = value.get("console_scripts", ())
                for item in [scripts] if isinstance(scripts, str) else \
                        scripts if isinstance(scripts, (list, tuple)) else ():
                    if isinstance(item, str):
                        yield item


def _from_setup_cfg_text(text: str) -> Iterable[str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
        value = parser.get("console_scripts", "", fallback=None)
    except configparser.Error:
        return
    if parser.has_section("console_scripts"):
        yield from (f"{k} = {v}" for k, v in parser.items("console_scripts"))
    elif value:
        yield value


def _module_file(root: Path, module: str) -> Optional[Path]:
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return None  # "..:main", "a..b": no module of the project
    for base in (root, root / "src"):
        for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")):
            try:
                if candidate.is_file():
                    return candidate.resolve()
            except OSError:  # a name too long for the file system
                return None
    return None
