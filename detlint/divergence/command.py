"""The command line of ``detlint diverge``: its options (numbers checked before anything runs),
the report on stdout, the HTML page, the exit status (0 the same, 1 a difference, 2 no verdict or
a usage error, 128 + the signal when interrupted)."""
from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Sequence

from detlint.child_processes import Terminated
from detlint.divergence import limits
from detlint.divergence.finder import diverge_command
from detlint.lint.escapes import shown
from detlint.lint.files.whole_writes import current_mode, replace_beside
from detlint.settings.config import seed_arg

EXIT_CODES = {"same": 0, "differ": 1, "incomplete": 2}
REPORT_NAME = "report.html"  # the page's name when --report names a folder


def _report_path(text: str) -> Path:
    """An argparse type for --report: a file in an existing folder, or a folder (its report.html)."""
    path = Path(text)
    if path.is_dir():
        path = path / REPORT_NAME
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"no folder {str(path.parent)!r} to write {path.name!r} in")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} holds a folder named {REPORT_NAME!r}")
    return path


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="detlint diverge",
        usage="detlint diverge [-h] [--runs N] [--seed N] [--apply] [--verbose] [--max-steps N]\n"
              "                       [--time-limit SECONDS] [--max-dump-mb MB] [--output-format {text,json}]\n"
              "                       [--report FILE.html]\n"
              "                       -- COMMAND [ARGS...]",
        description="Run a program several times, record every op's outputs with TensorFlow's debugger, "
                    "and name the first op whose outputs differ between runs.")
    p.add_argument("--runs", type=limits.runs, default=2, metavar="N",
                   help="how many runs to compare, at least 2 (default 2)")
    p.add_argument("--seed", type=seed_arg, metavar="N", help="seed both runs alike, to look past missing seeds")
    p.add_argument("--apply", action="store_true", help="run both under detlint.apply()")
    p.add_argument("--verbose", action="store_true",
                   help="show the runs' output and TensorFlow's log lines (on stderr)")
    p.add_argument("--max-steps", type=limits.steps, default=2, metavar="N",
                   help="stop Keras training after N steps (default 2)")
    p.add_argument("--time-limit", type=limits.seconds, default=300.0, metavar="SECONDS",
                   help="seconds per run (default 300)")
    p.add_argument("--max-dump-mb", type=limits.megabytes, default=512.0, metavar="MB",
                   help="disk for each run's record (default 512)")
    p.add_argument("--output-format", choices=("text", "json"), default="text",
                   help="text for people, json for tools (default text)")
    p.add_argument("--report", type=_report_path, metavar="FILE.html",
                   help="also write a self-contained HTML page: the largest difference per output, plotted "
                        "(a folder: its report.html)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments, after --")
    args = p.parse_args(list(argv))
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("give the program after --, e.g. detlint diverge -- python train.py")
    try:
        report = diverge_command(command, runs=args.runs, seed=args.seed, apply=args.apply, max_steps=args.max_steps,
                                 time_limit=args.time_limit, max_dump_mb=args.max_dump_mb, verbose=args.verbose)
    except (KeyboardInterrupt, Terminated) as exc:
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        left = getattr(exc, "records_left", [])
        records = f"its records left in {shown(left[0])}" if left else "the records removed"
        sys.stderr.write(f"detlint diverge: interrupted ({signal.Signals(signum).name}): the program was stopped "
                         f"and {records}\n")
        return 128 + signum
    sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n" if args.output_format == "json"
                     else str(report) + "\n")
    if args.report:
        from detlint.divergence.html_report import render

        replace_beside(args.report, render(report).encode("utf-8"), current_mode(args.report))
        sys.stderr.write(f"report written to {args.report}\n")  # stdout stays the report (or its JSON)
    return EXIT_CODES[report.verdict]
