"""``eval --workers N``: the rules judge in several forked processes writes the files one process
writes (issue #39), refuses what it cannot do in one line, and keeps what a one-process run keeps
when the input changes or the run is stopped."""
import asyncio
import gc
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from evalkit import DOCS, read_lines, run_cli, timeless_outputs, write_jsonl

from factjudge import JudgeBase, evaluate_dataset
from factjudge.errors import InputError
from factjudge.evaluation import workers as workers_mod
from factjudge.evaluation.runner import evaluate_async, input_salt
from factjudge.io import scan
from factjudge.io.config import parse_config
from factjudge.io.datasets import JsonlDataset
from factjudge.io.formats import dataset_jsonl
from factjudge.io.formats.dataset_jsonl import DatasetLines
from factjudge.judges.rules.judge import RulesJudge
from factjudge.util.forked import cpu_count

pytestmark = pytest.mark.skipif(not workers_mod.can_fork(), reason="--workers needs fork (Linux, macOS)")

CONFIG = {"entity_types": ["revenue", "ceo"]}


def documents(n):
    """``n`` documents of every outcome: a match written another way, a wrong value, a miss, a
    spurious fact, a duplicate, an out-of-scope fact."""
    docs = []
    for i in range(n):
        gold = [{"id": f"g{i}-1", "fact_type": "revenue", "company": f"Company {i % 37}", "value": f"{i}.5 million"},
                {"id": f"g{i}-2", "fact_type": "ceo", "name": f"Person {i % 11}"},
                {"id": f"g{i}-3", "fact_type": "revenue", "company": "Other", "value": str(i % 7)},
                {"id": f"g{i}-4", "fact_type": "auditor", "name": "KPMG"}]
        pred = [{"id": f"p{i}-1", "fact_type": "revenue", "company": f"company {i % 37} inc.", "value": f"{i}.5m"},
                {"id": f"p{i}-2", "fact_type": "ceo", "name": f"Person {(i + i % 3) % 11}"},
                {"id": f"p{i}-3", "fact_type": "revenue", "company": "Someone", "value": "12"},
                {"id": f"p{i}-4", "fact_type": "ceo", "name": f"Person {i % 11}"}]
        docs.append({"doc_id": f"d{i:04d}", "gold_facts": gold, "predicted_facts": pred})
    return docs


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    # 3 x CHUNK + 10 documents: four chunks, the last one short
    return write_jsonl(tmp_path_factory.mktemp("w") / "data.jsonl", documents(3 * workers_mod.CHUNK + 10))


