"""The LLM judge adapts its requests to what the server refuses (OpenAI's reasoning models: no
temperature but 1, ``max_completion_tokens`` instead of ``max_tokens``, o1-mini's system role), and
every answer is bounded: an answer cut by its budget is asked again once, for brevity. All against
the scripted server speaking OpenAI's own 400 bodies, through both backends."""
import json

import pytest
from evalkit import run_cli
from scripted_server import Reply, ScriptedServer, answer, describe, refusal

from factjudge import JuryJudge, LLMJudge, ResponseCache, run_judge
from factjudge.core.scope import compared_fields
from factjudge.errors import JudgeSetupError
from factjudge.judges.base import JudgePass
from factjudge.judges.llm import RetryPolicy, Sampling, Transport
from factjudge.judges.llm.judge import DEFAULT_MAX_TOKENS, REASONING_MAX_TOKENS, refused_parameter
from factjudge.models import JudgeConfig

G = [{"id": "g1", "fact_type": "revenue", "value": 12}, {"id": "g2", "fact_type": "ceo", "name": "Ann"}]
P = [{"id": "p1", "fact_type": "revenue", "value": 12}, {"id": "p2", "fact_type": "ceo", "name": "Ann"}]
TRUTH = {("gold", "g1"): "p1", ("gold", "g2"): "p2", ("predicted", "p1"): "g1", ("predicted", "p2"): "g2"}
ALL_TP = [("g1", "TP", ["p1"]), ("g2", "TP", ["p2"]), ("p1", "TP", ["g1"]), ("p2", "TP", ["g2"])]
BACKENDS = ["http", pytest.param("openai-sdk", marks=pytest.mark.filterwarnings("ignore"))]


def judge_for(server, backend="http", sampling=Sampling(), **kw):
    if backend == "openai-sdk":
        pytest.importorskip("openai")
    return LLMJudge("m", base_url=server.base_url, retry=RetryPolicy(retries=2, backoff=0.01),
                    sampling=sampling, transport=Transport(backend=backend), **kw)


def answered(server):
    """The requests the server answered (not refused)."""
    return [r for r in server.requests if refusal(r, server.refuse) is None]


def statuses(result):
    return [(f["id"], f["factjudge"]["status"], f["factjudge"]["matched_ids"])
            for f in result.gold_facts + result.predicted_facts]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("with_param", [True, False], ids=["param", "message only"])
def test_a_reasoning_models_refusals_adapt_the_request_once_each(server, backend, with_param):
    server.truth = TRUTH
    server.refuse = {"max_tokens", "temperature", "system"}
    server.refuse_with_param = with_param
    said = []
    result = run_judge(G, P, {}, judge_for(server, backend, notify=said.append))
    assert statuses(result) == ALL_TP and result.metrics.errors == 0
    # one 400 per refusal before the first answer (each direction's first question is in flight:
    # the other may meet a refusal already adapted to); then every request is the adapted one
    assert len(answered(server)) == 4 and 3 <= len(server.requests) - 4 <= 6
    assert result.usage.llm_calls == len(server.requests)
    assert result.usage.adapted == ["system_in_user", "max_completion_tokens", "no_temperature"]
    assert len(said) == 3 and all(line.count("\n") == 0 for line in said)
    assert "refused a request (HTTP 400: Unsupported value: 'messages[0].role' does not support " \
           "'system' with this model.); putting the system message at the head" in said[0]
    assert f"max_completion_tokens ({REASONING_MAX_TOKENS} tokens: reasoning counts" in said[1]
    assert "sending no temperature" in said[2]
    for body in answered(server):
        assert "temperature" not in body and "max_tokens" not in body
        assert body["max_completion_tokens"] == REASONING_MAX_TOKENS
        assert [m["role"] for m in body["messages"]] == ["user", "user"]
        assert body["messages"][0]["content"].startswith("Does one of the ")
        assert "facts (candidates):\nfact_type: " in body["messages"][0]["content"]
    # the folded prefix is still one byte-identical prefix per direction (provider prompt caching)
    for direction in ("gold", "predicted"):
        prefixes = {json.dumps(b["messages"][:-1]) for b in answered(server) if describe(b)[0] == direction}
        assert len(prefixes) == 1


