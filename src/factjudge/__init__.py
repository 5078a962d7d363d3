"""factjudge: score fact-extraction systems with a two-pass judge and deterministic reconciliation."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"  # the one place (pyproject.toml reads it)

if TYPE_CHECKING:
    from .cache import ResponseCache
    from .errors import FactJudgeError, InputError, JudgeSetupError
    from .evaluate import EvalRun, ReportSettings, evaluate_dataset
    from .judges import HybridJudge, Judge, JudgeBase, JuryJudge, LLMJudge, RulesJudge
    from .loading import load_config, load_facts
    from .models import JudgeConfig, JudgeResult, Verdict
    from .pipeline import run_judge, run_judge_async
    from .prompts import JudgeTask

#: Each public name's module. They are imported on first use: a command line pays only for the
#: modules its command needs (an LLM run never imports the rules judge, a judge run no reports).
_HOMES = {
    "EvalRun": "evaluate", "ReportSettings": "evaluate", "evaluate_dataset": "evaluate",
    "FactJudgeError": "errors", "InputError": "errors", "JudgeSetupError": "errors",
    "HybridJudge": "judges", "Judge": "judges", "JudgeBase": "judges", "JuryJudge": "judges",
    "LLMJudge": "judges", "RulesJudge": "judges", "JudgeConfig": "models", "JudgeResult": "models",
    "Verdict": "models", "JudgeTask": "prompts", "ResponseCache": "cache", "load_config": "loading",
    "load_facts": "loading", "run_judge": "pipeline", "run_judge_async": "pipeline",
}

__all__ = [
    "EvalRun", "FactJudgeError", "HybridJudge", "InputError", "Judge", "JudgeBase", "JudgeConfig",
    "JudgeResult", "JudgeSetupError", "JudgeTask", "JuryJudge", "LLMJudge", "ReportSettings",
    "ResponseCache", "RulesJudge", "Verdict", "evaluate_dataset", "load_config", "load_facts",
    "run_judge", "run_judge_async",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'factjudge' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
