"""The policy that stops a run which cannot work: before the server has answered once, an error
every question would get ends the run (exit 2) instead of being retried for every fact; after,
a server that stopped accepting connections does."""
from __future__ import annotations

from collections.abc import Callable

from ...errors import JudgeSetupError
from .backends import BackendError

#: Statuses that say the judge itself is misconfigured (bad key, no access, no such model or
#: endpoint) at any point of a run: every other call would fail the same way.
FATAL_STATUSES = (401, 403, 404)
#: Stands for a broken connection among the error bodies of the first question's tries.
_BROKEN = "\x00broken connection"

Stop = Callable[[str], JudgeSetupError]


def refused_judge(host: str, exc: BackendError, stop: Stop) -> JudgeSetupError:
    return stop(f"the server at {host} refused the judge ({exc.message}); "
                "check the model name, the base URL and the API key")


def stop_if_hopeless(exc: BackendError, last: bool, bodies: list[str], host: str, stop: Stop) -> None:
    """Before the server has answered once, an error that every question would get stops
    the run (exit 2) instead of being retried for every fact. ``bodies`` gathers the question's
    failed tries; ``last``: no try follows."""
    if exc.kind == "connect":  # refused, or no such host: nothing listens there
        raise stop(f"cannot reach the server at {host} ({exc.message}); check the "
                   "base URL and that the server is running")
    if exc.kind == "status" and not exc.retryable:
        raise refused_judge(host, exc, stop)
    if exc.kind == "status":
        bodies.append(exc.body)
        if last and len(set(bodies)) == 1:
            raise stop(f"the server at {host} failed every try of the first question "
                       f"({len(bodies)} attempt(s)) with the same error ({exc.message})")
    elif exc.kind == "disconnect":
        # a connection dropped once may be chance; twice on one question before any answer, it is
        # the server (one closing every reply mid-body took 25 calls and 29 s for 5 facts)
        bodies.append(_BROKEN)
        if bodies.count(_BROKEN) >= 2 or last:
            raise stop(f"the server at {host} broke the connection before answering "
                       f"anything, {bodies.count(_BROKEN)} time(s) ({exc.message}); "
                       "check the base URL (http:// or https://) and the server")
    elif exc.kind == "timeout" and last:
        raise stop(f"the server at {host} accepts connections but did not answer the "
                   f"first question ({exc.message}); check the server, or raise the timeout")


class GoneCheck:
    """After the server has answered: every try of one question refused, or cut as the server went
    down and refused after, means it is gone."""

    def __init__(self) -> None:
        self.refused = self.broken = 0

    def gone(self, exc: BackendError, attempt: int, last: bool) -> bool:
        if exc.kind not in ("connect", "disconnect"):
            return False
        self.refused += exc.kind == "connect"
        self.broken += 1
        return last and bool(self.refused) and self.broken > attempt
