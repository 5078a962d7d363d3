"""Hostile servers and hostile option values around secrets, the response cache's scope and
numbers: the API key and URL credentials reach no output, two endpoints on one host never share
answers, and numbers or URLs that cannot work are refused in one line naming the option."""
import base64
import json
import math
from pathlib import Path

import pytest
from evalkit import CALLS, TRUTH, run_cli
from scripted_server import Reply, answer, describe

from factjudge import LLMJudge, ResponseCache, run_judge
from factjudge.errors import InputError, JudgeSetupError
from factjudge.judges.factory import JudgeSpec, build_judge
from factjudge.judges.llm import RetryPolicy, Sampling, Transport

KEY = "sk-test-SECRET123"
USER, PASSWORD = "alice", "pa55SECRET"
G = [{"id": "g1", "fact_type": "revenue", "value": 12}]
P = [{"id": "p1", "fact_type": "revenue", "value": 12}]


def files_holding(folder: Path, *secrets: str) -> list[str]:
    """Files under ``folder`` whose bytes hold one of ``secrets`` (SQLite files and their WAL too)."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path.name}: {s}" for s in secrets if s.encode() in data]
    return found


# --------------------------------------------------------------------------- item 8: secrets


@pytest.mark.parametrize("echo", ["body", "reasoning"])
@pytest.mark.parametrize("auth", ["key", "url"])
def test_a_server_echoing_the_authorization_header_leaks_no_secret(server, dataset, tmp_path, echo, auth):
    """A proxy that echoes the request headers (as a 200 body, or quoted in the answer's
    reasoning) puts the key in no file of the output folder, the cache, stdout or stderr."""
    data, cfg = dataset
    server.truth, server.echo_auth = TRUTH, echo
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    url = server.base_url if auth == "key" else server.base_url.replace("//", f"//{USER}:{PASSWORD}@")
    out, cache = tmp_path / "out", tmp_path / "cache"
    proc = run_cli("eval", data, "-c", cfg, "--model", "m", "--base-url", url, "--cache-dir", cache,
                   "-o", out, env={"OPENAI_API_KEY": KEY if auth == "key" else None})
    # a 200 body of headers is no chat completion: the run stops at the first question, quoting it
    assert proc.returncode == (2 if echo == "body" else 0), proc.stderr
    secrets = (KEY,) if auth == "key" else (PASSWORD, token)
    assert server.headers[0]["Authorization"] in (f"Bearer {KEY}", f"Basic {token}")  # it was sent
    assert files_holding(out, *secrets) == [] and files_holding(cache, *secrets) == []
    assert not any(s in proc.stderr + proc.stdout for s in secrets)
    if echo == "body":
        assert "Authorization: B" in proc.stderr and "***" in proc.stderr  # redacted, not dropped
        return
    facts = [f for line in out.joinpath("results.jsonl").read_text().splitlines()
             for f in json.loads(line)["gold_facts"]]
    assert any("Authorization: B" in (f["factjudge"].get("description") or "") + json.dumps(f) for f in facts)
    assert any("***" in json.dumps(f) for f in facts)  # redacted, not dropped


@pytest.mark.parametrize("backend", ["http", "openai-sdk"])
def test_a_200_body_echoing_the_key_is_redacted_on_both_backends(server, backend):
    if backend == "openai-sdk":
        pytest.importorskip("openai")
    server.echo_auth = "body"
    judge = LLMJudge("m", base_url=server.base_url, api_key=KEY, retry=RetryPolicy(backoff=0.01),
                     transport=Transport(backend=backend))
    with pytest.raises(JudgeSetupError) as exc:  # no chat completion to any try of the first question
        run_judge(G, P, {}, judge)
    assert "Authorization: Bearer ***" in str(exc.value) and KEY not in str(exc.value)


def test_a_refusal_echoing_a_users_own_client_key_stops_the_run_without_it(server):
    """The backend hides the key it was given; a user's own client holds another one."""
    openai = pytest.importorskip("openai")
    server.echo_auth = "401"
    client = openai.AsyncOpenAI(api_key=KEY, base_url=server.base_url, max_retries=0)
    judge = LLMJudge("m", api_key="another-key", transport=Transport(backend="openai-sdk", client=client))
    with pytest.raises(JudgeSetupError) as exc:
        run_judge(G, P, {}, judge)
    assert "Bearer ***" in str(exc.value) and KEY not in str(exc.value)


