"""``factjudge eval`` and ``factjudge compare``: registered on the app of :mod:`factjudge.cli`."""
from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Optional

import typer

from .cli import (BACKEND_OPT, SO_OPT, TIMEOUT_OPT, Backend, StructuredOutputMode, BASE_URL_OPT, CACHE_DIR_OPT, CONC_OPT, CONFIG_OPT, DRY_RUN_OPT, JUDGE_OPT,
                  KEY_ENV_OPT, MAXTOK_OPT, MODEL_OPT, NO_CACHE_OPT, PCK_OPT, PRICE_IN_OPT,
                  PRICE_OUT_OPT, QUIET_OPT, TEMP_OPT, WARMUP_OPT, JudgeKind, ProgressBar, app,
                  build_judge, err, fail, print_plan)
from .evaluate import (REPORT_HTML, REPORT_MD, RESULTS, SUMMARY, Dataset, JsonlDataset, Problem,
                       SplitDataset, evaluate_async, input_salt, paired_bootstrap, preview_dataset,
                       read_eval_dir)
from .errors import JudgeSetupError
from .loading import InputError, load_config
from .report import fmt, fmt_ci

#: Bad lines printed before the run stops (all of them are in the summary with --skip-invalid).
MAX_PROBLEMS_SHOWN = 20


def _report_problems(problems: list[Problem], skip_invalid: bool) -> None:
    for p in problems[:MAX_PROBLEMS_SHOWN]:
        prefix = "factjudge: skipped: " if skip_invalid else "factjudge: error: "
        err.print(prefix + p.message, markup=False, soft_wrap=True)
    if len(problems) > MAX_PROBLEMS_SHOWN:
        err.print(f"factjudge: ... and {len(problems) - MAX_PROBLEMS_SHOWN} more bad line(s)",
                  markup=False, soft_wrap=True)


