"""OpenAI's Files and Batches endpoints (the Batch API), with the LLM judge's server and auth.

A batch or file id from a server is checked before it goes into a URL or a file name
(:func:`safe_id`). Calls are retried on 429, 5xx, timeouts and dropped connections; a call that
is not idempotent (creating a batch) is retried only when it certainly did not reach the server,
else :class:`Ambiguous` tells the caller to look the batch up first.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._version import __version__
from ...errors import FactJudgeError
from ...io.files import AtomicFile
from ...models import cut_text
from ...util.terminal import printable
from ...util.urls import credentials_may_follow
from .backends import (
    MAX_BODY_BYTES,
    MAX_REDIRECTS,
    REDIRECTS,
    BackendError,
    Endpoint,
    error_message,
    one_line,
    read_body,
    redirect_problem,
    retry_after_seconds,
)
from .retry import RetryPolicy

if TYPE_CHECKING:
    import aiohttp  # loaded by the runs that send a batch

#: The endpoint every line of a batch asks.
ENDPOINT = "/v1/chat/completions"
#: The largest JSON answer of a Files or Batches call read (decompressed), as a chat reply's
#: (MAX_BODY_BYTES, 8 MiB): a batch object is about 1 KB, a listing's page of 100 of them some
#: 200 KB; a server sending more (broken, hostile, a gzip bomb) is read no further.
MAX_ANSWER_BYTES = MAX_BODY_BYTES
#: The most characters of a batch's ``status`` kept (a word such as ``in_progress``): it is shown
#: in every progress line and saved in batch.json.
STATUS_CHARS = 60
#: The counts of a batch's ``request_counts`` kept, each when it is an integer from 0 to
#: :data:`MAX_COUNT` (a batch holds at most 50,000 requests); any other value is unknown.
COUNT_KEYS = ("total", "completed", "failed")
MAX_COUNT = 10**9


class BatchError(FactJudgeError):
    """A batch cannot go on (the server refused it, it failed, it was cancelled): one line."""


class UnsafeId(BatchError):
    """A server's batch or file id that factjudge does not put in a URL or a file name."""


#: What a batch or file id from a server may look like before it goes into a URL or a file name
#: (OpenAI's ``batch_abc123`` and ``file-abc123``, Azure's and vLLM's UUIDs after a prefix): ASCII
#: letters, digits, ``_``, ``-`` and ``.``, not starting with ``.``, at most 256 characters. A
#: server's ``/tmp/x/evil`` or ``../x`` is refused, never joined to a path.
_SAFE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,255}")

