"""Helpers shared by the benchmarks: the scripted server in its own process, synthetic facts."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def user_env(src: str | None = None, **extra: str) -> dict[str, str]:
    """This environment as a user's installed factjudge runs in it, for a benchmarked process
    (``src``: another checkout's ``src`` folder, put on PYTHONPATH): its modules compiled once
    (pip compiles a package's modules when it installs it). Some sandboxes and containers set
    PYTHONDONTWRITEBYTECODE: every process then compiled ~100 of factjudge's modules again,
    0.15-0.2 s of a 1,000-document run (measured)."""
    import factjudge

    package = Path(src) / "factjudge" if src else Path(factjudge.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if src:
        env["PYTHONPATH"] = src
    return {**env, **extra}

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


# The speed issue's input (issue 39): four fact types, per gold fact of a document 50% restated
# verbatim, 30% in surface variants (another notation of the same value), 10% with one field
# wrong, 10% replaced by a spurious fact (so the gold fact is missed).
_COMPANIES = [f"{a} {b}" for a in ("Atlas", "Vertex", "Harbor", "Orion", "Summit", "Granite", "Falcon",
                                   "Meridian", "Redwood", "Titan") for b in ("Systems", "Energy", "Foods",
                                                                            "Motors", "Pharma", "Bank")]
_PEOPLE = ["Anna Cook", "Tim Schmidt", "Maria Rossi", "John Nakamura", "Wei Okafor", "Priya Larsen"]
_CITIES = ["Berlin", "Lyon", "Osaka", "Austin", "Leeds", "Porto", "Turin", "Dallas"]


def _peer_fact(rng: random.Random, i: int) -> tuple[dict[str, str], dict[str, str]]:
    """One gold fact and its surface variant (same meaning, another notation)."""
    kind = i % 4
    company = rng.choice(_COMPANIES)
    year = rng.randint(2015, 2024)
    if kind == 0:
        millions = rng.randint(10, 99_999) / 10
        gold = {"fact_type": "revenue", "company": f"{company} Inc.", "period": f"FY{year}",
                "value": f"{millions:,.1f}", "unit": "USD million"}
        variant = {**gold, "company": company, "period": f"fiscal year {year}",
                   "value": f"${millions} million", "unit": "USD"}
    elif kind == 1:
        person = rng.choice(_PEOPLE)
        gold = {"fact_type": "ceo", "company": f"{company} Corp.", "person": person}
        variant = {**gold, "company": company.upper(), "person": person.lower()}
    elif kind == 2:
        heads = rng.randint(50, 200_000)
        gold = {"fact_type": "headcount", "company": company, "period": f"FY{year}", "value": f"{heads:,}"}
        variant = {**gold, "period": f"FY {year}", "value": str(heads)}
    else:
        gold = {"fact_type": "headquarters", "company": f"{company} Ltd", "city": rng.choice(_CITIES)}
        variant = {**gold, "company": company, "city": gold["city"].upper()}
    return gold, variant


def _one_field_wrong(rng: random.Random, fact: dict[str, str]) -> dict[str, str]:
    wrong = dict(fact)
    if "value" in fact:
        wrong["value"] = f"{rng.randint(1, 9) * 1111}"
    elif "person" in fact:
        wrong["person"] = "Somebody Else"
    else:
        wrong["city"] = "Nowhere"
    return wrong


def peer_document(n: int, seed: int) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """n gold and n predicted facts of the speed issue's mix (see above), deterministic per seed."""
    rng = random.Random(seed)
    gold, pred = [], []
    for i in range(n):
        g, variant = _peer_fact(rng, i)
        roll = rng.random()
        if roll < 0.5:
            p = dict(g)
        elif roll < 0.8:
            p = variant
        elif roll < 0.9:
            p = _one_field_wrong(rng, g)
        else:
            p, _ = _peer_fact(rng, i + 1)
        gold.append({"id": f"g{i}", **g})
        pred.append({"id": f"p{i}", **p})
    rng.shuffle(pred)
    return gold, pred


def write_peer_dataset(path: Path, docs: int, facts: int = 10) -> None:
    """The speed issue's input as one dataset.jsonl: documents x facts gold + facts predicted."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(docs):
            gold, pred = peer_document(facts, seed=i)
            fh.write(json.dumps({"doc_id": f"d{i:06d}", "gold_facts": gold, "predicted_facts": pred}) + "\n")
