"""Hybrid vs pure LLM judge on the bundled example, against the scripted server answering the
hand-labelled truth (tests/example_truth.py): calls made, calls saved, verdicts that differ.
Run: python benchmarks/hybrid_example.py
"""
from __future__ import annotations

from _common import ROOT, report
from example_truth import TRUTH
from scripted_server import ScriptedServer

from factjudge import LLMJudge, load_config, load_facts, run_judge
from factjudge.judges import HybridJudge
from factjudge.judges.rules.judge import RulesJudge


def verdicts(result):
    return {(side, f["id"]): (f["factjudge"]["status"], tuple(f["factjudge"]["matched_ids"]))
            for side, facts in (("gold", result.gold_facts), ("predicted", result.predicted_facts))
            for f in facts}


def main() -> None:
    ex = ROOT / "examples"
    gold, pred = load_facts(ex / "report_gold.json"), load_facts(ex / "report_predicted.jsonl")
    config = load_config(ex / "config.yaml")
    with ScriptedServer(truth=TRUTH) as server:
        llm = run_judge(gold, pred, config, LLMJudge("m", base_url=server.base_url))
        hybrid = run_judge(gold, pred, config,
                           HybridJudge(RulesJudge(), LLMJudge("m", base_url=server.base_url)))
    a, b = verdicts(llm), verdicts(hybrid)
    diff = [f"{k}: llm {a[k]} vs hybrid {b[k]}" for k in a if a[k] != b[k]]
    report("hybrid judge on the bundled example", [
        ("pure LLM", f"{llm.usage.llm_calls} calls, F1 {llm.metrics.f1:.3f}"),
        ("hybrid", f"{hybrid.usage.llm_calls} calls, {hybrid.usage.llm_calls_saved} decided by rules "
                   f"({hybrid.usage.llm_calls_saved / (llm.usage.llm_calls or 1):.0%} saved), "
                   f"F1 {hybrid.metrics.f1:.3f}"),
        ("verdicts that differ", str(len(diff))),
        *[("  ", d) for d in diff],
    ])


if __name__ == "__main__":
    main()
