"""Command line: ``detlint [check] PATHS``, ``detlint rule CODE``; exit 0 clean, 1 findings, 2 errors."""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence, TextIO

from detlint import replay
from detlint._version import __version__
from detlint.child_processes import Terminated, ended_by_signals
from detlint.knowledge.frameworks import FRAMEWORKS
from detlint.settings.config import (CONFIDENCE_LEVELS, KERAS_BACKENDS, OUTPUT_FORMATS, ConfigError, Settings, find_project_root,
                                     load_settings, parse_version_option, seed_arg)
from detlint.lint.cache import FactsCache, cache_folder
from detlint.lint.ftypes import Diagnostic
from detlint.knowledge.kb import KnowledgeBaseError

SUBCOMMANDS = ("check", "run", "diverge", "rule")
COMMANDS_HELP = """commands:
  check     check files and folders (the default: 'detlint PATHS' is 'detlint check PATHS')
  run       start a program with determinism set up before its interpreter starts
  diverge   run a program twice and name the first op whose outputs differ
  rule      print a rule's documentation ('detlint rule --all' lists the rules)

'detlint COMMAND --help' describes a command's options."""


def _codes(text: str) -> list[str]:
    return [c.strip().upper() for c in text.split(",") if c.strip()]


def _per_file_ignores(values: Optional[list[str]]) -> Optional[dict[str, list[str]]]:
    if not values:
        return None
    out: dict[str, list[str]] = {}
    for value in values:
        for item in value.split(" "):
            if not item.strip():
                continue
            pattern, sep, codes = item.rpartition(":")
            if not sep or not pattern:
                raise ConfigError(f"--per-file-ignores: expected PATTERN:CODES, got {item!r}")
            out.setdefault(pattern, []).extend(_codes(codes))
    return out


def say(*parts: str) -> None:
    """``detlint: PART: PART`` on stderr. The parts quote file names and errors, which may hold
    any character but NUL: written out, a newline or an escape sequence adds no line of its own
    and moves no cursor (as in the reports)."""
    from detlint.lint.escapes import shown
    from detlint.lint.files.display import printable_name

    sys.stderr.write(": ".join(["detlint", *(shown(printable_name(part)) for part in parts)]) + "\n")


def check_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detlint", description="Find what makes TensorFlow/Keras, PyTorch and JAX training non-reproducible.",
        epilog=COMMANDS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", default=[], help="files or folders to check ('-' reads stdin)")
    p.add_argument("--version", action="version", version=f"detlint {__version__}")
    p.add_argument("--select", type=_codes, help="codes or prefixes to enable (default DET)")
    p.add_argument("--extend-select", type=_codes, help="codes or prefixes to enable in addition")
    p.add_argument("--ignore", type=_codes, help="codes or prefixes to disable")
    p.add_argument("--extend-ignore", type=_codes, help="codes or prefixes to disable in addition")
    p.add_argument("--per-file-ignores", action="append", metavar="GLOB:CODES",
                   help="ignore codes in matching files, e.g. 'tests/*:DET101,DET201'")
    p.add_argument("--exclude", type=lambda s: [x for x in s.split(",") if x], help="globs to skip")
    p.add_argument("--extend-exclude", type=lambda s: [x for x in s.split(",") if x])
    p.add_argument("--force-exclude", action="store_true",
                   help="apply excludes (and .gitignore) to files named on the command line too")
    p.add_argument("--entry-points", type=lambda s: [x for x in s.split(",") if x],
                   help="globs of files that are programs even without a main guard")
    p.add_argument("--not-training", type=lambda s: [x for x in s.split(",") if x], metavar="GLOBS",
                   help="files and folders that are not training (tests, benchmarks, demos, ...): training "
                        "rules stay silent there; '' checks every file as training code")
    for fw in FRAMEWORKS.values():
        p.add_argument(fw.option, dest=f"{fw.key}_version", metavar="VERSION",
                       help=f"target {fw.title} version, e.g. {fw.releases[-2]}")
    p.add_argument("--keras-version", type=int, choices=(2, 3), help="Keras major version (default: from TF)")
    p.add_argument("--keras-backend", choices=KERAS_BACKENDS,
                   help="the backend Keras 3 runs on where a program does not set KERAS_BACKEND (default tensorflow)")
    p.add_argument("--seed", type=seed_arg, help="seed value fixes write, 0 to 2**32-1 (default 42)")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, help="default concise")
    p.add_argument("--min-confidence", choices=CONFIDENCE_LEVELS,
                   help="show findings at least this sure: certain, likely (default) or possible")
    p.add_argument("-o", "--output-file", help="write the report to a file")
    p.add_argument("--statistics", action="store_true", help="print only the number of findings per rule")
    p.add_argument("--no-progress", action="store_true",
                   help="never show progress (shown on stderr for long runs, only when it is a terminal)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print the findings and nothing else (no summary, no progress)")
    p.add_argument("-s", "--silent", action="store_true",
                   help="print nothing; the exit status still says whether there are findings")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("--fix", action="store_true", help="apply safe fixes")
    p.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes that change behaviour or speed")
    p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    p.add_argument("--fix-only", action="store_true", help="apply fixes and report nothing that remains")
    p.add_argument("--stdin-filename", help="the name of the file read from stdin")
    p.add_argument("--config", type=Path, help="pyproject.toml to read [tool.detlint] from")
    p.add_argument("--isolated", action="store_true", help="ignore configuration files")
    p.add_argument("--show-settings", action="store_true",
                   help="print the target version, where it came from, and the effective settings")
    p.add_argument("--show-files", action="store_true", help="print the files that would be checked")
    p.add_argument("-j", "--jobs", type=int, default=0, help="worker processes (default: all cores)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--cache-dir", help="where the cache lives (default .detlint_cache in the project root)")
    p.add_argument("--max-file-size", type=int, metavar="KB",
                   help="larger files get DET001 instead of a check (default 1024; 0: no limit)")
    p.add_argument("--file-timeout", type=float, metavar="SECONDS",
                   help="a file whose parse uses more CPU time gets DET001 (default 60; 0: no limit)")
    return p


