"""Output files: checking a destination before any work, and :class:`AtomicFile`, the one
way factjudge writes an output (via a temporary file, never half written)."""
from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TextIO, cast

from ..errors import InputError


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


#: How far into a page its ``<title>`` is looked for (it comes right after the charset and
#: viewport tags; the stylesheet follows it).
_PAGE_HEAD = 2048


def check_own_page(path: Path, title: str, command: str) -> None:
    """Refuse, in one line and before anything is written, to replace ``path`` unless it is
    missing or the page ``command`` writes there: a ``.md`` file whose first line is ``# {title}``,
    an ``.html`` one whose ``<title>`` is ``title`` (factjudge's pages have named themselves so
    from their first version, so a folder of an earlier run is still written again). Anything
    else is a user's file of the same name (eval refuses a folder it did not write alike), and so
    is what is no regular file (a device, a FIFO). A link is judged by what it points at."""
    refuse = (f"{path}: not a file factjudge {command} wrote, which it would replace: move it or "
              "give another -o")
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise InputError(refuse)
        own = own_page(path, title)
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there: a new page (a file in the way of the folder fails when written)
    except OSError as exc:
        raise InputError(f"{path}: cannot read it to check it is {command}'s own: "
                         f"{exc.strerror or exc}") from None
    if not own:
        raise InputError(refuse)


def own_page(path: Path, title: str) -> bool:
    """Whether ``path`` is factjudge's page named ``title``: a ``.md`` file whose first line is
    ``# {title}``, an ``.html`` one whose ``<title>`` is ``title``. Raises OSError when unreadable."""
    with path.open("rb") as fh:
        text = fh.read(_PAGE_HEAD).decode("utf-8", "replace").removeprefix("\ufeff")
    if path.suffix == ".md":
        return text.split("\n", 1)[0].rstrip("\r") == f"# {title}"  # saved again with CRLF: still its own
    return f"<title>{title}</title>" in text


class AtomicFile:
    """An output file written via a temporary file, so a reader never sees half an output: the
    one way factjudge writes its outputs (reports, results.jsonl rewrites, facts.csv, batch files).

    A symlink is followed and its target replaced (the link stays); a device, FIFO or terminal
    (``/dev/null``, ``/dev/stdout``) is written in place, never replaced by a regular file. A
    replaced file keeps its permissions; a new one gets the usual mode (``0666`` less the umask).

    :meth:`commit` puts the file in place, :meth:`abort` drops it (the destination is left as it
    was); as a context manager it commits on a clean exit and aborts on an exception. ``binary``
    gives a bytes handle; ``newline`` is passed to :func:`open` (``""`` for the csv module)."""

    def __init__(self, path: str | Path, *, binary: bool = False, newline: str | None = None) -> None:
        self.path = Path(path)
        self._tmp: Path | None = None
        self._mode = 0
        encoding = None if binary else "utf-8"
        kind = "b" if binary else ""
        #: Where temporary companions of the output may go: the folder it is written in, or
        #: None (the system's) for a device written in place.
        self.folder: Path | None = None
        if _write_through(self.path):
            # "a": never truncate what stdout points at
            self.handle: IO[Any] = open(self.path, "a" + kind, encoding=encoding,  # noqa: SIM115
                                        newline=newline)
            return
        target = Path(os.path.realpath(self.path))
        self._mode = _mode_of(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        self.folder = target.parent
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        self._tmp, self._target = Path(tmp), target
        try:
            self.handle = os.fdopen(fd, "w" + kind, encoding=encoding, newline=newline)
        except BaseException:
            os.close(fd)
            self._tmp.unlink(missing_ok=True)
            raise

    def commit(self) -> None:
        """Close the handle and put the file in place."""
        try:
            self.handle.close()
            if self._tmp is not None:
                os.chmod(self._tmp, self._mode)  # mkstemp makes 0600
                os.replace(self._tmp, self._target)
                self._tmp = None
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Drop what was written (what went to a device in place stays written)."""
        self.handle.close()
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
            self._tmp = None

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, exc_type: object, *_: Any) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def _mode_of(target: Path) -> int:
    """The mode the output gets: the replaced file's, or the usual mode of a new file."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: Path, text: str | Callable[[TextIO], None]) -> None:
    """Write ``text`` (or what ``text(fh)`` writes: a large output streamed) as an
    :class:`AtomicFile` (its symlink, device and permission behaviour)."""
    with AtomicFile(path) as out:
        fh = cast(TextIO, out.handle)  # text mode: a TextIOWrapper
        if isinstance(text, str):
            fh.write(text)
        else:
            text(fh)