@app.command("eval")
def eval_cmd(
    dataset: Optional[Path] = typer.Argument(
        None, help="Dataset .jsonl: one document per line, {\"doc_id\", \"gold_facts\", \"predicted_facts\"}."),
    gold: Optional[Path] = typer.Option(None, "--gold", help="Gold facts .jsonl, one fact per line with its doc_id."),
    predicted: Optional[Path] = typer.Option(None, "--predicted", help="Predicted facts .jsonl, one fact per line with its doc_id."),
    output_dir: Path = typer.Option(..., "--output-dir", "-o", help="Folder for results.jsonl, summary.json, report.md, report.html."),
    config: Optional[Path] = CONFIG_OPT,
    judge: Optional[JudgeKind] = JUDGE_OPT,
    model: Optional[str] = MODEL_OPT,
    base_url: Optional[str] = BASE_URL_OPT,
    api_key_env: Optional[str] = KEY_ENV_OPT,
    concurrency: int = CONC_OPT,
    temperature: float = TEMP_OPT,
    max_tokens: Optional[int] = MAXTOK_OPT,
    cache_dir: Optional[Path] = CACHE_DIR_OPT,
    no_cache: bool = NO_CACHE_OPT,
    warmup: bool = WARMUP_OPT,
    prompt_cache_key: bool = PCK_OPT,
    dry_run: bool = DRY_RUN_OPT,
    price_in: Optional[float] = PRICE_IN_OPT,
    price_out: Optional[float] = PRICE_OUT_OPT,
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Score the valid lines and list the bad ones in the summary, instead of stopping."),
    bootstrap: int = typer.Option(1000, "--bootstrap", min=1, help="Bootstrap resamples for the 95% intervals."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    report_rows: int = typer.Option(5000, "--report-rows", min=0, help="Most FN/FP/ERROR rows shown in the reports (all are in results.jsonl)."),
    quiet: bool = QUIET_OPT,
    backend: Backend = BACKEND_OPT,
    timeout: float = TIMEOUT_OPT,
    structured_output: Optional[StructuredOutputMode] = SO_OPT,
) -> None:
    """Judge a whole dataset: results per document, aggregate metrics with 95% intervals, reports.

    Run it again after an interruption: finished documents are kept, the rest are judged."""
    if (dataset is None) == (gold is None and predicted is None):
        raise fail("give either DATASET.jsonl or both --gold and --predicted")
    if dataset is None and (gold is None or predicted is None):
        raise fail("--gold and --predicted go together")
    if output_dir.exists() and not output_dir.is_dir():
        raise fail(f"{output_dir}: not a folder")
    try:
        cfg = load_config(config)
    except InputError as exc:
        raise fail(str(exc)) from None
    the_judge = build_judge(judge, model, base_url, api_key_env, temperature, max_tokens,
                            cache_dir=cache_dir, no_cache=no_cache, warmup=warmup,
                            prompt_cache_key=prompt_cache_key, dry_run=dry_run, backend=backend,
                            timeout=timeout, structured_output=structured_output)
    data: Dataset = JsonlDataset(dataset) if dataset is not None else SplitDataset(gold, predicted)  # type: ignore[arg-type]
    try:
        problems = data.scan(cfg, input_salt(cfg, the_judge))
    except InputError as exc:
        raise fail(str(exc)) from None
    if problems:
        _report_problems(problems, skip_invalid)
        if not skip_invalid:
            raise fail(f"{len(problems)} bad line(s); nothing was judged (--skip-invalid scores "
                       "the rest)")
    if not data.infos:
        raise fail(f"{dataset or gold}: no documents to judge")
    if dry_run:
        try:
            plan = preview_dataset(data, cfg, the_judge, output_dir)
        except InputError as exc:
            raise fail(str(exc)) from None
        print_plan(plan, price_in, price_out, max_tokens)
        return

    started = time.perf_counter()
    progress = ProgressBar(enabled=not quiet and err.is_terminal)

    async def run() -> Any:
        try:
            with progress:
                return await evaluate_async(
                    data, cfg, the_judge, output_dir, concurrency=concurrency, resamples=bootstrap,
                    seed=seed, report_rows=report_rows, skipped=problems, progress=progress,
                    on_start=progress.start, on_document=progress.document_done)
        finally:
            await the_judge.aclose()

    try:
        outcome = asyncio.run(run())
    except KeyboardInterrupt:
        err.print(f"factjudge: interrupted; finished documents are in {output_dir / RESULTS}; "
                  "run the same command again to judge the rest", markup=False, soft_wrap=True)
        raise typer.Exit(130) from None
    except InputError as exc:  # a foreign results.jsonl, or the dataset changed since it was checked
        raise fail(str(exc)) from None
    except sqlite3.Error as exc:
        raise fail(f"response cache: {exc} (try --cache-dir DIR or --no-cache)") from None
    except JudgeSetupError as exc:
        raise fail(f"{exc}; finished documents are in {output_dir / RESULTS}") from None
    except OSError as exc:  # judges never raise: they return ERROR verdicts
        where = exc.filename or output_dir
        raise fail(f"{where}: cannot read or write: {exc.strerror or exc}") from None
    summary = outcome.summary
    if not quiet:
        m, ci, u = summary["micro"], summary["ci95"], summary["usage"]
        calls = ""
        if u.get("llm_calls") or u.get("cache_hits"):  # nothing to say for the rules judge
            calls = f"{int(u.get('llm_calls', 0))} calls, {int(u.get('cache_hits', 0))} cache hits"
            calls += " (incl. reused documents) | " if outcome.reused else " | "
        err.print(
            f"{summary['documents']} documents ({outcome.judged} judged, {outcome.reused} reused) | "
            f"micro P {fmt(m['precision'])} {fmt_ci(ci['precision'])} "
            f"R {fmt(m['recall'])} {fmt_ci(ci['recall'])} F1 {fmt(m['f1'])} {fmt_ci(ci['f1'])} | "
            f"errors {m['errors']} | {calls}{time.perf_counter() - started:.1f}s",
            markup=False, soft_wrap=True)
        err.print(f"wrote {output_dir / RESULTS}, {SUMMARY}, {REPORT_MD}, {REPORT_HTML}",
                  markup=False, soft_wrap=True)
    if problems:
        err.print(f"factjudge: {len(problems)} bad line(s) skipped; listed in {SUMMARY}",
                  markup=False, soft_wrap=True)
    if summary["micro"]["errors"]:
        err.print(f"factjudge: {summary['micro']['errors']} fact(s) could not be judged (status "
                  "ERROR); they are left out of precision and recall; run again to retry them",
                  markup=False, soft_wrap=True)
        raise typer.Exit(1)


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _summary_part(out_dir: Path, key: str) -> Any:
    try:
        return json.loads((out_dir / SUMMARY).read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError, AttributeError):
        return None


@app.command("compare")
def compare_cmd(
    dir_a: Path = typer.Argument(..., help="Output folder of one eval run (A)."),
    dir_b: Path = typer.Argument(..., help="Output folder of another eval run on the same gold (B)."),
    bootstrap: int = typer.Option(1000, "--bootstrap", min=1, help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
) -> None:
    """B minus A in micro P/R/F1, with a paired bootstrap 95% interval over shared documents."""
    try:
        a, b = read_eval_dir(dir_a), read_eval_dir(dir_b)
    except InputError as exc:
        raise fail(str(exc)) from None
    common = [d for d in a if d in b]
    if not common:
        raise fail(f"{dir_a} and {dir_b} have no document in common")
    only_a, only_b = len(a) - len(common), len(b) - len(common)
    if only_a or only_b:
        err.print(f"factjudge: comparing the {len(common)} documents both scored; "
                  f"{only_a} only in A and {only_b} only in B are left out", markup=False, soft_wrap=True)
    for key, what in (("config", "judge configs"), ("judge", "judges")):
        sa, sb = _summary_part(dir_a, key), _summary_part(dir_b, key)
        if sa != sb:
            keys = sorted(k for k in {*(sa or {}), *(sb or {})} if (sa or {}).get(k) != (sb or {}).get(k))
            err.print(f"factjudge: warning: the two runs used different {what} (differing: "
                      f"{', '.join(keys)}); the comparison may not be fair", markup=False, soft_wrap=True)
    differ = sum(a[d][1] != b[d][1] for d in common)
    if differ:
        err.print(f"factjudge: warning: the gold facts differ in {differ} of the {len(common)} shared "
                  "documents; the comparison may not be fair", markup=False, soft_wrap=True)
    res = paired_bootstrap([a[d][0] for d in common], [b[d][0] for d in common], bootstrap, seed)
    lines = [f"A: {dir_a}", f"B: {dir_b}",
             f"{'metric':<10} {'A':>7} {'B':>7} {'B-A':>7}  {'95% CI of B-A':<18} excludes 0"]
    for k in ("precision", "recall", "f1"):
        r = res[k]
        ci = "n/a" if r["ci95"] is None else f"[{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}]"
        verdict = "no"
        if r["excludes_zero"]:
            verdict = "yes: B is higher" if r["ci95"][0] > 0 else "yes: A is higher"
        lines.append(f"{k:<10} {fmt(r['a']):>7} {fmt(r['b']):>7} {_signed(r['diff']):>7}  "
                     f"{ci:<18} {verdict}")
    lines.append(f"paired bootstrap over {len(common)} documents, {bootstrap} resamples, seed {seed}")
    typer.echo("\n".join(lines))
