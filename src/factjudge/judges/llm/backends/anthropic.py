"""Anthropic's Messages API as a backend (``--backend anthropic``): the judge's chat-completions
request translated here, so the judge stays provider-neutral.

What the API documents and this file does (https://docs.anthropic.com/en/api/messages):

- ``POST {base}/v1/messages`` with the key in ``x-api-key`` and ``anthropic-version: 2023-06-01``
  (https://docs.anthropic.com/en/api/versioning); ``max_tokens`` is required.
- System messages become the top-level ``system`` (a list of text blocks); the API refuses a
  ``system`` role among the messages.
- Prompt caching (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching): a block
  marked ``cache_control: {"type": "ephemeral"}`` ends a cached prefix (tools, system, then
  messages, in that order; at most 4 breakpoints). The judge's layout is pinned (prompts.py: the
  shared prefix first, the one fact judged last), so the last system block and the last message
  before the question are marked: the candidate list is written once per direction and read by
  every other question of it, at 0.1x the input price. ``usage.input_tokens`` counts only what
  follows the last breakpoint: the prompt is ``input + cache_read + cache_creation`` tokens, and
  the cached prompt tokens are ``cache_read_input_tokens``.
- Structured outputs (https://platform.claude.com/docs/en/build-with-claude/structured-outputs):
  generally available, no beta header, as ``output_config: {"format": {"type": "json_schema",
  "schema": ...}}`` (the beta's ``output_format`` with ``anthropic-beta:
  structured-outputs-2025-11-13`` is being retired). Models before Claude 4.5 refuse it with a 400,
  and ``auto`` then falls back to ``json_object``, which is sent as the long-standing way to get
  schema-shaped JSON from any Claude model: one tool whose ``input_schema`` is the schema, forced
  by ``tool_choice: {"type": "tool", "name": ...}``
  (https://docs.anthropic.com/en/docs/build-with-claude/tool-use); its ``input`` is the answer.
- The reply's ``content`` blocks (text, or the tool's ``input``); ``stop_reason`` ``max_tokens``
  is an answer cut by the budget (invalid: asked again), ``refusal`` a refusal.
- Errors are ``{"type": "error", "error": {"type": ..., "message": ...}}``
  (https://docs.anthropic.com/en/api/errors), read like OpenAI's; 429 carries ``retry-after``
  and 529 (overloaded) is retried like any 5xx.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

from .base import REFUSED, ChatReply, Endpoint, RequestBody, one_line
from .http import HTTPBackend
from .openai_format import as_is, reply_object, reported_count

#: The only version of the Messages API (https://docs.anthropic.com/en/api/versioning).
API_VERSION = "2023-06-01"
#: ``max_tokens`` when the judge sets no budget: the API requires one. An answer (reasoning, then
#: the decision) is 90-180 tokens on a 1.5B model (issue #21); one cut here is asked again.
DEFAULT_MAX_TOKENS = 1024
#: A prompt-cache breakpoint (5 minutes, refreshed by every read).
EPHEMERAL = {"type": "ephemeral"}
#: The forced tool's name when the structured-output request names none.
TOOL_NAME = "record_verdict"
#: What stands for an empty assistant turn replayed in a re-ask: the API refuses empty text.
EMPTY_ANSWER = "(empty answer)"
#: ``reasoning_effort`` values Anthropic's ``output_config.effort`` takes as they are.
_EFFORTS = ("low", "medium", "high")


def _text(content: object) -> str:
    """A chat message's content as text (a string, or OpenAI's list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user and assistant turns, the end of the shared prefix marked for caching: the
    question is the last turn before the first assistant turn (a re-ask's answer), and the prefix
    is every turn before it."""
    first_answer = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
    end_of_prefix = first_answer - 2
    turns: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        role = "assistant" if message.get("role") == "assistant" else "user"
        text = _text(message.get("content")) or (EMPTY_ANSWER if role == "assistant" else "(empty)")
        if i == end_of_prefix:
            turns.append({"role": role, "content": [{"type": "text", "text": text, "cache_control": EPHEMERAL}]})
        else:
            turns.append({"role": role, "content": text})
    return turns


def _structured(response_format: object) -> dict[str, Any]:
    """The request fields that ask for the answer's schema (see the module's docstring)."""
    fmt = reply_object(response_format)
    if fmt.get("type") == "json_schema":
        spec = reply_object(fmt.get("json_schema"))
        return {"output_config": {"format": {"type": "json_schema", "schema": spec.get("schema", {})}}}
    if fmt.get("type") == "json_object" and isinstance(fmt.get("schema"), dict):
        tool = {"name": TOOL_NAME, "description": "Record the verdict on the fact judged.",
                "input_schema": fmt["schema"]}
        return {"tools": [tool], "tool_choice": {"type": "tool", "name": TOOL_NAME}}
    return {}  # json_object without a schema, or none: the prompt asks for the JSON


def messages_request(chat: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions request body as a Messages API request body. Fields the Messages API
    does not take (``prompt_cache_key``: Anthropic caches by ``cache_control``) are dropped: it
    refuses unknown fields."""
    messages = [m for m in chat.get("messages", []) if isinstance(m, dict)]
    system = [_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer")]
    budget = chat.get("max_tokens") or chat.get("max_completion_tokens") or DEFAULT_MAX_TOKENS
    request: dict[str, Any] = {"model": chat.get("model"), "max_tokens": budget}
    if "temperature" in chat:
        request["temperature"] = chat["temperature"]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text} for text in system if text]
    if blocks:
        blocks[-1]["cache_control"] = EPHEMERAL
        request["system"] = blocks
    request["messages"] = _turns([m for m in messages if m.get("role") not in ("system", "developer")])
    request.update(_structured(chat.get("response_format")))
    if chat.get("reasoning_effort") in _EFFORTS:
        request.setdefault("output_config", {})["effort"] = chat["reasoning_effort"]
    return request


