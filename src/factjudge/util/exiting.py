"""What a process that leaves by ``os._exit`` (the CLI's ``main``) keeps to its end instead of
freeing it: freeing a run's structures object by object when the run returns only costs time."""
from __future__ import annotations

from collections.abc import Callable

_kept: list[object] | None = None
#: What must still be done before ``os._exit`` (finalizers do not run then).
_cleanups: list[Callable[[], None]] = []


def leave_by_exit() -> None:
    """Say that this process ends by ``os._exit``: :func:`keep` holds what it is given from now on."""
    global _kept
    _kept = []


def keep(value: object) -> None:
    """Hold ``value`` to the end of the process when it leaves by ``os._exit``; else nothing."""
    if _kept is not None:
        _kept.append(value)


def clean_up_at_exit(cleanup: Callable[[], None]) -> None:
    """Call ``cleanup`` before the process leaves by ``os._exit`` (:func:`clean_up`); else
    nothing, the object's own finalizer does it: a temporary folder's finalizer never ran under
    ``os._exit``, so every run on a fact table left a copy of its facts in the temporary folder."""
    if _kept is not None:
        _cleanups.append(cleanup)


def clean_up() -> None:
    """Run what :func:`clean_up_at_exit` was given, newest first; a failure stops none of the others."""
    while _cleanups:
        try:
            _cleanups.pop()()
        except OSError:
            pass
