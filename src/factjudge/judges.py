"""The judge interface and the OpenAI-compatible LLM judge.

A judge answers one question per call (see :class:`~factjudge.prompts.JudgeTask`) and returns a
validated :class:`~factjudge.models.Verdict`. It never raises for a failed question: a fact it
cannot decide comes back with status ``ERROR`` and the reason in ``note``. Only a judge that cannot
work at all (a key or model the server refuses, a server never reached) raises
:class:`JudgeSetupError`, which stops the run.
"""
from __future__ import annotations

import asyncio
import email.utils
import os
import random
import time
from typing import Any, Protocol, runtime_checkable

from .cache import ResponseCache, cache_key, server_host
from .models import CallUsage, Verdict
from .prompts import InvalidAnswer, JudgeTask, PreparedCall, PromptTooLarge, parse_answer, prepare_call
from .tokens import REPLY_PRIMING, TokenCounter


@runtime_checkable
class Judge(Protocol):
    """Anything with a ``name`` and an async ``judge(task) -> Verdict`` is a judge."""

    name: str

    async def judge(self, task: JudgeTask) -> Verdict: ...


def error_verdict(task: JudgeTask, reason: str, usage: CallUsage | None = None) -> Verdict:
    return Verdict(fact_id=task.subject_id, status="ERROR", note=reason, usage=usage or CallUsage())


class JudgeSetupError(ValueError):
    """The judge cannot be used as configured (no API key, a key or model the server refuses);
    a usage error that stops the run, not a fact error."""


#: Answers that say the judge itself is misconfigured (bad key, no access, no such model or
#: endpoint), not that one question failed: the run stops instead of marking every fact ERROR.
FATAL_STATUSES = (401, 403, 404)


def _retry_after_seconds(headers: Any) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``retry-after``), if any."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:  # an HTTP date
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _extra_cached_tokens(raw: dict[str, Any]) -> int:
    """Cached prompt tokens as OpenAI, vLLM or llama.cpp report them."""
    usage = raw.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    if details.get("cached_tokens"):
        return int(details["cached_tokens"])
    timings = raw.get("timings") or {}  # llama.cpp server
    return int(timings.get("cache_n") or 0)


