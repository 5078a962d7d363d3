"""Prompt tokens per judged fact as documents grow, without and with shortlist_top_k, and how much
of each request is byte-identical across the calls of one direction (the response schema and the
message prefix a provider can cache). No call is made.
Run: python benchmarks/prompt_growth.py [--top-k 20]
"""
from __future__ import annotations

import argparse
import json
import os

from _common import report, synthetic_document

from factjudge import LLMJudge
from factjudge.core.scope import compared_fields
from factjudge.judges.base import JudgePass
from factjudge.judges.llm import Sampling
from factjudge.models import JudgeConfig


def measure(n: int, config: JudgeConfig, judge: LLMJudge) -> tuple[float, float, float]:
    """Tokens per judged fact, byte-identical share of the requests, share of calls shortlisted."""
    gold, pred = synthetic_document(n)
    fields, _ = compared_fields(gold, pred, config)
    tokens = calls = shortlisted = 0
    identical = total_bytes = 0
    for direction, subjects, cands in (("gold", gold, pred), ("predicted", pred, gold)):
        opened = judge.open(JudgePass(direction, cands, config, fields))
        bodies = []
        for fact in subjects:
            asked = opened.asked(fact)
            call = judge.prepare(asked)
            calls += 1
            tokens += call.prompt_tokens
            shortlisted += call.asked is not asked
            bodies.append(json.dumps(opened.batch_request(fact).body, ensure_ascii=False))
        # what every request of this direction shares, byte for byte, from the start
        common = len(os.path.commonprefix(bodies)) if len(bodies) > 1 else 0
        identical += common * len(bodies)
        total_bytes += sum(map(len, bodies))
    return tokens / calls, identical / total_bytes, shortlisted / calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--top-k", type=int, default=20)
    args = ap.parse_args()
    # never called; a hosted provider's requests (the id is pinned only on self-hosted servers)
    judge = LLMJudge("gpt-4o-mini", base_url="http://127.0.0.1:9/v1", sampling=Sampling(pin_id="never"))
    rows = []
    for n in (10, 100, 1000):
        full, full_same, cut = measure(n, JudgeConfig(), judge)
        short, short_same, _ = measure(n, JudgeConfig(shortlist_top_k=args.top_k), judge)
        rows.append((f"{n:>5} facts/side",
                     f"default {full:>9,.0f} tokens/fact, {full_same:5.1%} of request bytes identical "
                     f"across a direction ({cut:4.0%} shortlisted) | shortlist_top_k={args.top_k} "
                     f"{short:>7,.0f} tokens/fact ({short_same:5.1%} identical)"))
    report(f"prompt tokens per judged fact (counter: {judge.tokens.name})", rows)
    print("  (identical bytes: the response schema and the message prefix, what a provider caches;\n"
          "   1000 candidates exceed the 997-value enum limit of strict structured outputs, so the\n"
          "   default run shortlists there and every shortlisted request differs)")


if __name__ == "__main__":
    main()
