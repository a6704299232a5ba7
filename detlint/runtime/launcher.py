"""``detlint run [--seed N] -- python train.py ARGS``: start a program with the environment
fixed before its interpreter starts and ``detlint.apply()`` already called inside it.

Only the boot folder (``detlint/_boot``, one ``sitecustomize.py``) goes on the child's
``PYTHONPATH``: the folder holding detlint is never put in front of the program's own packages.
When the program's interpreter cannot import detlint itself (another virtual environment), the
boot script appends that folder to ``sys.path`` while it calls ``apply()``, then removes it."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

from detlint.settings.config import seed_arg
from detlint.runtime.run_findings import ENV_REPORT, payload
from detlint.runtime.shim import environment_for, tf_version

BOOT = Path(__file__).resolve().parent / "_boot"
HOME = Path(__file__).resolve().parents[2]  # the folder that holds the detlint package
ENV_HOME = "DETLINT_HOME"
DESCRIPTION = """Start a program with PYTHONHASHSEED and the determinism switches of the installed
TensorFlow and PyTorch set before its interpreter starts, and detlint.apply() already called inside it.
Arguments, stdio, signals and the exit code are the program's own. When the program exits, a report on
stderr says what was applied (at start or at a framework's import), what stayed pending, what could not
be fixed at run time, and the findings in the program file that detlint run cannot fix."""


def detlint_home() -> list[str]:
    """The folders a program's interpreter needs to import detlint and what ``apply()`` loads
    (PyYAML for the knowledge base, tomli before Python 3.11), as this installation has them."""
    import importlib.util

    folders = [str(HOME)]
    for module in ("yaml", "tomli"):
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            continue
        origin = spec.origin if spec is not None else None
        if origin:
            folder = str(Path(origin).resolve().parent.parent)
            if folder not in folders:
                folders.append(folder)
    return folders


def boot_environment(env: dict[str, str]) -> None:
    """Put the boot folder first on ``PYTHONPATH`` (and nothing else of detlint's), and tell the
    boot script where detlint lives in case the child's interpreter cannot import it."""
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(BOOT)]
    env["PYTHONPATH"] = os.pathsep.join([str(BOOT)] + paths)
    env[ENV_HOME] = os.pathsep.join(detlint_home())


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="detlint run", description=DESCRIPTION,
                                usage="detlint run [-h] [--seed N] [--verbose] [--print-env] -- COMMAND [ARGS...]")
    p.add_argument("--seed", type=seed_arg, default=42, metavar="N",
                   help="seed for every generator, 0 to 2**32-1 (default 42)")
    p.add_argument("--verbose", action="store_true",
                   help="the report at exit also lists what was not needed or already in place")
    p.add_argument("--print-env", action="store_true", help="print the variables that would be set and exit")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments, after --")
    return p


def child_environment(seed: int, verbose: bool, base: Optional[dict[str, str]] = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    for name in ("TF_USE_CUDNN_AUTOTUNE",):
        env.pop(name, None)
    if env.get("TF_CUDNN_USE_AUTOTUNE", "").strip().lower() in ("0", "false"):
        env.pop("TF_CUDNN_USE_AUTOTUNE")
    for name, value in environment_for(tf_version(), seed, env).items():
        env[name] = value
    boot_environment(env)
    env["DETLINT_APPLY_SEED"] = str(seed)
    if verbose:
        env["DETLINT_VERBOSE"] = "1"
    return env


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    env = child_environment(args.seed, args.verbose)
    if args.print_env:
        changed = sorted(n for n in env if os.environ.get(n) != env[n])
        for name in changed + [n for n in ("PYTHONHASHSEED",) if n in os.environ and n not in changed]:
            sys.stdout.write(f"{name}={env[name]}\n")
        return 0
    if not command:
        parser().error("give the command to run after --, e.g. detlint run -- python train.py")
    if command[0] in ("python", "python3") and sys.executable:
        command[0] = command[0] if _on_path(command[0]) else sys.executable
    # the report at the program's exit: what was set here and what the launcher cannot fix
    own = {name: value for name, value in env.items()
           if os.environ.get(name) != value and not name.startswith("DETLINT_") and name != "PYTHONPATH"}
    env[ENV_REPORT] = payload(command, own)
    if os.name == "posix":
        try:  # the program replaces this process: stdio, signals and the exit code are its own
            os.execvpe(command[0], command, env)
        except OSError as exc:
            sys.stderr.write(f"detlint run: cannot start {command[0]}: {exc.strerror}\n")
            return 127
    return subprocess.call(command, env=env)  # pragma: no cover - non-POSIX


def _on_path(name: str) -> bool:
    from shutil import which

    return which(name) is not None
