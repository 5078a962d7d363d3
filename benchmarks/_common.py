"""Helpers shared by the benchmarks: the scripted server in its own process, synthetic facts."""
from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

SERVER_CODE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from scripted_server import ScriptedServer, answer, describe

def respond(req):
    direction, subject, cands = describe(req)
    # deterministic: the candidate with the same number, if any
    num = subject[1:]
    match = next((c for c in cands if c[1:] == num), None)
    return answer(direction, subject, match)

s = ScriptedServer(responder=respond, delay=float(sys.argv[2])).start()
print(s.base_url, flush=True)
sys.stdin.read()
"""


class ServerProcess:
    """The scripted OpenAI-compatible server in a separate process, so its CPU is not ours."""

    def __init__(self, delay: float) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER_CODE, str(ROOT / "tests"), str(delay)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.base_url = self.proc.stdout.readline().strip()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.stdin.close()
        self.proc.wait(10)


def synthetic_document(n: int, seed: int = 0, types: int = 5) -> tuple[list[dict], list[dict]]:
    """n gold and n predicted facts; gold g<i> and predicted p<i> describe the same fact."""
    rng = random.Random(seed)
    gold, pred = [], []
    for i in range(n):
        fact_type = f"type_{i % types}"
        entity = f"Company {rng.randint(1, 500)}"
        value = round(rng.uniform(1, 5000), 1)
        gold.append({"id": f"g{i}", "fact_type": fact_type, "entity": entity, "period": "FY2023",
                     "value": f"{value:,}", "unit": "USD million"})
        pred.append({"id": f"p{i}", "fact_type": fact_type, "entity": entity, "period": "fiscal 2023",
                     "value": f"${value} million", "unit": "USD"})
    return gold, pred


def report(title: str, rows: list[tuple[str, str]]) -> None:
    print(f"\n== {title}")
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")


def dump(path: Path, data: object) -> None:
    path.write_text(json.dumps(data), encoding="utf-8")


def now() -> float:
    return time.perf_counter()
