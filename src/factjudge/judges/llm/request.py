"""The requests of one document direction: a plan computed once per (prefix, mode, adaptation)
(the body's serialised head, the response-cache digest, the prefix's tokens), then each question's
body and cache key from it. What a request is adapted to after a refusal (:data:`NO_TEMPERATURE`,
...) is named here; when it is adapted is :mod:`.adapt`'s business."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ...util.jsonutil import canonical_json
from .backends import ChatReply, RequestBody
from .prompts import Asked, response_format, schema_instruction
from .settings import Sampling
from .tokens import TokenCounter

#: The bodies' JSON: ``json.dumps`` with these settings builds an encoder per call (~2 us a
#: question); one encoder keeps no state between calls and writes the same bytes.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

#: The output budget of one answer when none is given, sent as ``max_tokens``. Measured on
#: llama.cpp's server with Qwen2.5-Coder-1.5B (issue #21): typical answers are 90-180 generated
#: tokens; one ran away to 1,744+ tokens (~110 s at 16 tokens/s) until the client's timeout. The
#: longest real reasoning at hand (models.REASONING_LIMIT: 10,845 characters, 99th percentile
#: 7,292, over 2,399 answers) answers a whole question, not one fact's comparison. 1024 tokens is
#: 5.7 times the longest typical answer and ~4,000 characters of reasoning; at the measured 16
#: tokens/s it ends a runaway in 64 s, inside the default 120 s timeout (2048 would take 128 s: the
#: timeout would end it first and the retry run away again). A cut answer is asked again once,
#: for brevity.
DEFAULT_MAX_TOKENS = 1024
#: The default budget once the server asked for ``max_completion_tokens`` (OpenAI's reasoning
#: models): it bounds "visible output tokens and reasoning tokens" together (API reference), an
#: answer cut while reasoning comes back empty with finish_reason ``length``, and OpenAI
#: "recommends reserving at least 25,000 tokens for reasoning and outputs when you start
#: experimenting" (https://platform.openai.com/docs/guides/reasoning). A bound, not a cost: the
#: model is billed for what it writes.
REASONING_MAX_TOKENS = 25_000

#: What a server may refuse before it answers once, and what is sent instead for the rest of the
#: run (OpenAI's reasoning models; the 400 bodies are emulated in tests/scripted_server.py):
#: temperature other than 1 ("Unsupported value: 'temperature' does not support 0 with this model.
#: Only the default (1) value is supported.", param ``temperature``): none is sent; ``max_tokens``
#: ("Unsupported parameter: 'max_tokens' is not supported with this model. Use
#: 'max_completion_tokens' instead.", param ``max_tokens``): the budget goes as
#: ``max_completion_tokens``; the system role (o1-mini: "Unsupported value: 'messages[0].role' does
#: not support 'system' with this model.", param ``messages[0].role``): the system message heads
#: the first user message.
NO_TEMPERATURE, COMPLETION_TOKENS, SYSTEM_IN_USER = "no_temperature", "max_completion_tokens", "system_in_user"


@dataclass(frozen=True)
class Plan:
    """Everything about the requests of one document direction that does not depend on the fact
    judged, computed once: the request's serialised head, its cache-key digest and its tokens."""

    prefix: list[dict[str, str]]     # the prefix's messages, as built (before any adaptation)
    mode: str
    adapted: tuple[str, ...]         # what the request was adapted to (adapt.refused_parameter)
    budget: int | None               # the output budget sent, None for no bound
    head: str                        # the JSON body up to the messages after the prefix
    digest: str                      # hash of everything in the request but the last message
    tokens: int                      # prompt tokens of the prefix and schema, reply priming included
    drop: frozenset[str] = frozenset()  # schema keywords left out (the server refused them)
    #: The schema pins the judged id: each question's response_format follows the messages, these
    #: two pieces of it serialised around the id (:func:`pinned_format`); None: not pinned.
    pinned: tuple[str, str] | None = None


def budget(sampling: Sampling, adapted: tuple[str, ...]) -> int | None:
    """The output budget sent: the one given (0: none), else the default for the parameter
    it goes in."""
    given = sampling.max_tokens
    if given is not None:
        return given or None
    return REASONING_MAX_TOKENS if COMPLETION_TOKENS in adapted else DEFAULT_MAX_TOKENS


def sampling_params(sampling: Sampling, adapted: tuple[str, ...]) -> dict[str, Any]:
    """The request's sampling fields, as adapted to what the server refused."""
    params: dict[str, Any] = {}
    if NO_TEMPERATURE not in adapted:
        params["temperature"] = sampling.temperature
    bound = budget(sampling, adapted)
    if bound is not None:
        params["max_completion_tokens" if COMPLETION_TOKENS in adapted else "max_tokens"] = bound
    if sampling.reasoning_effort is not None:
        params["reasoning_effort"] = sampling.reasoning_effort
    return params


