"""Framework versions per program, from the nearest evidence.

A repository mixes eras: TF 1 lessons beside re-run TF 2 notebooks, a ``tf2/`` folder pinned
apart, PyTorch 0.4 notebooks that print their version. Each program (its entry file) is checked
against, per framework:

1. what the program states: its saved outputs and install lines (``stated_versions.py``);
2. else the versions its own code allows (the knowledge base's ``eras``, over the entry and the
   project modules it runs; only files that import the framework count), narrowed by
3. its folder's dependency files, then the project's pins, then what the nearest README states
   for the framework (``readme_versions.py``), then the project's other versions (installed, the
   project's code era): the first of those the code allows wins; when none does, the version
   such code was written for.

A program's entry file's last commit says which releases were out when it was written
(``commit_dates.py``; the release dates are the knowledge base's ``released``): a pin that allows
several releases (``tensorflow>=1.15``) gives the newest of them out when the project was last
changed (a pin holds for the whole project, whose later changes were run under it); a guess from the
code's era ("Keras 2 code was typically written for TF 2.0") gives way to the newest release the
code allows out by then; the version installed beside detlint, or the newest known, to an older
one out by then. What the program states, an exact pin and the version installed in the project's
own environment (not detlint's) stand. A date older than the code's own evidence is not trusted.

Versions set in the settings or on the command line are used as they are. A library module is
checked at the lowest version of the programs that run it (``lowest``).
"""
from __future__ import annotations

import datetime
import os
import re
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from detlint.knowledge.frameworks import FRAMEWORKS, framework
from detlint.knowledge.kb import Era
from detlint.knowledge.versions import Version, known_versions, release_of
from detlint.settings.commit_dates import CommitDates
from detlint.settings.config import Settings, Target, warn
from detlint.settings.eras import _raw, file_era, hint_evidence, narrowed_by
from detlint.settings.pins import (ci_requirement_lines, conda_files_lines, has_dependency_file,
                                  pinned_framework_version, requirement_lines)
from detlint.settings.readme_versions import readme_text, readme_version
from detlint.settings.stated_versions import stated_versions


# a release this many years older than an entry's last change, and only imported modules' code
# asking for it, is no era of the program
OUTDATED_YEARS = 3
MAX_SIBLINGS = 200  # files of a folder asked for their versions (a program with no evidence)
MISSING = object()


def _holds_code(folder: Path) -> bool:
    try:
        return any(name.endswith((".py", ".ipynb")) for name in os.listdir(folder))
    except OSError:
        return True


def _clamped(key: str, version: Version, how: str) -> tuple[Version, str]:
    """A stated version as one the knowledge base describes: older than every known release is
    checked as the oldest (which has no switch either), newer as the newest."""
    known = known_versions(key)
    version = release_of(version, key)
    if version < known[0]:
        about = framework(key).before_oldest
        return known[0], f"{how}; older than any version detlint knows, checked as {known[0]}" + (
            f", {about}" if about else "")
    if version > known[-1]:
        return known[-1], f"{how}; newer than any version detlint knows, checked as {known[-1]}"
    return version, how


