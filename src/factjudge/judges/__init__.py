"""Judges: the contract (:mod:`.base`), the rules, LLM and hybrid judges, a jury of them, and the LLM
backends.

Adding a provider is one file under :mod:`.backends` and one line in its ``BACKENDS`` registry.
"""
from ..errors import JudgeSetupError
from ..rules import RulesJudge
from .base import BatchRequest, Estimate, Judge, JudgeBase, error_verdict
from .hybrid import HybridJudge
from .jury import JuryJudge
from .llm import LLMJudge

__all__ = ["BatchRequest", "Estimate", "HybridJudge", "Judge", "JudgeBase", "JudgeSetupError", "JuryJudge",
           "LLMJudge", "RulesJudge", "error_verdict"]
