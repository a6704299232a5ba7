"""Probes read one part of a wheel (binaries, Python sources, a function's docstring); checks ask a
probe whether texts occur in it at every release checked, and compare with the fact's range."""
from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from detlint.knowledge.provenance import Fact
from kb_verify.wheels import Package, Wheel, WheelUnavailable, cache_dir, fetch

PROBES_FILE = Path(__file__).with_name("probes.yaml")
# facts that have no source and check yet (tests/test_kb_evidence.py: this list only shrinks)
PENDING_FILE = Path(__file__).with_name("pending.txt")
REPO = Path(__file__).resolve().parents[2]
EXPECTS = ("range", "present", "absent", "complement", "only", "dates")
SIMPLE_INDEX = "https://pypi.org/simple/{}/"
API_READING = 2  # raised when Probe.exports reads the API files differently (cached answers are dropped)


@dataclass(frozen=True)
class Probe:
    name: str
    package: Package | None  # None for upload-times, which reads PyPI's index, not a wheel
    kind: str
    members: str
    functions: tuple[str, ...] = ()
    between: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    at: tuple[str, ...] = ()          # repo-file: the releases the committed file speaks for
    roots: tuple[str, ...] = ()       # api: folders of the public API, a module per subfolder
    top: tuple[str, ...] = ()         # api: the files of the top-level namespace
    distribution: str = ""            # upload-times: the PyPI project

    def exports(self, wheel: Wheel, name: str) -> bool:
        """api: does the public API export the dotted ``name`` (tf.train.shuffle_batch)? A name
        under a class (tf.estimator.Estimator.train) asks for the class."""
        parts = name.split(".")[1:]
        cut = next((i for i, part in enumerate(parts) if part[:1].isupper()), len(parts) - 1)
        module, leaf = parts[:cut], parts[cut]
        wanted = [root + "/".join(module) + "/__init__.py" for root in self.roots] if module else list(self.top)
        # a root starting with "/" may sit anywhere (tensorflow/_api/v2/, tensorflow_core/_api/v2/);
        # the others name the member exactly (keras/saving/, not keras/_tf_keras/keras/saving/)
        files = [n for n in wheel.names if any(n.endswith(w) if w.startswith("/") else n == w for w in wanted)]
        # `from m import neg as negative` binds negative, not neg (TF 2's tf.negative)
        binding = re.compile(rf"(?m)^\s*(?:from\s+\S+\s+import\s+(?:\w+\s+as\s+)?{leaf}\b(?!\s+as\b)"
                             rf"|import\s+\S+\s+as\s+{leaf}\b|{leaf}\s*=)")
        return any(binding.search(wheel.zip.read(n).decode("utf-8", "replace")) for n in files)

    def versions(self) -> tuple[str, ...]:
        assert self.package is not None or self.at
        return self.at or self.package.versions  # type: ignore[union-attr]

    def text(self, wheel: Wheel | None) -> str:
        if self.kind == "repo-file":
            path = REPO / self.members
            return path.read_text(encoding="utf-8") if path.is_file() else ""
        assert wheel is not None
        if self.kind == "members":
            return "\n".join(n for n in wheel.names if fnmatch.fnmatchcase(n, self.members))
        if self.kind == "source":
            return "\n".join(wheel.zip.read(n).decode("utf-8", "replace") for n in wheel.members(self.members))
        source = wheel.text(self.members)
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return ""
        defs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        doc = next((ast.get_docstring(defs[f]) or "" for f in self.functions if f in defs), "")
        doc = " ".join(doc.split())  # the lists wrap lines differently from release to release
        starts, ends = self.between
        begin = min((i for i in (doc.find(s) for s in starts) if i >= 0), default=-1 if starts else 0)
        if begin < 0:
            return ""
        rest = doc[begin:]
        end = min((i for i in (rest.find(e, 1) for e in ends) if i > 0), default=len(rest))
        return rest[:end]


def load() -> dict[str, Probe]:
    data = yaml.safe_load(PROBES_FILE.read_text(encoding="utf-8"))
    packages = {name: Package(name, tuple(map(str, spec["versions"])), tuple(spec["platforms"]),
                              tuple(spec["pythons"]), dict(spec.get("distributions") or {}), bool(spec.get("sdist")))
                for name, spec in data["packages"].items()}
    probes = {}
    for name, spec in data["probes"].items():
        if spec["kind"] == "upload-times":
            probes[name] = Probe(name, None, "upload-times", "", distribution=spec["distribution"])
            continue
        between = spec.get("between") or [[], []]
        probes[name] = Probe(name, packages[spec["package"]], spec["kind"], spec["members"],
                             tuple(spec.get("functions") or ()), (tuple(between[0]), tuple(between[1])),
                             tuple(map(str, spec.get("at") or ())), tuple(spec.get("roots") or ()),
                             tuple(spec.get("top") or ()))
    return probes


