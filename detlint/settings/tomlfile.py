"""TOML as detlint reads it: a file it cannot parse, for whatever reason, is one ``TomlError``.

pyproject.toml and Pipfile come with the project; one nested 500 levels deep makes tomllib raise
RecursionError, a huge one MemoryError. Callers warn about such a file (or stop with a
configuration error when it configures detlint); none of them may crash the run.
"""
from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.9/3.10 only
    import tomli as tomllib


class TomlError(ValueError):
    """Not TOML detlint can read; the message says why."""


def parse_toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise TomlError("nested too deeply to read") from None
    except MemoryError:
        raise TomlError("too large to read") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError, and any other value it cannot take
        raise TomlError(str(exc)) from None
