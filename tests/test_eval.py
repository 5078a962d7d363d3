"""``factjudge eval`` / ``compare``: aggregates, intervals, resume, bad input, memory bounds.

The LLM is the scripted OpenAI-compatible server on 127.0.0.1 talking to the real openai client;
the CLI runs as a real process.
"""
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from factjudge import JudgeBase
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge import LLMJudge
from factjudge.aggregate import DocStats, aggregate, bootstrap_ci, paired_bootstrap
from factjudge.datasets import Document, JsonlDataset, SplitDataset, input_salt
from factjudge.evaluate import ReportSettings, evaluate_async, judge_documents
from factjudge.metrics import prf
from factjudge.cli.output import ProgressBar
from factjudge.errors import InputError
from factjudge.loading import parse_config
from factjudge.models import Verdict

ROOT = Path(__file__).resolve().parent.parent
CONFIG = {"entity_types": ["revenue", "ceo"]}


def fact(fid, fact_type="revenue", **kw):
    return {"id": fid, "fact_type": fact_type, **kw}


# Five documents whose outcome is easy to work out by hand (ids are unique across documents so
# one truth table answers for all of them).
DOCS = [
    {"doc_id": "A",
     "gold_facts": [fact("a-g1", value="1"), fact("a-g2", value="2"), fact("a-g3", "ceo", name="X")],
     "predicted_facts": [fact("a-p1", value="1"), fact("a-p2", "ceo", name="X"),
                         fact("a-p3", "ceo", name="Y")]},
    {"doc_id": "B",
     "gold_facts": [fact("b-g1", value="5"), fact("b-g2", "ceo", name="Z"),
                    fact("b-g3", "auditor", name="KPMG")],
     "predicted_facts": [fact("b-p1", value="5")]},
    {"doc_id": "C", "gold_facts": [], "predicted_facts": [fact("c-p1", value="7")]},
    {"doc_id": "D", "gold_facts": [fact("d-g1", value="8")], "predicted_facts": [fact("d-p1", value="9")]},
    {"doc_id": "E", "gold_facts": [fact("e-g1", value="3")],
     "predicted_facts": [fact("e-p1", value="3"), fact("e-p2", value="3.0")]},
]
TRUTH = {
    ("gold", "a-g1"): "a-p1", ("predicted", "a-p1"): "a-g1",              # TP both ways
    ("gold", "a-g3"): "a-p2", ("predicted", "a-p2"): "a-g3",              # a-g2 FN, a-p3 FP
    ("gold", "b-g1"): "b-p1", ("predicted", "b-p1"): "b-g1",              # b-g2 FN, b-g3 out of scope
    ("gold", "d-g1"): "d-p1",                                             # rejected by d-p1: FN + FP
    ("predicted", "e-p1"): "e-g1", ("predicted", "e-p2"): "e-g1",         # e-g1 promoted, e-p2 duplicate
}
CALLS = 6 + 3 + 0 + 2 + 3  # C has no gold: its predicted fact is FP without a call


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def dataset(tmp_path):
    (tmp_path / "cfg.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    return write_jsonl(tmp_path / "data.jsonl", DOCS), tmp_path / "cfg.json"


def run_cli(*args, cache_dir=None, **kw):
    """The CLI as a real process; the response cache never goes to the user's cache dir."""
    env = {**os.environ, "FACTJUDGE_CACHE_DIR": str(cache_dir or tempfile.mkdtemp())}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "factjudge", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=180, **kw)


def llm_args(server, cache_dir):
    return ["--model", "m", "--base-url", server.base_url, "--cache-dir", cache_dir]


def read_lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def without_usage(obj):
    """What two runs of the same inputs share: all but what they cost and when they ran."""
    if isinstance(obj, dict):
        return {k: without_usage(v) for k, v in obj.items() if k != "usage" and k != "created"}
    if isinstance(obj, list):
        return [without_usage(v) for v in obj]
    return obj


