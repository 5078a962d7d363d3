"""The hybrid judge on the bundled example, against the scripted server answering the truth."""
from pathlib import Path

from example_truth import TRUTH
from factjudge import OpenAIJudge, load_config, load_facts, run_judge
from factjudge.judges import HybridJudge
from factjudge.rules import RulesJudge

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def statuses(result):
    return {(side, f["id"]): (f["status"], f["matched_ids"])
            for side, facts in (("gold", result.gold_facts), ("predicted", result.predicted_facts))
            for f in facts}


def test_hybrid_saves_calls_and_agrees_with_the_llm(server):
    server.truth = TRUTH
    gold = load_facts(EXAMPLES / "report_gold.json")
    pred = load_facts(EXAMPLES / "report_predicted.jsonl")
    config = load_config(EXAMPLES / "config.yaml")
    llm = run_judge(gold, pred, config, OpenAIJudge("m", base_url=server.base_url))
    asked_llm = len(server.requests)
    server.requests.clear()
    hybrid = run_judge(gold, pred, config,
                       HybridJudge(RulesJudge(), OpenAIJudge("m", base_url=server.base_url)))
    assert llm.usage.llm_calls == asked_llm == len(TRUTH)
    saved = hybrid.usage.llm_calls_saved
    assert 0 < saved < len(TRUTH)  # exact matches only: near misses and negatives go to the LLM
    assert hybrid.usage.llm_calls == len(server.requests) == len(TRUTH) - saved
    assert statuses(hybrid) == statuses(llm)
    reasons = [f["reasoning"] for f in hybrid.gold_facts + hybrid.predicted_facts if f["in_scope"]]
    assert sum(r.startswith("[decided by the rules judge") for r in reasons) == saved
    assert sum(r.startswith("[decided by the LLM judge]") for r in reasons) == len(TRUTH) - saved
