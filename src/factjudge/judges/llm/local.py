"""A self-hosted server before the first question (issue #36 item 3): wait while it loads its
model, and ask as many questions at once as it has slots.

llama.cpp's server documents both (https://github.com/ggml-org/llama.cpp, tools/server/README.md):
``GET /health`` answers HTTP 503 ``{"error": {"code": 503, "message": "Loading model", ...}}``
while the model loads and 200 ``{"status": "ok"}`` once it can answer; ``GET /props`` gives
``total_slots`` (its ``--parallel``), ``GET /slots`` one entry per slot (unless started with
``--no-slots``). A question sent while it loads, or queued behind busy slots, spends its client
timeout waiting: a first run on a cold 2-slot server with 8 questions in flight took 394 s with
13 retries and a fact ERROR, 73 s warm. Another server (vLLM, Ollama, a gateway) answers these
paths with 404 or not at all, and nothing changes for it.

Both are read at the server's root: the base URL without its ``/v1``.
"""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from .backends.openai_format import as_is

#: How long the judge waits at most for a server still loading its model, and how often it says so.
READY_WAIT = 600.0
SAY_EVERY = 15.0
#: How long one probe may take: a server that does not answer at once is not a llama.cpp server
#: at rest (and then the questions themselves say what is wrong).
PROBE_TIMEOUT = 5.0


def root_url(base_url: str) -> str:
    """``http://127.0.0.1:8080/v1`` -> ``http://127.0.0.1:8080``."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[:-3]
    return urlunsplit(parts._replace(path=path, query="", fragment=""))


async def _get(session: aiohttp.ClientSession, url: str, headers: Mapping[str, str],
               probe: float = PROBE_TIMEOUT) -> tuple[int, Any]:
    """(status, JSON body or None); (0, None) when nothing answered in ``probe`` seconds."""
    try:
        async with session.get(url, headers=dict(headers), timeout=aiohttp.ClientTimeout(total=probe),
                               allow_redirects=False) as resp:
            text = await resp.content.read(1 << 20)  # a slot list of a large server; no more
            try:
                return resp.status, json.loads(text)
            except ValueError:
                return resp.status, None
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError):
        return 0, None


def slot_count(props: Any, slots: Any) -> int | None:
    """The number of slots from ``/props`` (``total_slots``), else from ``/slots`` (its length)."""
    if isinstance(props, dict):
        total = props.get("total_slots")
        if isinstance(total, int) and not isinstance(total, bool) and total >= 1:
            return total
    if isinstance(slots, list) and slots:
        return len(slots)
    return None


async def wait_until_ready(base_url: str, headers: Mapping[str, str], say: Callable[[str], None],
                           host: str, limit: float = READY_WAIT, probe: float = PROBE_TIMEOUT, *,
                           redact: Callable[[str], str] = as_is) -> bool:
    """Wait while the server's ``/health`` says it is loading (HTTP 503), at most ``limit``
    seconds, saying so every :data:`SAY_EVERY` seconds. Any other answer (200, 404, nothing) ends
    the wait at once: the questions find out the rest. True when the server has llama.cpp's
    ``/health`` (it answered 200 or 503 with JSON): then it has ``/props`` too. ``redact`` hides
    the credentials in what ``/health`` says, before it is cut."""
    started = time.monotonic()
    said = 0.0
    async with aiohttp.ClientSession() as session:
        while True:
            status, body = await _get(session, root_url(base_url) + "/health", headers, probe)
            waited = time.monotonic() - started
            if status != 503 or waited >= limit:
                if said:
                    say(f"factjudge: the server at {host} is ready after {waited:.0f} s")
                return status in (200, 503) and isinstance(body, dict)
            if not said or waited - said >= SAY_EVERY:
                said = max(waited, 0.001)
                say(f"factjudge: waiting for the server at {host} to load its model ({waited:.0f} s of at "
                    f"most {limit:.0f} s; its /health: {_message(body, redact)})")
            await asyncio.sleep(min(1.0, max(0.0, limit - waited)))


async def server_slots(base_url: str, headers: Mapping[str, str]) -> int | None:
    """The server's slots (llama.cpp: ``/props``, else ``/slots``), None when it does not say."""
    root = root_url(base_url)
    async with aiohttp.ClientSession() as session:
        status, props = await _get(session, root + "/props", headers)
        if status == 200 and (n := slot_count(props, None)) is not None:
            return n
        status, slots = await _get(session, root + "/slots", headers)
        return slot_count(None, slots) if status == 200 else None


def _message(body: Any, redact: Callable[[str], str]) -> str:
    err = body.get("error") if isinstance(body, dict) else None
    text = err.get("message") if isinstance(err, dict) else None
    return redact(str(text))[:80] if text else "HTTP 503"
