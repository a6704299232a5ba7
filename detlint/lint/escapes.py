"""Text from the project (file names, matched values, messages quoting them) as a report prints it.

Linux allows any byte but "/" and NUL in a file name: a file named ``a\\n::error::x\\nb.py`` put a
workflow command of its own into the github format, and an escape sequence in a name or message
can clear or retitle the terminal. Control characters are written out instead (``\\n``, ``\\x1b``);
GitHub's workflow commands get its own percent-escapes on top.
"""
from __future__ import annotations

import re

# C0 but tab, DEL and C1; the Unicode line and paragraph separators; bidirectional overrides and
# isolates, which reorder what a reader sees
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _written_out(match: "re.Match[str]") -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def shown(text: str) -> str:
    """``text`` with each control character written out: it stays on its line and moves no cursor."""
    return _CONTROL.sub(_written_out, text) if _CONTROL.search(text) else text


def github_data(text: str) -> str:
    """The message of a workflow command: GitHub decodes these escapes."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(text: str) -> str:
    """A property value (``file=``): escaped as data, and ``:`` and ``,`` too, so the name reaches
    GitHub whole; the other control characters are written out (GitHub decodes no escape for them)."""
    return shown(github_data(text)).replace(":", "%3A").replace(",", "%2C")
