"""The backend contract: what a backend is given (a serialised :class:`RequestBody`, an
:class:`Endpoint` holding the key), what it returns (:class:`ChatReply`) or raises
(:class:`BackendError`), and what every backend's HTTP handling shares (redirects, Retry-After,
the body size bound, one-line messages)."""
from __future__ import annotations

import base64
import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timezone
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import unquote, urlparse, urlsplit, urlunsplit

from ....util.urls import credentials_may_follow, origin, query_credentials

if TYPE_CHECKING:
    import aiohttp  # the aiohttp clients' bodies (read_body); the openai SDK's backend needs none

#: Longest server message kept in an error (one line).
MESSAGE_CHARS = 300
#: Largest response body read, decompressed. A judge's answer is a few KB; the longest completion
#: a model can write today (128k output tokens, about 512 KB, up to 3 MB with every character
#: JSON-escaped) fits well below it, while an endless or gzip-bomb body stops here instead of
#: taking memory to GBs (2.5-4.5 GB and a MemoryError before this limit, issue #20).
MAX_BODY_BYTES = 8 * 1024 * 1024
#: What a reply larger than MAX_BODY_BYTES says (a per-question problem: the question is re-asked).
BODY_TOO_LARGE = (f"the server's reply is larger than {MAX_BODY_BYTES >> 20} MiB "
                  "(read no further)")

#: A body is read in pieces of this size (decompressed), counting them against its bound.
_READ_PIECE = 256 * 1024

#: How a reply's problem begins when the model refused (every backend's): an answer, unlike a body
#: that is no completion at all.
REFUSED = "the model refused"

#: Redirect statuses; only 307 and 308 keep a POST's method and body.
REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Redirects followed for one request at most (aiohttp's and httpx's default too).
MAX_REDIRECTS = 10

ErrorKind = Literal["status", "timeout", "connect", "disconnect"]


@dataclass(frozen=True)
class ChatReply:
    content: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    #: Why there is no usable content (a refusal, a body that is not a chat completion).
    problem: str = ""
    #: Why the model stopped (``stop``; ``length``: cut by the output budget), "" when not said.
    finish_reason: str = ""


class BackendError(Exception):
    """A request that got no usable reply. ``message`` is one line, credentials redacted."""

    def __init__(self, kind: ErrorKind, message: str, *, status: int | None = None,
                 body: str = "", retry_after: float | None = None) -> None:
        message = " ".join(message.split())  # one line, whatever the exception or server said
        super().__init__(message)
        self.kind, self.message, self.status = kind, message, status
        self.body, self.retry_after = body, retry_after

    @property
    def retryable(self) -> bool:
        if self.kind != "status":
            return True
        return self.status in (408, 409, 429) or (self.status or 0) >= 500


@dataclass(frozen=True)
class RequestBody:
    """One chat-completions request, serialised once."""

    data: bytes

    def obj(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.data)
        return data


