"""``factjudge compare A B``: two eval runs on the same gold."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from ..aggregate import paired_bootstrap
from ..evaluate import SUMMARY
from ..results import read_eval_dir
from ..report import fmt
from .app import app, fail, run_command, say


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
    run_command(lambda: _compare(dir_a, dir_b, bootstrap, seed), interrupted="nothing written")


def _compare(dir_a: Path, dir_b: Path, bootstrap: int, seed: int) -> None:
    a, b = read_eval_dir(dir_a), read_eval_dir(dir_b)
    common = [d for d in a if d in b]
    if not common:
        raise fail(f"{dir_a} and {dir_b} have no document in common")
    only_a, only_b = len(a) - len(common), len(b) - len(common)
    if only_a or only_b:
        say(f"factjudge: comparing the {len(common)} documents both scored; "
                  f"{only_a} only in A and {only_b} only in B are left out")
    for key, what in (("config", "judge configs"), ("judge", "judges")):
        sa, sb = _summary_part(dir_a, key), _summary_part(dir_b, key)
        if sa != sb:
            keys = sorted(k for k in {*(sa or {}), *(sb or {})} if (sa or {}).get(k) != (sb or {}).get(k))
            say(f"factjudge: warning: the two runs used different {what} (differing: "
                      f"{', '.join(keys)}); the comparison may not be fair")
    differ = sum(a[d][1] != b[d][1] for d in common)
    if differ:
        say(f"factjudge: warning: the gold facts differ in {differ} of the {len(common)} shared "
                  "documents; the comparison may not be fair")
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
