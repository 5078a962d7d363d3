"""Hostile servers, round four (issue #32): redirects to another origin, a server dying mid-run,
refusals of sampling parameters in other wordings, answers with extra tools or keys. All through
real HTTP with the scripted server."""

import json

import pytest
from scripted_server import Reply, ScriptedServer

from factjudge import LLMJudge, run_judge
from factjudge.errors import JudgeSetupError
from factjudge.judges.llm import RetryPolicy, Sampling, Transport

KEY = "sk-test-SECRET-round4"
G = [{"id": "g1", "fact_type": "revenue", "value": 12}, {"id": "g2", "fact_type": "ceo", "name": "Ann"}]
P = [{"id": "p1", "fact_type": "revenue", "value": 12}, {"id": "p2", "fact_type": "ceo", "name": "Ann"}]
TRUTH = {("gold", "g1"): "p1", ("gold", "g2"): "p2", ("predicted", "p1"): "g1", ("predicted", "p2"): "g2"}


def judge(base_url, backend="http", retries=2, **sampling):
    return LLMJudge("m", base_url=base_url, api_key=KEY, retry=RetryPolicy(retries=retries, backoff=0.01),
                    sampling=Sampling(**sampling), transport=Transport(backend=backend, warmup=False))


def backend_param(backend):
    if backend == "openai-sdk":
        pytest.importorskip("openai")
    return backend


# --------------------------------------------------------------------------- item 2: redirects

@pytest.mark.parametrize("status", [307, 308])
@pytest.mark.parametrize("backend", ["http", "anthropic", "openai-sdk"])
def test_a_redirect_to_another_origin_never_carries_the_key(server, status, backend):
    """The second server (another port: another origin) never sees the key; the run stops in one
    line naming both origins."""
    backend = backend_param(backend)
    with ScriptedServer(TRUTH) as other:
        path = "/v1/messages" if backend == "anthropic" else "/v1/chat/completions"
        server.responder = lambda body: Reply(status=status, headers={"Location": f"http://127.0.0.1:{other.port}{path}"},
                                              body="")
        base = f"http://127.0.0.1:{server.port}" if backend == "anthropic" else server.base_url
        with pytest.raises(JudgeSetupError) as info:
            run_judge(G, P, {}, judge(base, backend))
        seen = other.headers + other.message_headers
        assert not any(KEY in str(h) for h in seen), seen
        message = str(info.value)
        assert "\n" not in message and KEY not in message
        assert f"127.0.0.1:{server.port}" in message and f"127.0.0.1:{other.port}" in message
        assert str(status) in message


@pytest.mark.parametrize("backend", ["http", "anthropic"])
def test_a_redirect_within_the_origin_is_followed_with_the_key(server, backend):
    """A 307 to the same server (a gateway moving a request) is followed, the key kept."""
    path = "/v1/messages" if backend == "anthropic" else "/v1/chat/completions"
    server.truth = TRUTH
    server.faults[("gold", "g1")] = [Reply(status=307, headers={"Location": path}, body="")]
    base = f"http://127.0.0.1:{server.port}" if backend == "anthropic" else server.base_url
    result = run_judge(G, P, {}, judge(base, backend))
    assert result.metrics.f1 == 1.0
    headers = server.message_headers if backend == "anthropic" else server.headers
    assert len(headers) == 5 and all(KEY in str(h) for h in headers)


# --------------------------------------------------------------------------- item 7: a server that dies

def test_a_server_that_dies_mid_run_stops_eval_and_a_rerun_resumes(tmp_path, write_json):
    """After some answers the server is shut down: eval stops in one line (exit 2) instead of
    retrying every fact, the documents judged are kept, and a rerun against the server started
    again on its port judges only the rest."""
    import threading
    import time

    from evalkit import read_lines, run_cli

    docs = [{"doc_id": f"d{i}", "gold_facts": [{"id": f"g{i}", "fact_type": "revenue", "value": i}],
             "predicted_facts": [{"id": f"p{i}", "fact_type": "revenue", "value": i}]} for i in range(40)]
    truth = {**{("gold", f"g{i}"): f"p{i}" for i in range(40)}, **{("predicted", f"p{i}"): f"g{i}" for i in range(40)}}
    data = write_json("data.jsonl", docs)
    cfg = write_json("cfg.json", {"entity_types": ["revenue"]})
    out = tmp_path / "out"
    server = ScriptedServer(truth).start()
    port, answered = server.port, []

    def dying(body):
        answered.append(1)
        if len(answered) == 12:
            threading.Thread(target=server.stop).start()
        return server._from_truth(body)

    server.responder = dying
    # --retries 1: the stop comes after one backoff (0.5-1 s) instead of four (the default's
    # 7.5-15 s, which test_retries_bound_the_tries_of_a_failing_request covers)
    args = ["eval", data, "-c", cfg, "--model", "m", "--base-url", server.base_url,
            "--cache-dir", tmp_path / "cache", "-o", out, "--concurrency", "2", "--retries", "1"]
    started = time.monotonic()
    proc = run_cli(*args, env={"OPENAI_API_KEY": KEY})
    took = time.monotonic() - started
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and "stopped accepting connections" in lines[0], proc.stderr
    assert took < 60, took
    kept = read_lines(out / "results.jsonl")
    assert 0 < len(kept) < 40
    assert all(f["factjudge"]["status"] != "ERROR" for r in kept for f in r["gold_facts"] + r["predicted_facts"])
    with ScriptedServer(truth, port=port) as again:
        proc = run_cli(*args, env={"OPENAI_API_KEY": KEY})
        assert proc.returncode == 0, proc.stderr
        kept_ids = {f["id"] for r in kept for f in r["gold_facts"] + r["predicted_facts"]}
        asked = set(again.subjects())
        assert asked and not asked & kept_ids  # only the documents not kept are judged again
    assert len(read_lines(out / "results.jsonl")) == 40