def test_a_users_own_client_key_is_redacted_too(server):
    """The key in use is the client's own when the user brings an AsyncOpenAI client."""
    openai = pytest.importorskip("openai")
    server.truth, server.echo_auth = {("gold", "g1"): "p1", ("predicted", "p1"): "g1"}, "reasoning"
    client = openai.AsyncOpenAI(api_key=KEY, base_url=server.base_url, max_retries=0)
    judge = LLMJudge("m", api_key="unused-key", transport=Transport(backend="openai-sdk", client=client))
    result = run_judge(G, P, {}, judge)
    text = json.dumps(result.gold_facts + result.predicted_facts)
    assert "Bearer ***" in text and KEY not in text


@pytest.mark.parametrize("where", ["--base-url", "--model"])
def test_a_base_url_that_cannot_work_is_refused_without_showing_the_password(server, dataset, tmp_path,
                                                                              where):
    """Without a scheme the URL used to be sent as it is: 70 calls in 25 s, every fact ERROR with
    the password in its description. Now: one line naming the option, nothing sent or written."""
    data, cfg = dataset
    if where == "--base-url":
        args, problem = ["--base-url", f"{USER}:{PASSWORD}@127.0.0.1:{server.port}/v1"], "http:// or https://"
    else:  # the host forgotten: the password reads as a port
        args, problem = ["--model", f"m@http://{USER}:{PASSWORD}/v1"], "port"
    out = tmp_path / "out"
    proc = run_cli("eval", data, "-c", cfg, "--model", "m", *args, "-o", out)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert problem in proc.stderr and where in proc.stderr
    assert PASSWORD not in proc.stderr + proc.stdout
    assert server.requests == [] and not out.exists()


@pytest.mark.parametrize("url, problem", [
    (f"{USER}:{PASSWORD}@host/v1", "needs http:// or https://"),
    (f"ftp://{USER}:{PASSWORD}@host/v1", "needs http:// or https://"),
    (f"http://{USER}:{PASSWORD}/v1", "port"),  # the host forgotten: the password reads as a port
    ("http:///v1", "no host"),
    ("http://127.0.0.1:99999/v1", "port"),
    ("http://127.0.0.1:0/v1", "port"),
    ("http://[::1/v1", "not a URL"),
])
def test_the_python_api_refuses_unusable_base_urls_in_one_line(url, problem):
    with pytest.raises(JudgeSetupError) as exc:
        LLMJudge("m", base_url=url, api_key=KEY)
    msg = str(exc.value)
    assert problem in msg and msg.startswith("base_url") and "\n" not in msg
    assert PASSWORD not in msg and USER not in msg


def test_a_judge_specs_repr_hides_credentials_of_a_url_without_a_scheme():
    spec = JudgeSpec(models=("m",), base_url=f"{USER}:{PASSWORD}@host/v1")
    assert PASSWORD not in repr(spec) and "***@host/v1" in repr(spec)
    with pytest.raises(InputError) as exc:
        build_judge(spec)
    assert PASSWORD not in str(exc.value) and str(exc.value).startswith("--base-url")


# --------------------------------------------------------------------------- item 6: cache scope


def routes(server, truth=TRUTH):
    """Two endpoints on one host, as a gateway routing by path: ``allNEG`` matches nothing, ``ok``
    answers from the truth table. Returns how many questions each was asked."""
    asked = {"allNEG": 0, "ok": 0}

    def route(name, truth):
        def respond(body):
            asked[name] += 1
            direction, subject, _ = describe(body)
            return answer(direction, subject, truth.get((direction, subject)))
        return respond

    server.routes = {"allNEG": route("allNEG", {}), "ok": route("ok", truth)}
    return asked


