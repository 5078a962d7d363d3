"""Reading the answers of the models people use today (issue #21 items 2, 3, 5): the judged id
pinned where the server compiles the schema per request, reasoning models' answers read where
they put them, and providers' structured-output dialects learnt from their refusals. The
servers' behaviours are emulated by the scripted server as the vendors document them."""
import json

import pytest
from evalkit import run_cli
from scripted_server import ID_KEYS, Reply, answer, describe, mode_of

from factjudge import LLMJudge, ResponseCache, run_judge
from factjudge.core.scope import compared_fields
from factjudge.judges.base import JudgePass
from factjudge.judges.llm import RetryPolicy, Sampling, Transport
from factjudge.judges.llm.backends import self_hosted
from factjudge.models import JudgeConfig

G = [{"id": f"g{i}", "fact_type": "revenue", "segment": f"s{i}", "value": i} for i in range(1, 6)]
P = [{"id": f"p{i}", "fact_type": "revenue", "segment": f"s{i}", "value": i} for i in range(1, 6)]
TRUTH = {**{("gold", f"g{i}"): f"p{i}" for i in range(1, 6)},
         **{("predicted", f"p{i}"): f"g{i}" for i in range(1, 6)}}


def judge_for(server, pin_id="auto", structured_output="auto", backend="http", **kw):
    return LLMJudge("m", base_url=server.base_url, retry=RetryPolicy(retries=2, backoff=0.01),
                    sampling=Sampling(structured_output=structured_output, pin_id=pin_id),
                    transport=Transport(backend=backend), **kw)


def statuses(result):
    return {f["id"]: (f["factjudge"]["status"], f["factjudge"]["matched_ids"])
            for f in result.gold_facts + result.predicted_facts}


def schema_of(request):
    fmt = request["response_format"]
    return fmt["json_schema"]["schema"] if fmt["type"] == "json_schema" else fmt["schema"]


# ------------------------------------------------------------------ item 5: the judged id pinned

def copycat(request):
    """A small model under a grammar (llama.cpp, vLLM, Ollama compile the schema per request):
    it writes the matched id into the judged-fact id field, as Qwen2.5-Coder-1.5B did for 6 of 30
    facts, unless the schema it received leaves it no other value than the judged id."""
    direction, subject, _ = describe(request)
    id_key, matched_key, _ = ID_KEYS[direction]
    matched = TRUTH[(direction, subject)]
    allowed = schema_of(request)["properties"][id_key].get("enum")
    data = {id_key: allowed[0] if allowed else matched, "reasoning": "same segment and value", matched_key: matched}
    return Reply(content=json.dumps(data))


def test_the_judged_id_is_pinned_on_a_self_hosted_server_and_every_fact_is_answered(server):
    server.responder = copycat
    result = run_judge(G, P, {}, judge_for(server))  # auto, at 127.0.0.1
    assert result.metrics.errors == 0 and result.metrics.f1 == 1.0
    for request in server.requests:
        direction, subject, _ = describe(request)
        assert schema_of(request)["properties"][ID_KEYS[direction][0]] == {"type": "string", "enum": [subject]}
        # the shared prefix stays byte-identical: only the schema, sent after it, is the question's
        assert list(request)[-1] == "response_format"
    assert "pin_id" in json.dumps(judge_for(server).identity())


def test_without_the_pin_the_copycat_answers_are_errors(server):
    server.responder = copycat
    result = run_judge(G, P, {}, judge_for(server, pin_id="never", answer_retries=1))
    assert result.metrics.errors == 10
    assert "gold_fact_id must be 'g1', got 'p1'" in result.gold_facts[0]["factjudge"]["description"]
    assert all(schema_of(r)["properties"][ID_KEYS[describe(r)[0]][0]] == {"type": "string"}
               for r in server.requests)


@pytest.mark.parametrize("url, local", [
    ("http://127.0.0.1:8080/v1", True), ("http://localhost:11434/v1", True), ("http://[::1]:8000/v1", True),
    ("http://10.0.0.7:8000/v1", True), ("http://192.168.1.20/v1", True), ("http://vllm:8000/v1", True),
    ("http://172.16.0.2:8000/v1", True), ("http://169.254.1.1/v1", True),
    ("https://api.openai.com/v1", False), ("https://generativelanguage.googleapis.com/v1beta/openai", False),
    ("https://api.deepseek.com", False), ("http://8.8.8.8/v1", False), (None, False)])
