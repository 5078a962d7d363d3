"""``factjudge calibrate LABELS.jsonl``: how well a judge agrees with labelled decisions."""
from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from ..errors import InputError
from ..evaluation.calibrate import CalibrationReport, builtin_labels_path, calibrate_async, format_report, load_labels
from ..io.files import check_writable, write_atomic
from ..models import Usage
from .app import app, run_command, say
from .options import CONFIG_OPT, JudgeOptions, output_opt, with_judge_options
from .output import cost_text, usage_text


@app.command("calibrate")
@with_judge_options
def calibrate_cmd(
    labels: Path | None = typer.Argument(None, help="Labels .jsonl: one {\"id\", \"gold_fact\", "
                                            "\"predicted_fact\", \"match\", \"category\"} per line."),
    builtin: bool = typer.Option(False, "--builtin", help="Use the calibration set shipped with factjudge."),
    config: Path | None = CONFIG_OPT,
    output: Path | None = output_opt("Also write the report as JSON here."),
    *,
    opts: JudgeOptions,
) -> None:
    """Judge labelled (gold, predicted) pairs and report accuracy, precision and recall of links,
    Cohen's kappa, per category and fact type, and every disagreement with the judge's reasoning."""
    run_command(lambda: _calibrate(labels, builtin, config, output, opts),
                interrupted="nothing written; answers so far are in the response cache")


def _calibrate(labels: Path | None, builtin: bool, config: Path | None, output: Path | None,
               opts: JudgeOptions) -> int:
    if (labels is None) == (not builtin):
        raise InputError("give a LABELS.jsonl file or --builtin (not both)")
    if opts.spec.dry_run:
        raise InputError("--dry-run is for judge and eval")
    cfg = opts.config(config)
    rows = load_labels(builtin_labels_path() if labels is None else labels)  # None: --builtin
    if output is not None:
        check_writable(output)
    judge = opts.build(cfg)

    async def run() -> CalibrationReport:
        async with judge:
            return await calibrate_async(rows, cfg, judge, opts.concurrency)

    report = asyncio.run(run())
    if report.usage is not None and opts.prices is not None:
        u = report.usage
        report = report.model_copy(update=opts.prices.usage_fields(
            u.prompt_tokens, u.cached_prompt_tokens, u.completion_tokens))
    typer.echo(format_report(report), nl=False)  # the text ends with its newline: no blank line after it
    if report.usage is not None:
        say(usage_text(Usage(**report.usage.model_dump())) + cost_text(report.model_dump()))
    if output is not None:
        write_atomic(output, report.to_json() + "\n")
        say(f"wrote {output}")
    return 1 if report.errors else 0
