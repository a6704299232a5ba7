"""File names as a report shows them. A name that is not UTF-8 (``b'caf\\xe9.py'``, committed
from another system) reaches Python with surrogate escapes, which no UTF-8 stream or JSON reader
accepts: it is shown with its odd bytes written out (``caf\\xe9.py``), or percent-encoded in a URI."""
from __future__ import annotations

from urllib.parse import quote


def _raw(name: str) -> bytes:
    """The bytes ``name`` stands for; a surrogate that stands for no byte (never from a file
    system) as its escape."""
    try:
        return name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace")


def printable_name(name: str) -> str:
    """``name`` as valid text: the bytes that are not UTF-8 as ``\\xNN``, every other character as is."""
    return name if name.isascii() else _raw(name).decode("utf-8", "backslashreplace")


def uri_path(posix_path: str) -> str:
    """A relative path as a URI reference: its bytes percent-encoded where a URI needs it."""
    return quote(_raw(posix_path), safe="/")
