"""The LLM judge: one question per fact to any OpenAI-compatible chat-completions server.

Provider-agnostic: the request goes out through a backend (:mod:`.backends`); this class owns the
prompt budget, the response cache, re-asks of invalid answers, transport retries, the
structured-output mode and the policy that stops a run which cannot work.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidAnswer, JudgeSetupError, PromptTooLarge
from ...models import CallUsage, Verdict
from ...util.bounds import Bound, numbers_problem
from ...util.jsonutil import canonical_json
from ...util.redact import redact, secrets_to_hide
from ...util.terminal import printable
from ...util.urls import url_credentials, url_problem, without_credentials
from ..base import PROMPT_FORMAT_VERSION, JudgeBase, JudgePass, JudgeTask, error_verdict
from .backends import (
    BACKENDS,
    BackendError,
    ChatBackend,
    ChatReply,
    RequestBody,
    endpoint,
    provider_of,
    self_hosted,
)
from .cache import ResponseCache
from .direction import LLMPass
from .prompts import (
    PIN_ID_CHOICES,
    STRUCTURED_OUTPUT_MODES,
    Asked,
    PreparedCall,
    direction_prefix,
    last_message,
    parse_answer,
    prepare_call,
    reask_messages,
    refused_keywords,
    response_format,
    schema_instruction,
)
from .retry import RetryPolicy
from .settings import Sampling, Transport
from .tokens import REPLY_PRIMING, TokenCounter

#: Statuses that say the judge itself is misconfigured (bad key, no access, no such model or
#: endpoint) at any point of a run: every other call would fail the same way.
FATAL_STATUSES = (401, 403, 404)
#: A server error body naming these refused the structured-output request, not the question.
_NAMES_RESPONSE_FORMAT = re.compile(r"response_format|json_schema|json_object", re.IGNORECASE)
#: Stands for a broken connection among the error bodies of the first question's tries.
_BROKEN = "\x00broken connection"

#: The ranges of the judge's numbers; the command line's options take the same. Outside them a
#: run failed late (``timeout=inf``: a traceback at the first request) or wrote non-JSON
#: (``temperature=inf``: ``Infinity`` in request bodies and run.json).
TIMEOUT = Bound(0, 86_400, above=True)         # seconds per request: a day is beyond any server
QUESTION_SECONDS = Bound(0, 3 * 86_400, above=True)
TEMPERATURE = Bound(0, 2)                      # OpenAI's range
MAX_TOKENS = Bound(0, 2**31 - 1, whole=True)   # what a server's int32 field holds; 0: no bound
RETRIES = Bound(0, 100, whole=True)
WAIT_SECONDS = Bound(0, 86_400)

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
#: ``reasoning_effort`` values taken (openai-python's ReasoningEffort; not every model takes each).
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")

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
_ROLE_PARAM = re.compile(r"^messages\[\d+\]\.role$")
#: A refusal says so; without ``param`` (a proxy, another server) its message names what it refuses.
#: vLLM's "'max_tokens' or 'max_completion_tokens' is too large" names a parameter it takes.
#: Other wordings: Anthropic's "`temperature` may only be set to 1 when thinking is enabled.",
#: "This model only accepts temperature=1 (got 0).", pydantic's "extra fields not permitted" (422),
#: "max_tokens is deprecated for this model, use max_completion_tokens".
_REFUSES = re.compile(r"unsupported|not supported|does not support|not allowed|unrecognized|unknown"
                      r"|not permitted|\bonly\b|deprecated|extra (?:fields|inputs)", re.IGNORECASE)
#: The request fields a refusal may name other than structured output's. A 400 or 422 naming one
#: of them and nothing of structured output refused that field: falling back to a weaker
#: structured-output mode would change nothing and blame the wrong thing.
_PARAMETERS = re.compile(r"\b(temperature|max_completion_tokens|max_tokens|reasoning_effort|"
                         r"prompt_cache_key|top_p|top_k|thinking)\b")
_NAMES_STRUCTURED = re.compile(r"response_format|json_schema|json_object|output_config|output_format|"
                               r"structured|schema|tool", re.IGNORECASE)
#: What the user can change for each field the judge cannot adapt by itself.
_OPTION_FOR = {"temperature": "--temperature", "max_tokens": "--max-tokens",
               "max_completion_tokens": "--max-tokens", "reasoning_effort": "--reasoning-effort",
               "prompt_cache_key": "--no-prompt-cache-key"}
_NAMED = ((re.compile(r"\bmax_tokens\b"), COMPLETION_TOKENS),
          (re.compile(r"\btemperature\b", re.IGNORECASE), NO_TEMPERATURE),
          (re.compile(r"\bsystem\b.{0,60}\brole\b|\brole\b.{0,60}\bsystem\b", re.IGNORECASE | re.DOTALL),
           SYSTEM_IN_USER))
_ADAPTED_TO = {NO_TEMPERATURE: "sending no temperature (the model's default)",
               COMPLETION_TOKENS: "sending the budget as max_completion_tokens",
               SYSTEM_IN_USER: "putting the system message at the head of the first user message"}
#: What asks again for an answer the budget cut (once).
_BREVITY = ("Your answer was cut at {at}, the most it may take. Answer again, much shorter: "
            "keep the reasoning to a few sentences.")


def refused_parameter(body: str) -> str | None:
    """The adaptation a server's error body asks for (:data:`NO_TEMPERATURE`...): by its
    ``error.param`` when it has one, else by the parameter its message says it refuses; None when
    it names nothing the judge can send otherwise."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    err = data.get("error") if isinstance(data, dict) else None
    err = err if isinstance(err, dict) else {}
    param, message = err.get("param"), str(err.get("message") or body)
    if not _REFUSES.search(message):  # OpenAI's "max_tokens is too large: ..." has param max_tokens too
        return None
    if isinstance(param, str) and param:
        if _ROLE_PARAM.match(param):
            return SYSTEM_IN_USER if "system" in message else None
        return {"max_tokens": COMPLETION_TOKENS, "temperature": NO_TEMPERATURE}.get(param)
    return next((what for pattern, what in _NAMED if pattern.search(message)), None)


