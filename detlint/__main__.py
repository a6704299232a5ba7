"""``python -m detlint``. Python puts the working folder first on ``sys.path`` for ``-m``: a
``json.py`` or ``pickle.py`` in the folder being checked would be imported in place of the
standard library's (and run). detlint imports nothing from there, so that entry goes before any
other import; ``os`` and ``sys`` are loaded by then already (the interpreter's start-up)."""
import os
import sys


def _drop_working_folder() -> None:
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return  # -P / PYTHONSAFEPATH: nothing was put there
    try:
        here = os.getcwd()
    except OSError:  # the working folder was removed: only '' can name it
        here = ""
    if sys.path[0] in ("", here):
        del sys.path[0]


_drop_working_folder()

from detlint.entry import main  # noqa: E402  (after the working folder left sys.path)

sys.exit(main())
