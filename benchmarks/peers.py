"""``factjudge eval`` beside Stickler on the speed issue's input (issue 39), whole processes, side by side.

The input: 1,000 documents x 10 gold + 10 predicted facts of four fact types, per gold fact 50%
restated verbatim, 30% in surface variants, 10% with one field wrong, 10% replaced by a spurious
fact (``_common.write_peer_dataset``). Each tool runs as its own process, ``--repeat`` times; the
figures are the wall time and the CPU time (user + sys of the child: the machine may be shared).

* factjudge: ``factjudge eval DATA -o OUT`` (rules judge, results, summary with intervals, report.md,
  report.html, review.html; ``--workers auto``: a process per core), and the same with
  ``--workers 1``, run alternately, with factjudge's modules compiled as an installed package has
  them. Limit: 2.5 s wall, and 3x ahead of Stickler.
* Stickler (``stickler-eval`` on PyPI, Hungarian matching over field similarity): never a dependency
  of factjudge. It runs in its own virtualenv, ``--stickler-venv`` (default
  /tmp/factjudge-bench-stickler), created with ``pip install stickler-eval`` when ``--install``
  is given; without one the row says it was skipped.

Run: python benchmarks/peers.py [--docs 1000] [--facts 10] [--repeat 2] [--install]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import report, user_env, write_peer_dataset

LIMIT_SECONDS = 2.5
LIMIT_RATIO = 3.0

# Stickler's side: one model per fact (every field optional, fact_type compared exactly, the others
# by Levenshtein similarity), a document's facts as a list matched by the Hungarian algorithm
# (compare_with per document: its bulk evaluator, which also documents every field comparison,
# measured 4x slower here).
STICKLER_CODE = r'''
import json, sys
from typing import List, Optional
from stickler import ComparableField, StructuredModel
from stickler.comparators import ExactComparator, LevenshteinComparator

def text():
    return ComparableField(comparator=LevenshteinComparator(), threshold=0.7, default=None)

class Fact(StructuredModel):
    match_threshold = 0.7
    fact_type: str = ComparableField(comparator=ExactComparator(), threshold=1.0)
    company: Optional[str] = text()
    period: Optional[str] = text()
    value: Optional[str] = text()
    unit: Optional[str] = text()
    person: Optional[str] = text()
    city: Optional[str] = text()

class Doc(StructuredModel):
    facts: List[Fact] = ComparableField(weight=1.0)

def doc(facts):
    return Doc(facts=[Fact(**{k: v for k, v in f.items() if k != "id"}) for f in facts])

totals = {"tp": 0, "fp": 0, "fn": 0, "fd": 0}
with open(sys.argv[1], encoding="utf-8") as fh:
    for line in fh:  # compare_with per document: Stickler's cheapest whole comparison
        d = json.loads(line)
        result = doc(d["gold_facts"]).compare_with(doc(d["predicted_facts"]), include_confusion_matrix=True)
        overall = result["confusion_matrix"]["fields"]["facts"]["overall"]
        for key in totals:
            totals[key] += overall.get(key, 0)
print(json.dumps(totals))
'''


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of one process."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:4])}... failed with status {status}")
    return wall, usage.ru_utime + usage.ru_stime


def stickler_python(venv: Path, install: bool) -> Path | None:
    python = venv / "bin" / "python"
    if not python.exists() and install:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "stickler-eval"], check=True)
    if not python.exists():
        return None
    ok = subprocess.run([str(python), "-c", "import stickler"], capture_output=True).returncode == 0
    return python if ok else None


def best(runs: list[tuple[float, float]]) -> str:
    return " / ".join(f"{w:.2f} s wall, {c:.2f} s CPU" for w, c in runs)


def auto_workers_here(docs: int) -> int:
    from factjudge.evaluation.workers import auto_workers
    from factjudge.judges.rules.judge import RulesJudge

    return auto_workers(RulesJudge(), docs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--facts", type=int, default=10, help="gold facts (and predicted facts) per document")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--stickler-venv", type=Path, default=Path("/tmp/factjudge-bench-stickler"))
    ap.add_argument("--install", action="store_true", help="create the Stickler venv when it is missing")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data = tmp / "peer.jsonl"
        write_peer_dataset(data, args.docs, args.facts)
        env = user_env()

        def eval_run(i: int, *extra: str) -> tuple[float, float]:
            return timed([sys.executable, "-m", "factjudge", "eval", str(data), "-o", str(tmp / f"out{i}{extra}"),
                          "-q", *extra], env)

        # alternately: the machine may be shared
        pairs = [(eval_run(i), eval_run(i, "--workers", "1")) for i in range(args.repeat)]
        ours, one = [a for a, _ in pairs], [b for _, b in pairs]
        python = stickler_python(args.stickler_venv, args.install)
        theirs = []
        if python is not None:
            script = tmp / "stickler_run.py"
            script.write_text(STICKLER_CODE, encoding="utf-8")
            theirs = [timed([str(python), str(script), str(data)]) for _ in range(args.repeat)]
    facts = args.docs * args.facts * 2
    wall, cpu = min(w for w, _ in ours), min(c for _, c in ours)
    rows = [("input", f"{args.docs:,} documents x {args.facts} + {args.facts} facts ({facts:,} facts)"),
            ("factjudge eval", f"{best(ours)} (--workers auto: {auto_workers_here(args.docs)} process(es))"),
            ("  vs limit", f"best wall {wall:.2f} s = {wall / LIMIT_SECONDS:.2f}x the {LIMIT_SECONDS} s limit"),
            ("factjudge eval --workers 1", f"{best(one)}; best wall {min(w for w, _ in one):.2f} s = "
                                           f"{min(w for w, _ in one) / LIMIT_SECONDS:.2f}x the limit")]
    if theirs:
        s_wall, s_cpu = min(w for w, _ in theirs), min(c for _, c in theirs)
        rows += [("Stickler", best(theirs)),
                 ("  ratio", f"Stickler / factjudge: {s_wall / wall:.2f}x wall, {s_cpu / cpu:.2f}x CPU "
                             f"(limit: >= {LIMIT_RATIO:.0f}x)")]
    else:
        rows.append(("Stickler", f"skipped: no Stickler venv at {args.stickler_venv} (--install creates it)"))
    report("factjudge eval beside Stickler (issue 39)", rows)


if __name__ == "__main__":
    main()
