"""The openai SDK as a backend (``--backend openai-sdk``, the ``openai`` extra): for users who
need its authentication (Azure AD tokens) or bring their own configured ``AsyncOpenAI`` client."""
from __future__ import annotations

import asyncio
import functools
import importlib
import ssl
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from ....errors import JudgeSetupError
from ....util.urls import credentials_may_follow
from .base import (
    BODY_TOO_LARGE,
    MAX_BODY_BYTES,
    BackendError,
    ChatReply,
    Endpoint,
    RequestBody,
    one_line,
    redirect_problem,
    retry_after_seconds,
    timed_out,
)
from .openai_format import error_message, parse_completion

#: Keys of a request body the SDK's ``create()`` takes as keywords; the rest go in ``extra_body``.
_KEYWORDS = ("model", "messages", "response_format", "temperature", "max_tokens")


class _BodyTooLarge(Exception):
    """A reply body went past MAX_BODY_BYTES (decompressed) while httpx read it."""


class _BodyCounter:
    """Counts a reply body decompressed, a bounded slice at a time, dropping the output: gzip and
    deflate inflated, other encodings (br, zstd) by their raw bytes only."""

    def __init__(self, encoding: str) -> None:
        # wbits 47 (32 + 15): a zlib or a gzip header, found by zlib itself
        self._inflater: Any = zlib.decompressobj(47) if encoding in ("gzip", "x-gzip", "deflate") else None
        self.size = 0

    def add(self, raw: bytes) -> None:
        """Count ``raw``; raises _BodyTooLarge past MAX_BODY_BYTES."""
        if self._inflater is None or self._inflater.eof:
            self.size += len(raw)
        else:
            data = raw
            try:
                while data and self.size <= MAX_BODY_BYTES:
                    self.size += len(self._inflater.decompress(data, 1 << 20))
                    data = self._inflater.unconsumed_tail
            except zlib.error:  # not what it claims: httpx says so when it decodes
                self._inflater = None
                self.size += len(raw)
        if self.size > MAX_BODY_BYTES:
            raise _BodyTooLarge


@functools.cache
def _capped_stream_type(base: type) -> type:
    """A subclass of httpx's ``AsyncByteStream`` (``base``: httpx or httpx2, as the SDK uses) that
    refuses a piece before httpx inflates and keeps it."""

    class CappedStream(base):  # type: ignore[misc]
        def __init__(self, inner: Any, encoding: str) -> None:
            self._inner, self._counter = inner, _BodyCounter(encoding)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for raw in self._inner:
                self._counter.add(raw)
                yield raw

        async def aclose(self) -> None:
            await self._inner.aclose()

    return CappedStream


