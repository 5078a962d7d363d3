"""Hostile servers, round four (issue #32): redirects to another origin, a server dying mid-run,
refusals of sampling parameters in other wordings, answers with extra tools or keys. All through
real HTTP with the scripted server."""

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
