"""``factjudge agree A B``: how far two judges agree on the same inputs, fact by fact."""
from __future__ import annotations

from pathlib import Path

import typer

from ..errors import InputError
from ..evaluation.agree import AGREE_HTML, AGREE_TITLE, agree, render_html, render_text, warnings
from ..io.files import check_own_page, write_atomic
from .app import app, run_command, say
from .options import output_opt


@app.command("agree")
def agree_cmd(
    dir_a: Path = typer.Argument(..., help="Output folder of one eval run (A)."),
    dir_b: Path = typer.Argument(..., help="Output folder of an eval run on the same inputs by another judge (B)."),
    output_dir: Path | None = output_opt(f"Folder to write {AGREE_HTML} into (self-contained, opens offline)."),
    max_rows: int = typer.Option(1000, "--max-rows", min=0, help="Most differing facts listed (all are counted)."),
) -> None:
    """Per-fact agreement and Cohen's kappa of two judges, and the facts they decide differently."""
    run_command(lambda: _agree(dir_a, dir_b, output_dir, max_rows), interrupted="nothing written")


def _agree(dir_a: Path, dir_b: Path, output_dir: Path | None, max_rows: int) -> None:
    if output_dir is not None and output_dir.exists() and not output_dir.is_dir():
        raise InputError(f"{output_dir}: not a folder")
    if output_dir is not None:  # before any work: a user's agree.html is never replaced
        check_own_page(output_dir / AGREE_HTML, AGREE_TITLE, "agree")
    result = agree(dir_a, dir_b, max_rows)
    for warning in warnings(result):
        say(f"factjudge: warning: {warning}")
    typer.echo(render_text(result), nl=False)
    if output_dir is not None:
        write_atomic(output_dir / AGREE_HTML, render_html(result))
        say(f"wrote {output_dir / AGREE_HTML}")
