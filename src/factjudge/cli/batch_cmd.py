"""Provider batch APIs on the command line: ``eval --batch-export FILE``, ``eval --batch`` and
``factjudge batch-import OUTPUT_FILE...`` (the work itself is in :mod:`factjudge.runners.batch`)."""
from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import typer

from ..judges.factory import JUDGE_KINDS
from .app import app, fail, run_command, say
from .evalrun import EvalRequest, scan
from .options import JudgeOptions, build_spec, inject_options

#: Invalid answers and failed requests listed after an import (all are counted).
SHOWN = 5


@dataclass(frozen=True)
class BatchOptions:
    """``eval``'s batch options, as typed."""

    export: Path | None = None
    submit: bool = False
    poll_interval: float = 30.0

    @property
    def wanted(self) -> bool:
        return self.export is not None or self.submit


NO_BATCH = BatchOptions()

BATCH_OPTS: dict[str, tuple[Any, Any]] = {
    "batch_export": (Path | None, typer.Option(
        None, "--batch-export", metavar="FILE", help="Write the questions not answered yet as an OpenAI "
        "batch input file (FILE, FILE.2... within 50,000 lines / 200 MB each) and exit; run it, then "
        "factjudge batch-import OUTPUT and this command without --batch-export.")),
    "batch_submit": (bool, typer.Option(
        False, "--batch", help="Ask through the server's Batch API (half the price, within 24 h): "
        "upload, poll, import, then finish the run; run again after an interruption to resume.")),
    "poll_interval": (float, typer.Option(
        30.0, "--poll-interval", min=0.0, max=86400.0, metavar="SECONDS",
        help="--batch: seconds between status checks (at most a day).")),
}

#: Adds the batch options to ``eval``; the command receives them as ``batch_opts``.
with_batch = inject_options("batch_opts", BATCH_OPTS, lambda v: BatchOptions(
    export=v["batch_export"], submit=v["batch_submit"], poll_interval=v["poll_interval"]))


def check_batch(b: BatchOptions, opts: JudgeOptions) -> None:
    """What the flags alone refuse for ``eval --batch-export`` / ``eval --batch``."""
    flag = "--batch-export" if b.export is not None else "--batch"
    spec = opts.spec
    if b.export is not None and b.submit:
        raise fail("--batch-export writes a file to run yourself, --batch runs it on the server: "
                   "choose one")
    if spec.dry_run:
        raise fail(f"--dry-run previews live calls; drop it with {flag} (the export itself calls nothing)")
    if b.export is not None and b.export.is_dir():
        raise fail(f"{b.export}: is a folder; --batch-export takes a file name")


