"""What a process that leaves by ``os._exit`` (the CLI's ``main``) keeps to its end instead of
freeing it: freeing a run's structures object by object when the run returns only costs time."""
from __future__ import annotations

_kept: list[object] | None = None


def leave_by_exit() -> None:
    """Say that this process ends by ``os._exit``: :func:`keep` holds what it is given from now on."""
    global _kept
    _kept = []


def keep(value: object) -> None:
    """Hold ``value`` to the end of the process when it leaves by ``os._exit``; else nothing."""
    if _kept is not None:
        _kept.append(value)
