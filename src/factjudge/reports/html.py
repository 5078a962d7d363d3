"""report.html and compare.html (and the page :mod:`factjudge.evaluation.agree` renders): Jinja2
templates in ``templates/`` over one base layout, with the one stylesheet and the scripts of
``static/`` inlined, so a page is one self-contained file that opens offline (from a mail
attachment or a CI artifact) and references no resource.

Autoescape is on: every value a template prints is escaped, so fact text, ids, model names and
paths can only ever be text. The only markup that is not escaped is the package's own CSS and
JavaScript and the document view's data, which :func:`~.docview.json_for_script` writes so that it
cannot end its ``<script type="application/json">`` element. The scripts only ever set
``textContent``. Charts are inline SVG.

This is the one module that imports jinja2, so commands that write no page never load it.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from markupsafe import Markup

from ..core.aggregate import Summary
from ..core.confidence import ConfidenceSummary
from ..core.grounding import Finder
from ..io.run_models import CompareResult, MetricDiff
from ..models import Counts
from .docview import MAX_DOCUMENT_BYTES, MAX_DOCUMENTS, embed_documents, first_with_both_sides, json_for_script
from .format import fmt, fmt_ci, fmt_ci_diff, fmt_diff
from .rows import ROW_STATUSES, ClosestMap, closest_detail
from .source import OMISSION_HEADER, SOURCE_HEADER, omission_rows, source_note, source_rows
from .text import (
    BY_TYPE_HEADER,
    CATEGORY_HEADER,
    CATEGORY_NOTE,
    COMPARE_CATEGORY_HEADER,
    COMPARE_DOC,
    COMPARE_FIELD_HEADER,
    FIELD_HEADER,
    FIELD_NOTE,
    JUDGE_CORRECTED_HEADER,
    METRIC_HEADER,
    RATIO_KEYS,
    REVIEW_HEADER,
    TOTALS_HEADER,
    TYPE_HEADER,
    banners,
    by_type_rows,
    category_rows,
    change_text,
    changed_counts,
    compare_auroc_text,
    compare_category_rows,
    compare_field_rows,
    compare_only_text,
    confidence_corrected_note,
    confidence_headline,
    confidence_note,
    fact_json,
    field_rows,
    judge_corrected_note,
    judge_corrected_rows,
    judge_label,
    metric_label,
    metric_rows,
    order_text,
    provenance_rows,
    review_table,
    reviewed_line,
    reviewed_note,
    rows_note,
    setting_text,
    status_text,
    threshold_table,
    totals_row,
    type_rows,
    usage_text,
    worst_cells,
)

if TYPE_CHECKING:
    import jinja2

COLORS = {"precision": "#4e79a7", "recall": "#f28e2b", "f1": "#59a14f"}


# --------------------------------------------------------------------------- environment


@functools.cache
def static_file(name: str) -> Markup:
    """A file of ``static/`` (the stylesheet, a page's script), to inline: the package's own code,
    so it is not escaped."""
    return Markup((resources.files(__package__) / "static" / name).read_text(encoding="utf-8"))


def _is_string_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(x, str) for x in value)


@functools.cache
def environment() -> jinja2.Environment:
    """The pages' Jinja2 environment (built once): templates from the package, autoescape on, and
    an undefined name an error rather than an empty cell."""
    import jinja2  # when a page is written: eval's runner imports this module at its start (17 ms)

    env = jinja2.Environment(
        loader=jinja2.PackageLoader(__package__, "templates"), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals["static"] = static_file
    env.filters.update(
        script_json=lambda data: Markup(json_for_script(data)),  # the document view's data, inert
        urlquote=lambda value: quote(str(value), safe=""),  # a doc_id in a "#doc=" link
        thousands=lambda n: f"{n:,}", compact=lambda x: f"{x:g}", fmt=fmt,
        fact_json=fact_json, setting=setting_text, status_text=status_text, change_text=change_text)
    env.tests["string_list"] = _is_string_list
    return env


#: The pages an eval run writes (report.html, review.html): what :func:`compile_templates`
#: compiles with the templates they share (agree's, compare's and the notebook's pages are
#: another command's: ~20 ms of an LLM run's idle time).
RUN_PAGES = ("report.html.j2", "review.html.j2")


def compile_templates(pages: Collection[str] = RUN_PAGES) -> Iterator[str]:
    """Compile ``pages`` and the templates pages share (their base, macros and the ``_`` parts
    they include) ahead of writing them, one at a time (each name yielded once compiled): a run
    does it while its workers judge or its LLM's answers are awaited, instead of at its end (one
    process's: 0.07 s CPU)."""
    env = environment()
    for name in env.list_templates():
        if name in pages or name.startswith("_") or name in ("base.html.j2", "macros.html.j2"):
            env.get_template(name)
            yield name


def render_page(template: str, **context: Any) -> str:
    """A page of ``templates/`` rendered with ``context``, ending with one newline."""
    return environment().get_template(template).render(**context).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- report.html


def _card(label: str, value: str, sub: str = "", ident: str = "", cls: str = "") -> dict[str, str]:
    return {"label": label, "value": value, "sub": sub, "ident": ident, "cls": cls}


def _report_cards(summary: Summary) -> list[dict[str, str]]:
    micro, macro, ci = summary.micro, summary.macro, summary.ci95
    cards = [_card("documents", f"{summary.documents:,}", ident="documents")]
    cards += [_card(f"micro {metric_label(k)}", fmt(getattr(micro, k)), f"95% CI {fmt_ci(ci[k])}",
                    ident=f"micro-{k}") for k in RATIO_KEYS]
    cards.append(_card("macro F1", fmt(macro.f1),
                       f"P {fmt(macro.precision)} R {fmt(macro.recall)}; "
                       f"{macro.defined['f1']} docs defined", ident="macro-f1"))
    cards.append(_card("ERROR facts", str(micro.errors), "left out of P and R", ident="errors"))
    reviewed = summary.reviewed
    if reviewed is not None:  # beside the judge's figures: the person's verdicts in their place
        cards.append(_card("reviewed F1", fmt(reviewed.f1),
                           f"P {fmt(reviewed.precision)} R {fmt(reviewed.recall)} on {reviewed.reviewed:,} "
                           "reviewed facts", ident="reviewed"))
    return cards


#: The chart's geometry in px: label column, bar length at 1.0, bar height, gap between fact types,
#: legend height.
LABEL_W, BAR_W, BAR_H, GAP, LEGEND_H = 170, 360, 11, 10, 24


SHORT = {"precision": "P", "recall": "R", "f1": "F1"}


def _bars(figures: Counts, y0: int) -> list[dict[str, Any]]:
    """The P, R and F1 bars of one fact type (``value`` None: undefined, shown as "n/a"). Zero bars
    share one label, on the first of them ("0.00 (P, F1)"): three "0.00" on empty bars stacked
    into one smudge (#24)."""
    zeros = [m for m in COLORS if getattr(figures, m) == 0]
    bars = []
    for j, (metric, color) in enumerate(COLORS.items()):
        y, v = y0 + j * BAR_H, getattr(figures, metric)
        bar: dict[str, Any] = {"metric": metric, "color": color, "y": y, "text_y": y + BAR_H - 2, "value": None}
        if v is not None:
            short = f"{v:.2f}"
            if v == 0:
                short = f"0.00 ({', '.join(SHORT[m] for m in zeros)})" if metric == zeros[0] else ""
            bar.update(value=f"{v:.3f}", short=short, width=f"{v * BAR_W:.1f}",
                       text_x=f"{LABEL_W + v * BAR_W + 4:.1f}")
        bars.append(bar)
    return bars


def _support(item: tuple[str, Counts]) -> tuple[int, int, str]:
    """Sort key of a fact type in the chart: most gold facts first, then most predicted, then name."""
    name, c = item
    return -(c.tp_gold + c.fn), -(c.tp_predicted + c.fp), name


def bar_chart(by_type: Mapping[str, Counts]) -> dict[str, Any]:
    """Where ``_bar_chart.html.j2`` draws the P/R/F1-per-fact-type chart (horizontal grouped bars,
    inline SVG): legend, ticks, and per fact type its label and bars, the most supported type first
    (alphabetical put a type with one fact above one with a thousand)."""
    by_type = dict(sorted(by_type.items(), key=_support))
    group_h = 3 * BAR_H + GAP
    height = LEGEND_H + max(1, len(by_type)) * group_h + 20
    groups = [{"name": name, "label": name if len(name) <= 24 else name[:23] + "\u2026",
               "y": f"{LEGEND_H + g * group_h + 1.5 * BAR_H + 4}", "bars": _bars(figures, LEGEND_H + g * group_h)}
              for g, (name, figures) in enumerate(by_type.items())]
    return {"width": LABEL_W + BAR_W + 60, "height": height, "label_w": LABEL_W, "bar_h": BAR_H,
            "legend": [{"name": n, "color": c, "x": LABEL_W + i * 110} for i, (n, c) in enumerate(COLORS.items())],
            "ticks": [{"x": f"{LABEL_W + t * BAR_W:.1f}", "label": f"{t:g}"} for t in (0, 0.25, 0.5, 0.75, 1.0)],
            "top": LEGEND_H, "bottom": height - 16, "groups": groups}


def _unique(values: Iterable[Any]) -> list[str]:
    return list(dict.fromkeys(str(v) for v in values))


def _facts_table(summary: Summary, rows: Sequence[Mapping[str, Any]], rows_total: int,
                 rows_order: str) -> dict[str, Any]:
    """What the facts table says about itself: its filters, what it holds, the note."""
    failing = sum(r["status"] != "TP" for r in rows)
    tp_shown = len(rows) - failing
    tp_total = summary.micro.tp_gold + summary.micro.tp_predicted
    held = (f"The table holds {failing:,} of the {rows_total:,} FN/FP/ERROR facts"
            + (f" and {tp_shown:,} of the {tp_total:,} TP facts (hidden until the status filter "
               "shows TP or all; each with the fact it is linked to)" if tp_shown else "")
            + f", {order_text(rows_order)}.")
    return {"rows": rows, "failing": failing, "held": held,
            "note": rows_note(failing, rows_total, rows_order),
            "statuses": [*ROW_STATUSES, *(["TP"] if tp_shown else [])],
            "types": sorted({str(r["fact_type"]) for r in rows}),
            "docs": _unique(r["doc_id"] for r in rows)}


def _judge_corrected(summary: Summary) -> dict[str, Any] | None:
    """What ``_judge_corrected.html.j2`` shows (None: the run had no judge calibration)."""
    if not summary.judge_corrected:
        return None
    return {"note": judge_corrected_note(summary.judge_corrected), "header": JUDGE_CORRECTED_HEADER,
            "rows": judge_corrected_rows(summary)}


#: The reliability diagram: the plot's side, its left and top margins (px).
PLOT, PLOT_LEFT, PLOT_TOP = 220, 44, 12


def reliability_chart(c: ConfidenceSummary) -> dict[str, Any]:
    """Where ``_confidence.html.j2`` draws the reliability diagram (inline SVG): per non-empty bin
    a bar as high as its share of correct predictions and a dot at its mean confidence, and the
    diagonal a calibrated extractor follows."""
    def x(v: float) -> str:
        return f"{PLOT_LEFT + v * PLOT:.1f}"

    def y(v: float) -> str:
        return f"{PLOT_TOP + (1 - v) * PLOT:.1f}"

    width = PLOT / max(1, len(c.bins))
    bars = [{"x": f"{PLOT_LEFT + b.low * PLOT + 1:.1f}", "y": y(b.accuracy), "width": f"{width - 2:.1f}",
             "height": f"{b.accuracy * PLOT:.1f}", "cx": x(b.confidence), "cy": y(b.accuracy),
             "title": f"confidence {b.low:.1f}-{b.high:.1f}: {b.predictions:,} "
                      f"prediction{'' if b.predictions == 1 else 's'}, mean confidence "
                      f"{fmt(b.confidence)}, share correct {fmt(b.accuracy)}"}
            for b in c.bins if b.predictions and b.accuracy is not None and b.confidence is not None]
    ticks = [{"v": f"{t:g}", "x": x(t), "y": y(t)} for t in (0, 0.5, 1.0)]
    return {"width": PLOT_LEFT + PLOT + 16, "height": PLOT_TOP + PLOT + 36, "left": PLOT_LEFT, "top": PLOT_TOP,
            "right": x(1), "bottom": y(0), "mid": x(0.5),
            "middle_y": f"{-(PLOT_TOP + PLOT / 2):.1f}", "bars": bars, "ticks": ticks}


def _confidence(summary: Summary) -> dict[str, Any] | None:
    """What ``_confidence.html.j2`` shows (None: the predictions carried no confidence)."""
    c = summary.confidence
    if c is None:
        return None
    header, rows = threshold_table(c)
    return {"note": confidence_note(c), "corrected": confidence_corrected_note(c),
            "chart": reliability_chart(c) if c.predictions else None,
            "headline": confidence_headline(c),
            "threshold_header": header, "thresholds": rows,
            "review_header": REVIEW_HEADER, "review": review_table(c)}


def _source(summary: Summary, omissions: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any] | None:
    """What ``_source.html.j2`` shows (None: no document had a text)."""
    s = summary.source
    if s is None:
        return None
    return {"note": source_note(s), "header": SOURCE_HEADER, "rows": source_rows(s),
            "omission_header": OMISSION_HEADER, "omissions": omission_rows(omissions),
            "more": s.possible_gold_omissions.total - len(omissions)}


def render_html(summary: Summary, worst: Sequence[Mapping[str, Any]],
                rows: Sequence[Mapping[str, Any]], rows_total: int, *,
                rows_order: str = "dataset", documents: Iterable[Mapping[str, Any]] = (),
                max_documents: int = MAX_DOCUMENTS,
                max_document_bytes: int = MAX_DOCUMENT_BYTES, texts: Mapping[str, str] | None = None,
                find: Callable[[str], Finder] | None = None,
                omissions: Sequence[tuple[str, Mapping[str, Any]]] = (),
                closest: Callable[[Mapping[str, Any]], ClosestMap] = closest_detail) -> str:
    """``report.html``, one self-contained file. ``rows``, ``rows_total``, ``rows_order`` as for
    :func:`~.markdown.render_markdown` (TP rows are in the table, hidden until the status filter
    shows them). ``documents``: result lines, worst first, for the document view (see
    :func:`~.docview.embed_documents`); the worst-documents table and the rows link to the
    embedded ones (``#doc=ID``). What ``evaluate`` passes:

    - rows: :func:`~.rows.select_rows` over the result lines ordered worst document first
      (:func:`~.rows.worst_order_key`), each row made by :func:`~.rows.collect_rows`;
    - documents: the result lines of the worst documents, worst first (up to ``max_documents``
      of them, within ``max_document_bytes`` of JSON, are embedded for the document view);
    - summary: the run's :class:`~factjudge.core.aggregate.Summary` (``summary.json``), whose
      ``provenance``, ``judge`` and ``config`` are shown;
    - texts, find: the embedded documents' texts and the value search, for the document view's
      text with each fact's evidence marked (:func:`~.docview.embed_documents`);
    - omissions: the first possible gold omissions, (doc_id, predicted fact), listed in their
      section (:class:`~factjudge.core.grounding.SourceCounts`);
    - closest: the closest-fact search of the rows (:class:`~.rows.ClosestMemo`), reused."""
    payloads, left_out = embed_documents(documents, max_documents, max_document_bytes, texts, find, closest)
    start = first_with_both_sides(payloads)
    embedded = frozenset(p["doc_id"] for p in payloads)
    # the table (some 50 pieces a row) rendered on its own, not included: each piece an include
    # writes passes up through the block, the page and the base layout (report.html 0.185 ->
    # 0.162 s CPU at 1,000 x 20 facts); it is the same template, escaped as the page
    facts_table = Markup(environment().get_template("_facts_table.html.j2").render(
        facts=_facts_table(summary, rows, rows_total, rows_order), embedded=embedded))
    prov = summary.provenance
    return render_page(
        "report.html.j2", summary=summary, boot=summary.bootstrap, judge=judge_label(summary.judge),
        prov=prov, prov_inputs=", ".join(str(p) for p in prov.get("inputs") or []) or "?",
        cards=_report_cards(summary),
        totals_header=TOTALS_HEADER, totals=totals_row(summary.micro),
        by_type_header=BY_TYPE_HEADER, by_type=by_type_rows(summary.by_fact_type),
        chart=bar_chart(summary.by_fact_type),
        worst=[(w["doc_id"], worst_cells(w)) for w in worst],
        embedded=embedded, payloads=payloads, left_out=left_out, start=start,
        banners=banners(summary),
        skipped=[[s["file"], s["line"], s["error"]] for s in summary.skipped],
        facts_table=facts_table, usage=usage_text(summary.usage),
        provenance=provenance_rows(summary), judge_corrected=_judge_corrected(summary),
        confidence=_confidence(summary), source=_source(summary, omissions),
        reviewed=None if summary.reviewed is None else {"line": reviewed_line(summary),
                                                        "note": reviewed_note(summary)},
        categories=category_rows(summary), category_header=CATEGORY_HEADER, category_note=CATEGORY_NOTE,
        field_scores=field_rows(summary), field_header=FIELD_HEADER, field_note=FIELD_NOTE)


# --------------------------------------------------------------------------- compare.html


def _compare_cards(metrics: Mapping[str, MetricDiff]) -> list[dict[str, str]]:
    """B-A per metric, green when the interval says B is better, red when worse."""
    cards = []
    for k, m in metrics.items():
        diff, excl = m.diff, m.excludes_zero
        cls = "good" if excl and (diff or 0) > 0 else "bad" if excl and (diff or 0) < 0 else ""
        cards.append(_card(f"{metric_label(k)} B-A", fmt_diff(diff),
                           f"95% CI {fmt_ci_diff(m.ci95)}; A {fmt(m.a)}, B {fmt(m.b)}",
                           ident=f"diff-{k}", cls=cls))
    return cards


def render_compare_html(cmp: CompareResult) -> str:
    """``compare.html`` of two eval runs, self-contained; ``cmp`` as in :data:`~.text.COMPARE_DOC`.
    The changed facts are filterable by fact type, change kind and document."""
    changed = cmp.changed
    return render_page(
        "compare.html.j2", cmp=cmp, boot=cmp.bootstrap, only=compare_only_text(cmp),
        cards=_compare_cards(cmp.metrics), metric_header=METRIC_HEADER,
        metric_rows=metric_rows(cmp.metrics), type_header=TYPE_HEADER,
        type_rows=type_rows(cmp.by_fact_type), field_header=COMPARE_FIELD_HEADER,
        field_rows=compare_field_rows(cmp), changed=changed, counts=changed_counts(changed),
        total=cmp.changed_total or len(changed),
        types=sorted({str(c["fact_type"]) for c in changed}), docs=_unique(c["doc_id"] for c in changed),
        prov=cmp.provenance, categories=compare_category_rows(cmp),
        category_header=COMPARE_CATEGORY_HEADER, category_note=CATEGORY_NOTE, auroc=compare_auroc_text(cmp))


render_compare_html.__doc__ = (render_compare_html.__doc__ or "") + "\n\n" + COMPARE_DOC
