"""An eval run's headline for a notebook cell (``EvalRun._repr_html_``) and its one-line repr:
micro and macro precision, recall and F1 with the 95% intervals, and the alerts above them."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .format import fmt, fmt_ci
from .html import render_page

_RATIOS = ("precision", "recall", "f1")


def _facts(micro: Mapping[str, Any]) -> int:
    return sum(int(micro.get(k, 0)) for k in ("tp_gold", "fn", "tp_predicted", "fp", "errors"))


def summary_line(summary: Mapping[str, Any]) -> str:
    """``P 0.750 R 0.600 F1 0.667 (micro) | 5 documents, 14 in-scope facts, 0 ERROR``."""
    micro = summary["micro"]
    alerts = len(summary.get("alerts") or ())
    return (f"P {fmt(micro['precision'])} R {fmt(micro['recall'])} F1 {fmt(micro['f1'])} (micro) | "
            f"{summary['documents']:,} documents, {_facts(micro):,} in-scope facts, {micro['errors']:,} ERROR"
            + (f" | {alerts} alert(s)" if alerts else ""))


def summary_html(summary: Mapping[str, Any]) -> str:
    """The headline table (micro, its 95% interval, macro), autoescaped like the reports."""
    micro, macro, ci = summary["micro"], summary["macro"], summary.get("ci95") or {}
    rows = [("micro", [fmt(micro[k]) for k in _RATIOS]),
            ("micro 95% CI", [fmt_ci(ci.get(k)) for k in _RATIOS]),
            ("macro", [fmt(macro[k]) for k in _RATIOS])]
    return render_page("notebook.html.j2", rows=rows, line=summary_line(summary),
                       alerts=summary.get("alerts") or [])
