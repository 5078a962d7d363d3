"""Judges: the contract (:mod:`.base`), the rules, LLM and hybrid judges, a jury of them, the LLM
backends, and :mod:`.factory`, which builds any of them from a :class:`~.factory.JudgeSpec`.

Adding a provider is one file under :mod:`.llm.backends` and one line in its ``BACKENDS`` registry;
adding a judge kind is one file here and one entry in :data:`~.factory.JUDGE_KINDS`, which declares
the settings it takes and its own options (:mod:`.options`). The command line offers the names of
both registries, and the kinds' own options as flags.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import JudgeSetupError
from .base import Estimate, Judge, JudgeBase, JudgePass, JudgeTask, error_verdict
from .factory import JUDGE_KINDS, JudgeSpec, build_judge
from .hybrid import HybridJudge
from .jury import JuryJudge
from .llm.batch_lines import BatchRequest
from .llm.judge import LLMJudge
from .llm.retry import RetryPolicy
from .llm.settings import Sampling, Transport

if TYPE_CHECKING:
    from .rules.judge import RulesJudge

__all__ = ["JUDGE_KINDS", "BatchRequest", "Estimate", "HybridJudge", "Judge", "JudgeBase", "JudgePass",
           "JudgeSetupError", "JudgeSpec", "JudgeTask", "JuryJudge", "LLMJudge", "RetryPolicy", "RulesJudge",
           "Sampling", "Transport", "build_judge", "error_verdict"]


def __getattr__(name: str) -> Any:
    if name == "RulesJudge":  # imported when asked for: an LLM-only run never loads its normaliser
        from .rules.judge import RulesJudge
        return RulesJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
