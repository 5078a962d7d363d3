"""The hybrid judge on the bundled example, against the scripted server answering the truth."""

from evalkit import ROOT
from example_truth import TRUTH
from scripted_server import describe

from factjudge import LLMJudge, load_config, load_facts, run_judge
from factjudge.judges import HybridJudge
from factjudge.judges.rules.judge import RulesJudge

EXAMPLES = ROOT / "examples"


def statuses(result):
    return {(side, f["id"]): (f["factjudge"]["status"], f["factjudge"]["matched_ids"])
            for side, facts in (("gold", result.gold_facts), ("predicted", result.predicted_facts))
            for f in facts}


def test_hybrid_saves_calls_and_agrees_with_the_llm(server):
    server.truth = TRUTH
    gold = load_facts(EXAMPLES / "report_gold.json")
    pred = load_facts(EXAMPLES / "report_predicted.jsonl")
    config = load_config(EXAMPLES / "config.yaml")
    llm = run_judge(gold, pred, config, LLMJudge("m", base_url=server.base_url))
    asked_llm = len(server.requests)
    server.requests.clear()
    hybrid = run_judge(gold, pred, config,
                       HybridJudge(RulesJudge(), LLMJudge("m", base_url=server.base_url)))
    # the one fact of a type the other side lacks is the negative without a call
    unasked = [f["id"]
            for f in llm.gold_facts + llm.predicted_facts if "no judge call made" in f["factjudge"]["description"]]
    assert len(unasked) == 1
    questions = len(TRUTH) - len(unasked)
    assert llm.usage.llm_calls == asked_llm == questions
    saved = hybrid.usage.llm_calls_saved
    assert 0 < saved < questions  # exact matches only: near misses and negatives go to the LLM
    assert hybrid.usage.llm_calls == len(server.requests) == questions - saved
    assert statuses(hybrid) == statuses(llm)
    reasons = [f["factjudge"]["reasoning"] or ""
            for f in hybrid.gold_facts + hybrid.predicted_facts if f["factjudge"]["in_scope"]]
    assert sum(r.startswith("[decided by the rules judge") for r in reasons) == saved
    assert sum(r.startswith("[decided by the LLM judge]") for r in reasons) == questions - saved


def test_hybrid_warms_up_with_the_first_question_that_needs_the_llm(server):
    # g1/p1 are an exact match the rules settle; g2, g3 (and p2, p3) need the LLM
    gold = [{"id": "g1", "fact_type": "t", "v": "alpha"}, {"id": "g2", "fact_type": "t", "v": "beta"},
            {"id": "g3", "fact_type": "t", "v": "gamma"}]
    pred = [{"id": "p1", "fact_type": "t", "v": "alpha"}, {"id": "p2", "fact_type": "t", "v": "betta"},
            {"id": "p3", "fact_type": "t", "v": "delta"}]
    server.delay = 0.2
    received_before_first_answer = {}
    base = server.responder

    def record(req):  # runs after the server's delay
        d = describe(req)[0]
        received_before_first_answer.setdefault(d, sum(describe(r)[0] == d for r in server.requests))
        return base(req)
    server.responder = record
    result = run_judge(gold, pred, {}, HybridJudge(RulesJudge(), LLMJudge("m", base_url=server.base_url)))
    assert result.usage.llm_calls_saved == 2 and result.usage.llm_calls == 4
    assert received_before_first_answer == {"gold": 1, "predicted": 1}
