"""The small config objects of :class:`~factjudge.judges.llm.judge.LLMJudge`: what is asked of the
model (:class:`Sampling`) and how requests reach it (:class:`Transport`); how failed requests are
tried again is :class:`~factjudge.judges.llm.retry.RetryPolicy`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .backends import ChatBackend


@dataclass(frozen=True)
class Sampling:
    """What is asked of the model. Every field changes answers: all are part of the judge's
    identity and of its response-cache keys.

    ``structured_output``: ``auto`` (json_schema, falling back to json_object, then none when the
    server refuses one), ``json_schema``, ``json_object`` or ``none`` (the schema in the prompt).

    ``max_tokens`` bounds each answer: None is the default budget
    (:data:`~factjudge.judges.llm.judge.DEFAULT_MAX_TOKENS`, or
    :data:`~factjudge.judges.llm.judge.REASONING_MAX_TOKENS` once the server asked for
    ``max_completion_tokens``), 0 sends no bound (the server's own limit applies).
    ``reasoning_effort`` (``none``, ``minimal``, ``low``, ``medium``, ``high``) is sent as OpenAI's
    ``reasoning_effort`` when given; a server that does not know it refuses the run.
    ``pin_id``: the judged fact's id in the response schema is a one-value enum (``always``), a
    free string (``never``), or pinned where the base URL is a self-hosted server (``auto``:
    loopback, private address, a name without a dot; see ``backends.self_hosted``)."""

    temperature: float = 0.0
    max_tokens: int | None = None
    structured_output: str = "auto"
    reasoning_effort: str | None = None
    pin_id: str = "auto"


@dataclass(frozen=True)
class Transport:
    """How requests reach the server.

    ``backend`` is ``"http"`` (the lean default) or ``"openai-sdk"`` (the ``openai`` extra; give
    ``client`` to use your own ``AsyncOpenAI``), another name of
    :data:`~factjudge.judges.llm.backends.BACKENDS`, or any
    :class:`~factjudge.judges.llm.backends.ChatBackend`. ``timeout`` bounds one request; one
    question (all its tries and waits) gets at most ``max_question_seconds`` (default 3 x
    ``timeout``). ``send_prompt_cache_key`` sends OpenAI's ``prompt_cache_key`` (some servers
    reject it); ``warmup`` sends each direction's first question alone so the rest hit a warm
    provider prompt cache."""

    backend: str | ChatBackend = "http"
    client: Any = None
    timeout: float = 120.0
    max_question_seconds: float | None = None
    send_prompt_cache_key: bool = True
    warmup: bool = True
    #: A self-hosted server: wait while it loads its model (llama.cpp's /health; see
    #: :mod:`.local`) and try a timed out request again with a longer timeout.
    local_server: bool = True
    #: A self-hosted server: ask at most as many questions at once as it has slots (llama.cpp's
    #: /props); off when the user sets the concurrency.
    fit_slots: bool = True

    def __repr__(self) -> str:  # a client may hold credentials: named by its type only
        client = f", client=<{type(self.client).__name__}>" if self.client is not None else ""
        backend = repr(self.backend) if isinstance(self.backend, str) else f"<{type(self.backend).__name__}>"
        return (f"Transport(backend={backend}{client}, timeout={self.timeout!r}, "
                f"max_question_seconds={self.max_question_seconds!r}, "
                f"send_prompt_cache_key={self.send_prompt_cache_key!r}, warmup={self.warmup!r}, "
                f"local_server={self.local_server!r}, fit_slots={self.fit_slots!r})")
