"""Run a coroutine to completion from synchronous code, in scripts and in notebooks alike."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """``asyncio.run(make())``; when this thread already runs a loop (Jupyter), in a worker thread
    with a loop of its own, re-raising its exception here."""
    async def main() -> T:
        return await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    results: list[T] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(asyncio.run(main()))
        except BaseException as exc:  # noqa: BLE001  (re-raised in the caller's thread)
            errors.append(exc)

    thread = threading.Thread(target=worker, name="factjudge-run")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return results[0]
