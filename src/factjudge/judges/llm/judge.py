"""The LLM judge: one question per fact to any OpenAI-compatible chat-completions server.

Provider-agnostic: the request goes out through a backend (:mod:`.backends`). The judge's parts,
each in a module of its own: what it is given, checked (:mod:`.setup`: ranges, key discovery, URL
checks); the requests (:mod:`.request`: plans, bodies, cache keys, budgets); adapting to what a
server refuses (:mod:`.adapt`: refused parameters, schema keywords, structured-output fallback);
the policy that stops a run which cannot work (:mod:`.failfast`). This class holds them together:
the contract, the response cache, re-asks of invalid answers and transport retries.
"""
from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any

from ...errors import InvalidAnswer, JudgeSetupError, PromptTooLarge
from ...models import CallUsage, Verdict
from ...util.redact import redact, secrets_to_hide
from ...util.terminal import printable
from ...util.urls import url_credentials, without_credentials
from ..base import PROMPT_FORMAT_VERSION, JudgeBase, JudgePass, JudgeTask, error_verdict
from .adapt import Adaptation, refused_field, refused_parameter
from .backends import BACKENDS, REFUSED, BackendError, ChatBackend, ChatReply, endpoint, provider_of, self_hosted
from .cache import ResponseCache
from .direction import LLMPass
from .failfast import FATAL_STATUSES, GoneCheck, refused_judge, stop_if_hopeless
from .local import PROBE_TIMEOUT, server_slots, wait_until_ready
from .prompts import Asked, PreparedCall, direction_prefix, parse_answer, prepare_call, reask_messages
from .request import (
    COMPLETION_TOKENS,
    DEFAULT_MAX_TOKENS,
    NO_TEMPERATURE,
    REASONING_MAX_TOKENS,
    SYSTEM_IN_USER,
    Plan,
    Requester,
    body,
    build_plan,
    cache_key,
    cut_at,
)
from .retry import RetryPolicy
from .settings import Sampling, Transport
from .setup import (
    MAX_TOKENS,
    QUESTION_SECONDS,
    REASONING_EFFORTS,
    RETRIES,
    TEMPERATURE,
    TIMEOUT,
    WAIT_SECONDS,
    check_settings,
    checked_url,
    client_key,
    client_url,
)
from .setup import (
    api_key as find_api_key,
)
from .tokens import REPLY_PRIMING, TokenCounter

__all__ = ["COMPLETION_TOKENS", "DEFAULT_MAX_TOKENS", "FATAL_STATUSES", "MAX_TOKENS", "NO_TEMPERATURE",
           "QUESTION_SECONDS", "REASONING_EFFORTS", "REASONING_MAX_TOKENS", "RETRIES", "SYSTEM_IN_USER",
           "TEMPERATURE", "TIMEOUT", "WAIT_SECONDS", "LLMJudge", "refused_field", "refused_parameter"]

