"""A real OpenAI-compatible chat-completions server on 127.0.0.1, scripted for tests and benchmarks.

It runs aiohttp in a background thread so the real ``openai`` client talks HTTP to it. What it
answers is decided by a ``responder(request) -> Reply``; by default it answers from ``truth``:
``{(direction, subject_id): matched_id_or_None}``. ``faults[(direction, subject_id)]`` holds
replies served first, in order (HTTP errors, broken JSON, wrong ids...), before the responder.
Every request body is recorded in ``requests``. It models provider prefix caching honestly: the
prompt tokens of the message prefix are reported as cached only when an earlier request had the
same ``response_format`` and the same message prefix (providers count the schema as part of the
prefix).

It also offers OpenAI's Files and Batches endpoints (``POST /v1/files``, ``GET /v1/files/{id}``,
``GET /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches``, ``GET /v1/batches/{id}``),
answering each batch line with the same faults and responder as a live request. A batch moves one
status per retrieve (validating, in_progress, finalizing, then completed) unless ``batch_hold`` keeps
it in progress; ``batch_plan`` scripts the outcome of the batches in creation order
(``{"status": "expired", "answered": k}``, ``{"status": "failed"}`` with an optional ``"message"``,
``{"status": "cancelled", "answered": k}``); ``batch_gate`` may answer any Files/Batches call
first. Batch lines are recorded in ``batch_requests``, never in ``requests`` (live calls).

And Anthropic's Messages API (``POST /v1/messages``, see :meth:`ScriptedServer._messages`): headers,
required fields and the documented shapes checked, the same faults and responder answering, prompt
caching at the ``cache_control`` breakpoints reported as ``cache_read_input_tokens``. Its bodies are
recorded in ``message_requests``, never in ``requests``.
"""
from __future__ import annotations

import asyncio
import inspect
import json
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yarl
from aiohttp import web

from factjudge.judges.llm.prompts import PROVED_NOTE

ID_KEYS = {"gold": ("gold_fact_id", "matched_predicted_id", "FN"),
           "predicted": ("predicted_fact_id", "matched_gold_id", "FP")}


@dataclass
class Reply:
    status: int = 200
    content: str | None = None          # the assistant message content (for status 200)
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None             # a raw body: for error replies, or a broken 200
    hang: float = 0.0                   # seconds to wait before answering (a stuck server)
    endless: bool = False               # a 200 whose chunked body never ends
    gzip_bomb: int = 0                  # a 200 gzip body inflating to this many bytes of zeros
    cut: bool = False                   # a 200 announcing 1,000 bytes, closed after 10
    finish_reason: str = "stop"         # "length": the answer was cut by the output budget
    stop_reason: str | None = None      # Messages API: end_turn / tool_use unless given (max_tokens...)
    #: more fields of the assistant message, as reasoning servers add them: ``reasoning`` (vLLM
    #: now, Ollama), ``reasoning_content`` (older vLLM, DeepSeek, SGLang)
    message: dict[str, Any] = field(default_factory=dict)
    #: Messages API: the reply's content blocks as they are (several tool_use blocks, another tool)
    blocks: list[dict[str, Any]] | None = None


def answer(direction: str, subject_id: str, matched: Any, reasoning: str = "scripted") -> Reply:
    id_key, matched_key, _ = ID_KEYS[direction]
    return Reply(content=json.dumps({id_key: subject_id, "reasoning": reasoning, matched_key: matched}))


def http_error(status: int, retry_after: str | None = None) -> Reply:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    body = json.dumps({"error": {"message": f"scripted {status}", "type": "server_error"}})
    return Reply(status=status, headers=headers, body=body)


def anthropic_error(status: int, kind: str, message: str, retry_after: str | None = None) -> Reply:
    """An error as the Messages API answers it (https://docs.anthropic.com/en/api/errors):
    ``{"type": "error", "error": {"type": ..., "message": ...}, "request_id": ...}``; 429
    ``rate_limit_error`` with ``retry-after`` (https://docs.anthropic.com/en/api/rate-limits), 529
    ``overloaded_error``."""
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_scripted"}
    return Reply(status=status, headers=headers, body=json.dumps(body))


def chat_view(body: dict[str, Any]) -> dict[str, Any]:
    """A Messages API body as the chat-completions body it stands for (the system blocks as one
    system message, each turn's text), so ``describe``, the faults and the responders serve both."""
    def text(content: Any) -> str:
        if isinstance(content, str):
            return content
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")

    system = body.get("system")
    messages = [{"role": "system", "content": text(system)}] if system else []
    messages += [{"role": m["role"], "content": text(m["content"])} for m in body["messages"]]
    return {"model": body.get("model"), "messages": messages}


#: An empty cell: the fact has no such field.
MISSING = object()
_JSON = json.JSONDecoder()


def read_cells(line: str) -> list[Any]:
    """The cells of one table line of a judge prompt (prompt format 4), read independently of the
    code that writes them: JSON where a cell starts with a quote or bracket, or reads as JSON
    (numbers, true, false, null); else the bare text up to the next " | "; empty: MISSING."""
    cells: list[Any] = []
    at = 0
    while True:
        if line[at:at + 1] in ('"', "[", "{"):
            value, at = _JSON.raw_decode(line, at)
        else:
            end = line.find(" | ", at)
            end = len(line) if end < 0 else end
            text, at = line[at:end], end
            try:
                value = json.loads(text) if text else MISSING
            except ValueError:
                value = text
        cells.append(value)
        if at == len(line):
            return cells
        if not line.startswith(" | ", at):
            raise ValueError(f"no separator at {at} in {line!r}")
        at += 3


