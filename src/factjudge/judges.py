"""The judge interface and the OpenAI-compatible LLM judge.

A judge answers one question per call (see :class:`~factjudge.prompts.JudgeTask`) and returns a
validated :class:`~factjudge.models.Verdict`. It never raises for a failed call: a fact it cannot
decide comes back with status ``ERROR`` and the reason in ``note``.
"""
from __future__ import annotations

import asyncio
import email.utils
import os
import random
import time
from typing import Any, Protocol, runtime_checkable

from .models import CallUsage, Verdict
from .prompts import InvalidAnswer, JudgeTask, parse_answer


@runtime_checkable
class Judge(Protocol):
    """Anything with a ``name`` and an async ``judge(task) -> Verdict`` is a judge."""

    name: str

    async def judge(self, task: JudgeTask) -> Verdict: ...


def error_verdict(task: JudgeTask, reason: str, usage: CallUsage | None = None) -> Verdict:
    return Verdict(fact_id=task.subject_id, status="ERROR", note=reason, usage=usage or CallUsage())


class JudgeSetupError(ValueError):
    """The judge cannot be used as configured (e.g. no API key); a usage error, not a fact error."""


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
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


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
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout: float = 120.0,
        transport_retries: int = 4,
        answer_retries: int = 2,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        client: Any = None,
    ) -> None:
        import openai  # imported here so the rules judge path never pays for it

        self.model = model
        self.base_url = base_url
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.transport_retries = transport_retries
        self.answer_retries = answer_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        key = api_key if api_key is not None else os.environ.get(api_key_env)
        if not key:
            if base_url is None:
                raise JudgeSetupError(
                    f"no API key: set the environment variable {api_key_env} "
                    "(or pass --base-url for a local server that needs none)")
            key = "none"  # local servers ignore it, the SDK insists on one
        self._secret = key
        # The SDK's own retries are off: ours count them, honour Retry-After and re-ask on bad answers.
        self._client = client or openai.AsyncOpenAI(
            api_key=key, base_url=base_url, timeout=timeout, max_retries=0)
        self._openai = openai

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret and self._secret != "none" else text

    def _request(self, task: JudgeTask, messages: list[dict[str, str]]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "response_format": task.response_format(),
        }
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        return kwargs

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
                return await self._client.chat.completions.create(**kwargs)
            except self._openai.OpenAIError as exc:
                if not self._retryable(exc) or attempt >= self.transport_retries:
                    raise
                await asyncio.sleep(self._delay(attempt, exc))
                attempt += 1
                usage.retries += 1

    async def judge(self, task: JudgeTask) -> Verdict:
        usage = CallUsage()
        messages = task.messages()
        problem = ""
        for ask in range(self.answer_retries + 1):
            kwargs = self._request(task, messages)
            if task.cache_key:
                kwargs["prompt_cache_key"] = task.cache_key
            if ask:
                usage.retries += 1
            try:
                response = await self._complete(kwargs, usage)
            except self._openai.OpenAIError as exc:
                status = getattr(exc, "status_code", None)
                what = f"HTTP {status}: " if status else ""
                reason = self._redact(f"{type(exc).__name__}: {what}{exc}")
                return error_verdict(task, f"judge call failed after {usage.llm_calls} attempt(s): "
                                     f"{reason}", usage)
            self._account(response, usage)
            content = None
            if response.choices:
                message = response.choices[0].message
                content = message.content
                if not content and getattr(message, "refusal", None):
                    content = None
                    problem = f"the model refused: {message.refusal}"
            try:
                verdict = parse_answer(task, content)
            except InvalidAnswer as exc:
                problem = problem or str(exc)
                messages = [
                    *task.messages(),
                    {"role": "assistant", "content": content or ""},
                    {"role": "user", "content": f"Your answer was invalid: {problem}. Answer again, "
                                                "following the JSON schema exactly."},
                ]
                last_problem, problem = problem, ""
                continue
            verdict.usage = usage
            return verdict
        return error_verdict(
            task, f"no valid answer after {self.answer_retries + 1} tries: {last_problem}", usage)

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
        await self._client.close()
