"""Work done in a forked child process while this one goes on (the end of a run: one report
rendered beside the others on a second core)."""
from __future__ import annotations

import contextlib
import gc
import os
import pickle
import threading
from collections.abc import Callable, Iterator


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


@contextlib.contextmanager
def beside(work: Callable[[], None], fork: bool) -> Iterator[None]:
    """Run ``work`` in a forked child while the ``with`` body runs here, when ``fork``; else run
    it here first. Leaving the block waits for the child and raises what ``work`` raised (the
    same exception when it pickles, else a RuntimeError naming it). A body that raises waits for
    the child too (Ctrl-C reaches the whole process group: the child's ``work`` unwinds as this
    process's body does, removing a half-written file)."""
    if not fork:
        work()
        yield
        return
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        _child(work, write)
    os.close(write)
    try:
        yield
    except BaseException:
        _wait(pid, read)
        raise
    error = _wait(pid, read)
    if error is not None:
        raise error


def _child(work: Callable[[], None], out: int) -> None:
    # short-lived: a collection would walk (and copy, page by page) every object the parent holds
    gc.disable()
    code = 0
    try:
        work()
    except BaseException as exc:  # noqa: BLE001  (sent to the parent, which raises it)
        code = 1
        try:
            data = pickle.dumps(exc)
        except Exception:  # noqa: BLE001  (an exception that does not pickle: its text)
            data = pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
        with contextlib.suppress(OSError):
            with os.fdopen(out, "wb") as fh:
                fh.write(data)
    # no atexit, no flushing of the parent's buffers: they are the parent's to write
    os._exit(code)


def _wait(pid: int, read: int) -> BaseException | None:
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    if data:
        error = pickle.loads(data)
        return error if isinstance(error, BaseException) else RuntimeError(repr(error))
    if os.waitstatus_to_exitcode(status) != 0:
        return RuntimeError(f"a child process ended with status {os.waitstatus_to_exitcode(status)}")
    return None