class ProgramVersions:
    """The versions each program is checked against, computed once per program."""

    def __init__(self, settings: Settings, eras: Sequence[Era],
                 released: Optional[dict[str, tuple[tuple[Version, str], ...]]] = None,
                 dates: Optional[CommitDates] = None) -> None:
        self.settings = settings
        self.eras = list(eras)
        self.released = released or {}
        self.dates = dates
        self._texts: dict[Path, str] = {}
        self._programs: dict[Path, dict[str, Target]] = {}
        self._folder_pins: dict[tuple[Path, str], Optional[tuple[Version, str]]] = {}
        self._setup_pins: dict[tuple[Path, str], object] = {}
        self._stated_cache: dict[Path, dict[str, tuple[Version, str]]] = {}
        self._kept_apart: dict[Path, list[tuple[str, str]]] = {}  # requirement lines of folders without code
        self._ci_lines: dict[Path, list[tuple[str, str]]] = {}
        self._era_cache: dict[tuple[Path, str], object] = {}
        self._hint_cache: dict[tuple[Path, str], list] = {}
        self._sibling_cache: dict[Path, dict[str, object]] = {}
        self._readmes: dict[Path, list[tuple[str, str]]] = {}
        self._newest: dict[str, Optional[datetime.date]] = {}

    def _stated(self, path: Path) -> dict[str, tuple[Version, str]]:
        """What a notebook states, read once per run (every framework asks)."""
        if path not in self._stated_cache:
            self._stated_cache[path] = stated_versions(self._text(path)) if path.suffix == ".ipynb" else {}
        return self._stated_cache[path]

    def _file_era(self, path: Path, key: str):  # type: ignore[no-untyped-def]
        if (path, key) not in self._era_cache:
            self._era_cache[(path, key)] = file_era(path, self._text(path), self.eras, key)
        return self._era_cache[(path, key)]

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
        if entry.suffix == ".ipynb":
            stated = self._stated(entry).get(key)
            if stated is not None:
                version, how = _clamped(key, *stated)
                return version, how, ""
        known = tuple(known_versions(key))
        era = self._era(key, files)  # what the program's own code allows
        if era and self._file_era(entry, key) is None and self._outdated(key, entry, era[0]):
            # only modules the entry imports speak, for releases long superseded when the entry
            # was last changed (one tf.logging line in a 2023 program): a dead line, not its era
            era = None
        allowed = era[0] if era else known
        hinted = self._hints(key, files, allowed)  # when its code was written, as far as it shows
        # the programs beside it speak for a program with no evidence of its own (its code's era or
        # hints, or the date of its last commit)
        soft = hinted or (None if era or self._dated(key, entry, allowed) else self._siblings(key, entry))
        # a pin the code can run on is the version (of a floor or a range: the newest of it that
        # was out when the program was last changed)
        project_pin = (base.version, base.source) if base.pinned else None
        for pin in (self._folder_pin(key, entry.parent), self._setup_pin(key, entry.parent),
                    project_pin, self._readme(key, entry.parent)):
            if pin is None:
                continue
            ranged = tuple(v for v in (base.allows if pin is project_pin else getattr(pin, "allows", ()))
                           if v in allowed)
            if base.runs is not None and len(ranged) > 1 and base.runs[0] in ranged:
                return base.runs[0], f"{base.runs[1]}, which {pin[1].split(' pins ')[0]}'s pin allows", ""
            # the project's range pin holds for the project as a whole: the newest release it
            # allowed when the project's code (not only this program) was last changed
            dated = self._dated(key, entry, ranged, project=pin is project_pin) \
                if len(ranged) > 1 or ranged[:1] != (pin[0],) else None
            if dated is not None and dated[0] != pin[0]:
                return dated[0], f"{pin[1]}; {dated[1]}", dated[2]
            if pin[0] in allowed:
                return pin[0], pin[1], ""
        preferred = tuple(v for v in allowed if v in soft[0]) if soft else allowed
        preferred = preferred or allowed
        if base.runs is not None and base.runs[0] in preferred:
            return base.runs[0], base.runs[1], ""  # what the project's environment runs, whenever it was written
        chosen = self._unpinned(key, files, base, era, hinted, soft, preferred)
        if chosen[2]:  # a guess from the code's era (fit_generator: "written for 2.0"): the date is better
            dated = self._dated(key, entry, preferred)
            return dated if dated is not None else chosen
        dated = self._dated(key, entry, tuple(v for v in preferred if v <= chosen[0]))
        if dated is not None and dated[0] < chosen[0]:
            return dated
        return chosen

    def _unpinned(self, key: str, files: list[Path], base: Target, era, hinted, soft,  # type: ignore[no-untyped-def]
                  preferred: tuple[Version, ...]) -> tuple[Version, str, str]:
        """The version of a program no pin decides: installed or the newest, else what its code
        era suggests."""
        entry = files[0]
        title = framework(key).title
        # installed or the newest known, if the code allows it; the project's era guess only for a
        # program with no evidence of its own (its own code's era is nearer)
        if base.version in preferred and not (base.assumed and (era or hinted)):
            return base.version, base.source, base.assumed
        evidence = (era[1] if era else []) + (soft[1] if soft else [])
        typical = [v for v in ((era[2],) if era else ()) + ((soft[2],) if soft else ()) if v in preferred]
        version = min(typical) if typical else preferred[-1]
        said = ", ".join(dict.fromkeys(evidence)) or "its code"
        where = entry.name if era or hinted else f"{entry.parent.name or '.'}/ (the programs beside it)"
        return (version, f"{title} {version} assumed from {said} use in {where}",
                f"{title} {version} assumed from {evidence[0] if evidence else said} use")

    def _outdated(self, key: str, entry: Path, versions: tuple[Version, ...]) -> bool:
        """Was the newest of ``versions`` out more than OUTDATED_YEARS years before ``entry`` was
        last changed?"""
        out = dict(self.released.get(key, ()))
        day = self.dates.date(entry) if self.dates is not None else None
        newest = max((out[v] for v in versions if v in out), default=None)
        if day is None or newest is None:
            return False
        return f"{int(newest[:4]) + OUTDATED_YEARS}{newest[4:]}" < day.isoformat()

    def _dated(self, key: str, entry: Path, versions: tuple[Version, ...],
               project: bool = False) -> Optional[tuple[Version, str, str]]:
        """The newest of ``versions`` that was out when ``entry`` was last changed (by its git
        history), and why; None without a date, or when none of them was out by then (the code
        needs a newer release than the date allows: the date is not trusted)."""
        released = self.released.get(key)
        if not released or not versions or self.dates is None:
            return None
        day = self.dates.date(entry)
        if day is None:
            return None
        newest = self._project_newest(key) if project else None
        later = newest is not None and newest > day
        when = (newest if later else day).isoformat()
        out_by = dict(released)
        fits = [v for v in versions if v in out_by and out_by[v] <= when]
        title = framework(key).title
        said = f"the project was last changed on {when}" if later else f"{entry.name} was last changed on {when}"
        if fits:
            version = max(fits)
            newest_then = max(v for v, d in released if d <= when)
            which = "the newest release" if version == newest_then else \
                f"the newest release its code and pins allow ({title} {newest_then} was out)"
            return version, f"{title} {version}, {which} when {said}", f"{title} {version} assumed: {said}"
        oldest = known_versions(key)[0]
        if oldest in versions and oldest in out_by and when < out_by[oldest]:
            then = [v for v, d in released if d <= when]
            current = f"when {title} {max(then)} was current" if then else f"before {title} {released[0][0]}"
            return (oldest, f"{said}, {current}; older than any version detlint knows, checked as {oldest}",
                    f"{title} {oldest} assumed: {said}")
        return None

    def _project_newest(self, key: str) -> Optional[datetime.date]:
        """When the project's code that imports the framework was last changed (a port to another
        framework, changed later, says nothing of this one)."""
        if key not in self._newest:
            starts = framework(key).starts or (key,)
            imports = re.compile(rf"(?m)^[\s\"]*(?:import|from)\s+(?:{'|'.join(map(re.escape, starts))})\b")
            self._newest[key] = self.dates.newest(lambda path: bool(imports.search(self._text(path)))) \
                if self.dates is not None else None
        return self._newest[key]

    def _era(self, key: str, files: list[Path]) -> Optional[tuple[tuple[Version, ...], list[str], Version]]:
        """The versions the program's own code allows, its evidence, and the version such code
        was typically written for; None without evidence. Files that contradict the entry's
        evidence are left out (a helper shared with newer programs)."""
        allowed: Optional[set[Version]] = None
        evidence: list[str] = []
        assumes: list[Version] = []
        for path in files:
            found = self._file_era(path, key)
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

    def _hints(self, key: str, files: list[Path], allowed: tuple[Version, ...]
               ) -> Optional[tuple[tuple[Version, ...], list[str], Version]]:
        """What the program's hint eras (``hint: true``: when such code was written) suggest
        within ``allowed``; None when they say nothing."""
        narrowed, evidence, assumes = allowed, [], []
        for path in files:
            if (path, key) not in self._hint_cache:
                self._hint_cache[(path, key)] = hint_evidence(path, self._text(path), self.eras, key)
            found, said = narrowed_by(self._hint_cache[(path, key)], narrowed, key)
            if said:  # the hints of this file applied: the versions they were written for count
                assumes += [era.assume for era, _ in self._hint_cache[(path, key)] if era.assume is not None]
            narrowed, evidence = found, evidence + said
        if not evidence:
            return None
        assumes = [v for v in assumes if v in narrowed]
        return narrowed, evidence, min(assumes) if assumes else narrowed[-1]

    def _siblings(self, key: str, entry: Path) -> Optional[tuple[tuple[Version, ...], list[str], Version]]:
        """For a program whose own code says nothing: what the other programs in its folder state
        or their code allows (a lesson folder shares an era); the versions most of them allow."""
        folder = entry.parent
        if folder not in self._sibling_cache:
            self._sibling_cache[folder] = {}
        cache = self._sibling_cache[folder]
        if key in cache:
            return cache[key]
        known = known_versions(key)
        votes: list[tuple[tuple[Version, ...], str, Optional[Version]]] = []
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith((".py", ".ipynb")))[:MAX_SIBLINGS]
        except OSError:
            names = []
        for name in names:
            path = folder / name
            if path == entry or not path.is_file():
                continue
            stated = self._stated(path).get(key)
            if stated is not None:
                version, _ = _clamped(key, *stated)
                votes.append(((version,), f"{name} ({stated[1]})", version))
                continue
            found = self._file_era(path, key)
            if found is not None:
                assumes = [era.assume for era, _ in found[1] if era is not None and era.assume in found[0]]
                votes.append((found[0], f"{found[1][0][1]} in {name}", min(assumes) if assumes else None))
        if not votes:
            cache[key] = None
            return None
        support = {v: sum(v in allowed for allowed, _, _ in votes) for v in known}
        chosen = tuple(v for v in known if support[v] == max(support.values()) and support[v] > 0)
        agreeing = [vote for vote in votes if set(chosen) <= set(vote[0])]
        typical = [a for _, _, a in agreeing if a is not None and a in chosen]
        cache[key] = (chosen, [said for _, said, _ in agreeing][:2], min(typical) if typical else chosen[-1])
        return cache[key]

    def _setup_pin(self, key: str, folder: Path) -> Optional[tuple[Version, str]]:
        """A pin kept apart from the code: a dependency file in a folder that holds no programs
        (``setup/requirements.txt``, ``environments/dl_env.yml``) beside the program's folder or
        one above it, else what a CI configuration there installs (``.travis.yml``: ``pip install
        tensorflow==1.0.0``), up to the project root; the nearest first."""
        root = self.settings.project_root
        here = folder
        while True:
            found = self._setup_pins.get((here, key), MISSING)
            if found is MISSING:
                found = None
                try:
                    subfolders = sorted(p for p in here.iterdir() if p.is_dir() and not p.name.startswith("."))
                except OSError:
                    subfolders = []
                for sub in subfolders[:MAX_SIBLINGS]:
                    if not _holds_code(sub):
                        if sub not in self._kept_apart:
                            self._kept_apart[sub] = (requirement_lines(sub, warn) if has_dependency_file(sub) else []) \
                                + conda_files_lines(sub)
                        lines = self._kept_apart[sub]
                        found = pinned_framework_version(sub, key, warn, lines) if lines else None
                        if found is not None:
                            found = found.moved(f"{sub.name}/{found[1]}")
                            break
                if found is None:  # what the repository's CI installs to run its code
                    if here not in self._ci_lines:
                        self._ci_lines[here] = ci_requirement_lines(here)
                    lines = self._ci_lines[here]
                    found = pinned_framework_version(here, key, warn, lines) if lines else None
                self._setup_pins[(here, key)] = found
            if found is not None:
                return found  # type: ignore[return-value]
            if here == root or root not in here.parents:
                return None
            here = here.parent

    def _readme(self, key: str, folder: Path) -> Optional[tuple[Version, str]]:
        """What the nearest README states (never a pin's place: pins come first)."""
        def read(here: Path) -> list[tuple[str, str]]:
            if here not in self._readmes:
                self._readmes[here] = readme_text(here)
            return self._readmes[here]

        def possible(version: Version, path: Path) -> bool:
            day = self.dates.date(path) if self.dates is not None else None
            out = dict(self.released.get(key, ()))
            return day is None or version not in out or out[version] <= day.isoformat()

        found = readme_version(folder, key, self.settings.project_root, read, possible)
        return _clamped(key, *found) if found is not None else None

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
            out[key] = Target(low.version, f"{low.source}; {note}",
                              f"{low.assumed}, {note}" if low.assumed else f"{title} {low.version}, {note}")
        return out


Resolver = Callable[[Path, Iterable[Path]], dict[str, Target]]
