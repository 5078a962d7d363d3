"""The default backend: aiohttp posting pre-serialised JSON to ``/chat/completions``.

The openai SDK spends milliseconds of CPU per call building and parsing what is, on the wire, one
small POST; at hundreds of calls per second that is the throughput ceiling (see
``benchmarks/llm_overhead.py``). This client does only what the judge needs.
"""
from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable

import aiohttp
import yarl

from ...._version import __version__
from .base import (
    BODY_TOO_LARGE,
    MAX_REDIRECTS,
    REDIRECTS,
    BackendError,
    ChatReply,
    Endpoint,
    RequestBody,
    one_line,
    read_body,
    redirect_problem,
    retry_after_seconds,
    timed_out,
)
from .openai_format import error_message, parse_completion

#: Error bodies longer than this are cut before they are read into an error message.
_MAX_ERROR_BODY = 64 * 1024
#: The start of a TLS record as aiohttp quotes a status line it refused: b'\x15\x03... (an alert)
_TLS_RECORD = re.compile(r"b'\\x1[4-7]\\x03")
def _failure(exc: BaseException, timeout: float, redact: Callable[[str], str]) -> BackendError:
    """What went wrong before a reply, in words a person can act on. Nothing listening, TLS on one
    side only and an answer that is not HTTP are ``connect`` errors (every request would get them:
    the run stops before the first answer); a connection broken mid-reply is a ``disconnect``."""
    if isinstance(exc, asyncio.TimeoutError):
        return timed_out(timeout)
    if isinstance(exc, aiohttp.ClientSSLError):
        why = str(exc.os_error) or type(exc.os_error).__name__
        hint = " (the server may speak plain HTTP: try http://)" if "WRONG_VERSION_NUMBER" in why else ""
        return BackendError("connect", redact(f"cannot connect: TLS handshake failed: {why}{hint}"))
    if isinstance(exc, aiohttp.ClientConnectorError):
        os_error = exc.os_error
        why = "connection refused" if isinstance(os_error, ConnectionRefusedError) else str(os_error)
        return BackendError("connect", redact(f"cannot connect: {why or type(os_error).__name__}"))
    if isinstance(exc, aiohttp.ClientResponseError) and exc.status == 400 and "Bad status line" in str(exc):
        # aiohttp's parser refused the first line of the answer: the bytes of a TLS record
        # (content type 0x14-0x17, version 3.x) mean a TLS server behind an http:// URL
        if _TLS_RECORD.search(exc.message):
            return BackendError("connect", "cannot connect: the server answered in TLS, not plain HTTP "
                                           "(use an https:// base URL)")
        return BackendError("connect", redact(f"cannot connect: the server's answer is not HTTP ({exc.message})"))
    return BackendError("disconnect", redact(f"{type(exc).__name__}: {exc}"))


class HTTPBackend:
    name = "http"
    #: How a 200's parsed body becomes a reply (a subclass speaking another API sets its own).
    parse = staticmethod(parse_completion)

    def __init__(self, endpoint: Endpoint, **_: object) -> None:
        self.endpoint = endpoint
        self.url = endpoint.url("/chat/completions")
        self._headers = {**endpoint.headers, "User-Agent": f"factjudge/{__version__}",
                         "Accept": "application/json"}
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _session_for_loop(self) -> aiohttp.ClientSession:
        # A session belongs to one event loop; run_judge starts a loop per call, so a judge reused
        # across calls (a notebook) needs a new session for each.
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            # no connection cap here: the judge's semaphore bounds the requests in flight
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                headers=self._headers, skip_auto_headers=("User-Agent",))
            self._loop = loop
        return self._session

    async def send(self, body: RequestBody, timeout: float) -> ChatReply:
        redact = self.endpoint.redact
        url = self.url
        try:
            for _ in range(MAX_REDIRECTS + 1):
                raw = await self._post(url, body, timeout)
                if isinstance(raw, str):  # a redirect this request may follow
                    url = raw
                    continue
                break
            else:
                raise BackendError("status", f"the server redirected more than {MAX_REDIRECTS} times")
        except BackendError:
            raise
        except (asyncio.TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _failure(exc, timeout, redact) from None
        if raw is None:
            return ChatReply(None, problem=BODY_TOO_LARGE)
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            # redacted before it is cut: a key cut in two would no longer be found
            start = one_line(redact(raw.decode("utf-8", "replace")), 80)
            what = "an empty body" if not raw.strip() else f"not JSON: {start!r}"
            return ChatReply(None, problem=f"the server answered HTTP 200 with {what}")
        return self.read(data, body)

    def read(self, data: object, body: RequestBody) -> ChatReply:
        """A 200's parsed body as a reply (``body``: the request it answers)."""
        return self.parse(data, redact=self.endpoint.redact)

    async def _post(self, url: str, body: RequestBody, timeout: float) -> bytes | str | None:
        """One POST: the 200's body (None when too large), or the URL of a redirect that may be
        followed. Redirects are followed here, not by aiohttp, which sends every header but
        ``Authorization``, ``Cookie`` and ``Proxy-Authorization`` to any origin (``x-api-key``
        would go along); raises BackendError for any other status."""
        redact = self.endpoint.redact
        async with self._session_for_loop().post(
                url, data=body.data, timeout=aiohttp.ClientTimeout(total=timeout),
                allow_redirects=False) as resp:
            if resp.status in REDIRECTS and "Location" in resp.headers:
                try:
                    target = str(resp.url.join(yarl.URL(resp.headers["Location"])))
                except ValueError:
                    raise BackendError("status", f"HTTP {resp.status}: a redirect to a Location that "
                                       "is not a URL", status=resp.status) from None
                problem = redirect_problem(resp.status, url, target)
                if problem is None:
                    return target
                raise BackendError("status", problem, status=resp.status)
            if resp.status != 200:
                head = await resp.content.read(_MAX_ERROR_BODY)
                text = redact(head.decode("utf-8", "replace"))
                raise BackendError("status", redact(error_message(resp.status, text)),
                                   status=resp.status, body=text,
                                   retry_after=retry_after_seconds(resp.headers))
            return await read_body(resp.content)

    async def aclose(self) -> None:
        if self._session is not None and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = None
