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


#: How often :func:`when_idle` looks whether the loop is idle, and how late its timer may come
#: for the loop to count as idle (waiting on its sockets, not working through answers): a loop
#: that waits wakes within ~0.1 ms of a timer; one handling an answer or a burst of them, later.
IDLE_PAUSE = 0.002
IDLE_LATE = 0.0005
#: Timers on time in a row before the first step after a late one: the loop has waited this many
#: pauses (6 ms), not a moment between two pieces of work. A run's first questions wait on their
#: connections a moment each; numpy's import (~50 ms) taken then held the rest back (17 of 32
#: sent, then 15 after it), now every first question is out before it. (No faster in that run,
#: 13.114 s against 13.117 s: the questions held back were under half of them, and the last round
#: holds half the questions. Held back, more would have made the run one import longer.)
IDLE_SETTLE = 3


async def when_idle(steps: Iterable[object], pause: float = IDLE_PAUSE, late: float = IDLE_LATE,
                    settle: int = IDLE_SETTLE) -> None:
    """Take ``steps`` one at a time, each at a moment this loop is idle: a timer of ``pause``
    came due on time, the ``settle``-th in a row since one came late (then one after each step).
    Work a run will need at its end is done while it waits for answers, and a loop kept busy
    (answers coming, a CPU-bound judge) takes none. Cancel the task to stop."""
    loop = asyncio.get_running_loop()
    taken = iter(steps)
    on_time = 0
    while True:
        due = loop.time() + pause
        await asyncio.sleep(pause)
        on_time = on_time + 1 if loop.time() - due <= late else 0
        if on_time >= settle and next(taken, _DONE) is _DONE:
            return


_DONE = object()