def rule_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="detlint rule", description="Print a rule's documentation.")
    p.add_argument("code", nargs="?", help="a rule code such as DET201, or its name")
    p.add_argument("--all", action="store_true", help="list every rule")
    p.add_argument("--markdown", action="store_true", help="with --all: the full docs page (docs/rules.md)")
    p.add_argument("--output-format", choices=("text", "json"), default="text")
    return p


def cli_settings(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {
        "select": args.select, "extend-select": args.extend_select, "ignore": args.ignore,
        "per-file-ignores": _per_file_ignores(args.per_file_ignores), "exclude": args.exclude,
        "extend-exclude": args.extend_exclude, "entry-points": args.entry_points,
        "not-training": args.not_training,
        "keras-version": args.keras_version, "keras-backend": args.keras_backend, "seed": args.seed, "output-format": args.output_format,
        "min-confidence": args.min_confidence,
        "extend-ignore": args.extend_ignore,
        "max-file-size": args.max_file_size, "file-timeout": args.file_timeout,
    }
    for fw in FRAMEWORKS.values():
        given = getattr(args, f"{fw.key}_version")
        if given is not None:
            out[fw.setting] = str(parse_version_option(given, fw.option, fw.key))
    return out


def lint_group(sub: Any, group: list[Path], jobs: int, cache: Optional[FactsCache], progress: Any) -> list[Diagnostic]:
    """``sub.run(group)``; with a progress line, the same work in slices so that it can be counted.

    Each slice that is parsed in parallel gets its own worker pool. Where workers are forked,
    libcst is imported here first (once some file needs parsing), so that no pool imports it
    again; where they are not, the files are read in one piece as ``run`` does."""
    if progress is None:
        return sub.run(group, jobs, cache).diagnostics
    import multiprocessing

    sub.cache = cache
    forked = multiprocessing.get_start_method() == "fork"
    step = max(8 * jobs, 24, len(group) // 20) if jobs == 1 or forked else len(group)
    for start in range(0, len(group), step):
        chunk = group[start:start + step]
        if jobs > 1 and forked and (cache is None or cache.misses):
            from detlint.lint import collect  # noqa: F401  (imports libcst)
        sub.prefetch(chunk, jobs, cache)
        progress.update(read=len(chunk), cached=cache.hits if cache else 0)
    diags: list[Diagnostic] = []
    for path in group:
        diags.extend(sub.lint_file(path, sub.display(path)))
        progress.update(checked=1)
    return sorted(diags, key=Diagnostic.sort_key)


def importer_diagnostics(sub: Any, named: list[Path], group: list[Path],
                         cache: Optional[FactsCache]) -> list[Diagnostic]:
    if not named:
        return []
    from detlint.lint.programs.importers import importer_findings

    try:
        return importer_findings(sub, named, group, cache)
    finally:
        sub.close()


def _cache_nearby(anchor: Sequence[Path], cache_dir: Optional[str]) -> bool:
    """Is there a cache a run here may use (the default folder in the working folder or a
    parent of the first path)? Without one, every file is parsed."""
    if cache_dir:
        return Path(cache_dir).is_dir()
    start = Path(anchor[0]).resolve() if anchor else Path.cwd()
    return any((folder / ".detlint_cache").is_dir() for folder in (Path.cwd(), start, *start.parents))


def run_check(argv: Sequence[str], out: TextIO) -> int:
    from detlint.lint.engine import Linter
    from detlint.lint.files.discovery import discover
    from detlint.lint.files.display import printable_name
    from detlint.lint.files.report_file import check_output_file, write_report
    from detlint.settings.project_groups import group_by_project, shared_settings
    from detlint.knowledge.kb import load
    from detlint.lint.output import Progress, emit, write_statistics

    args = check_parser().parse_args(list(argv))
    paths = [Path(p) for p in (args.paths or ["."])]
    stdin_mode = [str(p) for p in paths] == ["-"]
    nothing_checked = False
    anchor = [Path(args.stdin_filename)] if stdin_mode and args.stdin_filename else (
        [] if stdin_mode else paths)
    kb = load()
    if not args.show_settings and (args.no_cache or not _cache_nearby(anchor, args.cache_dir)):
        from detlint.lint.isolation import start_early

        start_early(kb)  # a first run parses: start a parser while the settings are worked out
    settings = load_settings(anchor, cli_settings(args), config_path=args.config, isolated=args.isolated,
                             known_codes=kb.rules, eras=kb.eras, background=not args.show_settings)
    if args.show_settings:
        shown = settings.describe()
        if not stdin_mode:  # where a program's own evidence says otherwise than the project's
            from detlint.settings.project_groups import group_by_project, shared_settings

            checked = discover(paths, settings, force_exclude=args.force_exclude)
            shown["programs"] = {}
            # a subfolder with its own pyproject.toml or dependency files is its own project
            for group_settings, group in shared_settings(
                    group_by_project(checked, settings.project_root, paths),
                    lambda root: settings if root == settings.version_root else load_settings(
                        [root], cli_settings(args), isolated=args.isolated, known_codes=kb.rules, eras=kb.eras)):
                table = Linter(group_settings, kb).program_versions_table(group, relative_to=settings.project_root,
                                                                          shown=settings.targets)
                shown["programs"].update(table)
        out.write(json.dumps(shown, indent=2) + "\n")
        return 0
    linter = Linter(settings, kb)
    fixed_count = 0
    # a report named inside the working folder's project or any checked one stays inside it
    report_projects = [settings.project_root, find_project_root(Path.cwd()),
                       *(find_project_root(p) for p in anchor if p.exists())]
    report = None
    if stdin_mode:
        name = args.stdin_filename or "-"
        report = check_output_file(args.output_file, [Path(args.stdin_filename)] if args.stdin_filename else [],
                                   report_projects)
        virtual = Path(name if args.stdin_filename else "stdin.py")
        data = sys.stdin.buffer.read()
        from detlint.lint.engine import read_source
        from detlint.lint.ftypes import FileFacts

        source = read_source(virtual, data)
        files = [virtual]
        if source.text is not None:
            linter.set_source(virtual, source.text)
        else:
            linter.set_error(virtual, FileFacts(path=name, error=source.error))
        if (args.fix or args.diff or args.fix_only) and source.text is not None and virtual.suffix != ".ipynb":
            # as ruff does: the fixed source goes to stdout (the diff with --diff), the report to stderr
            from detlint.fix.autofix import fix_text, unified_diff

            result = fix_text(linter, virtual, source.text, args.unsafe_fixes, [])
            fixed_count = len(result.applied) if result.changed else 0
            if result.error:
                say(name, result.error)
            if args.diff:
                out.write(unified_diff(result, printable_name(name)))
                sys.stderr.write(f"Would fix {fixed_count} error{'s' if fixed_count != 1 else ''}.\n")
                say_withheld(result.withheld, args.unsafe_fixes)
                return 1 if result.changed and not args.exit_zero else 0
            out.write(result.fixed)
            if args.fix_only:
                return 0
            out = sys.stderr
        diags = linter.lint_file(virtual, name)
    else:
        files = discover(paths, settings, force_exclude=args.force_exclude)
        nothing_checked = not files
        if not files:
            sys.stderr.write("detlint: warning: No Python files found under the given path(s); nothing was checked\n")
        if args.show_files:
            out.write("".join(f"{printable_name(linter.display(f))}\n" for f in files))
            return 0
        report = check_output_file(args.output_file, files + [p for p in paths if p.is_file()], report_projects)
        diags = []
        fixing = args.fix or args.diff or args.fix_only
        jobs = args.jobs if args.jobs > 0 else (os.cpu_count() or 1)
        progress = None if fixing else Progress.create(len(files), sys.stderr, enabled=not (args.no_progress or args.quiet or args.silent))

        if not (fixing or args.output_file or args.no_cache):
            replay.allow(checked=files)  # the same check, nothing changed, may print this report again

        def cache_for(sub: Linter) -> Optional[FactsCache]:
            if args.no_cache:
                return None
            directory = cache_folder(sub.settings.cache_dir, sub.settings.project_root, args.cache_dir)
            replay.cache_in(directory)
            return FactsCache(directory, linter.kb.digest) if directory is not None else None

        explicit = {p.absolute() for p in paths if not p.is_dir()}
        changed = withheld = 0
        try:
            def settings_of(root: Path) -> Settings:
                return settings if root == settings.version_root else load_settings(
                    [root], cli_settings(args), isolated=args.isolated, known_codes=kb.rules, eras=kb.eras)

            # a nested project (its own pyproject.toml or dependency files) is checked with its
            # own settings and pins; the first path's only where they are its own (a file of the
            # project named after one of a pinned subfolder takes the project's pins)
            groups = group_by_project(files, settings.project_root, paths)
            for group_settings, group in shared_settings(groups, settings_of):
                sub = linter if group_settings is settings else Linter(group_settings, kb)
                # files named one by one (pre-commit): the programs that import them count too
                named = [p for p in group if p.absolute() in explicit]
                if not fixing:
                    cache = cache_for(sub)
                    diags.extend(lint_group(sub, group, jobs, cache, progress))
                    diags.extend(importer_diagnostics(sub, named, group, cache))
                    continue
                from detlint.fix.autofix import fix_files, unified_diff

                results = fix_files(sub, group, unsafe=args.unsafe_fixes, write=not args.diff)
                for result in results:
                    if result.error:
                        say(sub.display(result.path), result.error)
                    for note in result.notes:
                        say(sub.display(result.path), note)
                    withheld += result.withheld
                    if result.changed:
                        changed += 1
                        fixed_count += len(result.applied)
                        if args.diff:
                            out.write(unified_diff(result, printable_name(sub.display(result.path))))
                if args.diff:
                    continue
                sub = Linter(sub.settings, linter.kb)  # re-read what was written
                diags.extend(sub.run(group).diagnostics)
                diags.extend(importer_diagnostics(sub, named, group, None))
        finally:
            if progress is not None:
                progress.close()
        if args.diff:
            sys.stderr.write(f"Would fix {fixed_count} error{'s' if fixed_count != 1 else ''}.\n")
            say_withheld(withheld, args.unsafe_fixes)
            return 1 if changed and not args.exit_zero else 0
        if args.fix_only:
            out.write(f"{fixed_count} fixed.\n")
            return 0

    from detlint.lint.isolation import TRANSIENT

    if any(d.code == "DET001" and any(t in d.message for t in TRANSIENT) for d in diags):
        replay.refuse("a file was not checked this time")
    if settings.output_format in ("json", "sarif") and not stdin_mode and not args.statistics:
        from detlint.fix.autofix import attach_edits

        attach_edits(linter, diags)
    stream: TextIO = out
    if args.silent or args.output_file:
        stream = io.StringIO()  # silent: the report is dropped; an -o file is still written, whole, at the end
    texts: dict[str, str] = {}
    cache: dict[tuple[str, Optional[int]], list[str]] = {}

    def source_lines(path: str, cell: Optional[int] = None) -> list[str]:
        if (path, cell) not in cache:
            from detlint.lint.files.line_breaks import python_lines  # numbered as libcst numbers them
            from detlint.lint.files.notebook import cell_source
            from detlint.lint.files.sources import read_bytes  # never blocks on a FIFO named on the command line

            if path not in texts:
                data, _ = read_bytes(Path(path))
                texts[path] = (data or b"").decode("utf-8", errors="replace")
            text = texts[path] if cell is None else cell_source(texts[path], cell)  # a notebook's cell
            cache[(path, cell)] = python_lines(text)
        return cache[(path, cell)]

    if args.statistics:  # the table only, as ruff prints it
        write_statistics(diags, stream, settings.output_format, unsafe=args.unsafe_fixes)
    else:
        emit(settings.output_format, diags, linter.kb, settings.project_root, source_lines, stream,
             unsafe_enabled=args.unsafe_fixes, severity=settings.severity, docs_url=settings.docs_url,
             # nothing checked is not "All checks passed!": the warning above says it alone
             summary=not (args.quiet or args.silent or nothing_checked))
    if args.fix and not (args.statistics or args.quiet or args.silent) \
            and settings.output_format in ("concise", "full"):
        stream.write(f"{fixed_count} fixed, {len(diags)} remaining\n")
    if args.output_file:
        assert isinstance(stream, io.StringIO)
        write_report(args.output_file, stream.getvalue(), report)
    return 1 if diags and not args.exit_zero else 0


def say_withheld(count: int, unsafe: bool) -> None:
    """--diff: the fixes it left out because they are unsafe, and how to see them."""
    if count and not unsafe:
        from detlint.lint.output import withheld_line

        sys.stderr.write(withheld_line(count) + "\n")


def run_rule(argv: Sequence[str], out: TextIO) -> int:
    from detlint.knowledge.docs import rule_markdown, rules_page
    from detlint.knowledge.kb import load

    args = rule_parser().parse_args(list(argv))
    kb = load()
    if args.all:
        if args.markdown:
            out.write(rules_page(kb))
        elif args.output_format == "json":
            out.write(json.dumps([{"code": r.code, "name": r.name, "scope": r.scope, "summary": r.summary}
                                  for r in kb.rules.values()], indent=2) + "\n")
        else:
            width = max(len(rule.name) for rule in kb.rules.values())  # the summaries start in one column
            for rule in kb.rules.values():
                out.write(f"{rule.code}  {rule.name:<{width}}  {rule.summary}\n")
        return 0
    if not args.code:
        raise ConfigError("detlint rule: give a rule code (e.g. DET201) or --all")
    key = args.code.upper()
    rule = kb.rules.get(key) or next((r for r in kb.rules.values() if r.name == args.code), None)
    if rule is None:  # the nearest codes and names, as --select names them
        import difflib

        near = difflib.get_close_matches(key, sorted(kb.rules), n=3, cutoff=0.5) or difflib.get_close_matches(
            args.code, sorted(r.name for r in kb.rules.values()), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise ConfigError(f"unknown rule {args.code!r}{hint} ('detlint rule --all' lists them)")
    if args.output_format == "json":
        out.write(json.dumps({"code": rule.code, "name": rule.name, "summary": rule.summary,
                              "explanation": rule_markdown(rule)}, indent=2) + "\n")
    else:
        out.write(rule_markdown(rule))
    return 0


def main(argv: Optional[Sequence[str]] = None, out: Optional[TextIO] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    out = out or sys.stdout
    try:
        if argv and argv[0] == "rule":
            return run_rule(argv[1:], out)
        if argv and argv[0] == "diverge":
            from detlint.divergence.finder import main as diverge_main

            return diverge_main(argv[1:])
        if argv and argv[0] == "run":
            from detlint.runtime.launcher import main as run_main

            return run_main(argv[1:])
        if argv and argv[0] == "check":
            argv = argv[1:]
        with ended_by_signals():  # a signal that ends the run takes the parser workers along
            return run_check(argv, out)
    except (ConfigError, KnowledgeBaseError) as exc:
        say("error", str(exc))
        return 2
    except KeyboardInterrupt:
        return 130
    except Terminated as exc:  # SIGTERM, SIGHUP: 128 + the signal's number, as a shell reports it
        return exc.exit_status
    except BrokenPipeError:
        return 1
    except Exception as exc:  # never a traceback at a user
        if os.environ.get("DETLINT_DEBUG"):
            raise
        say("internal error", type(exc).__name__, str(exc))
        sys.stderr.write("please report it with the file that triggered it\n")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
