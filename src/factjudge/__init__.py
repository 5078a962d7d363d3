"""factjudge: score fact-extraction systems with a two-pass judge and deterministic reconciliation."""
__version__ = "0.1.0"  # the one place (pyproject.toml reads it)

from .cache import ResponseCache
from .errors import FactJudgeError, InputError, JudgeSetupError
from .evaluate import EvalRun, ReportSettings, evaluate_dataset
from .judges import HybridJudge, Judge, JudgeBase, JuryJudge, LLMJudge, RulesJudge
from .loading import load_config, load_facts
from .models import JudgeConfig, JudgeResult, Verdict
from .pipeline import run_judge, run_judge_async
from .prompts import JudgeTask

__all__ = [
    "EvalRun",
    "ReportSettings",
    "evaluate_dataset",
    "FactJudgeError",
    "HybridJudge",
    "InputError",
    "Judge",
    "JudgeBase",
    "JudgeConfig",
    "JudgeResult",
    "JudgeSetupError",
    "JudgeTask",
    "JuryJudge",
    "LLMJudge",
    "ResponseCache",
    "RulesJudge",
    "Verdict",
    "load_config",
    "load_facts",
    "run_judge",
    "run_judge_async",
]
