"""Base URLs of servers: whether one can work, and the form of it that may be shown or keyed on
(its credentials removed). Nothing here echoes a URL back: it may hold a password."""
from __future__ import annotations

import base64
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a server's base URL (no scheme, no host, a port outside 1..65535),
    in words that repeat no part of it; None when it can."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port out of range or not a number
    except ValueError as exc:  # the port, or an unclosed [ of an IPv6 address
        if "port" in str(exc).lower():
            return "has a port that is not a number from 1 to 65535"
        return "is not a URL (an IPv6 host needs its closing ])"
    if parts.scheme.lower() not in ("http", "https"):
        return "needs http:// or https:// in front (e.g. http://localhost:8000/v1)"
    if not parts.hostname:
        return "has no host (e.g. http://localhost:8000/v1)"
    if port == 0:
        return "has a port that is not a number from 1 to 65535"
    return None


def url_credentials(url: str) -> list[str]:
    """The secrets a URL's userinfo holds: the user, the password, both joined, and the Basic
    token made of them."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    if user is None and password is None:
        return []
    user, password = unquote(user or ""), unquote(password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return [user, password, f"{user}:{password}", token]


def without_credentials(url: str) -> str:
    """``url`` without its userinfo, scheme and host in lower case, without a trailing ``/``: what
    tells two servers apart (a gateway routes by path or query too) and may be shown."""
    parts = urlsplit(url)
    netloc = (parts.hostname or "") if "[" not in parts.netloc else f"[{parts.hostname}]"
    if parts.port is not None:
        netloc += f":{parts.port}"
    clean = SplitResult(parts.scheme.lower(), netloc, parts.path.rstrip("/"), parts.query, "")
    return urlunsplit(clean)


_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url``: what may be shown of it (no userinfo, path or query, which
    may hold credentials) and what a browser decides credentials by."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        return "(an unreadable URL)"
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{port}" if port else f"{scheme}://{host}"


def credentials_may_follow(source: str, target: str) -> bool:
    """Whether a request carrying credentials may follow a redirect from ``source`` to ``target``:
    the same origin, or the same host moved from http to https on the default ports (what httpx
    keeps ``Authorization`` for). Never to another host, port, or from https to http."""
    if origin(source) == origin(target):
        return True
    src, dst = urlsplit(source), urlsplit(target)
    return (src.scheme.lower(), dst.scheme.lower()) == ("http", "https") and src.hostname == dst.hostname \
        and origin(source).endswith(":80") and origin(target).endswith(":443")
