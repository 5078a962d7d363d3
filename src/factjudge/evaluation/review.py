"""A person's review fed back into a run (``factjudge review apply``): the run's figures with the
person's verdicts in place of the judge's, in ``summary.json``'s ``reviewed``, report.md,
report.html and review.html, and the gold set with the person's corrections, written as a new file.

Only files factjudge wrote in the run folder are rewritten (``summary.json`` and the reports,
atomically, under the folder's lock: a run into the folder meanwhile is refused); the export, the
gold and the other inputs are read, never written. An export from
another run (judge, config or inputs differ) is refused with the reason.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.aggregate import Summary
from ..core.review import (
    ReviewedFigures,
    ReviewedSummary,
    identity_mismatch,
    reviewed_figures,
    reviews_needed,
    run_identity,
)
from ..errors import InputError
from ..io.files import same_file, write_atomic
from ..io.review import GoldChanges, ReviewExport, load_review, write_corrected_gold
from ..io.runfolder import REPORT_HTML, REPORT_MD, REVIEW_HTML, SUMMARY, FolderLock, RunFolder
from ..reports.format import fmt
from ..reports.review import WIDTHS, render_review
from .calibrate import confusion
from .runner import rewrite_reports

__all__ = ["ReviewApplied", "apply_review", "folder_identity"]

#: The files of the run folder ``review apply`` rewrites.
REWRITTEN = (SUMMARY, REPORT_MD, REPORT_HTML, REVIEW_HTML)


def folder_identity(folder: RunFolder, summary: dict[str, Any]) -> dict[str, str]:
    """The run identity of a finished run folder, as review.html recorded it."""
    inputs = [(str(line.get("doc_id")), str(line.get("input_sha256"))) for line in folder.lines()]
    return run_identity(summary.get("judge") or {}, summary.get("config") or {}, inputs)


@dataclass
class ReviewApplied:
    """What ``review apply`` did: the figures, the gold written, the changes."""

    figures: ReviewedFigures
    judge: dict[str, float | None]
    gold: Path | None = None
    output: Path | None = None
    corrected: list[str] = field(default_factory=list)
    added: int = 0
    needed: dict[str, dict[str, int]] = field(default_factory=dict)

    def text(self) -> str:
        """What ``review apply`` prints: the two sets of figures, the judge against the person,
        the reviews needed, the gold written."""
        f = self.figures
        j = self.judge
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(f.by_verdict.items()))
        lines = [f"judge:    P {fmt(j.get('precision'))} R {fmt(j.get('recall'))} F1 {fmt(j.get('f1'))}",
                 f"reviewed: P {fmt(f.precision)} R {fmt(f.recall)} F1 {fmt(f.to_dict()['f1'])} on "
                 f"{f.reviewed} reviewed facts ({verdicts})"]
        a = f.agreement
        c = confusion(a["tp"], a["fp"], a["fn"], a["tn"])
        lines.append(f"the judge's links against the person's on {c.n} reviewed pairs: precision "
                     f"{fmt(c.precision)} recall {fmt(c.recall)} kappa {fmt(c.kappa)} (tp {c.tp} fp {c.fp} "
                     f"fn {c.fn} tn {c.tn}); factjudge calibrate on the export judges the pairs alone")
        for name, widths in self.needed.items():
            lines.append(f"reviews needed for the judge-corrected {name}'s 95% interval: " + ", ".join(
                f"{n:,} for width {w}" for w, n in widths.items()))
        if self.output is not None:
            lines.append(f"gold: {len(self.corrected)} facts corrected, {self.added} added (omissions) "
                         f"-> {self.output} (from {self.gold}, unchanged)")
        return "\n".join(lines) + "\n"


def _needed(summary: Summary, figures: ReviewedFigures) -> dict[str, dict[str, int]]:
    """Reviews needed at the judge's link rates the person measured (a Beta(1, 1) prior on each)."""
    a = figures.agreement
    p_j = (a["tp"] + 1) / (a["tp"] + a["fp"] + 2)
    r_j = (a["tp"] + 1) / (a["tp"] + a["fn"] + 2)
    out = {}
    for name in ("precision", "recall"):
        raw = getattr(summary.micro, name)
        if raw is not None:
            out[name] = {f"{w:g}": reviews_needed(raw, p_j, r_j, w) for w in WIDTHS}
    return out


def apply_review(out_dir: Path, export_path: Path, output: Path | None = None,
                 gold: Path | None = None) -> ReviewApplied:
    """Apply a review export to the finished run in ``out_dir``: ``summary.json`` gains the
    reviewed figures, report.md, report.html and review.html show them, and with ``output`` the
    corrected gold is written there (``gold``: the gold input, default the run's first input)."""
    folder = RunFolder(out_dir).require()
    with FolderLock(folder.path):
        return _apply(folder, export_path, output, gold)


def _check_own(folder: RunFolder, inputs: list[Path]) -> None:
    """Refuse, before anything is written, to replace what factjudge did not write: a report that
    is a link or no regular file (replacing it would write what it points at), or an input (the
    export saved as report.md)."""
    for name in REWRITTEN:
        path = folder.path / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise InputError(f"{path}: not a file factjudge wrote (a link or no regular file); "
                             "review apply rewrites it: move it away first")
        for source in inputs:
            if same_file(source, path):
                raise InputError(f"{source}: an input of this review is the run's {name}, which "
                                 "review apply rewrites; move it first")


def _apply(folder: RunFolder, export_path: Path, output: Path | None, gold: Path | None) -> ReviewApplied:
    out_dir = folder.path
    raw = folder.summary()
    export: ReviewExport = load_review(export_path)
    why = identity_mismatch(export.run, folder_identity(folder, raw))
    if why is not None:
        raise InputError(f"{export_path}: not a review of {out_dir}: {why}")
    try:
        summary = Summary.model_validate(raw)
    except ValueError:
        raise InputError(f"{folder.path / SUMMARY}: not a factjudge summary") from None
    manifest = folder.manifest()  # run.json's inputs are absolute; the summary's as typed
    inputs = [Path(p) for p in (manifest.inputs if manifest is not None and manifest.inputs
                                else summary.provenance.get("inputs") or [])]
    if output is not None:  # before anything is written: refuse what would overwrite an input
        gold = gold or (inputs[0] if inputs else None)
        if gold is None:
            raise InputError(f"{out_dir}: the run does not record its inputs; give the gold with --gold")
    _check_own(folder, [*inputs, *([gold] if gold is not None else []), export_path])
    figures = reviewed_figures(folder.lines(), export.reviews)
    applied = ReviewApplied(figures, {"precision": summary.micro.precision, "recall": summary.micro.recall,
                                      "f1": summary.micro.f1}, needed=_needed(summary, figures))
    if output is not None and gold is not None:
        changes = GoldChanges.of(export)
        applied.corrected = write_corrected_gold(gold, output, changes, [*inputs, export_path,
                                                                          *(folder.path / n for n in REWRITTEN)])
        applied.gold, applied.output, applied.added = gold, output, changes.fact_count()[1]
    summary.reviewed = ReviewedSummary(**figures.to_dict(), source=str(export_path), needed=applied.needed)
    rewrite_reports(folder, summary)
    write_atomic(folder.path / REVIEW_HTML, render_review(summary, map(folder.with_config, folder.lines())))
    write_atomic(folder.path / SUMMARY, json.dumps(summary.model_dump(mode="json"), indent=2,
                                                   ensure_ascii=False) + "\n")
    return applied