def test_self_hosted_is_decided_from_the_address_alone(url, local):
    assert self_hosted(url) is local


def _body(judge):
    questions, subject = JudgePass("gold", P, JudgeConfig(), compared_fields(G, P, JudgeConfig())[0]), G[0]
    return judge.open(questions).batch_request(subject).body


@pytest.mark.parametrize("pin_id, pinned", [("auto", False), ("always", True), ("never", False)])
def test_a_hosted_provider_keeps_one_schema_per_direction_unless_asked(pin_id, pinned):
    judge = LLMJudge("gpt-4o-mini", base_url="https://api.example.com/v1", api_key="k",
                     sampling=Sampling(pin_id=pin_id))
    schema = _body(judge)["response_format"]["json_schema"]["schema"]
    assert ("enum" in schema["properties"]["gold_fact_id"]) is pinned
    assert ("pin_id" in judge.identity()) is pinned


@pytest.mark.parametrize("subject_id", ['g"1', "g\\1", "g\u00e9\u2713", "g\x00", "\x00", "p1"])
@pytest.mark.parametrize("mode", ["json_schema", "json_object"])
def test_a_pinned_schema_holds_the_judged_id_whatever_its_characters(subject_id, mode):
    """Each question's schema is written once a direction with the id put in (request.pinned_format):
    the id is escaped where JSON escapes it, even the stand-in's own character or a candidate's id."""
    judge = LLMJudge("gpt-4o-mini", base_url="https://api.example.com/v1", api_key="k",
                     sampling=Sampling(pin_id="always", structured_output=mode))
    subject = {**G[0], "id": subject_id}
    questions = JudgePass("gold", P, JudgeConfig(), compared_fields([subject], P, JudgeConfig())[0])
    sent = judge.open(questions).batch_request(subject).body
    fmt = sent["response_format"]
    schema = fmt["json_schema"]["schema"] if mode == "json_schema" else fmt["schema"]
    assert schema["properties"]["gold_fact_id"] == {"type": "string", "enum": [subject_id]}
    assert schema["properties"]["matched_predicted_id"]["anyOf"][0]["enum"] == [p["id"] for p in P]


def test_pinned_and_free_answers_are_cached_apart(server, tmp_path):
    server.truth = TRUTH
    cache = ResponseCache(tmp_path / "c")
    run_judge(G, P, {}, judge_for(server, pin_id="never", cache=cache))
    calls = len(server.requests)
    run_judge(G, P, {}, judge_for(server, cache=cache))  # pinned: other requests, asked again
    assert len(server.requests) == 2 * calls
    run_judge(G, P, {}, judge_for(server, cache=cache))
    assert len(server.requests) == 2 * calls


def test_the_command_line_takes_pin_id(server, tmp_path):
    server.truth = TRUTH
    gold, pred = tmp_path / "g.jsonl", tmp_path / "p.jsonl"
    gold.write_text("".join(json.dumps(f) + "\n" for f in G))
    pred.write_text("".join(json.dumps(f) + "\n" for f in P))
    out = run_cli("judge", gold, pred, "--model", "m", "--base-url", server.base_url, "--pin-id", "never",
                  "-o", tmp_path / "out.json", "-q")
    assert out.returncode == 0, out.stderr
    assert all("enum" not in schema_of(r)["properties"][ID_KEYS[describe(r)[0]][0]] for r in server.requests)
    bad = run_cli("judge", gold, pred, "--model", "m", "--base-url", server.base_url, "--pin-id", "sometimes")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


# ------------------------------------------------------------------ item 2: reasoning models

THINKING = "Let me think. Candidate p9 {\"x\": 1} looks close but the segment differs. SECRET-THOUGHT"


def _shaped(shape):
    """A reply as each kind of reasoning server shapes it, the answer right."""
    def respond(request):
        direction, subject, _ = describe(request)
        content = answer(direction, subject, TRUTH[(direction, subject)]).content
        if shape == "vllm-reasoning":        # vLLM with a reasoning parser, Ollama
            return Reply(content=content, message={"reasoning": THINKING})
        if shape == "vllm-json-in-reasoning":  # vLLM's bug: content null, the JSON in the reasoning
            return Reply(content=None, message={"reasoning": f"{THINKING}\n{content}"})
        if shape == "reasoning_content":     # older vLLM, DeepSeek's deepseek-reasoner, SGLang
            return Reply(content="", message={"reasoning_content": f"{THINKING} {content}"})
        return Reply(content=f"<think>\n{THINKING}\n</think>\n\n{content}")  # R1/Qwen3, no parser
    return respond


