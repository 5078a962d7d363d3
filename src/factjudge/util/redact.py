"""Keeping the credentials in use out of every text factjudge shows or writes: a server may echo
them (a proxy that returns the request's headers in a 200 body, a model quoting its prompt), and a
URL may carry them in its userinfo."""
from __future__ import annotations

from collections.abc import Iterable

#: What a secret is replaced with.
MASK = "***"
#: Shorter values are not replaced on their own: a key such as "x" given to a local server that
#: needs none would otherwise turn every "x" of every reasoning into "***". Their longer forms
#: (``user:password``, the Basic token) still are.
MIN_SECRET_CHARS = 4
#: Placeholder keys that local servers take and that hide nothing.
_PLACEHOLDERS = frozenset({"none", "EMPTY"})


def secrets_to_hide(values: Iterable[str | None]) -> tuple[str, ...]:
    """The values worth hiding, longest first, so one containing another is hidden whole."""
    kept = {v for v in values if v and len(v) >= MIN_SECRET_CHARS and v not in _PLACEHOLDERS}
    return tuple(sorted(kept, key=lambda v: (-len(v), v)))


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by :data:`MASK` (``secrets`` as
    :func:`secrets_to_hide` orders them)."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text