def _answer(blocks: list[Any], offered: Collection[str], redact: Callable[[str], str]) -> tuple[str | None, str]:
    """The answer in a reply's content and what is wrong with it: the forced tool's ``input`` (as
    JSON), else the text. One answer was asked for: several ``tool_use`` blocks, or a call of a
    tool the request did not offer, are no answer (asked again, as any invalid one)."""
    calls = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
    if len(calls) > 1:
        return None, f"the reply has {len(calls)} tool_use blocks; one answer was asked for"
    if calls:
        name = calls[0].get("name")
        if name not in offered:
            return None, (f"the reply calls a tool that was never offered ({one_line(redact(repr(name)), 60)}); "
                          f"answer with {'the tool ' + repr(TOOL_NAME) if offered else 'the JSON asked for'}")
        return json.dumps(calls[0].get("input"), ensure_ascii=False), ""
    text = "".join(b["text"] for b in blocks
                   if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return text or None, ""


def parse_message(data: object, offered: Collection[str] = (TOOL_NAME,), *,
                  redact: Callable[[str], str] = as_is) -> ChatReply:
    """A Messages API response body (already parsed) as a reply; ``offered``: the names of the
    tools the request offered; ``redact`` hides the credentials in the server's words quoted in
    ``problem``, before they are cut."""
    if not isinstance(data, dict):
        return ChatReply(None, problem="the server's reply is not a Messages API message (not an object)")
    usage = reply_object(data.get("usage"))
    read = reported_count(usage.get("cache_read_input_tokens"))
    prompt = reported_count(usage.get("input_tokens")) + read + reported_count(usage.get("cache_creation_input_tokens"))

    def reply(content: str | None, problem: str = "", finish_reason: str = "") -> ChatReply:
        return ChatReply(content, prompt_tokens=prompt, completion_tokens=reported_count(usage.get("output_tokens")),
                         cached_prompt_tokens=read, problem=problem, finish_reason=finish_reason)

    blocks = data.get("content")
    if not isinstance(blocks, list):
        return reply(None, "the server's reply has no content blocks")
    content, problem = _answer(blocks, offered, redact)
    if problem:
        return reply(None, problem)
    stop = data.get("stop_reason")
    if stop == "max_tokens":  # cut by its budget: the judge asks once more for brevity, as for "length"
        return reply(content, finish_reason="length")
    if stop == "refusal":
        said = f": {one_line(redact(content))}" if content else ""
        return reply(None, f"{REFUSED} (stop_reason refusal){said}")
    if stop == "model_context_window_exceeded":
        return reply(content, "the answer was cut by the model's context window")
    return reply(content)


def _messages_endpoint(endpoint: Endpoint) -> Endpoint:
    """The endpoint with the API key in ``x-api-key`` and the version header; Basic auth from the
    URL's userinfo (a proxy's) stays as it is."""
    headers = dict(endpoint.headers)
    auth = headers.pop("Authorization", "")
    if auth.startswith("Bearer "):
        headers["x-api-key"] = auth.removeprefix("Bearer ")
    elif auth:
        headers["Authorization"] = auth
    headers["anthropic-version"] = API_VERSION
    return Endpoint(endpoint.base_url, headers, endpoint.secrets)


class AnthropicBackend(HTTPBackend):
    """The lean HTTP client (:class:`HTTPBackend`) posting Messages API requests."""

    name = "anthropic"
    parse = staticmethod(parse_message)

    def __init__(self, endpoint: Endpoint, **kw: object) -> None:
        super().__init__(_messages_endpoint(endpoint), **kw)
        # Anthropic's base URL has no /v1 (https://api.anthropic.com); one given with it, as
        # OpenAI-compatible base URLs are, is taken as meant rather than sent to /v1/v1/messages
        path = self.endpoint.base_url.partition("?")[0].rstrip("/")
        self.url = self.endpoint.url("/messages" if path.endswith("/v1") else "/v1/messages")

    def read(self, data: object, body: RequestBody) -> ChatReply:
        tools = body.obj().get("tools") if b'"tools":' in body.data else None  # parsed only when sent
        offered = [str(t.get("name")) for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
        return parse_message(data, offered, redact=self.endpoint.redact)

    async def send(self, body: RequestBody, timeout: float) -> ChatReply:
        request = messages_request(body.obj())
        data = json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return await super().send(RequestBody(data), timeout)
