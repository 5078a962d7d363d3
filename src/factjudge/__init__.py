"""factjudge: score fact-extraction systems with a two-pass judge and deterministic reconciliation."""
from .cache import ResponseCache
from .judges import HybridJudge, Judge, OpenAIJudge
from .loading import InputError, load_config, load_facts
from .models import JudgeConfig, JudgeResult, Verdict
from .pipeline import run_judge, run_judge_async
from .prompts import JudgeTask
from .rules import RulesJudge

__all__ = [
    "HybridJudge",
    "InputError",
    "Judge",
    "JudgeConfig",
    "JudgeResult",
    "JudgeTask",
    "OpenAIJudge",
    "ResponseCache",
    "RulesJudge",
    "Verdict",
    "load_config",
    "load_facts",
    "run_judge",
    "run_judge_async",
]
__version__ = "0.1.0"