def prefix_messages(asked: Asked, mode: str, adapted: tuple[str, ...],
                    drop: frozenset[str]) -> list[dict[str, str]]:
    """The prefix as sent: the schema in the system message for modes ``none`` and
    ``json_object`` (OpenAI and DeepSeek read a json_object schema from the prompt only; DeepSeek
    wants the word json there), the system message folded into the first user message for a
    server that refuses the role."""
    task = asked.task
    messages = list(asked.prefix.messages)
    if mode in ("none", "json_object") and messages:
        messages[0] = {**messages[0], "content": messages[0]["content"]
                       + schema_instruction(task.direction, task.candidate_ids, drop,
                                            task.config.reasoning)}
    if SYSTEM_IN_USER in adapted and len(messages) > 1 and messages[0]["role"] == "system":
        system, user = messages[0], messages[1]
        messages[:2] = [{**user, "content": system["content"] + "\n\n" + user["content"]}]
    return messages


@dataclass(frozen=True)
class Requester:
    """Who asks, as the requests and their cache keys name it: the judge's name, model, server
    URL, sampling, whether the judged id is pinned and whether a prompt cache key is sent."""

    name: str
    model: str
    server_url: str
    sampling: Sampling
    pin: bool
    send_prompt_cache_key: bool
    tokens: TokenCounter


def build_plan(who: Requester, asked: Asked, mode: str, adapted: tuple[str, ...],
               drop: frozenset[str], version: str) -> Plan:
    """The plan of ``asked``'s requests in ``mode``, adapted to ``adapted`` and without the schema
    keywords ``drop``; ``version`` is the prompt format's, a part of every cache key."""
    task = asked.task
    messages = prefix_messages(asked, mode, adapted, drop)
    sampling = sampling_params(who.sampling, adapted)
    fmt = response_format(task.direction, task.candidate_ids, mode, drop=drop,
                          reasoning=task.config.reasoning)
    pin = who.pin and fmt is not None
    request: dict[str, Any] = {"model": who.model, **sampling}
    if fmt is not None and not pin:  # pinned, each question has its own: see body
        request["response_format"] = fmt
    if who.send_prompt_cache_key and asked.prefix.cache_key:
        request["prompt_cache_key"] = asked.prefix.cache_key
    request["messages"] = messages
    # '{...,"messages":[m1,m2]}' without its closing ']}': each call appends its own message
    head = _COMPACT.encode(request)[:-2]
    key_parts: dict[str, Any] = {"v": version, "judge": who.name, "model": who.model,
                                 "url": who.server_url, "mode": mode, "response_format": fmt,
                                 "sampling": sampling, "prefix": messages}
    if adapted:  # an adapted request is another request: its answer has a key of its own
        key_parts["adapted"] = list(adapted)
    if pin:
        key_parts["pin_id"] = True
    material = canonical_json(key_parts)
    tokens = who.tokens.messages(messages) + (who.tokens.text(canonical_json(fmt)) if fmt else 0)
    return Plan(asked.prefix.messages, mode, adapted, budget(who.sampling, adapted), head,
                hashlib.sha256(material.encode("utf-8")).hexdigest(), tokens, drop,
                pinned_format(asked, mode, drop) if pin else None)


#: The judged id a pinned schema is serialised with once per plan (a control character: JSON
#: writes it escaped, and the judged id is the schema's first string that is not a keyword).
_STAND_IN = "\x00"


def pinned_format(asked: Asked, mode: str, drop: frozenset[str]) -> tuple[str, str]:
    """The serialised pinned ``response_format`` of ``asked``'s direction cut where the judged id
    goes: each question's is the two parts around its id's JSON, the same bytes as its whole
    schema serialised (the schema built and written once a plan, not once a question)."""
    task = asked.task
    fmt = response_format(task.direction, task.candidate_ids, mode, _STAND_IN, drop, task.config.reasoning)
    before, cut, after = _COMPACT.encode(fmt).partition(_COMPACT.encode(_STAND_IN))
    assert cut, "a pinned schema holds the judged id (no droppable keyword removes its enum)"
    return before, after


def cache_key(plan: Plan, asked: Asked) -> str:
    """The response-cache key of the question ``asked`` under ``plan``."""
    last = canonical_json(asked.last)
    return hashlib.sha256(f"{plan.digest}\n{last}".encode()).hexdigest()


def body(plan: Plan, asked: Asked, extra: list[dict[str, str]]) -> RequestBody:
    """The request of the question ``asked`` under ``plan``, with ``extra`` messages after the
    question (a re-ask)."""
    task = asked.task
    tail = [asked.last, *extra]
    sep = "," if plan.head[-1] != "[" else ""
    text = plan.head + sep + _COMPACT.encode(tail)[1:]
    if plan.pinned is not None:  # the question's own schema, after the shared messages
        before, after = plan.pinned
        text += ',"response_format":' + before + _COMPACT.encode(task.subject_id) + after
    text += "}"
    return RequestBody(text.encode("utf-8"))


def cut_at(plan: Plan, reply: ChatReply) -> str:
    """Where an answer was cut: the budget sent, else what the server counted (its own limit)."""
    at = plan.budget or reply.completion_tokens
    return f"{at} tokens" if at else "the server's own limit"