def read_tables(text: str) -> list[dict[str, Any]]:
    """Facts written as tables: "fact_type: <cell>", a line of field names (the first is id), then
    one fact per line; a missing fact_type or field stays missing."""
    facts: list[dict[str, Any]] = []
    columns: list[Any] | None = None
    fact_type: Any = MISSING
    for line in text.split("\n") if text else []:
        if line.startswith("fact_type: "):  # no cell starts so unquoted
            fact_type, columns = read_cells(line[len("fact_type: "):])[0], None
        elif columns is None:
            columns = read_cells(line)
        else:
            fact = {} if fact_type is MISSING else {"fact_type": fact_type}
            fact.update((c, v) for c, v in zip(columns, read_cells(line), strict=True) if v is not MISSING)
            facts.append(fact)
    return facts


def prompt_facts(request: dict[str, Any]) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """(direction, subject fact, candidate facts) of a judge request, read from its messages (the
    response schema no longer names the subject, and mode ``none`` sends no schema at all). The
    system message may head the candidates' user message (a server that refuses the role)."""
    messages = request["messages"]
    at = 2 if messages[0]["role"] == "system" else 1
    head, _, fact = messages[at]["content"].partition("\n")
    fact = fact.partition(f"\n\n{PROVED_NOTE}")[0]  # the hybrid judge's proved candidates (proved_ids)
    direction = "gold" if head.startswith("GOLD") else "predicted"
    candidates = messages[at - 1]["content"].partition(" facts (candidates):\n")[2]
    return direction, read_tables(fact)[0], read_tables(candidates)


def proved_ids(request: dict[str, Any]) -> list[str]:
    """The candidates a question names as proved different (the hybrid judge's, on a shared prefix)."""
    note = request["messages"][-1]["content"].partition(f"\n\n{PROVED_NOTE}")[2]
    return note.partition("never the match: ")[2].split(", ") if note else []


def describe(request: dict[str, Any]) -> tuple[str, str, list[str]]:
    """(direction, subject id, candidate ids) of a judge request (see :func:`prompt_facts`)."""
    direction, subject, candidates = prompt_facts(request)
    return direction, subject["id"], [c["id"] for c in candidates]


#: OpenAI's HTTP 400 bodies for what its reasoning models refuse, word for word as the API returns
#: them (https://platform.openai.com/docs/guides/reasoning lists the parameters these models do not
#: take; the bodies as quoted in github.com/griptape-ai/ComfyUI-Griptape/issues/312 (gpt-5,
#: max_tokens), github.com/gabrii/Cursor-Azure-GPT-5/issues/33 and QwenLM/qwen-code/issues/921
#: (gpt-5-mini, temperature 0), microsoft/agent-framework/issues/1077 (o1-mini, the system role)).
REFUSALS: dict[str, dict[str, str]] = {
    "max_tokens": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                              "Use 'max_completion_tokens' instead.",
                   "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"},
    "temperature": {"message": "Unsupported value: 'temperature' does not support {value} with this "
                               "model. Only the default (1) value is supported.",
                    "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"},
    "system": {"message": "Unsupported value: 'messages[0].role' does not support 'system' with this model.",
               "type": "invalid_request_error", "param": "messages[0].role", "code": "unsupported_value"},
}


def refusal(body: dict[str, Any], refused: set[str], with_param: bool = True) -> str | None:
    """The 400 body a reasoning model answers ``body`` with, if it sends something in ``refused``
    (``max_tokens``, ``temperature`` other than 1, ``system`` as the first message's role)."""
    for what in ("system", "max_tokens", "temperature"):
        if what not in refused:
            continue
        if what == "system" and body["messages"][0]["role"] != "system":
            continue
        if what != "system" and (what not in body or (what == "temperature" and body[what] == 1)):
            continue
        error = dict(REFUSALS[what])
        error["message"] = error["message"].format(value=body.get("temperature"))
        if not with_param:
            del error["param"]
        return json.dumps({"error": error})
    return None


def mode_of(request: dict[str, Any]) -> str:
    fmt = request.get("response_format")
    return "none" if fmt is None else fmt["type"]


_MB = 1 << 20


def _gzip_segment() -> tuple[bytes, bytes]:
    """A gzip header with 1 MiB of zeros, and a 1 MiB-of-zeros deflate segment (about 1 KB) that
    may be repeated after it: each ends on a full flush, so none refers to the bytes before it."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = packer.compress(bytes(_MB)) + packer.flush(zlib.Z_FULL_FLUSH)
    return head, packer.compress(bytes(_MB)) + packer.flush(zlib.Z_FULL_FLUSH)


async def _hostile_body(request: web.Request, reply: Reply) -> web.StreamResponse:
    """A 200 whose body is endless, a gzip bomb or cut short; written as the client reads it, so
    the server's own memory stays small."""
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    if reply.cut:
        resp.content_length = 1000
    elif reply.gzip_bomb:
        resp.headers["Content-Encoding"] = "gzip"
        resp.enable_chunked_encoding()
    else:
        resp.enable_chunked_encoding()
    await resp.prepare(request)
    try:
        if reply.cut:
            await resp.write(b'{"id": "x"')
            assert request.transport is not None
            request.transport.close()
        elif reply.gzip_bomb:
            await _write_bomb(resp, reply.gzip_bomb)
        else:
            while True:
                await resp.write(b" " * 65536)
    except (ConnectionError, RuntimeError):  # the client stopped reading
        pass
    return resp


