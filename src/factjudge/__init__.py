"""factjudge: score fact-extraction systems with a two-pass judge and deterministic reconciliation."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__

if TYPE_CHECKING:
    from .errors import FactJudgeError as FactJudgeError
    from .errors import FactJudgeWarning as FactJudgeWarning
    from .errors import InputError as InputError
    from .errors import JudgeSetupError as JudgeSetupError
    from .evaluation.pipeline import run_judge as run_judge
    from .evaluation.pipeline import run_judge_async as run_judge_async
    from .evaluation.runner import EvalRun as EvalRun
    from .evaluation.runner import ReportSettings as ReportSettings
    from .evaluation.runner import evaluate_dataset as evaluate_dataset
    from .io.config import load_config as load_config
    from .io.facts import load_facts as load_facts
    from .judges import HybridJudge as HybridJudge
    from .judges import Judge as Judge
    from .judges import JudgeBase as JudgeBase
    from .judges import JuryJudge as JuryJudge
    from .judges import LLMJudge as LLMJudge
    from .judges import RulesJudge as RulesJudge
    from .judges.base import JudgeTask as JudgeTask
    from .judges.llm.cache import ResponseCache as ResponseCache
    from .models import JudgeConfig as JudgeConfig
    from .models import JudgeResult as JudgeResult
    from .models import Verdict as Verdict

#: Each public name's module. They are imported on first use: a command line pays only for the
#: modules its command needs (an LLM run never imports the rules judge, a judge run no reports).
_HOMES = {
    "EvalRun": "evaluation.runner", "ReportSettings": "evaluation.runner", "evaluate_dataset": "evaluation.runner",
    "FactJudgeError": "errors", "FactJudgeWarning": "errors", "InputError": "errors", "JudgeSetupError": "errors",
    "HybridJudge": "judges", "Judge": "judges", "JudgeBase": "judges", "JuryJudge": "judges",
    "LLMJudge": "judges", "RulesJudge": "judges", "JudgeConfig": "models", "JudgeResult": "models",
    "Verdict": "models", "JudgeTask": "judges.base", "ResponseCache": "judges.llm.cache", "load_config": "io.config",
    "load_facts": "io.facts", "run_judge": "evaluation.pipeline", "run_judge_async": "evaluation.pipeline",
}

__all__ = list(_HOMES)


# util.lazy.lazy_names does this for the subpackages; importing ``factjudge`` itself loads no
# module of it but _version (tests/unit/test_public_api.py), so the package keeps its own two.
def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'factjudge' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
