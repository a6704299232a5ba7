"""Check every version-dependent fact of the knowledge base against the frameworks' own wheels.

    python benchmarks/verify_kb.py [--framework torch] [--version 1.12] [--output FILE]

Each fact in rules/ carries `source` (where it comes from) and `check` (a probe of
benchmarks/kb_verify/probes.yaml and the texts it must or must not find). The wheels are fetched
with `pip download --no-deps` into $DETLINT_KB_WHEELS (default ~/.cache/detlint-kb-wheels), read
offline, and each fact is judged at every release checked: right, wrong (with the releases where the
wheel disagrees) or unverifiable (no wheel could be had). A full run writes docs/kb-evidence.md; a
run narrowed by --framework or --version prints its verdicts (and writes only to --output).
Exit status: 0 when no fact is wrong, 1 otherwise.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from detlint.knowledge.provenance import digest, facts  # noqa: E402
from kb_verify.probes import Reader, load, verify, wanted_texts  # noqa: E402
from kb_verify.report import render  # noqa: E402

DEFAULT_OUTPUT = HERE.parent / "docs" / "kb-evidence.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", choices=sorted({f.framework for f in facts()}),
                        help="only facts of rules/<framework>/")
    parser.add_argument("--version", help="only this release of each probed package (e.g. 1.12)")
    parser.add_argument("--output", type=Path, help="where to write the report (default: docs/kb-evidence.md "
                                                     "on a full run, none on a narrowed one)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    every = facts()
    chosen = [f for f in every if not args.framework or f.framework == args.framework]
    probes = load()
    reader = Reader(log=lambda line: print(line, file=sys.stderr, flush=True), wanted=wanted_texts(chosen))
    verdicts = []
    for fact in chosen:
        verdict = verify(fact, probes, reader, only=args.version)
        verdicts.append(verdict)
        if verdict.status == "wrong":
            print(f"WRONG {fact.ident}: " + "; ".join(verdict.disagree))
    counts = Counter(v.status for v in verdicts)
    seconds = time.monotonic() - started
    print(f"{len(verdicts)} facts: " + ", ".join(f"{counts[s]} {s}" for s in ("right", "wrong", "unverifiable", "unchecked"))
          + f"; {len(reader.wheels_read)} wheels read, {seconds:.0f} s")
    output = args.output or (DEFAULT_OUTPUT if not (args.framework or args.version) else None)
    if output:
        output.write_text(render(verdicts, digest(every), reader, seconds), encoding="utf-8")
        print(f"wrote {output}")
    return 1 if counts["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
