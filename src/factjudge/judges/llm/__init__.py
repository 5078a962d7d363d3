"""The LLM judge: prompts to a chat backend, token counting, the response cache, and its config
objects (:class:`Sampling`, :class:`Transport`, :class:`RetryPolicy`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...util.lazy import lazy_names

if TYPE_CHECKING:
    from .judge import LLMJudge as LLMJudge
    from .retry import RetryPolicy as RetryPolicy
    from .settings import Sampling as Sampling
    from .settings import Transport as Transport

#: Each public name's module, imported on first use: the command line reads this package's light
#: parts (the backends' names, the prompts' choices, the bounds) for its options, and a run that
#: asks no LLM must not load the judge and aiohttp with them.
_HOMES = {"LLMJudge": "judge", "RetryPolicy": "retry", "Sampling": "settings", "Transport": "settings"}

__all__ = ["LLMJudge", "RetryPolicy", "Sampling", "Transport"]


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
