"""The ``factjudge`` Typer app, its one-line errors and the exit-code policy of every command.

Exit codes: 0 ok, 1 finished with ERROR facts, 2 bad input or usage, 3 below a ``--fail-under``
gate, 130 interrupted. ``eval --mlflow`` failing to log is 2 only for a run that was 0: a run's 1 or
3 is kept (cli/mlflow_hook.py ``after_run``).
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

import typer

from .._version import __version__
from ..errors import FactJudgeError, JudgeSetupError
from ..util.terminal import printable

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Score fact-extraction systems against gold facts.")


def say(text: str) -> None:
    """One line on stderr, never wrapped or styled (above the progress bar when one is shown:
    it redirects stderr). Every message of every command passes here, so this is where the names
    in it (fact types, doc_ids, paths, a server's words) get their control characters escaped;
    the files written keep them as they were."""
    sys.stderr.write(printable(text) + "\n")


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error to stderr and return the exit to raise."""
    say(f"factjudge: error: {message}")
    return typer.Exit(code)


def _is_sqlite_error(raised: BaseException) -> bool:
    """Whether the response cache's database raised: sqlite3 is not imported here, as only a run
    with a cache loads it (importing it cost every other command 2.5-9 ms of its start), and
    nothing raised a sqlite3.Error before it was loaded."""
    sqlite3 = sys.modules.get("sqlite3")
    return sqlite3 is not None and isinstance(raised, sqlite3.Error)


def run_command(work: Callable[[], int | None], *, interrupted: str, after: str = "") -> None:
    """Run a command's work, mapping what it raises to one line and an exit code. ``interrupted``
    says what Ctrl-C leaves behind; ``after`` is appended to a setup error (what was written)."""
    try:
        code = work()
    except KeyboardInterrupt:
        say(f"factjudge: interrupted; {interrupted}")
        raise typer.Exit(130) from None
    except JudgeSetupError as exc:
        raise fail(f"{exc}{after}") from None
    except FactJudgeError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:  # judges never raise for a question: they return ERROR verdicts
        where = f"{exc.filename}: " if exc.filename else ""
        raise fail(f"{where}cannot read or write: {exc.strerror or exc}") from None
    except Exception as exc:
        if not _is_sqlite_error(exc):
            raise
        raise fail(f"response cache: {exc} (try --cache-dir DIR or --no-cache)") from None
    if code:
        raise typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"factjudge {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> NoReturn | None:
    """factjudge: score fact-extraction systems against gold facts."""
    return None
