"""What a run costs (#21 item 9): cached prompt tokens are discounted, not free. The dry run
prices the tokens its preview expects to be prefix-cached at --price-cached (or as input, and says
so); a live run with prices gives its cost from the tokens the server reported, in the summary
line and in ``usage`` (the judge JSON's, summary.json's)."""
import json
import re

import pytest
from evalkit import llm_args, run_cli, write_jsonl

#: gpt-4o-mini's prices per million tokens (https://developers.openai.com/api/docs/pricing, as
#: read on 2026-11-05): cached input is half the input price.
IN, CACHED, OUT = 0.15, 0.075, 0.60


def facts(n):
    """``n`` gold and ``n`` predicted revenue facts, g<i> and p<i> the same fact: enough text for a
    shared prefix past OpenAI's 1,024-token caching minimum."""
    gold = [{"id": f"g{i}", "fact_type": "revenue", "entity": f"Company {i} Holdings plc",
             "period": "FY2023", "value": f"{1000 + i:,}.5", "unit": "USD million"} for i in range(n)]
    pred = [{"id": f"p{i}", "fact_type": "revenue", "entity": f"Company {i} Holdings",
             "period": "fiscal 2023", "value": f"${1000 + i}.5 million", "unit": "USD"} for i in range(n)]
    return gold, pred


def plan_of(proc):
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def document(write_json):
    gold, pred = facts(60)
    return write_json("g.json", gold), write_json("p.json", pred)


def test_dry_run_prices_prefix_cached_tokens_at_the_cached_price(server, document, tmp_path):
    proc = run_cli("judge", *document, *llm_args(server, tmp_path / "c"), "--dry-run",
                   "--price-in", IN, "--price-cached", CACHED, "--price-out", OUT)
    plan = plan_of(proc)
    before, after = plan["prompt_tokens"], plan["prompt_tokens_after_prefix_cache"]
    completion = plan["estimated_completion_tokens"]
    assert 0 < after < before / 2  # most of the prompt is a cached prefix
    expected = (after * IN + (before - after) * CACHED + completion * OUT) / 1e6
    assert plan["estimated_cost"] == pytest.approx(expected, abs=1e-6)
    assert plan["estimated_cost_without_prefix_cache"] == pytest.approx(
        (before * IN + completion * OUT) / 1e6, abs=1e-6)
    assert plan["prices"] == {"input": IN, "cached": CACHED, "output": OUT}
    # today's figure priced cached tokens at zero: the estimate is above that
    assert plan["estimated_cost"] > (after * IN + completion * OUT) / 1e6
    line = next(ln for ln in proc.stdout.splitlines() if "cost:" in ln)
    assert "input 0.15, cached 0.075, output 0.6" in line
    assert f"~{expected:.4f}" in line
    assert server.requests == []


def test_dry_run_without_price_cached_prices_cached_tokens_as_input_and_says_so(server, document, tmp_path):
    proc = run_cli("judge", *document, *llm_args(server, tmp_path / "c"), "--dry-run",
                   "--price-in", IN, "--price-out", OUT)
    plan = plan_of(proc)
    expected = (plan["prompt_tokens"] * IN + plan["estimated_completion_tokens"] * OUT) / 1e6
    assert plan["estimated_cost"] == pytest.approx(expected, abs=1e-6)
    assert plan["prices"] == {"input": IN, "cached": None, "output": OUT}
    assert "cached prompt tokens priced as input (no --price-cached)" in proc.stdout


def cost_of(usage, cached_price=CACHED):
    """The cost of a run's reported tokens, worked out here."""
    uncached = usage["prompt_tokens"] - usage["cached_prompt_tokens"]
    return (uncached * IN + usage["cached_prompt_tokens"] * cached_price
            + usage["completion_tokens"] * OUT) / 1e6


def line_cost(stderr):
    match = re.search(r"\| cost ([0-9.,]+) from the tokens the server reported; (per million tokens: .*)$",
                      stderr, re.M)
    assert match, stderr
    return float(match.group(1).replace(",", "")), match.group(2)


def test_a_live_judge_run_gives_its_cost_in_usage_and_on_the_summary_line(server, document, tmp_path):
    out = tmp_path / "out.json"
    # as a hosted provider: the scripted server caches the schema with the prefix, as OpenAI does
    proc = run_cli("judge", *document, *llm_args(server, tmp_path / "c"), "-o", out, "--concurrency", "1",
                   "--pin-id", "never",
                   "--price-in", IN, "--price-cached", CACHED, "--price-out", OUT)
    assert proc.returncode == 0, proc.stderr
    usage = json.loads(out.read_text())["usage"]
    # the scripted server reports prompt_tokens_details.cached_tokens for a repeated prefix
    reported = sum(cached for _, _, cached in server.usage_log)
    assert usage["cached_prompt_tokens"] == reported > 0
    assert usage["cost"] == pytest.approx(cost_of(usage), abs=1e-6)
    assert usage["prices"] == {"input": IN, "cached": CACHED, "output": OUT}
    cost, prices = line_cost(proc.stderr)
    assert cost == pytest.approx(usage["cost"], abs=1e-4)
    assert "input 0.15, cached 0.075, output 0.6" in prices


