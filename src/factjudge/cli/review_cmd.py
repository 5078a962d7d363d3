"""``factjudge review apply OUT review.jsonl``: a person's review (review.html's export) fed back
into the run's figures and, with ``-o``, into a corrected gold set."""
from __future__ import annotations

from pathlib import Path

import typer

from ..evaluation.review import apply_review
from .app import app, run_command, say
from .options import output_opt

review_app = typer.Typer(no_args_is_help=True, help="Feed a person's review of a run back: "
                         "reviewed figures and a corrected gold set.")
app.add_typer(review_app, name="review")


@review_app.command("apply")
def apply_cmd(
    output_dir: Path = typer.Argument(..., help="The eval output folder the review was made in (its review.html)."),
    export: Path = typer.Argument(..., help="The review.jsonl review.html exported."),
    output: Path | None = output_opt("Write the corrected gold set here, in the gold's own format "
                                     "(a new file: an input is refused)."),
    gold: Path | None = typer.Option(None, "--gold", help="The gold input to correct (default: the run's "
                                     "first input, the dataset or --gold of eval)."),
) -> None:
    """Recompute the run's figures with the person's verdicts in place of the judge's (into
    summary.json's "reviewed", report.md, report.html and review.html) and write the gold with the person's corrections
    and the omissions they found as a new file."""

    def run() -> None:
        applied = apply_review(output_dir, export, output, gold)
        typer.echo(applied.text(), nl=False)
        say(f"wrote {output_dir / 'summary.json'} (reviewed), "
            + ", ".join(str(output_dir / n) for n in ("report.md", "report.html", "review.html"))
            + (f", {output}" if output is not None else ""))

    run_command(run, interrupted="nothing written")
