"""Backends: how one chat-completions request body reaches a server.

A backend sends a pre-serialised OpenAI chat-completions body and returns a :class:`ChatReply`,
or raises :class:`BackendError` saying what went wrong (status, server message, Retry-After).
Retries, re-asks, caching and usage live in the LLM judge, so a new provider is one file here
plus one line in :data:`BACKENDS`.
"""
from __future__ import annotations

import base64
import email.utils
import ipaddress
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timezone
from typing import Any, Literal, Protocol
from urllib.parse import unquote, urlparse, urlsplit, urlunsplit

from ....util.bounds import COUNT_MAX
from ....util.urls import credentials_may_follow, origin, query_credentials

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


def one_line(text: str, limit: int = MESSAGE_CHARS) -> str:
    """A server's message as one trimmed line (tracebacks and HTML pages included)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def error_message(status: int, text: str) -> str:
    """The server's own words from an error body (OpenAI's ``error.message``, FastAPI's
    ``detail``...), else the body itself, as one line."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, list) and len(data) == 1:  # Gemini's OpenAI-compatible endpoint: [{"error": ...}]
        data = data[0]
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            text = str(err["message"])
        elif isinstance(err, str):
            text = err
        elif data.get("detail") is not None:
            text = data["detail"] if isinstance(data["detail"], str) else json.dumps(data["detail"])
        elif data.get("message"):
            text = str(data["message"])
    return f"HTTP {status}: {one_line(text) or '(empty body)'}"


