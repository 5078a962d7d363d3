"""A real OpenAI-compatible chat-completions server on 127.0.0.1, scripted for tests and benchmarks.

It runs aiohttp in a background thread so the real ``openai`` client talks HTTP to it. What it
answers is decided by a ``responder(request) -> Reply``; by default it answers from ``truth``:
``{(direction, subject_id): matched_id_or_None}``. ``faults[(direction, subject_id)]`` holds
replies served first, in order (HTTP errors, broken JSON, wrong ids...), before the responder.
Every request body is recorded in ``requests``. It models provider prefix caching honestly: the
prompt tokens of the message prefix are reported as cached only when an earlier request had the
same ``response_format`` and the same message prefix (providers count the schema as part of the
prefix).
"""
from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

ID_KEYS = {"gold": ("gold_fact_id", "matched_predicted_id", "FN"),
           "predicted": ("predicted_fact_id", "matched_gold_id", "FP")}


@dataclass
class Reply:
    status: int = 200
    content: str | None = None          # the assistant message content (for status 200)
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None             # a raw body: for error replies, or a broken 200
    hang: float = 0.0                   # seconds to wait before answering (a stuck server)


def answer(direction: str, subject_id: str, matched: str | None, reasoning: str = "scripted",
           status: str | None = None) -> Reply:
    id_key, matched_key, negative = ID_KEYS[direction]
    data = {id_key: subject_id, "reasoning": reasoning,
            "decision": {"status": status or ("TP" if matched is not None else negative),
                         matched_key: matched}}
    return Reply(content=json.dumps(data))


def http_error(status: int, retry_after: str | None = None) -> Reply:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    body = json.dumps({"error": {"message": f"scripted {status}", "type": "server_error"}})
    return Reply(status=status, headers=headers, body=body)


def describe(request: dict[str, Any]) -> tuple[str, str, list[str]]:
    """(direction, subject id, candidate ids) of a judge request, read from its messages (the
    response schema no longer names the subject, and mode ``none`` sends no schema at all)."""
    last = request["messages"][2]["content"]
    head, _, fact = last.partition("\n")
    direction = "gold" if head.startswith("GOLD") else "predicted"
    candidates = request["messages"][1]["content"].split("\n")[1:]
    ids = [json.loads(line)["id"] for line in candidates if line]
    return direction, json.loads(fact)["id"], ids


def mode_of(request: dict[str, Any]) -> str:
    fmt = request.get("response_format")
    return "none" if fmt is None else fmt["type"]


class ScriptedServer:
    def __init__(self, truth: dict[tuple[str, str], str | None] | None = None,
                 responder: Callable[[dict[str, Any]], Reply] | None = None,
                 delay: float = 0.0) -> None:
        self.truth = truth or {}
        self.responder = responder or self._from_truth
        self.faults: dict[tuple[str, str], list[Reply]] = {}
        #: Structured-output modes refused the way llama-cpp-python's server refuses json_schema.
        self.reject_modes: set[str] = set()
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        #: (direction, prompt tokens, cached prompt tokens) of every answered request
        self.usage_log: list[tuple[str, int, int]] = []
        self.headers: list[dict[str, str]] = []
        self._seen_prefixes: set[str] = set()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def subjects(self, direction: str | None = None) -> list[str]:
        """Subject ids of every request received, optionally of one direction."""
        out = []
        for r in self.requests:
            d, s, _ = describe(r)
            if direction in (None, d):
                out.append(s)
        return out

    def _from_truth(self, request: dict[str, Any]) -> Reply:
        direction, subject, _ = describe(request)
        return answer(direction, subject, self.truth.get((direction, subject)))

    def _usage(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        fmt = json.dumps(body.get("response_format"), sort_keys=True)
        prefix = fmt + json.dumps(messages[:-1])
        total = (len(fmt) + sum(len(m.get("content") or "") for m in messages)) // 4 + 1
        with self._lock:
            hit = prefix in self._seen_prefixes
            self._seen_prefixes.add(prefix)
        cached = (len(fmt) + sum(len(m.get("content") or "") for m in messages[:-1])) // 4 if hit else 0
        with self._lock:
            self.usage_log.append((describe(body)[0], total, cached))
        return {"prompt_tokens": total, "completion_tokens": 20, "total_tokens": total + 20,
                "prompt_tokens_details": {"cached_tokens": cached}}

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
        if self.delay:
            await asyncio.sleep(self.delay)
        if mode_of(body) in self.reject_modes:
            return web.Response(status=500, content_type="application/json", text=json.dumps({
                "error": {"message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                          "'response_format', 'type'), 'msg': \"Input should be 'text' or "
                          "'json_object'\"}\n\n  File \"app.py\", line 376\n    POST /v1/chat/completions",
                          "type": "internal_server_error"}}))
        key = describe(body)[:2]
        with self._lock:
            queue = self.faults.get(key)
            reply = queue.pop(0) if queue else None
        if reply is None:
            reply = self.responder(body)
        if reply.hang:
            await asyncio.sleep(reply.hang)
        if reply.status != 200 or reply.body is not None:
            headers = {k: v for k, v in reply.headers.items() if k.lower() != "content-type"}
            return web.Response(status=reply.status, text=reply.body or "", headers=headers,
                                content_type=reply.headers.get("content-type", "application/json"))
        payload = {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply.content}}],
            "usage": self._usage(body),
        }
        return web.json_response(payload, headers=reply.headers)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._runner = runner
        self._started.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    def start(self) -> "ScriptedServer":
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("scripted server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
