"""End to end through a real OpenAI-compatible HTTP server on 127.0.0.1 and the real openai client."""
import json
import time

import pytest
from scripted_server import Reply, ScriptedServer, answer, describe, http_error, prompt_facts

from factjudge import LLMJudge, run_judge
from factjudge.judges import JudgeSetupError
from factjudge.judges.llm import RetryPolicy, Sampling, Transport
from factjudge.models import JudgeConfig

GOLD = [
    {"id": "g1", "fact_type": "revenue", "value": "12.5", "unit": "USD million"},
    {"id": "g2", "fact_type": "revenue", "value": "3.1", "unit": "USD million"},
    {"id": "g3", "fact_type": "ceo", "name": "Jane Doe"},
    {"id": "g4", "fact_type": "address", "text": "1 Main St"},
]
PRED = [
    {"id": "p1", "fact_type": "revenue", "value": "$12,500,000"},
    {"id": "p2", "fact_type": "ceo", "name": "J. Doe"},
    {"id": "p3", "fact_type": "address", "text": "1 Main Street"},
]
CONFIG = {"entity_types": ["revenue", "ceo"], "matching_rules": ["scale numbers before comparing"],
          "tolerances": {"value": {"relative": 0.01}}}


def judge_for(server, retries=4, warmup=True, **kw):
    return LLMJudge("scripted-model", base_url=server.base_url, retry=RetryPolicy(retries=retries, backoff=0.01),
                    transport=Transport(warmup=warmup), **kw)


def by_id(result):
    return {**{("gold", f["id"]): f for f in result.gold_facts},
            **{("predicted", f["id"]): f for f in result.predicted_facts}}


