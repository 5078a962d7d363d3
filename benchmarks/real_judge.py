"""The LLM judge's quality and cost with a real model (issue #21 items 4 and 10): ``calibrate``
on the builtin calibration set against a running OpenAI-compatible server, for each judge kind
(``llm``, ``hybrid``) and each ``--reasoning`` (``full``, ``brief``, ``none``), printing precision,
recall and Cohen's kappa of links, ERROR lines, requests, generated tokens per request and seconds
per request.

Run, from the repository root, against llama.cpp's server (``xllamacpp``; tests/realserver.py
starts one: ``python tests/realserver.py GGUF PORT 1 4096 2``) with Qwen2.5-Coder-1.5B:

    PYTHONPATH=src python benchmarks/real_judge.py --base-url http://127.0.0.1:8089/v1 --model qwen
    PYTHONPATH=src python benchmarks/real_judge.py ... --per-category 4 --judge llm --reasoning full none

``--per-category K`` judges K labels of each category (chosen by a seeded shuffle, the same every
run): the whole set is 259 labels, 518 questions, about 50 minutes per setting at 5-8 s a question
on 2 cores. The response cache starts empty, so every setting asks every question. Seconds depend on the
machine and its load; generated tokens and the agreement figures do not.

``--link-policy either both`` scores each setting under each reconciliation policy (#23 item 4):
the policy is not in the prompt, so the second is answered from this run's response cache (a
temporary folder) and asks nothing.

A 1.5B model on a CPU is a lower bound on what an LLM judge does, not a recommendation: read the
figures as "what this model does", and calibrate the model you mean to use.
"""
from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from factjudge.evaluation.calibrate import Label, builtin_labels_path, calibrate, load_labels
from factjudge.judges.factory import JudgeSpec, build_judge
from factjudge.models import JudgeConfig

KINDS = ("llm", "hybrid")
REASONING = ("full", "brief", "none")
POLICIES = ("either", "both")


def sample(labels: list[Label], per_category: int | None, seed: int = 21) -> list[Label]:
    """``per_category`` labels of each category (all when None), by a seeded shuffle."""
    if per_category is None:
        return labels
    by_category: dict[str, list[Label]] = defaultdict(list)
    for label in labels:
        by_category[label.category or ""].append(label)
    rng = random.Random(seed)
    chosen: list[Label] = []
    for category in sorted(by_category):
        group = list(by_category[category])
        rng.shuffle(group)
        chosen += group[:per_category]
    return chosen


@dataclass
class Row:
    kind: str
    reasoning: str
    policy: str
    labels: int
    errors: int
    precision: float | None
    recall: float | None
    kappa: float | None
    requests: int
    saved: int
    completion_per_request: float
    seconds_per_request: float
    seconds: float


def run_one(labels: list[Label], kind: str, reasoning: str, policy: str, args: argparse.Namespace) -> Row:
    spec = JudgeSpec(kind=kind, models=(args.model,), base_url=args.base_url, cache_dir=args.cache_dir,
                     timeout=args.timeout, max_tokens=args.max_tokens, structured_output=args.structured_output)
    config = JudgeConfig(reasoning=reasoning, link_policy=policy)
    started = time.perf_counter()
    report = calibrate(labels, config, build_judge(spec, config), concurrency=args.concurrency)
    seconds = time.perf_counter() - started
    usage = report.usage
    calls = usage.llm_calls if usage else 0
    o = report.overall
    return Row(kind, reasoning, policy, report.labels, report.errors, o.precision, o.recall, o.kappa, calls,
               usage.llm_calls_saved if usage else 0,
               (usage.completion_tokens / calls) if usage and calls else 0.0,
               seconds / calls if calls else 0.0, seconds)


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="qwen")
    parser.add_argument("--judge", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--reasoning", nargs="+", choices=REASONING, default=list(REASONING))
    parser.add_argument("--link-policy", nargs="+", choices=POLICIES, default=["either"])
    parser.add_argument("--per-category", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--structured-output", default="json_schema")
    args = parser.parse_args()
    args.cache_dir = Path(tempfile.mkdtemp(prefix="real_judge-"))
    labels = sample(load_labels(builtin_labels_path()), args.per_category)
    print(f"{len(labels)} labels of the builtin calibration set; model {args.model} at {args.base_url}")
    print("judge   reasoning  policy  labels errors  precision recall kappa  requests saved  gen.tok/req  s/req"
          "   total s")
    for kind in args.judge:
        for reasoning in args.reasoning:
            for policy in args.link_policy:
                r = run_one(labels, kind, reasoning, policy, args)
                print(f"{r.kind:<7} {r.reasoning:<10} {r.policy:<7} {r.labels:>6} {r.errors:>6}  "
                      f"{fmt(r.precision):>9} {fmt(r.recall):>6} {fmt(r.kappa):>5}  {r.requests:>8} {r.saved:>5}  "
                      f"{r.completion_per_request:>11.1f} {r.seconds_per_request:>6.2f} {r.seconds:>9.1f}", flush=True)


if __name__ == "__main__":
    main()
