"""``factjudge eval`` with a 40 KB alias file over 2,000 documents (issue 32, item 4): the size
of ``results.jsonl``, wall time and peak RSS, run as the real command in its own process.

The run's config (with its alias groups) was copied into every result line, and the groups were
serialised again per document for the rules judge's knowledge key: the results file grew by the
alias file per document and the run slowed down with it. The config is now kept once per run
(summary.json, run.json) and the groups are keyed once per config.

Run: python benchmarks/alias_results.py [--docs 2000] [--facts 20] [--alias-kb 40]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import report
from eval_scale import write_dataset

# Measured on the 2-core VM before the change (9ad1cc5), same command and defaults.
BEFORE = {"results.jsonl MB": 202.7, "wall s": 83.3, "peak RSS MB": 467.8}


def write_aliases(path: Path, kb: int) -> int:
    """Alias groups of made-up names (none occurs in the data), ``kb`` kilobytes of CSV."""
    rows, size, i = [], 0, 0
    while size < kb * 1024:
        row = f"Alias Company {i} Ltd,ACME Holding {i},Synonym Group {i} plc\n"
        rows.append(row)
        size += len(row)
        i += 1
    path.write_text("".join(rows), encoding="utf-8")
    return i


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--facts", type=int, default=20)
    ap.add_argument("--alias-kb", type=int, default=40)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        groups = write_aliases(tmp / "aliases.csv", args.alias_kb)
        (tmp / "config.yaml").write_text("aliases_file: aliases.csv\n", encoding="utf-8")
        data = tmp / "dataset.jsonl"
        write_dataset(data, args.docs, args.facts)
        out = tmp / "out"
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "factjudge", "eval", str(data), "-c",
                                 str(tmp / "config.yaml"), "-o", str(out), "-q"])
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise SystemExit(f"eval failed with exit code {os.waitstatus_to_exitcode(status)}")
        now = {"results.jsonl MB": (out / "results.jsonl").stat().st_size / 1e6, "wall s": wall,
               "peak RSS MB": usage.ru_maxrss / 1024}
        f1 = json.loads((out / "summary.json").read_text())["micro"]["f1"]
        report(f"eval, {args.docs} documents x {args.facts} facts, {args.alias_kb} KB alias file "
               f"({groups} groups), F1 {f1:.4f}",
               [(k, f"{v:,.1f} (before: {BEFORE[k]:,.1f})") for k, v in now.items()])


if __name__ == "__main__":
    main()