def f1(folder):
    return json.loads((folder / "summary.json").read_text())["micro"]["f1"]


def test_two_endpoints_on_one_host_never_share_cached_answers(server, dataset, tmp_path):
    """Keyed on host:port, the second endpoint got the first one's answers: 0 calls, F1 0.0."""
    data, cfg = dataset
    asked = routes(server)
    for name in ("allNEG", "ok"):
        proc = run_cli("eval", data, "-c", cfg, "--model", "m", "--base-url", server.base_url_for(name),
                       "--cache-dir", tmp_path / "cache", "-o", tmp_path / name)
        assert proc.returncode == 0, proc.stderr
    assert asked == {"allNEG": CALLS, "ok": CALLS}
    assert f1(tmp_path / "allNEG") == 0.0 and f1(tmp_path / "ok") > 0.5


def test_resume_never_reuses_documents_judged_at_another_endpoint(server, dataset, tmp_path):
    """Keyed on host:port, a run at the other endpoint reused all 5 documents (F1 0.0)."""
    data, cfg = dataset
    asked = routes(server)
    out = tmp_path / "out"

    def run(name, *more):
        return run_cli("eval", data, "-c", cfg, "--model", "m", "--base-url", server.base_url_for(name),
                       "--no-cache", "-o", out, *more)

    assert run("allNEG").returncode == 0
    proc = run("ok")
    assert proc.returncode == 2 and "different judge (base_url)" in proc.stderr, proc.stderr
    proc = run("ok", "--overwrite")
    assert proc.returncode == 0 and "0 reused" in proc.stderr, proc.stderr
    assert asked == {"allNEG": CALLS, "ok": CALLS} and f1(out) > 0.5
    summary = json.loads((out / "summary.json").read_text())
    assert summary["judge"]["base_url"] == server.base_url_for("ok")


def test_a_users_own_client_is_keyed_on_its_own_base_url(server, tmp_path):
    """With a user's AsyncOpenAI client the key said api.openai.com whatever the client's URL."""
    openai = pytest.importorskip("openai")
    asked = routes(server, {("gold", "g1"): "p1", ("predicted", "p1"): "g1"})
    cache = ResponseCache(tmp_path / "cache")
    results = []
    for name in ("allNEG", "ok"):
        client = openai.AsyncOpenAI(api_key=KEY, base_url=server.base_url_for(name), max_retries=0)
        judge = LLMJudge("m", api_key=KEY, transport=Transport(backend="openai-sdk", client=client),
                         cache=cache)
        results.append(run_judge(G, P, {}, judge))
    assert asked == {"allNEG": 2, "ok": 2}
    assert [r.metrics.f1 for r in results] == [0.0, 1.0]
    assert judge.identity()["base_url"] == server.base_url_for("ok")


# --------------------------------------------------------------------------- item 16: numbers and URLs

BAD_OPTIONS = [
    (["--timeout", "inf"], "--timeout"),
    (["--timeout", "1e308"], "--timeout"),
    (["--temperature", "inf"], "--temperature"),
    (["--temperature", "2.5"], "--temperature"),
    (["--max-tokens", str(2**63)], "--max-tokens"),
    (["--price-in", "inf", "--dry-run"], "--price-in"),
    (["--price-out", "1e400", "--dry-run"], "--price-out"),
    (["--base-url", "http://127.0.0.1:99999/v1"], "--base-url"),
]