def refused_field(body: str) -> str | None:
    """The request field a refusal names when it names one and nothing of structured output (then
    the structured-output mode is not to blame), else None."""
    if _NAMES_STRUCTURED.search(body):
        return None
    found = _PARAMETERS.search(body)
    return found.group(1) if found else None


def _cut_at(plan: _Plan, reply: ChatReply) -> str:
    """Where an answer was cut: the budget sent, else what the server counted (its own limit)."""
    at = plan.budget or reply.completion_tokens
    return f"{at} tokens" if at else "the server's own limit"


@dataclass(frozen=True)
class _Plan:
    """Everything about the requests of one document direction that does not depend on the fact
    judged, computed once: the request's serialised head, its cache-key digest and its tokens."""

    prefix: list[dict[str, str]]     # the prefix's messages, as built (before any adaptation)
    mode: str
    adapted: tuple[str, ...]         # what the request was adapted to (refused_parameter)
    budget: int | None               # the output budget sent, None for no bound
    head: str                        # the JSON body up to the messages after the prefix
    digest: str                      # hash of everything in the request but the last message
    tokens: int                      # prompt tokens of the prefix and schema, reply priming included
    pin: bool = False                # the schema pins the judged id: response_format follows the messages
    drop: frozenset[str] = frozenset()  # schema keywords left out (the server refused them)


