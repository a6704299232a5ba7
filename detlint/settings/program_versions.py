"""Framework versions per program, from the nearest evidence.

A repository mixes eras: TF 1 lessons beside re-run TF 2 notebooks, a ``tf2/`` folder pinned
apart, PyTorch 0.4 notebooks that print their version. Each program (its entry file) is checked
against, per framework:

1. what the program states: its saved outputs and install lines (``stated_versions.py``);
2. else the versions its own code allows (the knowledge base's ``eras``, over the entry and the
   project modules it runs; only files that import the framework count), narrowed by
3. its folder's dependency files, then the project's versions (pins, installed, the project's
   code era): the first of those the code allows wins; when none does, the version such code
   was written for.

Versions set in the settings or on the command line are used as they are. A library module is
checked at the lowest version of the programs that run it (``lowest``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from detlint.knowledge.frameworks import FRAMEWORKS, framework
from detlint.knowledge.kb import Era
from detlint.knowledge.versions import Version, known_versions
from detlint.settings.config import Settings, Target, warn
from detlint.settings.eras import _raw, file_era
from detlint.settings.pins import pinned_framework_version
from detlint.settings.stated_versions import stated_versions


def _clamped(key: str, version: Version, how: str) -> tuple[Version, str]:
    """A stated version as one the knowledge base describes: older than every known release is
    checked as the oldest (which has no switch either), newer as the newest."""
    known = known_versions(key)
    if version < known[0]:
        about = framework(key).before_oldest
        return known[0], f"{how}; older than any version detlint knows, checked as {known[0]}" + (
            f", {about}" if about else "")
    if version > known[-1]:
        return known[-1], f"{how}; newer than any version detlint knows, checked as {known[-1]}"
    return version, how


class ProgramVersions:
    """The versions each program is checked against, computed once per program."""

    def __init__(self, settings: Settings, eras: Sequence[Era]) -> None:
        self.settings = settings
        self.eras = list(eras)
        self._texts: dict[Path, str] = {}
        self._programs: dict[Path, dict[str, Target]] = {}
        self._folder_pins: dict[tuple[Path, str], Optional[tuple[Version, str]]] = {}

    def _text(self, path: Path) -> str:
        if path not in self._texts:
            self._texts[path] = _raw(path)
        return self._texts[path]

    def for_program(self, entry: Path, modules: Iterable[Path] = ()) -> dict[str, Target]:
        """framework -> Target for the program whose entry file is ``entry`` (``modules``: the
        project modules it runs, the entry first or not)."""
        if entry not in self._programs:
            files = [entry, *(m for m in modules if m != entry)]
            self._programs[entry] = {key: self._target(key, files) for key in FRAMEWORKS}
        return self._programs[entry]

    def _target(self, key: str, files: list[Path]) -> Target:
        base = self.settings.targets[key]
        if base.explicit:
            return base
        target = Target(base.version)  # decided when a rule first asks (the project's may be pending)
        target.decide_later(lambda: self._decide(key, files, base))
        return target

    def _decide(self, key: str, files: list[Path], base: Target) -> tuple[Version, str, str]:
        entry = files[0]
        raw = self._text(entry)
        if entry.suffix == ".ipynb":
            stated = stated_versions(raw).get(key)
            if stated is not None:
                version, how = _clamped(key, *stated)
                return version, how, ""
        era = self._era(key, files)
        pin = self._folder_pin(key, entry.parent)
        for found in ((*pin, "") if pin else None, (base.version, base.source, base.assumed)):
            if found is not None and (era is None or found[0] in era[0]):
                return found
        assert era is not None
        allowed, evidence, assume = era
        title = framework(key).title
        version = assume if assume in allowed else allowed[-1]
        said = ", ".join(dict.fromkeys(evidence))
        name = entry.name
        return (version, f"{title} {version} assumed from {said} use in {name}",
                f"{title} {version} assumed from {evidence[0]} use")

    def _era(self, key: str, files: list[Path]) -> Optional[tuple[tuple[Version, ...], list[str], Version]]:
        """The versions the program's own code allows, its evidence, and the version such code
        was typically written for; None without evidence. Files that contradict the entry's
        evidence are left out (a helper shared with newer programs)."""
        allowed: Optional[set[Version]] = None
        evidence: list[str] = []
        assumes: list[Version] = []
        for path in files:
            found = file_era(path, self._text(path), self.eras, key)
            if found is None:
                continue
            versions, seen = found
            if allowed is not None and not allowed & set(versions):
                continue
            allowed = set(versions) if allowed is None else allowed & set(versions)
            evidence += [text for _, text in seen]
            assumes += [era.assume for era, _ in seen if era is not None and era.assume is not None]
        if not allowed:
            return None
        ordered = tuple(v for v in known_versions(key) if v in allowed)
        typical = [v for v in assumes if v in allowed]
        return ordered, evidence, min(typical) if typical else ordered[-1]

    def _folder_pin(self, key: str, folder: Path) -> Optional[tuple[Version, str]]:
        """The pin of the nearest folder from ``folder`` up to (not including) the version root,
        whose pins the project's own version already reflects."""
        stop = self.settings.version_root or self.settings.project_root
        cache_key = (folder, key)
        if cache_key not in self._folder_pins:
            found = None
            here = folder
            while here != stop and stop in here.parents:
                found = pinned_framework_version(here, key, warn)
                if found is not None:
                    break
                here = here.parent
            self._folder_pins[cache_key] = found
        return self._folder_pins[cache_key]

    def lowest(self, programs: list[dict[str, Target]]) -> dict[str, Target]:
        """For a module several programs run: per framework the lowest of their versions, said
        when they differ."""
        out: dict[str, Target] = {}
        for key in FRAMEWORKS:
            targets = [p[key] for p in programs]
            if not targets:
                out[key] = self.settings.targets[key]
                continue
            low = min(targets, key=lambda t: t.version)
            versions = sorted({t.version for t in targets})
            if len(versions) == 1:
                out[key] = low
                continue
            title = framework(key).title
            note = f"the lowest {title} of the {len(targets)} programs that run this module " \
                   f"({', '.join(str(v) for v in versions)})"
            out[key] = Target(low.version, f"{low.source}; {note}", low.assumed or f"{title} {low.version}, {note}")
        return out


Resolver = Callable[[Path, Iterable[Path]], dict[str, Target]]