@pytest.mark.parametrize("retries", [0, 1])
def test_retries_bound_the_tries_of_a_failing_request(tmp_path, write_json, retries):
    """--retries N: a request failing with a 503 goes N more times (each after a backoff), then
    its fact is an ERROR; the first fact is answered, so the run goes on."""
    from evalkit import read_lines, run_cli
    from scripted_server import describe, http_error

    docs = [{"doc_id": "d", "gold_facts": [{"id": "g1", "fact_type": "revenue", "value": 1},
                                           {"id": "g2", "fact_type": "revenue", "value": 2}],
             "predicted_facts": [{"id": "p1", "fact_type": "revenue", "value": 1}]}]
    server = ScriptedServer({("gold", "g1"): "p1", ("predicted", "p1"): "g1"}).start()
    asked: list[str] = []

    def responder(body):
        asked.append(describe(body)[1])
        return http_error(503) if asked[-1] == "g2" else server._from_truth(body)

    server.responder = responder
    try:
        cfg = write_json("cfg.json", {"entity_types": ["revenue"]})
        proc = run_cli("eval", write_json("data.jsonl", docs), "-c", cfg,
                       "--model", "m", "--base-url", server.base_url, "--no-cache", "--no-warmup", "--concurrency", "1",
                       "-o", tmp_path / "out", "--retries", str(retries), env={"OPENAI_API_KEY": KEY})
    finally:
        server.stop()
    assert proc.returncode == 1, proc.stderr  # an ERROR fact: exit 1
    assert asked.count("g2") == 1 + retries
    (line,) = read_lines(tmp_path / "out" / "results.jsonl")
    assert {f["id"]: f["factjudge"]["status"] for f in line["gold_facts"]} == {"g1": "TP", "g2": "ERROR"}


def test_retries_out_of_range_are_refused_in_one_line():
    from factjudge import JudgeConfig
    from factjudge.errors import InputError
    from factjudge.judges.factory import JudgeSpec, build_judge

    with pytest.raises(InputError, match="--retries"):
        build_judge(JudgeSpec(models=("m",), base_url="http://127.0.0.1:9/v1", retries=-1), JudgeConfig())


# --------------------------------------------------------------------------- item 8: refusals in other words

def test_a_reply_cut_as_the_server_goes_down_then_refusals_stops_the_run():
    """The question in flight when the server died had its reply cut, then every further try
    refused: the server is gone, as when every try was refused (it was an ERROR verdict, and its
    document kept with it, when the cut came first: test_a_server_that_dies_mid_run... was flaky)."""
    import threading

    server = ScriptedServer({("gold", "g1"): "p1", ("predicted", "p1"): "g1"}).start()
    calls = []

    def responder(body):
        calls.append(1)
        if len(calls) == 2:  # the second question: cut mid-reply while the server goes down
            threading.Thread(target=server.stop).start()
            return Reply(cut=True)
        return server._from_truth(body)

    server.responder = responder
    llm = LLMJudge("m", base_url=server.base_url, retry=RetryPolicy(retries=3, backoff=0.01))
    with pytest.raises(JudgeSetupError, match="stopped accepting connections"):
        run_judge(G[:1], P[:1], {}, llm, concurrency=1)


def _error(message):
    return json.dumps({"error": {"message": message, "type": "invalid_request_error"}})


REFUSALS = {
    # backend, status, body, the field it refuses, what the judge adapts to
    "anthropic-thinking": ("anthropic", 400, json.dumps({"type": "error", "error": {
        "type": "invalid_request_error", "message": "`temperature` may only be set to 1 when thinking is enabled."}}),
        "temperature", "no_temperature"),
    "only-accepts": ("http", 400, _error("This model only accepts temperature=1 (got 0)."), "temperature",
                     "no_temperature"),
    "extra-fields-422": ("http", 422, _error("temperature: extra fields not permitted"), "temperature",
                         "no_temperature"),
    "deprecated": ("http", 400, _error("max_tokens is deprecated for this model, use max_completion_tokens"),
                   "max_tokens", "max_completion_tokens"),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_a_refused_parameter_in_other_words_adapts_it_not_the_structured_output(server, case):
    backend, status, body, field, adapted = REFUSALS[case]
    server.truth = TRUTH
    server.gate = lambda request: (Reply(status=status, body=body)
                                   if field in request and request[field] != 1 else None)
    said = []
    base = f"http://127.0.0.1:{server.port}" if backend == "anthropic" else server.base_url
    llm = judge(base, backend)
    llm.notify = said.append
    result = run_judge(G, P, {}, llm)
    assert result.metrics.f1 == 1.0 and result.metrics.errors == 0
    assert result.usage.adapted == [adapted]
    assert result.usage.structured_output == "json_schema"  # not blamed on structured output
    assert not any("structured output" in line for line in said), said


def test_a_refused_parameter_that_cannot_be_adapted_is_named_not_blamed_on_structured_output(server):
    server.gate = lambda request: Reply(status=400, body=_error(
        "Unrecognized request argument supplied: reasoning_effort")) if "reasoning_effort" in request else None
    with pytest.raises(JudgeSetupError) as info:
        run_judge(G, P, {}, judge(server.base_url, reasoning_effort="low"))
    message = str(info.value)
    assert "reasoning_effort" in message and "--reasoning-effort" in message
    assert "structured output" not in message and "Unrecognized request argument" in message
    assert {json.dumps(r.get("response_format", {}).get("type")) for r in server.requests} == {'"json_schema"'}