def outputs(out):
    return {name: (out / name).read_bytes()
            for name in ("results.jsonl", "summary.json", "report.md", "report.html")}


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
    assert {"gold_facts", "predicted_facts", "metrics", "dedup_notes", "conflicts", "usage",
            "config"} <= set(lines[0])
    status = {f["id"]: f["status"] for x in lines for f in x["gold_facts"] + x["predicted_facts"]}
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
    assert s["judge"] == {"name": "llm", "model": "m", "temperature": 0.0,
                          "server": f"127.0.0.1:{server.port}"}
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
    judge = LLMJudge("m", base_url=server.base_url, backoff=0.01)
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
    assert [f["status"] for f in lines["99"]["gold_facts"]] == ["FN"]
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


def test_resume_after_a_killed_run_gives_identical_files(tmp_path):
    from scripted_server import ScriptedServer

    ids = [f"doc{i:02d}" for i in range(12)]
    docs = [{"doc_id": d, "gold_facts": [fact(f"{d}-g{j}", value=str(j)) for j in range(3)],
             "predicted_facts": [fact(f"{d}-p{j}", value=str(j)) for j in range(3)]} for d in ids]
    truth = {**{("gold", f"{d}-g{j}"): f"{d}-p{j}" for d in ids for j in range(2)},
             **{("predicted", f"{d}-p{j}"): f"{d}-g{j}" for d in ids for j in range(3)}}
    data = write_jsonl(tmp_path / "data.jsonl", docs)
    with ScriptedServer(truth=truth, delay=0.05) as server:
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


# --------------------------------------------------------------------------- bad input


def test_bad_lines_stop_the_run_before_any_call(server, tmp_path):
    lines = [json.dumps(DOCS[0]), "{not json", json.dumps({"doc_id": "X", "gold_facts": [{"id": "1"}],
                                                              "predicted_facts": []}),
             "", json.dumps(DOCS[1]), json.dumps({**DOCS[2], "doc_id": "A"}),
             json.dumps({"doc_id": "Y", "gold_facts": {}, "predicted_facts": []}), "[1]"]
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = run_cli("eval", data, "--model", "m", "--base-url", server.base_url, "--no-cache", "-o", out)
    assert proc.returncode == 2 and server.requests == [] and not out.exists()
    assert "Traceback" not in proc.stderr
    err = proc.stderr.strip().splitlines()
    assert err == [
        f"factjudge: error: {data}: line 2 column 2: invalid JSON: Expecting property name enclosed in double quotes",
        f"factjudge: error: {data}: line 3: gold_facts: record 1 (id '1'): missing or empty 'fact_type' "
        "(a non-empty string)",
        f"factjudge: error: {data}: line 6: duplicate doc_id 'A', first seen at line 1",
        f"factjudge: error: {data}: line 7 (doc_id 'Y'): 'gold_facts' must be a list of facts",
        f"factjudge: error: {data}: line 8: expected a JSON object, got array",
        "factjudge: error: 5 bad line(s); nothing was judged (--skip-invalid scores the rest)",
    ]

    server.truth = TRUTH
    proc = run_cli("eval", data, "--model", "m", "--base-url", server.base_url, "--no-cache",
                   "-o", out, "--skip-invalid")
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["documents"] == 2
    assert [(x["file"], x["line"]) for x in s["skipped"]] == [(str(data), n) for n in (2, 3, 6, 7, 8)]
    assert "duplicate doc_id" in s["skipped"][2]["error"]
    assert "5 bad line(s) skipped" in proc.stderr
    assert "Skipped input lines" in (out / "report.md").read_text()