def _check(model: str, sampling: Sampling, transport: Transport, retry: RetryPolicy,
           answer_retries: int) -> None:
    if not model:
        raise JudgeSetupError("the LLM judge needs a model name")
    mode = sampling.structured_output
    if mode != "auto" and mode not in STRUCTURED_OUTPUT_MODES:
        raise JudgeSetupError(f"structured output {mode!r} is not one of auto, "
                              + ", ".join(STRUCTURED_OUTPUT_MODES))
    if sampling.reasoning_effort is not None and sampling.reasoning_effort not in REASONING_EFFORTS:
        raise JudgeSetupError(f"reasoning effort {sampling.reasoning_effort!r} is not one of "
                              + ", ".join(REASONING_EFFORTS))
    problem = numbers_problem([
        ("temperature", TEMPERATURE, sampling.temperature), ("timeout", TIMEOUT, transport.timeout),
        ("max_tokens", MAX_TOKENS, sampling.max_tokens), ("answer_retries", RETRIES, answer_retries),
        ("max_question_seconds", QUESTION_SECONDS, transport.max_question_seconds),
        ("retries", RETRIES, retry.retries), ("backoff", WAIT_SECONDS, retry.backoff),
        ("max_backoff", WAIT_SECONDS, retry.max_backoff)])
    if problem:
        raise JudgeSetupError(problem)
    if sampling.pin_id not in PIN_ID_CHOICES:
        raise JudgeSetupError(f"pin_id {sampling.pin_id!r} is not one of " + ", ".join(PIN_ID_CHOICES))
    if isinstance(transport.backend, str) and transport.backend not in BACKENDS:
        raise JudgeSetupError(f"backend {transport.backend!r} is not one of " + ", ".join(BACKENDS))


def _api_key(api_key: str | None, api_key_env: str | None, base_url: str | None,
             default_env: str = "OPENAI_API_KEY") -> str | None:
    """The key given, else the one in the environment; none is an error unless the server is a
    local one (``base_url``) and no variable was named on purpose."""
    env = api_key_env or default_env
    key = api_key if api_key is not None else os.environ.get(env)
    if not key:
        if api_key_env is not None:  # named on purpose: its absence is a mistake
            raise JudgeSetupError(f"no API key: the environment variable {env} is not set")
        if base_url is None:
            raise JudgeSetupError(
                f"no API key: set the environment variable {env} or pass api_key= "
                "(or base_url= for a local server that needs none)")
    return key or None


def _checked_url(base_url: str | None, url_env: str = "OPENAI_BASE_URL") -> str | None:
    """The base URL given, else ``$OPENAI_BASE_URL`` (``url_env``); one that cannot work is refused
    in words that do not repeat it (it may hold a password)."""
    url = base_url or os.environ.get(url_env) or None
    problem = url_problem(url) if url is not None else None
    if problem:
        raise JudgeSetupError(f"{'base_url' if base_url else url_env} {problem}")
    return url


def _client_url(transport: Transport) -> str | None:
    """The base URL of a user's own ``AsyncOpenAI`` client (where the openai-sdk backend sends)."""
    if transport.client is None or transport.backend != "openai-sdk":
        return None
    url = getattr(transport.client, "base_url", None)  # any client: read what it has
    return str(url) if url else None


def _client_key(transport: Transport) -> str | None:
    key = getattr(transport.client, "api_key", None) if transport.client is not None else None
    return key if isinstance(key, str) else None