class _Redirect(Exception):
    """A redirect the request may not follow (see ``redirect_problem``); ``status`` is its own."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _refuse_redirect(response: Any) -> None:
    """httpx response hook: a redirect to another origin stops before httpx follows it (httpx
    drops only ``Authorization`` there: a user's ``default_headers`` would go along). Within the
    origin httpx follows as it does."""
    if response.is_redirect:
        source = str(response.request.url)
        target = str(response.request.url.join(response.headers["Location"]))
        if not credentials_may_follow(source, target):
            raise _Redirect(response.status_code, redirect_problem(response.status_code, source, target) or "")


async def _cap_body(response: Any) -> None:
    """httpx response hook: the body is read through a stream that stops at MAX_BODY_BYTES."""
    httpx = importlib.import_module(type(response).__module__.partition(".")[0])
    capped = _capped_stream_type(httpx.AsyncByteStream)
    response.stream = capped(response.stream, response.headers.get("content-encoding", "").lower())


def _connection_failure(exc: BaseException, redact: Callable[[str], str]) -> BackendError:
    """The BackendError for the SDK's "Connection error.": the reason is deeper in the chain of
    causes (httpx's ConnectError of a failed TLS handshake has an empty message of its own)."""
    chain: list[BaseException] = []
    link = exc.__cause__
    while link is not None and link not in chain:
        chain.append(link)
        link = link.__cause__ or link.__context__
    tls = next((e for e in chain if isinstance(e, ssl.SSLError)), None)
    if tls is not None:
        hint = " (the server may speak plain HTTP: try http://)" if "WRONG_VERSION_NUMBER" in str(tls) else ""
        return BackendError("connect", redact(f"cannot connect: TLS handshake failed: {tls}{hint}"))
    why = next((str(e) for e in chain if str(e)), type(chain[0] if chain else exc).__name__)
    if any(type(e).__name__ == "DecodingError" for e in chain):  # httpx: gzip that is not gzip...
        return BackendError("disconnect", redact(f"the reply's body could not be decoded ({why})"))
    if why.startswith("illegal "):  # h11 refused the first line: the answer is not HTTP at all
        return BackendError("connect", redact(f"cannot connect: the server's answer is not HTTP ({why}); "
                                              "a TLS server answers so: for one, use an https:// base URL"))
    if chain and "connect" in type(chain[0]).__name__.lower():
        return BackendError("connect", redact(f"cannot connect: {why}"))
    return BackendError("disconnect", redact(f"connection broken: {why}"))


class OpenAISDKBackend:
    name = "openai-sdk"

    def __init__(self, endpoint: Endpoint, *, client: object = None, **_: object) -> None:
        try:
            import openai
        except ImportError:
            raise JudgeSetupError("--backend openai-sdk needs the openai package: "
                                  "pip install 'factjudge[openai]'") from None
        self._openai = openai
        self.endpoint = endpoint
        self._given = client
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client_for_loop(self) -> Any:
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            auth = self.endpoint.headers.get("Authorization", "")
            key = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else "none"
            extra = {"Authorization": auth} if auth.startswith("Basic ") else None
            # the SDK's own retries are off: the judge counts them and honours Retry-After
            # the SDK appends its path after the whole base URL: a query goes in default_query
            url = urlsplit(self.endpoint.base_url)
            query = dict(parse_qsl(url.query, keep_blank_values=True)) or None
            http = self._openai.DefaultAsyncHttpxClient(event_hooks={"response": [_refuse_redirect, _cap_body]})
            self._client = self._openai.AsyncOpenAI(api_key=key, base_url=urlunsplit(url._replace(query="")),
                                                    max_retries=0, default_headers=extra,
                                                    default_query=query, http_client=http)
            self._loop = loop
        return self._client

    async def send(self, body: RequestBody, timeout: float) -> ChatReply:
        o, redact = self._openai, self.endpoint.redact
        request = body.obj()
        kwargs = {k: request.pop(k) for k in _KEYWORDS if k in request}
        try:
            response = await self._client_for_loop().chat.completions.create(
                **kwargs, extra_body=request or None, timeout=timeout)
        except o.APIStatusError as exc:
            text = redact(exc.response.text if exc.response is not None else str(exc))
            raise BackendError("status", redact(error_message(exc.status_code, text)),
                               status=exc.status_code, body=text,
                               retry_after=retry_after_seconds(exc.response.headers)) from None
        except o.APITimeoutError:
            raise timed_out(timeout) from None
        except _BodyTooLarge:
            return ChatReply(None, problem=BODY_TOO_LARGE)
        except _Redirect as exc:
            raise BackendError("status", str(exc), status=exc.status) from None
        except o.APIConnectionError as exc:
            if isinstance(exc.__cause__, _BodyTooLarge):
                return ChatReply(None, problem=BODY_TOO_LARGE)
            if isinstance(exc.__cause__, _Redirect):  # as the SDK wraps what a hook raises
                raise BackendError("status", str(exc.__cause__), status=exc.__cause__.status) from None
            raise _connection_failure(exc, redact) from None
        except (o.APIResponseValidationError, ValueError) as exc:  # a 200 whose body is not JSON
            return ChatReply(None, problem=redact(f"the server's reply is not a chat completion: {exc}"))
        if not hasattr(response, "model_dump"):  # the SDK hands back a non-JSON body as text
            start = one_line(redact(str(response)), 80)  # redacted before it is cut
            return ChatReply(None, problem=f"the server answered HTTP 200 with not JSON: {start!r}")
        return parse_completion(response.model_dump(), redact=redact)

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = None
