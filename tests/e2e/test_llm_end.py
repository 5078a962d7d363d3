"""The end of an LLM run made ready while it waits for answers (issue 39): numpy imported and the
pages' templates compiled while the loop is idle, report.html rendered in a forked child beside
the other files, the files the same either way.

The LLM is the scripted OpenAI-compatible server on 127.0.0.1 talking to the project's real HTTP
client."""
import asyncio
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from evalkit import CONFIG, DOCS, TRUTH, timeless_outputs, write_jsonl
from scripted_server import ScriptedServer

from factjudge import LLMJudge
from factjudge.evaluation.runner import evaluate_async, input_salt
from factjudge.io.config import parse_config
from factjudge.io.datasets import JsonlDataset
from factjudge.judges.rules.judge import RulesJudge
from factjudge.reports import html
from factjudge.reports.html import compile_templates
from factjudge.util import forked
from factjudge.util.aio import when_idle


class LastAnswer:
    def __init__(self):
        self.at = 0.0

    def on_start(self, to_judge, reused, questions): ...

    def on_document(self, doc_id): ...

    def on_questions(self, count): ...

    def on_verdict(self, direction, verdict):
        self.at = time.monotonic()


def _compiled(monkeypatch):
    """The templates ``_ready_to_finish`` compiles, each with when it was compiled."""
    compiled = []
    compiling = html.compile_templates

    def recording():
        for name in compiling():
            compiled.append((name, time.monotonic()))
            yield name

    monkeypatch.setattr(html, "compile_templates", recording)  # _ready_to_finish imports it then
    return compiled


def _run(judge, data, out, progress=None, workers=1):
    config = parse_config(CONFIG)
    dataset = JsonlDataset(data)
    dataset.scan(config, input_salt(config, judge))

    async def go():
        async with judge:
            return await evaluate_async(dataset, config, judge, out, concurrency=4, progress=progress,
                                        workers=workers)

    return asyncio.run(go())


def test_an_llm_run_makes_its_end_ready_while_it_waits_for_answers(tmp_path, monkeypatch):
    compiled = _compiled(monkeypatch)
    last = LastAnswer()
    with ScriptedServer(TRUTH, delay=0.2) as server:  # 4 rounds of questions: time to wait
        _run(LLMJudge("m", base_url=server.base_url), write_jsonl(tmp_path / "data.jsonl", DOCS),
             tmp_path / "out", last)
    assert "numpy" in sys.modules
    assert "report.html.j2" in {name for name, _ in compiled}  # the step ran through, not stopped
    assert sorted(name for name, _ in compiled) == sorted(compile_templates())
    assert max(at for _, at in compiled) < last.at  # before the last answer came


def test_a_rules_run_in_one_process_takes_no_step_while_it_judges(tmp_path, monkeypatch):
    # its loop is never idle: no timer task beside it, nothing compiled ahead of the end
    compiled = _compiled(monkeypatch)
    _run(RulesJudge(), write_jsonl(tmp_path / "data.jsonl", DOCS), tmp_path / "out")
    assert compiled == []
    assert (tmp_path / "out" / "report.html").exists()


def _steps_beside(rounds: int, busy: float, wait: float, idle: float) -> None:
    """``rounds`` of work (``busy`` seconds) each followed by a ``wait``, then ``idle``: steps
    are taken in the idle time, none while the work goes on."""
    taken = []

    async def go():
        idle_steps = asyncio.ensure_future(when_idle(iter(lambda: taken.append(time.monotonic()), 0)))
        start = time.monotonic()
        for _ in range(rounds):
            time.sleep(busy)
            await asyncio.sleep(wait)
        busy_until = time.monotonic()
        await asyncio.sleep(idle)
        idle_steps.cancel()
        return start, busy_until

    start, busy_until = asyncio.run(go())
    assert taken and all(not start <= at < busy_until for at in taken)


def test_steps_wait_while_the_loop_is_busy():
    # busy: answers handled back to back (20 ms each), the step's timer comes due behind them
    _steps_beside(5, 0.02, 0, 0.05)