async def _write_bomb(resp: web.StreamResponse, size: int) -> None:
    head, segment = _gzip_segment()
    await resp.write(head)
    crc, done = zlib.crc32(bytes(_MB)), _MB
    while done + _MB <= size:
        await resp.write(segment)
        crc, done = zlib.crc32(bytes(_MB), crc), done + _MB
    # an empty final block, then the gzip trailer (CRC-32 and size of what was inflated)
    await resp.write(b"\x03\x00" + struct.pack("<II", crc, done & 0xFFFFFFFF))
    await resp.write_eof()


class RawServer:
    """A TCP server on 127.0.0.1 that answers every connection with ``data`` (no HTTP at all: a
    TLS alert, garbage) and closes it: what an http:// URL meets at a TLS-only port."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.connections = 0
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed by stop()
                return
            with conn:
                self.connections += 1
                try:
                    conn.recv(65536)
                    conn.sendall(self.data)
                except OSError:
                    pass

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        # close() alone leaves accept() blocked on Linux, and every test waited out the join's 10 s;
        # shutdown() wakes it
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(10)
        assert not self._thread.is_alive(), "RawServer's thread did not stop"


class ScriptedServer:
    def __init__(self, truth: dict[tuple[str, str], str | None] | None = None,
                 responder: Callable[[dict[str, Any]], Reply] | None = None,
                 delay: float = 0.0, port: int = 0) -> None:
        self.truth = truth or {}
        self.responder = responder or self._from_truth
        self.faults: dict[tuple[str, str], list[Reply]] = {}
        #: Structured-output modes refused the way llama-cpp-python's server refuses json_schema.
        self.reject_modes: set[str] = set()
        #: What the server refuses as OpenAI's reasoning models do, HTTP 400 with OpenAI's body
        #: (:data:`REFUSALS`): ``max_tokens``, ``temperature`` (other than 1), ``system`` (the role).
        self.refuse: set[str] = set()
        #: Those bodies without ``param`` (a server or proxy that names it only in the message).
        self.refuse_with_param = True
        #: Schema keywords refused the way Gemini's OpenAI-compatible endpoint refuses them
        #: (``{"additionalProperties"}``): HTTP 400 with Google's error, wrapped in a list.
        self.refuse_keywords: set[str] = set()
        #: Speak DeepSeek's dialect of structured output (https://api-docs.deepseek.com/guides/json_mode):
        #: json_schema refused, json_object only with the word "json" in the prompt.
        self.deepseek = False
        #: A proxy that echoes the request's Authorization header: ``"body"`` answers HTTP 200 with
        #: it as plain text, ``"reasoning"`` quotes it in the reasoning of a valid answer,
        #: ``"401"`` in the message of an HTTP 401 error.
        self.echo_auth: str | None = None
        #: A gateway routing by path: chat completions under ``/{prefix}/v1`` are answered by
        #: ``routes[prefix]`` (``base_url_for(prefix)``), the rest by the responder.
        self.routes: dict[str, Callable[[dict[str, Any]], Reply]] = {}
        #: A check of every raw request body (chat completions or Messages API, as sent) that may
        #: answer it first, e.g. a refusal in a provider's own words; None lets it through.
        self.gate: Callable[[dict[str, Any]], Reply | None] | None = None
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        #: (direction, prompt tokens, cached prompt tokens) of every answered request
        self.usage_log: list[tuple[str, int, int]] = []
        self.headers: list[dict[str, str]] = []
        #: path and query of every chat-completions request
        self.paths: list[str] = []
        #: path and query of every Files/Batches call
        self.batch_queries: list[str] = []
        self._seen_prefixes: set[str] = set()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        #: the port to listen on (0: a free one); a server started again on its old port is the
        #: same endpoint to the client (a restarted server)
        self.port = port
        # --- Files and Batches
        self.files: dict[str, dict[str, Any]] = {}
        self.file_data: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_plan: list[dict[str, Any]] = []
        self.batch_hold = False
        #: every batch line answered (the request bodies), in order
        self.batch_requests: list[dict[str, Any]] = []
        #: (method, path) of every Files/Batches call
        self.batch_calls: list[tuple[str, str]] = []
        self.batch_headers: list[dict[str, str]] = []
        self._batch_outcomes: dict[str, dict[str, Any]] = {}
        #: a hostile server: {real id: the id it hands out instead} for batch and file ids (say
        #: ``{"batch_1": "/tmp/x/evil"}``); requests for a handed-out id reach the real object
        self.hostile_ids: dict[str, str] = {}
        #: A check of every Files/Batches call that may answer it first (a redirect, a 200 that is
        #: not JSON, echoing the request's headers); None lets it through. The call is logged.
        self.batch_gate: Callable[[web.Request], Reply | None] | None = None
        #: A hostile server's view of a batch object: what creating, retrieving or listing answers
        #: is this function of a copy of it (a status quoting the key, counts that are no numbers);
        #: the batch itself goes on as scripted. None: the object as it is.
        self.batch_view: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        # --- Anthropic's Messages API
        #: the key ``x-api-key`` must hold (None: any, as a local server that checks none)
        self.anthropic_key: str | None = None
        #: the fewest prompt tokens a breakpoint caches: 1024 for Claude Sonnet and Opus 4, 2048 for
        #: Haiku 3 and 3.5, 4096 for Opus 4.5 and Haiku 4.5 (prompt caching docs); shorter prefixes
        #: are "processed without caching" and no error is given. 0: every prefix is cached.
        self.anthropic_min_cache_tokens = 0
        #: every Messages API body received (raw) and its headers
        self.message_requests: list[dict[str, Any]] = []
        self.message_headers: list[dict[str, str]] = []
        #: (direction, prompt tokens, cache_read_input_tokens, cache_creation_input_tokens)
        self.message_usage: list[tuple[str, int, int, int]] = []
        self._cached_prefixes: set[str] = set()
        # --- llama.cpp's server's own endpoints (tools/server/README.md in ggml-org/llama.cpp)
        #: Serve ``GET /health``: 200 ``{"status": "ok"}``, or while ``loading`` 503 with llama.cpp's
        #: "Loading model" error; chat completions are refused alike while loading. Off: 404.
        self.llama_health = False
        #: Seconds after start during which the server is loading its model (a cold start).
        self.loading_seconds = 0.0
        #: What the 503 of ``/health`` says while loading (llama.cpp's words by default).
        self.loading_message = "Loading model"
        #: ``GET /props`` answers this (``{"total_slots": 2, ...}``) when set, ``GET /slots`` this list.
        self.props: dict[str, Any] | None = None
        self.slot_list: list[dict[str, Any]] | None = None
        #: path of every GET to /health, /props, /slots
        self.probes: list[str] = []
        self._started_at = 0.0
        self.in_flight = self.max_in_flight = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def base_url_for(self, prefix: str) -> str:
        return f"http://127.0.0.1:{self.port}/{prefix}/v1"

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
            self.paths.append(request.path_qs)
        if self.loading():
            if self.llama_health:  # llama.cpp refuses requests while it loads its model
                return self._api_error(503, "Loading model")
            # a server that says nothing until it is ready (loading, or a first prompt on CPU)
            await asyncio.sleep(self.loading_seconds - (time.monotonic() - self._started_at))
        if self.delay:
            await asyncio.sleep(self.delay)
        refused = refusal(body, self.refuse, self.refuse_with_param) if self.refuse else None
        if refused is not None:
            return web.Response(status=400, content_type="application/json", text=refused)
        gated = self.gate(body) if self.gate else None
        if gated is not None:
            return web.Response(status=gated.status, content_type="application/json", text=gated.body or "")
        if mode_of(body) in self.reject_modes:
            return web.Response(status=500, content_type="application/json", text=json.dumps({
                "error": {"message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                          "'response_format', 'type'), 'msg': \"Input should be 'text' or "
                          "'json_object'\"}\n\n  File \"app.py\", line 376\n    POST /v1/chat/completions",
                          "type": "internal_server_error"}}))
        dialect = self._dialect_refusal(body)
        if dialect is not None:
            return web.Response(status=400, content_type="application/json", text=json.dumps(dialect))
        reply = (self._echo_auth(request, body) if self.echo_auth
                 else self._reply_for(body, request.match_info.get("prefix")))
        if inspect.isawaitable(reply):  # a responder may wait, e.g. for other requests
            reply = await reply
        if reply.hang:
            await asyncio.sleep(reply.hang)
        if reply.endless or reply.gzip_bomb or reply.cut:
            return await _hostile_body(request, reply)
        if reply.status != 200 or reply.body is not None:
            headers = {k: v for k, v in reply.headers.items() if k.lower() != "content-type"}
            return web.Response(status=reply.status, text=reply.body or "", headers=headers,
                                content_type=reply.headers.get("content-type", "application/json"))
        payload = {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                         "message": {"role": "assistant", "content": reply.content, **reply.message}}],
            "usage": self._usage(body),
        }
        return web.json_response(payload, headers=reply.headers)

    def _dialect_refusal(self, body: dict[str, Any]) -> Any:
        """The error body a provider's dialect answers a request it refuses with, or None."""
        fmt = body.get("response_format")
        refused = sorted(k for k in self.refuse_keywords if f'"{k}"' in json.dumps(fmt))
        if refused:
            # Google's words, and its OpenAI-compatible endpoint's list around the error, as in
            # https://github.com/QuantumNous/new-api/pull/1037 and
            # https://github.com/MinLL/SkyrimNet-GamePlugin/issues/77
            message = "\n".join(f'Invalid JSON payload received. Unknown name "{k}" at '
                                 "'generation_config.response_schema': Cannot find field." for k in refused)
            return [{"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}]
        if not self.deepseek or fmt is None:
            return None
        if fmt.get("type") == "json_schema":  # https://github.com/llm-exe/llm-exe/issues/662
            return {"error": {"message": "This response_format type is unavailable now",
                              "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}}
        if "json" not in json.dumps([m.get("content") for m in body["messages"]]).lower():
            return {"error": {"message": "Prompt must contain the word 'json' in some form to use "
                              "'response_format' of type 'json_object'.", "type": "invalid_request_error",
                              "param": None, "code": "invalid_request_error"}}
        return None

    def _echo_auth(self, request: web.Request, body: dict[str, Any]) -> Reply:
        echoed = f"echo: Authorization: {request.headers.get('Authorization', '')}"
        if self.echo_auth == "body":
            return Reply(body=echoed, headers={"content-type": "text/plain"})
        if self.echo_auth == "401":
            return Reply(status=401, body=json.dumps({"error": {"message": f"refused: {echoed}"}}))
        direction, subject, _ = describe(body)
        return answer(direction, subject, self.truth.get((direction, subject)), reasoning=echoed)

    def _reply_for(self, body: dict[str, Any], prefix: str | None = None) -> Reply:
        """The scripted reply to one chat-completions body: its faults first, then the responder
        (the route's, under a path prefix)."""
        key = describe(body)[:2]
        with self._lock:
            queue = self.faults.get(key)
            reply = queue.pop(0) if queue else None
        return reply if reply is not None else self.routes.get(prefix or "", self.responder)(body)

    # ------------------------------------------------------------------ Anthropic's Messages API
    # https://docs.anthropic.com/en/api/messages (request and response), /en/api/versioning (the
    # anthropic-version header), /en/api/errors (error bodies), and the guides on prompt caching
    # (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching) and structured outputs
    # (https://platform.claude.com/docs/en/build-with-claude/structured-outputs).

    #: The request fields the Messages API takes; any other is "Extra inputs are not permitted".
    MESSAGES_FIELDS = {"model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k",
                       "stop_sequences", "stream", "metadata", "tools", "tool_choice", "thinking",
                       "output_config", "service_tier", "container", "mcp_servers"}

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            self.message_requests.append(body)
            self.message_headers.append(dict(request.headers))
        refused = self._check_headers(request) or self._check_message_body(body) or (
            self.gate(body) if self.gate else None)
        if refused is None and "json_schema" in self.reject_modes and "output_config" in body:
            # a model without structured outputs; the message is ours, the docs give none
            refused = anthropic_error(400, "invalid_request_error",
                                      "output_config.format: structured outputs are not supported by this model")
        if refused is not None:
            return web.Response(status=refused.status, text=refused.body or "", headers=refused.headers,
                                content_type="application/json")
        chat = chat_view(body)
        reply = self._reply_for(chat)
        if inspect.isawaitable(reply):
            reply = await reply
        if reply.hang:
            await asyncio.sleep(reply.hang)
        if reply.endless or reply.gzip_bomb or reply.cut:
            return await _hostile_body(request, reply)
        if reply.status != 200 or reply.body is not None:
            headers = {k: v for k, v in reply.headers.items() if k.lower() != "content-type"}
            return web.Response(status=reply.status, text=reply.body or "", headers=headers,
                                content_type=reply.headers.get("content-type", "application/json"))
        return web.json_response(self._message(body, chat, reply), headers=reply.headers)

    def _check_headers(self, request: web.Request) -> Reply | None:
        if self.anthropic_key is not None and request.headers.get("x-api-key") != self.anthropic_key:
            return anthropic_error(401, "authentication_error", "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return anthropic_error(400, "invalid_request_error", "anthropic-version: header is required")
        return None

    def _check_message_body(self, body: dict[str, Any]) -> Reply | None:
        """The first thing the API would refuse in ``body``, as its error, or None."""
        def bad(message: str) -> Reply:
            return anthropic_error(400, "invalid_request_error", message)

        extra = sorted(set(body) - self.MESSAGES_FIELDS)
        if extra:
            return bad(f"{extra[0]}: Extra inputs are not permitted")
        for name in ("model", "max_tokens", "messages"):
            if name not in body:
                return bad(f"{name}: Field required")
        if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
            return bad("max_tokens: Input should be a valid integer greater than or equal to 1")
        if not 0 <= body.get("temperature", 0) <= 1:
            return bad("temperature: range: 0..1")
        problem = self._check_turns(body["messages"]) or self._check_system(body.get("system"))
        if problem:
            return bad(problem)
        marks = self._breakpoints(body)
        if len(marks) > 4:
            return bad(f"A maximum of 4 blocks with cache_control may be provided. Found {len(marks)}.")
        if any(mark != {"type": "ephemeral"} and mark.get("ttl") not in ("5m", "1h") for mark in marks):
            return bad("cache_control: only {\"type\": \"ephemeral\"} (with an optional ttl) is accepted")
        return self._check_output(body)

    @staticmethod
    def _check_turns(messages: Any) -> str:
        if not isinstance(messages, list) or not messages:
            return "messages: at least one message is required"
        for n, m in enumerate(messages):
            if m.get("role") not in ("user", "assistant"):
                return (f"messages.{n}: Unexpected role \"{m.get('role')}\". The Messages API accepts a "
                        "top-level `system` parameter, not \"system\" as an input message role.")
            content = m.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            if not isinstance(blocks, list) or not blocks:
                return f"messages.{n}.content: Input should be a valid list or string"
            for block in blocks:
                if block.get("type") == "text" and not block.get("text"):
                    return f"messages.{n}: text content blocks must be non-empty"
        return ""

    @staticmethod
    def _check_system(system: Any) -> str:
        if system is None or isinstance(system, str):
            return ""
        if not isinstance(system, list) or not all(
                isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"]
                for b in system):
            return "system: Input should be a valid string or a list of non-empty text blocks"
        return ""

    @staticmethod
    def _check_output(body: dict[str, Any]) -> Reply | None:
        def bad(message: str) -> Reply:
            return anthropic_error(400, "invalid_request_error", message)

        if "output_config" in body:
            fmt = body["output_config"].get("format")
            if fmt is not None and (fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict)):
                return bad("output_config.format: type must be json_schema, with a schema")
        tools = body.get("tools", [])
        names = [t.get("name") for t in tools]
        if any(not isinstance(t.get("input_schema"), dict) or t["input_schema"].get("type") != "object"
               for t in tools):
            return bad("tools.0.input_schema: type must be object")
        choice = body.get("tool_choice")
        if choice is not None and choice.get("type") == "tool" and choice.get("name") not in names:
            return bad(f"tool_choice: no tool named {choice.get('name')!r}")
        return None

    @staticmethod
    def _segments(body: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
        """The cacheable prompt in its order (tools, then system, then messages: the prompt caching
        docs' "cache prefix" order) as (text, cache_control) pieces, one per block. The output
        format is part of the first piece: changing it is a cache miss."""
        head = json.dumps([body.get("tools"), body.get("tool_choice"), body.get("output_config")], sort_keys=True)
        pieces: list[tuple[str, dict[str, Any] | None]] = [(head, None)]
        system = body.get("system")
        blocks = [{"type": "text", "text": system}] if isinstance(system, str) else (system or [])
        pieces += [(b["text"], b.get("cache_control")) for b in blocks]
        for m in body["messages"]:
            content = m["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            pieces += [(m["role"] + ":" + b.get("text", ""), b.get("cache_control")) for b in blocks]
        return pieces

    def _breakpoints(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return [mark for _, mark in self._segments(body) if mark is not None]

    def _message_usage(self, body: dict[str, Any]) -> dict[str, int]:
        """Usage as the API reports it: the longest prefix ending at a breakpoint that an earlier
        request wrote is read (``cache_read_input_tokens``), the rest up to the last breakpoint is
        written (``cache_creation_input_tokens``), and ``input_tokens`` counts only what follows the
        last breakpoint: total = input + read + creation (prompt caching docs)."""
        pieces = self._segments(body)
        ends, total, key = [], 0, ""
        for text, mark in pieces:
            total += len(text) // 4 + 1
            key += "\x00" + text
            if mark is not None and total >= self.anthropic_min_cache_tokens:
                ends.append((total, key))
        with self._lock:
            read = max((n for n, k in ends if k in self._cached_prefixes), default=0)
            self._cached_prefixes.update(k for _, k in ends)
        written = max((n for n, _ in ends), default=0) - read if ends else 0
        written = max(written, 0)
        return {"input_tokens": total - read - written, "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read, "output_tokens": 20}

    def _message(self, body: dict[str, Any], chat: dict[str, Any], reply: Reply) -> dict[str, Any]:
        """The Messages API's answer: the content as a text block, or as the forced tool's
        ``tool_use`` block (its ``input`` an object) when ``tool_choice`` names a tool."""
        choice = body.get("tool_choice") or {}
        content: list[dict[str, Any]] = []
        stop = "end_turn"
        try:
            data = json.loads(reply.content or "")
        except ValueError:
            data = None
        if reply.blocks is not None:
            content, stop = reply.blocks, "tool_use"
        elif choice.get("type") == "tool" and isinstance(data, dict):
            content.append({"type": "tool_use", "id": f"toolu_{len(self.message_requests)}",
                            "name": choice["name"], "input": data})
            stop = "tool_use"
        elif reply.content:
            content.append({"type": "text", "text": reply.content})
        usage = self._message_usage(body)
        with self._lock:
            self.message_usage.append((describe(chat)[0], usage["input_tokens"] + usage["cache_read_input_tokens"]
                                       + usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"],
                                       usage["cache_creation_input_tokens"]))
        return {"id": f"msg_{len(self.message_requests)}", "type": "message", "role": "assistant",
                "model": body.get("model"), "content": content, "stop_reason": reply.stop_reason or stop,
                "stop_sequence": None, "usage": usage}

    # ------------------------------------------------------------------ Files and Batches

    @staticmethod
    def _api_error(status: int, message: str) -> web.Response:
        return web.json_response({"error": {"message": message, "type": "invalid_request_error"}},
                                 status=status)

    def _log_call(self, request: web.Request) -> None:
        with self._lock:
            self.batch_calls.append((request.method, request.path))
            self.batch_queries.append(request.path_qs)
            self.batch_headers.append(dict(request.headers))

    async def _upload(self, request: web.Request) -> web.Response:
        self._log_call(request)
        if not request.content_type.startswith("multipart/"):
            return self._api_error(400, "expected a multipart/form-data upload")
        form = await request.post()
        upload, purpose = form.get("file"), form.get("purpose")
        if purpose != "batch" or not isinstance(upload, web.FileField):
            return self._api_error(400, "'file' and purpose='batch' are required")
        data = upload.file.read()
        with self._lock:
            fid = f"file-{len(self.files) + 1}"
            obj = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                   "filename": upload.filename, "purpose": "batch"}
            self.files[fid], self.file_data[fid] = obj, data
        return web.json_response(obj)

    async def _file(self, request: web.Request) -> web.Response:
        self._log_call(request)
        fid = request.match_info["file_id"]
        if fid not in self.files:
            return self._api_error(404, f"No such File object: {fid}")
        return web.json_response(self.files[fid])

    async def _file_content(self, request: web.Request) -> web.Response:
        self._log_call(request)
        fid = request.match_info["file_id"]
        if fid not in self.file_data:
            return self._api_error(404, f"No such File object: {fid}")
        return web.Response(body=self.file_data[fid], content_type="application/octet-stream")

    def _store_file(self, name: str, lines: list[dict[str, Any]]) -> str | None:
        if not lines:
            return None
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        fid = f"file-{len(self.files) + 1}"
        self.files[fid] = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                           "filename": name, "purpose": "batch_output"}
        self.file_data[fid] = data
        return fid

    @staticmethod
    def _check_lines(data: bytes, endpoint: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The input file's lines and the validation errors OpenAI would report."""
        lines, errors, seen, models = [], [], set(), set()
        for n, raw in enumerate(data.decode("utf-8").splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                errors.append({"code": "invalid_json_line", "message": "not JSON", "line": n})
                continue
            problem = ""
            if not isinstance(line.get("custom_id"), str) or line["custom_id"] in seen:
                problem = "custom_id missing or duplicated"
            elif line.get("method") != "POST" or line.get("url") != endpoint:
                problem = f"method must be POST and url {endpoint}"
            elif not isinstance(line.get("body"), dict) or "messages" not in line["body"]:
                problem = "body must be a chat-completions request"
            if problem:
                errors.append({"code": "invalid_request", "message": problem, "line": n})
                continue
            seen.add(line["custom_id"])
            models.add(line["body"].get("model"))
            lines.append(line)
        if len(models) > 1:
            errors.append({"code": "mismatched_model", "message": "one model per batch", "line": None})
        if not lines and not errors:
            errors.append({"code": "empty_file", "message": "the input file is empty", "line": None})
        return lines, errors

    async def _create_batch(self, request: web.Request) -> web.Response:
        self._log_call(request)
        body = await request.json()
        fid = body.get("input_file_id")
        if fid not in self.file_data:
            return self._api_error(400, f"No such File object: {fid}")
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return self._api_error(400, "endpoint must be /v1/chat/completions, completion_window 24h")
        with self._lock:
            n = len(self.batches) + 1
            bid = f"batch_{n}"
            plan = self.batch_plan[n - 1] if n - 1 < len(self.batch_plan) else {}
            obj = {"id": bid, "object": "batch", "endpoint": body["endpoint"], "errors": None,
                   "input_file_id": fid, "completion_window": "24h", "status": "validating",
                   "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
                   "request_counts": {"total": 0, "completed": 0, "failed": 0}}
            self.batches[bid] = obj
            self._batch_outcomes[bid] = plan
        return web.json_response(self._viewed(obj))

    def _finish_batch(self, obj: dict[str, Any]) -> None:
        """Answer the batch's lines (as many as its plan lets) into an output and an error file."""
        plan = self._batch_outcomes[obj["id"]]
        lines, errors = self._check_lines(self.file_data[obj["input_file_id"]], obj["endpoint"])
        if errors or plan.get("status") == "failed":
            obj["status"] = "failed"
            obj["errors"] = {"object": "list", "data": errors or [
                {"code": "scripted_failure", "message": plan.get("message", "scripted batch failure"),
                 "line": None}]}
            return
        status = plan.get("status", "completed")
        answered = plan.get("answered", len(lines))
        out, err = [], []
        for i, line in enumerate(lines):
            rid = f"batch_req_{obj['id']}_{i}"
            if i >= answered:
                reason = ("batch_expired", "This request could not be executed before the completion "
                          "window expired.") if status == "expired" else \
                         ("batch_cancelled", "This request was cancelled.")
                err.append({"id": rid, "custom_id": line["custom_id"], "response": None,
                            "error": {"code": reason[0], "message": reason[1]}})
                continue
            body = line["body"]
            self.batch_requests.append(body)
            if mode_of(body) in self.reject_modes:
                err.append({"id": rid, "custom_id": line["custom_id"], "error": None, "response": {
                    "status_code": 400, "request_id": rid,
                    "body": {"error": {"message": "response_format json_schema is not supported",
                                       "type": "invalid_request_error"}}}})
                continue
            reply = self._reply_for(body)
            if reply.status != 200:
                try:
                    payload: Any = json.loads(reply.body or "")
                except ValueError:
                    payload = reply.body or ""
                err.append({"id": rid, "custom_id": line["custom_id"], "error": None,
                            "response": {"status_code": reply.status, "request_id": rid, "body": payload}})
                continue
            if reply.body is not None:  # a broken 200: the body is not a chat completion
                payload = reply.body
            else:
                payload = {"id": f"chatcmpl-{rid}", "object": "chat.completion",
                           "created": int(time.time()), "model": body.get("model", "scripted"),
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": reply.content}}],
                           "usage": self._usage(body)}
            out.append({"id": rid, "custom_id": line["custom_id"], "error": None,
                        "response": {"status_code": 200, "request_id": rid, "body": payload}})
        obj["status"] = status
        obj["output_file_id"] = self._store_file(f"{obj['id']}_output.jsonl", out)
        obj["error_file_id"] = self._store_file(f"{obj['id']}_error.jsonl", err)
        failed = sum(1 for e in err if e.get("response"))
        obj["request_counts"] = {"total": len(lines), "completed": len(out), "failed": failed}

    def _viewed(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` as :attr:`batch_view` shows it."""
        return obj if self.batch_view is None else self.batch_view(json.loads(json.dumps(obj)))

    async def _retrieve_batch(self, request: web.Request) -> web.Response:
        self._log_call(request)
        bid = request.match_info["batch_id"]
        # handlers run one at a time on the server's loop; the lock is for the test thread
        obj = self.batches.get(bid)
        if obj is None:
            return self._api_error(404, f"No such Batch object: {bid}")
        status = obj["status"]
        if status == "validating":
            lines, errors = self._check_lines(self.file_data[obj["input_file_id"]], obj["endpoint"])
            if errors or self._batch_outcomes[bid].get("status") == "failed":
                self._finish_batch(obj)
            else:
                obj["status"] = "in_progress"
                obj["request_counts"] = {"total": len(lines), "completed": 0, "failed": 0}
        elif status == "in_progress" and not self.batch_hold:
            obj["status"] = "finalizing"
        elif status == "finalizing":
            self._finish_batch(obj)
        return web.json_response(self._viewed(obj))

    async def _list_batches(self, request: web.Request) -> web.Response:
        self._log_call(request)
        with self._lock:
            data = [self._viewed(b) for b in reversed(list(self.batches.values()))]
        return web.json_response({"object": "list", "data": data, "has_more": False})

    @web.middleware
    async def _hostile(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """``hostile_ids``: hand out the hostile ids in every JSON answer, and route a GET for one
        (at the path the client's URL normalisation makes of it, ``../`` resolved) to its object."""
        if not self.hostile_ids:
            return await handler(request)
        for real, fake in self.hostile_ids.items():
            kind = "batches" if real.startswith("batch") else "files"
            for tail in ("", "/content"):
                if request.path == yarl.URL(f"http://h/v1/{kind}/{fake}{tail}").path:
                    real_request = request.clone(rel_url=f"/v1/{kind}/{real}{tail}")
                    real_request._match_info = await request.app.router.resolve(real_request)
                    handler = real_request.match_info.handler
                    request = real_request
        resp = await handler(request)
        if isinstance(resp, web.Response) and resp.content_type == "application/json" and resp.text:
            text = resp.text
            for real, fake in self.hostile_ids.items():
                text = text.replace(json.dumps(real), json.dumps(fake))
            resp.text = text
        return resp

    @web.middleware
    async def _batch_gated(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """``batch_gate``: its reply to a Files/Batches call, if it has one."""
        reply = None
        if self.batch_gate is not None and request.path.startswith(("/v1/files", "/v1/batches")):
            reply = self.batch_gate(request)
        if reply is None:
            return await handler(request)
        self._log_call(request)
        headers = {k: v for k, v in reply.headers.items() if k.lower() != "content-type"}
        return web.Response(status=reply.status, text=reply.body or "", headers=headers,
                            content_type=reply.headers.get("content-type", "application/json"))

    def loading(self) -> bool:
        return time.monotonic() - self._started_at < self.loading_seconds

    @web.middleware
    async def _in_flight(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Count the chat requests being answered at once (``max_in_flight``)."""
        if not request.path.endswith("/chat/completions"):
            return await handler(request)
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await handler(request)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _llama_get(self, request: web.Request) -> web.Response:
        with self._lock:
            self.probes.append(request.path)
        if request.path == "/health" and self.llama_health:
            if self.loading():
                return self._api_error(503, self.loading_message)
            return web.json_response({"status": "ok"})
        if request.path == "/props" and self.props is not None:
            return web.json_response(self.props)
        if request.path == "/slots" and self.slot_list is not None:
            return web.json_response(self.slot_list)
        return web.Response(status=404, text="File Not Found")

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        app = web.Application(client_max_size=1 << 30)  # batch input files may be large
        app.middlewares.append(self._batch_gated)
        app.middlewares.append(self._hostile)
        app.middlewares.append(self._in_flight)
        app.router.add_get("/health", self._llama_get)
        app.router.add_get("/props", self._llama_get)
        app.router.add_get("/slots", self._llama_get)
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/{prefix}/v1/chat/completions", self._handle)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{file_id}", self._file)
        app.router.add_get("/v1/files/{file_id}/content", self._file_content)
        app.router.add_post("/v1/batches", self._create_batch)
        app.router.add_get("/v1/batches", self._list_batches)
        app.router.add_get("/v1/batches/{batch_id}", self._retrieve_batch)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", self.port, backlog=1024)
        loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._runner = runner
        self._started.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    def start(self) -> ScriptedServer:
        self._started_at = time.monotonic()
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

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
