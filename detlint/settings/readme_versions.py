"""Framework versions a project's README states for its code.

Many research repositories pin nothing and say in their README what they were written for:
"PyTorch install = 1.4.0", "developed for PyTorch version 1.7.1", ``pip install torch==1.7.1``,
``conda install pytorch=1.7.1``. Such a statement is weaker than any pin and stronger than the
version installed where detlint runs. The nearest README from a program's folder up to the project
root that states a version of the framework counts (its installation guide, INSTALL.md or
get_started.md, after the README); in it, the first statement. A floor (``torch>=1.4``, "1.4 or
later") says nothing about the version the code was written for, and is not read. A folder's
Dockerfile states versions the same way, and by its base image (``FROM pytorch/pytorch:1.5-cuda10.1-
cudnn7-runtime``, ``FROM tensorflow/tensorflow:1.15.0-gpu-py3``: the framework's own images, whose
tags are its versions; NVIDIA's NGC tags are container releases and are not read).
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional

from detlint.knowledge.frameworks import framework
from detlint.knowledge.versions import Version
from detlint.lint.files.sources import read_bytes

MARKDOWN_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")  # [PyTorch](http://pytorch.org) -> PyTorch
README_NAMES = ("README.md", "README.rst", "README.txt", "README", "readme.md", "Readme.md")
# installation guides beside the README say the same, read after it (INSTALL.md, get_started.md)
INSTALL_NAMES = ("INSTALL.md", "INSTALL.rst", "INSTALL.txt", "INSTALL", "install.md", "GETTING_STARTED.md",
                 "get_started.md", "getting_started.md", "docs/INSTALL.md", "docs/install.md", "docs/get_started.md",
                 "docs/getting_started.md")
DOCKER_NAMES = ("Dockerfile", "docker/Dockerfile")
# the official images: docker.io's pytorch/pytorch and tensorflow/tensorflow, tagged by version
IMAGES = {"torch": "pytorch/pytorch", "tensorflow": "tensorflow/tensorflow"}
FROM_LINE = re.compile(r"^[ \t]*FROM[ \t].*$", re.IGNORECASE | re.MULTILINE)
MAX_README = 256 * 1024


def _pattern(names: tuple[str, ...]) -> "re.Pattern[str]":
    alternatives = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
    return re.compile(
        # the name, not torchvision nor tensorflow_hub nor horovod-tensorflow; a list's "-TensorFlow 1.8"
        rf"(?<![\w.])(?<![\w.]-)(?:{alternatives})(?![\w-])"
        r"(?:[ \t]+(?:version|release|install(?:ed)?)\b)?"  # "PyTorch version 1.7.1", "PyTorch install = 1.4.0"
        r"[ \t]*(?:==|=|:|~=)?[ \t]*v?"  # an exact pin, never a floor (>=)
        r"(?P<version>\d+\.\d+(?:\.\d+)?)(?![\d.]*\d)(?!\+|[ \t]*(?:or|and)[ \t]+(?:higher|later|newer|above|up))",
        re.IGNORECASE)


@lru_cache(maxsize=None)
def _framework_pattern(key: str) -> "re.Pattern[str]":
    fw = framework(key)
    return _pattern((fw.title, *fw.distributions))


def readme_text(folder: Path) -> list[tuple[str, str]]:
    """(file name, text) of the folder's README, installation guides and Dockerfile, those it has."""
    out = []
    for name in README_NAMES:
        path = folder / name
        data, _ = read_bytes(path, MAX_README)
        if data is not None:
            out.append((name, MARKDOWN_LINK.sub(r"\1", data.decode("utf-8", errors="replace"))))
            break
    for name in INSTALL_NAMES:
        data, _ = read_bytes(folder / name, MAX_README)
        if data is not None:
            out.append((name, MARKDOWN_LINK.sub(r"\1", data.decode("utf-8", errors="replace"))))
    for name in DOCKER_NAMES:
        data, _ = read_bytes(folder / name, MAX_README)
        if data is not None:
            out.append((name, data.decode("utf-8", errors="replace")))
    return out


@lru_cache(maxsize=None)
def _image_pattern(image: str) -> "re.Pattern[str]":
    return re.compile(rf"^[ \t]*FROM[ \t]+(?:--platform=\S+[ \t]+)?(?:docker\.io/)?{re.escape(image)}:"
                      r"(?P<version>\d+\.\d+(?:\.\d+)?)(?![\d.]*\d)", re.IGNORECASE | re.MULTILINE)


def readme_version(folder: Path, key: str, root: Path,
                   read: Callable[[Path], list[tuple[str, str]]] = readme_text,
                   possible: Callable[[Version, Path], bool] = lambda version, path: True,
                   ) -> Optional[tuple[Version, str]]:
    """The version of framework ``key`` that the nearest README from ``folder`` up to ``root``
    states, with where it was read; None when none states one. ``read`` gives a folder's README
    (a run keeps what it read: each README is read once per run, not once per program);
    ``possible`` says whether that file can speak of that version (one released after the file
    was last changed cannot be what it means: "Pytorch 2.7" in a README of 2017 is Python's)."""
    here = folder
    while True:
        for name, text in read(here):
            docker = name in DOCKER_NAMES
            # a Dockerfile's base image is read by its own pattern (an NGC `nvidia/pytorch:20.03`
            # tag is a container release, not a PyTorch version); its RUN lines like a README
            matches = list(_framework_pattern(key).finditer(FROM_LINE.sub("", text) if docker else text))
            if not matches and docker and key in IMAGES:
                matches = list(_image_pattern(IMAGES[key]).finditer(text))
            for match in matches:
                try:
                    version = Version.parse(match.group("version"))
                except ValueError:
                    continue
                if not possible(version, here / name):
                    continue
                where = (here / name).relative_to(root).as_posix() if root in (here / name).parents else name
                return version, f"{where} says {match.group(0).strip()}"
        if here == root or root not in here.parents:
            return None
        here = here.parent
