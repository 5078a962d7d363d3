"""Client overhead of the LLM judge: 2,000 judge calls at concurrency 32 against a scripted
OpenAI-compatible server (own process, asyncio) that answers after 200 ms.

Prints wall time against the ideal (calls x delay / concurrency), the ratio, and the client's CPU
milliseconds per call. Targets: within 1.10x of ideal, under 5 ms CPU per call.
Run: python benchmarks/llm_overhead.py [--calls 2000] [--concurrency 32] [--delay 0.2]
"""
from __future__ import annotations

import argparse
import asyncio
import time

from _common import ServerProcess, report, synthetic_document

from factjudge import LLMJudge, run_judge_async


async def run(base_url: str, calls: int, concurrency: int, warmup: bool) -> tuple[float, float, int]:
    per_doc = 10  # 10 gold + 10 predicted facts: 20 calls per document
    docs = [synthetic_document(per_doc, seed=i) for i in range(calls // (2 * per_doc))]
    judge = LLMJudge("bench", base_url=base_url, warmup=warmup)
    limiter = asyncio.Semaphore(concurrency)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    results = await asyncio.gather(*(run_judge_async(g, p, {}, judge, limiter=limiter) for g, p in docs))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    await judge.aclose()
    made = sum(r.usage.llm_calls for r in results)
    assert all(r.metrics.f1 == 1.0 for r in results), "the scripted server should match everything"
    return wall, cpu, made


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--delay", type=float, default=0.2)
    args = ap.parse_args()
    with ServerProcess(args.delay) as server:
        for warmup in (False, True):
            wall, cpu, made = asyncio.run(run(server.base_url, args.calls, args.concurrency, warmup))
            ideal = made * args.delay / args.concurrency
            report(f"LLM judge overhead, warm-up {'on' if warmup else 'off'}", [
                ("calls", f"{made} at concurrency {args.concurrency}, server delay {args.delay * 1000:.0f} ms"),
                ("wall", f"{wall:.2f} s (ideal {ideal:.2f} s) -> ratio {wall / ideal:.3f} (target <= 1.10)"),
                ("client CPU", f"{cpu * 1000 / made:.2f} ms per call (target < 5)"),
            ])


if __name__ == "__main__":
    main()