@pytest.mark.parametrize("args, option", BAD_OPTIONS, ids=[" ".join(a) for a, _ in BAD_OPTIONS])
def test_numbers_and_urls_that_cannot_work_are_refused_naming_the_option(server, dataset, tmp_path,
                                                                         args, option):
    """--timeout inf and a port 99999 gave tracebacks; --temperature inf wrote Infinity (not JSON)
    into request bodies and run.json; --price-in inf printed a cost of NaN."""
    data, cfg = dataset
    server.truth = TRUTH
    out = tmp_path / "out"
    base = [] if option == "--base-url" else ["--base-url", server.base_url]
    proc = run_cli("eval", data, "-c", cfg, "--model", "m", *base, *args, "-o", out)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert option in proc.stderr
    assert server.requests == [] and not out.exists()


BAD_SPECS = [
    ({"timeout": math.inf}, "--timeout"),
    ({"timeout": math.nan}, "--timeout"),
    ({"timeout": 0.0}, "--timeout"),
    ({"temperature": math.inf}, "--temperature"),
    ({"temperature": math.nan}, "--temperature"),
    ({"temperature": -0.5}, "--temperature"),
    ({"max_tokens": -1}, "--max-tokens"),
    ({"repeats": 0}, "--repeats"),
    ({"base_url": "http://h:99999/v1"}, "--base-url"),
]


@pytest.mark.parametrize("fields, option", BAD_SPECS, ids=[str(f) for f, _ in BAD_SPECS])
def test_a_judge_spec_that_cannot_work_is_refused_naming_the_option(server, fields, option):
    spec = JudgeSpec(models=("m",), **{"base_url": server.base_url, **fields})
    with pytest.raises(InputError) as exc:
        build_judge(spec)
    msg = str(exc.value)
    assert msg.startswith(option) and "\n" not in msg


BAD_JUDGES = [
    ({"sampling": Sampling(temperature=math.inf)}, "temperature"),
    ({"sampling": Sampling(temperature=3.0)}, "temperature"),
    ({"sampling": Sampling(max_tokens=-1)}, "max_tokens"),
    ({"transport": Transport(timeout=math.inf)}, "timeout"),
    ({"transport": Transport(timeout=math.nan)}, "timeout"),
    ({"transport": Transport(max_question_seconds=math.inf)}, "max_question_seconds"),
    ({"retry": RetryPolicy(backoff=math.nan)}, "backoff"),
    ({"retry": RetryPolicy(retries=-1)}, "retries"),
    ({"answer_retries": -1}, "answer_retries"),
]


@pytest.mark.parametrize("kwargs, name", BAD_JUDGES, ids=[n for _, n in BAD_JUDGES])
def test_the_llm_judge_refuses_numbers_that_cannot_work(server, kwargs, name):
    with pytest.raises(JudgeSetupError) as exc:
        LLMJudge("m", base_url=server.base_url, **kwargs)
    msg = str(exc.value)
    assert msg.startswith(name) and "\n" not in msg


# --------------------------------------------------------------------------- issue 32 item 11: a key in the query

QUERY_SECRETS = {"api-key": "qk-SECRET-apikey-1", "code": "qk-SECRET-code-2", "key": "qk-SECRET-key-3",
                 "sig": "qk-SECRET%2Bsig-4"}


def test_a_key_in_the_base_urls_query_is_sent_and_written_nowhere(server, dataset, tmp_path):
    """Gateways and Azure Functions take the key in the query (?api-key=, ?code=, ?key=, ?sig=): it
    reaches the server, and no output file, cache file or line on the terminal holds it; the rest
    of the query (api-version) is kept where the URL is shown."""
    data, cfg = dataset
    server.truth = TRUTH
    query = "api-version=2024-10-21&" + "&".join(f"{k}={v}" for k, v in QUERY_SECRETS.items())
    out, cache = tmp_path / "out", tmp_path / "cache"
    proc = run_cli("eval", data, "-c", cfg, "--model", "m", "--base-url", f"{server.base_url}?{query}",
                   "--cache-dir", cache, "-o", out, "--csv")
    assert proc.returncode == 0, proc.stderr
    assert server.paths[0] == f"/v1/chat/completions?{query}"  # sent as given
    secrets = [*QUERY_SECRETS.values(), "qk-SECRET+sig-4"]
    assert files_holding(out, *secrets) == [] and files_holding(cache, *secrets) == []
    assert not any(s in proc.stderr + proc.stdout for s in secrets)
    summary = json.loads((out / "summary.json").read_text())
    shown = summary["judge"]["base_url"]
    assert shown == f"{server.base_url}?api-version=2024-10-21&api-key=***&code=***&key=***&sig=***"
    from factjudge.cli.mlflow_hook import run_params  # what eval --mlflow logs as the run's params

    assert not any(s in json.dumps(run_params(summary)) for s in secrets)