def test_two_workers_write_the_files_one_process_writes(dataset, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    one = run_cli("eval", dataset, "-c", config, "-o", tmp_path / "one", "--workers", "1")
    two = run_cli("eval", dataset, "-c", config, "-o", tmp_path / "two", "--workers", "2")
    assert one.returncode == 0 and two.returncode == 0, two.stderr
    assert timeless_outputs(tmp_path / "one") == timeless_outputs(tmp_path / "two")
    lines = read_lines(tmp_path / "two" / "results.jsonl")
    assert [x["doc_id"] for x in lines] == [f"d{i:04d}" for i in range(3 * workers_mod.CHUNK + 10)]
    statuses = {f["factjudge"]["status"] for x in lines for f in x["gold_facts"] + x["predicted_facts"]}
    assert statuses == {"TP", "FN", "FP", "OUT_OF_SCOPE"}  # every outcome went through the workers


class PidRules(RulesJudge):
    """The rules judge, saying in each verdict's note which process decided it."""

    def decide(self, task, index=None):
        verdict, exact = super().decide(task, index)
        return verdict.model_copy(update={"note": f"pid {os.getpid()}"}), exact


def test_the_documents_are_judged_in_other_processes_and_a_resumed_run_reuses_them(dataset, tmp_path):
    first = evaluate_dataset(dataset, CONFIG, PidRules(), tmp_path / "out", workers=2)
    pids = {f["factjudge"]["description"] for x in read_lines(tmp_path / "out" / "results.jsonl")
            for f in x["gold_facts"] if f["factjudge"]["status"] == "FN"}
    assert first.judged == 3 * workers_mod.CHUNK + 10
    assert len(pids) == 2 and f"pid {os.getpid()}" not in pids  # two workers, neither this process
    again = evaluate_dataset(dataset, CONFIG, PidRules(), tmp_path / "out", workers=2)
    assert (again.judged, again.reused) == (0, first.judged)


class GcRules(RulesJudge):
    """The rules judge, saying in each verdict's note the collector's thresholds where it runs."""

    def decide(self, task, index=None):
        verdict, exact = super().decide(task, index)
        return verdict.model_copy(update={"note": f"gc {gc.get_threshold()}"}), exact


def test_a_worker_collects_its_youngest_generation_only_as_a_guard(dataset, tmp_path):
    """Issue 39: a worker's young collections only walked the judge's caches (0.37 s of each
    worker's ~12 s on 10,000 documents): they run at WORKER_GC_YOUNG net new objects, a guard."""
    here = gc.get_threshold()
    evaluate_dataset(dataset, CONFIG, GcRules(), tmp_path / "out", workers=2)
    said = {f["factjudge"]["description"] for x in read_lines(tmp_path / "out" / "results.jsonl")
            for f in x["gold_facts"] if f["factjudge"]["status"] == "FN"}
    assert said == {f"gc {(workers_mod.WORKER_GC_YOUNG, *here[1:])}"}
    assert gc.get_threshold() == here  # this process's own are left as they were


def test_auto_uses_a_process_per_core_for_the_rules_judge_on_a_large_dataset():
    rules = RulesJudge()
    assert workers_mod.auto_workers(rules, workers_mod.AUTO_MIN_DOCUMENTS - 1) == 1
    assert workers_mod.auto_workers(rules, 100_000) == workers_mod.cpu_count()

    class Other(JudgeBase):  # a judge of the user's own
        name = "mine"

        async def judge(self, task):  # pragma: no cover  (never asked here)
            raise AssertionError

    assert workers_mod.auto_workers(Other(), 100_000) == 1
    with pytest.raises(InputError, match=r"^--workers 2: only the rules judge .* 'mine' judge's questions"):
        workers_mod.check_workers(2, Other())


@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "--workers '0': give a number of processes (1 or more) or auto"),
    (["--workers", "two"], "--workers 'two': give a number of processes (1 or more) or auto"),
    (["--workers", "2", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
     "--workers 2: only the rules judge is judged in several processes; the 'llm' judge's questions "
     "are asked concurrently in one (--concurrency)"),
    (["--workers", "2", "--ray"], "--workers and --ray: give one (with --ray, Ray's workers judge the documents)"),
])
def test_what_workers_cannot_do_is_one_line_before_any_file(dataset, tmp_path, args, message):
    proc = run_cli("eval", dataset, "-o", tmp_path / "out", *args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"factjudge: error: {message}"]
    assert not (tmp_path / "out").exists()


def test_a_document_changed_during_the_run_keeps_those_before_it(tmp_path, monkeypatch):
    monkeypatch.setattr(scan, "HOLD_FACTS", 0)  # every document read again when it is judged
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    config, judge = parse_config(CONFIG), RulesJudge()
    ds = JsonlDataset(data)
    assert ds.scan(config, input_salt(config, judge)) == []
    changed = [dict(d) for d in DOCS]
    changed[3] = {**DOCS[3], "gold_facts": [dict(DOCS[3]["gold_facts"][0], value="7")]}  # D: same length
    write_jsonl(data, changed)
    with pytest.raises(InputError, match=r"changed while eval ran \(document 'D' is not what the scan read\)"):
        asyncio.run(evaluate_async(ds, config, judge, tmp_path / "out", workers=2))
    assert [x["doc_id"] for x in read_lines(tmp_path / "out" / "results.jsonl")] == ["A", "B", "C"]
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_document_read_again_by_a_worker_that_changed_stops_the_run_in_one_line(tmp_path, monkeypatch):
    """The workers read the documents beyond those the scan holds themselves: one rewritten (its
    doc_id) or broken since the scan is refused as when this process read it."""
    monkeypatch.setattr(scan, "HOLD_FACTS", 0)
    config, judge = parse_config(CONFIG), RulesJudge()
    for change, detail in [
        ({**DOCS[3], "doc_id": "X"}, "document 'D' is not what the scan read"),
        (None, "data.jsonl: line 4 column 10: invalid JSON"),
    ]:
        data = write_jsonl(tmp_path / "data.jsonl", DOCS)
        ds = JsonlDataset(data)
        assert ds.scan(config, input_salt(config, judge)) == []
        lines = data.read_bytes().splitlines(keepends=True)
        lines[3] = (json.dumps(change).encode() + b"\n") if change else lines[3].replace(b"{", b"[", 1)
        data.write_bytes(b"".join(lines))
        out = tmp_path / f"out-{detail[:4]}"
        with pytest.raises(InputError, match=r"changed while eval ran \(.*" + detail) as raised:
            asyncio.run(evaluate_async(ds, config, judge, out, workers=2))
        assert "\n" not in str(raised.value)
        assert [x["doc_id"] for x in read_lines(out / "results.jsonl")] == ["A", "B", "C"]