def test_bad_lines_of_the_gold_predicted_form_name_file_and_line(tmp_path):
    g = tmp_path / "g.jsonl"
    g.write_text("\n".join([
        json.dumps({"doc_id": "a", "id": "1", "fact_type": "t"}),
        json.dumps({"id": "2", "fact_type": "t"}),
        json.dumps({"doc_id": "b", "id": "1", "fact_type": "t"}),
        json.dumps({"doc_id": "a", "id": 1, "fact_type": "t"}),
        json.dumps({"doc_id": "a", "id": "3", "fact_type": "t", "status": "TP"}),
    ]) + "\n")
    p = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": "a", "id": "x"}])
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"factjudge: error: {g}: line 2: missing or empty 'doc_id' (a non-empty string or an integer)",
        f"factjudge: error: {g}: line 4 (id '1'): duplicate id in document 'a', first seen at line 1",
        f"factjudge: error: {g}: line 5 (id '3'): field 'status' is reserved for factjudge's output",
        f"factjudge: error: {p}: line 1 (id 'x'): missing or empty 'fact_type' (a non-empty string)",
        "factjudge: error: 4 bad line(s); nothing was judged (--skip-invalid scores the rest)",
    ]
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-o", tmp_path / "out",
                   "--skip-invalid")
    assert proc.returncode == 0, proc.stderr
    lines = read_lines(tmp_path / "out" / "results.jsonl")
    assert [(x["doc_id"], [f["id"] for f in x["gold_facts"]], x["predicted_facts"]) for x in lines] == [
        ("a", ["1"], []), ("b", ["1"], [])]


