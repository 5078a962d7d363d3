"""What the LLM judge is given, checked before anything is sent: the ranges of its numbers, the
API key (given, or found in the environment) and the base URL (given, in the environment, or a
user's own client's)."""
from __future__ import annotations

import os

from ...errors import JudgeSetupError
from ...util.bounds import Bound, numbers_problem
from ...util.urls import url_problem
from .backends import BACKENDS
from .prompts import PIN_ID_CHOICES, STRUCTURED_OUTPUT_MODES
from .retry import RetryPolicy
from .settings import Sampling, Transport

#: The ranges of the judge's numbers; the command line's options take the same. Outside them a
#: run failed late (``timeout=inf``: a traceback at the first request) or wrote non-JSON
#: (``temperature=inf``: ``Infinity`` in request bodies and run.json).
TIMEOUT = Bound(0, 86_400, above=True)         # seconds per request: a day is beyond any server
QUESTION_SECONDS = Bound(0, 3 * 86_400, above=True)
TEMPERATURE = Bound(0, 2)                      # OpenAI's range
MAX_TOKENS = Bound(0, 2**31 - 1, whole=True)   # what a server's int32 field holds; 0: no bound
RETRIES = Bound(0, 100, whole=True)
WAIT_SECONDS = Bound(0, 86_400)
#: ``reasoning_effort`` values taken (openai-python's ReasoningEffort; not every model takes each).
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")


def check_settings(model: str, sampling: Sampling, transport: Transport, retry: RetryPolicy,
                   answer_retries: int) -> None:
    """Refuse settings that cannot work, before any request (:class:`JudgeSetupError`)."""
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


def api_key(key: str | None, key_env: str | None, base_url: str | None,
            default_env: str = "OPENAI_API_KEY") -> str | None:
    """The key given, else the one in the environment; none is an error unless the server is a
    local one (``base_url``) and no variable was named on purpose."""
    env = key_env or default_env
    found = key if key is not None else os.environ.get(env)
    if not found:
        if key_env is not None:  # named on purpose: its absence is a mistake
            raise JudgeSetupError(f"no API key: the environment variable {env} is not set")
        if base_url is None:
            raise JudgeSetupError(
                f"no API key: set the environment variable {env} or pass api_key= "
                "(or base_url= for a local server that needs none)")
    return found or None


def checked_url(base_url: str | None, url_env: str = "OPENAI_BASE_URL") -> str | None:
    """The base URL given, else ``$OPENAI_BASE_URL`` (``url_env``); one that cannot work is refused
    in words that do not repeat it (it may hold a password)."""
    url = base_url or os.environ.get(url_env) or None
    problem = url_problem(url) if url is not None else None
    if problem:
        raise JudgeSetupError(f"{'base_url' if base_url else url_env} {problem}")
    return url


def client_url(transport: Transport) -> str | None:
    """The base URL of a user's own ``AsyncOpenAI`` client (where the openai-sdk backend sends)."""
    if transport.client is None or transport.backend != "openai-sdk":
        return None
    url = getattr(transport.client, "base_url", None)  # any client: read what it has
    return str(url) if url else None


def client_key(transport: Transport) -> str | None:
    key = getattr(transport.client, "api_key", None) if transport.client is not None else None
    return key if isinstance(key, str) else None