def test_the_parent_sends_the_workers_positions_not_documents(dataset, tmp_path, monkeypatch):
    """A document beyond those the scan holds is read by the worker that judges it: this process
    read, parsed and pickled each only to send it (~83 us of its CPU a 20-fact document)."""
    from factjudge.io.formats import dataset_jsonl

    monkeypatch.setattr(scan, "HOLD_FACTS", 40)  # the first 5 documents (8 facts each) held
    read = []
    document = dataset_jsonl.DatasetLines._document

    def counted(self, raw, lineno):
        read.append(lineno)
        return document(self, raw, lineno)

    monkeypatch.setattr(dataset_jsonl.DatasetLines, "_document", counted)  # the workers' calls stay theirs
    evaluate_dataset(dataset, CONFIG, out_dir=tmp_path / "two", workers=2)
    documents = 3 * workers_mod.CHUNK + 10
    assert read == list(range(1, documents + 1))  # the scan's reading only; before: 6..85 again
    one = evaluate_dataset(dataset, CONFIG, out_dir=tmp_path / "one", workers=1)
    assert one.judged == documents
    assert timeless_outputs(tmp_path / "one") == timeless_outputs(tmp_path / "two")


def test_the_pool_s_worker_thread_does_not_wake_for_each_result(tmp_path, monkeypatch):
    """The standard pool's worker-maintaining thread also waited on the results' pipe: it woke,
    and spun, while each chunk's lines were read (1.0 s of the parent's CPU for 10,000 documents
    of 20 facts); it now wakes when the pool starts, changes or ends."""
    from multiprocessing import pool

    woken = []
    wait = pool.Pool._wait_for_updates

    def counted(*args, **kwargs):
        woken.append(1)
        return wait(*args, **kwargs)

    monkeypatch.setattr(pool.Pool, "_wait_for_updates", staticmethod(counted))
    data = write_jsonl(tmp_path / "data.jsonl", documents(20 * workers_mod.CHUNK))
    run = evaluate_dataset(data, CONFIG, out_dir=tmp_path / "out", workers=2)
    assert run.judged == 20 * workers_mod.CHUNK
    assert len(woken) < 20, len(woken)  # before: some 2,000 (it spun while each chunk's lines were read)


