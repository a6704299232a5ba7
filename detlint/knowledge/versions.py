"""Framework version numbers and ranges: ``2.15``, ``>=2.1,<2.8``."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache, total_ordering
from typing import Iterable

from detlint.knowledge.frameworks import DEFAULT_FRAMEWORK, framework

# Every TensorFlow minor release the knowledge base describes, oldest first.
KNOWN_TF_VERSIONS: tuple[str, ...] = framework("tensorflow").releases


@total_ordering
@dataclass(frozen=True)
class Version:
    """A release as the knowledge base names it: a minor release (``2.15``), or a patch release
    where a framework's behaviour changed within a minor one (JAX ``0.4.36``). ``2.15`` is
    ``2.15.0``: a bound without a patch compares by minor release (``<2.15`` excludes 2.15.3)."""

    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> "Version":
        match = re.match(r"^\s*v?(\d+)(?:\.(\d+)(?:\.(\d+))?)?", str(text))
        if not match:
            raise ValueError(f"not a version number: {text!r}")
        return cls(int(match.group(1)), int(match.group(2) or 0), int(match.group(3) or 0))

    @property
    def minor_release(self) -> "Version":
        return Version(self.major, self.minor)

    def __lt__(self, other: "Version") -> bool:
        return (self.major, self.minor, self.patch) < (other.major, other.minor, other.patch)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}" + (f".{self.patch}" if self.patch else "")


NEWEST_KNOWN = Version.parse(KNOWN_TF_VERSIONS[-1])
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<|~=)?\s*v?(\d+(?:\.\d+){0,2})(?:\.\*|\.\d+)*\s*$")


@dataclass(frozen=True)
class VersionRange:
    """A conjunction of comparisons such as ``>=2.1,<2.8``; the empty text matches every version."""

    text: str
    clauses: tuple[tuple[str, Version], ...]

    @classmethod
    def parse(cls, text: str | None) -> "VersionRange":
        text = (text or "").strip()
        clauses = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            match = _CLAUSE.match(part)
            if not match:
                raise ValueError(f"bad version range {text!r}: cannot read {part!r}")
            clauses.append((match.group(1) or "==", Version.parse(match.group(2))))
        return cls(text, tuple(clauses))

    def contains(self, version: Version) -> bool:
        for op, bound in self.clauses:
            # a bound without a patch names a whole minor release: 2.15.3 is "==2.15", not ">2.15"
            v = version if bound.patch else version.minor_release
            ok = {
                ">=": v >= bound, ">": v > bound, "<=": v <= bound,
                "<": v < bound, "==": v == bound, "!=": v != bound,
                "~=": v >= bound and v.major == bound.major,
            }[op]
            if not ok:
                return False
        return True

    def __str__(self) -> str:
        return self.text or "all versions"


def known_versions(key: str = DEFAULT_FRAMEWORK) -> list[Version]:
    """The releases of framework ``key`` the knowledge base describes, oldest first (a new list:
    callers may change it)."""
    return list(_known(key))


@lru_cache(maxsize=None)
def _known(key: str) -> tuple[Version, ...]:
    return tuple(Version.parse(v) for v in framework(key).releases)


def release_of(version: Version, key: str = DEFAULT_FRAMEWORK) -> Version:
    """The known release that describes ``version`` (``0.4.31`` is JAX ``0.4.29``, the patch
    release that changed what 0.4.31 does; ``2.15.1`` is ``2.15``); a minor release the knowledge
    base does not list keeps its minor number."""
    same = [v for v in _known(key) if v.minor_release == version.minor_release and v <= version]
    return same[-1] if same else version.minor_release


def newest_known(key: str = DEFAULT_FRAMEWORK) -> Version:
    return Version.parse(framework(key).releases[-1])


def lowest_allowed(spec: str, key: str = DEFAULT_FRAMEWORK) -> Version | None:
    """The oldest known release a requirement specifier allows (the one code must work on)."""
    try:
        rng = VersionRange.parse(spec)
    except ValueError:
        return None
    allowed = [v for v in known_versions(key) if rng.contains(v)]
    return allowed[0] if allowed else None


def describe_ranges(ranges: Iterable[VersionRange]) -> str:
    return ", ".join(str(r) for r in ranges)
