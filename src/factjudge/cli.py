"""Command line: ``factjudge judge GOLD PREDICTED [options]``.

Exit codes: 0 ok, 1 finished with ERROR facts, 2 bad input or usage.
"""
from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .judges import Judge, JudgeSetupError
from .loading import InputError, load_config, load_facts
from .models import JudgeResult
from .pipeline import run_judge_async

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Score fact-extraction systems against gold facts.")
err = Console(stderr=True, highlight=False)


class JudgeKind(str, Enum):
    rules = "rules"
    llm = "llm"


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error to stderr and return the exit to raise."""
    err.print(f"factjudge: error: {message}", markup=False, soft_wrap=True)
    return typer.Exit(code)


def build_judge(kind: Optional[JudgeKind], model: Optional[str], base_url: Optional[str],
                api_key_env: str, temperature: float, max_tokens: Optional[int]) -> Judge:
    """``--judge llm`` or ``--model`` selects the LLM judge; otherwise the offline rules judge."""
    if kind is None:
        kind = JudgeKind.llm if model else JudgeKind.rules
    if kind is JudgeKind.rules:
        if model or base_url:
            raise fail("--model/--base-url are for the LLM judge; drop them or use --judge llm")
        from .rules import RulesJudge

        return RulesJudge()
    if not model:
        raise fail("--judge llm needs --model NAME")
    from .judges import OpenAIJudge

    try:
        return OpenAIJudge(model, base_url=base_url, api_key_env=api_key_env,
                           temperature=temperature, max_tokens=max_tokens)
    except JudgeSetupError as exc:
        raise fail(str(exc)) from None


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file, so a reader never sees half an output."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _fmt(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def summary_line(result: JudgeResult) -> str:
    m, u = result.metrics, result.usage
    cached = f" ({u.cached_prompt_tokens:,} cached)" if u.cached_prompt_tokens else ""
    return (f"gold: {m.tp_gold} TP, {m.fn} FN | predicted: {m.tp_predicted} TP, {m.fp} FP | "
            f"errors {m.errors} | out of scope {m.out_of_scope_gold}+{m.out_of_scope_predicted} | "
            f"P {_fmt(m.precision)} R {_fmt(m.recall)} F1 {_fmt(m.f1)} | "
            f"{u.llm_calls} calls, {u.prompt_tokens:,} prompt tokens{cached}, "
            f"{u.completion_tokens:,} completion tokens | {u.seconds:.2f}s")


class ProgressBar:
    """A rich progress bar over judge questions, on stderr; silent when stderr is not a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.bar = Progress(TextColumn("judging"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
                            console=err, transient=True, disable=not enabled)
        self.task = self.bar.add_task("judging", total=0, info="")
        self.errors = 0

    def __call__(self, total: int | None = None, verdict: Any = None) -> None:
        if total is not None:
            self.bar.update(self.task, total=(self.bar.tasks[0].total or 0) + total)
        if verdict is not None:
            self.errors += verdict.status == "ERROR"
            info = f"[red]{self.errors} errors[/red]" if self.errors else ""
            self.bar.update(self.task, advance=1, info=info)

    def __enter__(self) -> "ProgressBar":
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()


JUDGE_OPT = typer.Option(None, "--judge", help="rules (offline, default) or llm (default when --model is given).")
MODEL_OPT = typer.Option(None, "--model", help="Model name for the LLM judge.")
BASE_URL_OPT = typer.Option(None, "--base-url", help="OpenAI-compatible base URL (vLLM, Ollama, llama.cpp, Azure...).")
KEY_ENV_OPT = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key.")
CONC_OPT = typer.Option(8, "--concurrency", min=1, help="Judge calls in flight at once.")
TEMP_OPT = typer.Option(0.0, "--temperature", min=0.0, help="Sampling temperature of the LLM judge.")
MAXTOK_OPT = typer.Option(None, "--max-tokens", min=1, help="Max completion tokens per LLM call.")
CONFIG_OPT = typer.Option(None, "--config", "-c", help="Judge config (.json, .yaml, .yml).")
QUIET_OPT = typer.Option(False, "--quiet", "-q", help="No progress bar or summary on stderr.")


@app.command("judge")
def judge_cmd(
    gold: Path = typer.Argument(..., help="Gold facts (.json list, {\"facts\": [...]}, or .jsonl)."),
    predicted: Path = typer.Argument(..., help="Predicted facts, same formats."),
    config: Optional[Path] = CONFIG_OPT,
    judge: Optional[JudgeKind] = JUDGE_OPT,
    model: Optional[str] = MODEL_OPT,
    base_url: Optional[str] = BASE_URL_OPT,
    api_key_env: str = KEY_ENV_OPT,
    concurrency: int = CONC_OPT,
    temperature: float = TEMP_OPT,
    max_tokens: Optional[int] = MAXTOK_OPT,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the JSON here (default: stdout)."),
    quiet: bool = QUIET_OPT,
) -> None:
    """Judge one document: per-fact TP/FP/FN, reconciled both ways, with P/R/F1."""
    try:
        cfg = load_config(config)
        gold_facts, pred_facts = load_facts(gold), load_facts(predicted)
    except InputError as exc:
        raise fail(str(exc)) from None
    the_judge = build_judge(judge, model, base_url, api_key_env, temperature, max_tokens)

    async def run() -> JudgeResult:
        try:
            with ProgressBar(enabled=not quiet and err.is_terminal) as bar:
                return await run_judge_async(gold_facts, pred_facts, cfg, the_judge,
                                             concurrency=concurrency, progress=bar)
        finally:
            close = getattr(the_judge, "aclose", None)
            if close:
                await close()

    result = asyncio.run(run())
    text = result.to_json() + "\n"
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_atomic(output, text)
    if not quiet:
        err.print(summary_line(result), markup=False, soft_wrap=True)
    if result.metrics.errors:
        err.print(f"factjudge: {result.metrics.errors} fact(s) could not be judged (status ERROR); "
                  "they are left out of precision and recall", markup=False, soft_wrap=True)
        raise typer.Exit(1)


@app.callback()
def _root() -> None:
    """factjudge: score fact-extraction systems against gold facts."""


def main() -> None:
    app()


if __name__ == "__main__":
    main()