def test_refused_parameter_reads_param_else_the_message():
    def body(message, param=None):
        error = {"message": message, "type": "invalid_request_error"}
        if param is not None:
            error["param"] = param
        return json.dumps({"error": error})

    assert refused_parameter(body("Unsupported parameter: 'max_tokens'", "max_tokens")) == "max_completion_tokens"
    assert refused_parameter(body("Unsupported value: 'temperature'", "temperature")) == "no_temperature"
    # OpenAI's answer to a budget above the model's: the parameter is taken, its value is not
    assert refused_parameter(body("max_tokens is too large: 100000. This model supports at most 16384 "
                                  "completion tokens, whereas you provided 100000.", "max_tokens")) is None
    assert refused_parameter(body("does not support 'system'", "messages[0].role")) == "system_in_user"
    assert refused_parameter(body("does not support 'developer'", "messages[0].role")) is None
    assert refused_parameter(body("Invalid schema", "response_format")) is None
    assert refused_parameter(body("Unsupported parameter: 'temperature' is not supported with this model.")) \
        == "no_temperature"
    assert refused_parameter("System role not supported") == "system_in_user"  # a chat template's words
    # vLLM's context-length 400 names max_tokens without refusing it: nothing to adapt
    assert refused_parameter(body("'max_tokens' or 'max_completion_tokens' is too large: 1024. This "
                                  "model's maximum context length is 2048 tokens")) is None
    assert refused_parameter(body("model 'm' does not support this request")) is None


def test_a_jury_records_what_its_jurors_adapted(server):
    server.truth = TRUTH
    server.refuse = {"max_tokens"}
    with ScriptedServer(TRUTH) as other:
        other.refuse = {"temperature", "max_tokens"}
        jurors = [LLMJudge("a", base_url=server.base_url, notify=lambda _: None),
                  LLMJudge("b", base_url=other.base_url, notify=lambda _: None)]
        result = run_judge(G, P, {}, JuryJudge(jurors))
    assert statuses(result) == ALL_TP
    assert result.usage.adapted == ["max_completion_tokens", "no_temperature"]  # each once


def test_concurrent_questions_adapt_once_and_say_it_once(server):
    server.truth = TRUTH
    server.refuse = {"max_tokens"}
    said = []
    result = run_judge(G, P, {}, LLMJudge("m", base_url=server.base_url, notify=said.append,
                                         transport=Transport(warmup=False)), concurrency=8)
    assert statuses(result) == ALL_TP and len(said) == 1
    assert result.usage.adapted == ["max_completion_tokens"]
    assert sum("max_tokens" in r for r in server.requests) <= 4  # at most the questions in flight


def test_still_refused_after_adapting_is_not_adapted_again(server):
    refusal = json.dumps({"error": {"message": "Unsupported value: 'temperature' does not support 0 with "
                                               "this model.", "param": "temperature"}})
    server.responder = lambda body: Reply(status=400, body=refusal)
    said = []
    with pytest.raises(JudgeSetupError, match="HTTP 400: Unsupported value: 'temperature'"):
        run_judge(G, P, {}, judge_for(server, notify=said.append))
    assert sum("sending no temperature" in line for line in said) == 1
    assert len(server.requests) <= 2 * 4  # per direction: the refusal, then each mode once


def test_an_adapted_request_has_its_own_response_cache_key(server, tmp_path):
    server.truth = TRUTH
    server.refuse = {"temperature"}
    cache = ResponseCache(tmp_path / "c")
    adapted = judge_for(server, cache=cache, notify=lambda _: None)
    run_judge(G, P, {}, adapted)
    questions, subject = JudgePass("gold", P, JudgeConfig(), compared_fields(G, P, JudgeConfig())[0]), G[0]
    assert adapted.open(questions).estimate(subject).outcome == "cache_hit"
    assert judge_for(server, cache=cache).open(questions).estimate(subject).outcome == "call"  # one sending temperature


