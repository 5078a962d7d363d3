"""Shared by the eval tests: five documents whose outcome is easy to work out by hand, the CLI
as a real process, and file helpers."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = {"entity_types": ["revenue", "ceo"]}


def fact(fid, fact_type="revenue", **kw):
    return {"id": fid, "fact_type": fact_type, **kw}


# Five documents whose outcome is easy to work out by hand (ids are unique across documents so
# one truth table answers for all of them).
DOCS = [
    {"doc_id": "A",
     "gold_facts": [fact("a-g1", value="1"), fact("a-g2", value="2"), fact("a-g3", "ceo", name="X")],
     "predicted_facts": [fact("a-p1", value="1"), fact("a-p2", "ceo", name="X"),
                         fact("a-p3", "ceo", name="Y")]},
    {"doc_id": "B",
     "gold_facts": [fact("b-g1", value="5"), fact("b-g2", "ceo", name="Z"),
                    fact("b-g3", "auditor", name="KPMG")],
     "predicted_facts": [fact("b-p1", value="5")]},
    {"doc_id": "C", "gold_facts": [], "predicted_facts": [fact("c-p1", value="7")]},
    {"doc_id": "D", "gold_facts": [fact("d-g1", value="8")], "predicted_facts": [fact("d-p1", value="9")]},
    {"doc_id": "E", "gold_facts": [fact("e-g1", value="3")],
     "predicted_facts": [fact("e-p1", value="3"), fact("e-p2", value="3.0")]},
]
TRUTH = {
    ("gold", "a-g1"): "a-p1", ("predicted", "a-p1"): "a-g1",              # TP both ways
    ("gold", "a-g3"): "a-p2", ("predicted", "a-p2"): "a-g3",              # a-g2 FN, a-p3 FP
    ("gold", "b-g1"): "b-p1", ("predicted", "b-p1"): "b-g1",              # b-g2 FN, b-g3 out of scope
    ("gold", "d-g1"): "d-p1",                                             # rejected by d-p1: FN + FP
    ("predicted", "e-p1"): "e-g1", ("predicted", "e-p2"): "e-g1",         # e-g1 promoted, e-p2 duplicate
}
CALLS = 6 + 3 + 0 + 2 + 3  # C has no gold: its predicted fact is FP without a call


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def run_cli(*args, cache_dir=None, **kw):
    """The CLI as a real process; the response cache never goes to the user's cache dir."""
    env = {**os.environ, "FACTJUDGE_CACHE_DIR": str(cache_dir or tempfile.mkdtemp())}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "factjudge", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=180, **kw)


def llm_args(server, cache_dir):
    return ["--model", "m", "--base-url", server.base_url, "--cache-dir", cache_dir]


def read_lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def without_usage(obj):
    """What two runs of the same inputs share: all but what they cost and when they ran."""
    if isinstance(obj, dict):
        return {k: without_usage(v) for k, v in obj.items() if k != "usage" and k != "created"}
    if isinstance(obj, list):
        return [without_usage(v) for v in obj]
    return obj


def outputs(out):
    return {name: (out / name).read_bytes()
            for name in ("results.jsonl", "summary.json", "report.md", "report.html")}


