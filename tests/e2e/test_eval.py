"""``factjudge eval`` end to end: aggregates, intervals, resume, reuse rules, the shared pool.

The LLM is the scripted OpenAI-compatible server on 127.0.0.1 talking to the project's real HTTP
client; the CLI runs as a real process.
"""
import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from evalkit import (
    CALLS,
    CONFIG,
    DOCS,
    ROOT,
    TRUTH,
    fact,
    llm_args,
    outputs,
    read_lines,
    run_cli,
    timeless_outputs,
    without_usage,
    write_jsonl,
)

from factjudge import JudgeBase, LLMJudge
from factjudge.cli.output import ProgressBar
from factjudge.errors import InputError
from factjudge.evaluation.runner import ReportSettings, evaluate_async, input_salt, judge_documents
from factjudge.io.config import parse_config
from factjudge.io.datasets import Document, JsonlDataset, SplitDataset
from factjudge.judges.llm import RetryPolicy
from factjudge.models import Verdict

# --------------------------------------------------------------------------- end to end


def test_aggregates_equal_a_hand_computation(server, dataset, tmp_path):
    data, cfg = dataset
    server.truth = TRUTH
    out = tmp_path / "out"
    proc = run_cli("eval", data, "-c", cfg, *llm_args(server, tmp_path / "cache"), "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == CALLS

    lines = read_lines(out / "results.jsonl")
    assert [x["doc_id"] for x in lines] == ["A", "B", "C", "D", "E"]  # dataset order
    assert all(len(x["input_sha256"]) == 64 for x in lines)
    assert {"gold_facts", "predicted_facts", "metrics", "dedup_notes", "conflicts", "usage"} <= set(lines[0])
    assert "config" not in lines[0]  # the run's, once in run.json and summary.json
    status = {f["id"]: f["factjudge"]["status"] for x in lines for f in x["gold_facts"] + x["predicted_facts"]}
    assert status == {"a-g1": "TP", "a-g2": "FN", "a-g3": "TP", "a-p1": "TP", "a-p2": "TP",
                      "a-p3": "FP", "b-g1": "TP", "b-g2": "FN", "b-g3": "OUT_OF_SCOPE",
                      "b-p1": "TP", "c-p1": "FP", "d-g1": "FN", "d-p1": "FP", "e-g1": "TP",
                      "e-p1": "TP", "e-p2": "FP"}

    s = json.loads((out / "summary.json").read_text())
    assert {"documents", "micro", "macro", "by_fact_type", "ci95", "usage", "config"} <= set(s)
    assert s["documents"] == 5
    m = s["micro"]
    assert (m["tp_gold"], m["fn"], m["tp_predicted"], m["fp"], m["errors"]) == (4, 3, 4, 4, 0)
    assert (m["out_of_scope_gold"], m["out_of_scope_predicted"]) == (1, 0)
    assert m["precision"] == 0.5 and m["recall"] == pytest.approx(4 / 7)
    assert m["f1"] == pytest.approx(8 / 15)
    # per document P: A 2/3, B 1, C 0, D 0, E 1/2; R: A 2/3, B 1/2, C n/a, D 0, E 1
    assert s["macro"]["precision"] == pytest.approx((2 / 3 + 1 + 0 + 0 + 0.5) / 5)
    assert s["macro"]["recall"] == pytest.approx((2 / 3 + 0.5 + 0 + 1) / 4)
    assert s["macro"]["f1"] == pytest.approx((2 / 3 + 2 / 3 + 0 + 2 / 3) / 4)
    assert s["macro"]["defined"] == {"precision": 5, "recall": 4, "f1": 4}
    rev, ceo = s["by_fact_type"]["revenue"], s["by_fact_type"]["ceo"]
    assert (rev["tp_gold"], rev["fn"], rev["tp_predicted"], rev["fp"]) == (3, 2, 3, 3)
    assert (ceo["tp_gold"], ceo["fn"], ceo["tp_predicted"], ceo["fp"]) == (1, 1, 1, 1)
    assert rev["precision"] == 0.5 and rev["recall"] == 0.6 and ceo["f1"] == 0.5
    assert set(s["by_fact_type"]) == {"revenue", "ceo"}
    assert s["conflicts"] == {"duplicate_predicted": 1, "gold_link_rejected_by_predicted": 1,
                              "gold_promoted_by_predicted": 2}
    assert s["usage"]["llm_calls"] == CALLS and s["usage"]["cache_hits"] == 0
    assert s["usage"]["completion_tokens"] == 20 * CALLS
    assert s["usage"]["seconds"] == round(sum(x["usage"]["seconds"] for x in lines), 3)
    assert s["config"]["entity_types"] == ["revenue", "ceo"]
    # pin_id: a server at 127.0.0.1 is self-hosted, so the judged id is pinned (--pin-id auto)
    assert s["judge"] == {"name": "llm", "model": "m", "temperature": 0.0, "pin_id": True,
                          "server": f"127.0.0.1:{server.port}", "base_url": server.base_url}
    assert s["skipped"] == [] and s["bootstrap"] == {"resamples": 1000, "seed": 0, "level": 0.95}
    for k in ("precision", "recall", "f1"):
        low, high = s["ci95"][k]
        assert 0 <= low <= m[k] <= high <= 1
    assert "micro P 0.500" in proc.stderr and "5 documents (5 judged, 0 reused)" in proc.stderr

    md = (out / "report.md").read_text()
    assert "| micro | 0.500 | 0.571 | 0.533 |" in md
    assert "| gold_promoted_by_predicted | 2 |" in md
    # worst documents: D (F1 0), C (F1 undefined, 1 FP), then B/A/E
    worst = md.split("## Worst documents")[1].split("##")[0]
    assert worst.index("| D |") < worst.index("| C |") < worst.index("| A |")
    # one row per FN/FP/ERROR fact, with the judge's reasoning and the reconciliation note
    row = next(r for r in md.splitlines() if r.startswith("| D | gold | d-g1 |"))
    assert "scripted" in row and "the predicted side decides" in row
    facts = md.split("## FN, FP and ERROR facts")[1].split("##")[0].strip().splitlines()[2:]
    assert sorted(r.split(" | ")[2] for r in facts) == [
        "a-g2", "a-p3", "b-g2", "c-p1", "d-g1", "d-p1", "e-p2"]


def test_gold_predicted_form_scores_documents_of_one_side(server, tmp_path):
    server.truth = TRUTH
    gold = [{"doc_id": d["doc_id"], **f} for d in DOCS for f in d["gold_facts"]]
    pred = [{"doc_id": d["doc_id"], **f} for d in DOCS for f in d["predicted_facts"]]
    gold.append({"doc_id": 99, "id": 1, "fact_type": "revenue", "value": "4"})  # gold only
    g, p = write_jsonl(tmp_path / "g.jsonl", gold), write_jsonl(tmp_path / "p.jsonl", pred)
    judge = LLMJudge("m", base_url=server.base_url, retry=RetryPolicy(backoff=0.01))
    ds = SplitDataset(g, p)
    assert ds.scan(parse_config(CONFIG), input_salt(parse_config(CONFIG), judge)) == []
    # documents in order of first appearance: gold file first, then predicted-only ones
    assert [i.doc_id for i in ds.infos] == ["A", "B", "D", "E", "99", "C"]
    async def run_eval():
        async with judge:
            return await evaluate_async(ds, parse_config(CONFIG), judge, tmp_path / "out",
                                        settings=ReportSettings(report_rows=2))
    run = asyncio.run(run_eval())
    md = (tmp_path / "out" / "report.md").read_text()
    assert "Showing the 2 rows of the worst documents first, of 8 FN/FP/ERROR facts" in md
    facts = md.split("## FN, FP and ERROR facts")[1].split("##")[0]
    assert facts.count("| FN |") + facts.count("| FP |") == 2
    m = run.summary.micro
    assert (m.tp_gold, m.fn, m.tp_predicted, m.fp) == (4, 4, 4, 4)
    lines = {x["doc_id"]: x for x in read_lines(tmp_path / "out" / "results.jsonl")}
    assert [f["factjudge"]["status"] for f in lines["99"]["gold_facts"]] == ["FN"]
    assert "doc_id" not in lines["A"]["gold_facts"][0]  # doc_id belongs to the document
    # same documents as the one-line-per-document form: same input hashes
    ds2 = JsonlDataset(write_jsonl(tmp_path / "d.jsonl", DOCS))
    ds2.scan(parse_config(CONFIG), input_salt(parse_config(CONFIG), judge))
    assert {i.doc_id: i.input_sha256 for i in ds2.infos}.items() <= {
        i.doc_id: i.input_sha256 for i in ds.infos}.items()


def test_interval_is_seeded_and_configurable(server, dataset, tmp_path):
    data, cfg = dataset
    server.truth = TRUTH
    cache = tmp_path / "cache"
    runs = {}
    for name, extra in (("a", []), ("b", []), ("c", ["--seed", "7"]), ("d", ["--bootstrap", "50"])):
        proc = run_cli("eval", data, "-c", cfg, *llm_args(server, cache), "-o", tmp_path / name, *extra)
        assert proc.returncode == 0, proc.stderr
        runs[name] = json.loads((tmp_path / name / "summary.json").read_text())
    assert runs["a"]["ci95"] == runs["b"]["ci95"]
    assert runs["a"]["ci95"] != runs["c"]["ci95"] and runs["c"]["bootstrap"]["seed"] == 7
    assert runs["d"]["bootstrap"]["resamples"] == 50
    assert runs["b"]["usage"]["cache_hits"] == CALLS and runs["b"]["usage"]["llm_calls"] == 0


@pytest.mark.slow
def test_resume_after_a_killed_run_gives_identical_files(tmp_path):
    from scripted_server import ScriptedServer

    ids = [f"doc{i:02d}" for i in range(12)]
    docs = [{"doc_id": d, "gold_facts": [fact(f"{d}-g{j}", value=str(j)) for j in range(3)],
             "predicted_facts": [fact(f"{d}-p{j}", value=str(j)) for j in range(3)]} for d in ids]
    truth = {**{("gold", f"{d}-g{j}"): f"{d}-p{j}" for d in ids for j in range(2)},
             **{("predicted", f"{d}-p{j}"): f"{d}-g{j}" for d in ids for j in range(3)}}
    data = write_jsonl(tmp_path / "data.jsonl", docs)
    with ScriptedServer(truth=truth, delay=0.03) as server:
        args = ["eval", data, "--model", "m", "--base-url", server.base_url, "--concurrency", "2"]
        reference = tmp_path / "reference"
        assert run_cli(*args, "--no-cache", "-o", reference).returncode == 0
        asked_reference = len(server.requests)
        assert asked_reference == 12 * 6

        # kill -9 once a few documents have finished
        out, cache = tmp_path / "out", tmp_path / "cache"
        env = {**os.environ, "FACTJUDGE_CACHE_DIR": str(cache)}
        env.pop("OPENAI_API_KEY", None)
        proc = subprocess.Popen([sys.executable, "-m", "factjudge", *map(str, args), "-o", out],
                                env=env, stderr=subprocess.PIPE)
        results = out / "results.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if results.exists() and results.read_bytes().count(b"\n") >= 4:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert not (out / "summary.json").exists()  # never partial output passed off as complete
        finished = {x["doc_id"] for x in read_lines(results)}
        assert 4 <= len(finished) < 12

        server.requests.clear()
        proc = run_cli(*args, "-o", out, cache_dir=cache)
        assert proc.returncode == 0, proc.stderr
        asked = {s.split("-")[0] for s in server.subjects()}
        assert asked and not asked & finished  # finished documents are not asked again
        assert len(server.requests) <= 6 * (12 - len(finished))
        resumed = outputs(out)

        # identical to the uninterrupted run, apart from what the runs cost
        assert without_usage(read_lines(results)) == without_usage(read_lines(reference / "results.jsonl"))
        s1, s2 = (json.loads((d / "summary.json").read_text()) for d in (out, reference))
        assert without_usage(s1) == without_usage(s2)
        md1, md2 = ((d / "report.md").read_text().split("## Usage")[0] for d in (out, reference))
        assert md1 == md2

        # a finished run started again asks nothing and rewrites the very same bytes
        server.requests.clear()
        proc = run_cli(*args, "-o", out, cache_dir=cache)
        assert proc.returncode == 0 and server.requests == []
        assert "12 reused" in proc.stderr
        assert outputs(out) == resumed


def test_changed_documents_and_config_are_judged_again(server, dataset, tmp_path):
    data, cfg = dataset
    server.truth = TRUTH
    out = tmp_path / "out"
    args = ["eval", data, "-c", cfg, "--model", "m", "--base-url", server.base_url, "--no-cache",
            "-o", out]
    assert run_cli(*args).returncode == 0
    docs = [dict(d) for d in DOCS]
    docs[1]["predicted_facts"] = [fact("b-p1", value="5", note="changed")]
    write_jsonl(data, docs)
    server.requests.clear()
    assert run_cli(*args).returncode == 0
    assert {s[0] for s in server.subjects()} == {"b"}  # only document B was asked again
    cfg.write_text(json.dumps({**CONFIG, "matching_rules": ["new rule"]}))
    server.requests.clear()
    # another config's results are not mixed into this folder, nor silently replaced
    refused = run_cli(*args)
    assert refused.returncode == 2 and server.requests == []
    assert refused.stderr == (f"factjudge: error: {out}: holds the results of another run (different "
                              "config (matching_rules)); use --overwrite to replace them, or another "
                              "output folder\n")
    assert run_cli(*args, "--overwrite").returncode == 0
    assert len(server.requests) == CALLS


def test_a_folder_of_another_dataset_is_refused(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_jsonl(a, DOCS)
    write_jsonl(b, DOCS[:2])
    out = tmp_path / "out"
    assert run_cli("eval", a, "-o", out).returncode == 0
    proc = run_cli("eval", b, "-o", out)
    assert proc.returncode == 2 and "different input files" in proc.stderr
    assert len(read_lines(out / "results.jsonl")) == len(DOCS)  # nothing dropped
    assert run_cli("eval", b, "-o", out, "--overwrite").returncode == 0
    assert len(read_lines(out / "results.jsonl")) == 2


def test_orphaned_temporary_files_are_removed_by_the_next_run(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", DOCS)
    out = tmp_path / "out"
    out.mkdir()
    orphan = out / ".results.jsonl.abc123.tmp"
    orphan.write_bytes(b"x" * 1000)  # left by a kill -9 during the final rewrite
    assert run_cli("eval", data, "-o", out).returncode == 0
    assert not orphan.exists() and not list(out.glob(".*.tmp"))


def test_dry_run_previews_the_calls_a_run_would_make(server, dataset, tmp_path):
    data, cfg = dataset
    server.truth = TRUTH
    out = tmp_path / "out"
    dry = ["eval", data, "-c", cfg, *llm_args(server, tmp_path / "cache"), "-o", out, "--dry-run",
           "--price-in", "1", "--price-out", "4"]
    proc = run_cli(*dry)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (plan["documents"], plan["reused_documents"], plan["calls"]) == (5, 0, CALLS)
    assert plan["estimated_cost"] > 0
    assert server.requests == [] and not out.exists()  # nothing asked, nothing written
    docs = [dict(d) for d in DOCS]
    write_jsonl(data, docs[:3])
    assert run_cli("eval", data, "-c", cfg, *llm_args(server, tmp_path / "cache"), "-o", out).returncode == 0
    write_jsonl(data, docs)
    plan = json.loads(run_cli(*dry).stdout.strip().splitlines()[-1])
    # A, B and C are finished: only D and E would be judged
    assert (plan["documents"], plan["reused_documents"], plan["calls"]) == (2, 3, 2 + 3)


def test_error_facts_exit_1_and_are_retried_by_the_next_run(server, dataset, tmp_path):
    from scripted_server import Reply

    data, cfg = dataset
    server.truth = TRUTH
    server.faults[("gold", "a-g1")] = [Reply(content="nonsense")] * 3
    out = tmp_path / "out"
    args = ["eval", data, "-c", cfg, *llm_args(server, tmp_path / "cache"), "-o", out]
    proc = run_cli(*args)
    assert proc.returncode == 1
    assert "could not be judged" in proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["micro"]["errors"] == 1
    assert "| gold | a-g1 | revenue | ERROR |" in (out / "report.md").read_text()
    server.requests.clear()
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert {s[0] for s in server.subjects()} == {"a"} and "4 reused" in proc.stderr


def test_bundled_example_runs_offline_with_the_rules_judge(tmp_path):
    out = tmp_path / "out"
    proc = run_cli("eval", ROOT / "examples" / "dataset.jsonl", "-c", ROOT / "examples" / "config.yaml",
                   "-o", out)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["documents"] == 5 and s["judge"]["name"] == "rules" and s["usage"]["llm_calls"] == 0
    assert s["micro"]["out_of_scope_gold"] > 0 and s["micro"]["tp_gold"] > 0
    assert len(read_lines(out / "results.jsonl")) == 5
    html = (out / "report.html").read_text()
    assert "<svg" in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html


# --------------------------------------------------------------------------- pool and memory


class SlowJudge(JudgeBase):
    """Counts calls and documents in flight; answers FN/FP after a short sleep."""

    name = "slow"

    def __init__(self):
        self.calls = self.max_calls = 0

    async def judge(self, task):
        self.calls += 1
        self.max_calls = max(self.max_calls, self.calls)
        await asyncio.sleep(0.002)
        self.calls -= 1
        return Verdict(fact_id=task.subject_id, status="FN" if task.direction == "gold" else "FP")


def test_one_pool_across_documents_and_bounded_documents_in_flight():
    concurrency, produced, finished, max_open = 8, 0, 0, 0

    def documents():  # small documents: 2 questions each, so one document cannot fill the pool
        nonlocal produced, max_open
        for i in range(300):
            produced += 1
            max_open = max(max_open, produced - finished)
            yield Document(f"d{i}", [fact(f"g{i}")], [fact(f"p{i}")])

    def done(doc, result):
        nonlocal finished
        finished += 1

    judge = SlowJudge()
    asyncio.run(judge_documents(documents(), parse_config({}), judge, done, concurrency=concurrency))
    assert finished == 300
    assert judge.max_calls == concurrency        # the shared pool is full, never over
    assert max_open <= 2 * concurrency           # documents are read lazily, a few at a time


class ReverseJudge(JudgeBase):
    """Rules-like answers from a judge whose documents finish in reverse: the later a document,
    the sooner its questions are answered."""

    name = "reverse"

    def __init__(self):
        self.answered = 0

    async def judge(self, task):
        await asyncio.sleep(0.02 / (1 + int(task.subject_id.split("-")[0][1:])))
        self.answered += 1
        return Verdict(fact_id=task.subject_id, status="FN" if task.direction == "gold" else "FP")


def test_lines_finished_out_of_order_are_passed_as_they_come_in_dataset_order(tmp_path, monkeypatch):
    """One process judges a window of documents, whichever finishes first: the finishing pass
    reads each line as it comes, in dataset order, while the others are judged, and results.jsonl
    is put in dataset order without reading its lines again (issue #39: 0.4 s of the 0.7 s after
    an LLM run's last answer); the files are those of a run whose documents finish in order."""
    from factjudge.evaluation import runner
    from factjudge.io.runfolder import ResultStore

    docs = [{"doc_id": f"d{i:02d}", "gold_facts": [fact(f"d{i}-g")], "predicted_facts": [fact(f"d{i}-p")]}
            for i in range(40)]
    data = JsonlDataset(write_jsonl(tmp_path / "d.jsonl", docs))
    judge, config = ReverseJudge(), parse_config({})
    data.scan(config, input_salt(config, judge))
    seen_at = []
    take = runner.FinishPass.take

    def observed(self, line, index, near=None):
        seen_at.append(judge.answered)
        return take(self, line, index, near)

    monkeypatch.setattr(runner.FinishPass, "take", observed)
    monkeypatch.setattr(ResultStore, "rewrite", None)  # never read again
    asyncio.run(evaluate_async(data, config, judge, tmp_path / "window", concurrency=8))
    assert seen_at[0] < 2 * len(docs) == seen_at[-1]  # the first line passed long before the last answer
    written = [json.loads(x)["doc_id"] for x in (tmp_path / "window" / "results.jsonl").read_text().splitlines()]
    assert written == [d["doc_id"] for d in docs]
    monkeypatch.undo()
    asyncio.run(evaluate_async(data, config, ReverseJudge(), tmp_path / "in_order", concurrency=1))
    assert timeless_outputs(tmp_path / "window") == timeless_outputs(tmp_path / "in_order")


def test_progress_counts_documents_calls_and_cache_hits():
    p = ProgressBar(enabled=False)
    p.on_start(to_judge=3, reused=2, questions=10)
    v = Verdict(fact_id="x", status="TP")
    p.on_questions(4)  # a dataset's total came with on_start
    p.on_verdict("gold", v)
    p.on_verdict("predicted", v.model_copy(update={"usage": v.usage.model_copy(update={"cache_hits": 1})}))
    p.on_verdict("gold", v.model_copy(update={"status": "ERROR"}))
    p.on_document("d1")
    assert (p.docs_done, p.docs_total, p.answered, p.cache_hits, p.errors) == (3, 5, 3, 1, 1)
    assert p.total == 10
    p.on_answers(4, cache_hits=2, errors=1)  # a document judged by a Ray worker
    assert (p.answered, p.cache_hits, p.errors) == (7, 3, 2)
    single = ProgressBar(enabled=False)  # one document (factjudge judge): the total adds up
    single.on_questions(4)
    single.on_questions(2)
    assert single.total == 6



def test_evaluate_dataset_in_one_call(tmp_path):
    from factjudge import evaluate_dataset
    data = write_jsonl(tmp_path / "d.jsonl", DOCS)
    run = evaluate_dataset(data, CONFIG)  # no folder: the result lines come back
    assert run.judged == len(DOCS) and [r["doc_id"] for r in run.results] == [d["doc_id"] for d in DOCS]
    out = tmp_path / "out"
    again = evaluate_dataset(data, CONFIG, out_dir=out)
    assert again.results is None and (out / "summary.json").exists()
    assert again.summary.micro == run.summary.micro
    bad = write_jsonl(tmp_path / "bad.jsonl", [*DOCS, {"doc_id": "Z", "gold_facts": "nope"}])
    with pytest.raises(InputError, match=r"line 6 \(doc_id 'Z'\): 'gold_facts' must be a list"):
        evaluate_dataset(bad, CONFIG)
    assert evaluate_dataset(bad, CONFIG, skip_invalid=True).summary.skipped[0]["line"] == 6