class OpenAIJudge:
    """LLM judge over any OpenAI-compatible chat-completions endpoint (OpenAI, Azure, vLLM,
    Ollama, llama.cpp server), with strict structured output and validated answers."""

    name = "llm"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout: float = 120.0,
        transport_retries: int = 4,
        answer_retries: int = 2,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        cache: ResponseCache | None = None,
        send_prompt_cache_key: bool = True,
        warmup: bool = True,
        client: Any = None,
    ) -> None:
        import openai  # imported here so the rules judge path never pays for it

        self.model = model
        # the SDK would read OPENAI_BASE_URL itself; read it here so cache keys name the real host
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.transport_retries = transport_retries
        self.answer_retries = answer_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.cache = cache
        self.send_prompt_cache_key = send_prompt_cache_key
        #: Send the first call of each direction alone so the rest can hit the provider's cache.
        self.warmup = warmup
        self.tokens = TokenCounter(model)
        # Prefix token counts, per shared prefix list (kept alive here so its id is not reused).
        self._prefix_tokens: dict[int, tuple[list[dict[str, str]], int]] = {}
        env = api_key_env or "OPENAI_API_KEY"
        key = api_key if api_key is not None else os.environ.get(env)
        if not key:
            if api_key_env is not None:  # named on purpose: its absence is a mistake
                raise JudgeSetupError(f"no API key: the environment variable {env} is not set")
            if self.base_url is None:
                raise JudgeSetupError(
                    f"no API key: set the environment variable {env} "
                    "(or pass --base-url for a local server that needs none)")
            key = "none"  # local servers ignore it, the SDK insists on one
        self._secret = key
        self._timeout = timeout
        self._given_client = client
        #: Whether the server has ever answered (with anything): until it has, a connection
        #: failure means it cannot be reached at all and the run stops.
        self._reached = False
        self._client: Any = None
        self._client_loop: Any = None
        self._openai = openai

    def _client_for_loop(self) -> Any:
        """An SDK client bound to the running event loop.

        Its connection pool belongs to one loop; ``run_judge`` starts a new loop per call, so a
        judge reused across calls (a notebook) needs a fresh client for each loop.
        """
        if self._given_client is not None:
            return self._given_client
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            # The SDK's own retries are off: ours count them, honour Retry-After, re-ask bad answers.
            self._client = self._openai.AsyncOpenAI(api_key=self._secret, base_url=self.base_url,
                                                    timeout=self._timeout, max_retries=0)
            self._client_loop = loop
        return self._client

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret and self._secret != "none" else text

    def _request(self, task: JudgeTask, messages: list[dict[str, str]]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages,
                                  "response_format": task.response_format(), **self._sampling()}
        if self.send_prompt_cache_key and task.cache_key:
            # in the body rather than as a keyword: SDKs before 1.98 do not know the keyword
            kwargs["extra_body"] = {"prompt_cache_key": task.cache_key}
        return kwargs

    def _sampling(self) -> dict[str, Any]:
        out: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        return out

    def _count_messages(self, messages: list[dict[str, str]]) -> int:
        """Token count of messages, counting a shared prefix only once per document direction."""
        *prefix, last = messages
        if not prefix:
            return self.tokens.messages(messages)
        # Tasks of one direction share the very same prefix message objects.
        hit = self._prefix_tokens.get(id(prefix[0]))
        if hit is None or hit[0][0] is not prefix[0]:
            if len(self._prefix_tokens) > 64:
                self._prefix_tokens.clear()
            hit = (prefix, self.tokens.messages(prefix))
            self._prefix_tokens[id(prefix[0])] = hit
        return hit[1] + self.tokens.messages([last]) - REPLY_PRIMING  # primed once, not twice

    def prepare(self, task: JudgeTask) -> PreparedCall:
        """Count the prompt and shortlist candidates when it would not fit (raises PromptTooLarge)."""
        return prepare_call(task, self.tokens.text, self._count_messages)

    def cache_key_for(self, task: JudgeTask) -> str:
        return cache_key(judge=self.name, model=self.model, base_url=self.base_url,
                         messages=task.messages(), response_format=task.response_format(),
                         sampling=self._sampling())

    def _delay(self, attempt: int, exc: Exception) -> float:
        response = getattr(exc, "response", None)
        asked = _retry_after_seconds(getattr(response, "headers", None))
        if asked is not None:
            return min(asked, self.max_backoff)
        base = min(self.backoff * (2 ** attempt), self.max_backoff)
        return base * (0.5 + random.random() / 2)

    def _retryable(self, exc: Exception) -> bool:
        o = self._openai
        if isinstance(exc, (o.APITimeoutError, o.APIConnectionError, o.RateLimitError)):
            return True
        status = getattr(exc, "status_code", None)
        return isinstance(exc, o.APIStatusError) and (status in (408, 409) or (status or 0) >= 500)

    async def _complete(self, kwargs: dict[str, Any], usage: CallUsage) -> Any:
        """One completion, retrying transport failures; raises the last error when out of tries."""
        attempt = 0
        while True:
            usage.llm_calls += 1
            try:
                response = await self._client_for_loop().chat.completions.create(**kwargs)
                self._reached = True
                return response
            except self._openai.OpenAIError as exc:
                if isinstance(exc, self._openai.APIStatusError):
                    self._reached = True
                if not self._retryable(exc) or attempt >= self.transport_retries:
                    raise
                await asyncio.sleep(self._delay(attempt, exc))
                attempt += 1
                usage.retries += 1

    async def judge(self, task: JudgeTask) -> Verdict:
        usage = CallUsage()
        try:
            prepared = self.prepare(task)
        except PromptTooLarge as exc:
            return error_verdict(task, str(exc))
        task = prepared.task
        key = self.cache_key_for(task) if self.cache is not None else ""
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                try:
                    verdict = parse_answer(task, cached["content"])
                except InvalidAnswer:  # a cache from another version: ask again
                    pass
                else:
                    usage.cache_hits = 1
                    return verdict.model_copy(update={"usage": usage, "note": prepared.note})
        verdict, content = await self._ask(task, usage)
        if verdict.status != "ERROR" and self.cache is not None:
            self.cache.put(key, {"content": content})
        verdict.note = "; ".join(n for n in (verdict.note, prepared.note) if n)
        return verdict

    async def _ask(self, task: JudgeTask, usage: CallUsage) -> tuple[Verdict, str | None]:
        """Ask until a valid answer (returned with its raw content), re-asking on invalid ones."""
        messages = task.messages()
        last_problem = ""
        for ask in range(self.answer_retries + 1):
            if ask:
                usage.retries += 1
            try:
                response = await self._complete(self._request(task, messages), usage)
            except self._openai.OpenAIError as exc:
                status = getattr(exc, "status_code", None)
                what = f"HTTP {status}: " if status else ""
                reason = self._redact(f"{type(exc).__name__}: {what}{exc}")
                if status in FATAL_STATUSES:  # every other call would fail the same way
                    raise JudgeSetupError(
                        f"the server at {server_host(self.base_url)} refused the judge "
                        f"({reason}); check --model, --base-url and the API key") from None
                if not self._reached and isinstance(exc, self._openai.APIConnectionError) \
                        and not isinstance(exc, self._openai.APITimeoutError):
                    # never answered at all: a wrong URL or a server that is down, not one bad call
                    raise JudgeSetupError(
                        f"cannot reach the server at {server_host(self.base_url)} after "
                        f"{usage.llm_calls} attempt(s) ({reason}); check --base-url") from None
                return error_verdict(task, f"judge call failed after {usage.llm_calls} attempt(s): "
                                     f"{reason}", usage), None
            self._account(response, usage)
            content, problem = None, ""
            if response.choices:
                message = response.choices[0].message
                content = message.content
                if not content and getattr(message, "refusal", None):
                    problem = f"the model refused: {message.refusal}"
            try:
                verdict = parse_answer(task, content)
            except InvalidAnswer as exc:
                last_problem = problem or str(exc)
                messages = [
                    *task.messages(),
                    {"role": "assistant", "content": content or ""},
                    {"role": "user", "content": f"Your answer was invalid: {last_problem}. Answer "
                                                "again, following the JSON schema exactly."},
                ]
                continue
            verdict.usage = usage
            return verdict, content
        return error_verdict(
            task, f"no valid answer after {self.answer_retries + 1} tries: {last_problem}", usage), None

    @staticmethod
    def _account(response: Any, usage: CallUsage) -> None:
        u = getattr(response, "usage", None)
        if u is not None:
            usage.prompt_tokens += u.prompt_tokens or 0
            usage.completion_tokens += u.completion_tokens or 0
        try:
            raw = response.model_dump()
        except Exception:  # a non-pydantic test double
            raw = {}
        usage.cached_prompt_tokens += _extra_cached_tokens(raw)

    async def aclose(self) -> None:
        if self._client is not None and self._client_loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = None


class HybridJudge:
    """Rules first, LLM only where needed: an exact rules match (every compared field equal after
    normalisation, exactly one such candidate) is final; everything else goes to the LLM."""

    name = "hybrid"

    def __init__(self, rules: Any, llm: OpenAIJudge) -> None:
        self.rules, self.llm = rules, llm
        self.tokens, self.warmup = llm.tokens, llm.warmup

    async def judge(self, task: JudgeTask) -> Verdict:
        verdict, exact = self.rules.decide(task)
        if exact:
            return verdict.model_copy(update={
                "reasoning": f"[decided by the rules judge: exact match] {verdict.reasoning}",
                "usage": CallUsage(llm_calls_saved=1)})
        verdict = await self.llm.judge(task)
        if verdict.reasoning is not None:
            verdict.reasoning = f"[decided by the LLM judge] {verdict.reasoning}"
        return verdict

    async def aclose(self) -> None:
        await self.llm.aclose()
