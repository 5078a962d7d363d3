"""The exact bytes the LLM judge sends, and its response-cache keys, pinned for fixed inputs.

Speed work on the request path (issue #39: prompts, bodies and cache keys built once per
direction instead of per call) must not change one byte on the wire nor one cache key: a
changed body is another prompt (other answers, other cached entries) and a changed key orphans
every answer users have cached. The golden file holds every body a scripted server received,
sorted (the calls run concurrently), and the keys the response cache stored, per case.
Regenerate it only for a deliberate prompt change: ``python tests/e2e/test_llm_request_bytes.py``.
"""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripted_server import Reply, ScriptedServer  # noqa: E402

from factjudge import LLMJudge, ResponseCache, run_judge  # noqa: E402
from factjudge.core.scope import compared_fields, in_scope_facts  # noqa: E402
from factjudge.evaluation.pipeline import directions  # noqa: E402
from factjudge.io.config import parse_config  # noqa: E402
from factjudge.judges.base import JudgePass  # noqa: E402
from factjudge.judges.llm import RetryPolicy, Sampling, Transport  # noqa: E402

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "llm_request_bytes.json"

# cells of every kind: bare strings, numbers, empty (a field one fact lacks), quoted strings
# (a separator, a leading quote, a number-like string), JSON values, non-ASCII text
GOLD = [
    {"id": "g1", "fact_type": "revenue", "company": "Atlas Inc.", "value": "1,200.5", "unit": "USD million"},
    {"id": "g2", "fact_type": "revenue", "company": "Vertex | Co", "value": 12, "unit": "USD"},
    {"id": "g3", "fact_type": "ceo", "company": "Orion", "person": "Zoë Müller"},
    {"id": "g4", "fact_type": "ceo", "company": "Falcon", "person": "\"Bo\" Li", "since": None},
]
PRED = [
    {"id": "p1", "fact_type": "revenue", "company": "Atlas", "value": "$1200.5 million", "unit": "USD"},
    {"id": "p2", "fact_type": "revenue", "company": "Vertex Co", "value": "12", "unit": "USD"},
    {"id": "p3", "fact_type": "ceo", "company": "ORION", "person": "zoë müller", "tags": ["a", 1]},
    {"id": "p4", "fact_type": "headcount", "company": "Falcon", "value": 5000},
]
TRUTH = {("gold", "g1"): "p1", ("gold", "g2"): "p2", ("gold", "g3"): "p3", ("gold", "g4"): None,
         ("predicted", "p1"): "g1", ("predicted", "p2"): "g2", ("predicted", "p3"): "g3",
         ("predicted", "p4"): None}

#: name: (judge config, Sampling arguments, whether g2's first answer is invalid (a re-ask))
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], bool]] = {
    "default": ({}, {}, False),
    "unpinned_same_type_reask": ({"candidates": "same_type"}, {"pin_id": "never"}, True),
    "prompt_schema_brief": ({"reasoning": "brief", "matching_rules": ["Units may differ."]},
                            {"structured_output": "none"}, False),
    "json_object_no_reasoning": ({"reasoning": "none", "fields": ["company", "value"]},
                                 {"structured_output": "json_object", "max_tokens": 300}, True),
}


class RecordingServer(ScriptedServer):
    """The scripted server, keeping each chat-completions body as the bytes received."""

    def __init__(self) -> None:
        super().__init__(truth=TRUTH)
        self.raw: list[str] = []

    async def _handle(self, request: web.Request) -> web.Response:
        self.raw.append((await request.read()).decode("utf-8"))
        return await super()._handle(request)


def capture(case: str, cache_dir: Path) -> dict[str, list[str]]:
    config, sampling, reask = CASES[case]
    with RecordingServer() as server:
        if reask:
            server.faults[("gold", "g2")] = [Reply(content='{"gold_fact_id": "g2"}')]
        cache = ResponseCache(cache_dir)
        judge = LLMJudge("m", base_url=server.base_url, sampling=Sampling(**sampling), cache=cache,
                         retry=RetryPolicy(retries=1, backoff=0.01), transport=Transport(timeout=30))
        run_judge(GOLD, PRED, config, judge, concurrency=4, doc_id="doc-1")
        cache.close()
        with sqlite3.connect(cache.path) as conn:
            stored = len(conn.execute("SELECT key FROM answers").fetchall())
    # the keys name the server's URL, port included: computed for a fixed one (no request sent)
    keys = cache_keys(config, sampling)
    assert stored == len(keys)  # what the live run stored is what is keyed here
    return {"bodies": sorted(server.raw), "cache_keys": keys}


def cache_keys(config: dict[str, Any], sampling: dict[str, Any]) -> list[str]:
    judge = LLMJudge("m", base_url="http://127.0.0.1:9/v1", sampling=Sampling(**sampling))
    cfg = parse_config(config)
    gold, pred = in_scope_facts(GOLD, cfg), in_scope_facts(PRED, cfg)
    fields, _ = compared_fields(gold, pred, cfg)
    keys = []
    for direction, subjects, candidates in directions(gold, pred):
        opened = judge.open(JudgePass(direction, candidates, cfg, fields, "doc-1"))
        keys += [r.custom_id for f in subjects if (r := opened.batch_request(f)) is not None]
    return sorted(keys)


@pytest.mark.filterwarnings("ignore:.*(carry|cannot match)")  # the inputs' own oddities, on purpose
@pytest.mark.parametrize("case", sorted(CASES))
def test_request_bodies_and_cache_keys_are_byte_for_byte_the_pinned_ones(case, tmp_path):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))[case]
    got = capture(case, tmp_path / "cache")
    assert len(got["bodies"]) == len(golden["bodies"])
    for sent, pinned in zip(got["bodies"], golden["bodies"], strict=True):
        assert sent == pinned
    assert got["cache_keys"] == golden["cache_keys"]


if __name__ == "__main__":  # regenerate the golden file (a deliberate prompt change only)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        data = {case: capture(case, Path(tmp) / case) for case in sorted(CASES)}
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}: " + ", ".join(f"{c} {len(d['bodies'])} bodies" for c, d in data.items()))