class Reader:
    """Answers 'does this probe find these texts at this release', downloading and reading each
    wheel once per run and keeping the answers beside the wheels for the next run."""

    def __init__(self, log: Callable[[str], None] = print, wanted: dict[str, set[str]] | None = None):
        self.log = log
        # every text each probe will be asked for in this run: a wheel is read once for all of them
        self.wanted = wanted or {}
        self.unavailable: dict[tuple[str, str], str] = {}
        self.wheels_read: set[tuple[str, str]] = set()

    def _answers_path(self, probe: Probe, version: str) -> Path:
        # named by what the probe reads too: answers of an edited probe are not reused
        # (and by how an api probe reads its files: answers of the binding before `import x as y` was
        # told apart are not reused)
        what = (probe.kind, probe.members, probe.functions, probe.between, probe.roots, probe.top)
        how = hashlib.sha256(repr(what + (API_READING,) if probe.kind == "api" else what).encode()).hexdigest()[:10]
        return cache_dir() / "answers" / f"{probe.package.distribution(version)}-{version}-{probe.name}-{how}.json"

    def first_uploads(self, distribution: str) -> dict[str, tuple[str, str]] | None:
        """minor release -> (the day its first final version was first uploaded, that version),
        and each final version ("0.4.29") -> (the day it was first uploaded, itself), from PyPI's
        simple index (PEP 700 upload-time); kept beside the wheels. None: no index."""
        path = cache_dir() / "answers" / f"uploads-v2-{distribution}.json"
        if path.is_file():
            return {k: tuple(v) for k, v in json.loads(path.read_text()).items()}  # type: ignore[misc]
        import urllib.request
        request = urllib.request.Request(SIMPLE_INDEX.format(distribution),
                                         headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                files = json.load(response)["files"]
        except (OSError, ValueError, KeyError) as err:
            self.log(f"  unavailable: PyPI's index of {distribution}: {err}")
            return None
        first: dict[str, tuple[str, str]] = {}
        for item in files:
            match = re.match(r"[A-Za-z0-9_.]+?-(\d[^-]*?)(?:-|\.tar\.gz$|\.zip$)", item["filename"])
            if not match or not item.get("upload-time"):
                continue
            try:
                version = Version(match.group(1))
            except InvalidVersion:
                continue
            if version.is_prerelease or version.is_devrelease:
                continue
            minor, when = f"{version.major}.{version.minor}", (item["upload-time"][:10], str(version))
            if minor not in first or (version, when[0]) < (Version(first[minor][1]), first[minor][0]):
                first[minor] = when
            if len(version.release) == 3 and (str(version) not in first or when[0] < first[str(version)][0]):
                first[str(version)] = when
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(first, sort_keys=True))
        return first

    def find(self, probe: Probe, version: str, needles: list[str]) -> dict[str, bool] | None:
        """Whether each needle occurs; None when the wheel cannot be had."""
        if probe.kind == "repo-file":  # a committed record (GPU evidence), read fresh every run
            text = probe.text(None)
            return {n: bool(re.search(n[3:], text, re.S)) if n.startswith("re:") else n in text for n in needles}
        assert probe.package is not None
        key = (probe.package.name, version)
        if key in self.unavailable:
            return None
        path = self._answers_path(probe, version)
        known: dict[str, bool] = json.loads(path.read_text()) if path.is_file() else {}
        missing = [n for n in needles if n not in known]
        if missing:
            missing += sorted(n for n in self.wanted.get(probe.name, ()) if n not in known and n not in missing)
            try:
                wheel = Wheel(fetch(probe.package, version, log=self.log))
            except WheelUnavailable as err:
                self.unavailable[key] = str(err)
                self.log(f"  unavailable: {err}")
                return None
            self.wheels_read.add(key)
            if probe.kind == "api":
                known.update({n: probe.exports(wheel, n) for n in missing})
            elif probe.kind == "binaries":
                hits = wheel.search_binaries(probe.members, [n.encode() for n in missing])
                known.update({n: n.encode() in hits for n in missing})
            else:
                text = probe.text(wheel)
                known.update({n: bool(re.search(n[3:], text, re.S)) if n.startswith("re:") else n in text
                              for n in missing})
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(known, sort_keys=True))
        return {n: known[n] for n in needles}


@dataclass
class Verdict:
    fact: Fact
    status: str                       # right, wrong, unverifiable, unchecked
    agree: list[str]                  # releases where the check agreed
    disagree: list[str]               # "2.7: found, the fact says absent"
    skipped: list[str]                # releases whose wheel could not be had


def checks_of(fact: Fact) -> list[dict]:
    return fact.check if isinstance(fact.check, list) else [fact.check] if isinstance(fact.check, dict) else []


def needles(check: dict) -> list[str]:
    if check.get("expect") == "dates":
        return []
    texts = check.get("contains") or check.get("any") or "re:" + check["matches"]
    return [texts] if isinstance(texts, str) else list(texts)


