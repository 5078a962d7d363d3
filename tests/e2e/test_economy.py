"""Response cache, resume, token budget and shortlisting, offline token counting, dry run."""
import json
import signal
import subprocess
import sys
import time

import pytest
from evalkit import run_cli
from scripted_server import describe

from factjudge import LLMJudge, run_judge
from factjudge.judges.base import JudgeTask
from factjudge.judges.llm import RetryPolicy, Sampling, Transport
from factjudge.judges.llm.cache import ResponseCache
from factjudge.judges.llm.prompts import MAX_CANDIDATE_ENUM, Asked, direction_prefix, enum_fits
from factjudge.judges.llm.tokens import ESTIMATE_NAME, TokenCounter, estimate_tokens

GOLD = [{"id": f"g{i}", "fact_type": "revenue", "value": str(100 + i)} for i in range(6)]
PRED = [{"id": f"p{i}", "fact_type": "revenue", "value": str(100 + i)} for i in range(6)]
TRUTH = {**{("gold", f"g{i}"): f"p{i}" for i in range(6)},
         **{("predicted", f"p{i}"): f"g{i}" for i in range(6)}}


def judge_for(server, cache, model="m", warmup=True, temperature=0.0):
    return LLMJudge(model, base_url=server.base_url, retry=RetryPolicy(backoff=0.01), cache=cache,
                    sampling=Sampling(temperature=temperature), transport=Transport(warmup=warmup))


def without_usage(result):
    data = result.to_dict()
    data.pop("usage")
    return data


def test_same_inputs_hit_and_changes_miss(server, tmp_path):
    server.truth = TRUTH
    cache = ResponseCache(tmp_path / "c")
    first = run_judge(GOLD, PRED, {}, judge_for(server, cache))
    assert first.usage.llm_calls == 12 and first.usage.cache_hits == 0 and len(cache) == 12
    second = run_judge(GOLD, PRED, {}, judge_for(server, cache))
    assert second.usage.llm_calls == 0 and second.usage.cache_hits == 12
    assert len(server.requests) == 12
    assert without_usage(second) == without_usage(first)
    third = run_judge(GOLD, PRED, {}, judge_for(server, cache))
    a, b = second.to_dict(), third.to_dict()
    a["usage"].pop("seconds"), b["usage"].pop("seconds")
    assert a == b  # fully cached runs are identical apart from timing

    def calls(config=None, gold=GOLD, pred=PRED, **kw):
        before = len(server.requests)
        run_judge(gold, pred, config or {}, judge_for(server, cache, **kw))
        return len(server.requests) - before

    assert calls({"matching_rules": ["a new rule"]}) == 12          # rules change every prompt
    assert calls(model="other-model") == 12                        # model is in the key
    assert calls(temperature=0.5) == 12                            # sampling is in the key
    changed = [dict(GOLD[0], value="999"), *GOLD[1:]]
    # the changed gold fact is re-asked, and every predicted fact sees a new candidate list
    assert calls(gold=changed) == 1 + 6
    assert calls() == 0


def test_no_cache_when_none_and_invalid_answers_not_stored(server, tmp_path):
    from scripted_server import Reply
    server.truth = TRUTH
    cache = ResponseCache(tmp_path / "c")
    server.faults[("gold", "g0")] = [Reply(content="bad")] * 3
    result = run_judge(GOLD, PRED, {}, judge_for(server, cache))
    assert result.gold_facts[0]["factjudge"]["status"] == "ERROR"
    assert len(cache) == 11  # only validated answers are stored
    again = run_judge(GOLD, PRED, {}, judge_for(server, cache))
    assert again.usage.llm_calls == 1 and again.gold_facts[0]["factjudge"]["status"] == "TP"


