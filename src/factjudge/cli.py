"""Command line: ``factjudge judge GOLD PREDICTED [options]``.

Exit codes: 0 ok, 1 finished with ERROR facts, 2 bad input or usage.
"""
from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from .cache import ResponseCache
from .errors import JudgeSetupError
from .judges import HybridJudge, Judge, LLMJudge, RulesJudge
from .loading import InputError, check_writable, load_config, load_facts, write_atomic
from .models import JudgeResult
from .pipeline import preview, run_judge_async
from .report import fmt

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Score fact-extraction systems against gold facts.")
err = Console(stderr=True, highlight=False)


class JudgeKind(str, Enum):
    rules = "rules"
    llm = "llm"
    hybrid = "hybrid"


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error to stderr and return the exit to raise."""
    err.print(f"factjudge: error: {message}", markup=False, soft_wrap=True)
    return typer.Exit(code)


class Backend(str, Enum):
    http = "http"
    openai_sdk = "openai-sdk"


class StructuredOutputMode(str, Enum):
    auto = "auto"
    json_schema = "json_schema"
    json_object = "json_object"
    none = "none"


def build_judge(kind: Optional[JudgeKind], model: Optional[str], base_url: Optional[str],
                api_key_env: Optional[str] = None, temperature: float = 0.0,
                max_tokens: Optional[int] = None, *, cache_dir: Optional[Path] = None,
                no_cache: bool = False, warmup: bool = True,
                prompt_cache_key: bool = True, dry_run: bool = False,
                backend: Backend = Backend.http, timeout: float = 120.0,
                structured_output: Optional[StructuredOutputMode] = None,
                config_structured_output: Optional[str] = None) -> Judge:
    """``--judge llm`` or ``--model`` selects the LLM judge; otherwise the offline rules judge."""
    if kind is None:
        kind = JudgeKind.llm if model else JudgeKind.rules
    if kind is JudgeKind.rules:
        if model or base_url:
            raise fail("--model/--base-url are for the LLM judge; drop them or use --judge llm")
        if dry_run:
            raise fail("--dry-run previews LLM calls: add --model (and --judge llm or hybrid)")
        return RulesJudge()
    if not model:
        raise fail(f"--judge {kind.value} needs --model NAME")
    try:
        cache = None if no_cache else ResponseCache(cache_dir)
    except (OSError, sqlite3.Error) as exc:
        raise fail(f"cannot open the response cache in {cache_dir or 'the default cache directory'}:"
                   f" {exc} (use --cache-dir DIR or --no-cache)") from None
    mode = structured_output.value if structured_output else (config_structured_output or "auto")
    try:
        llm = LLMJudge(model, base_url=base_url, api_key_env=api_key_env,
                       api_key="unused: dry run" if dry_run else None,  # a preview calls nothing
                       temperature=temperature, max_tokens=max_tokens, cache=cache,
                       warmup=warmup, send_prompt_cache_key=prompt_cache_key,
                       backend=backend.value, timeout=timeout, structured_output=mode,
                       notify=lambda text: err.print(text, markup=False, soft_wrap=True))
    except JudgeSetupError as exc:
        # the judge names its Python arguments; here the user typed flags
        raise fail(str(exc).replace("pass api_key=", "set it").replace("base_url=", "--base-url")) from None
    if kind is JudgeKind.hybrid:
        return HybridJudge(RulesJudge(), llm)
    return llm


def usage_text(u: Any) -> str:
    if not (u.llm_calls or u.cache_hits):
        return "no LLM calls"
    cached = f" ({u.cached_prompt_tokens:,} cached)" if u.cached_prompt_tokens else ""
    hits = f", {u.cache_hits} cache hits" if u.cache_hits else ""
    saved = f", {u.llm_calls_saved} decided by rules" if u.llm_calls_saved else ""
    return (f"{u.llm_calls} calls{hits}{saved}, {u.prompt_tokens:,} prompt tokens{cached}, "
            f"{u.completion_tokens:,} completion tokens")


def summary_line(result: JudgeResult) -> str:
    m, u = result.metrics, result.usage
    return (f"gold: {m.tp_gold} TP, {m.fn} FN | predicted: {m.tp_predicted} TP, {m.fp} FP | "
            f"errors {m.errors} | out of scope {m.out_of_scope_gold}+{m.out_of_scope_predicted} | "
            f"P {fmt(m.precision)} R {fmt(m.recall)} F1 {fmt(m.f1)} | {usage_text(u)} | "
            f"{u.seconds:.2f}s")


class ProgressBar:
    """One bar over judge calls on stderr: calls/s, cache hits, errors, ETA, and documents done
    when ``start`` gives a dataset's totals. Silent when stderr is not a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.bar = Progress(TextColumn("judging"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[info]}"), TimeRemainingColumn(),
                            console=err, transient=True, disable=not enabled)
        self.task = self.bar.add_task("judging", total=0, info="")
        self.docs_total = self.docs_done = self.calls = self.cache_hits = self.errors = 0
        self.started = time.perf_counter()

    def start(self, to_judge: int, reused: int, questions: int) -> None:
        self.docs_total, self.docs_done = to_judge + reused, reused
        self.started = time.perf_counter()
        self.bar.update(self.task, total=questions)
        self._refresh(advance=0)

    def __call__(self, total: int | None = None, verdict: Any = None) -> None:
        if total is not None and not self.docs_total:  # a dataset's exact total comes from start()
            self.bar.update(self.task, total=(self.bar.tasks[0].total or 0) + total)
        if verdict is not None:
            self.calls += 1
            self.cache_hits += verdict.usage.cache_hits
            self.errors += verdict.status == "ERROR"
            self._refresh(advance=1)

    def document_done(self) -> None:
        self.docs_done += 1
        self._refresh(advance=0)

    def _refresh(self, advance: int) -> None:
        if self.bar.disable:  # no terminal: keep the counts, skip the text
            self.bar.advance(self.task, advance)
            return
        rate = self.calls / max(time.perf_counter() - self.started, 1e-9)
        info = f"{rate:.1f} calls/s | {self.cache_hits} cache hits"
        if self.docs_total:
            info = f"{self.docs_done}/{self.docs_total} docs | {info}"
        if self.errors:
            info += f" | [red]{self.errors} errors[/red]"
        self.bar.update(self.task, advance=advance, info=info)

    def __enter__(self) -> "ProgressBar":
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()


