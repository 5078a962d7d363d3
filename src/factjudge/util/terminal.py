"""Text shown on a terminal: names the user or a server chose (fact types, doc_ids, paths, a
server's error body) may hold control characters; printed raw, an ESC moves the cursor or recolours
the screen, a CR overwrites the line, a newline breaks a one-line message."""
from __future__ import annotations

import re

#: C0 controls (tab and newline too: a message is one line), DEL, C1 controls, the line and
#: paragraph separators, and the bidirectional overrides and isolates that reorder what is shown.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every character that would act on a terminal instead of being shown written
    visibly, as Python writes it in a string (``\\x1b``, ``\\r``: ``\\x0d``, ``\\u202e``)."""
    return _UNSAFE.sub(_escaped, text)
