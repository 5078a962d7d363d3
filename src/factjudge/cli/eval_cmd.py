"""``factjudge eval``: a whole dataset into an output folder."""
from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from enum import Enum
from pathlib import Path

import typer

from ..core.aggregate import REPORT_ROWS, ZeroDivision
from ..errors import InputError
from ..evaluation.runner import EvalRun, ReportSettings, evaluate_async
from ..io.datasets import Dataset, open_dataset
from ..io.formats import file_formats
from ..io.runfolder import RESULTS
from .app import app, fail, run_command
from .batch_cmd import NO_BATCH, BatchOptions, check_batch, run_batch_eval, with_batch
from .evalrun import EvalRequest, finish, prepare, print_dry_run, progress_bar
from .gate import Gate, with_gate
from .mlflow_hook import tracking, with_mlflow
from .options import CONFIG_OPT, QUIET_OPT, JudgeOptions, output_opt, with_judge_options
from .ray_cmd import eval_on_ray, ray_active, with_ray

#: The input formats' names, for --format's help (the registry: io/formats/__init__.py).
FORMAT_NAMES = ", ".join(file_formats())


class ZeroDivisionOpt(str, Enum):
    skip = "skip"
    zero = "0"
    one = "1"


_ZERO_DIVISION: dict[ZeroDivisionOpt, ZeroDivision] = {
    ZeroDivisionOpt.skip: "skip", ZeroDivisionOpt.zero: "0", ZeroDivisionOpt.one: "1"}

JUDGE_CALIBRATION_OPT = typer.Option(
    None, "--judge-calibration", help="A judge calibration (the JSON of 'factjudge calibrate -o', made "
    "with this judge and config): also report precision, recall and F1 corrected for the judge's "
    "measured link errors, with 95% intervals.")
WORKERS_OPT = typer.Option(
    "auto", "--workers", metavar="N|auto", help="Processes judging the documents with the rules judge "
    "(auto: one per core from 100 documents, else 1). An LLM judge asks its questions concurrently in "
    "one process (--concurrency).")
DOCUMENTS_OPT = typer.Option(
    None, "--documents", help="The documents' texts, one per line {\"doc_id\", \"text\"} (default: the "
    "text the inputs carry, if any): each prediction is checked against its text (found in the "
    "source or not; an FP found there is a possible gold omission) and the document view shows it.")

#: Bad lines printed before the run stops (all of them are in the summary with --skip-invalid).


@app.command("eval")
@with_mlflow
@with_ray
@with_gate
@with_batch
@with_judge_options
def eval_cmd(
    dataset: Path | None = typer.Argument(
        None, help="Dataset .jsonl: one document per line, {\"doc_id\", \"gold_facts\", \"predicted_facts\"}."),
    gold: Path | None = typer.Option(None, "--gold", help="Gold facts with their doc_id: .jsonl (one "
                                     "per line), .csv, .tsv or .parquet (one per row)."),
    predicted: Path | None = typer.Option(None, "--predicted", help="Predicted facts with their doc_id, same formats."),
    input_format: str | None = typer.Option(None, "--format", help="The format of DATASET, or of both "
                                            f"--gold and --predicted: {FORMAT_NAMES} (default: by the "
                                            "file's suffix and first record)."),
    gold_format: str | None = typer.Option(None, "--gold-format", help="The format of --gold (default: "
                                           "--format, else by its suffix and first record)."),
    predicted_format: str | None = typer.Option(None, "--predicted-format", help="The format of "
                                                "--predicted (default: --format, else by its suffix "
                                                "and first record)."),
    output_dir: Path = output_opt("Folder for results.jsonl, summary.json, report.md, report.html.", required=True),
    config: Path | None = CONFIG_OPT,
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Score the valid lines and list the "
                                      "bad ones in the summary, instead of stopping."),
    bootstrap: int = typer.Option(1000, "--bootstrap", min=1, help="Bootstrap resamples for the 95% intervals."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    report_rows: int = typer.Option(REPORT_ROWS, "--report-rows", min=0, help="Most FN/FP/ERROR rows shown in "
                                    "the reports (all are in results.jsonl)."),
    zero_division: ZeroDivisionOpt = typer.Option(
        ZeroDivisionOpt.skip, "--zero-division", help="Macro averages: a document's undefined precision "
        "or recall is left out (skip), or counts as 0 or 1 (scikit-learn's zero_division)."),
    csv: bool = typer.Option(False, "--csv", help="Also write facts.csv: one row per fact of every document."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the results of another run "
                                   "(other inputs, config or judge) in the output folder."),
    quiet: bool = QUIET_OPT,
    judge_calibration: Path | None = JUDGE_CALIBRATION_OPT,
    documents: Path | None = DOCUMENTS_OPT,
    workers: str = WORKERS_OPT,
    *,
    opts: JudgeOptions,
    gate: Gate,
    batch_opts: BatchOptions,
    mlflow: bool = False,
) -> None:
    """Judge a whole dataset: results per document, aggregate metrics with 95% intervals, reports.

    Run it again after an interruption: finished documents are kept, the rest are judged."""
    if output_dir.exists() and not output_dir.is_dir():
        raise fail(f"{output_dir}: not a folder")
    data = _open_input(dataset, gold, predicted, input_format, gold_format, predicted_format)
    settings = ReportSettings(resamples=bootstrap, seed=seed, report_rows=report_rows,
                              zero_division=_ZERO_DIVISION[zero_division], csv=csv, prices=opts.prices)

    def run() -> int:
        calibrated = with_documents(with_calibration(settings, judge_calibration), documents)
        if batch_opts.wanted:  # what the flags alone refuse, before the config is read
            check_batch(batch_opts, opts)
        # the one request of the run: the config parsed once, for every way of running
        req = EvalRequest(data, str(dataset or gold), opts.config(config), opts, output_dir, calibrated,
                          skip_invalid=skip_invalid, overwrite=overwrite, quiet=quiet, gate=gate,
                          workers=_workers(workers))
        return _eval(req, batch_opts)

    run_command(lambda: _tracked(mlflow, run),
                interrupted=f"finished documents are in {output_dir / RESULTS}; run the same "
                "command again to judge the rest", after=f"; finished documents are in {output_dir / RESULTS}")