#: How many times a self-hosted server's timed out request goes again with twice the time.
LONGER_TIMEOUTS = 2
#: What asks again for an answer the budget cut (once).
_BREVITY = ("Your answer was cut at {at}, the most it may take. Answer again, much shorter: "
            "keep the reasoning to a few sentences.")


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
        check_settings(model, sampling, transport, retry, answer_retries)
        self.model, self.sampling, self.transport, self.retry = model, sampling, transport, retry
        # read here (not left to an SDK) so cache keys and messages name the real server: a
        # user's own client sends wherever its base_url says
        provider = provider_of(transport.backend)  # the default server, key and URL variables
        self.base_url = client_url(transport) or checked_url(base_url, provider.url_env)
        self.max_question_seconds = transport.max_question_seconds or 3 * transport.timeout
        self.answer_retries = answer_retries
        self.cache = cache
        self.warmup = transport.warmup
        # the default prints as the CLI's messages do: a server's words, control characters escaped
        self.notify = notify or (lambda text: print(printable(text), file=sys.stderr, flush=True))
        self.tokens = TokenCounter(model)
        self.endpoint = endpoint(self.base_url, find_api_key(api_key, api_key_env, self.base_url, provider.key_env),
                                 provider.base_url)
        #: The server as answers are keyed on: the whole base URL (a gateway may route by path),
        #: without credentials.
        self.server_url = without_credentials(self.base_url or self.endpoint.base_url)
        #: What no text leaving the judge may hold: the key in use and the URL's credentials.
        self._secrets = secrets_to_hide([*self.endpoint.secrets, *url_credentials(self.base_url or ""),
                                         client_key(transport)])
        backend = transport.backend
        self.backend: ChatBackend = (BACKENDS[backend](self.endpoint, client=transport.client)
                                     if isinstance(backend, str) else backend)
        #: Whether the server has ever answered 200: until then a failure that would repeat for
        #: every question stops the run instead of marking every fact ERROR.
        self._answered = False
        #: A server of one's own (by its address): waited for, asked per its slots, given more
        #: time on a timeout (local.py); a hosted provider is not.
        self._local = transport.local_server and self_hosted(self.server_url)
        self._ready: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._probed = False
        #: The server's slots once read (llama.cpp's /props), and the questions in flight kept to it.
        self.slots: int | None = None
        self._in_flight: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self._longer_said = False
        #: The judged id pinned in the schema (--pin-id; auto: a self-hosted server, by its address)
        self._pin = sampling.pin_id == "always" or (sampling.pin_id == "auto" and provider.auto_pin
                                                    and self_hosted(self.server_url))
        #: How requests are sent now: what the server refused changes it, before its first answer
        self.adaptation = Adaptation(sampling, self.endpoint.host, lambda text: self.notify(self.redact(text)),
                                     self._stop)

    # ------------------------------------------------------------------ the contract

    @property
    def mode(self) -> str:
        """The structured-output mode in use (``auto`` settles on one at the first answer)."""
        return self.adaptation.mode

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
                "adapted": list(self.adaptation.adapted) or None}

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
            cached = self.cache.get(cache_key(self.plan(asked), asked))
            if cached is not None:
                try:
                    verdict = parse_answer(task, cached.get("content"))
                except InvalidAnswer:  # written by another version: ask again
                    pass
                else:
                    usage.cache_hits = 1
                    return verdict.model_copy(update={"usage": usage, "note": prepared.note})
        await self._before_first_question()
        async with self._slot():
            verdict, content, plan = await self._ask(asked, usage)
        if verdict.status != "ERROR" and self.cache is not None:  # the cache file holds no secret either
            self.cache.put(cache_key(plan, asked), {"content": self.redact(content) if content else content})
        if prepared.note:  # (pydantic's __setattr__ only when there is a note to add)
            verdict.note = "; ".join(n for n in (verdict.note, prepared.note) if n)
        return verdict

    async def aclose(self) -> None:
        await self.backend.aclose()
        if self.cache is not None:
            self.cache.flush()

    # ------------------------------------------------------------------ a server of one's own

    async def _before_first_question(self) -> None:
        """A self-hosted server, once per judge: wait while it loads its model, read its slots."""
        if not self._local or self._probed:
            return
        loop = asyncio.get_running_loop()
        if self._ready is None or self._ready[0] is not loop:
            self._ready = (loop, asyncio.Lock())
        async with self._ready[1]:
            if self._probed:
                return
            base, headers, host = self.endpoint.base_url, self.endpoint.headers, self.endpoint.host

            def say(text: str) -> None:
                self.notify(self.redact(text))

            llama = await wait_until_ready(base, headers, say, host, probe=min(PROBE_TIMEOUT, self.transport.timeout),
                                           redact=self.redact)
            if llama and self.transport.fit_slots:
                self.slots = await server_slots(base, headers)
                if self.slots is not None:
                    say(f"factjudge: the server at {host} has {self.slots} slot(s) (its /props): asking at "
                        f"most {self.slots} question(s) at once; --concurrency sets another number")
            self._probed = True

    def _slot(self) -> asyncio.Semaphore | contextlib.nullcontext[None]:
        """Held while a question is asked: at most the server's slots at once (a question queued at
        the server would spend its timeout waiting)."""
        if self.slots is None:
            return contextlib.nullcontext()
        loop = asyncio.get_running_loop()
        if self._in_flight is None or self._in_flight[0] is not loop:
            self._in_flight = (loop, asyncio.Semaphore(self.slots))
        return self._in_flight[1]

    # ------------------------------------------------------------------ requests

    def plan(self, asked: Asked, mode: str | None = None) -> Plan:
        """The plan of ``asked``'s requests as they are sent now (in ``mode``, else the mode in
        use), kept with its prefix."""
        _, adapted, drop = self.adaptation.now()
        key = (mode or self.mode, adapted, drop)
        plan: Plan | None = asked.prefix.plans.get(key)
        if plan is None:
            # PROMPT_FORMAT_VERSION read from this module at each plan: a test may change it
            plan = build_plan(self._requester, asked, *key, version=PROMPT_FORMAT_VERSION)
            asked.prefix.plans[key] = plan
        return plan

    @property
    def _requester(self) -> Requester:
        # made when asked: a jury renames its repeats (llm#2) after they are built
        return Requester(self.name, self.model, self.server_url, self.sampling, self._pin,
                         self.transport.send_prompt_cache_key, self.tokens)

    def _count(self, asked: Asked, mode: str) -> int:
        # the reply is primed once per request, not once per counted part
        return (self.plan(asked, mode).tokens + self.tokens.messages([asked.last])
                - REPLY_PRIMING)

    # ------------------------------------------------------------------ re-asks and retries

    async def _ask(self, asked: Asked, usage: CallUsage) -> tuple[Verdict, str | None, Plan]:
        """Ask until a valid answer (returned with its raw content and the plan it was asked
        with), re-asking on invalid ones."""
        deadline = time.monotonic() + self.max_question_seconds
        extra: list[dict[str, str]] = []
        problem = ""
        cut = False  # an answer was cut by the budget: asked again for brevity once, not twice
        task = asked.task
        plan = self.plan(asked)
        unanswered: list[str] = []  # before any answer: the problems of this question's replies
        for ask in range(self.answer_retries + 1):
            if ask:
                usage.retries += 1
                usage.reasks += 1
            try:
                reply, plan = await self._send(asked, extra, usage, deadline)
            except BackendError as exc:
                return error_verdict(task, f"judge call failed after {usage.llm_calls} attempt(s): "
                                     f"{exc.message}", usage), None, plan
            usage.prompt_tokens += reply.prompt_tokens
            usage.cached_prompt_tokens += reply.cached_prompt_tokens
            usage.completion_tokens += reply.completion_tokens
            if not self._answered:
                unanswered.append(reply.problem)
                if ask == self.answer_retries and len(set(unanswered)) == 1:
                    raise self._stop(f"the server at {self.endpoint.host} answered every try of the first "
                                     f"question ({ask + 1}) with HTTP 200 but no chat completion "
                                     f"({reply.problem}); check the base URL and that it is the model's API")
            try:
                if reply.problem:
                    raise InvalidAnswer(reply.problem)
                if reply.finish_reason == "length":  # even parseable: its reasoning was cut short
                    raise InvalidAnswer(f"the answer was cut at {cut_at(plan, reply)} (its budget: "
                                        "--max-tokens)")
                verdict = parse_answer(task, reply.content)
            except InvalidAnswer as exc:
                problem = str(exc)
                if reply.finish_reason == "length":
                    if cut:
                        break
                    cut = True
                    extra = [{"role": "user", "content": _BREVITY.format(at=cut_at(plan, reply))}]
                else:
                    extra = reask_messages(reply.content, problem)
                if time.monotonic() >= deadline:
                    break
                continue
            verdict.usage = usage
            return verdict, reply.content, plan
        return error_verdict(task, f"no valid answer after {ask + 1} tries: {problem}", usage), None, plan

    async def _send(self, asked: Asked, extra: list[dict[str, str]], usage: CallUsage,
                    deadline: float) -> tuple[ChatReply, Plan]:
        """One answer from the server, retrying what can be retried; raises the last
        :class:`BackendError` when out of tries or time, :class:`JudgeSetupError` when the server
        cannot work for any question."""
        attempt = longer = 0
        limit = self.transport.timeout  # a self-hosted server's grows on a timeout
        gone = GoneCheck()
        bodies: list[str] = []  # the first question's failed tries (failfast)
        while True:
            plan = self.plan(asked)
            usage.llm_calls += 1
            timeout = max(0.001, min(limit, deadline - time.monotonic()))
            try:
                reply = await self.backend.send(body(plan, asked, extra), timeout)
            except BackendError as exc:
                host = self.endpoint.host  # parsed from the URL: only for a failure's message
                if exc.status in FATAL_STATUSES:
                    raise refused_judge(host, exc, self._stop) from None
                if exc.status in (400, 422) and self.adaptation.outdated(plan):
                    # sent before another question adapted the request (which may have been answered
                    # since): refused as that one was, so it goes again as it is now
                    usage.retries += 1
                    continue
                if not self._answered and self.adaptation.retry_refused(plan, exc):
                    usage.retries += 1
                    continue
                bounded = self.transport.max_question_seconds is not None
                if exc.kind == "timeout" and self._local and longer < LONGER_TIMEOUTS and (
                        not bounded or time.monotonic() < deadline):
                    # a server of one's own is slow, not gone: busy slots, a cold start, a long
                    # answer on CPU. Try again at once with twice the time, within the question's
                    # time unless the user bounded it (--max-question-seconds)
                    longer += 1
                    limit = min(limit * 2, TIMEOUT.high)
                    if not bounded:
                        deadline = max(deadline, time.monotonic() + limit)
                    self._say_longer(limit)
                    usage.retries += 1
                    continue
                delay = self.retry.wait(attempt, exc)
                last = delay is None or time.monotonic() + delay >= deadline
                if not self._answered:
                    stop_if_hopeless(exc, last, bodies, host, self._stop)
                elif gone.gone(exc, attempt, last):
                    raise self._stop(f"the server at {host} stopped accepting "
                                     f"connections ({gone.refused} in a row refused: {exc.message}); "
                                     "check that it is running") from None
                if last:
                    raise
                assert delay is not None
                await asyncio.sleep(delay)
                attempt += 1
                usage.retries += 1
                continue
            # a 200 with no chat completion (an HTML page, a body of another API) is no answer: a
            # server giving it to every question is stopped as one refusing them (_ask)
            self._answered = self._answered or _a_chat_reply(reply)
            return reply, plan

    def _say_longer(self, limit: float) -> None:
        if not self._longer_said:
            self._longer_said = True
            self.notify(self.redact(f"factjudge: the server at {self.endpoint.host} did not answer within "
                                    f"{self.transport.timeout:g} s; asking again with up to {limit:g} s (a "
                                    "self-hosted server may be busy or loading; said once)"))

    def _stop(self, message: str) -> JudgeSetupError:
        return JudgeSetupError(self.redact(message))


def _a_chat_reply(reply: ChatReply) -> bool:
    """Whether a 200 answered as a model's API does: anything but a body the backend could not
    read as a completion (a model's refusal is an answer)."""
    return not reply.problem or reply.problem.startswith(REFUSED)
