"""``factjudge compare A B``: two eval runs on the same gold."""
from __future__ import annotations

from pathlib import Path

import typer

from ..evaluation.compare import (
    COMPARE_HTML,
    COMPARE_MD,
    check_compare_pages,
    compare_result,
    compare_text,
    write_compare_pages,
)
from .app import app, run_command, say
from .options import output_opt


@app.command("compare")
def compare_cmd(
    dir_a: Path = typer.Argument(..., help="Output folder of one eval run (A)."),
    dir_b: Path = typer.Argument(..., help="Output folder of another eval run on the same gold (B)."),
    output: Path | None = output_opt("Also write compare.md and compare.html into this folder."),
    bootstrap: int = typer.Option(1000, "--bootstrap", min=1, help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
) -> None:
    """B minus A in micro P/R/F1 and per fact type, with paired bootstrap 95% intervals over the
    shared documents, and the facts whose status changed."""
    run_command(lambda: _compare(dir_a, dir_b, output, bootstrap, seed), interrupted="nothing written")


def _compare(dir_a: Path, dir_b: Path, output: Path | None, bootstrap: int, seed: int) -> None:
    if output is not None:
        check_compare_pages(output)  # before the bootstrap: a user's compare.md is never replaced
    cmp = compare_result(dir_a, dir_b, bootstrap, seed)
    if cmp.only_a or cmp.only_b:
        say(f"factjudge: comparing the {cmp.documents} documents both scored; {cmp.only_a} "
            f"only in A and {cmp.only_b} only in B are left out")
    for warning in cmp.warnings:
        say(f"factjudge: warning: {warning}")
    typer.echo(compare_text(cmp))
    if output is not None:
        write_compare_pages(cmp, output)
        say(f"wrote {output / COMPARE_MD}, {COMPARE_HTML}")
