"""The framework versions a notebook states about itself: what it printed when it last ran
(``print(torch.__version__)``, ``%watermark``, pip's "Successfully installed tensorflow-2.2.0")
and what it installs (``!pip install torch==1.4.0``, Colab's ``%tensorflow_version 1.x``).
Nothing is run; the saved JSON is read as text."""
from __future__ import annotations

import json
import re
from typing import Iterator, Optional

from detlint.knowledge.frameworks import FRAMEWORKS
from detlint.knowledge.versions import Version, release_of
from detlint.settings.requirements import canonical, parse_line

# distribution or module name (PEP 503 form) -> framework key
_NAMES: dict[str, str] = {canonical(d): fw.key for fw in FRAMEWORKS.values() for d in fw.distributions}
_NAMES.update({"tensorflow-core": "tensorflow", "pytorch": "torch", "pytorch-lightning": "lightning"})
_MODULE_ALIASES = {"tf": "tensorflow", "tensorflow": "tensorflow", "torch": "torch", "jax": "jax",
                   "pl": "lightning", "pytorch_lightning": "lightning", "lightning": "lightning"}
_NUMBER = r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-.]?(?:rc|dev|a|b|post)\w*)?"
_NAME_ALT = "|".join(sorted({re.escape(n) for n in _NAMES} | {n.replace("-", "_") for n in _NAMES}
                            | {"TensorFlow", "PyTorch", "JAX"}, key=len, reverse=True))
# "torch 1.0.0", "torch      : 1.10.1" (%watermark), "TensorFlow version: 2.2.0", "PyTorch version 1.4"
_LABELLED = re.compile(r"^\s*(" + _NAME_ALT + r")(?:\s+version)?\s*[:=]?\s+" + _NUMBER + r"\b", re.IGNORECASE)
# pip: "Successfully installed absl-py-0.9 tensorflow-2.2.0 ..."
_INSTALLED = re.compile(r"(?:^|\s)(" + _NAME_ALT + r")-" + _NUMBER + r"(?=\s|$)", re.IGNORECASE)
# pip: "Requirement already satisfied: torch in /usr/local/lib/python3.6/dist-packages (1.4.0)"
_SATISFIED = re.compile(r"Requirement already satisfied: (" + _NAME_ALT + r")(?:[<>=!~][^ ]*)? in \S+ \(" + _NUMBER + r"\)",
                        re.IGNORECASE)
_PRINTS_VERSION = re.compile(r"\b(\w+)\.(?:__version__|version\.VERSION)\b")
_BARE_VERSION = re.compile(r"^\s*['\"]?" + _NUMBER + r"\b")
_PIP_LINE = re.compile(r"^\s*[!%]\s*(?:python3?\s+-m\s+)?pip3?\s+install\s+(.*)$", re.MULTILINE)
_COLAB_TF = re.compile(r"^\s*%tensorflow_version\s+1\.x\b", re.MULTILINE)


def _key(name: str) -> Optional[str]:
    name = canonical(name)
    return _NAMES.get(name) or {"tensorflow": "tensorflow", "pytorch": "torch", "jax": "jax"}.get(name)


