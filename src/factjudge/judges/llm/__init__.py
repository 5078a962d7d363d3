"""The LLM judge: prompts to a chat backend, token counting, the response cache, and its config
objects (:class:`Sampling`, :class:`Transport`, :class:`RetryPolicy`)."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
