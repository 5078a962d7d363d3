"""An eval run's headline for a notebook cell (``EvalRun._repr_html_``) and its one-line repr:
micro and macro precision, recall and F1 with the 95% intervals, and the alerts above them."""
from __future__ import annotations

from ..core.aggregate import Summary
from ..core.alerts import in_scope_facts_count
from .format import fmt, fmt_ci
from .html import render_page

_RATIOS = ("precision", "recall", "f1")


def summary_line(summary: Summary) -> str:
    """``P 0.750 R 0.600 F1 0.667 (micro) | 5 documents, 14 in-scope facts, 0 ERROR``."""
    micro, alerts = summary.micro, len(summary.alerts)
    return (f"P {fmt(micro.precision)} R {fmt(micro.recall)} F1 {fmt(micro.f1)} (micro) | "
            f"{summary.documents:,} documents, {in_scope_facts_count(micro):,} in-scope facts, "
            f"{micro.errors:,} ERROR" + (f" | {alerts} alert(s)" if alerts else ""))


def summary_html(summary: Summary) -> str:
    """The headline table (micro, its 95% interval, macro), autoescaped like the reports."""
    micro, macro, ci = summary.micro, summary.macro, summary.ci95
    rows = [("micro", [fmt(getattr(micro, k)) for k in _RATIOS]),
            ("micro 95% CI", [fmt_ci(ci.get(k)) for k in _RATIOS]),
            ("macro", [fmt(getattr(macro, k)) for k in _RATIOS])]
    return render_page("notebook.html.j2", rows=rows, line=summary_line(summary), alerts=summary.alerts)
