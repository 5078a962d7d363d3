"""Comparing two eval runs on the same gold: B minus A with paired bootstrap intervals, overall
and per fact type, and the facts whose status changed. Reads the runs' folders lazily."""
from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from .._version import __version__
from ..core.aggregate import PairedDiff, paired_bootstrap
from ..core.analysis import count_categories, sorted_counts, total_categories
from ..core.confidence import ConfidenceAccumulator, doc_confidence
from ..errors import InputError
from ..io.files import check_own_page, write_atomic
from ..io.run_models import CompareResult, MetricDiff
from ..io.runfolder import RunFolder, read_eval_dir
from ..models import CategoryCounts, line_analysis
from ..reports.format import fmt
from ..reports.html import render_compare_html
from ..reports.markdown import render_compare_markdown
from ..reports.rows import changed_facts, fact_type_keys
from ..reports.text import compare_auroc_text

#: Changed facts listed on the compare pages, at most (all are counted).
MAX_CHANGED = 20_000
COMPARE_MD, COMPARE_HTML = "compare.md", "compare.html"
#: The title both pages carry (markdown.render_compare_markdown, compare.html.j2): how compare
#: knows a compare.md or compare.html in its output folder for its own.
COMPARE_TITLE = "factjudge comparison"


def compare_result(dir_a: Path, dir_b: Path, resamples: int = 1000, seed: int = 0) -> CompareResult:
    """B minus A over the documents both finished runs scored, with ``warnings`` saying what
    makes the comparison unfair."""
    a, b = read_eval_dir(dir_a), read_eval_dir(dir_b)
    common = [d for d in a if d in b]
    if not common:
        raise InputError(f"{dir_a} and {dir_b} have no document in common")
    warnings = [*_settings_warnings(dir_a, dir_b, "config", "judge config"),
                *_settings_warnings(dir_a, dir_b, "judge", "judge")]
    differ = sum(a[d][1] != b[d][1] for d in common)
    if differ:
        warnings.append(f"the gold facts differ in {differ} of the {len(common)} shared documents; "
                        "the comparison may not be fair")
    docs = _by_document(dir_a, dir_b, set(common))
    keys_a, keys_b, fields = docs.keys_a, docs.keys_b, docs.fields
    types = sorted({t for k in (*keys_a.values(), *keys_b.values()) for t in k})
    zero = (0, 0, 0, 0)
    return CompareResult(
        a=str(dir_a), b=str(dir_b), documents=len(common),
        only_a=len(a) - len(common), only_b=len(b) - len(common),
        bootstrap={"resamples": resamples, "seed": seed}, warnings=warnings,
        metrics=_diffs(paired_bootstrap([a[d][0] for d in common], [b[d][0] for d in common], resamples, seed)),
        by_fact_type={t: _diffs(paired_bootstrap([keys_a[d].get(t, zero) for d in common],
                                                 [keys_b[d].get(t, zero) for d in common], resamples, seed))
                      for t in types},
        changed=docs.changed, changed_total=docs.total,
        provenance={"factjudge": __version__}, categories=docs.categories, auroc=docs.auroc,
        fields={t: {path: _diffs(paired_bootstrap([fields["a"].get(d, {}).get((t, path), zero) for d in common],
                                                  [fields["b"].get(d, {}).get((t, path), zero) for d in common],
                                                  resamples, seed))
                    for path in sorted({p for run in fields.values() for keys in run.values() for (u, p) in keys
                                        if u == t})}
                for t in sorted({t for run in fields.values() for keys in run.values() for (t, _) in keys})},
    )


def _diffs(pairs: dict[str, PairedDiff]) -> dict[str, MetricDiff]:
    return {name: MetricDiff.model_validate(pair) for name, pair in pairs.items()}


def _settings_warnings(dir_a: Path, dir_b: Path, key: str, what: str) -> list[str]:
    """Whether the runs' ``key`` in summary.json (their judge config, their judge) differ; a run
    that records none cannot be checked, which is said rather than read as "differing in every
    key" (one run without it) or as "the same" (neither has it), as agree says it."""
    recorded = [RunFolder(d).summary_part(key) for d in (dir_a, dir_b)]
    missing = [str(d) for d, value in zip((dir_a, dir_b), recorded, strict=True)
               if not isinstance(value, dict) or not value]
    if missing:
        return [f"{' and '.join(missing)} record(s) no {what} in summary.json: whether the two runs used "
                f"the same {what} cannot be checked; the comparison may not be fair"]
    sa, sb = recorded
    keys = sorted(k for k in {*sa, *sb} if sa.get(k) != sb.get(k))
    if not keys:
        return []
    return [f"the two runs used different {what}s (differing: {', '.join(keys)}); the comparison may "
            "not be fair"]


_FieldKeys = dict[str, dict[str, dict[tuple[str, str], tuple[int, int, int, int]]]]


def _field_keys(line: dict[str, Any]) -> dict[tuple[str, str], tuple[int, int, int, int]]:
    """A result line's field counts as bootstrap keys, (fact type, path) -> (correct, wrong +
    spurious, correct, wrong + missing): :func:`~factjudge.core.aggregate.key_prf` of them is the
    field's precision, recall and F1."""
    return {(t, path): (c.correct, c.wrong + c.spurious, c.correct, c.wrong + c.missing)
            for t, paths in line_analysis(line).fields.items() for path, c in paths.items()}


class _Documents(NamedTuple):
    """What :func:`_by_document` reads from the shared documents of two runs."""

    keys_a: dict[str, dict[str, tuple[int, int, int, int]]]
    keys_b: dict[str, dict[str, tuple[int, int, int, int]]]
    changed: list[dict[str, Any]]
    total: int
    categories: dict[str, dict[str, CategoryCounts]]
    auroc: dict[str, float | None]
    fields: _FieldKeys


