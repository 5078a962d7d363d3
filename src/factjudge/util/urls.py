"""Base URLs of servers: whether one can work, and the form of it that may be shown or keyed on
(its credentials removed). Nothing here echoes a URL back: it may hold a password."""
from __future__ import annotations

import base64
import re
from urllib.parse import SplitResult, unquote, unquote_plus, urlsplit, urlunsplit

from .redact import MASK

#: Query parameters that carry a credential, as gateways and Azure take them: ``api-key``,
#: ``code`` (Azure Functions), ``sig`` (a SAS signature), ``key``, ``subscription-key``,
#: ``access_token``, ``client_secret``... Their values are hidden wherever a URL is shown.
_CREDENTIAL_PARAM = re.compile(r"(?:^|[-_.])(?:code|sig|signature|key|apikey|pwd|pass|auth|authorization"
                               r"|credentials?)$|token|secret|passw", re.IGNORECASE)


def _query_pairs(query: str) -> list[tuple[str, str, str, bool]]:
    """(name, ``=`` or "", value, holds a credential) of each part of a query, as written."""
    pairs = []
    for part in query.split("&") if query else []:
        name, eq, value = part.partition("=")
        pairs.append((name, eq, value, bool(value) and bool(_CREDENTIAL_PARAM.search(unquote_plus(name)))))
    return pairs


def redact_query(query: str) -> str:
    """``query`` with the value of every credential-like parameter replaced by ``***``."""
    return "&".join(f"{n}{eq}{MASK if secret else v}" for n, eq, v, secret in _query_pairs(query))


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


def query_credentials(url: str) -> list[str]:
    """The values of a URL's credential-like query parameters, as written and decoded."""
    try:
        query = urlsplit(url).query
    except ValueError:
        return []
    return [v for _, _, value, secret in _query_pairs(query) if secret for v in (value, unquote_plus(value))]


def url_credentials(url: str) -> list[str]:
    """The secrets a URL holds: in its userinfo the user, the password, both joined and the Basic
    token made of them; in its query the value of each credential-like parameter (as written and
    decoded)."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    found = query_credentials(url)
    if user is None and password is None:
        return found
    user, password = unquote(user or ""), unquote(password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return [user, password, f"{user}:{password}", token, *found]


def without_credentials(url: str) -> str:
    """``url`` without its userinfo, the values of credential-like query parameters hidden
    (:func:`redact_query`), scheme and host in lower case, without a trailing ``/``: what tells two
    servers apart (a gateway routes by path or query too) and may be shown. A key in the query is
    a credential like the API key, which tells no two servers apart either: two URLs differing
    only by it are one server (its answers cached and resumed as one)."""
    parts = urlsplit(url)
    netloc = (parts.hostname or "") if "[" not in parts.netloc else f"[{parts.hostname}]"
    if parts.port is not None:
        netloc += f":{parts.port}"
    clean = SplitResult(parts.scheme.lower(), netloc, parts.path.rstrip("/"), redact_query(parts.query), "")
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
