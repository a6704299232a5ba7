"""The ``detlint`` command: a check whose inputs are unchanged since the same check ran is replayed
(``replay``) before the checker is even imported; everything else is ``detlint.cli.main``."""
from __future__ import annotations

import sys
from typing import Optional, Sequence, TextIO

OTHER_COMMANDS = ("rule", "diverge", "run")


def main(argv: Optional[Sequence[str]] = None, out: Optional[TextIO] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    out = out or sys.stdout
    if argv and argv[0] in OTHER_COMMANDS:
        from detlint.cli import main as cli_main

        return cli_main(argv, out)
    from detlint import replay

    entry_key = replay.key(argv)
    if entry_key is not None:
        try:
            code = replay.replayed(entry_key, out)
        except BrokenPipeError:
            return 1
        except KeyboardInterrupt:
            return 130
        if code is not None:
            return code
    return replay.record(entry_key, argv, out)
