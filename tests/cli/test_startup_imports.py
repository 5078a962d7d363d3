"""A run pays at start-up only for the modules it uses: a rules run never loads the LLM judge's
stack (aiohttp was about half of factjudge's imports in a rules ``eval``, issue #39)."""
import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: What only an LLM, a hybrid or a jury run needs.
LLM_STACK = ("aiohttp", "factjudge.judges.llm.judge", "factjudge.judges.llm.local",
             "factjudge.judges.hybrid", "factjudge.judges.jury")

#: The CLI's ``main`` as ``python -m factjudge`` runs it; its ``os._exit`` (no teardown) is wrapped
#: to print what the run had imported, just before the process leaves.
_MAIN_THEN_MODULES = """
import json, os, sys
from factjudge.cli import main
leave = os._exit
def print_modules_and_leave(code):
    print(json.dumps([m for m in sys.modules if m.startswith(("aiohttp", "factjudge."))]), flush=True)
    leave(code)
os._exit = print_modules_and_leave
sys.argv = ["factjudge", *sys.argv[1:]]
main()
"""


def _modules_of_run(*argv: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", _MAIN_THEN_MODULES, *argv], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_rules_eval_of_the_example_never_imports_the_llm_stack(tmp_path):
    loaded = _modules_of_run("eval", str(EXAMPLES / "dataset.jsonl"), "--config", str(EXAMPLES / "config.yaml"),
                             "-o", str(tmp_path / "out"))
    assert "factjudge.judges.rules.judge" in loaded and "factjudge.evaluation.runner" in loaded  # it did judge
    assert (tmp_path / "out" / "report.md").is_file()
    assert [m for m in LLM_STACK if m in loaded] == []


def test_the_library_contract_and_runner_load_no_llm_module():
    """Importing the judge contract (which loads ``factjudge.judges`` first) or the dataset runner
    loads no judge kind; ``from factjudge import LLMJudge`` still does."""
    code = ("import sys; import factjudge.evaluation.runner, factjudge.judges.base, factjudge.judges.factory;"
            f"print([m for m in {LLM_STACK!r} if m in sys.modules]);"
            "from factjudge import LLMJudge; from factjudge.judges import HybridJudge, JuryJudge, RetryPolicy;"
            "print(LLMJudge.__module__, HybridJudge.__module__, 'aiohttp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "factjudge.judges.llm.judge factjudge.judges.hybrid True"]


def test_importing_the_eval_and_judge_commands_defers_what_their_runs_may_not_need():
    """Importing a command loads neither the response cache's sqlite3 (only a cached LLM run or
    batch-import uses it), jinja2 (the pages, written at a run's end), aiohttp nor numpy, and
    builds none of factjudge's pydantic models: each is built when a run first uses it (together
    ~50 ms of every process's start, issue #39)."""
    code = ("import sys, pydantic, factjudge.cli.eval_cmd, factjudge.cli.judge_cmd\n"
            "seen = set(); todo = [pydantic.BaseModel]\n"
            "while todo:\n"
            "    for sub in todo.pop().__subclasses__():\n"
            "        if sub not in seen: seen.add(sub); todo.append(sub)\n"
            "ours = [m for m in seen if m.__module__.startswith('factjudge.')]\n"
            "print(len(ours) > 30, sorted(m.__name__ for m in ours if m.__pydantic_complete__))\n"
            "print([m for m in ('sqlite3', 'jinja2', 'aiohttp', 'numpy', 'factjudge.judges.llm.cache')"
            " if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["True []", "[]"]


def test_an_llm_eval_loads_before_its_first_request_none_of_what_only_its_end_or_other_runs_use(tmp_path):
    """An LLM ``eval`` up to its first question: the eval command imported, its one judge built (its
    token counter: no tiktoken encoding cached) and its workers decided (one process) load neither
    the pages' modules (imported while the run waits for answers, or at its end), the
    judge-calibration correction, the batch files' module, multiprocessing, tiktoken nor (with
    --no-cache) sqlite3 (~25 ms of the start, issue 39)."""
    code = ("import sys, factjudge.cli.eval_cmd\n"
            "from factjudge.evaluation.workers import auto_workers\n"
            "from factjudge.judges.factory import JudgeSpec, build_judge\n"
            "judge = build_judge(JudgeSpec(models=('gpt-4o',), base_url='http://127.0.0.1:9/v1', cache=False))\n"
            "print(auto_workers(judge, 1000), judge.tokens.name)\n"
            "print([m for m in ('factjudge.reports.html', 'factjudge.reports.markdown', 'factjudge.core.correction',"
            " 'factjudge.judges.llm.batch_lines', 'multiprocessing', 'tiktoken', 'sqlite3') if m in sys.modules])")
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.splitlines() == ["1 estimate:utf8_bytes/3", "[]"]


def test_a_cache_database_error_is_still_one_line_though_app_does_not_import_sqlite3(capsys):
    """run_command maps a sqlite3 error raised by the work to its one line without importing
    sqlite3 itself; any other exception still propagates."""
    import sqlite3

    import pytest
    import typer

    from factjudge.cli.app import run_command

    def locked() -> None:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(typer.Exit) as exited:
        run_command(locked, interrupted="")
    assert exited.value.exit_code == 2
    assert capsys.readouterr().err == ("factjudge: error: response cache: database is locked "
                                       "(try --cache-dir DIR or --no-cache)\n")

    def broken() -> None:
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        run_command(broken, interrupted="")


def test_version_imports_no_command():
    """``factjudge --version`` prints and exits: it loads no command (all of them cost it 60 ms)."""
    loaded = _modules_of_run("--version")
    assert [m for m in loaded if m.endswith("_cmd") or m.startswith(("factjudge.models", "aiohttp"))] == []


def test_a_judge_run_never_imports_the_run_folder_or_the_aggregate(tmp_path):
    """``judge`` reads facts and writes one file: eval's run folder and its aggregate (~10 ms of
    imports) are not loaded."""
    out = tmp_path / "result.json"
    loaded = _modules_of_run("judge", str(EXAMPLES / "report_gold.json"), str(EXAMPLES / "report_predicted.jsonl"),
                             "--config", str(EXAMPLES / "config.yaml"), "-o", str(out), "-q")
    assert out.is_file() and "factjudge.judges.rules.judge" in loaded
    assert [m for m in ("factjudge.io.runfolder", "factjudge.core.aggregate") if m in loaded] == []