class ChatBackend(Protocol):
    name: str

    async def send(self, body: RequestBody, timeout: float) -> ChatReply: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class Endpoint:
    """Where requests go and how they are authorised; ``secrets`` are what must never be shown."""

    base_url: str            # without credentials
    headers: Mapping[str, str] = field(repr=False)  # the Authorization header holds the key
    secrets: tuple[str, ...] = field(repr=False)

    @property
    def host(self) -> str:
        return server_host(self.base_url)

    def url(self, path: str) -> str:
        """``path`` (``/chat/completions``, ``/batches?limit=100``) under the base URL, its query
        kept: Azure's base URL carries ``?api-version=...``, which must stay after the path, not
        before it, and joins the path's own query."""
        parts = urlsplit(self.base_url)
        path, _, query = path.partition("?")
        query = "&".join(q for q in (parts.query, query) if q)
        return urlunsplit(parts._replace(path=parts.path.rstrip("/") + path, query=query))

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def endpoint(base_url: str | None, api_key: str | None, default_url: str = "https://api.openai.com/v1") -> Endpoint:
    """Credentials in the URL's userinfo become Basic auth (else the key is a Bearer token) and are
    kept out of the URL, the cache key and every message. No base URL: ``default_url``."""
    url = urlsplit(base_url or default_url)
    # a key in the query (?api-key=, ?code=) stays in the request, hidden from every message
    secrets = [s for s in (api_key, *query_credentials(base_url or "")) if s and s != "none"]
    headers = {"Content-Type": "application/json"}
    if url.username is not None or url.password is not None:
        user, password = unquote(url.username or ""), unquote(url.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
        secrets += [s for s in (token, password, f"{user}:{password}") if s and s != ":"]
        netloc = url.hostname or ""
        if url.port:
            netloc += f":{url.port}"
        url = url._replace(netloc=netloc)
    elif api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    # longest first, so a secret containing another is redacted whole
    url = url._replace(path=url.path.rstrip("/"))  # the path's slash, not the query's end
    return Endpoint(urlunsplit(url), headers, tuple(sorted(set(secrets), key=len, reverse=True)))


def redirect_problem(status: int, source: str, target: str) -> str | None:
    """Why a redirect from ``source`` to ``target`` is not followed, one line naming both origins
    (never a path or query: they may hold a key), or None when it may be. A request carries the
    key (``Authorization``, ``x-api-key``...), and aiohttp keeps every header but three across
    origins: a redirect to another origin, or from https to http, would hand it over."""
    if not credentials_may_follow(source, target):
        return (f"HTTP {status}: the server at {origin(source)} redirects to {origin(target)}; not "
                "followed, as the API key is never sent to another origin (give that server's "
                "base URL if it is the one meant)")
    if status not in (307, 308):
        return (f"HTTP {status}: the server redirects the request (a {status} turns a POST into a "
                f"GET without its body); give the base URL it redirects to ({origin(target)})")
    return None


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, else ``retry-after`` as seconds or
    an HTTP date, RFC 9110), or None for anything else: a value that is not a finite number >= 0
    (``nan``, ``inf``, ``-5``) or not a date falls back to the retry policy's own backoff. How long
    is honoured at most is the policy's ``max_backoff`` (60 s by default)."""
    if not headers:
        return None
    ms = _seconds(headers.get("retry-after-ms"))
    if ms is not None:
        return ms / 1000
    value = headers.get("retry-after")
    if not value:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    import email.utils  # an HTTP-date Retry-After only: a rules run's start skips it (2.5 ms; aiohttp loads it)

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": an HTTP date is always UTC
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - time.time())


def _seconds(text: str | None) -> float | None:
    """A finite non-negative number of seconds, or None."""
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def timed_out(timeout: float) -> BackendError:
    """The error of a request unanswered within ``timeout`` seconds, shown to a hundredth: the
    question's budget left over is a float (it read "no answer within 7.99995 s")."""
    return BackendError("timeout", f"no answer within {f'{timeout:.2f}'.rstrip('0').rstrip('.')} s (timeout)")


async def read_body(content: aiohttp.StreamReader, limit: int = MAX_BODY_BYTES) -> bytes | None:
    """The whole body, or None when it is larger than ``limit`` bytes. aiohttp inflates a gzip or
    deflate body a bounded piece at a time, so a bomb costs at most the limit, not its size."""
    pieces: list[bytes] = []
    size = 0
    while piece := await content.read(_READ_PIECE):
        size += len(piece)
        if size > limit:
            return None
        pieces.append(piece)
        if content.at_eof():  # the whole body read: no read more to learn it (one await a call)
            break
    return b"".join(pieces)


def one_line(text: str, limit: int = MESSAGE_CHARS) -> str:
    """A server's message as one trimmed line (tracebacks and HTML pages included)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def server_host(base_url: str | None) -> str:
    """host[:port] of an OpenAI-compatible server, without any credentials in the URL."""
    if not base_url:
        return "api.openai.com"
    url = urlparse(base_url)
    return f"{url.hostname}:{url.port}" if url.port else str(url.hostname)
