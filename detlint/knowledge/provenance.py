"""The knowledge base's version-dependent facts, each with where it comes from and how to check it.

A fact is an entry of ``rules/`` whose truth depends on a framework's release: an op's status over a
version range (every entry of an op's ``status``, a missing range meaning every release), and any
rule, fix, matcher, group entry or era that carries ``versions``, ``api-versions`` or ``tensorflow``,
or that states a fact of another library's release with a ``check`` of its own.
Each carries ``source`` (release notes, a PR, a file at a tag) and ``check`` (what
``benchmarks/verify_kb.py`` reads in the framework's own wheels). This module only lists them; the
checking lives beside the benchmarks, since it downloads wheels.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

RANGE_KEYS = ("versions", "api-versions", "tensorflow")
RULES_DIR = Path(__file__).resolve().parents[2] / "rules"


@dataclass(frozen=True)
class Fact:
    file: str          # rules/<framework>/<name>.yaml
    where: str         # the entry's path in that file: ops[TF-DILATION2D].status[1]
    framework: str     # whose versions its ranges are
    claim: dict        # the entry's own fields, less source/check and nested lists
    source: Any
    check: Any
    gpu_evidence: Any = None  # a committed GPU report, or "pending" where only a GPU can settle it

    @property
    def ident(self) -> str:
        return f"{self.file}: {self.where}"

    def ranges(self) -> dict[str, str]:
        return {k: str(self.claim[k]) for k in RANGE_KEYS if k in self.claim}


def _label(item: Any, index: int) -> str:
    if isinstance(item, dict):
        for key in ("id", "code", "name"):
            if isinstance(item.get(key), (str, int)):
                return str(item[key])
    return str(index)


def _claim(entry: dict) -> dict:
    """The entry's own scalar fields (and what a matcher matches), without its provenance."""
    return {k: v for k, v in entry.items()
            if k in ("call", "kwargs", "value", "dates")
            or (k not in ("source", "check", "gpu-evidence") and not isinstance(v, (list, dict)))}


def _walk(node: Any, where: str, parent_key: str) -> Iterator[tuple[str, dict]]:
    if isinstance(node, dict):
        is_status = parent_key == "status"
        if is_status or any(k in node for k in RANGE_KEYS) or "check" in node:
            yield where, node
        for key, value in node.items():
            # if-uses maps frameworks to text, not to versions
            if key in ("doc", "examples", "references", "source", "check", "gpu-evidence", "if-uses") \
                    or str(key).startswith("x-"):
                continue
            yield from _walk(value, f"{where}.{key}" if where else str(key), str(key))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _walk(item, f"{where}[{_label(item, i)}]", parent_key)


def facts(rules_dir: Path = RULES_DIR) -> list[Fact]:
    """Every version-dependent fact of the knowledge base, in file order."""
    found: list[Fact] = []
    for path in sorted(rules_dir.glob("*/*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        rel = f"rules/{path.parent.name}/{path.name}"
        for where, entry in _walk(data, "", ""):
            if where.startswith("ops[") and ".status[" not in where and not any(k in entry for k in RANGE_KEYS):
                continue
            found.append(Fact(rel, where, path.parent.name, _claim(entry), entry.get("source"), entry.get("check"),
                              entry.get("gpu-evidence")))
    return found


def digest(items: list[Fact]) -> str:
    """A hash of the facts as a check reads them (ranges, statuses, sources, checks), not of the prose
    around them: docs/kb-evidence.md is current while this is unchanged."""
    canon = [[f.ident, f.claim, f.source, f.check, f.gpu_evidence] for f in items]
    return hashlib.sha256(json.dumps(canon, sort_keys=True, default=str).encode()).hexdigest()[:16]