@pytest.mark.parametrize("backend", ["http", "openai-sdk"])
@pytest.mark.parametrize("shape", ["vllm-reasoning", "vllm-json-in-reasoning", "reasoning_content", "think-block"])
def test_reasoning_models_answers_are_read_where_they_are(server, tmp_path, shape, backend):
    if backend == "openai-sdk":
        pytest.importorskip("openai")
    server.responder = _shaped(shape)
    cache = ResponseCache(tmp_path / "c")
    result = run_judge(G, P, {}, judge_for(server, backend=backend, cache=cache))
    assert result.metrics.errors == 0 and result.metrics.f1 == 1.0
    assert result.usage.retries == 0  # read at once, never re-asked
    assert "SECRET-THOUGHT" not in result.model_dump_json()  # the thinking stays out of the output
    cache.flush()
    assert not any(b"SECRET-THOUGHT" in p.read_bytes() for p in (tmp_path / "c").rglob("*") if p.is_file())


def test_a_thinking_block_never_closed_is_all_thinking_and_re_asked(server):
    server.truth = TRUTH
    server.faults[("gold", "g1")] = [Reply(content="<think>\nstill thinking {\"gold_fact_id\": \"g1\"")]
    result = run_judge(G, P, {}, judge_for(server))
    assert result.metrics.errors == 0 and result.usage.retries == 1
    reask = next(r for r in server.requests if len(r["messages"]) > 3)
    assert reask["messages"][3] == {"role": "assistant", "content": ""}
    assert "the answer was empty" in reask["messages"][4]["content"]


def test_blank_content_with_nothing_in_reasoning_is_an_empty_answer(server):
    server.truth = TRUTH
    server.faults[("gold", "g1")] = [Reply(content="   ")]  # DeepSeek's JSON Output, documented
    result = run_judge(G, P, {}, judge_for(server))
    assert result.metrics.errors == 0 and result.usage.retries == 1


# ------------------------------------------------------------------ item 3: provider dialects

def test_a_refused_schema_keyword_is_dropped_before_any_fallback(server):
    """Gemini's OpenAI-compatible endpoint: 400 "Unknown name "additionalProperties"": the run
    keeps json_schema, without the keyword, instead of falling to json_object and then none."""
    server.truth = TRUTH
    server.refuse_keywords = {"additionalProperties"}
    said = []
    result = run_judge(G, P, {}, judge_for(server, notify=said.append, pin_id="never"))
    assert result.metrics.errors == 0 and result.metrics.f1 == 1.0
    assert result.usage.structured_output == "json_schema"
    answered = [r for r in server.requests if "additionalProperties" not in json.dumps(r["response_format"])]
    assert len(answered) == 10 and all(mode_of(r) == "json_schema" for r in answered)
    assert len(said) == 1 and "additionalProperties" in said[0]


def _reads_the_prompt(request):
    """DeepSeek's model: json_object constrains it to JSON, not to a schema (the ``schema`` beside
    it is llama-cpp-python's); it writes the answer's shape only when the prompt shows it."""
    direction, subject, _ = describe(request)
    if '"anyOf"' not in request["messages"][0]["content"]:  # the schema's text, not the instructions
        return Reply(content=json.dumps({"match": TRUTH[(direction, subject)]}))
    return answer(direction, subject, TRUTH[(direction, subject)])


def test_json_object_gets_the_schema_in_the_prompt_on_deepseek(server):
    server.deepseek = True
    server.responder = _reads_the_prompt
    said = []
    result = run_judge(G, P, {}, judge_for(server, notify=said.append))
    assert result.metrics.errors == 0 and result.metrics.f1 == 1.0
    assert result.usage.structured_output == "json_object"
    assert "This response_format type is unavailable now" in said[0]
    answered = [r for r in server.requests if mode_of(r) == "json_object"]
    assert len(answered) == 10  # each question once: the refusals were json_schema's
    for request in answered:
        assert "JSON" in request["messages"][0]["content"] and '"anyOf"' in request["messages"][0]["content"]