def test_a_live_run_without_price_cached_prices_cached_tokens_as_input(server, document, tmp_path):
    out = tmp_path / "out.json"
    proc = run_cli("judge", *document, *llm_args(server, tmp_path / "c"), "-o", out,
                   "--price-in", IN, "--price-out", OUT)
    assert proc.returncode == 0, proc.stderr
    usage = json.loads(out.read_text())["usage"]
    assert usage["cost"] == pytest.approx(cost_of(usage, cached_price=IN), abs=1e-6)
    assert "cached prompt tokens priced as input (no --price-cached)" in line_cost(proc.stderr)[1]


def test_without_prices_a_live_run_names_no_cost(server, document, tmp_path):
    out = tmp_path / "out.json"
    proc = run_cli("judge", *document, *llm_args(server, tmp_path / "c"), "-o", out)
    assert proc.returncode == 0, proc.stderr
    usage = json.loads(out.read_text())["usage"]
    assert "cost" not in usage and "prices" not in usage and "cost" not in proc.stderr


def test_a_live_eval_gives_its_cost_in_summary_json_and_on_the_summary_line(server, tmp_path):
    gold, pred = facts(40)
    docs = [{"doc_id": d, "gold_facts": [{**f, "id": f"{d}-{f['id']}"} for f in gold],
             "predicted_facts": [{**f, "id": f"{d}-{f['id']}"} for f in pred]} for d in ("A", "B")]
    data = write_jsonl(tmp_path / "d.jsonl", docs)
    out = tmp_path / "out"
    proc = run_cli("eval", data, *llm_args(server, tmp_path / "c"), "-o", out, "--concurrency", "2",
                   "--pin-id", "never",
                   "--price-in", IN, "--price-cached", CACHED, "--price-out", OUT)
    assert proc.returncode == 0, proc.stderr
    usage = json.loads((out / "summary.json").read_text())["usage"]
    assert usage["cached_prompt_tokens"] > 0
    assert usage["cost"] == pytest.approx(cost_of(usage), abs=1e-6)
    assert usage["prices"] == {"input": IN, "cached": CACHED, "output": OUT}
    cost, prices = line_cost(proc.stderr)
    assert cost == pytest.approx(usage["cost"], abs=1e-4) and "cached 0.075" in prices
    report = (out / "report.md").read_text()
    assert f"| cost, from the tokens the server reported | {usage['cost']:.4f} |" in report
    assert "| prices | per million tokens: input 0.15, cached 0.075, output 0.6 |" in report


def test_prices_cost_and_description():
    from factjudge.models import Prices

    p = Prices(input=IN, cached=CACHED, output=OUT)
    # the example: 0.77 M prompt tokens, 98% cached at half price, 40 k completion tokens
    assert p.cost(770_000, 754_600, 40_000) == pytest.approx(0.00231 + 0.056595 + 0.024, abs=1e-6)
    assert Prices(input=IN, output=OUT).cost(770_000, 754_600, 40_000) == pytest.approx(0.1395, abs=1e-6)
    assert p.cost(100, 500, 0) == pytest.approx(100 * CACHED / 1e6)  # more cached than sent: capped
    assert Prices(output=OUT).describe() == ("per million tokens: input 0 (not given), cached prompt "
                                            "tokens priced as input (no --price-cached), output 0.6")


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "1e400"])
def test_an_impossible_cached_price_is_a_one_line_usage_error(document, value):
    proc = run_cli("judge", *document, "--model", "m", "--dry-run", "--price-cached", value)
    assert proc.returncode == 2
    assert "--price-cached" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_token_counts_beyond_float_range_from_a_server_are_not_taken(write_json, server, tmp_path):
    """A server reporting 10**400 tokens ended the run, once every question was answered, in an
    OverflowError traceback (the price is a float), and resuming crashed again on the stored usage.
    A count beyond COUNT_MAX is read as not reported: the run finishes, its usage and cost hold
    the sane counts only."""
    from scripted_server import Reply, answer, describe

    huge = 10**400

    def respond(request):
        direction, subject, candidates = describe(request)
        content = answer(direction, subject, candidates[0] if candidates else None).content
        return Reply(body=json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": huge, "completion_tokens": 7, "total_tokens": huge,
                      "prompt_tokens_details": {"cached_tokens": huge}}}))
    server.responder = respond
    gold, pred = facts(2)
    data = write_json("d.jsonl", [{"doc_id": "1", "gold_facts": gold, "predicted_facts": pred}])
    out = tmp_path / "out"

    def run():
        proc = run_cli("eval", data, *llm_args(server, tmp_path / "c"), "-o", out, "-q",
                       "--price-in", IN, "--price-out", OUT)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr
        return json.loads((out / "summary.json").read_text())["usage"]
    usage = run()
    assert (usage["prompt_tokens"], usage["cached_prompt_tokens"]) == (0, 0)
    assert usage["completion_tokens"] == 7 * usage["llm_calls"] > 0
    assert usage["cost"] == pytest.approx(usage["completion_tokens"] * OUT / 1e6, abs=1e-6)
    # an older version stored the count: resuming over it gives no cost rather than a traceback
    line = json.loads((out / "results.jsonl").read_text())
    line["usage"]["prompt_tokens"] = huge
    (out / "results.jsonl").write_text(json.dumps(line) + "\n")
    usage = run()
    assert usage["prompt_tokens"] == huge and usage.get("cost") is None
