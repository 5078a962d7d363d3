"""The public names of ``factjudge`` (docs/reference/python-api.md documents them) stay as they are, whatever moves
inside the package, and each resolves to a real object."""
import importlib
import subprocess
import sys

import factjudge

PUBLIC = [
    "EvalRun", "FactJudgeError", "FactJudgeWarning", "HybridJudge", "InputError", "Judge", "JudgeBase", "JudgeConfig",
    "JudgeResult", "JudgeSetupError", "JudgeTask", "JuryJudge", "LLMJudge", "ReportSettings",
    "ResponseCache", "RulesJudge", "Verdict", "evaluate_dataset", "load_config", "load_facts",
    "run_judge", "run_judge_async",
]


def test_the_public_names_are_exactly_these():
    assert sorted(factjudge.__all__) == sorted(PUBLIC)
    assert set(PUBLIC) <= set(dir(factjudge))


def test_every_public_name_resolves_and_is_the_object_its_home_module_defines():
    for name in PUBLIC:
        value = getattr(factjudge, name)
        home = importlib.import_module(value.__module__)
        assert getattr(home, name) is value, name
        assert value.__module__.startswith("factjudge."), name


def test_importing_the_package_loads_none_of_its_modules():
    code = "import sys, factjudge; print(sorted(m for m in sys.modules if m.startswith('factjudge.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['factjudge._version']"
