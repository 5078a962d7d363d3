"""OpenAI's chat-completions wire format, as the backends that speak it read it: a reply body
as a :class:`ChatReply` (usage as OpenAI, vLLM or llama.cpp report it; the answer of a reasoning
model where it put it) and an error body as one line. The aiohttp client that sends the requests
is :mod:`.http`, the openai SDK's :mod:`.openai_sdk`."""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ....util.bounds import COUNT_MAX
from .base import REFUSED, ChatReply, one_line


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


def as_is(text: str) -> str:
    return text


def parse_completion(data: object, *, redact: Callable[[str], str] = as_is) -> ChatReply:
    """A chat-completions response body (already parsed) as a reply; usage as OpenAI, vLLM or
    llama.cpp report it. ``redact`` hides the credentials in a refusal quoted in ``problem``
    before it is cut (a key cut in two would no longer be found)."""
    if not isinstance(data, dict):
        return ChatReply(None, problem="the server's reply is not a chat completion (not an object)")
    usage = reply_object(data.get("usage"))
    details = reply_object(usage.get("prompt_tokens_details"))
    timings = reply_object(data.get("timings"))  # llama.cpp server
    cached = reported_count(details.get("cached_tokens")) or reported_count(timings.get("cache_n"))

    choices = data.get("choices")
    finish = choices[0].get("finish_reason") if isinstance(choices, list) and choices and isinstance(
        choices[0], dict) else None

    def reply(content: str | None, problem: str = "") -> ChatReply:
        return ChatReply(content, prompt_tokens=reported_count(usage.get("prompt_tokens")),
                         completion_tokens=reported_count(usage.get("completion_tokens")),
                         cached_prompt_tokens=cached, problem=problem,
                         finish_reason=finish if isinstance(finish, str) else "")

    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return reply(None, "the server's reply has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return reply(None, "the server's reply has no message")
    content = message.get("content")
    if not content and message.get("refusal"):
        return reply(None, f"{REFUSED}: {one_line(redact(str(message['refusal'])))}")
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


def reply_object(value: object) -> dict[str, Any]:
    """A JSON object of a reply, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}


def reported_count(value: object) -> int:
    """A count the server reported; anything but a positive int up to COUNT_MAX is read as not
    reported (0): a server's 10**400 tokens ended a finished run in an OverflowError when priced."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= COUNT_MAX:
        return value
    return 0
