"""What git's answers in a folder depend on, read without running git (for replays: run_inputs.py).

detlint asks git which files are ignored (``check-ignore``) and when files last changed
(``rev-parse``, ``ls-files``, ``log``). Those answers follow from the repository's ``HEAD``, the ref
it names, ``packed-refs`` and replacement refs, the index, the repository's configuration and
``info/exclude``, the user's and the system's configuration (``GIT_CONFIG_GLOBAL``,
``GIT_CONFIG_SYSTEM``, ``~/.gitconfig``, ``$XDG_CONFIG_HOME/git``, ``/etc/gitconfig`` and the
``etc/gitconfig`` beside the git found on ``PATH``), every file those include (``include.path``,
``includeIf``) and every excludes file they name (``core.excludesFile``), and the ``.gitignore``
files (noted by run_inputs.py where discovery asks about them). ``git_state`` folds all of them
into one digest.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from typing import Callable, Optional

from detlint.lint.files.sources import read_regular

MAX_CONFIGS = 32  # configuration files followed through includes
_USER_FILES = ("~/.gitconfig", "~/.config/git/config", "~/.config/git/ignore", "~/.config/git/attributes",
               "/etc/gitconfig")


def git_state(folder: str, digest: Callable[[str], Optional[str]]) -> str:
    """One digest of everything listed above for the repository holding ``folder`` (``digest``:
    a file's digest, None when absent)."""
    parts: list[str] = []
    configs: list[str] = []
    here = _top(os.path.abspath(folder))
    if here is not None:
        git_dir = common = os.path.join(here, ".git")
        if os.path.isfile(git_dir):  # a worktree or submodule: "gitdir: PATH"
            parts.append(f"gitfile:{digest(git_dir)}")
            git_dir = os.path.join(here, _text(git_dir).partition("gitdir:")[2].strip())
            common = git_dir
        named = _text(os.path.join(git_dir, "commondir")).strip()
        if named:
            common = os.path.join(git_dir, named)
        head = _text(os.path.join(git_dir, "HEAD"))
        parts.append(f"head:{head}")
        if head.startswith("ref:"):
            ref = head[4:].strip()
            parts.append(f"ref:{digest(os.path.join(git_dir, ref))}:{digest(os.path.join(common, ref))}")
        parts.append(f"packed:{digest(os.path.join(common, 'packed-refs'))}")
        parts.append(f"replace:{_tree_digest(os.path.join(common, 'refs', 'replace'), digest)}")
        try:
            index = os.stat(os.path.join(git_dir, "index"))
            parts.append(f"index:{index.st_mtime_ns}:{index.st_size}")
        except OSError:
            parts.append("index:-")
        for name in ("info/exclude", "shallow", "objects/info/alternates"):
            parts.append(f"{name}:{digest(os.path.join(common, name))}")
        configs += [os.path.join(common, "config"), os.path.join(git_dir, "config.worktree")]
    configs += [os.path.expanduser(p) for p in _USER_FILES]
    for variable in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"):
        if os.environ.get(variable):
            configs.append(os.path.expanduser(os.environ[variable]))
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        configs += [os.path.join(xdg, "git", "config"), os.path.join(xdg, "git", "ignore")]
    git = shutil.which("git")
    if git:  # a git installed under a prefix (conda, Homebrew) reads PREFIX/etc/gitconfig
        configs.append(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(git))), "etc", "gitconfig"))
    seen: set[str] = set()
    while configs and len(seen) < MAX_CONFIGS:
        path = configs.pop(0)
        if path in seen:
            continue
        seen.add(path)
        parts.append(f"{path}:{digest(path)}")
        for key, value in _settings(path):
            named = os.path.join(os.path.dirname(path), os.path.expanduser(value))  # relative to the file
            if key == "excludesfile":
                parts.append(f"{named}:{digest(named)}")
            elif key == "path":  # include.path, includeIf.<condition>.path: read as configuration too
                configs.append(named)
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _top(folder: str) -> Optional[str]:
    """The nearest folder at or above ``folder`` holding a ``.git``."""
    here = folder
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _settings(path: str) -> list[tuple[str, str]]:
    """``key = value`` lines of a git configuration file, keys lower-cased (enough to find the
    files it names; values quoted or not)."""
    out = []
    for line in _text(path).splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out.append((key.strip().lower(), value.strip().strip('"')))
    return out


def _tree_digest(folder: str, digest: Callable[[str], Optional[str]]) -> str:
    found = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        found += [f"{os.path.join(root, n)}:{digest(os.path.join(root, n))}" for n in sorted(names)]
    return hashlib.sha256("\0".join(found).encode("utf-8", "surrogateescape")).hexdigest()


def _text(path: str) -> str:
    try:
        return read_regular(path, 1 << 20).decode("utf-8", errors="replace")
    except OSError:
        return ""