def test_steps_wait_until_the_loop_has_been_idle_a_while():
    # a run's first questions: work with short waits between (a connection opening, here one
    # timer of IDLE_PAUSE on time) is no idle loop yet; a step then held the questions after it
    # back (numpy's import, ~50 ms)
    _steps_beside(10, 0.004, 0.0025, 0.2)


def test_second_core_is_refused_while_another_thread_runs(monkeypatch):
    monkeypatch.setattr(forked, "cpu_count", lambda: 2)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert forked.second_core()
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert not forked.second_core()
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(forked, "cpu_count", lambda: 1)
    assert not forked.second_core()


# The CLI as a real process (this one runs the server's thread, and pytest-xdist's): which
# process rendered report.html is written down by the page's renderer.
DRIVER = """
import os, sys
from factjudge.evaluation import runner
from factjudge.reports import html
record, fork = sys.argv[1], sys.argv[2] == "fork"
render = html.render_html

def recording(*args, **kwargs):
    with open(record, "a") as fh:
        fh.write(f"{os.getpid()} {os.getppid()}\\n")
    return render(*args, **kwargs)

html.render_html = recording
if not fork:
    runner.second_core = lambda: False
from factjudge.cli import main
sys.argv = ["factjudge", *sys.argv[3:]]
main()
"""


@pytest.mark.skipif(not hasattr(os, "fork") or forked.cpu_count() < 2, reason="needs fork and two cores")
def test_report_html_of_an_llm_run_is_rendered_in_a_child_and_the_same(dataset, tmp_path):
    data, cfg = dataset
    env = {**os.environ, "OPENAI_API_KEY": ""}
    folders, port = {}, 0
    for fork in ("fork", "here"):
        record, out = tmp_path / f"{fork}.pids", tmp_path / fork
        # a server each (its prompt caching counts earlier runs), on one port (the judge's identity)
        with ScriptedServer(TRUTH, port=port) as server:
            proc = subprocess.run([sys.executable, "-c", DRIVER, record, fork, "eval", data, "-c", cfg, "--model",
                                   "m", "--base-url", server.base_url, "--no-cache", "-q", "-o", out],
                                  capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        (pid, parent), = (map(int, line.split()) for line in record.read_text().splitlines())
        # forked: the renderer ran in a child of the CLI (whose parent is this test)
        assert (parent != os.getpid()) == (fork == "fork"), (pid, parent)
        port = int(server.base_url.split(":")[-1].split("/")[0])
        folders[fork] = timeless_outputs(out)
        assert json.loads((out / "summary.json").read_text())["documents"] == len(DOCS)
    assert folders["fork"] == folders["here"]


# The CLI as a real process (numpy.random is loaded once per process): what the run has loaded
# when its end begins, after the last answer.
FINISH_DRIVER = """
import sys
from factjudge.evaluation import runner
finish = runner.finish_run

def finishing(*args, **kwargs):
    from factjudge.core.aggregate import Summary

    print(sorted(m for m in ("numpy", "numpy.random", "factjudge.reports.html", "factjudge.reports.markdown")
                 if m in sys.modules), Summary.__pydantic_complete__, flush=True)
    return finish(*args, **kwargs)

runner.finish_run = finishing
from factjudge.cli import main
sys.argv = ["factjudge", *sys.argv[1:]]
main()
"""


def test_an_llm_run_loads_the_bootstrap_draws_the_pages_and_the_summary_before_its_end(dataset, tmp_path):
    """numpy.random (the bootstrap's draws: numpy loads it on first use, ~15 ms) and the pages'
    modules are imported, and the summary's validator built, while the run waits for answers,
    not after the last one."""
    pytest.importorskip("numpy")
    data, cfg = dataset
    with ScriptedServer(TRUTH, delay=0.2) as server:  # 4 rounds of questions: time to wait
        proc = subprocess.run([sys.executable, "-c", FINISH_DRIVER, "eval", data, "-c", cfg, "--model", "m",
                               "--base-url", server.base_url, "--concurrency", "4", "--no-cache", "-q",
                               "-o", tmp_path / "out"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "OPENAI_API_KEY": ""})
    assert proc.returncode == 0, proc.stderr
    loaded = ["factjudge.reports.html", "factjudge.reports.markdown", "numpy", "numpy.random"]
    assert proc.stdout.splitlines()[0] == f"{loaded} True"