def test_both_dialects_at_once_drop_the_keyword_in_json_object_too(server):
    """A server refusing json_schema and the keyword: the keyword is left out of the schema in
    json_object and in the prompt alike."""
    server.truth = TRUTH
    server.reject_modes = {"json_schema"}
    server.refuse_keywords = {"additionalProperties"}
    result = run_judge(G, P, {}, judge_for(server, pin_id="never"))
    assert result.metrics.errors == 0 and result.usage.structured_output == "json_object"
    last = server.requests[-1]
    assert "additionalProperties" not in json.dumps(last["response_format"])


# ------------------------------------------------------------------ item 4: --reasoning full|brief|none

def schema_follower(request):
    """A server that writes what the schema it received allows: no ``reasoning`` key when the
    schema has none (as llama.cpp's grammar would make a model do)."""
    direction, subject, _ = describe(request)
    id_key, matched_key, _ = ID_KEYS[direction]
    data = {id_key: subject, "reasoning": "segment and value agree", matched_key: TRUTH[(direction, subject)]}
    if "reasoning" not in schema_of(request)["properties"]:
        del data["reasoning"]
    return Reply(content=json.dumps(data))


def system_of(request):
    return request["messages"][0]["content"]


@pytest.mark.parametrize("how", ["option", "config"])
def test_reasoning_none_asks_for_no_reasoning_field_and_reads_answers_without_one(server, tmp_path, how):
    server.responder = schema_follower
    (tmp_path / "g.json").write_text(json.dumps(G))
    (tmp_path / "p.json").write_text(json.dumps(P))
    (tmp_path / "cfg.yaml").write_text("reasoning: none\n" if how == "config" else "reasoning: full\n")
    flag = ["--reasoning", "none"] if how == "option" else []  # the option overrides the config key
    proc = run_cli("judge", tmp_path / "g.json", tmp_path / "p.json", "--config", tmp_path / "cfg.yaml",
                   "--model", "m", "--base-url", server.base_url, *flag, "-o", tmp_path / "out.json",
                   cache_dir=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["metrics"]["f1"] == 1.0 and out["metrics"]["errors"] == 0
    assert {f["factjudge"]["reasoning"] for f in out["gold_facts"]} == {"(no reasoning asked: reasoning none)"}
    for request in server.requests:
        schema = schema_of(request)
        assert "reasoning" not in schema["properties"] and "reasoning" not in schema["required"]
        assert "without reasoning" in system_of(request) and "field by field" not in system_of(request)


def test_reasoning_brief_asks_for_one_sentence_with_the_same_schema_and_another_cache_key(server, tmp_path):
    server.responder = schema_follower
    cache = tmp_path / "cache"
    (tmp_path / "g.json").write_text(json.dumps(G))
    (tmp_path / "p.json").write_text(json.dumps(P))

    def run(*flag):
        server.requests.clear()
        proc = run_cli("judge", tmp_path / "g.json", tmp_path / "p.json", "--model", "m", "--base-url",
                       server.base_url, *flag, "-o", tmp_path / "out.json", cache_dir=cache)
        assert proc.returncode == 0, proc.stderr
        return list(server.requests)

    full = run()
    assert all("field by field" in system_of(r) for r in full) and len(full) == 10
    brief = run("--reasoning", "brief")
    assert len(brief) == 10  # another prompt: not answered from the cache of the full run
    assert all("one short sentence" in system_of(r) and "field by field" not in system_of(r) for r in brief)
    by_question = {describe(r)[:2]: schema_of(r) for r in full}
    assert {describe(r)[:2]: schema_of(r) for r in brief} == by_question
    assert run("--reasoning", "brief") == []  # the same prompt again: the cache answers
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["gold_facts"][0]["factjudge"]["reasoning"] == "segment and value agree"


def test_an_answer_with_reasoning_when_none_was_asked_is_taken_and_the_reasoning_dropped(server, tmp_path):
    """A server that adds ``reasoning`` whatever the schema says (issue #32: every fact was ERROR):
    each answer is taken at once, its reasoning not kept."""
    calls = []

    def reasons_anyway(request):
        calls.append(request)
        data = json.loads(schema_follower(request).content)
        data["reasoning"] = "extra"
        return Reply(content=json.dumps(data))

    server.responder = reasons_anyway
    config = JudgeConfig(reasoning="none")
    result = run_judge(G, P, config, judge_for(server, structured_output="json_schema"))
    assert result.metrics.errors == 0 and result.metrics.f1 == 1.0
    assert len(calls) == 2 * len(G)  # no question asked twice
    assert {f["factjudge"]["reasoning"] for f in result.gold_facts} == {"(no reasoning asked: reasoning none)"}
