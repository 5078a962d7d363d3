"""The ``factjudge`` command: one module per command, registered on one Typer app."""
from __future__ import annotations

import os
import sys
from typing import Protocol, TypeGuard

from . import agree_cmd, batch_cmd, calibrate_cmd, compare_cmd, eval_cmd, judge_cmd  # noqa: F401  (register the commands)
from .app import app, say

__all__ = ["app", "main"]


class _ClickError(Protocol):
    """What is used of click's ClickException."""

    def show(self) -> None: ...

    def format_message(self) -> str: ...


def _is_click_error(raised: BaseException) -> TypeGuard[_ClickError]:
    import typer
    # click's, or the copy newer typer versions vendor
    click_error = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    return isinstance(raised, click_error)


def _exit_code(raised: BaseException | None, returned: object) -> int:
    import typer
    if raised is None:
        return returned if isinstance(returned, int) else 0
    if isinstance(raised, typer.Exit):
        return int(raised.exit_code)
    if _is_click_error(raised):  # bad options: one line like every usage error
        if raised.__class__.__name__ == "NoArgsIsHelpError":
            raised.show()  # the help, as asked for
            return 2
        say(f"factjudge: error: {raised.format_message()} (see factjudge --help)")
        return 2
    if isinstance(raised, (typer.Abort, KeyboardInterrupt)):
        say("factjudge: interrupted")
        return 130
    raise raised


def main() -> None:
    """Run the CLI, then leave without interpreter teardown once the outputs are flushed and
    closed: tearing down the modules of a finished run only costs time."""
    raised: BaseException | None = None
    returned: object = None
    try:
        returned = app(standalone_mode=False)
    except SystemExit as exc:
        returned = exc.code
    except BaseException as exc:  # noqa: BLE001  (mapped to an exit code, or re-raised)
        raised = exc
    code = _exit_code(raised, returned)
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        pass
    sys.stderr.flush()
    os._exit(code)
