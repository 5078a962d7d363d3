"""The dry run's token estimate against what a real server reports (issue #36 item 5): for an
invoice case (two documents of 8+8 facts, ``--judge llm``), ``factjudge eval --dry-run`` and then
the same run for real, with an empty response cache; prints the estimated and the reported prompt
and completion tokens, the error of each, and the 25% limit the issue sets.

Against llama.cpp's server (``xllamacpp``) with Qwen2.5-Coder-1.5B, started here through
tests/realserver.py (the GGUF assembled in its models cache), or against a running server with
``--base-url``. Prompt tokens are estimated by the judge's counter: tiktoken's encoding for
OpenAI's models when its file is cached locally, else UTF-8 bytes / 3 (llama.cpp's Qwen tokenizer
is not OpenAI's). Completion tokens: the answer length measured per ``--reasoning``
(judges/llm/tokens.py ANSWER_TOKENS); before #36 the dry run assumed 200 per answer, shown beside.

With ``--openai`` (seconds, no API key, no network): OpenAI's models, whose prompt tokens can be
counted exactly offline. The dry run with ``--model gpt-4o-mini`` (tokens by tiktoken's o200k_base,
from the ``bpe-openai`` wheel as benchmarks/cost.py does: ``pip install tiktoken bpe-openai``),
then the same eval for real against tests/scripted_server.py, which records the request bodies;
their messages are counted as OpenAI documents it for gpt-4o and gpt-4o-mini (cookbook "How to
count tokens with tiktoken": o200k_base tokens of each message's content, 3 per message, 1 per
name, 3 priming the reply). The ``response_format`` schema is billed too, by an undocumented
framing: its o200k_base tokens are shown beside. Completion tokens cannot be measured without the
API (the scripted server reports a fixed 20): only the estimate's basis is printed.

Run from the repository root (minutes on 2 shared cores):

    PYTHONPATH=src python benchmarks/dry_run_estimate.py [--base-url URL --model NAME] [--reasoning full]
    PYTHONPATH=src python benchmarks/dry_run_estimate.py --openai [--model gpt-4o-mini] [--reasoning full]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 0.25
OLD_COMPLETION = 200  # the dry run's assumption before #36


def invoice_docs() -> list[dict[str, object]]:
    """Two invoices as an extractor gets them: totals, ids, dates, parties; a few wrong."""
    docs = []
    for n, (total, inv) in enumerate((("936.32 EUR", "INV-0077"), ("12,480.00 USD", "INV-0131"))):
        gold = [
            {"id": f"g{n}1", "fact_type": "invoice_total", "total": total, "invoice_number": inv},
            {"id": f"g{n}2", "fact_type": "invoice_id", "invoice_number": inv, "issued": "2024-03-01"},
            {"id": f"g{n}3", "fact_type": "vendor", "name": "Acme Industrial Supplies GmbH", "vat_id": "DE811907980"},
            {"id": f"g{n}4", "fact_type": "customer", "name": "Northwind Traders Ltd", "city": "London"},
            {"id": f"g{n}5", "fact_type": "due_date", "date": "2024-03-31", "terms": "net 30"},
            {"id": f"g{n}6", "fact_type": "line_item", "item": "Hydraulic pump HP-200", "quantity": 2,
             "amount": "410.00 EUR"},
            {"id": f"g{n}7", "fact_type": "line_item", "item": "Seal kit SK-9", "quantity": 4,
             "amount": "96.32 EUR"},
            {"id": f"g{n}8", "fact_type": "tax", "rate": "19%", "amount": "149.50 EUR"},
        ]
        pred = [
            {"id": f"p{n}1", "fact_type": "invoice_total", "total": total.replace(".32", ".33"), "invoice_number": inv},
            {"id": f"p{n}2", "fact_type": "invoice_id", "invoice_number": "2024-" + inv, "issued": "1 March 2024"},
            {"id": f"p{n}3", "fact_type": "vendor", "name": "ACME Industrial Supplies", "vat_id": "DE 811 907 980"},
            {"id": f"p{n}4", "fact_type": "customer", "name": "Northwind Traders", "city": "London, UK"},
            {"id": f"p{n}5", "fact_type": "due_date", "date": "31/03/2024", "terms": "30 days net"},
            {"id": f"p{n}6", "fact_type": "line_item", "item": "HP-200 hydraulic pump", "quantity": 2,
             "amount": "410 EUR"},
            {"id": f"p{n}7", "fact_type": "line_item", "item": "Seal kit (SK-9)", "quantity": 4,
             "amount": "96.32 EUR"},
            {"id": f"p{n}8", "fact_type": "tax", "rate": "0.19", "amount": "149.5 EUR"},
        ]
        docs.append({"doc_id": f"invoice-{n}", "gold_facts": gold, "predicted_facts": pred})
    return docs


def factjudge(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    exe = [sys.executable, "-m", "factjudge"]
    return subprocess.run([*exe, *args], capture_output=True, text=True, env=env, timeout=7200, check=False)


def error(estimate: float, reported: float) -> str:
    e = (estimate - reported) / reported if reported else float("nan")
    return f"{e:+.1%} ({'within' if abs(e) <= LIMIT else 'OUTSIDE'} the {LIMIT:.0%} limit)"


#: OpenAI's documented chat framing for gpt-4o / gpt-4o-mini (cookbook "How to count tokens with
#: tiktoken", num_tokens_from_messages): per message, per name, and priming the reply.
OPENAI_PER_MESSAGE, OPENAI_PER_NAME, OPENAI_REPLY = 3, 1, 3


#: Keys OpenAI's count of a structured-output schema leaves out, and the tokens it adds, as a user
#: fitted them to the usage OpenAI reported (openai/openai-cookbook#2140; OpenAI documents none).
SCHEMA_OMITTED, SCHEMA_FRAMING = ("required", "additionalProperties", "$schema"), 9


def _without(value: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, keys) for k, v in value.items() if k not in keys}
    return [_without(v, keys) for v in value] if isinstance(value, list) else value


def openai_prompt_tokens(body: dict[str, Any], encode: Any) -> tuple[int, int, int]:
    """A chat-completions body's prompt tokens as OpenAI documents counting them (messages only), the
    o200k_base tokens of its whole ``response_format``, and of its schema as #2140 fitted it."""
    tokens = OPENAI_REPLY
    for message in body["messages"]:
        tokens += OPENAI_PER_MESSAGE + sum(len(encode(v)) for v in message.values() if isinstance(v, str))
        tokens += OPENAI_PER_NAME if "name" in message else 0
    fmt = body.get("response_format")
    if not fmt:
        return tokens, 0, 0
    schema = fmt.get("json_schema", {}).get("schema")
    fitted = len(encode(json.dumps(_without(schema, SCHEMA_OMITTED), separators=(",", ":")))) + SCHEMA_FRAMING
    return tokens, len(encode(json.dumps(fmt, separators=(",", ":")))), fitted if schema else 0


def measure_openai(args: argparse.Namespace, data: Path, work: Path, env: dict[str, str]) -> None:
    """The dry run's prompt-token estimate against OpenAI's documented count of the requests sent."""
    sys.path.insert(0, str(ROOT / "tests"))
    import tiktoken
    from cost import o200k_from_bpe_openai
    from scripted_server import ScriptedServer

    from factjudge.judges.llm.tokens import TokenCounter

    o200k_from_bpe_openai()  # sets TIKTOKEN_CACHE_DIR for this process and the factjudge ones
    if not TokenCounter(args.model).name.startswith("tiktoken:"):  # never a download
        sys.exit(f"no local tiktoken encoding for {args.model}: pip install tiktoken bpe-openai")
    env = {**env, **{k: os.environ[k] for k in ("TIKTOKEN_CACHE_DIR",) if k in os.environ}}
    encode = tiktoken.get_encoding(tiktoken.encoding_name_for_model(args.model)).encode
    with ScriptedServer() as server:  # answers every question "no match": the prompts are what count
        common = ["eval", str(data), "--judge", "llm", "--model", args.model, "--base-url", server.base_url,
                  "--reasoning", args.reasoning]
        dry = factjudge(*common, "--dry-run", "-o", str(work / "dry"), env=env)
        if dry.returncode:
            sys.exit(dry.stderr)
        plan = json.loads(dry.stdout.strip().splitlines()[-1])
        real = factjudge(*common, "--no-cache", "-o", str(work / "out"), env=env)
        bodies = list(server.requests)
    counted = [openai_prompt_tokens(b, encode) for b in bodies]
    messages, schema, fitted = (sum(c[i] for c in counted) for i in range(3))
    estimate = plan["prompt_tokens"]
    print(f"invoice case, 2 documents x 8+8 facts, --judge llm --reasoning {args.reasoning}, {args.model} "
          f"(scripted server); dry run's counter {plan['token_counter']}")
    print(f"questions: {plan['calls']} estimated; {len(bodies)} requests sent; exit {real.returncode}")
    print(f"{'':>34} {'tokens':>8}  estimate's error")
    print(f"{'dry-run estimate':>34} {estimate:>8,}")
    print(f"{'counted: messages (documented)':>34} {messages:>8,}  {error(estimate, messages)}")
    print(f"{'  + schema as #2140 fitted it':>34} {messages + fitted:>8,}  {error(estimate, messages + fitted)}")
    print(f"{'  + whole response_format':>34} {messages + schema:>8,}  {error(estimate, messages + schema)}")
    n = len(bodies)
    print(f"per request: estimate {estimate / plan['calls']:.1f}; counted {messages / n:.1f} for the messages, "
          f"+{fitted / n:.1f} (fitted) or +{schema / n:.1f} (whole) for the schema, which OpenAI bills "
          f"by a framing it does not document")
    print(f"completion tokens: not measurable without OpenAI's API (the scripted server reports a fixed 20); "
          f"the estimate is {plan['estimated_completion_tokens']:,} = {plan['calls']} answers x the length "
          f"measured for --reasoning {args.reasoning} with Qwen2.5-Coder-1.5B (judges/llm/tokens.py ANSWER_TOKENS)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", help="a running OpenAI-compatible server (default: start Qwen on llama.cpp)")
    ap.add_argument("--model", default="qwen")
    ap.add_argument("--reasoning", default="full", choices=("full", "brief", "none"))
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--openai", action="store_true",
                    help="OpenAI's model (default gpt-4o-mini) against the scripted server, counted with o200k_base")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dry_run_estimate_"))
    data = work / "invoices.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in invoice_docs()), encoding="utf-8")
    env = {**os.environ, "FACTJUDGE_CACHE_DIR": str(work / "cache")}
    env.pop("OPENAI_API_KEY", None)
    if args.openai:
        if args.model == "qwen":
            args.model = "gpt-4o-mini"
        measure_openai(args, data, work, env)
        return
    server = None
    base_url = args.base_url
    if base_url is None:
        sys.path.insert(0, str(ROOT / "tests"))
        import realserver  # the test suite's llama.cpp server (xllamacpp)

        parts = realserver.qwen_parts()
        if isinstance(parts, str) or (missing := realserver.server_missing()):
            sys.exit(f"cannot start Qwen on llama.cpp: {parts if isinstance(parts, str) else missing}")
        gguf = realserver.assemble_qwen(parts, realserver.cache_dir())
        server = realserver.start(gguf, work / "server.log", args.slots, realserver.threads())
        base_url = server.base_url
    common = ["eval", str(data), "--judge", "llm", "--model", args.model, "--base-url", base_url,
              "--reasoning", args.reasoning, "--timeout", "900"]
    try:
        dry = factjudge(*common, "--dry-run", "-o", str(work / "dry"), env=env)
        if dry.returncode:
            sys.exit(dry.stderr)
        plan = json.loads(dry.stdout.strip().splitlines()[-1])
        real = factjudge(*common, "--no-cache", "-o", str(work / "out"), env=env)
        summary = json.loads((work / "out" / "summary.json").read_text(encoding="utf-8"))
    finally:
        if server is not None:
            server.stop()
    usage = summary["usage"]
    calls = plan["calls"]
    print(f"invoice case, 2 documents x 8+8 facts, --judge llm --reasoning {args.reasoning}, {args.model} at "
          f"{base_url}; tokens counted with {plan['token_counter']}")
    print(f"questions: {calls} estimated; {usage['llm_calls']} requests made ({usage.get('retries', 0)} retries, "
          f"{usage.get('reasks', 0)} re-asks); exit {real.returncode}")
    print(f"{'':>18} {'estimate':>10} {'reported':>10}  error")
    print(f"{'prompt tokens':>18} {plan['prompt_tokens']:>10,} {usage['prompt_tokens']:>10,}  "
          f"{error(plan['prompt_tokens'], usage['prompt_tokens'])}")
    print(f"{'completion tokens':>18} {plan['estimated_completion_tokens']:>10,} {usage['completion_tokens']:>10,}  "
          f"{error(plan['estimated_completion_tokens'], usage['completion_tokens'])}")
    old = calls * OLD_COMPLETION
    print(f"{'  before #36':>18} {old:>10,} {usage['completion_tokens']:>10,}  {error(old, usage['completion_tokens'])}"
          f"  (200 per answer)")
    print(f"per request reported: {usage['prompt_tokens'] / usage['llm_calls']:.0f} prompt, "
          f"{usage['completion_tokens'] / usage['llm_calls']:.0f} completion tokens; {usage['seconds']:.0f} s")


if __name__ == "__main__":
    main()
