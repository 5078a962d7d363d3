"""What the LLM judge computes per question, counted (issue #39: the client's CPU per call).

The shared prefix of a direction is built once; each question's own message once, however
often the question is counted (its prompt budget), keyed (the response cache) and sent."""
from __future__ import annotations

from scripted_server import ScriptedServer

from factjudge import LLMJudge, ResponseCache, run_judge
from factjudge.judges.llm import Transport, prompts

GOLD = [{"id": f"g{i}", "fact_type": "revenue", "company": f"Co {i}", "value": f"{i},000"} for i in range(6)]
PRED = [{"id": f"p{i}", "fact_type": "revenue", "company": f"Co {i}", "value": f"{i}000"} for i in range(6)]


def test_each_question_s_message_is_built_once_and_each_prefix_once(monkeypatch, tmp_path):
    built = {"subject": 0, "prefix": 0}
    subject_message, prefix_messages = prompts.subject_message, prompts.prefix_messages

    def counted_subject(*args, **kwargs):
        built["subject"] += 1
        return subject_message(*args, **kwargs)

    def counted_prefix(*args, **kwargs):
        built["prefix"] += 1
        return prefix_messages(*args, **kwargs)

    monkeypatch.setattr(prompts, "subject_message", counted_subject)
    monkeypatch.setattr(prompts, "prefix_messages", counted_prefix)
    truth = {**{("gold", f"g{i}"): f"p{i}" for i in range(6)}, **{("predicted", f"p{i}"): f"g{i}" for i in range(6)}}
    with ScriptedServer(truth=truth) as server:
        judge = LLMJudge("m", base_url=server.base_url, cache=ResponseCache(tmp_path / "cache"),
                         transport=Transport(timeout=30))
        result = run_judge(GOLD, PRED, {}, judge, concurrency=4)
        assert result.metrics.f1 == 1.0
        assert len(server.requests) == 12
    # counted, keyed twice (looked up, stored) and sent: built once each
    assert built == {"subject": 12, "prefix": 2}
