"""Work done in a forked child process while this one goes on (the end of a run: one report
rendered beside the others on a second core; the scan of a large dataset file: its second half
read beside the first)."""
from __future__ import annotations

import contextlib
import gc
import os
import pickle
import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

_T = TypeVar("_T")


def cpu_count() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS has no affinity
        return os.cpu_count() or 1


def second_core() -> bool:
    """Whether work may go :func:`beside` this process on a core of its own: the system forks,
    this process may run on two cores, and it runs one thread (a fork copies only the calling
    thread: a lock another holds, in a notebook's or a DNS resolver's thread, would stay held in
    the child; Python 3.12 warns of it)."""
    return hasattr(os, "fork") and cpu_count() > 1 and threading.active_count() == 1


class Outcome(Generic[_T]):
    """What :func:`beside`'s ``work`` returned: ``value``, set once the ``with`` block is left."""

    value: _T


@contextlib.contextmanager
def beside(work: Callable[[], _T], fork: bool) -> Iterator[Outcome[_T]]:
    """Run ``work`` in a forked child while the ``with`` body runs here, when ``fork``; else run
    it here first. Leaving the block waits for the child, sets the :class:`Outcome` the block was
    given to what ``work`` returned (pickled back: a child's objects are its own) and raises what
    ``work`` raised (the same exception when it pickles, else a RuntimeError naming it). A body
    that raises waits for the child too, and its exception is the one raised (Ctrl-C reaches the
    whole process group: the child's ``work`` unwinds as this process's body does, removing a
    half-written file)."""
    outcome: Outcome[_T] = Outcome()
    if not fork:
        outcome.value = work()
        yield outcome
        return
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        _child(work, write)
    os.close(write)
    try:
        yield outcome
    except BaseException:
        _wait(pid, read)
        raise
    ok, value = _wait(pid, read)
    if not ok:
        raise value
    outcome.value = value


def _child(work: Callable[[], Any], out: int) -> None:
    # short-lived: a collection would walk (and copy, page by page) every object the parent holds
    gc.disable()
    code = 0
    try:
        data = pickle.dumps((True, work()), pickle.HIGHEST_PROTOCOL)
    except BaseException as exc:  # noqa: BLE001  (sent to the parent, which raises it)
        code = 1
        try:
            data = pickle.dumps((False, exc))
        except Exception:  # noqa: BLE001  (an exception that does not pickle: its text)
            data = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
    with contextlib.suppress(OSError):
        with os.fdopen(out, "wb") as fh:
            fh.write(data)
    # no atexit, no flushing of the parent's buffers: they are the parent's to write
    os._exit(code)


def _wait(pid: int, read: int) -> tuple[bool, Any]:
    """(True, what the child's work returned) or (False, the exception to raise)."""
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    if data:
        ok, value = pickle.loads(data)
        if ok or isinstance(value, BaseException):
            return ok, value
        return False, RuntimeError(repr(value))
    return False, RuntimeError(f"a child process ended with status {os.waitstatus_to_exitcode(status)}")