@pytest.mark.slow
def test_cache_concurrent_writers(tmp_path):
    script = (
        "import sys; from factjudge.judges.llm.cache import ResponseCache\n"
        "c = ResponseCache(sys.argv[1])\n"
        "for i in range(300): c.put(f'{sys.argv[2]}-{i}', {'content': str(i)})\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), f"w{n}"]) for n in range(4)]
    assert [p.wait(60) for p in procs] == [0, 0, 0, 0]
    cache = ResponseCache(tmp_path)
    assert len(cache) == 1200 and cache.get("w3-299") == {"content": "299"}


@pytest.mark.slow
def test_resume_after_killed_run_asks_only_what_is_missing(server, tmp_path, write_json):
    gold = [{"id": f"g{i}", "fact_type": "t", "v": i} for i in range(20)]
    pred = [{"id": f"p{i}", "fact_type": "t", "v": i} for i in range(20)]
    server.truth = {**{("gold", f"g{i}"): f"p{i}" for i in range(20)},
                    **{("predicted", f"p{i}"): f"g{i}" for i in range(20)}}
    server.delay = 0.05
    g, p = write_json("g.json", gold), write_json("p.json", pred)
    cache_dir = tmp_path / "cache-resume"
    args = [sys.executable, "-m", "factjudge", "judge", str(g), str(p), "--model", "m",
            "--base-url", server.base_url, "--cache-dir", str(cache_dir), "--concurrency", "2", "-q"]
    proc = subprocess.Popen([*args, "-o", str(tmp_path / "killed.json")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    # answers are committed in batches (at most half a second apart): kill once some are
    while (len(server.requests) < 12 or not (cache_dir / "answers.sqlite3").exists()
           or not len(ResponseCache(cache_dir))) and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert not (tmp_path / "killed.json").exists()  # no partial output
    answered = len(ResponseCache(cache_dir))
    assert 0 < answered < 40
    server.requests.clear()
    done = subprocess.run([*args, "-o", str(tmp_path / "resumed.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 40 - answered  # only the unanswered questions are asked again
    resumed = json.loads((tmp_path / "resumed.json").read_text())
    assert resumed["usage"]["cache_hits"] == answered
    fresh = run_judge(gold, pred, {}, judge_for(server, None))
    resumed.pop("usage")
    assert resumed == without_usage(fresh)


def test_shortlisting_when_the_prompt_does_not_fit(server):
    gold = [{"id": "g0", "fact_type": "revenue", "entity": "Contoso", "value": "100"}]
    pred = [{"id": f"p{i}", "fact_type": "revenue" if i % 2 else "ceo",
             "entity": "Contoso" if i == 7 else f"Other company number {i}", "value": str(100 + i),
             "padding": "x" * 200} for i in range(40)]
    server.truth = {("gold", "g0"): "p7", ("predicted", "p7"): "g0"}
    result = run_judge(gold, pred, {"max_prompt_tokens": 1200}, judge_for(server, None))
    req = next(r for r in server.requests if describe(r)[0] == "gold")
    kept = describe(req)[2]
    assert 0 < len(kept) < 40 and "p7" in kept
    # same fact_type first: every kept candidate is a revenue fact
    assert all(int(k[1:]) % 2 == 1 for k in kept)
    assert kept == sorted(kept, key=lambda k: int(k[1:]))  # shown in input order
    g = result.gold_facts[0]
    assert g["factjudge"]["status"] == "TP" and g["factjudge"]["matched_ids"] == ["p7"]
    assert f"context truncated: {len(kept)} of 40 candidates kept (max_prompt_tokens=1200)" in \
        g["factjudge"]["description"]
    assert result.usage.token_counter  # the counter used is reported


def test_shortlist_top_k_and_too_large_error(server):
    pred = [{"id": f"p{i}", "fact_type": "t", "v": i} for i in range(10)]
    gold = [{"id": "g0", "fact_type": "t", "v": 3}]
    run_judge(gold, pred, {"shortlist_top_k": 3}, judge_for(server, None))
    req = next(r for r in server.requests if describe(r)[0] == "gold")
    assert len(describe(req)[2]) == 3
    assert "3 of 10 candidates kept (shortlist_top_k=3)" in run_judge(
        gold, pred, {"shortlist_top_k": 3}, judge_for(server, None)).gold_facts[0]["factjudge"]["description"]
    server.requests.clear()
    huge = [{"id": "g0", "fact_type": "t", "text": "word " * 2000}]
    result = run_judge(huge, pred, {"max_prompt_tokens": 500}, judge_for(server, None))
    g = result.gold_facts[0]
    assert g["factjudge"]["status"] == "ERROR" and "even with one candidate" in g["factjudge"]["description"]
    assert "g0" not in server.subjects("gold")  # never sent


def test_enum_limit_caps_candidates():
    assert enum_fits([f"p{i}" for i in range(MAX_CANDIDATE_ENUM)])
    assert not enum_fits([f"p{i}" for i in range(MAX_CANDIDATE_ENUM + 1)])
    assert not enum_fits(["x" * 60 for _ in range(300)])  # >250 values, >15,000 characters
    judge = LLMJudge("m", base_url="http://127.0.0.1:9/v1")
    from factjudge.models import JudgeConfig
    cands = [{"id": f"candidate-{i:05d}", "fact_type": "t"} for i in range(1200)]
    cfg = JudgeConfig(max_prompt_tokens=10_000_000)
    task = Asked(JudgeTask("gold", {"id": "g", "fact_type": "t"}, cands, cfg), direction_prefix("gold", cands, cfg))
    prepared = judge.prepare(task)
    assert enum_fits(prepared.asked.task.candidate_ids) and len(prepared.asked.task.candidates) < 1200
    assert "the schema's enum limit" in prepared.note


def test_offline_token_counter_falls_back(monkeypatch, tmp_path):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    counter = TokenCounter("gpt-4o")
    assert counter.name == ESTIMATE_NAME  # no download attempted, no crash
    assert counter.text("abcdef") == estimate_tokens("abcdef") == 2
    assert counter.messages([{"role": "user", "content": "abcdef"}]) > 2
    assert estimate_tokens("é" * 3) == 2  # counts UTF-8 bytes: conservative for non-ASCII


def test_dry_run_makes_no_call(server, write_json, tmp_path):
    server.truth = TRUTH
    g, p = write_json("g.json", GOLD), write_json("p.json", PRED)
    run_judge(GOLD[:2], PRED, {}, judge_for(server, ResponseCache(tmp_path / "dc")))
    server.requests.clear()
    proc = run_cli("judge", g, p, "--model", "m", "--base-url", server.base_url, "--cache-dir", tmp_path / "dc",
                   "--dry-run", "--price-in", "2.5", "--price-out", "10")
    assert proc.returncode == 0, proc.stderr
    assert server.requests == []
    plan = json.loads(proc.stdout.strip().splitlines()[-1])
    # g0, g1 were answered with the full predicted list: cached. Predicted facts saw a different
    # gold list (2 facts) then, so all 6 predicted questions are new.
    assert plan["gold"]["cache_hits"] == 2 and plan["gold"]["calls"] == 4
    assert plan["predicted"]["calls"] == 6 and plan["calls"] == 10
    assert plan["prompt_tokens"] >= plan["prompt_tokens_after_prefix_cache"] > 0
    assert plan["estimated_cost"] > 0 and "dry run: no call made" in proc.stdout
    # a preview of OpenAI itself needs no key either: it calls nothing
    proc = run_cli("judge", g, p, "--model", "gpt-4o-mini", "--no-cache", "--dry-run", env={"OPENAI_BASE_URL": None})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1])["calls"] == 12


def test_warmup_sends_each_directions_first_call_alone(server):
    import asyncio
    server.truth = TRUTH
    received_before_first_answer = {}
    wait_for = {"gold": 1, "predicted": 1}
    base = server.responder

    def arrived(direction):
        return sum(describe(r)[0] == direction for r in server.requests)

    async def record(req):
        # the first answer of a direction waits until the expected requests have arrived (10 s at
        # most): counts, not timing, decide what was in flight before the first answer
        direction = describe(req)[0]
        if direction not in received_before_first_answer:
            for _ in range(1000):
                if arrived(direction) >= wait_for[direction]:
                    break
                await asyncio.sleep(0.01)
            received_before_first_answer[direction] = arrived(direction)
        return base(req)
    server.responder = record
    run_judge(GOLD, PRED, {}, judge_for(server, None), concurrency=16)
    assert received_before_first_answer == {"gold": 1, "predicted": 1}
    received_before_first_answer.clear()
    server.requests.clear()
    wait_for = {"gold": 6, "predicted": 6}
    run_judge(GOLD, PRED, {}, judge_for(server, None, warmup=False), concurrency=16)
    assert received_before_first_answer == {"gold": 6, "predicted": 6}  # without warm-up: all at once


def test_ctrl_c_exits_130_without_output_or_traceback(server, tmp_path, write_json):
    server.truth = TRUTH
    server.delay = 0.3
    g, p = write_json("g.json", GOLD), write_json("p.json", PRED)
    out = tmp_path / "out.json"
    proc = subprocess.Popen([sys.executable, "-m", "factjudge", "judge", str(g), str(p), "--model", "m",
                             "--base-url", server.base_url, "--concurrency", "1", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # Ctrl-C as at a terminal, even when this suite runs in the background
                            # (where a non-interactive shell starts it with SIGINT ignored)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while len(server.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "Traceback" not in stderr and "run the same command again to resume" in stderr
    assert not out.exists()


def test_shortlist_skips_a_candidate_too_large_and_keeps_the_match():
    from factjudge.judges.llm.prompts import prepare_call
    from factjudge.models import JudgeConfig
    counter = TokenCounter("")
    # ranked first (it contains every word of the subject) but alone over the budget
    huge = {"id": "p0", "fact_type": "t", "name": "Contoso " + "filler " * 400, "value": "100"}
    cands = [huge, {"id": "p1", "fact_type": "t", "name": "Contoso", "value": "100"},
             {"id": "p2", "fact_type": "t", "name": "Fabrikam", "value": "7"}]
    cfg = JudgeConfig(max_prompt_tokens=1000)
    subject = {"id": "g", "fact_type": "t", "name": "Contoso", "value": "100"}
    task = Asked(JudgeTask("gold", subject, cands, cfg), direction_prefix("gold", cands, cfg))
    prepared = prepare_call(task, lambda t: counter.messages(t.messages()), counter.text)
    assert prepared.asked.task.candidate_ids == ["p1", "p2"]
    assert prepared.prompt_tokens <= 1000
    assert "2 of 3 candidates kept" in prepared.note


def test_corrupt_tiktoken_file_is_left_alone_and_nothing_downloads(monkeypatch, tmp_path):
    pytest.importorskip("tiktoken")
    import hashlib

    from factjudge.judges.llm.tokens import _ENCODING_FILES
    url, _ = _ENCODING_FILES["o200k_base"]
    cache = tmp_path / "tiktoken"
    cache.mkdir()
    cached = cache / hashlib.sha1(url.encode()).hexdigest()
    cached.write_bytes(b"half a download")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    assert TokenCounter("gpt-4o").name == ESTIMATE_NAME
    # tiktoken itself deletes a file whose hash differs and fetches it again
    assert cached.read_bytes() == b"half a download"
    assert TokenCounter("llama3.1").name == ESTIMATE_NAME  # not an OpenAI model: no OpenAI encoding


def test_candidates_same_type_previews_fewer_tokens_and_no_call_for_a_type_the_other_side_lacks(
        write_json, tmp_path):
    """``--candidates same_type`` (or the config key): each question shows the candidates of its
    fact_type only; a fact whose type the other side lacks asks nothing (nor does it by default)."""
    gold = [{"id": f"g{i}", "fact_type": f"t{i % 3}", "value": f"{i} units"} for i in range(9)]
    pred = [{"id": f"p{i}", "fact_type": f"t{i % 2}", "value": f"{i} units"} for i in range(8)]
    g, p = write_json("g.json", gold), write_json("p.json", pred)
    (tmp_path / "cfg.yaml").write_text("candidates: same_type\n")

    def plan(*args):
        proc = run_cli("judge", g, p, "--model", "gpt-4o-mini", "--no-cache", "--dry-run", *args,
                       env={"OPENAI_BASE_URL": None})
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    every, by_type = plan(), plan("--candidates", "same_type")
    assert plan("--config", tmp_path / "cfg.yaml") == by_type
    # g2, g5, g8 (t2): no call, with every candidate shown too (their only answer is FN)
    assert every["gold"]["calls"] == by_type["gold"]["calls"] == 6
    assert by_type["predicted"]["calls"] == 8
    assert by_type["prompt_tokens"] < every["prompt_tokens"] * 0.9  # the same calls, half the candidates each