def test_a_key_in_the_query_is_hidden_from_messages_and_the_specs_repr(server):
    """A server quoting the URL in its refusal: the stop says it without the key."""
    url = f"{server.base_url}?code={QUERY_SECRETS['code']}"
    server.responder = lambda body: Reply(status=401, body=json.dumps({"error": {"message": f"bad {url}"}}))
    with pytest.raises(JudgeSetupError) as info:
        run_judge(G, P, {}, LLMJudge("m", base_url=url, api_key="none"))
    assert QUERY_SECRETS["code"] not in str(info.value)
    assert QUERY_SECRETS["code"] not in repr(JudgeSpec(models=("m",), base_url=url))


# --------------------------------------------------------------------------- redacted before cut

#: A key long enough to straddle the cut of any quote of a server's text (80 and 300 characters):
#: cut first, its first part stayed, and the whole key (what redaction looks for) was no longer there.
LONG_KEY = "sk-proj-" + "LONGSECRET" * 10
SHOWN = LONG_KEY[:14]  # any start of it that is longer than "sk-proj-"


def long_key_judge(base_url, backend, **kw):
    return LLMJudge("m", base_url=base_url, api_key=LONG_KEY, retry=RetryPolicy(retries=0, backoff=0.01),
                    answer_retries=0, transport=Transport(backend=backend, warmup=False), **kw)


def shown_facts(result):
    return json.dumps(result.gold_facts + result.predicted_facts)


@pytest.mark.parametrize("backend", ["http", "openai-sdk"])
def test_a_200_not_json_quoting_a_long_key_shows_no_part_of_it(server, backend):
    if backend == "openai-sdk":
        pytest.importorskip("openai")
    server.responder = lambda body: Reply(body="x" * 60 + " " + LONG_KEY, headers={"content-type": "text/plain"})
    with pytest.raises(JudgeSetupError) as exc:  # no chat completion to any try of the first question
        run_judge(G, P, {}, long_key_judge(server.base_url, backend))
    assert "not JSON" in str(exc.value) and SHOWN not in str(exc.value)


@pytest.mark.parametrize("backend", ["http", "openai-sdk", "anthropic"])
def test_a_refusal_quoting_a_long_key_shows_no_part_of_it(server, backend):
    if backend == "openai-sdk":
        pytest.importorskip("openai")
    words = "x" * 280 + " " + LONG_KEY
    if backend == "anthropic":
        server.responder = lambda body: Reply(content=words, stop_reason="refusal")
        base = f"http://127.0.0.1:{server.port}"
    else:
        server.responder = lambda body: Reply(content=None, message={"refusal": words})
        base = server.base_url
    text = shown_facts(run_judge(G, P, {}, long_key_judge(base, backend)))
    assert "the model refused" in text and SHOWN not in text


def test_a_loading_servers_health_quoting_a_long_key_shows_no_part_of_it(server):
    """llama.cpp's /health message while it loads is said (cut at 80 characters)."""
    server.truth = {("gold", "g1"): "p1", ("predicted", "p1"): "g1"}
    server.llama_health, server.loading_seconds = True, 1.0
    server.loading_message = "Loading model " + "x" * 40 + " " + LONG_KEY
    said = []
    run_judge(G, P, {}, long_key_judge(server.base_url, "http", notify=said.append))
    assert any("to load its model" in line for line in said), said
    assert not any(SHOWN in line for line in said), said