class LLMJudge(JudgeBase):
    """LLM judge over an OpenAI-compatible chat-completions endpoint (OpenAI, Azure OpenAI, vLLM,
    Ollama, llama.cpp), with structured output where the server takes it and every answer
    validated in code.

    ``sampling`` says what is asked of the model (temperature, max tokens, structured output),
    ``transport`` how requests reach it (backend, client, time limits, provider prompt-cache
    hints), ``retry`` how failed requests are tried again; an invalid answer is asked again
    ``answer_retries`` times, with the reason it was refused. The API key is ``api_key``, else
    the environment variable ``api_key_env`` (default ``OPENAI_API_KEY``; ``ANTHROPIC_API_KEY``,
    ``ANTHROPIC_BASE_URL`` and https://api.anthropic.com with the ``anthropic`` backend); a local
    server given by ``base_url`` needs none.
    """

    name = "llm"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        sampling: Sampling = Sampling(),
        transport: Transport = Transport(),
        retry: RetryPolicy = RetryPolicy(),
        answer_retries: int = 2,
        cache: ResponseCache | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        _check(model, sampling, transport, retry, answer_retries)
        self.model, self.sampling, self.transport, self.retry = model, sampling, transport, retry
        # read here (not left to an SDK) so cache keys and messages name the real server: a
        # user's own client sends wherever its base_url says
        provider = provider_of(transport.backend)  # the default server, key and URL variables
        self.base_url = _client_url(transport) or _checked_url(base_url, provider.url_env)
        self.max_question_seconds = transport.max_question_seconds or 3 * transport.timeout
        self.answer_retries = answer_retries
        self.cache = cache
        self.warmup = transport.warmup
        mode = sampling.structured_output
        self._modes = list(STRUCTURED_OUTPUT_MODES) if mode == "auto" else [mode]
        self._mode_index = 0
        # the default prints as the CLI's messages do: a server's words, control characters escaped
        self.notify = notify or (lambda text: print(printable(text), file=sys.stderr, flush=True))
        self.tokens = TokenCounter(model)
        self.endpoint = endpoint(self.base_url, _api_key(api_key, api_key_env, self.base_url, provider.key_env),
                                 provider.base_url)
        #: The server as answers are keyed on: the whole base URL (a gateway may route by path),
        #: without credentials.
        self.server_url = without_credentials(self.base_url or self.endpoint.base_url)
        #: What no text leaving the judge may hold: the key in use and the URL's credentials.
        self._secrets = secrets_to_hide([*self.endpoint.secrets, *url_credentials(self.base_url or ""),
                                         _client_key(transport)])
        backend = transport.backend
        self.backend: ChatBackend = (BACKENDS[backend](self.endpoint, client=transport.client)
                                     if isinstance(backend, str) else backend)
        #: Whether the server has ever answered 200: until then a failure that would repeat for
        #: every question stops the run instead of marking every fact ERROR.
        self._answered = False
        #: What the server refused and how requests were adapted, in order (refused_parameter).
        self._adapted: tuple[str, ...] = ()
        #: The judged id pinned in the schema (--pin-id; auto: a self-hosted server, by its address)
        self._pin = sampling.pin_id == "always" or (sampling.pin_id == "auto" and provider.auto_pin
                                                    and self_hosted(self.server_url))
        #: Schema keywords the server refused by name, left out for the rest of the run
        self._drop: frozenset[str] = frozenset()

    # ------------------------------------------------------------------ the contract

    @property
    def mode(self) -> str:
        """The structured-output mode in use (``auto`` settles on one at the first answer)."""
        return self._modes[self._mode_index]

    def identity(self) -> dict[str, Any]:
        ident: dict[str, Any] = {"name": self.name, "model": self.model, "server": self.endpoint.host,
                                 "base_url": self.server_url, "temperature": self.sampling.temperature}
        if self.sampling.max_tokens is not None:
            ident["max_tokens"] = self.sampling.max_tokens
        if self.sampling.structured_output != "auto":
            ident["structured_output"] = self.sampling.structured_output
        if self.sampling.reasoning_effort is not None:
            ident["reasoning_effort"] = self.sampling.reasoning_effort
        if self._pin:
            ident["pin_id"] = True
        return ident

    def run_info(self) -> dict[str, Any]:
        return {"token_counter": self.tokens.name, "structured_output": self.mode,
                "adapted": list(self._adapted) or None}

    def batch_llm(self) -> LLMJudge:
        """The LLM a provider batch asks (:class:`~factjudge.judges.llm.batch_lines.Batchable`)."""
        return self

    def open(self, questions: JudgePass) -> LLMPass:
        return LLMPass(self, questions)

    def prepare(self, asked: Asked) -> PreparedCall:
        """Count the prompt and shortlist candidates when it would not fit (raises PromptTooLarge)."""
        mode = self.mode
        return prepare_call(asked, lambda a: self._count(a, mode), self.tokens.text)

    async def judge(self, task: JudgeTask) -> Verdict:
        """One question on its own, under a prefix of its own (a run asks through :meth:`open`)."""
        prefix = direction_prefix(task.direction, task.candidates, task.config, "", task.fields)
        return await self.ask(Asked(task, prefix))

    async def ask(self, asked: Asked) -> Verdict:
        return self._hide_secrets(await self._judge(asked))

    def redact(self, text: str) -> str:
        """``text`` without the key in use or the base URL's credentials (a server may echo them:
        a proxy returning the request's headers, a model quoting them)."""
        return redact(text, self._secrets)

    def _hide_secrets(self, verdict: Verdict) -> Verdict:
        """The one boundary: every verdict, fresh, cached or ERROR, leaves the judge through here."""
        reasoning = self.redact(verdict.reasoning) if verdict.reasoning else verdict.reasoning
        note = self.redact(verdict.note)
        if reasoning == verdict.reasoning and note == verdict.note:
            return verdict
        return verdict.model_copy(update={"reasoning": reasoning, "note": note})

    async def _judge(self, asked: Asked) -> Verdict:
        usage = CallUsage()
        try:
            prepared = self.prepare(asked)
        except PromptTooLarge as exc:
            return error_verdict(asked.task, str(exc))
        asked = prepared.asked
        task = asked.task
        if self.cache is not None:
            cached = self.cache.get(self._cache_key(self._plan(asked, self.mode), task))
            if cached is not None:
                try:
                    verdict = parse_answer(task, cached.get("content"))
                except InvalidAnswer:  # written by another version: ask again
                    pass
                else:
                    usage.cache_hits = 1
                    return verdict.model_copy(update={"usage": usage, "note": prepared.note})
        verdict, content, plan = await self._ask(asked, usage)
        if verdict.status != "ERROR" and self.cache is not None:  # the cache file holds no secret either
            self.cache.put(self._cache_key(plan, task), {"content": self.redact(content) if content else content})
        verdict.note = "; ".join(n for n in (verdict.note, prepared.note) if n)
        return verdict

    async def aclose(self) -> None:
        await self.backend.aclose()
        if self.cache is not None:
            self.cache.flush()

    # ------------------------------------------------------------------ requests

    def _budget(self, adapted: tuple[str, ...]) -> int | None:
        """The output budget sent: the one given (0: none), else the default for the parameter
        it goes in."""
        given = self.sampling.max_tokens
        if given is not None:
            return given or None
        return REASONING_MAX_TOKENS if COMPLETION_TOKENS in adapted else DEFAULT_MAX_TOKENS

    def _sampling_params(self, adapted: tuple[str, ...]) -> dict[str, Any]:
        """The request's sampling fields, as adapted to what the server refused."""
        params: dict[str, Any] = {}
        if NO_TEMPERATURE not in adapted:
            params["temperature"] = self.sampling.temperature
        budget = self._budget(adapted)
        if budget is not None:
            params["max_completion_tokens" if COMPLETION_TOKENS in adapted else "max_tokens"] = budget
        if self.sampling.reasoning_effort is not None:
            params["reasoning_effort"] = self.sampling.reasoning_effort
        return params

    def _messages(self, asked: Asked, mode: str, adapted: tuple[str, ...]) -> list[dict[str, str]]:
        """The prefix as sent: the schema in the system message for modes ``none`` and
        ``json_object`` (OpenAI and DeepSeek read a json_object schema from the prompt only; DeepSeek
        wants the word json there), the system message folded into the first user message for a
        server that refuses the role."""
        task = asked.task
        messages = list(asked.prefix.messages)
        if mode in ("none", "json_object") and messages:
            messages[0] = {**messages[0], "content": messages[0]["content"]
                           + schema_instruction(task.direction, task.candidate_ids, self._drop,
                                                task.config.reasoning)}
        if SYSTEM_IN_USER in adapted and len(messages) > 1 and messages[0]["role"] == "system":
            system, user = messages[0], messages[1]
            messages[:2] = [{**user, "content": system["content"] + "\n\n" + user["content"]}]
        return messages

    def _plan(self, asked: Asked, mode: str) -> _Plan:
        """The plan of ``asked``'s requests as they are sent now, kept with its prefix."""
        adapted = self._adapted
        key = (mode, adapted, self._drop)
        plan: _Plan | None = asked.prefix.plans.get(key)
        if plan is not None:
            return plan
        task = asked.task
        messages = self._messages(asked, mode, adapted)
        sampling = self._sampling_params(adapted)
        fmt = response_format(task.direction, task.candidate_ids, mode, drop=self._drop,
                              reasoning=task.config.reasoning)
        pin = self._pin and fmt is not None
        request: dict[str, Any] = {"model": self.model, **sampling}
        if fmt is not None and not pin:  # pinned, each question has its own: see _body
            request["response_format"] = fmt
        if self.transport.send_prompt_cache_key and asked.prefix.cache_key:
            request["prompt_cache_key"] = asked.prefix.cache_key
        request["messages"] = messages
        # '{...,"messages":[m1,m2]}' without its closing ']}': each call appends its own message
        head = json.dumps(request, ensure_ascii=False, separators=(",", ":"))[:-2]
        key_parts: dict[str, Any] = {"v": PROMPT_FORMAT_VERSION, "judge": self.name, "model": self.model,
                                     "url": self.server_url, "mode": mode, "response_format": fmt,
                                     "sampling": sampling, "prefix": messages}
        if adapted:  # an adapted request is another request: its answer has a key of its own
            key_parts["adapted"] = list(adapted)
        if pin:
            key_parts["pin_id"] = True
        material = canonical_json(key_parts)
        tokens = self.tokens.messages(messages) + (self.tokens.text(canonical_json(fmt)) if fmt else 0)
        plan = _Plan(asked.prefix.messages, mode, adapted, self._budget(adapted), head,
                     hashlib.sha256(material.encode("utf-8")).hexdigest(), tokens, pin, self._drop)
        asked.prefix.plans[key] = plan
        return plan

    def _count(self, asked: Asked, mode: str) -> int:
        # the reply is primed once per request, not once per counted part
        return (self._plan(asked, mode).tokens + self.tokens.messages([last_message(asked.task)])
                - REPLY_PRIMING)

    @staticmethod
    def _cache_key(plan: _Plan, task: JudgeTask) -> str:
        last = canonical_json(last_message(task))
        return hashlib.sha256(f"{plan.digest}\n{last}".encode()).hexdigest()

    @staticmethod
    def _body(plan: _Plan, task: JudgeTask, extra: list[dict[str, str]]) -> RequestBody:
        tail = [last_message(task), *extra]
        sep = "," if plan.head[-1] != "[" else ""
        text = plan.head + sep + json.dumps(tail, ensure_ascii=False, separators=(",", ":"))[1:]
        if plan.pin:  # the question's own schema, after the shared messages
            fmt = response_format(task.direction, task.candidate_ids, plan.mode, task.subject_id, plan.drop,
                                  task.config.reasoning)
            text += ',"response_format":' + json.dumps(fmt, ensure_ascii=False, separators=(",", ":"))
        text += "}"
        return RequestBody(text.encode("utf-8"))

    async def _ask(self, asked: Asked, usage: CallUsage) -> tuple[Verdict, str | None, _Plan]:
        """Ask until a valid answer (returned with its raw content and the plan it was asked
        with), re-asking on invalid ones."""
        deadline = time.monotonic() + self.max_question_seconds
        extra: list[dict[str, str]] = []
        problem = ""
        cut = False  # an answer was cut by the budget: asked again for brevity once, not twice
        task = asked.task
        plan = self._plan(asked, self.mode)
        for ask in range(self.answer_retries + 1):
            if ask:
                usage.retries += 1
            try:
                reply, plan = await self._send(asked, extra, usage, deadline)
            except BackendError as exc:
                return error_verdict(task, f"judge call failed after {usage.llm_calls} attempt(s): "
                                     f"{exc.message}", usage), None, plan
            usage.prompt_tokens += reply.prompt_tokens
            usage.cached_prompt_tokens += reply.cached_prompt_tokens
            usage.completion_tokens += reply.completion_tokens
            try:
                if reply.problem:
                    raise InvalidAnswer(reply.problem)
                if reply.finish_reason == "length":  # even parseable: its reasoning was cut short
                    raise InvalidAnswer(f"the answer was cut at {_cut_at(plan, reply)} (its budget: "
                                        "--max-tokens)")
                verdict = parse_answer(task, reply.content)
            except InvalidAnswer as exc:
                problem = str(exc)
                if reply.finish_reason == "length":
                    if cut:
                        break
                    cut = True
                    extra = [{"role": "user", "content": _BREVITY.format(at=_cut_at(plan, reply))}]
                else:
                    extra = reask_messages(reply.content, problem)
                if time.monotonic() >= deadline:
                    break
                continue
            verdict.usage = usage
            return verdict, reply.content, plan
        return error_verdict(task, f"no valid answer after {ask + 1} tries: {problem}", usage), None, plan

    async def _send(self, asked: Asked, extra: list[dict[str, str]], usage: CallUsage,
                    deadline: float) -> tuple[ChatReply, _Plan]:
        """One answer from the server, retrying what can be retried; raises the last
        :class:`BackendError` when out of tries or time, :class:`JudgeSetupError` when the server
        cannot work for any question."""
        attempt = 0
        refused = broken = 0  # tries of this question refused a connection; refused or cut
        bodies: list[str] = []
        while True:
            plan = self._plan(asked, self.mode)
            usage.llm_calls += 1
            timeout = max(0.001, min(self.transport.timeout, deadline - time.monotonic()))
            try:
                reply = await self.backend.send(self._body(plan, asked.task, extra), timeout)
            except BackendError as exc:
                if exc.status in FATAL_STATUSES:
                    raise self._setup_error(exc) from None
                if exc.status in (400, 422) and (plan.mode, plan.adapted, plan.drop) != (
                        self.mode, self._adapted, self._drop):
                    # sent before another question adapted the request (which may have been answered
                    # since): refused as that one was, so it goes again as it is now
                    usage.retries += 1
                    continue
                if not self._answered and (self._adapt(plan, exc) or self._drop_keywords(plan, exc)
                                           or self._switch_mode(plan.mode, exc)):
                    usage.retries += 1
                    continue
                delay = self.retry.wait(attempt, exc)
                last = delay is None or time.monotonic() + delay >= deadline
                if not self._answered:
                    self._stop_if_hopeless(exc, last, bodies)
                elif exc.kind in ("connect", "disconnect"):
                    refused += exc.kind == "connect"
                    broken += 1
                    # every try refused, or cut as the server went down and refused after: it is gone
                    if last and refused and broken > attempt:
                        raise self._stop(f"the server at {self.endpoint.host} stopped accepting "
                                         f"connections ({refused} in a row refused: {exc.message}); "
                                         "check that it is running") from None
                if last:
                    raise
                assert delay is not None
                await asyncio.sleep(delay)
                attempt += 1
                usage.retries += 1
                continue
            self._answered = True
            return reply, plan

    # ------------------------------------------------------------------ failure policy

    def _setup_error(self, exc: BackendError) -> JudgeSetupError:
        return self._stop(f"the server at {self.endpoint.host} refused the judge ({exc.message}); "
                          "check the model name, the base URL and the API key")

    def _stop(self, message: str) -> JudgeSetupError:
        return JudgeSetupError(self.redact(message))

    def _switch_mode(self, used: str, exc: BackendError) -> bool:
        """``auto``: fall back to the next structured-output mode when the server refuses this one
        before answering anything. True when the request should be sent again."""
        status = exc.status or 0
        if len(self._modes) == 1 or exc.kind != "status" or not (
                status in (400, 422) or (status >= 500 and _NAMES_RESPONSE_FORMAT.search(exc.body))):
            return False
        if used != self.mode:  # another question already switched
            return True
        field = refused_field(exc.body) if status in (400, 422) else None
        if field is not None:
            option = _OPTION_FOR.get(field)
            hint = f"; change {option} or " if option else "; "
            raise self._stop(f"the server at {self.endpoint.host} refused the request's {field} "
                             f"({exc.message}){hint}check that the model is the one meant")
        if self._mode_index + 1 >= len(self._modes):
            return False
        self._mode_index += 1
        self.notify(self.redact(f"factjudge: the server at {self.endpoint.host} refused structured "
                                f"output {used!r} ({exc.message}); using {self.mode!r} from now on"))
        return True

    def _adapt(self, plan: _Plan, exc: BackendError) -> bool:
        """Before the server has answered once, a 400 refusing a parameter or the system role
        changes the request for the rest of the run (each adaptation once, said once). True when
        the request should be sent again."""
        if exc.kind != "status" or exc.status not in (400, 422):
            return False
        what = refused_parameter(exc.body)
        if what is None or what in plan.adapted or not self._sends(plan, what):
            return False  # sent adapted and still refused: nothing more to change
        if what not in self._adapted:  # else another question already adapted
            self._adapted = (*self._adapted, what)
            budget = self._budget(self._adapted)
            tail = (f" ({budget} tokens: reasoning counts against it)"
                    if what == COMPLETION_TOKENS and budget else "")
            self.notify(self.redact(f"factjudge: the server at {self.endpoint.host} refused a request "
                                    f"({exc.message}); {_ADAPTED_TO[what]}{tail} from now on"))
        return True

    @staticmethod
    def _sends(plan: _Plan, what: str) -> bool:
        """Whether ``plan``'s request (not yet adapted to ``what``) has what ``what`` changes:
        a temperature is always sent, ``max_tokens`` unless there is no bound."""
        if what == SYSTEM_IN_USER:
            return bool(plan.prefix) and plan.prefix[0].get("role") == "system"
        return what == NO_TEMPERATURE or plan.budget is not None

    def _drop_keywords(self, plan: _Plan, exc: BackendError) -> bool:
        """A refusal naming schema keywords the server does not know (Gemini's OpenAI-compatible
        endpoint: ``additionalProperties``) leaves them out for the rest of the run, before any
        fallback to a weaker structured-output mode. True when the request should be sent again."""
        if exc.kind != "status" or exc.status != 400 or plan.mode == "none":
            return False
        refused = refused_keywords(exc.body)
        if not refused or refused <= plan.drop:
            return False
        if plan.drop != self._drop:  # another question already dropped them
            return True
        self._drop |= refused  # a part of every plan's key: the next plan leaves them out
        self.notify(self.redact(f"factjudge: the server at {self.endpoint.host} refused the schema "
                                f"keyword(s) {', '.join(sorted(refused))}; leaving them out from now on"))
        return True

    def _stop_if_hopeless(self, exc: BackendError, last: bool, bodies: list[str]) -> None:
        """Before the server has answered once, an error that every question would get stops
        the run (exit 2) instead of being retried for every fact."""
        host = self.endpoint.host
        if exc.kind == "connect":  # refused, or no such host: nothing listens there
            raise self._stop(f"cannot reach the server at {host} ({exc.message}); check the "
                             "base URL and that the server is running")
        if exc.kind == "status" and not exc.retryable:
            raise self._setup_error(exc)
        if exc.kind == "status":
            bodies.append(exc.body)
            if last and len(set(bodies)) == 1:
                raise self._stop(f"the server at {host} failed every try of the first question "
                                 f"({len(bodies)} attempt(s)) with the same error ({exc.message})")
        elif exc.kind == "disconnect":
            # a connection dropped once may be chance; twice on one question before any answer, it is
            # the server (one closing every reply mid-body took 25 calls and 29 s for 5 facts)
            bodies.append(_BROKEN)
            if bodies.count(_BROKEN) >= 2 or last:
                raise self._stop(f"the server at {host} broke the connection before answering "
                                 f"anything, {bodies.count(_BROKEN)} time(s) ({exc.message}); "
                                 "check the base URL (http:// or https://) and the server")
        elif exc.kind == "timeout" and last:
            raise self._stop(f"the server at {host} accepts connections but did not answer the "
                             f"first question ({exc.message}); check the server, or raise the timeout")