def run_batch_eval(b: BatchOptions, req: EvalRequest, live: Callable[[], int]) -> int:
    """``eval --batch-export`` (exit 0 once written) or ``eval --batch`` (the batch rounds, then
    ``live()``: the normal run, which finds the answers in the response cache). The documents
    asked are those the run would judge: with ``overwrite``, all of them. The flags were checked
    by :func:`check_batch`; whether the judge's questions can go to a batch, the judge says."""
    # only for --batch runs
    from ..judges.llm.batch_import import Imported
    from ..judges.llm.batch_lines import batch_llm
    from ..runners.batch import STATE_FILE, BatchRunner, export_batch

    data, cfg, output_dir, overwrite = req.data, req.config, req.output_dir, req.overwrite
    flag = "--batch-export" if b.export is not None else "--batch"
    # an export calls nothing, so an LLM needs no API key (the key is not part of any cache key)
    no_key = b.export is not None and JUDGE_KINDS[req.spec.resolved_kind].uses_llm
    judge = build_spec(replace(req.spec, dry_run=True) if no_key else req.spec, cfg)
    batch_llm(judge, flag)  # a judge that cannot be asked in a batch: one line, before the scan
    scan(data, req.name, cfg, judge, req.skip_invalid)
    if b.export is not None:
        out = export_batch(data, cfg, judge, output_dir, b.export, overwrite=overwrite)
        names = ", ".join(str(p) for p in out.files)
        say(f"factjudge: wrote {out.lines} question(s) to {names}"
            + (f" ({out.reasked} asked again after an invalid answer)" if out.reasked else ""))
        say(f"factjudge: {out.documents} document(s) to judge ({out.reused_documents} finished already in "
            f"{output_dir}): {out.lines} of their {out.questions} question(s) exported; the others are "
            "answered in the response cache, decided by rules, or repeats of an exported one")
        if out.lines:
            say("factjudge: run the file(s) as a batch, then: factjudge batch-import OUTPUT_FILE... "
                "(same --cache-dir), and this command again without --batch-export")
        typer.echo(json.dumps({"files": [str(p) for p in out.files], "lines": out.lines,
                               "documents": out.documents, "reused_documents": out.reused_documents,
                               "questions": out.questions, "duplicates": out.duplicates,
                               "reasked": out.reasked}))
        return 0
    runner = BatchRunner(data, cfg, judge, output_dir, poll_interval=b.poll_interval, overwrite=overwrite,
                         notify=(lambda _: None) if req.quiet else say)

    async def batches() -> Imported:
        try:
            return await runner.run()
        finally:
            await judge.aclose()

    total = asyncio.run(batches())
    if not req.quiet:
        c = total.counts()
        say(f"factjudge: batch phase done ({output_dir / STATE_FILE}): {c['stored']} answer(s) stored; "
            "finishing the run from the response cache")
    return live()


@app.command("batch-import")
def batch_import_cmd(
    outputs: list[Path] = typer.Argument(..., help="Batch output (and error) files: OpenAI's, or "
                                         "vLLM run_batch's -o file."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="The response cache the export "
                                             "used (default: the user cache dir)."),
) -> None:
    """Store the valid answers of batch output files in the response cache.

    Each answer is validated exactly as a live one; invalid answers and failed requests are
    exported again by the next --batch-export. Importing a file twice changes nothing."""
    run_command(lambda: _import(outputs, cache_dir), interrupted="answers stored so far are kept; "
                "run the same command again to import the rest")


def _import(outputs: list[Path], cache_dir: Path | None) -> int:
    # Only batch-import loads these here; the cache imports sqlite3 (2.5-9 ms of a rules eval's start).
    from ..judges.llm.batch_import import conflict_warning, import_outputs
    from ..judges.llm.cache import ResponseCache, default_cache_dir

    directory = cache_dir or default_cache_dir()
    if not (directory / "answers.sqlite3").is_file():
        raise fail(f"no response cache in {directory}: pass the --cache-dir the export used")
    for path in outputs:
        if not path.is_file():
            raise fail(f"{path}: no such file")
    result = import_outputs(outputs, ResponseCache(directory))
    c = result.counts()
    conflicting = f"{c['conflicts']} conflicting, " if result.conflicts else ""
    say(f"factjudge: {c['lines']} line(s) in {len(outputs)} file(s): {c['stored']} answer(s) stored, "
        f"{c['already_present']} already present, {conflicting}{c['invalid']} invalid, {c['errors']} failed "
        f"request(s), {c['unknown']} unknown custom_id(s)")
    if result.conflicts:
        say(f"factjudge: warning: {conflict_warning(result.conflicts, SHOWN)}")
    for what, items in (("invalid", result.invalid), ("failed", result.errors)):
        for label, reason in items[:SHOWN]:
            say(f"factjudge:   {what}: {label}: {reason}")
        if len(items) > SHOWN:
            say(f"factjudge:   ... and {len(items) - SHOWN} more {what}")
    if result.invalid or result.errors:
        say("factjudge: invalid answers and failed requests are exported again by the next "
            "--batch-export (or asked live by eval)")
    typer.echo(json.dumps(c))
    if c["unknown"] and not (c["stored"] or c["already_present"] or result.conflicts or c["invalid"]
                             or c["errors"]):
        raise fail(f"none of the {c['unknown']} custom_id(s) was exported with the response cache in "
                   f"{directory}: pass the --cache-dir the export used")
    return 0
