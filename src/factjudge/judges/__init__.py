"""Judges: the contract (:mod:`.base`), the rules, LLM and hybrid judges, a jury of them, and the LLM
backends.

Adding a provider is one file under :mod:`.backends` and one line in its ``BACKENDS`` registry.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import JudgeSetupError
from .base import BatchRequest, Estimate, Judge, JudgeBase, error_verdict
from .hybrid import HybridJudge
from .jury import JuryJudge
from .llm.judge import LLMJudge

if TYPE_CHECKING:
    from .rules.judge import RulesJudge

__all__ = ["BatchRequest", "Estimate", "HybridJudge", "Judge", "JudgeBase", "JudgeSetupError", "JuryJudge",
           "LLMJudge", "RulesJudge", "error_verdict"]


def __getattr__(name: str) -> Any:
    if name == "RulesJudge":  # imported when asked for: an LLM-only run never loads its normaliser
        from .rules.judge import RulesJudge
        return RulesJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
