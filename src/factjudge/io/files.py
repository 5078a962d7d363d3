"""Loading and validation of fact files and judge configs, and writing of output files.

Every problem is raised as :class:`InputError` with a one-line message that names the file and
the record, so the CLI can print it and exit 2 without a traceback. Input that parses but that no
later step could process (nesting deeper than :data:`MAX_JSON_DEPTH`, a lone surrogate, an
integer of more than :data:`MAX_INT_DIGITS` digits, NaN or Infinity) is refused here, by
:func:`check_json_value`, rather than failing in the middle of a run.
"""
from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from ..errors import InputError

# --------------------------------------------------------------------------- output files


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file (through links too); False when either is missing."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _write_through(path: Path) -> bool:
    """Whether an output must be written in place instead of replaced: something that exists and
    is not a regular file (/dev/null, a FIFO, a terminal), or a file reached through a
    /proc/.../fd link (``-o /dev/stdout >> log``: replacing it would drop the log's contents)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return True
    except FileNotFoundError:
        return False
    link, hops = path, 0
    while link.is_symlink() and hops < 40:
        if os.path.realpath(link.parent).startswith("/proc/"):
            return True
        link, hops = link.parent / os.readlink(link), hops + 1
    return False


def check_writable(path: Path) -> None:
    """Fail before any work when ``path`` cannot be written as :func:`write_atomic` will."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a file name for the output")
    try:
        if _write_through(path):
            if not os.access(path, os.W_OK):  # opening a FIFO would block until a reader comes
                raise PermissionError(13, "Permission denied")
            return
        target = Path(os.path.realpath(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=target.parent):
            pass
    except OSError as exc:
        raise InputError(f"{path}: cannot write the output here: {exc.strerror or exc}") from None


def write_atomic(path: Path, text: str | Callable[[TextIO], None]) -> None:
    """Write ``text`` (or what ``text(fh)`` writes: a large output streamed) via a temporary file,
    so a reader never sees half an output.

    A symlink is followed and its target replaced (the link stays); a device, FIFO or terminal
    (``/dev/null``, ``/dev/stdout``) is written in place, never replaced by a regular file. A
    replaced file keeps its permissions.
    """
    path = Path(path)
    if _write_through(path):
        with open(path, "a", encoding="utf-8") as fh:  # "a": never truncate what stdout points at
            _emit(fh, text)
        return
    target = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask  # mkstemp makes 0600; a new output file gets the usual mode
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            _emit(fh, text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _emit(fh: TextIO, text: str | Callable[[TextIO], None]) -> None:
    if isinstance(text, str):
        fh.write(text)
    else:
        text(fh)
