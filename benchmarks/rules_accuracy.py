"""Accuracy of the rules judge on the hand-labelled set (tests/data/rules_labelled.json).

Run: /work/venv/bin/python benchmarks/rules_accuracy.py [--verbose]
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from factjudge.io.config import parse_config
from factjudge.judges.base import JudgeTask
from factjudge.judges.rules.judge import RulesJudge

LABELLED = Path(__file__).resolve().parent.parent / "tests" / "data" / "rules_labelled.json"


def load_cases(path: Path = LABELLED) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["cases"]


def task_for(case: dict[str, Any]) -> JudgeTask:
    return JudgeTask(case["direction"], case["subject"], case["candidates"],
                     parse_config(case.get("config")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="print every case's reasoning")
    args = parser.parse_args()
    judge = RulesJudge()
    cases = load_cases()
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    wrong = []
    for case in cases:
        verdict, exact = judge.decide(task_for(case))
        want = case["expected"]
        ok = (verdict.status, verdict.matched_id) == (want["status"], want["matched_id"])
        ok = ok and ("exact" not in want or want["exact"] == exact)
        group = case["rule"].split("/")[0]
        total[group] += 1
        right[group] += ok
        if not ok:
            wrong.append((case, verdict, exact))
        if args.verbose:
            print(f"[{'ok' if ok else 'WRONG'}] {case['name']}: {verdict.reasoning}")
    for group in sorted(total):
        print(f"{group:<10} {right[group]:>3}/{total[group]:<3} {right[group] / total[group]:.1%}")
    n, k = sum(total.values()), sum(right.values())
    print(f"{'all':<10} {k:>3}/{n:<3} {k / n:.1%}")
    for case, verdict, exact in wrong:
        print(f"WRONG {case['name']!r}: expected {case['expected']}, got {verdict.status} "
              f"{verdict.matched_id} exact={exact}\n  {verdict.reasoning}")
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