def test_ctrl_c_stops_the_workers_too(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", documents(3000))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "factjudge", "eval", str(data), "-o", str(out), "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            # Ctrl-C as at a terminal, even when this suite runs in the background
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    results = out / "results.jsonl"
    while not (results.exists() and results.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)  # the whole process group, as a terminal sends it
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "run the same command again to judge the rest" in stderr
    assert not (out / "summary.json").exists()
    assert _group_ends(proc.pid, within=10.0) == []  # no worker left running
    lines = read_lines(results)  # every line written is whole
    assert 0 < len(lines) < 3000


def _group_ends(group: int, within: float) -> list[str]:
    """The processes of ``group`` still alive once they all ended or ``within`` seconds passed: a
    worker's exit after the parent's can take a moment on a loaded machine (a fixed 0.5 s wait
    failed once while the suite shared the 2 cores with three other runs)."""
    deadline = time.monotonic() + within
    while True:
        alive = subprocess.run(["pgrep", "-g", str(group)], capture_output=True, text=True).stdout.split()
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def test_a_resumed_run_and_csv_with_workers_write_what_one_process_writes(dataset, tmp_path):
    """The two ways the finishing pass runs after the judging (results to rewrite in dataset
    order, facts.csv to write) instead of beside it."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    assert run_cli("eval", dataset, "-c", config, "-o", tmp_path / "one", "--csv", "--workers", "1").returncode == 0
    two = tmp_path / "two"
    assert run_cli("eval", dataset, "-c", config, "-o", two, "--workers", "2").returncode == 0
    results = two / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    results.write_text("".join(lines[:30] + lines[-5:]), encoding="utf-8")  # 35 finished, not in order
    proc = run_cli("eval", dataset, "-c", config, "-o", two, "--csv", "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    assert timeless_outputs(tmp_path / "one") == timeless_outputs(two)
    assert (tmp_path / "one" / "facts.csv").read_bytes() == (two / "facts.csv").read_bytes()


def test_the_parent_does_not_search_the_closest_facts_again(dataset, tmp_path, monkeypatch):
    """The workers send each line's closest facts with it: their normal forms are warm, this
    process would make them again (issue #39)."""
    from factjudge.reports import rows

    searched = []
    finder = rows._finder

    def counted(line, facts, *forms):
        searched.append(line["doc_id"])
        return finder(line, facts, *forms)

    monkeypatch.setattr(rows, "_finder", counted)  # the workers are forked after: their calls stay theirs
    evaluate_dataset(dataset, CONFIG, out_dir=tmp_path / "two", workers=2)
    assert searched == []
    one = evaluate_dataset(dataset, CONFIG, out_dir=tmp_path / "one", workers=1)
    assert len(set(searched)) == one.summary.documents  # one process searches every line itself
    assert timeless_outputs(tmp_path / "one") == timeless_outputs(tmp_path / "two")


def test_with_workers_report_html_is_rendered_beside_the_other_files(dataset, tmp_path, monkeypatch):
    """At the end of a run with workers, report.html (the costliest page) is rendered in a child
    process while this one writes report.md and review.html; the files are those one process
    writes (test_two_workers_write_the_files_one_process_writes)."""
    from factjudge.reports import html

    render = html.render_html

    def where(*args, **kwargs):
        (tmp_path / f"html-{os.getpid()}").write_text("")
        return render(*args, **kwargs)

    monkeypatch.setattr(html, "render_html", where)
    evaluate_dataset(dataset, CONFIG, out_dir=tmp_path / "two", workers=2)
    rendered = {int(p.name.split("-")[1]) for p in tmp_path.glob("html-*")}
    assert len(rendered) == 1 and os.getpid() not in rendered
    for p in tmp_path.glob("html-*"):
        p.unlink()
    evaluate_dataset(dataset, CONFIG, out_dir=tmp_path / "one", workers=1)
    assert {int(p.name.split("-")[1]) for p in tmp_path.glob("html-*")} == {os.getpid()}


def test_the_end_is_made_ready_while_the_workers_judge_the_first_documents(dataset, tmp_path, monkeypatch):
    """numpy (the bootstrap) and the pages' templates are loaded while the workers judge the first
    chunks, when this process waits: not in the end of the run, which is this process's alone."""
    from factjudge.evaluation import runner

    events = []
    ready, take = runner._ready_to_finish, runner.FinishPass.take

    def steps(documents):
        for step in ready(documents):
            events.append(step)
            yield step

    monkeypatch.setattr(runner, "_ready_to_finish", steps)
    monkeypatch.setattr(runner.FinishPass, "take", lambda *a, **k: events.append("line") or take(*a, **k))
    evaluate_dataset(dataset, CONFIG, out_dir=tmp_path / "two", workers=2)
    from factjudge.reports.html import compile_templates

    assert events[0] == "numpy" and events.count("line") == 3 * workers_mod.CHUNK + 10
    taken = [e for e in events if e != "line"]
    # every step, each once, before the end: the pages' modules imported, then their templates compiled
    assert taken == ["numpy", "numpy.random", "reports.html", "reports.markdown", "Summary", "Macro", "MicroCounts",
                     "CategoryCounts", "FieldScore", *compile_templates()]
    assert events[-1] == "line"


def test_auto_judges_in_a_process_per_core_from_the_threshold_on(tmp_path):
    small = write_jsonl(tmp_path / "small.jsonl", documents(workers_mod.AUTO_MIN_DOCUMENTS - 1))
    large = write_jsonl(tmp_path / "large.jsonl", documents(workers_mod.AUTO_MIN_DOCUMENTS + 10))

    def pids(data, out):
        evaluate_dataset(data, CONFIG, PidRules(), tmp_path / out, workers=None)
        return {f["factjudge"]["description"] for x in read_lines(tmp_path / out / "results.jsonl")
                for f in x["gold_facts"] if f["factjudge"]["status"] == "FN"}

    assert pids(small, "small") == {f"pid {os.getpid()}"}
    expected = min(workers_mod.cpu_count(), (workers_mod.AUTO_MIN_DOCUMENTS + 10) // workers_mod.CHUNK)
    got = pids(large, "large")
    assert len(got) == expected and (expected == 1) == (got == {f"pid {os.getpid()}"})


def test_deciding_auto_for_another_judge_loads_no_rules_judge():
    """An LLM run's start does not load the normaliser and its knowledge to learn that it is not
    the rules judge."""
    code = ("import sys; from factjudge import JudgeBase; from factjudge.evaluation.workers import auto_workers\n"
            "class Mine(JudgeBase):\n    name = 'mine'\n"
            "print(auto_workers(Mine(), 100_000), 'factjudge.judges.rules.judge' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "False"]


@pytest.mark.skipif(not hasattr(os, "fork") or cpu_count() < 2, reason="needs fork and two cores")
@pytest.mark.parametrize("skip_invalid", [False, True])
def test_a_large_dataset_scanned_on_two_cores_writes_what_one_core_writes(tmp_path, monkeypatch, skip_invalid):
    monkeypatch.setattr(scan, "second_core", lambda: True)  # though another test left a thread running
    docs = documents(3 * workers_mod.CHUNK + 10)
    lines = [json.dumps(d) for d in docs]
    if skip_invalid:  # bad lines and a doc_id repeated across the halves
        lines[5:5] = ['{"doc_id": "bad", "gold_facts": [}', ""]
        lines.insert(len(lines) * 3 // 4, json.dumps(docs[1]))
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(lines) + "\n")
    halves = []
    real = DatasetLines.halves
    monkeypatch.setattr(DatasetLines, "halves", lambda self, config: halves.append(real(self, config)) or halves[-1])
    outs = {}
    for name, size in (("one", 1 << 62), ("two", 0)):
        monkeypatch.setattr(dataset_jsonl, "SPLIT_BYTES", size)
        evaluate_dataset(data, CONFIG, RulesJudge(), tmp_path / name, workers=2, skip_invalid=skip_invalid)
        outs[name] = timeless_outputs(tmp_path / name)
    assert [h is not None for h in halves] == [False, True]  # the second run split the file
    assert outs["one"] == outs["two"]
    assert len(read_lines(tmp_path / "two" / "results.jsonl")) == 3 * workers_mod.CHUNK + 10


#: The pool of the test below, in an interpreter of its own: what this suite's worker imported
#: before (Ray installs a SIGTERM handler that dumps a stack, and took over 2 s in CI's worker) is
#: not in its forked workers.
_IDLE_POOL = """
import json, multiprocessing, time
from factjudge.evaluation import workers
pool = workers._pool_type()(2, context=multiprocessing.get_context("fork"))
assert pool.apply_async(sum, ([1, 2],)).get(timeout=30) == 3  # both idle now, waiting for tasks
started = time.monotonic()
workers._stop(pool)
print(json.dumps({"took": time.monotonic() - started, "codes": [p.exitcode for p in pool._pool],
                  "threads": [pool._task_handler.is_alive(), pool._result_handler.is_alive()]}))
"""


def test_a_stopped_pool_of_idle_workers_terminates_and_its_threads_end():
    """A run stopped by an error or Ctrl-C, its workers waiting for their next chunk: the pool
    terminates (each worker told to stop) and its threads end, without the bounded
    wait. Killing the workers first left the lock an idle worker holds on the tasks' pipe taken
    for good: every stopped run waited the whole STOP_WAIT, its threads never ended."""
    proc = subprocess.run([sys.executable, "-c", _IDLE_POOL], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    # each ended by the pool (its stop sentinel, or SIGTERM: -15), none killed (SIGKILL)
    assert set(got["codes"]) <= {0, -signal.SIGTERM}, got
    assert got["threads"] == [False, False] and got["took"] < workers_mod.STOP_WAIT, got


def test_a_stopped_pool_ends_even_when_a_killed_worker_held_its_lock():
    """Ctrl-C once hung ``eval --workers 2`` for ever: Pool.terminate puts a sentinel on the
    results pipe under the lock a worker holds while it sends a chunk, and a worker halfway
    through a large chunk held it for good. Here the lock is held (as that worker held it) and the
    pool is stopped: the workers are dead at once and the stop returns within its bounded wait."""
    import multiprocessing

    from factjudge.evaluation import workers

    pool = workers._pool_type()(2, context=multiprocessing.get_context("fork"))
    lock = pool._outqueue._wlock
    lock.acquire()
    try:
        started = time.monotonic()
        workers._stop(pool)
        assert time.monotonic() - started < workers.STOP_WAIT + 1.0
        assert all(p.exitcode is not None for p in pool._pool)  # killed, none left running
    finally:
        lock.release()  # the stopping thread goes on and ends