@pytest.mark.parametrize("args, message", [
    ([], "give either DATASET.jsonl or both --gold and --predicted"),
    (["data.jsonl", "--gold", "g.jsonl", "--predicted", "p.jsonl"], "give either DATASET.jsonl"),
    (["--gold", "g.jsonl"], "--gold and --predicted go together"),
    (["missing.jsonl"], "missing.jsonl: cannot read file"),
    (["empty.jsonl"], "empty.jsonl: no documents to judge"),
    (["data.jsonl", "-c", "bad.yaml"], "bad.yaml: unknown config key 'entity_typs'"),
    (["data.jsonl", "--judge", "llm"], "--model"),
    (["data.jsonl", "--model", "gpt-4o-mini"], "OPENAI_API_KEY"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, args, message):
    write_jsonl(tmp_path / "data.jsonl", DOCS[:1])
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "bad.yaml").write_text("entity_typs: [a]\n")
    proc = run_cli("eval", *args, "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_output_folder_that_cannot_be_written_exits_2(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS[:1])
    (tmp_path / "file").write_text("")
    for out, message in ((tmp_path / "file", "file: not a folder"),
                         (tmp_path / "file" / "sub", "file/sub: cannot read or write: Not a directory")):
        proc = run_cli("eval", data, "-o", out)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert proc.stderr.strip().splitlines() == [f"factjudge: error: {tmp_path}/{message}"]


def test_a_foreign_results_file_is_never_overwritten(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS[:1])
    out = tmp_path / "theirs"
    out.mkdir()
    (out / "results.jsonl").write_text("my precious data\n")
    (out / "summary.json").write_text("{}")
    proc = run_cli("eval", data, "-o", out)
    assert proc.returncode == 2
    assert "results.jsonl: line 1 is not a factjudge result line" in proc.stderr
    assert (out / "results.jsonl").read_text() == "my precious data\n"
    assert (out / "summary.json").read_text() == "{}"


# --------------------------------------------------------------------------- compare


def test_compare_two_extractors_with_a_paired_interval(tmp_path):
    gold = [[fact(f"g{j}", value=str(100 * i + j)) for j in range(4)] for i in range(30)]
    good = [[dict(f, id=f"p{j}") for j, f in enumerate(g)] for g in gold]
    # the weaker extractor gets the last two values of every document wrong
    weak = [[dict(f, id=f"p{j}", value=str(9000 + j)) if j >= 2 else dict(f, id=f"p{j}")
             for j, f in enumerate(g)] for g in gold]
    for name, pred in (("weak", weak), ("good", good)):
        write_jsonl(tmp_path / f"{name}.jsonl", [
            {"doc_id": f"d{i}", "gold_facts": gold[i], "predicted_facts": pred[i]} for i in range(30)])
        proc = run_cli("eval", tmp_path / f"{name}.jsonl", "-o", tmp_path / name)
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("compare", tmp_path / "weak", tmp_path / "good")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()}
    assert rows["f1"].split()[1:4] == ["0.500", "1.000", "+0.500"]
    assert rows["f1"].endswith("yes: B is higher") and rows["recall"].endswith("yes: B is higher")
    assert "paired bootstrap over 30 documents, 1000 resamples, seed 0" in proc.stdout

    same = run_cli("compare", tmp_path / "good", tmp_path / "good")
    f1 = next(line for line in same.stdout.splitlines() if line.startswith("f1"))
    assert "+0.000" in f1 and "[+0.000, +0.000]" in f1 and f1.endswith(" no")

    assert "warning" not in proc.stderr  # same config, same judge
    (tmp_path / "narrow.yaml").write_text("entity_types: [revenue]\n", encoding="utf-8")
    proc = run_cli("eval", tmp_path / "good.jsonl", "-c", tmp_path / "narrow.yaml", "-o", tmp_path / "narrow")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("compare", tmp_path / "good", tmp_path / "narrow")
    assert "different judge configs (differing: entity_types)" in proc.stderr

    proc = run_cli("compare", tmp_path / "weak", tmp_path / "nowhere")
    assert proc.returncode == 2 and "not a finished eval output folder" in proc.stderr


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


def test_progress_counts_documents_calls_and_cache_hits():
    p = ProgressBar(enabled=False)
    p.start(to_judge=3, reused=2, questions=10)
    v = Verdict(fact_id="x", status="TP")
    p(total=4)
    p(verdict=v)
    p(verdict=v.model_copy(update={"usage": v.usage.model_copy(update={"cache_hits": 1})}))
    p.document_done()
    assert (p.docs_done, p.docs_total, p.answered, p.cache_hits) == (3, 5, 2, 1)
    assert p.bar.tasks[0].total == 10 and p.bar.tasks[0].completed == 2


# --------------------------------------------------------------------------- pure functions

keys = st.lists(st.tuples(*[st.integers(0, 20)] * 4), min_size=0, max_size=25)


@settings(max_examples=60, deadline=None)
@given(keys, st.integers(0, 2**32))
def test_bootstrap_interval_is_ordered_and_seeded(docs, seed):
    a = bootstrap_ci(docs, resamples=60, seed=seed)
    assert a == bootstrap_ci(docs, resamples=60, seed=seed)
    for k, ci in a.items():
        if ci is None:
            continue
        assert 0 <= ci[0] <= ci[1] <= 1
    point = prf(*[sum(c) for c in zip(*docs)]) if docs else prf(0, 0, 0, 0)
    for k in ("precision", "recall", "f1"):
        assert (a[k] is None) == (point[k] is None)  # undefined only when the data says so


@settings(max_examples=40, deadline=None)
@given(st.tuples(*[st.integers(0, 9)] * 4), st.integers(1, 30), st.integers(0, 1000))
def test_identical_documents_give_a_zero_width_interval_at_the_point(doc, n, seed):
    ci = bootstrap_ci([doc] * n, resamples=30, seed=seed)
    point = prf(*doc)
    for k, value in point.items():
        assert ci[k] == (None if value is None else [value, value])


@settings(max_examples=40, deadline=None)
@given(keys)
def test_micro_is_the_sum_and_paired_diff_of_a_run_with_itself_is_zero(docs):
    stats = [DocStats(f"d{i}", {"tp_predicted": a, "fp": b, "tp_gold": c, "fn": d, "errors": 0,
                                "out_of_scope_gold": 0, "out_of_scope_predicted": 0},
                      {"t": {"tp_predicted": a, "fp": b, "tp_gold": c, "fn": d, "errors": 0}},
                      {"duplicate_gold": 1}, {"llm_calls": a, "seconds": 0.1})
             for i, (a, b, c, d) in enumerate(docs)]
    s = aggregate(stats, resamples=20).model_dump()
    assert s["documents"] == len(docs)
    assert s["micro"]["tp_predicted"] == sum(d[0] for d in docs)
    assert s["micro"]["fn"] == sum(d[3] for d in docs)
    assert s["usage"].get("llm_calls", 0) == sum(d[0] for d in docs)
    assert s["conflicts"] == ({"duplicate_gold": len(docs)} if docs else {})
    if docs:
        assert s["by_fact_type"]["t"]["precision"] == s["micro"]["precision"]
    pair = paired_bootstrap(docs, docs, resamples=20)
    for k in ("precision", "recall", "f1"):
        assert pair[k]["diff"] in (None, 0) and not pair[k]["excludes_zero"]


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