def _by_document(dir_a: Path, dir_b: Path, common: set[str]) -> _Documents:
    """Per fact type keys of both runs, the changed facts, each run's categories, the AUROC of
    its predictions' confidence (empty when neither carries one; :mod:`factjudge.core.confidence`)
    and its field keys per document, one document in memory at a time: B's lines are streamed, A's
    line of the same document is read at its offset."""
    run_a = RunFolder(dir_a)
    index_a = run_a.index(finished=True)
    keys_a: dict[str, dict[str, tuple[int, int, int, int]]] = {}
    keys_b: dict[str, dict[str, tuple[int, int, int, int]]] = {}
    changed: list[dict[str, Any]] = []
    total = 0
    categories: dict[str, dict[str, CategoryCounts]] = {"a": {}, "b": {}}
    confidence = {"a": ConfidenceAccumulator(), "b": ConfidenceAccumulator()}
    named = {run: _confidence_field(d) for run, d in (("a", dir_a), ("b", dir_b))}
    fields: _FieldKeys = {"a": {}, "b": {}}
    with run_a.results.open("rb") as fa:
        for line_b in RunFolder(dir_b).lines(finished=True):
            doc_id = line_b["doc_id"]
            if doc_id not in common:
                continue
            line_a = run_a.line_at(fa, index_a[doc_id])
            keys_a[doc_id], keys_b[doc_id] = fact_type_keys(line_a), fact_type_keys(line_b)
            for run, line in (("a", line_a), ("b", line_b)):
                fields[run][doc_id] = _field_keys(line)
                for t, counts in count_categories(line).items():
                    categories[run].setdefault(t, CategoryCounts()).add(counts)
                confidence[run].add(doc_confidence(line, named[run]), doc_id)
            rows = changed_facts(line_a, line_b)
            total += len(rows)
            changed.extend(rows[:max(0, MAX_CHANGED - len(changed))])
    summaries = {run: acc.summary() for run, acc in confidence.items()}
    auroc = {run: None if c is None else c.auroc for run, c in summaries.items()} \
        if any(summaries.values()) else {}
    return _Documents(keys_a, keys_b, changed, total, {run: sorted_counts(c) for run, c in categories.items()},
                      auroc, fields)


def _confidence_field(run_dir: Path) -> str | None:
    """The run's config key ``confidence_field`` (None: unset, or a run that records no config)."""
    named = RunFolder(run_dir).run_config().get("confidence_field")
    return named if isinstance(named, str) else None


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def compare_text(cmp: CompareResult) -> str:
    """The table ``factjudge compare`` prints."""
    lines = [f"A: {cmp.a}", f"B: {cmp.b}",
             f"{'metric':<10} {'A':>7} {'B':>7} {'B-A':>7}  {'95% CI of B-A':<18} excludes 0"]
    for k in ("precision", "recall", "f1"):
        r = cmp.metrics[k]
        ci = "n/a" if r.ci95 is None else f"[{r.ci95[0]:+.3f}, {r.ci95[1]:+.3f}]"
        verdict = "no"
        if r.excludes_zero and r.ci95 is not None:
            verdict = "yes: B is higher" if r.ci95[0] > 0 else "yes: A is higher"
        lines.append(f"{k:<10} {fmt(r.a):>7} {fmt(r.b):>7} {_signed(r.diff):>7}  {ci:<18} {verdict}")
    boot = cmp.bootstrap
    lines.append(f"paired bootstrap over {cmp.documents} documents, {boot['resamples']} resamples, "
                 f"seed {boot['seed']}; {cmp.changed_total} facts changed status")
    near = near_miss_text(cmp)
    if near:
        lines.append(near)
    if cmp.auroc:
        lines.append(compare_auroc_text(cmp))
    return "\n".join(lines)



def near_miss_text(cmp: CompareResult) -> str:
    """``near misses: A 14 (value 5, location 4, ...), B 9 (value 2)``: each run's near misses and
    the fields they differ in most (empty when neither run has any)."""
    totals = {run: run_categories(cmp, run) for run in ("a", "b")}
    if not any(t.near_miss for t in totals.values()):
        return ""
    parts = []
    for run, total in totals.items():
        fields = ", ".join(f"{name} {n}" for name, n in list(total.near_miss_fields.items())[:3])
        more = ", ..." if len(total.near_miss_fields) > 3 else ""
        parts.append(f"{run.upper()} {total.near_miss}" + (f" ({fields}{more})" if fields else ""))
    return "near misses: " + ", ".join(parts)


def run_categories(cmp: CompareResult, run: str) -> CategoryCounts:
    """One run's categories over every fact type of a compare (``run``: ``a`` or ``b``)."""
    return sorted_counts({"": total_categories(cmp.categories.get(run, {}))})[""]


def check_compare_pages(out_dir: Path) -> None:
    """A one-line InputError unless ``out_dir`` may get compare's pages: a ``compare.md`` or
    ``compare.html`` already there must be one compare wrote (a user's file is never replaced)."""
    for name in (COMPARE_MD, COMPARE_HTML):
        check_own_page(out_dir / name, COMPARE_TITLE, "compare")


def write_compare_pages(cmp: CompareResult, out_dir: Path) -> None:
    check_compare_pages(out_dir)  # both checked before either is written
    write_atomic(out_dir / COMPARE_MD, render_compare_markdown(cmp))
    write_atomic(out_dir / COMPARE_HTML, render_compare_html(cmp))