def cut(text: str, limit: int = 80) -> str:
    """``text`` quoted (repr: control characters and lone surrogates escaped), cut at ``limit``."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


def safe_id(value: object, kind: str, where: str) -> str:
    """``value`` when it is a safe ``kind`` ("batch id", "file id", see :data:`_SAFE_ID`); a
    one-line :class:`UnsafeId` naming it after ``where`` (repr, cut at 80 characters) otherwise."""
    if isinstance(value, str) and _SAFE_ID.fullmatch(value):
        return value
    shown = cut(value) if isinstance(value, str) else repr(value)
    raise UnsafeId(f"{where} {shown}: not a {kind} (1-256 ASCII letters, digits, '_', '-' or '.', "
                   "not starting with '.'), so factjudge puts it in no URL and no file name")



#: The Files and Batches calls: 5 tries after the first, 1, 2, 4... s apart (at most 60 s, a
#: Retry-After included), no jitter (one client, a few calls).
BATCH_RETRY = RetryPolicy(retries=5, backoff=1.0, max_backoff=60.0, jitter=False)


class Ambiguous(Exception):
    """A request that may or may not have reached the server (a timeout, a dropped connection)."""


class BatchClient:
    """OpenAI's Files and Batches endpoints over aiohttp, with the judge's base URL and auth."""

    def __init__(self, endpoint: Endpoint, *, timeout: float = 600.0, retry: RetryPolicy = BATCH_RETRY) -> None:
        self.endpoint = endpoint
        self.timeout, self.retry = timeout, retry
        self.headers = {k: v for k, v in endpoint.headers.items() if k.lower() != "content-type"}
        self.headers["User-Agent"] = f"factjudge/{__version__}"
        self._session: Any = None

    async def __aenter__(self) -> BatchClient:
        import aiohttp

        self._session = aiohttp.ClientSession(headers=self.headers)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._session.close()

    async def _call(self, what: str, method: str, path: str, *,
                    make: Callable[[contextlib.ExitStack], dict[str, Any]] = lambda _: {},
                    dest: Path | None = None, max_bytes: int = 0, idempotent: bool = True) -> Any:
        """One API call with retries (429, 5xx, timeouts, dropped connections); the parsed JSON
        answer (at most :data:`MAX_ANSWER_BYTES`), or the body streamed into ``dest`` (at most
        ``max_bytes``). A call that is not idempotent is retried only when it certainly did not
        reach the server; otherwise :class:`Ambiguous` is raised."""
        import aiohttp

        url = self.endpoint.url(path)
        redact = self.endpoint.redact
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=min(self.timeout, 60), sock_read=self.timeout)
        attempt = redirects = 0
        while True:
            try:
                with contextlib.ExitStack() as stack:
                    # redirects followed here, as the live backend follows them: aiohttp would
                    # follow one to any origin, and send it every header but Authorization
                    async with self._session.request(method, url, timeout=timeout, allow_redirects=False,
                                                     **make(stack)) as resp:
                        if resp.status in REDIRECTS and "Location" in resp.headers:
                            url = _redirect_target(resp, method, url)
                            redirects += 1
                            if redirects > MAX_REDIRECTS:
                                raise BatchError(f"{what}: the server redirected more than {MAX_REDIRECTS} times")
                            continue
                        if resp.status >= 300:
                            raw = await resp.content.read(64 * 1024)
                            text = redact(raw.decode("utf-8", "replace"))
                            raise BackendError("status", redact(error_message(resp.status, text)),
                                               status=resp.status, body=text,
                                               retry_after=retry_after_seconds(resp.headers))
                        raw = await self._answer(resp, what, dest, max_bytes)
                        if raw is None:
                            return None
            except BackendError as exc:
                error = exc
            except asyncio.TimeoutError:
                error = BackendError("timeout", f"no answer within {self.timeout:g} s")
            except aiohttp.ClientConnectorError as exc:
                error = BackendError("connect", redact(f"cannot connect: {exc.os_error or exc}"))
            except (aiohttp.ClientError, OSError) as exc:
                error = BackendError("disconnect", redact(f"{type(exc).__name__}: {exc}"))
            else:
                return self._json(what, raw)
            unsent = error.kind == "connect" or (error.kind == "status" and error.status in (429, 503))
            delay = self.retry.wait(attempt, error)
            if delay is None or not (idempotent or unsent):
                if not idempotent and error.kind in ("timeout", "disconnect"):
                    raise Ambiguous(error.message)
                hint = ""
                if error.kind == "status" and error.status in (404, 405) and attempt == 0:
                    hint = (f"; does the server at {self.endpoint.host} offer OpenAI's Batch API? "
                            "(for vLLM: --batch-export, then run_batch and factjudge batch-import)")
                raise BatchError(f"{what}: {error.message}{hint}")
            await asyncio.sleep(delay)
            attempt += 1

    async def _answer(self, resp: aiohttp.ClientResponse, what: str, dest: Path | None, max_bytes: int) -> bytes | None:
        """A 2xx answer's body (at most :data:`MAX_ANSWER_BYTES`), or None once it is streamed into
        ``dest`` (at most ``max_bytes``); a larger one is a BatchError, not retried: the server
        would send it again."""
        if dest is not None:
            if not await _stream_to(resp, dest, self.endpoint.secrets, max_bytes):
                raise BatchError(f"{what}: the server at {self.endpoint.host} sent more than "
                                 f"{max_bytes >> 20} MiB, more than the batch's answers can be (read no further)")
            return None
        raw = await read_body(resp.content, MAX_ANSWER_BYTES)
        if raw is None:
            raise BatchError(f"{self._answered(what)} more than {MAX_ANSWER_BYTES >> 20} MiB (read no further)")
        return raw

    def _json(self, what: str, raw: bytes) -> Any:
        """``raw`` parsed, else a BatchError quoting its start, redacted before it is cut (a key
        cut in two would not be found)."""
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            start = one_line(self.endpoint.redact(raw.decode("utf-8", "replace")), 80)
            raise BatchError(f"{what}: the server at {self.endpoint.host} did not answer "
                             f"JSON ({start!r})") from None

    async def upload(self, path: Path) -> str:
        import aiohttp

        def make(stack: contextlib.ExitStack) -> dict[str, Any]:
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field("file", stack.enter_context(path.open("rb")), filename=path.name,
                           content_type="application/jsonl")
            return {"data": form}

        what = f"uploading {path.name}"
        obj = await self._call(what, "POST", "/files", make=make)
        file_id = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(file_id, str):
            raise BatchError(f"{what}: the server's answer has no file id")
        return safe_id(file_id, "file id", self._answered(what))

    async def create(self, input_file_id: str) -> dict[str, Any]:
        body = {"input_file_id": input_file_id, "endpoint": ENDPOINT, "completion_window": "24h"}
        obj = await self._call("creating the batch", "POST", "/batches",
                               make=lambda _: {"json": body}, idempotent=False)
        return self._batch_object(obj, "creating the batch")

    async def retrieve(self, batch_id: str) -> dict[str, Any]:
        what = f"checking batch {batch_id}"
        return self._batch_object(await self._call(what, "GET", f"/batches/{batch_id}"), what)

    async def find(self, input_file_id: str, pages: int = 10) -> dict[str, Any] | None:
        """The batch created from ``input_file_id``, looked up in the server's list of batches."""
        after = None
        for _ in range(pages):
            query = "?limit=100" + (f"&after={after}" if after else "")
            obj = await self._call("listing batches", "GET", f"/batches{query}")
            data = obj.get("data") if isinstance(obj, dict) else None
            if not isinstance(data, list) or not data:
                return None
            for batch in data:
                if isinstance(batch, dict) and batch.get("input_file_id") == input_file_id:
                    return self._batch_object(batch, "listing batches")
            if not obj.get("has_more"):
                return None
            last = data[-1].get("id") if isinstance(data[-1], dict) else None
            after = safe_id(last, "batch id", self._answered("listing batches")) if last else None
        return None

    async def download(self, file_id: str, dest: Path, *, lines: int) -> None:
        """The file into ``dest``, redacted, for a batch of ``lines`` requests. An output or error
        file is large by right (hundreds of MB), so it is streamed to disk, never held in memory;
        its length is bounded by what the import takes, a line per request, each at most
        MAX_BODY_BYTES and its newline: beyond that a server is sending something else (endless,
        a bomb), and nothing is left in ``dest``."""
        await self._call(f"downloading file {file_id}", "GET", f"/files/{file_id}/content", dest=dest,
                         max_bytes=lines * (MAX_BODY_BYTES + 1))

    def _answered(self, what: str) -> str:
        return f"{what}: the server at {self.endpoint.host} answered"

    def _batch_object(self, obj: object, what: str) -> dict[str, Any]:
        """``obj`` when it is a batch object whose ids are safe (:func:`safe_id`), its ``status``
        and ``request_counts`` made fit to show and save (:meth:`_shown_status`, :func:`_counts`)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not isinstance(obj.get("status"), str):
            raise BatchError(f"{what}: the server's answer is not a batch object")
        where = self._answered(what)
        try:
            safe_id(obj["id"], "batch id", where)
            for key in ("output_file_id", "error_file_id"):
                if obj.get(key) is not None:
                    safe_id(obj[key], "file id", f"{where} {key}")
        except UnsafeId as exc:  # running again would meet the same id
            raise UnsafeId(f"{exc}; the batch may exist on the server (and be billed): check the "
                           "provider's dashboard") from None
        return {**obj, "status": self._shown_status(obj["status"]),
                "request_counts": _counts(obj.get("request_counts"))}

    def _shown_status(self, status: str) -> str:
        """A server's status as it is shown and saved: the credentials hidden (before it is cut: a
        key cut in two would not be found), control characters escaped, at most
        :data:`STATUS_CHARS` characters and the cut's marker. A known status is unchanged."""
        return cut_text(printable(self.endpoint.redact(status)), STATUS_CHARS)


