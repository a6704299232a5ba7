"""Requirement lines read the way pip reads them (``packaging``): PEP 503 names
(``tensorflow_gpu``, ``Tensorflow-GPU``), pre-releases (``1.4.0rc1``), extras, environment
markers, ``~=``/``===``, and which of a framework's minor releases a specifier allows."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Optional

from typing import TYPE_CHECKING

from detlint.knowledge.versions import Version

if TYPE_CHECKING:  # packaging is imported when a pin is read: detlint.apply() in a training
    from packaging.specifiers import SpecifierSet  # process reads none

# patch releases tried per minor release (a specifier allows a minor when it allows any of them)
_PATCHES = (*(str(p) for p in range(0, 100)), "0rc0", "0rc1", "0rc2", "0b1", "0a0")
_OPTION = re.compile(r"^\s*-")  # -r, -e, --index-url, ...
_COMMENT = re.compile(r"(^|\s)#.*$")


@dataclass(frozen=True)
class Pin:
    name: str  # as written: "tensorflow_gpu"
    canonical: str  # PEP 503: "tensorflow-gpu"
    spec: str  # the specifier, "" for none: "==1.4.0rc1", ">=2.1,<2.8"
    where: str  # the file it came from
    extras: str = ""  # "tpu" for jax[tpu] (sorted, comma-separated)


def canonical(name: str) -> str:
    """The PEP 503 form of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=4096)
def parse_line(line: str, where: str = "") -> Optional[Pin]:
    """The requirement a line names, or None (a comment, an option, a URL-only line)."""
    text = _COMMENT.sub("", line).strip()
    if not text or _OPTION.match(text):
        return None
    text = text.rstrip("\\").strip()
    # options after the requirement (jax[tpu]==0.4.14 -f https://...; --hash=...) are pip's, not its
    text = re.sub(r"\s+--?[A-Za-z][\w-]*(?:[= ]\S+)?.*$", "", text)
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement:
        # what pip would reject but people write: "tensorflow = 2.4", "tensorflow 1.15"
        loose = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*=?\s*(\d[\w.*]*)\s*$", text)
        if not loose:
            return None
        return Pin(loose.group(1), canonical(loose.group(1)), "==" + loose.group(3), where)
    # the specifier as written (packaging sorts its clauses), for messages
    written = re.match(r"^[A-Za-z0-9._-]+\s*(?:\[[^\]]*\])?\s*\(?([^;@)]*)", text)
    spec = written.group(1).strip() if written else ""
    return Pin(req.name, canonical(req.name), spec if readable(spec) else str(req.specifier), where,
               ",".join(sorted(e.lower() for e in req.extras)))


def _specifiers(spec: str) -> Optional["SpecifierSet"]:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return SpecifierSet(spec)
    except InvalidSpecifier:
        return None


@lru_cache(maxsize=8192)
def allows_minor(spec: str, minor: Version, below: int = 100) -> bool:
    """Does the specifier allow some release of ``minor`` (``2.4`` for ``~=2.4.1``, ``1.4`` for
    ``==1.4.0rc1``)? From ``minor``'s patch on and below patch ``below``: a patch release the
    knowledge base lists (JAX ``0.4.29``) stands for its patches up to the next one it lists. An
    unreadable specifier allows nothing."""
    found = _specifiers(spec)
    if found is None:
        return False
    from packaging.version import InvalidVersion, Version as PepVersion

    exact = [f for f in found if f.operator in ("==", "===") and "*" not in f.version]
    if len(exact) == 1:  # a nightly or a pre-release: ==2.14.0.dev20230712 (with other clauses or not)
        try:
            pinned = PepVersion(exact[0].version)
        except InvalidVersion:
            pinned = None
        if pinned is not None and len(pinned.release) >= 2:
            patch = pinned.release[2] if len(pinned.release) > 2 else 0
            return found.contains(pinned, prereleases=True) and pinned.release[:2] == (minor.major, minor.minor) \
                and minor.patch <= patch < below
    for patch in _PATCHES:
        if patch.isdigit() and not minor.patch <= int(patch) < below or not patch.isdigit() and minor.patch:
            continue
        try:
            candidate = PepVersion(f"{minor.major}.{minor.minor}.{patch}")
        except InvalidVersion:  # pragma: no cover - the patches above are all valid
            continue
        if found.contains(candidate, prereleases=True):
            return True
    return False


def allowed(spec: str, releases: Iterable[Version]) -> list[Version]:
    """The releases a specifier allows, in the order given (oldest first: a patch release the list
    names ends the span of the release before it)."""
    ordered = list(releases)
    out = []
    for i, release in enumerate(ordered):
        after = ordered[i + 1] if i + 1 < len(ordered) else None
        below = after.patch if after is not None and after.minor_release == release.minor_release else 100
        if allows_minor(spec, release, below):
            out.append(release)
    return out


def readable(spec: str) -> bool:
    return _specifiers(spec) is not None


def pins_of(lines: Iterable[tuple[str, str]], names: Iterable[str]) -> list[Pin]:
    """The requirements among ``lines`` ((line, file) pairs) that name one of ``names`` (compared
    as PEP 503 names, so ``tensorflow_gpu`` is ``tensorflow-gpu``)."""
    wanted = {canonical(n) for n in names}
    out = []
    for line, where in lines:
        pin = parse_line(line, where)
        if pin is not None and pin.canonical in wanted:
            out.append(pin)
    return out
