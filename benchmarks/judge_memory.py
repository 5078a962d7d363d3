"""Peak memory of ``factjudge judge`` on one large document, against the size of its input files.

Target (issue 11): peak RSS under 10x the input files' size. The facts are realistic finance
facts whose predictions match their gold fact after normalisation, so the rules judge's indexes
find them without fuzzy search and the run measures memory, not matching speed.
Run: python benchmarks/judge_memory.py [--facts 100000]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import report


def write(path: Path, prefix: str, n: int, predicted: bool) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            value = 1000 + i * 0.1
            fact = {"id": f"{prefix}{i}", "fact_type": f"metric_{i % 50}", "entity": f"Company {i}",
                    "period": "fiscal 2023" if predicted else "FY2023",
                    "value": f"${value:.1f} million" if predicted else f"{value:,.1f}",
                    "unit": "USD" if predicted else "USD million",
                    "source": f"annual report {2023}, page {i % 300}, table {i % 7}"}
            fh.write(json.dumps(fact) + "\n")


def startup_rss() -> int:
    """Peak RSS of a factjudge process that loads its modules and does nothing else (run first:
    RUSAGE_CHILDREN keeps the largest child's)."""
    subprocess.run([sys.executable, "-m", "factjudge", "--version"], capture_output=True, check=True)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=100_000, help="facts per side")
    args = ap.parse_args()
    rows = []
    base = startup_rss()
    with tempfile.TemporaryDirectory() as tmp:
        gold, pred, out = Path(tmp) / "gold.jsonl", Path(tmp) / "pred.jsonl", Path(tmp) / "out.json"
        write(gold, "g", args.facts, False)
        write(pred, "p", args.facts, True)
        size = gold.stat().st_size + pred.stat().st_size
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "factjudge", "judge", str(gold), str(pred), "-o", str(out),
                               "-q"], capture_output=True, text=True)
        seconds = time.perf_counter() - start
        assert proc.returncode == 0, proc.stderr
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # kB on Linux
        result = json.loads(out.read_text())
        assert result["metrics"]["f1"] == 1.0, result["metrics"]
        rows.append(("input", f"{size / 1e6:,.1f} MB ({args.facts:,} gold + {args.facts:,} predicted facts)"))
        rows.append(("output", f"{out.stat().st_size / 1e6:,.1f} MB"))
        rows.append(("peak RSS", f"{peak / 1e6:,.0f} MB = {peak / size:.1f}x the input (target < 10x)"))
        rows.append(("of which", f"{base / 1e6:,.0f} MB is the interpreter and imports (factjudge "
                                 f"--version); the rest is {(peak - base) / size:.1f}x the input"))
        rows.append(("time", f"{seconds:.1f} s"))
    report("factjudge judge on one large document (rules judge)", rows)


if __name__ == "__main__":
    main()
