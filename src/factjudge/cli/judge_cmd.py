"""``factjudge judge GOLD PREDICTED``: one document."""
from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path

import typer

from ..core.alerts import input_warnings, shape_of
from ..core.scope import field_check, scope_check
from ..errors import InputError
from ..evaluation.pipeline import judge_config_warnings, preview, run_judge_async
from ..io.facts import load_facts, one_document
from ..io.files import check_writable, same_file, write_atomic
from ..judges.base import run_info_of
from ..models import JudgeResult
from .app import app, run_command, say
from .gate import Gate, with_gate
from .options import CONFIG_OPT, QUIET_OPT, JudgeOptions, output_opt, with_judge_options
from .output import ProgressBar, price_usage, print_plan, summary_line


@app.command("judge")
@with_gate
@with_judge_options
def judge_cmd(
    gold: Path = typer.Argument(..., help="Gold facts (.json list, {\"facts\": [...]}, .jsonl, .csv, .tsv "
                                "or .parquet)."),
    predicted: Path = typer.Argument(..., help="Predicted facts, same formats."),
    config: Path | None = CONFIG_OPT,
    output: Path | None = output_opt("Write the JSON here (default: stdout)."),
    quiet: bool = QUIET_OPT,
    *,
    opts: JudgeOptions,
    gate: Gate,
) -> None:
    """Judge one document: per-fact TP/FP/FN, reconciled both ways, with P/R/F1."""
    run_command(lambda: _judge(gold, predicted, config, output, quiet, opts, gate),
                interrupted="no output written. Answers received so far are in the response "
                "cache: run the same command again to resume", after="; no output written")


def _judge(gold: Path, predicted: Path, config: Path | None, output: Path | None, quiet: bool,
           opts: JudgeOptions, gate: Gate) -> int:
    cfg = opts.config(config)
    gold_facts, pred_facts = load_facts(gold, cfg.columns), load_facts(predicted, cfg.columns)
    for path, facts in ((gold, gold_facts), (predicted, pred_facts)):
        one_document(facts, path, f"factjudge eval --gold {gold} --predicted {predicted} -o OUT")
    gc.freeze()  # the facts live to the end: the collector's full passes need not walk them again
    if output is not None and not opts.spec.dry_run:
        for source in (gold, predicted, config):
            if source is not None and same_file(output, source):
                raise InputError(f"{output}: is an input of this run; give another -o")
        check_writable(output)
    scope_warnings = scope_check(cfg, {f["fact_type"] for f in (*gold_facts, *pred_facts)},
                                 f"{gold} and {predicted}")
    scope_warnings += field_check(cfg, {k for f in (*gold_facts, *pred_facts) for k in f},
                                  f"{gold} and {predicted}")
    scope_warnings += input_warnings(shape_of(gold_facts, pred_facts))
    judge = opts.build(cfg)
    scope_warnings += judge_config_warnings(cfg, judge)
    if opts.spec.dry_run:
        print_plan(preview(gold_facts, pred_facts, cfg, judge), opts.prices, opts.spec.max_tokens)
        return 0

    async def run() -> JudgeResult:
        async with judge:
            with ProgressBar(enabled=not quiet and sys.stderr.isatty(), llm=bool(run_info_of(judge))) as bar:
                return await run_judge_async(gold_facts, pred_facts, cfg, judge,
                                             concurrency=opts.concurrency, progress=bar,
                                             in_place=True)  # the facts were loaded for this run

    result = asyncio.run(run())
    result.warnings[:0] = scope_warnings
    result.usage = price_usage(result.usage, opts.prices)
    if output is None:
        result.write_json(sys.stdout)
        sys.stdout.flush()
    else:
        try:
            write_atomic(output, result.write_json)
        except OSError as exc:
            raise InputError(f"{output}: cannot write the output: {exc.strerror or exc} (the LLM "
                             "answers are in the response cache: run again with another -o)") from None
    for warning in result.warnings:
        say(f"factjudge: warning: {warning}")
    if not quiet:
        say(summary_line(result))
    if result.metrics.errors:
        say(f"factjudge: {result.metrics.errors} fact(s) could not be judged (status ERROR); "
            "they are left out of precision and recall")
        return 1
    return gate.check(result.metrics.precision, result.metrics.recall, result.metrics.f1)