def _counts(counts: object) -> dict[str, int] | None:
    """A batch's ``request_counts`` as far as they can be believed: each of :data:`COUNT_KEYS`
    that is an integer from 0 to :data:`MAX_COUNT` (not a bool, a string or a float); the others
    are unknown, left out. None when the server gave no such object."""
    if not isinstance(counts, dict):
        return None
    return {k: v for k in COUNT_KEYS if type(v := counts.get(k)) is int and 0 <= v <= MAX_COUNT}


def _redirect_target(resp: aiohttp.ClientResponse, method: str, url: str) -> str:
    """Where a redirect of ``url`` leads, when it may be followed as the live backend follows one
    (:func:`~.backends.redirect_problem`: the same origin, a 307 or 308); a GET keeps its method
    whatever the status, so it only has to stay on the origin. Else BackendError saying why."""
    import yarl

    try:
        target = str(resp.url.join(yarl.URL(resp.headers["Location"])))
    except ValueError:
        raise BackendError("status", f"HTTP {resp.status}: a redirect to a Location that is not a URL",
                           status=resp.status) from None
    problem = redirect_problem(resp.status, url, target)
    if problem is not None and not (method == "GET" and credentials_may_follow(url, target)):
        raise BackendError("status", problem, status=resp.status)
    return target


async def _stream_to(resp: aiohttp.ClientResponse, dest: Path, secrets: tuple[str, ...], max_bytes: int) -> bool:
    """The body into ``dest`` with every secret replaced by ``***``: an output file's answers may
    quote them, and it stays in the output folder. The last bytes of a piece, fewer than the
    longest secret, wait for the next piece, so a secret split between two is found too. False,
    ``dest`` untouched, when the body is longer than ``max_bytes`` (read no further)."""
    hidden = [s.encode() for s in secrets]  # longest first (Endpoint)
    keep = max((len(s) for s in hidden), default=1) - 1
    held, size = b"", 0
    with AtomicFile(dest, binary=True) as out:
        async for chunk in resp.content.iter_chunked(1 << 20):
            size += len(chunk)
            if size > max_bytes:
                out.abort()  # the part written dropped: leaving the block then commits nothing
                return False
            data = held + chunk
            for secret in hidden:
                data = data.replace(secret, b"***")
            cut = max(0, len(data) - keep)
            out.handle.write(data[:cut])
            held = data[cut:]
        out.handle.write(held)
    return True

