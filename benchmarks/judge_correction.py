"""Coverage of the judge-corrected F1 interval (eval --judge-calibration) against the raw one, on
simulated runs: a synthetic extractor scored by a judge of known error rates, calibrated on labels
drawn from the same pairs (tests/judge_simulation.py). Prints, per setting, the share of seeded
simulations whose 95% interval holds the extractor's true F1, and the mean error of the point figures.

Run: python benchmarks/judge_correction.py [--runs 200] [--docs 100] [--resamples 1000] [--labels 200]
"""
from __future__ import annotations

import argparse
import statistics
import time

import _common  # noqa: F401  (puts tests/ on the path)
from judge_simulation import simulation

from factjudge.core.aggregate import bootstrap_ci, key_prf
from factjudge.core.correction import judge_corrected


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--docs", type=int, nargs="+", default=[30, 100])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--labels", type=int, nargs="+", default=[50, 200])
    args = parser.parse_args()
    print(f"{'docs':>5} {'labels':>6} {'corrected':>10} {'raw':>6} {'|err| corr':>10} {'|err| raw':>9} {'s':>6}")
    for docs in args.docs:
        for labels in args.labels:
            started = time.perf_counter()
            covered = raw_covered = 0
            err, raw_err = [], []
            for seed in range(args.runs):
                keys, errors, true_f1, _ = simulation(seed, docs=docs, labels=labels)
                if not errors.tp:
                    continue
                jc = judge_corrected(keys, errors, args.resamples, seed)
                raw = bootstrap_ci(keys, args.resamples, seed)["f1"]
                raw_f1 = key_prf([sum(c) for c in zip(*keys, strict=True)])["f1"]
                covered += jc.ci95["f1"][0] <= true_f1 <= jc.ci95["f1"][1]
                raw_covered += raw[0] <= true_f1 <= raw[1]
                err.append(abs(jc.f1 - true_f1))
                raw_err.append(abs(raw_f1 - true_f1))
            print(f"{docs:>5} {labels:>6} {covered / args.runs:>10.3f} {raw_covered / args.runs:>6.3f} "
                  f"{statistics.mean(err):>10.3f} {statistics.mean(raw_err):>9.3f} "
                  f"{time.perf_counter() - started:>6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
