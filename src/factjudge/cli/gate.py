"""``--fail-under-f1/-precision/-recall``: a CI gate on the micro figures (exit 3, outputs written)."""
from __future__ import annotations

from dataclasses import dataclass

import typer

from .app import say
from .options import inject_options

#: Exit code of a run whose score is below a gate.
BELOW_GATE = 3

GATE_OPTS = {
    name: typer.Option(None, f"--fail-under-{name}", min=0.0, max=1.0,
                       help=f"Exit {BELOW_GATE} when the micro {name} is below this (outputs are still written).")
    for name in ("f1", "precision", "recall")
}


@dataclass(frozen=True)
class Gate:
    f1: float | None = None
    precision: float | None = None
    recall: float | None = None

    def check(self, precision: float | None, recall: float | None, f1: float | None) -> int:
        """0, or :data:`BELOW_GATE` after one line naming every figure below its gate. An
        undefined figure (no predictions, no gold) is below any gate."""
        below = []
        for name, value in (("f1", f1), ("precision", precision), ("recall", recall)):
            limit = getattr(self, name)
            if limit is not None and (value is None or value < limit):
                shown = "n/a" if value is None else f"{value:.3f}"
                below.append(f"micro {name} {shown} < {limit:g}")
        if below:
            say(f"factjudge: below the gate: {', '.join(below)}")
            return BELOW_GATE
        return 0


#: Adds the ``--fail-under-*`` options; the command receives them as ``gate``.
with_gate = inject_options(
    "gate", {f"fail_under_{n}": (float | None, o) for n, o in GATE_OPTS.items()},
    lambda values: Gate(**{k.removeprefix("fail_under_"): v for k, v in values.items()}))