def _workers(value: str) -> int | None:
    """``--workers``: a number of processes, or None for auto."""
    if value == "auto":
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise fail(f"--workers {value!r}: give a number of processes (1 or more) or auto")
    return n


def _open_input(dataset: Path | None, gold: Path | None, predicted: Path | None, input_format: str | None,
                gold_format: str | None, predicted_format: str | None) -> Dataset:
    """The input as the flags name it: a dataset, or gold and predicted fact files, each in its format."""
    if (dataset is None) == (gold is None and predicted is None):
        raise fail("give either DATASET.jsonl or both --gold and --predicted")
    if dataset is not None and (gold_format or predicted_format):
        raise fail("--gold-format and --predicted-format go with --gold and --predicted; a dataset's "
                   "format is --format")
    try:
        if dataset is not None:
            return open_dataset(dataset, input_format=input_format)
        if gold is not None and predicted is not None:
            return open_dataset((gold, predicted), input_format=input_format, gold_format=gold_format,
                                predicted_format=predicted_format)
    except InputError as exc:  # a format named wrongly
        raise fail(str(exc)) from None
    raise fail("--gold and --predicted go together")


def with_calibration(settings: ReportSettings, path: Path | None) -> ReportSettings:
    """``settings`` with the judge calibration read (a bad file stops the run before any call)."""
    if path is None:
        return settings
    # calibrate imports the rules judge (0.4 s measured with -X importtime): only for this option
    from ..evaluation.calibrate import load_judge_calibration

    return dataclasses.replace(settings, judge_calibration=load_judge_calibration(path))


def with_documents(settings: ReportSettings, path: Path | None) -> ReportSettings:
    """``settings`` with the documents file checked and indexed (a bad one stops the run first)."""
    if path is None:
        return settings
    from ..io.documents import DocumentTexts

    return dataclasses.replace(settings, documents=DocumentTexts(path))


def _tracked(mlflow: bool, work: Callable[[], int]) -> int:
    """``work`` with ``--mlflow`` in force: the finished run is logged (cli/mlflow_hook.py)."""
    with tracking(mlflow):
        return work()


def _eval(req: EvalRequest, batch: BatchOptions = NO_BATCH) -> int:
    if batch.wanted:  # --batch-export / --batch (cli/batch_cmd.py); --batch then finishes live, below
        return run_batch_eval(batch, req, live=lambda: _eval(req))
    if ray_active():  # --ray: the documents are judged by Ray workers (cli/ray_cmd.py)
        if req.workers is not None:
            raise fail("--workers and --ray: give one (with --ray, Ray's workers judge the documents)")
        return eval_on_ray(req)
    return _live(req)


def _live(req: EvalRequest) -> int:
    judge, problems = prepare(req)
    if req.spec.dry_run:
        return print_dry_run(req, judge)
    started = time.perf_counter()
    progress = progress_bar(req, judge)

    async def run() -> EvalRun:
        async with judge:
            with progress:
                return await evaluate_async(
                    req.data, req.config, judge, req.output_dir, concurrency=req.judge.concurrency,
                    skipped=problems, progress=progress, settings=req.settings, overwrite=req.overwrite,
                    workers=req.workers)

    return finish(req, asyncio.run(run()), problems, started)
