"""Second run of the same evaluation with the response cache: calls made (target 0) and the
wall-time ratio of the second run to the first.
Run: python benchmarks/cache_rerun.py [--facts 200] [--delay 0.2]
"""
from __future__ import annotations

import argparse
import tempfile
import time

from _common import ServerProcess, report, synthetic_document

from factjudge import LLMJudge, run_judge
from factjudge.judges.llm.cache import ResponseCache


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=200)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=32)
    args = ap.parse_args()
    gold, pred = synthetic_document(args.facts)
    with ServerProcess(args.delay) as server, tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(tmp)
        runs = []
        for _ in range(2):
            judge = LLMJudge("bench", base_url=server.base_url, cache=cache)
            t0 = time.perf_counter()
            result = run_judge(gold, pred, {}, judge, concurrency=args.concurrency)
            runs.append((time.perf_counter() - t0, result))
        (t1, r1), (t2, r2) = runs
        same = r1.to_dict() | {"usage": None} == r2.to_dict() | {"usage": None}
        report("response cache: second run of the same evaluation", [
            ("first run", f"{r1.usage.llm_calls} calls, {t1:.2f} s"),
            ("second run", f"{r2.usage.llm_calls} calls (target 0), {r2.usage.cache_hits} cache hits, "
                           f"{t2:.3f} s"),
            ("wall ratio", f"{t2 / t1:.4f} (second / first)"),
            ("same verdicts", str(same)),
        ])


if __name__ == "__main__":
    main()
