"""Running coroutines: to completion from synchronous code (scripts and notebooks alike), and many
of them within a window."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
Item = TypeVar("Item")
R = TypeVar("R")


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


async def in_window(items: Iterable[Item], work: Callable[[Item], Awaitable[R]], window: int,
                    on_done: Callable[[R], None]) -> None:
    """``work(item)`` for every item, at most ``window`` at a time, ``on_done`` called with each
    result as it comes. Items are drawn lazily, only when a place is free, so memory does not grow
    with their number. A failure stops the rest (they are cancelled) and is raised."""
    pending: set[asyncio.Task[R]] = set()

    async def drain(until: int) -> None:
        nonlocal pending
        while len(pending) > until:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                on_done(task.result())

    try:
        source = iter(items)
        while True:
            await drain(window - 1)  # before drawing the next item, not after
            try:
                item = next(source)
            except StopIteration:
                break
            pending.add(asyncio.ensure_future(work(item)))
        await drain(0)
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


async def gather_all(*aws: Awaitable[T]) -> list[T]:
    """``asyncio.gather(*aws)``, but a failure cancels the others and waits for them before it is
    raised: none keeps sending requests, or opens a connection, after the caller has moved on (to
    closing the judge's session: a question still in flight then opened a new one, never closed,
    and "Unclosed client session" was printed before the one-line error)."""
    tasks = [asyncio.ensure_future(aw) for aw in aws]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
