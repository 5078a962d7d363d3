"""``--backend anthropic``: the judge's chat request spoken as Anthropic's Messages API, through real
HTTP to the scripted server's ``/v1/messages`` (which checks headers, required fields and shapes as
documented, and reports prompt caching at the ``cache_control`` breakpoints)."""
import json

import pytest
from evalkit import CALLS, TRUTH, run_cli
from scripted_server import Reply, answer, anthropic_error, chat_view, describe

from factjudge import LLMJudge, run_judge
from factjudge.errors import JudgeSetupError
from factjudge.judges.llm import RetryPolicy, Sampling, Transport
from factjudge.judges.llm.backends.anthropic import messages_request, parse_message

KEY = "sk-ant-test-SECRET-123"
G = [{"id": "g1", "fact_type": "revenue", "value": 12}, {"id": "g2", "fact_type": "ceo", "name": "Ann"}]
P = [{"id": "p1", "fact_type": "revenue", "value": 12}, {"id": "p2", "fact_type": "ceo", "name": "Ann"}]
PAIRS = {("gold", "g1"): "p1", ("gold", "g2"): "p2", ("predicted", "p1"): "g1", ("predicted", "p2"): "g2"}


def root(server):
    """The server as Anthropic's base URL is given: without /v1 (https://api.anthropic.com)."""
    return f"http://127.0.0.1:{server.port}"


def claude(server, structured_output="auto", retries=4, warmup=True, base_url=None, **kw):
    return LLMJudge("claude-test", base_url=base_url or root(server), api_key=KEY,
                    sampling=Sampling(structured_output=structured_output),
                    retry=RetryPolicy(retries=retries, backoff=0.01),
                    transport=Transport(backend="anthropic", warmup=warmup), **kw)


def statuses(result):
    return [(f["id"], f["factjudge"]["status"], f["factjudge"]["matched_ids"])
            for f in result.gold_facts + result.predicted_facts]


