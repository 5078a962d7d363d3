"""The one retry policy of factjudge: how many times a request that failed for a reason that may
pass (HTTP 408/409/429/5xx, a timeout, a dropped connection) is sent again, and how long to wait
before each try. The LLM judge's live calls and the batch client's Files and Batches calls both
use it; what differs between them (a question's deadline, requests that must not be sent twice)
stays with each caller."""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from .backends import BackendError


@dataclass(frozen=True)
class RetryPolicy:
    """``retries`` tries after the first; the wait before try ``n`` (0-based) is ``backoff * 2**n``
    seconds, at most ``max_backoff``. A server's Retry-After is honoured in place of the backoff,
    capped at ``max_backoff`` too (one that is not a finite number >= 0 is ignored). With
    ``jitter`` each backoff is drawn from [half of it, all of it], so many clients refused at once
    do not come back in step."""

    retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 60.0
    jitter: bool = True

    def wait(self, attempt: int, error: BackendError) -> float | None:
        """Seconds to wait before sending again after ``error`` on try ``attempt`` (0-based), or
        None when the request should not be sent again (out of tries, or an error that would
        repeat: a 4xx other than 408/409/429)."""
        if not error.retryable or attempt >= self.retries:
            return None
        return self.delay(attempt, error.retry_after)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None and math.isfinite(retry_after) and retry_after >= 0:
            return min(retry_after, self.max_backoff)
        base = min(self.backoff * (2.0 ** attempt), self.max_backoff)
        return base * (0.5 + random.random() / 2) if self.jitter else base