def wanted_texts(items: list[Fact]) -> dict[str, set[str]]:
    wanted: dict[str, set[str]] = {}
    for fact in items:
        for check in checks_of(fact):
            wanted.setdefault(check["probe"], set()).update(needles(check))
    return wanted


def fact_range(fact: Fact) -> SpecifierSet:
    return spec(next(iter(fact.ranges().values()), ""))


def spec(text: str) -> SpecifierSet:
    """A range as pip reads it (the checks may name patch releases: jax-cuda12-pjrt 0.4.36)."""
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    return SpecifierSet(",".join(p if p[0] in "<>=!~" else f"=={p}" for p in parts))


def verify(fact: Fact, probes: dict[str, Probe], reader: Reader, only: str | None = None) -> Verdict:
    checks = fact.check if isinstance(fact.check, list) else [fact.check] if fact.check else []
    verdict = Verdict(fact, "unchecked" if not checks else "unverifiable", [], [], [])
    for check in checks:
        probe = probes[check["probe"]]
        if check.get("expect") == "dates":
            _verify_dates(fact, probe, reader, verdict)
            continue
        assert probe.package is not None
        claimed = spec(check["versions"]) if "versions" in check else fact_range(fact)
        within = spec(check.get("within", ""))
        agree: list[str] = []
        disagree: list[str] = []
        inside_checked = False
        expect = check.get("expect", "range")
        texts = needles(check)
        found_inside = False
        for version in probe.versions():
            if only and version != only or not within.contains(Version(version)):
                continue
            inside = claimed.contains(Version(version))
            if expect in ("present", "absent") and not inside:
                continue
            answers = reader.find(probe, version, texts)
            if answers is None:
                verdict.skipped.append(version)
                continue
            found = any(answers.values()) if "any" in check else all(answers.values())
            if expect == "only" and inside:  # found somewhere inside, nowhere outside
                found_inside, inside_checked = found_inside or found, True
                agree.append(f"{probe.package.name} {version}")
                continue
            want = {"range": inside, "present": True, "absent": False, "complement": not inside, "only": False}[expect]
            label = f"{probe.package.name} {version}"
            if found == want:
                agree.append(label)
            else:
                disagree.append(f"{label}: {'found' if found else 'not found'}, expected "
                                f"{'found' if want else 'not found'} ({probe.name})")
        if expect == "only" and not inside_checked:
            continue  # nothing inside the range could be read: this check says nothing
        if expect == "only" and not found_inside:
            disagree.append(f"{probe.package.name}: not found in any release inside {claimed or 'all'} ({probe.name})")
        verdict.agree += agree
        verdict.disagree += disagree
    if verdict.disagree:
        verdict.status = "wrong"
    elif verdict.agree:
        verdict.status = "right"
    return verdict


def _verify_dates(fact: Fact, probe: Probe, reader: Reader, verdict: Verdict) -> None:
    """A release-date table: each minor release's date is the day its first final version (X.Y.0,
    or the first X.Y.z where no .0 was published) was first uploaded to PyPI; a patch release's
    (X.Y.Z), the day it was."""
    uploads = reader.first_uploads(probe.distribution)
    if uploads is None:
        verdict.skipped.append(probe.distribution)
        return
    for release, day in (fact.claim.get("dates") or {}).items():
        label = f"{probe.distribution} {release}"
        found = uploads.get(str(release))
        if found is not None and found[0] == str(day):
            verdict.agree.append(label)
        else:
            verdict.disagree.append(f"{label}: the fact says {day}, PyPI says "
                                    f"{f'{found[0]} ({found[1]})' if found else 'no such release'} ({probe.name})")


def validate(fact: Fact, probes: dict[str, Probe]) -> list[str]:
    """What is malformed in a fact's source and check (CI runs this without downloading anything)."""
    problems = []
    if not fact.source:
        problems.append("no source")
    checks = fact.check if isinstance(fact.check, list) else [fact.check] if fact.check else []
    if not checks:
        problems.append("no check")
    for check in checks:
        if not isinstance(check, dict):
            problems.append(f"check is not a mapping: {check!r}")
            continue
        unknown = set(check) - {"probe", "contains", "any", "matches", "expect", "versions", "within"}
        if unknown:
            problems.append(f"unknown check field(s) {sorted(unknown)}")
        if check.get("probe") not in probes:
            problems.append(f"unknown probe {check.get('probe')!r}")
        if check.get("expect") == "dates":
            if probes.get(check.get("probe")) and probes[check["probe"]].kind != "upload-times":
                problems.append("expect: dates reads an upload-times probe")
            if not fact.claim.get("dates"):
                problems.append("expect: dates needs the fact's dates")
            continue
        if sum(k in check for k in ("contains", "any", "matches")) != 1:
            problems.append("a check needs one of contains/any/matches")
        elif "matches" in check and probes.get(check.get("probe")) and probes[check["probe"]].kind == "binaries":
            problems.append("matches (a regular expression) reads text probes only")
        if check.get("expect", "range") not in EXPECTS:
            problems.append(f"expect must be one of {EXPECTS}")
    return problems