def test_prompt_layout_schema_and_scope(server):
    server.truth = {("gold", "g1"): "p1", ("predicted", "p1"): "g1"}
    # an OpenAI-style provider: one schema per direction (the id pinned is test_llm_answers.py's)
    result = run_judge(GOLD, PRED, CONFIG, judge_for(server, sampling=Sampling(pin_id="never")))
    # out-of-scope facts are never asked about, nor shown as candidates
    assert sorted(server.subjects("gold")) == ["g1", "g2", "g3"]
    assert sorted(server.subjects("predicted")) == ["p1", "p2"]
    for req in server.requests:
        assert "1 Main St" not in json.dumps(req["messages"])
        assert req["temperature"] == 0
        assert req["prompt_cache_key"].startswith(f"factjudge-{describe(req)[0]}-")
    for direction in ("gold", "predicted"):
        reqs = [r for r in server.requests if describe(r)[0] == direction]
        prefixes = {json.dumps(r["messages"][:-1]) for r in reqs}
        assert len(prefixes) == 1  # byte-identical shared prefix
        roles = [m["role"] for m in reqs[0]["messages"]]
        assert roles == ["system", "user", "user"]
        assert "scale numbers before comparing" in reqs[0]["messages"][0]["content"]
        assert '"relative":0.01' in reqs[0]["messages"][0]["content"]
        for r in reqs:  # the fact judged is the last message
            assert r["messages"][-1]["content"].split("\n")[3].startswith(f"{describe(r)[1]} | ")
    req = next(r for r in server.requests if describe(r)[:2] == ("gold", "g1"))
    fmt = req["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == ["gold_fact_id", "reasoning", "matched_predicted_id"]
    assert schema["required"] == list(schema["properties"])
    assert schema["properties"]["gold_fact_id"] == {"type": "string"}  # not pinned: one schema per direction
    # a candidate's id or null: the verdict (TP, or FN) follows, no contradictory answer can be written
    assert schema["properties"]["matched_predicted_id"] == {
        "anyOf": [{"type": "string", "enum": ["p1", "p2"]}, {"type": "null"}]}
    pschema = next(r for r in server.requests if describe(r)[0] == "predicted")[
        "response_format"]["json_schema"]["schema"]
    assert list(pschema["properties"]) == ["predicted_fact_id", "reasoning", "matched_gold_id"]
    for direction in ("gold", "predicted"):  # byte-identical response_format within a direction
        formats = {json.dumps(r["response_format"]) for r in server.requests if describe(r)[0] == direction}
        assert len(formats) == 1

    facts = by_id(result)
    assert facts[("gold", "g4")]["factjudge"]["status"] == "OUT_OF_SCOPE"
    assert facts[("gold", "g4")]["factjudge"]["in_scope"] is False
    assert facts[("predicted", "p3")]["factjudge"]["matched_ids"] == []
    assert facts[("gold", "g1")]["factjudge"]["matched_ids"] == ["p1"]
    assert result.usage.llm_calls == 5 and result.usage.retries == 0
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens == 100
    assert result.usage.cached_prompt_tokens > 0  # the server reports repeated prefixes as cached
    m = result.metrics
    assert (m.tp_gold, m.fn, m.tp_predicted, m.fp, m.out_of_scope_gold) == (1, 2, 1, 1, 1)
    assert m.precision == 0.5 and m.recall == pytest.approx(1 / 3)


def test_every_conflict_case_end_to_end(server):
    gold = [{"id": f"g{i}", "fact_type": "t", "v": i} for i in range(1, 8)]
    pred = [{"id": f"p{i}", "fact_type": "t", "v": i} for i in range(1, 9)]
    server.truth = {
        ("gold", "g1"): "p1", ("predicted", "p1"): "g1",      # mutual
        ("gold", "g2"): "p2", ("predicted", "p2"): None,      # gold-only, predicted says FP: dropped
        ("gold", "g3"): "p3", ("predicted", "p3"): "g4",      # gold-only, p3 TP->another gold: kept
        ("gold", "g4"): "p3",
        ("gold", "g5"): None, ("predicted", "p4"): "g5",      # predicted-only: g5 promoted
        ("gold", "g6"): "p6", ("predicted", "p5"): "g6",      # duplicates for g6: mutual p6 kept
        ("predicted", "p6"): "g6", ("predicted", "p7"): "g6",
        ("gold", "g7"): None, ("predicted", "p8"): None,
    }
    facts = by_id(run_judge(gold, pred, {}, judge_for(server)))
    status = {k: (f["factjudge"]["status"], f["factjudge"]["matched_ids"]) for k, f in facts.items()}
    assert status[("gold", "g1")] == ("TP", ["p1"])
    assert status[("gold", "g2")] == ("FN", []) and status[("predicted", "p2")] == ("FP", [])
    assert "predicted side decides" in facts[("gold", "g2")]["factjudge"]["description"]
    assert status[("gold", "g3")] == ("TP", ["p3"]) and status[("predicted", "p3")] == ("TP", ["g3", "g4"])
    assert status[("gold", "g5")] == ("TP", ["p4"]) and "promoted" in facts[("gold", "g5")]["factjudge"]["description"]
    assert status[("gold", "g6")] == ("TP", ["p6"])
    assert status[("predicted", "p5")] == ("FP", []) and status[("predicted", "p7")] == ("FP", [])
    assert "duplicate of p6 for gold g6" in facts[("predicted", "p7")]["factjudge"]["description"]
    assert status[("gold", "g7")] == ("FN", []) and status[("predicted", "p8")] == ("FP", [])
    assert facts[("gold", "g1")]["factjudge"]["reasoning"] == "scripted"

    server.requests.clear()
    one = by_id(run_judge(gold, pred, {"one_to_one": True}, judge_for(server)))
    assert one[("predicted", "p3")]["factjudge"]["matched_ids"] == ["g4"]  # its own verdict named g4
    assert one[("gold", "g3")]["factjudge"]["status"] == "FN"
    assert "duplicate of g4 for predicted p3" in one[("gold", "g3")]["factjudge"]["description"]


def test_transport_and_answer_retries_then_success(server):
    gold, pred = [{"id": "g1", "fact_type": "t"}], [{"id": "p1", "fact_type": "t"}]
    server.truth = {("gold", "g1"): "p1", ("predicted", "p1"): "g1"}
    server.faults[("gold", "g1")] = [
        http_error(429, retry_after="0.3"), http_error(500),
        Reply(content="{not json"),
        answer("gold", "g1", "p9"),  # an id that is not a candidate
    ]
    server.faults[("predicted", "p1")] = [answer("predicted", "WRONG", "g1"),
                                          answer("predicted", "p1", ["g1"])]
    result = run_judge(gold, pred, {}, judge_for(server))
    facts = by_id(result)
    assert facts[("gold", "g1")]["factjudge"]["status"] == "TP"
    assert facts[("predicted", "p1")]["factjudge"]["status"] == "TP"
    gold_reqs = [r for r in server.requests if describe(r)[0] == "gold"]
    assert len(gold_reqs) == 5
    # the re-asks tell the model what was wrong, after its own bad answer
    assert "not valid JSON" in gold_reqs[3]["messages"][-1]["content"]
    assert gold_reqs[3]["messages"][-2] == {"role": "assistant", "content": "{not json"}
    assert "'p9' is not the id of a candidate" in gold_reqs[4]["messages"][-1]["content"]
    pred_reqs = [r for r in server.requests if describe(r)[0] == "predicted"]
    assert "must be 'p1'" in pred_reqs[1]["messages"][-1]["content"]
    assert "matched_gold_id ['g1'] is not the id of a candidate" in pred_reqs[2]["messages"][-1]["content"]
    assert result.usage.llm_calls == 8 and result.usage.retries == 6


def test_retry_after_is_honoured(server):
    gold, pred = [{"id": "g1", "fact_type": "t"}], [{"id": "p1", "fact_type": "t"}]
    answered_at = {}
    base = server.responder

    def stamp(req):  # faults are served before the responder: this sees only the retried call
        answered_at[describe(req)[0]] = time.monotonic()
        return base(req)
    server.responder = stamp
    server.faults[("gold", "g1")] = [http_error(429, retry_after="0.4")]
    t0 = time.monotonic()
    run_judge(gold, pred, {}, judge_for(server))
    assert server.subjects("gold") == ["g1", "g1"]
    assert answered_at["gold"] - t0 >= 0.4  # the client waited as asked, not its own 10 ms backoff


def test_error_after_exhausted_retries_is_left_out_of_metrics(server):
    gold = [{"id": "g1", "fact_type": "t"}, {"id": "g2", "fact_type": "t"}]
    pred = [{"id": "p1", "fact_type": "t"}]
    server.truth = {("gold", "g2"): "p1", ("predicted", "p1"): "g2"}
    server.faults[("gold", "g1")] = [http_error(503)] * 5
    server.faults[("predicted", "p1")] = [Reply(content="[]")] * 3
    result = run_judge(gold, pred, {}, judge_for(server, retries=4))
    facts = by_id(result)
    g1, p1 = facts[("gold", "g1")], facts[("predicted", "p1")]
    assert g1["factjudge"]["status"] == "ERROR" and "failed after 5 attempt(s)" in g1["factjudge"]["description"]
    assert "503" in g1["factjudge"]["description"]
    assert p1["factjudge"]["status"] == "ERROR" and "no valid answer after 3 tries" in p1["factjudge"]["description"]
    assert p1["factjudge"]["matched_ids"] == ["g2"]  # g2's own TP link to p1 stands, p1 itself stays ERROR
    assert facts[("gold", "g2")]["factjudge"]["status"] == "TP"
    m = result.metrics
    assert m.errors == 2 and (m.tp_gold, m.fn, m.tp_predicted, m.fp) == (1, 0, 0, 0)
    assert m.recall == 1.0 and m.precision is None


def test_no_candidates_means_no_call(server):
    result = run_judge([{"id": "g1", "fact_type": "a"}], [{"id": "p1", "fact_type": "b"}],
                       {"entity_types": ["a"]}, judge_for(server))
    assert server.requests == []
    g = result.gold_facts[0]
    assert g["factjudge"]["status"] == "FN" and "no in-scope predicted facts" in g["factjudge"]["description"]
    assert result.usage.llm_calls == 0


def test_api_key_never_leaks(server, monkeypatch):
    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("MY_KEY", secret)
    server.faults[("gold", "g1")] = [Reply(status=401, body=json.dumps(
        {"error": {"message": f"Incorrect API key provided: {secret}"}}))]
    server.truth = {("gold", "g2"): None}
    # a refused key stops the run (every call would fail alike) with the key redacted
    with pytest.raises(JudgeSetupError) as refused:
        run_judge([{"id": "g1", "fact_type": "t"}], [{"id": "p1", "fact_type": "t"}], {},
                  judge_for(server, api_key_env="MY_KEY", warmup=False))
    assert "401" in str(refused.value) and secret not in str(refused.value)
    assert "Incorrect API key provided: ***" in str(refused.value)
    assert server.headers[0]["Authorization"] == f"Bearer {secret}"
    # once the server has answered, a fact-level failure carries the server's words into the
    # output, redacted too
    judge = judge_for(server, api_key_env="MY_KEY")
    server.truth = {("gold", "g0"): None, ("predicted", "p1"): None}
    run_judge([{"id": "g0", "fact_type": "t"}], [{"id": "p1", "fact_type": "t"}], {}, judge)
    server.faults[("gold", "g2")] = [Reply(status=400, body=json.dumps(
        {"error": {"message": f"bad request for key {secret}"}}))]
    result = run_judge([{"id": "g2", "fact_type": "t"}], [{"id": "p1", "fact_type": "t"}], {}, judge)
    assert result.gold_facts[0]["factjudge"]["status"] == "ERROR"
    assert "400" in result.gold_facts[0]["factjudge"]["description"]
    assert "key ***" in result.gold_facts[0]["factjudge"]["description"] and secret not in result.to_json()


def test_missing_api_key_is_a_setup_error(monkeypatch):
    monkeypatch.delenv("NOPE_KEY", raising=False)
    with pytest.raises(JudgeSetupError, match="NOPE_KEY"):
        LLMJudge("gpt-4o-mini", api_key_env="NOPE_KEY")
    # named on purpose, its absence is a mistake even for a server that may need no key
    with pytest.raises(JudgeSetupError, match="NOPE_KEY is not set"):
        LLMJudge("m", base_url="http://127.0.0.1:1/v1", api_key_env="NOPE_KEY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert LLMJudge("m", base_url="http://127.0.0.1:1/v1").model == "m"  # local: no key needed


def test_run_judge_inside_a_running_loop(server):
    import asyncio
    server.truth = {("gold", "g1"): "p1", ("predicted", "p1"): "g1"}

    async def notebook_cell():
        return run_judge([{"id": "g1", "fact_type": "t"}], [{"id": "p1", "fact_type": "t"}], {},
                         judge_for(server))
    assert asyncio.run(notebook_cell()).metrics.f1 == 1.0


def test_retry_after_header_forms():
    from datetime import datetime, timedelta, timezone
    from email.utils import format_datetime

    from factjudge.judges.llm.backends import retry_after_seconds as _retry_after_seconds
    assert _retry_after_seconds({"retry-after": "2"}) == 2.0
    assert _retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    soon = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 < _retry_after_seconds({"retry-after": soon}) <= 30
    assert _retry_after_seconds({"retry-after": "soon-ish"}) is None
    assert _retry_after_seconds({}) is None


def test_a_custom_judge_that_breaks_the_contract_gets_error():
    from factjudge import JudgeBase, Verdict

    class Sloppy(JudgeBase):
        name = "sloppy"

        async def judge(self, task):
            return Verdict(fact_id=task.subject_id, status="TP", matched_id="nope", reasoning="?")

    result = run_judge([{"id": "g1", "fact_type": "t"}], [{"id": "p1", "fact_type": "t"}], {}, Sloppy())
    g = result.gold_facts[0]
    assert g["factjudge"]["status"] == "ERROR" and "'nope', which is not a candidate" in g["factjudge"]["description"]
    assert result.metrics.errors == 2


def test_openai_base_url_from_the_environment_is_used_and_keyed(server, monkeypatch, tmp_path):
    from factjudge import ResponseCache
    from factjudge.core.scope import compared_fields
    from factjudge.judges.base import JudgePass
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cache = ResponseCache(tmp_path / "c")
    judge = LLMJudge("m", retry=RetryPolicy(backoff=0.01), cache=cache)  # no key needed: the server is not OpenAI's
    server.truth = {("gold", "g1"): "p1", ("predicted", "p1"): "g1"}
    assert run_judge([{"id": "g1", "fact_type": "t"}], [{"id": "p1", "fact_type": "t"}], {},
                     judge).metrics.f1 == 1.0
    assert len(server.requests) == 2
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    gold, pred = [{"id": "g1", "fact_type": "t"}], [{"id": "p1", "fact_type": "t"}]
    questions, subject = JudgePass("gold", pred, JudgeConfig(), compared_fields(gold, pred, JudgeConfig())[0]), gold[0]
    assert judge.open(questions).estimate(subject).outcome == "cache_hit"
    # the local server's answers never serve a run against OpenAI's
    assert LLMJudge("m", cache=cache).open(questions).estimate(subject).outcome == "call"


def test_a_server_that_never_answers_stops_the_run():
    import socket
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = LLMJudge("m", base_url=f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(retries=1, backoff=0.01))
    # refused at once: nothing listens there, retrying would only delay the message
    with pytest.raises(JudgeSetupError, match=f"cannot reach the server at 127.0.0.1:{port} .*refused"):
        run_judge([{"id": "g1", "fact_type": "t"}, {"id": "g2", "fact_type": "t"}],
                  [{"id": "p1", "fact_type": "t"}], {}, judge)


def test_connection_refusals_after_the_server_answered_stop_the_run():
    server = ScriptedServer({("gold", "g1"): "p1", ("predicted", "p1"): "g1"}).start()
    judge = judge_for(server, retries=1)
    gold, pred = [{"id": "g1", "fact_type": "t"}], [{"id": "p1", "fact_type": "t"}]
    assert run_judge(gold, pred, {}, judge).metrics.f1 == 1.0
    server.stop()  # gone mid-evaluation: a question whose every try is refused stops the run
    with pytest.raises(JudgeSetupError, match=r"stopped accepting connections \(2 in a row refused"):
        run_judge(gold, pred, {}, judge)


def test_same_type_candidates_one_prefix_per_fact_type(server):
    """``candidates: same_type`` (#25): a question shows only the candidates of the judged fact's
    type, under one prefix (and schema) per type; a type's questions are asked together, its first
    alone (warm-up); a fact of a type the other side lacks is the negative without a call. The
    verdicts are those of the default, which shows every candidate."""
    gold = [{"id": "g1", "fact_type": "revenue", "value": "12.5"}, {"id": "g2", "fact_type": "ceo", "name": "Ann"},
            {"id": "g3", "fact_type": "revenue", "value": "3.1"}, {"id": "g4", "fact_type": "ceo", "name": "Bo"},
            {"id": "g5", "fact_type": "address", "text": "1 Main St"}]
    pred = [{"id": "p1", "fact_type": "ceo", "name": "Ann"}, {"id": "p2", "fact_type": "revenue", "value": "12.5"},
            {"id": "p3", "fact_type": "revenue", "value": "9"}, {"id": "p4", "fact_type": "ceo", "name": "Cy"}]
    server.truth = {("gold", "g1"): "p2", ("gold", "g2"): "p1", ("predicted", "p1"): "g2", ("predicted", "p2"): "g1"}
    whole = run_judge(gold, pred, {}, judge_for(server))
    shown = {tuple(sorted(describe(r)[2])) for r in server.requests if describe(r)[0] == "gold"}
    assert shown == {("p1", "p2", "p3", "p4")}
    # in the default too, a fact of a type the other side lacks (g5, an address) is asked nothing:
    # its only valid answer is the negative
    assert sorted(describe(r)[1] for r in server.requests if describe(r)[0] == "gold") == ["g1", "g2", "g3", "g4"]
    assert "no in-scope predicted facts of its fact_type" in by_id(whole)[("gold", "g5")]["factjudge"]["description"]
    server.requests.clear()

    result = run_judge(gold, pred, {"candidates": "same_type"}, judge_for(server, sampling=Sampling(pin_id="never")),
                       concurrency=4)
    def outcomes(r):
        return [(f["id"], f["factjudge"]["status"], f["factjudge"]["matched_ids"])
                for f in r.gold_facts + r.predicted_facts]
    assert outcomes(result) == outcomes(whole)
    asked = [(describe(r)[0], describe(r)[1], describe(r)[2]) for r in server.requests]
    gold_asked = [a for a in asked if a[0] == "gold"]
    # revenue first (the first type of the gold facts), then ceo; g5 (address) asks nothing
    assert gold_asked == [("gold", "g1", ["p2", "p3"]), ("gold", "g3", ["p2", "p3"]),
                          ("gold", "g2", ["p1", "p4"]), ("gold", "g4", ["p1", "p4"])]
    g5 = by_id(result)[("gold", "g5")]
    assert g5["factjudge"]["status"] == "FN"
    assert "no in-scope predicted facts of its fact_type" in g5["factjudge"]["description"]
    for ids in (["p2", "p3"], ["p1", "p4"]):  # one prefix and one schema per type
        same = [r for r in server.requests if describe(r)[0] == "gold" and describe(r)[2] == ids]
        assert len({json.dumps(r["messages"][:-1]) + json.dumps(r["response_format"]) for r in same}) == 1
        assert same[0]["response_format"]["json_schema"]["schema"]["properties"]["matched_predicted_id"][
            "anyOf"][0]["enum"] == ids
    assert result.usage.llm_calls == 8 and result.usage.prompt_tokens < whole.usage.prompt_tokens


def test_a_facts_own_status_and_description_are_cells_of_the_prompt_and_come_back_unchanged(server):
    """Issue 34 item 5: fields named like the verdict's are the fact's own: the LLM sees them as
    any other cell, and the output keeps them beside the verdict under ``factjudge``."""
    server.truth = {("gold", "g1"): "p1", ("predicted", "p1"): "g1"}
    own = {"status": "shipped", "description": "Switch 8-port", "reasoning": "typed", "matched_ids": ["x"]}
    gold = [{"id": "g1", "fact_type": "item", **own}]
    pred = [{"id": "p1", "fact_type": "item", **own, "status": "returned"}]
    result = run_judge(gold, pred, {}, judge_for(server))
    asked = {prompt_facts(r)[1]["id"]: prompt_facts(r) for r in server.requests}
    assert {k: asked["g1"][1][k] for k in own} == own  # the subject's cells
    assert asked["g1"][2][0]["status"] == "returned" and asked["p1"][1]["status"] == "returned"
    assert asked["g1"][2][0]["matched_ids"] == ["x"]  # a JSON cell, as any list
    g1, p1 = result.gold_facts[0], result.predicted_facts[0]
    assert {k: v for k, v in g1.items() if k != "factjudge"} == gold[0]
    assert {k: v for k, v in p1.items() if k != "factjudge"} == pred[0]
    assert (g1["factjudge"]["status"], g1["factjudge"]["matched_ids"]) == ("TP", ["p1"])
    assert p1["factjudge"]["reasoning"] == "scripted" and result.metrics.precision == 1.0


@pytest.mark.parametrize(("timeout", "shown"), [(7.99995, "8"), (0.05, "0.05"), (30.0, "30"), (1234.5, "1234.5")])
def test_a_timeout_is_said_to_a_hundredth_of_a_second(timeout, shown):
    """The question's budget left over is a float: the stop line read "no answer within 7.99995 s"."""
    from factjudge.judges.llm.backends.base import timed_out

    assert timed_out(timeout).message == f"no answer within {shown} s (timeout)"