def parse_completion(data: Any) -> ChatReply:
    """A chat-completions response body (already parsed) as a reply; usage as OpenAI, vLLM or
    llama.cpp report it."""
    if not isinstance(data, dict):
        return ChatReply(None, problem="the server's reply is not a chat completion (not an object)")
    usage = _object(data.get("usage"))
    details = _object(usage.get("prompt_tokens_details"))
    timings = _object(data.get("timings"))  # llama.cpp server
    cached = _int(details.get("cached_tokens")) or _int(timings.get("cache_n"))

    choices = data.get("choices")
    finish = choices[0].get("finish_reason") if isinstance(choices, list) and choices and isinstance(
        choices[0], dict) else None

    def reply(content: str | None, problem: str = "") -> ChatReply:
        return ChatReply(content, prompt_tokens=_int(usage.get("prompt_tokens")),
                         completion_tokens=_int(usage.get("completion_tokens")),
                         cached_prompt_tokens=cached, problem=problem,
                         finish_reason=finish if isinstance(finish, str) else "")

    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return reply(None, "the server's reply has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return reply(None, "the server's reply has no message")
    content = message.get("content")
    if not content and message.get("refusal"):
        return reply(None, f"the model refused: {one_line(str(message['refusal']))}")
    if content is not None and not isinstance(content, str):
        return reply(None, "the reply's content is not a string")
    return reply(answer_text(content, message))


#: Where servers put a reasoning model's thinking beside ``content``: ``reasoning`` (vLLM now,
#: which renamed ``reasoning_content``: https://docs.vllm.ai/en/stable/features/reasoning_outputs/;
#: Ollama's OpenAI-compatible endpoint), ``reasoning_content`` (older vLLM, DeepSeek's
#: deepseek-reasoner: https://api-docs.deepseek.com/guides/reasoning_model, SGLang).
REASONING_FIELDS = ("reasoning", "reasoning_content")
#: A leading thinking block in ``content`` (DeepSeek-R1 or Qwen3 served without a reasoning
#: parser); an opened block never closed (an answer cut short) is all thinking.
_THINK = re.compile(r"\A\s*<think>(?:.*?</think>|.*\Z)\s*", re.DOTALL)
#: How much of the end of a reasoning field is searched for the answer: the answer closes it, and
#: a decode attempt per "{" over a long text of them would be quadratic.
_REASONING_TAIL = 64 * 1024


def answer_text(content: str | None, message: dict[str, Any]) -> str | None:
    """The answer of a chat-completions message, by one rule, so that reasoning models are read
    where they put it and their thinking never reaches a verdict, the cache or a re-ask:

    1. ``content`` without a leading ``<think>...</think>`` block;
    2. when that is empty or blank (vLLM has shipped bugs leaving the answer JSON in the reasoning
       field with ``content`` null; DeepSeek's JSON Output may return blank content), the last
       top-level JSON object in the message's reasoning field (``reasoning``, else
       ``reasoning_content``), as text, for the judge to validate like any answer;
    3. else the (empty) content as it came."""
    text = _THINK.sub("", content, count=1) if content and "<think>" in content[:64] else content
    if text and text.strip():
        return text
    reasoning = next((message[f] for f in REASONING_FIELDS if isinstance(message.get(f), str) and message[f]), "")
    found = last_json_object(reasoning[-_REASONING_TAIL:])
    return found if found is not None else text


def last_json_object(text: str) -> str | None:
    """The last JSON object in ``text`` that is not inside another one, as it is written there."""
    decoder = json.JSONDecoder()
    found, start = None, text.find("{")
    while start >= 0:
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found = text[start:end]
        start = text.find("{", end)
    return found


def _object(value: Any) -> dict[str, Any]:
    """A JSON object of a reply, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    """A count the server reported; anything but a positive int up to COUNT_MAX is read as not
    reported (0): a server's 10**400 tokens ended a finished run in an OverflowError when priced."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= COUNT_MAX
    return value if ok else 0


def _http(ep: Endpoint, **kw: Any) -> ChatBackend:
    from .http import HTTPBackend  # aiohttp is loaded by the runs that send requests
    return HTTPBackend(ep, **kw)


def _openai_sdk(ep: Endpoint, **kw: Any) -> ChatBackend:
    from .openai_sdk import OpenAISDKBackend  # the openai extra, only when chosen
    return OpenAISDKBackend(ep, **kw)


def _anthropic(ep: Endpoint, **kw: Any) -> ChatBackend:
    from .anthropic import AnthropicBackend
    return AnthropicBackend(ep, **kw)


#: Backend name -> factory(endpoint, **options). Imported lazily: the default never loads openai.
BACKENDS: dict[str, Callable[..., ChatBackend]] = {"http": _http, "openai-sdk": _openai_sdk,
                                                   "anthropic": _anthropic}


@dataclass(frozen=True)
class Provider:
    """Where a backend sends when no base URL is given, and the environment variables its API key
    and base URL are read from."""

    base_url: str = "https://api.openai.com/v1"
    key_env: str = "OPENAI_API_KEY"
    url_env: str = "OPENAI_BASE_URL"
    #: ``--pin-id auto`` pins the judged id on a self-hosted server: an OpenAI-compatible one
    #: (llama.cpp, vLLM, Ollama) compiles the schema per request and caches only the prompt.
    #: Anthropic's Messages API caches the output schema with the prompt, so a schema per question
    #: would cost the cached prefix ("changing output_format invalidates the prompt cache",
    #: https://platform.claude.com/docs/en/build-with-claude/structured-outputs): never pinned on auto.
    auto_pin: bool = True
    #: Its requests can go to OpenAI's Files and Batches endpoints as batch lines (``--batch``):
    #: chat-completions bodies. Anthropic's Messages are not (its Message Batches API is not supported).
    openai_batch: bool = True


#: The backends whose provider is not OpenAI's (as the Anthropic SDK reads its key and URL).
PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider("https://api.anthropic.com", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                          auto_pin=False, openai_batch=False)}


def provider_of(backend: object) -> Provider:
    """The provider of a backend given by name or as an object (by its ``name``)."""
    name = backend if isinstance(backend, str) else getattr(backend, "name", "")
    return PROVIDERS.get(name, Provider()) if isinstance(name, str) else Provider()


def server_host(base_url: str | None) -> str:
    """host[:port] of an OpenAI-compatible server, without any credentials in the URL."""
    if not base_url:
        return "api.openai.com"
    url = urlparse(base_url)
    return f"{url.hostname}:{url.port}" if url.port else str(url.hostname)


def self_hosted(base_url: str | None) -> bool:
    """Whether the server is one's own, by its address alone: a loopback, private or link-local
    IP, ``localhost``, or a name without a dot (a container or machine on one's network:
    ``http://vllm:8000/v1``). That is where llama.cpp, vLLM and Ollama run, which compile the
    response schema into a grammar per request; a hosted provider is reached by a public name.
    A gateway on one's own machine in front of a hosted provider is the exception
    (``--pin-id never``)."""
    host = (urlparse(base_url).hostname or "") if base_url else ""
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost") or "." not in host and ":" not in host:
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local
