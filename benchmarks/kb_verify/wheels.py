"""Official wheels, fetched with ``pip download --no-deps`` into a cache outside the repository,
and read without being installed (a wheel is a zip: its Python sources and binaries are members)."""
from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

CHUNK = 64 << 20


def cache_dir() -> Path:
    """Where wheels and per-wheel results are kept: never inside the repository."""
    root = os.environ.get("DETLINT_KB_WHEELS") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "detlint-kb-wheels")
    return Path(root)


@dataclass(frozen=True)
class Package:
    """A package as the probes name it, and how to download its wheel for a version."""
    name: str
    versions: tuple[str, ...]
    platforms: tuple[str, ...]
    pythons: tuple[str, ...]
    # distribution names by version range prefix: tensorflow's GPU kernels were in tensorflow-gpu before 2.1
    distributions: dict[str, str] = field(default_factory=dict)
    # pure-Python packages that published only source archives for old releases (jax before 0.4.2):
    # those are fetched as files from PyPI, never built, so nothing in them runs
    sdist: bool = False

    def distribution(self, version: str) -> str:
        for prefix, name in self.distributions.items():
            if version == prefix or version.startswith(prefix + "."):
                return name
        return self.name


class WheelUnavailable(Exception):
    pass


def fetch(package: Package, version: str, log=print) -> Path:
    """The wheel of ``package`` at ``version``, downloaded once (pip picks the platform and Python)."""
    dist = package.distribution(version)
    folder = cache_dir() / dist / version
    found = sorted([*folder.glob("*.whl"), *folder.glob("*.tar.gz")]) if folder.is_dir() else []
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    errors = []
    for python in package.pythons:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
               "--python-version", python, "-d", str(folder), f"{dist}=={version}"]
        for platform in package.platforms:
            cmd[5:5] = ["--platform", platform]
        log(f"  pip download {dist}=={version} (Python {python})")
        # a machine-wide constraints file caps what may be *installed*; these wheels are only read
        env = dict(os.environ, PIP_CONSTRAINT=os.devnull)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
        found = sorted(folder.glob("*.whl"))
        if done.returncode == 0 and found:
            return found[0]
        errors.append(done.stderr.strip().splitlines()[-1:] or ["no wheel"])
    if package.sdist:
        return _fetch_sdist(dist, version, folder)
    raise WheelUnavailable(f"{dist}=={version}: {errors[-1][0] if errors else 'no Python to try'}")


def _fetch_sdist(dist: str, version: str, folder: Path) -> Path:
    """The source archive of a release, as a file listed by PyPI's simple index (pip would build it)."""
    try:
        request = urllib.request.Request(f"https://pypi.org/simple/{dist}/",
                                         headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            files = json.load(answer)["files"]
        url = next(f["url"] for f in files if f["filename"] == f"{dist}-{version}.tar.gz")
        target = folder / url.rsplit("/", 1)[1]
        with urllib.request.urlopen(url, timeout=600) as answer, open(f"{target}.part", "wb") as out:
            while chunk := answer.read(CHUNK):
                out.write(chunk)
        os.replace(f"{target}.part", target)
        return target
    except (OSError, ValueError, KeyError, StopIteration) as err:
        raise WheelUnavailable(f"{dist}=={version}: no wheel and no source archive ({err})") from None


class _Sdist:
    """A source archive read like a wheel: member names lose the leading 'name-version/'."""

    def __init__(self, path: Path):
        self.tar = tarfile.open(path)
        self.by_name = {m.name.split("/", 1)[1]: m for m in self.tar.getmembers() if m.isfile() and "/" in m.name}

    def namelist(self) -> list[str]:
        return list(self.by_name)

    def read(self, name: str) -> bytes:
        return self.open(name).read()

    def open(self, name: str):
        stream = self.tar.extractfile(self.by_name[name])
        assert stream is not None
        return stream


class Wheel:
    """Members of one wheel, read on demand."""

    def __init__(self, path: Path):
        self.path = path
        self.zip = _Sdist(path) if path.name.endswith(".tar.gz") else zipfile.ZipFile(path)
        self.names = self.zip.namelist()

    def members(self, pattern: str) -> list[str]:
        return [n for n in self.names if fnmatch.fnmatchcase(n, pattern)]

    def text(self, pattern: str) -> str:
        """The first member matching ``pattern`` as text ('' when there is none)."""
        names = self.members(pattern)
        return self.zip.read(names[0]).decode("utf-8", "replace") if names else ""

    def search_binaries(self, pattern: str, needles: list[bytes]) -> set[bytes]:
        """Which ``needles`` occur in any member matching ``pattern``, read in chunks."""
        found: set[bytes] = set()
        overlap = max((len(n) for n in needles), default=1)
        for name in self.members(pattern):
            left = [n for n in needles if n not in found]
            if not left:
                break
            tail = b""
            with self.zip.open(name) as stream:
                while left:
                    chunk = stream.read(CHUNK)
                    if not chunk:
                        break
                    window = tail + chunk
                    for needle in left:
                        if needle in window:
                            found.add(needle)
                    left = [n for n in left if n not in found]
                    tail = window[-overlap:]
        return found
