"""How numbers are shown in summaries, reports and the CLI: 0.632, [0.5, 0.7], +0.120."""
from __future__ import annotations

from collections.abc import Sequence


def fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def fmt_ci(ci: Sequence[float] | None) -> str:
    return "n/a" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def fmt_diff(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def fmt_ci_diff(ci: Sequence[float] | None) -> str:
    return "n/a" if not ci else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
