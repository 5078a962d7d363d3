"""The ``factjudge`` command: one module per command, registered on one Typer app."""
from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Protocol, TypeGuard

from ..util.exiting import clean_up, leave_by_exit
from .app import app, say

__all__ = ["app", "main", "register_commands"]

#: The module of each command, in the order ``--help`` lists them.
COMMANDS = {"judge": "judge_cmd", "eval": "eval_cmd", "compare": "compare_cmd", "agree": "agree_cmd",
            "calibrate": "calibrate_cmd", "batch-import": "batch_cmd", "review": "review_cmd"}


def register_commands(argv: Sequence[str] | None = None) -> None:
    """Register the commands on :data:`app`: only the one ``argv`` runs when it names one (a run
    does not pay for importing the others), none for ``--version`` before any command (it prints
    and exits: importing them all cost it 60 ms), else all of them (help, a mistyped command)."""
    name = next((a for a in argv or () if not a.startswith("-")), None)
    if name is None and argv and "--version" in argv and not {"--help", "-h"} & set(argv):
        return
    modules = [COMMANDS[name]] if name in COMMANDS else COMMANDS.values()
    for module in modules:
        importlib.import_module(f".{module}", __name__)


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


#: Allocations between two collections of the youngest generation (Python's default: 700).
GC_YOUNG = 10_000
#: Collections of the youngest generation between two of the middle one (Python's default: 10).
GC_MIDDLE = 100


def main() -> None:
    """Run the CLI, then leave without interpreter teardown once the outputs are flushed and
    closed: tearing down the modules of a finished run only costs time."""
    raised: BaseException | None = None
    returned: object = None
    # numpy (a large run's bootstrap) calls no BLAS routine: OpenBLAS's threads, started at its
    # import, only spun (importing numpy 0.12 -> 0.06 s of CPU); a user's own setting stands
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        # The command's modules (~0.1 s of a run's start, before an LLM run's first question)
        # loaded without the collector: its passes only walked their new objects, which live to
        # the end, again and again (measured: 143 -> 135 ms to here, an eval's).
        collecting = gc.isenabled()
        gc.disable()
        register_commands(sys.argv[1:])
        # The modules just loaded live until the process ends: left out of the collector's full
        # passes, they stop costing a run with many calls its time (measured: -0.1 s, -15% CPU
        # in benchmarks/llm_overhead.py's paced run).
        gc.freeze()
        if collecting:
            gc.enable()
        # A run allocates millions of short-lived containers (facts, verdicts, normal forms) that
        # reference counting frees; collecting the youngest generation every 700 of them instead
        # of every GC_YOUNG cost 18% of a rules run's CPU (1,000 documents x 20 facts: 7.1 s ->
        # 5.8 s), for no memory back: cycles are rare in a run's data. What outlives a young
        # collection is mostly kept to the end (the finishing pass's lines, rows and queue): the
        # middle generation's collections every 10 young ones walked it again and again, 0.1 s
        # of CPU (1,000 documents x 20 facts: 10 collections, 105 ms -> 5 ms; peak memory the same).
        gc.set_threshold(GC_YOUNG, GC_MIDDLE, gc.get_threshold()[2])
        leave_by_exit()  # below: what a run keeps need not be freed before the process ends
        returned = app(standalone_mode=False)
    except SystemExit as exc:
        returned = exc.code
    except BaseException as exc:  # noqa: BLE001  (mapped to an exit code, or re-raised)
        raised = exc
    code = _exit_code(raised, returned)
    clean_up()  # a temporary folder's finalizer does not run under os._exit
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        pass
    sys.stderr.flush()
    os._exit(code)
