"""Counting the calls of a function a cost test watches (how often a step runs, issue #39)."""
from collections.abc import Callable
from typing import Any

import pytest


def count_calls(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str,
                weight: Callable[..., int] | None = None) -> list[int]:
    """The calls of ``owner.<name>`` (a module's function or a class's method) from now on, in the
    list's one item; ``weight``: what a call adds, from its positional arguments (1 when None)."""
    calls = [0]
    original = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1 if weight is None else weight(*args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls
