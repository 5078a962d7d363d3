"""What every way of running eval shares (live, batch, Ray): the request built once from the
flags and the config, the judge and the input scan before any call, the dry run, and the end of
the run (summary line, warnings, exit code)."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.scope import scope_check
from ..errors import InputError
from ..evaluation.runner import EvalRun, ReportSettings, input_salt, preview_dataset
from ..io.datasets import Dataset, Problem
from ..io.runfolder import FACTS_CSV, REPORT_HTML, REPORT_MD, RESULTS, REVIEW_HTML, SUMMARY
from ..judges.base import Judge, run_info_of
from ..judges.factory import JudgeSpec
from ..models import JudgeConfig
from ..reports.format import fmt, fmt_ci
from .app import say
from .gate import Gate
from .mlflow_hook import after_run
from .options import JudgeOptions, build_spec
from .output import ProgressBar, categories_text, cost_text, print_plan, run_notes

MAX_PROBLEMS_SHOWN = 20


@dataclass(frozen=True)
class EvalRequest:
    """One ``factjudge eval`` as asked, built once from its flags and its config file (parsed
    there, and only there): what the live, Ray and batch paths take."""

    data: Dataset
    #: The input as messages name it (the dataset, or the gold file).
    name: str
    config: JudgeConfig
    judge: JudgeOptions
    output_dir: Path
    settings: ReportSettings
    skip_invalid: bool = False
    overwrite: bool = False
    quiet: bool = False
    gate: Gate = Gate()
    #: ``--workers``: processes judging the documents; None: auto
    #: (:func:`~factjudge.evaluation.workers.auto_workers`).
    workers: int | None = None

    @property
    def spec(self) -> JudgeSpec:
        return self.judge.spec


def prepare(req: EvalRequest, spec: JudgeSpec | None = None) -> tuple[Judge, list[Problem]]:
    """The start of every way of running eval: the judge (of ``spec``, default the request's)
    built and every line scanned, before any call."""
    judge = build_spec(spec or req.spec, req.config)
    if req.workers is not None and req.workers != 1:  # refused before the scan, not after it
        from ..evaluation.workers import check_workers

        check_workers(req.workers, judge)
    return judge, scan(req.data, req.name, req.config, judge, req.skip_invalid)


def print_dry_run(req: EvalRequest, judge: Judge) -> int:
    """``--dry-run``: the plan of the documents a run would judge; nothing is called."""
    print_plan(preview_dataset(req.data, req.config, judge, req.output_dir), req.judge.prices,
               req.spec.max_tokens, req.config.reasoning)
    return 0


def progress_bar(req: EvalRequest, judge: Judge) -> ProgressBar:
    return ProgressBar(enabled=not req.quiet and sys.stderr.isatty(), llm=bool(run_info_of(judge)))


def scan(data: Dataset, name: str, cfg: JudgeConfig, judge: Judge, skip_invalid: bool) -> list[Problem]:
    """Check every line before any call; stop on bad ones unless they are to be skipped."""
    problems = data.scan(cfg, input_salt(cfg, judge))
    for p in problems[:MAX_PROBLEMS_SHOWN]:
        say(f"factjudge: skipped: {p.skipped}" if skip_invalid else f"factjudge: error: {p.message}")
    if len(problems) > MAX_PROBLEMS_SHOWN:
        say(f"factjudge: ... and {len(problems) - MAX_PROBLEMS_SHOWN} more bad line(s)")
    if problems and not skip_invalid:
        raise InputError(f"{len(problems)} bad line(s); nothing was judged (--skip-invalid scores the rest)")
    if not data.infos:
        raise InputError(f"{name}: no documents to judge")
    scope_check(cfg, data.fact_types, name)  # nothing in scope at all: stop before any call
    return problems


def finish(req: EvalRequest, outcome: EvalRun, problems: list[Problem], started: float) -> int:
    """What every way of running eval prints at the end, and its exit code."""
    output_dir = req.output_dir
    if not req.quiet:
        _print_summary(outcome, output_dir, time.perf_counter() - started)
    summary = outcome.summary
    # the alerts (the reports' banners) that say more than a warning did: scope, ERROR share
    for warning in dict.fromkeys([*summary.warnings, *(a.message for a in summary.alerts)]):
        say(f"factjudge: warning: {warning}")
    if problems:
        say(f"factjudge: {len(problems)} bad line(s) skipped; listed in {SUMMARY}")
    micro = outcome.summary.micro
    if micro.errors:
        say(f"factjudge: {micro.errors} fact(s) could not be judged (status ERROR); they are "
            "left out of precision and recall; run again to retry them")
        code = 1
    else:
        code = req.gate.check(micro.precision, micro.recall, micro.f1)
    return after_run(output_dir, req.quiet, code)  # eval --mlflow: a failure there keeps a gate's 3


def _print_summary(outcome: EvalRun, output_dir: Path, seconds: float) -> None:
    summary = outcome.summary
    m, ci, u = summary.micro, summary.ci95, summary.usage
    calls = ""
    if u.get("llm_calls") or u.get("cache_hits"):  # nothing to say for the rules judge
        calls = f"{int(u.get('llm_calls', 0))} calls, {int(u.get('cache_hits', 0))} cache hits"
        calls += " (incl. reused documents) | " if outcome.reused else " | "
    say(f"{summary.documents} documents ({outcome.judged} judged, {outcome.reused} reused) | "
        f"micro P {fmt(m.precision)} {fmt_ci(ci['precision'])} "
        f"R {fmt(m.recall)} {fmt_ci(ci['recall'])} F1 {fmt(m.f1)} {fmt_ci(ci['f1'])} | "
        f"errors {m.errors} | {calls}{seconds:.1f}s{cost_text(u)}"
        f"{categories_text(summary.categories, summary.judge.get('name') == 'rules')}"
        + run_notes(summary.usage, summary.conflicts)
        + (f" | {len(summary.alerts)} alert(s): see the warnings below" if summary.alerts else ""))
    if summary.judge_corrected is not None:
        say(judge_corrected_line(summary.judge_corrected))
    csv = f", {FACTS_CSV}" if (output_dir / FACTS_CSV).exists() else ""
    say(f"wrote {output_dir / RESULTS}, {SUMMARY}, {REPORT_MD}, {REPORT_HTML}, {REVIEW_HTML}{csv}")


def judge_corrected_line(jc: dict[str, Any]) -> str:
    """The summary's second line with ``--judge-calibration``: the corrected figures."""
    ci = jc["ci95"]
    return (f"judge-corrected (judge link precision {fmt(jc['link_precision'])}, recall "
            f"{fmt(jc['link_recall'])}, from {jc['calibration'].get('source')}) | "
            f"P {fmt(jc['precision'])} {fmt_ci(ci['precision'])} R {fmt(jc['recall'])} {fmt_ci(ci['recall'])} "
            f"F1 {fmt(jc['f1'])} {fmt_ci(ci['f1'])}")