#: Completion tokens assumed per call in cost previews when --max-tokens is not given.
EST_COMPLETION_TOKENS = 200


def print_plan(plan: dict[str, Any], price_in: Optional[float], price_out: Optional[float],
               max_tokens: Optional[int]) -> None:
    """The dry run's report, on stdout: a table, then the same figures as JSON."""
    calls = plan["gold"]["calls"] + plan["predicted"]["calls"]
    before = plan["gold"]["prompt_tokens"] + plan["predicted"]["prompt_tokens"]
    after = (plan["gold"]["prompt_tokens_after_prefix_cache"]
             + plan["predicted"]["prompt_tokens_after_prefix_cache"])
    completion = calls * (max_tokens or EST_COMPLETION_TOKENS)
    lines = [f"dry run: no call made; tokens counted with {plan['token_counter']}"]
    if "documents" in plan:
        lines.append(f"documents: {plan['documents']} to judge, {plan['reused_documents']} finished "
                     "already (reused)")
    for d in ("gold", "predicted"):
        st = plan[d]
        lines.append(f"{d:>9} pass: {st['calls']} calls, {st['cache_hits']} answered by the response "
                     f"cache, {st['decided_by_rules']} decided by rules, {st['shortlisted']} shortlisted, "
                     f"{st['too_large']} too large; prompt tokens {st['prompt_tokens']:,} "
                     f"({st['prompt_tokens_after_prefix_cache']:,} after provider prefix caching)")
    lines.append(f"    total: {calls} calls, {before:,} prompt tokens, ~{after:,} uncached after prefix "
                 f"caching, ~{completion:,} completion tokens (estimated)")
    plan = {**plan, "calls": calls, "prompt_tokens": before, "prompt_tokens_after_prefix_cache": after,
            "estimated_completion_tokens": completion}
    if price_in is not None or price_out is not None:
        # cached prompt tokens are priced like the rest here: an upper bound
        cost_before = (before * (price_in or 0) + completion * (price_out or 0)) / 1e6
        cost_after = (after * (price_in or 0) + completion * (price_out or 0)) / 1e6
        lines.append(f"     cost: ~{cost_after:.4f} with prefix caching, at most {cost_before:.4f} "
                     "without (same currency as the prices)")
        plan.update(estimated_cost=round(cost_after, 6), estimated_cost_without_prefix_cache=round(cost_before, 6))
    typer.echo("\n".join(lines))
    typer.echo(json.dumps(plan))


JUDGE_OPT = typer.Option(None, "--judge", help="rules (offline, default), llm (default when --model is "
                         "given) or hybrid (rules for exact matches, LLM for the rest).")
MODEL_OPT = typer.Option(None, "--model", help="Model name for the LLM judge.")
BASE_URL_OPT = typer.Option(None, "--base-url", help="OpenAI-compatible base URL (vLLM, Ollama, llama.cpp, Azure...).")
KEY_ENV_OPT = typer.Option(None, "--api-key-env", help="Environment variable holding the API key "
                           "(default OPENAI_API_KEY; a local server given by --base-url needs none).")
CONC_OPT = typer.Option(8, "--concurrency", min=1, help="Judge calls in flight at once.")
TEMP_OPT = typer.Option(0.0, "--temperature", min=0.0, help="Sampling temperature of the LLM judge.")
MAXTOK_OPT = typer.Option(None, "--max-tokens", min=1, help="Max completion tokens per LLM call.")
CONFIG_OPT = typer.Option(None, "--config", "-c", help="Judge config (.json, .yaml, .yml).")
QUIET_OPT = typer.Option(False, "--quiet", "-q", help="No progress bar or summary on stderr.")
CACHE_DIR_OPT = typer.Option(None, "--cache-dir", help="Response cache directory (default: the user cache dir).")
NO_CACHE_OPT = typer.Option(False, "--no-cache", help="Do not read or write the response cache.")
WARMUP_OPT = typer.Option(True, "--warmup/--no-warmup", help="Send each direction's first LLM call alone so "
                          "the rest can hit the provider's prompt cache.")