def _cells(raw: str) -> list[dict]:
    try:
        cells = json.loads(raw).get("cells", [])
    except (ValueError, AttributeError, RecursionError):
        return []
    return [c for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"] if isinstance(cells, list) else []


def _text(value: object) -> str:
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


MAX_OUTPUT_LINES = 40  # a version is printed at the top of an output (a long training log is not read)


def _output_lines(cell: dict) -> Iterator[str]:
    for output in cell.get("outputs") or []:
        if not isinstance(output, dict):
            continue
        text = _text(output.get("text")) or _text((output.get("data") or {}).get("text/plain"))
        lines = text.splitlines()
        # pip says what it installed last, after its downloads
        yield from lines if len(lines) <= MAX_OUTPUT_LINES else lines[:MAX_OUTPUT_LINES] + lines[-5:]


def _version(match: "re.Match[str]", first: int) -> Version:
    """The version whose major, minor and patch numbers are the match's groups from ``first`` on."""
    return Version(*(int(match.group(first + i) or 0) for i in range(3)))


_IMPORT_AS = re.compile(r"^\s*import\s+(\w+)\s+as\s+(\w+)\s*$", re.MULTILINE)


def _printed(cell: dict, source: str, aliases: dict[str, str]) -> Iterator[tuple[str, Version, str]]:
    """(framework, version, how) from one cell's saved outputs (``aliases``: the notebook's
    ``import torch as t``, so that ``t.__version__`` is torch's)."""
    known = {**_MODULE_ALIASES, **aliases}
    modules = {m for m in _PRINTS_VERSION.findall(source)}
    frameworks = {known[m] for m in modules if m in known}
    lines = list(_output_lines(cell))
    for line in lines:
        for pattern, how in ((_LABELLED, "output"), (_SATISFIED, "pip output"), (_INSTALLED, "pip output")):
            for match in pattern.finditer(line) if pattern is _INSTALLED else filter(None, [pattern.search(line)]):
                key = _key(match.group(1))
                if key is not None:
                    number = re.search(r"\d+\.\d+\S*", match.group(0)[len(match.group(1)):])
                    yield key, _version(match, 2), \
                        f"{match.group(1)} {number.group(0).rstrip(')') if number else ''} in the notebook's {how}"
    # print(torch.__version__) alone in its cell: the first line of its output is the version
    if len(frameworks) == 1 and len(modules) == 1 and lines:
        bare = _BARE_VERSION.match(lines[0])
        if bare:
            key = frameworks.pop()
            yield key, _version(bare, 1), \
                f"{next(iter(modules))}.__version__ printed as {lines[0].strip()}"
        return
    # print(torch.__version__, torchvision.__version__): as many versions on the first line or
    # one per line, in the order the cell names them
    named = _PRINTS_VERSION.findall(source)
    numbers = [re.match(_NUMBER, word) for word in " ".join(lines[:len(named)]).split()] if lines else []
    if frameworks and len(named) > 1 and len(numbers) == len(named) and all(numbers):
        for module, number in zip(named, numbers):
            if module in known:
                yield known[module], _version(number, 1), \
                    f"{module}.__version__ printed as {number.group(0)}"


def _installs(source: str) -> Iterator[tuple[str, Version, str]]:
    """(framework, version, how) from the cell's install lines: ``!pip install torch==1.4.0``."""
    for line in _PIP_LINE.findall(source):
        for word in line.split():
            if word.startswith("-"):
                continue
            pin = parse_line(word.strip("'\""))
            key = _key(pin.canonical) if pin else None
            exact = re.match(r"^(?:===?)\s*" + _NUMBER, pin.spec) if pin else None
            if key is not None and exact:
                yield key, _version(exact, 1), f"pip install {word} in the notebook"
    if _COLAB_TF.search(source):  # Colab's TensorFlow 1 was 1.15
        yield "tensorflow", Version(1, 15), "%tensorflow_version 1.x in the notebook (Colab's TensorFlow 1.15)"


def stated_versions(raw: str) -> dict[str, tuple[Version, str]]:
    """framework -> (version, where it was found) for a notebook's JSON text; the first found in
    the notebook's order, saved outputs before install lines of the same cell."""
    found: dict[str, tuple[Version, str]] = {}
    jaxlib: dict[str, tuple[Version, str]] = {}  # jaxlib's own numbering lags jax's: a fallback
    cells = _cells(raw)
    aliases = {alias: _MODULE_ALIASES[module] for cell in cells
               for module, alias in _IMPORT_AS.findall(_text(cell.get("source"))) if module in _MODULE_ALIASES}
    for cell in cells:
        source = _text(cell.get("source"))
        for key, version, how in (*_printed(cell, source, aliases), *_installs(source)):
            (jaxlib if how.startswith(("jaxlib", "pip install jaxlib")) else found).setdefault(key, (version, how))
    return {key: (release_of(version, key), how) for key, (version, how) in {**jaxlib, **found}.items()}