@pytest.mark.parametrize("backend", BACKENDS)
def test_reasoning_effort_is_sent_where_given(server, backend):
    server.truth = TRUTH
    run_judge(G, P, {}, judge_for(server, backend, Sampling(reasoning_effort="low")))
    assert {r["reasoning_effort"] for r in server.requests} == {"low"}
    server.requests.clear()
    run_judge(G, P, {}, judge_for(server, backend))
    assert all("reasoning_effort" not in r for r in server.requests)
    assert judge_for(server, sampling=Sampling(reasoning_effort="none")).identity()["reasoning_effort"] == "none"
    with pytest.raises(JudgeSetupError, match="reasoning effort 'max' is not one of none, minimal"):
        judge_for(server, sampling=Sampling(reasoning_effort="max"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_answer_is_bounded_by_default(server, backend):
    server.truth = TRUTH
    run_judge(G, P, {}, judge_for(server, backend))
    assert {r["max_tokens"] for r in server.requests} == {DEFAULT_MAX_TOKENS}
    server.requests.clear()
    run_judge(G, P, {}, judge_for(server, backend, Sampling(max_tokens=0)))  # 0: no bound
    assert all("max_tokens" not in r and "max_completion_tokens" not in r for r in server.requests)
    server.requests.clear()
    server.refuse = {"max_tokens"}  # a budget given is sent as it is, in the field the server takes
    run_judge(G, P, {}, judge_for(server, backend, Sampling(max_tokens=300), notify=lambda _: None))
    assert {r["max_completion_tokens"] for r in answered(server)} == {300}


def cut_first(times):
    """A responder cutting the first ``times`` answers about g1 at the budget."""
    asked = []

    def respond(body):
        direction, subject, _ = describe(body)
        if subject == "g1" and len(asked) < times:
            asked.append(body)
            return Reply(content='{"gold_fact_id": "g1", "reasoning": "Comparing field by fie',
                         finish_reason="length")
        return answer(direction, subject, TRUTH[(direction, subject)])
    return respond, asked


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_answer_cut_by_its_budget_is_asked_again_once_for_brevity(server, backend):
    server.responder, _ = cut_first(1)
    result = run_judge(G, P, {}, judge_for(server, backend))
    assert statuses(result) == ALL_TP
    again = [r for r in server.requests if describe(r)[1] == "g1"]
    assert len(again) == 2
    assert again[1]["messages"][:-1] == again[0]["messages"]  # the question, then one short message
    assert again[1]["messages"][-1] == {"role": "user", "content": (
        f"Your answer was cut at {DEFAULT_MAX_TOKENS} tokens, the most it may take. Answer again, much "
        "shorter: keep the reasoning to a few sentences.")}


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_answer_cut_twice_is_an_error_saying_so(server, backend):
    server.responder, asked = cut_first(5)
    result = run_judge(G, P, {}, judge_for(server, backend, Sampling(max_tokens=200)))
    g1 = result.gold_facts[0]
    assert g1["factjudge"]["status"] == "ERROR" and len(asked) == 2  # once asked for brevity, not the 3rd try
    assert g1["factjudge"]["description"] == ("no valid answer after 2 tries: the answer was cut at 200 tokens "
                                 "(its budget: --max-tokens)")
    assert [s for _, s, _ in statuses(result)[1:]] == ["TP", "TP", "TP"]


@pytest.fixture
def files(write_json):
    return write_json("gold.json", G), write_json("pred.jsonl", P)


def test_cli_adapts_says_it_once_and_records_it_in_usage(server, files):
    server.truth = TRUTH
    server.refuse = {"max_tokens", "temperature"}
    proc = run_cli("judge", *files, "--model", "gpt-5-mini", "--base-url", server.base_url,
                   "--reasoning-effort", "minimal", "--concurrency", "1")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["usage"]["adapted"] == ["max_completion_tokens", "no_temperature"]
    notices = [line for line in proc.stderr.splitlines() if line.endswith("from now on")]
    assert len(notices) == 2 and "max_completion_tokens" in notices[0] and "no temperature" in notices[1]
    assert {r["reasoning_effort"] for r in server.requests} == {"minimal"}


def test_cli_max_tokens_and_reasoning_effort_options(server, files):
    server.truth = TRUTH
    proc = run_cli("judge", *files, "--model", "m", "--base-url", server.base_url, "--max-tokens", "0")
    assert proc.returncode == 0, proc.stderr
    assert "adapted" not in json.loads(proc.stdout)["usage"]  # nothing adapted: not in the output
    assert all("max_tokens" not in r for r in server.requests)
    for bad in (("--max-tokens", "-1"), ("--reasoning-effort", "extreme")):
        proc = run_cli("judge", *files, "--model", "m", "--base-url", server.base_url, *bad)
        assert proc.returncode == 2 and bad[0] in proc.stderr and "Traceback" not in proc.stderr