DRY_RUN_OPT = typer.Option(False, "--dry-run", help="Print what the LLM calls would cost; call nothing.")
PRICE_IN_OPT = typer.Option(None, "--price-in", min=0, help="Price per million prompt tokens (dry run).")
PRICE_OUT_OPT = typer.Option(None, "--price-out", min=0, help="Price per million completion tokens (dry run).")
BACKEND_OPT = typer.Option(Backend.http, "--backend", help="How requests are sent: http (lean, default) "
                           "or openai-sdk (the openai package: pip install 'factjudge[openai]').")
TIMEOUT_OPT = typer.Option(120.0, "--timeout", min=0.001, help="Seconds one LLM request may take; one "
                           "question (all its tries) gets at most 3 times this.")
SO_OPT = typer.Option(None, "--structured-output", help="auto (default: json_schema, falling back to "
                      "json_object, then none when the server refuses it), json_schema, json_object "
                      "(llama-cpp-python's server) or none (schema in the prompt).")
PCK_OPT = typer.Option(True, "--prompt-cache-key/--no-prompt-cache-key",
                       help="Send OpenAI's prompt_cache_key (turn off for servers that reject it).")


@app.command("judge")
def judge_cmd(
    gold: Path = typer.Argument(..., help="Gold facts (.json list, {\"facts\": [...]}, or .jsonl)."),
    predicted: Path = typer.Argument(..., help="Predicted facts, same formats."),
    config: Optional[Path] = CONFIG_OPT,
    judge: Optional[JudgeKind] = JUDGE_OPT,
    model: Optional[str] = MODEL_OPT,
    base_url: Optional[str] = BASE_URL_OPT,
    api_key_env: Optional[str] = KEY_ENV_OPT,
    concurrency: int = CONC_OPT,
    temperature: float = TEMP_OPT,
    max_tokens: Optional[int] = MAXTOK_OPT,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the JSON here (default: stdout)."),
    quiet: bool = QUIET_OPT,
    cache_dir: Optional[Path] = CACHE_DIR_OPT,
    no_cache: bool = NO_CACHE_OPT,
    warmup: bool = WARMUP_OPT,
    prompt_cache_key: bool = PCK_OPT,
    dry_run: bool = DRY_RUN_OPT,
    price_in: Optional[float] = PRICE_IN_OPT,
    price_out: Optional[float] = PRICE_OUT_OPT,
    backend: Backend = BACKEND_OPT,
    timeout: float = TIMEOUT_OPT,
    structured_output: Optional[StructuredOutputMode] = SO_OPT,
) -> None:
    """Judge one document: per-fact TP/FP/FN, reconciled both ways, with P/R/F1."""
    try:
        cfg = load_config(config)
        gold_facts, pred_facts = load_facts(gold), load_facts(predicted)
        if output is not None and not dry_run:
            check_writable(output)
    except InputError as exc:
        raise fail(str(exc)) from None
    the_judge = build_judge(judge, model, base_url, api_key_env, temperature, max_tokens,
                            cache_dir=cache_dir, no_cache=no_cache, warmup=warmup,
                            prompt_cache_key=prompt_cache_key, dry_run=dry_run, backend=backend,
                            timeout=timeout, structured_output=structured_output)
    if dry_run:
        plan = preview(gold_facts, pred_facts, cfg, the_judge)
        print_plan(plan, price_in, price_out, max_tokens)
        return

    async def run() -> JudgeResult:
        try:
            with ProgressBar(enabled=not quiet and err.is_terminal) as bar:
                return await run_judge_async(gold_facts, pred_facts, cfg, the_judge,
                                             concurrency=concurrency, progress=bar)
        finally:
            await the_judge.aclose()

    try:
        result = asyncio.run(run())
    except KeyboardInterrupt:
        err.print("factjudge: interrupted; no output written. Answers received so far are in the "
                  "response cache: run the same command again to resume", markup=False, soft_wrap=True)
        raise typer.Exit(130) from None
    except sqlite3.Error as exc:
        raise fail(f"response cache: {exc} (try --cache-dir DIR or --no-cache)") from None
    except JudgeSetupError as exc:
        raise fail(f"{exc}; no output written") from None
    text = result.to_json() + "\n"
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        try:
            write_atomic(output, text)
        except OSError as exc:
            raise fail(f"{output}: cannot write the output: {exc.strerror or exc} (the LLM answers "
                       "are in the response cache: run again with another -o)") from None
    if not quiet:
        err.print(summary_line(result), markup=False, soft_wrap=True)
    if result.metrics.errors:
        err.print(f"factjudge: {result.metrics.errors} fact(s) could not be judged (status ERROR); "
                  "they are left out of precision and recall", markup=False, soft_wrap=True)
        raise typer.Exit(1)


@app.callback()
def _root() -> None:
    """factjudge: score fact-extraction systems against gold facts."""


from . import evaluate_cli  # noqa: E402,F401  (registers eval/compare)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
