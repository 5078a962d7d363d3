"""Judges: the contract (:mod:`.base`), the rules, LLM and hybrid judges, a jury of them, the LLM
backends, and :mod:`.factory`, which builds any of them from a :class:`~.factory.JudgeSpec`.

Adding a provider is one file under :mod:`.llm.backends` and one line in its ``BACKENDS`` registry;
adding a judge kind is one file here and one entry in :data:`~.factory.JUDGE_KINDS`, which declares
the settings it takes and its own options (:mod:`.options`). The command line offers the names of
both registries, and the kinds' own options as flags.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import JudgeSetupError
from ..util.lazy import lazy_names
from .base import Estimate, Judge, JudgeBase, JudgePass, JudgeTask, error_verdict

if TYPE_CHECKING:
    from .factory import JUDGE_KINDS as JUDGE_KINDS
    from .factory import JudgeSpec as JudgeSpec
    from .factory import build_judge as build_judge
    from .hybrid import HybridJudge as HybridJudge
    from .jury import JuryJudge as JuryJudge
    from .llm.batch_lines import BatchRequest as BatchRequest
    from .llm.judge import LLMJudge as LLMJudge
    from .llm.retry import RetryPolicy as RetryPolicy
    from .llm.settings import Sampling as Sampling
    from .llm.settings import Transport as Transport
    from .rules.judge import RulesJudge as RulesJudge

#: Each lazily loaded public name's module, imported when the name is first asked for: importing
#: the contract (``judges.base``, which loads this package first) must not load the LLM stack
#: (aiohttp: about half of a rules run's imports) nor the rules judge's normaliser.
_HOMES = {
    "JUDGE_KINDS": "factory", "JudgeSpec": "factory", "build_judge": "factory",
    "HybridJudge": "hybrid", "JuryJudge": "jury", "BatchRequest": "llm.batch_lines",
    "LLMJudge": "llm.judge", "RetryPolicy": "llm.retry", "Sampling": "llm.settings",
    "Transport": "llm.settings", "RulesJudge": "rules.judge",
}

__all__ = ["JUDGE_KINDS", "BatchRequest", "Estimate", "HybridJudge", "Judge", "JudgeBase", "JudgePass",
           "JudgeSetupError", "JudgeSpec", "JudgeTask", "JuryJudge", "LLMJudge", "RetryPolicy", "RulesJudge",
           "Sampling", "Transport", "build_judge", "error_verdict"]


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