def test_a_run_speaks_the_messages_api_as_documented(server):
    server.truth = PAIRS
    server.anthropic_key = KEY
    result = run_judge(G, P, {}, claude(server))
    assert statuses(result) == [("g1", "TP", ["p1"]), ("g2", "TP", ["p2"]),
                                ("p1", "TP", ["g1"]), ("p2", "TP", ["g2"])]
    assert server.requests == [] and len(server.message_requests) == 4
    headers = server.message_headers[0]
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in headers and "anthropic-beta" not in headers
    body = server.message_requests[0]
    assert set(body) == {"model", "max_tokens", "temperature", "system", "messages", "output_config"}
    assert body["model"] == "claude-test" and body["max_tokens"] >= 256 and body["temperature"] == 0
    # the system prompt as blocks, the candidate list cached, the one fact last and not cached
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    first, last = body["messages"]
    assert first["role"] == "user" and first["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "candidates" in first["content"][0]["text"]
    assert last["role"] == "user" and "cache_control" not in json.dumps(last)
    schema = body["output_config"]["format"]
    assert schema["type"] == "json_schema" and schema["schema"]["required"][1:] == ["reasoning", "matched_predicted_id"]
    assert result.usage.structured_output == "json_schema"


def test_the_candidate_list_is_read_from_the_cache_across_a_direction(server):
    gold = [{"id": f"g{i}", "fact_type": "revenue", "segment": f"segment {i}", "value": i * 1.5} for i in range(30)]
    pred = [{"id": f"p{i}", "fact_type": "revenue", "segment": f"segment {i}", "value": i * 1.5} for i in range(30)]
    server.truth = {**{("gold", f"g{i}"): f"p{i}" for i in range(30)},
                    **{("predicted", f"p{i}"): f"g{i}" for i in range(30)}}
    result = run_judge(gold, pred, {}, claude(server), concurrency=8)
    assert result.metrics.f1 == 1.0
    for direction in ("gold", "predicted"):
        log = [(p, r, w) for d, p, r, w in server.message_usage if d == direction]
        assert len(log) == 30 and log[0][1] == 0 and log[0][2] > 0  # the warm-up call writes the prefix
        share = sum(r for _, r, _ in log[1:]) / sum(p for p, _, _ in log[1:])
        assert share >= 0.9, (direction, share)
        assert all(w == 0 for _, _, w in log[1:])  # written once, read by every other question
    # factjudge's usage: every prompt token counted (input + read + written), cached = read
    total = sum(p for _, p, _, _ in server.message_usage)
    assert result.usage.prompt_tokens == total
    assert result.usage.cached_prompt_tokens == sum(r for _, _, r, _ in server.message_usage)
    assert result.usage.completion_tokens == 20 * 60


def test_a_model_without_structured_outputs_falls_back_to_a_forced_tool(server):
    server.truth = PAIRS
    server.reject_modes = {"json_schema"}
    said = []
    result = run_judge(G, P, {}, claude(server, notify=said.append))
    assert result.metrics.f1 == 1.0 and result.usage.structured_output == "json_object"
    assert len(said) == 1 and "output_config.format" in said[0]
    answered = [b for b in server.message_requests if "tools" in b]
    assert len(answered) == 4 and all("output_config" not in b for b in answered)
    tool = answered[0]["tools"][0]
    assert answered[0]["tool_choice"] == {"type": "tool", "name": tool["name"]}
    assert tool["input_schema"]["type"] == "object" and "matched_predicted_id" in tool["input_schema"]["properties"]


def test_with_no_structured_output_the_schema_is_in_the_system_prompt(server):
    server.truth = PAIRS
    result = run_judge(G, P, {}, claude(server, structured_output="none"))
    assert result.metrics.f1 == 1.0
    body = server.message_requests[0]
    assert "output_config" not in body and "tools" not in body
    assert '"anyOf"' in body["system"][-1]["text"]  # the schema's text


def test_an_answer_cut_at_max_tokens_is_asked_again(server):
    server.truth = PAIRS
    cut = answer("gold", "g1", "p1").content[:30]
    server.faults[("gold", "g1")] = [Reply(content=cut, stop_reason="max_tokens")]
    server.faults[("gold", "g2")] = [Reply(content="", stop_reason="max_tokens")]
    result = run_judge(G, P, {}, claude(server, warmup=False))
    assert result.metrics.errors == 0 and result.metrics.f1 == 1.0
    asked = [b for b in server.message_requests if describe(chat_view(b))[:2] == ("gold", "g1")]
    assert len(asked) == 2
    # stop_reason max_tokens is a cut answer, re-asked once for brevity as finish_reason "length"
    question, again = asked[1]["messages"][1:]
    assert question["role"] == again["role"] == "user" and "GOLD fact to judge" in json.dumps(question)
    assert "cut at" in again["content"] and "shorter" in again["content"]
    assert "cache_control" not in json.dumps(again)
    assert len([b for b in server.message_requests if describe(chat_view(b))[:2] == ("gold", "g2")]) == 2


def test_overloaded_and_rate_limited_are_retried_with_retry_after(server):
    server.truth = PAIRS
    judge = claude(server, warmup=False)
    server.faults[("gold", "g1")] = [anthropic_error(529, "overloaded_error", "Overloaded"),
                                     anthropic_error(429, "rate_limit_error", "slow down", retry_after="0")]
    result = run_judge(G, P, {}, judge)
    assert result.metrics.errors == 0 and result.usage.retries == 2


def test_an_error_after_the_first_answer_is_the_apis_own_words(server):
    server.truth = PAIRS
    judge = claude(server, retries=1, warmup=False)
    server.faults[("gold", "g2")] = [anthropic_error(400, "invalid_request_error", "prompt is too long")] * 3
    result = run_judge(G, P, {}, judge)
    facts = {f["id"]: f for f in result.gold_facts}
    assert facts["g2"]["factjudge"]["status"] == "ERROR"
    assert "HTTP 400: prompt is too long" in facts["g2"]["factjudge"]["description"]


def test_a_wrong_key_stops_the_run_without_showing_it(server):
    server.anthropic_key = "sk-ant-the-right-one"
    with pytest.raises(JudgeSetupError) as stop:
        run_judge(G, P, {}, claude(server))
    assert "invalid x-api-key" in str(stop.value) and KEY not in str(stop.value)
    assert len(server.message_requests) <= 2


def test_a_base_url_ending_in_v1_is_taken_as_it_is_meant(server):
    server.truth = PAIRS
    result = run_judge(G, P, {}, claude(server, base_url=server.base_url))  # .../v1
    assert result.metrics.f1 == 1.0 and len(server.message_requests) == 4


# ---------------------------------------------------------------------- the translation itself

def chat(*extra, **fields):
    return {"model": "m", "temperature": 0, "prompt_cache_key": "doc:gold",
            "response_format": {"type": "json_schema", "json_schema": {"name": "gold_fact_verdict",
                                                                       "strict": True, "schema": {"type": "object"}}},
            "messages": [{"role": "system", "content": "rules"}, {"role": "user", "content": "candidates"},
                         {"role": "user", "content": "the fact"}, *extra], **fields}


def test_the_prefix_is_cached_and_the_question_is_not_even_on_a_re_ask():
    body = messages_request(chat({"role": "assistant", "content": "{bad"}, {"role": "user", "content": "again"}))
    assert body["system"] == [{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"][0] == {"role": "user", "content": [
        {"type": "text", "text": "candidates", "cache_control": {"type": "ephemeral"}}]}
    assert body["messages"][1:] == [{"role": "user", "content": "the fact"},
                                    {"role": "assistant", "content": "{bad"}, {"role": "user", "content": "again"}]
    assert "prompt_cache_key" not in body and "response_format" not in body


@pytest.mark.parametrize("fields, budget", [({}, 1024), ({"max_tokens": 300}, 300),
                                            ({"max_completion_tokens": 200}, 200)])
def test_max_tokens_is_always_sent(fields, budget):
    assert messages_request(chat(**fields))["max_tokens"] == budget


def test_a_reply_is_read_from_text_or_tool_use_with_every_prompt_token_counted():
    usage = {"input_tokens": 10, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 50,
             "output_tokens": 70}
    text = parse_message({"type": "message", "content": [{"type": "text", "text": '{"a": 1}'}],
                          "stop_reason": "end_turn", "usage": usage})
    assert (text.content, text.prompt_tokens, text.cached_prompt_tokens, text.completion_tokens) == \
        ('{"a": 1}', 960, 900, 70)
    tool = parse_message({"type": "message", "stop_reason": "tool_use", "usage": usage, "content": [
        {"type": "text", "text": "Here it is."}, tool_use("record_verdict", {"a": 1})]})
    assert json.loads(tool.content) == {"a": 1} and not tool.problem
    refused = parse_message({"type": "message", "content": [], "stop_reason": "refusal", "usage": usage})
    assert "refus" in refused.problem
    assert parse_message([]).problem and parse_message({"type": "message"}).problem


# ---------------------------------------------------------------------- the command line

def test_judge_and_eval_on_the_command_line(server, files_and_dataset, tmp_path):
    gold, pred, data, cfg = files_and_dataset
    server.truth = {**PAIRS, **TRUTH}
    server.anthropic_key = KEY
    env = {"ANTHROPIC_API_KEY": KEY}
    proc = run_cli("judge", gold, pred, "--model", "claude-test", "--backend", "anthropic",
                   "--base-url", root(server), env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["metrics"]["f1"] == 1.0 and out["usage"]["cached_prompt_tokens"] > 0
    assert KEY not in proc.stdout + proc.stderr
    proc = run_cli("eval", data, "-c", cfg, "--judge", "llm", "--model", "claude-test", "--backend",
                   "anthropic", "--base-url", root(server), "-o", tmp_path / "out", env=env)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["usage"]["llm_calls"] == CALLS and summary["usage"]["cached_prompt_tokens"] > 0
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert KEY not in written and len(server.message_requests) == 4 + CALLS


def test_the_key_and_url_come_from_anthropics_variables(server, files_and_dataset):
    gold, pred, _, _ = files_and_dataset
    server.truth = PAIRS
    server.anthropic_key = KEY
    # OPENAI_BASE_URL is another server's: the anthropic backend reads ANTHROPIC_BASE_URL
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": root(server), "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = run_cli("judge", gold, pred, "--model", "claude-test", "--backend", "anthropic", env=env)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("judge", gold, pred, "--model", "claude-test", "--backend", "anthropic",
                   env={"ANTHROPIC_API_KEY": None, "OPENAI_API_KEY": "sk-openai"})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "ANTHROPIC_API_KEY" in proc.stderr and "sk-openai" not in proc.stderr


@pytest.fixture
def files_and_dataset(write_json, dataset):
    data, cfg = dataset
    return write_json("gold.json", G), write_json("pred.json", P), data, cfg


@pytest.mark.parametrize("flag", [["--batch"], ["--batch-export"]])
def test_openais_batch_api_is_refused_with_the_anthropic_backend(server, dataset, tmp_path, flag):
    data, cfg = dataset
    if flag == ["--batch-export"]:
        flag = [*flag, tmp_path / "questions.jsonl"]
    proc = run_cli("eval", data, "-c", cfg, "--judge", "llm", "--model", "claude-test", "--backend", "anthropic",
                   "--base-url", root(server), "-o", tmp_path / "out", *flag, env={"ANTHROPIC_API_KEY": KEY})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "OpenAI's Batch API" in proc.stderr and "--backend anthropic" in proc.stderr
    assert server.batch_calls == [] and server.message_requests == []
    assert not (tmp_path / "questions.jsonl").exists()


def test_ray_workers_get_anthropics_key_and_url(monkeypatch):
    from factjudge.cli.ray_cmd import _worker_env
    from factjudge.judges.factory import JudgeSpec

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("FACTJUDGE_CACHE_DIR")
    assert _worker_env(JudgeSpec(backend="anthropic")) == {"ANTHROPIC_API_KEY": KEY,
                                                             "ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}
    assert _worker_env(JudgeSpec()) == {"OPENAI_API_KEY": "sk-openai"}


def tool_use(name, data):
    return {"type": "tool_use", "id": "toolu_x", "name": name, "input": data}


def test_two_tool_use_blocks_or_a_tool_never_offered_are_no_answer(server):
    """One answer was asked for (issue #32: the first block was taken silently): several tool_use
    blocks are asked again; a tool never offered, every time, is an ERROR saying so."""
    server.truth = PAIRS
    right = {"gold_fact_id": "g1", "reasoning": "r", "matched_predicted_id": "p1"}
    wrong = {**right, "matched_predicted_id": None}
    two = [tool_use("record_verdict", wrong), tool_use("record_verdict", right)]
    server.faults[("gold", "g1")] = [Reply(blocks=two)]
    server.faults[("gold", "g2")] = [Reply(blocks=[tool_use("delete_files", {"gold_fact_id": "g2"})])] * 3
    result = run_judge(G, P, {}, claude(server, structured_output="json_object"))
    by_id = {f["id"]: f for f in result.gold_facts}
    assert by_id["g1"]["factjudge"]["status"] == "TP" and by_id["g1"]["factjudge"]["matched_ids"] == ["p1"]
    assert by_id["g2"]["factjudge"]["status"] == "ERROR"
    assert "calls a tool that was never offered ('delete_files')" in by_id["g2"]["factjudge"]["description"]
    reasks = [r["messages"][-1]["content"] for r in server.message_requests if len(r["messages"]) > 2]
    assert any("2 tool_use blocks" in json.dumps(m) for m in reasks)
    # without tools offered (json_schema), any tool_use is no answer either
    assert "never offered" in parse_message({"content": [tool_use("record_verdict", right)]}, ()).problem
