"""Reading JSON and JSON lines safely: the one parser of every JSON input (fact files, datasets,
configs, labels, result lines) and the one line reader.

Every problem is raised as :class:`InputError` with a one-line message that names the file and
the record, so the CLI can print it and exit 2 without a traceback. Input that parses but that no
later step could process (nesting deeper than :data:`MAX_JSON_DEPTH`, a lone surrogate, an
integer of more than :data:`MAX_INT_DIGITS` digits, NaN or Infinity) is refused here, by
:func:`check_json_value`, rather than failing in the middle of a run.
"""
from __future__ import annotations

import codecs
import json
import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import InputError
from .inputs import HEAD_BYTES, check_head

#: No fact needs more; the limit keeps every recursive step after loading (json.dumps, pydantic,
#: the judges) far from Python's recursion limit.
MAX_JSON_DEPTH = 100
#: Python refuses to turn longer integers into text (``sys.int_max_str_digits``), which every
#: output and prompt does, so they are refused when read instead of when written.
MAX_INT_DIGITS = 4300
_INT_LIMIT = 10 ** MAX_INT_DIGITS
_NON_FINITE = "is not valid JSON (JSON has no NaN or Infinity; write null or a string)"


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type, for error messages."""
    for kind, name in ((bool, "boolean"), ((int, float), "number"), (str, "string"),
                       (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


# --------------------------------------------------------------------------- JSON values


class _LongInt:
    """Stands in for an integer too long for ``int()``, so the check can say where it sits."""


def _parse_int(text: str) -> int | _LongInt:
    return _LongInt() if len(text.lstrip("-")) > MAX_INT_DIGITS else int(text)


def _string_problem(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"lone surrogate \\u{ord(text[exc.start]):04x} in a string (half of a UTF-16 "
                "pair: not valid Unicode)")
    return None


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return _string_problem(value)
    if isinstance(value, _LongInt) or (
            isinstance(value, int) and not -_INT_LIMIT < value < _INT_LIMIT):
        return f"integer with more than {MAX_INT_DIGITS} digits"
    if isinstance(value, float) and not math.isfinite(value):
        name = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
        return f"{name} {_NON_FINITE}"
    return None


def _is_fine(value: Any) -> bool:
    """Whether ``value`` passes :func:`check_json_value`: the fast path, level by level, with no
    path kept (it runs on every fact)."""
    level, depth = [value], 0
    while level:
        below: list[Any] = []
        seen: set[int] = set()  # a container shared within one level is walked once
        for node in level:
            kind = type(node)
            if kind is str:
                if not node.isascii() and _string_problem(node):
                    return False
            elif kind is int:
                if not -_INT_LIMIT < node < _INT_LIMIT:
                    return False
            elif kind is float:
                if not math.isfinite(node):
                    return False
            elif kind is bool or node is None:
                continue
            elif isinstance(node, (dict, list, tuple)):
                if depth >= MAX_JSON_DEPTH:
                    return False
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, dict):
                    if any(isinstance(k, str) and _string_problem(k) for k in node):
                        return False
                    below.extend(node.values())
                else:
                    below.extend(node)
            elif _scalar_problem(node):
                return False
        level, depth = below, depth + 1
    return True


def _locate(value: Any) -> tuple[tuple[Any, ...], str]:
    """The path and the problem of the first offending node, in document order."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    walked: set[tuple[int, int]] = set()  # (container, depth): shared containers stay linear
    while stack:
        node, path = stack.pop()
        problem = _scalar_problem(node)
        if problem is None and isinstance(node, (dict, list, tuple)):
            if len(path) >= MAX_JSON_DEPTH:  # also where a cycle ends up
                problem = f"nested deeper than {MAX_JSON_DEPTH} levels"
            elif (id(node), len(path)) in walked:
                continue
            elif isinstance(node, dict):
                walked.add((id(node), len(path)))
                for key in node:
                    if isinstance(key, str) and (bad := _string_problem(key)):
                        return (*path, key), f"key {bad}"
                stack.extend(reversed([(item, (*path, key)) for key, item in node.items()]))
            else:
                walked.add((id(node), len(path)))
                stack.extend(reversed([(item, (*path, i)) for i, item in enumerate(node)]))
        if problem is not None:
            return path, problem
    return (), "cannot be processed"


def _show_path(path: tuple[Any, ...]) -> str:
    shown = ""
    for i, part in enumerate(path):
        if i == 3:  # a path 100 levels deep would not fit on one line
            return shown + "..."
        if isinstance(part, int):
            shown += f"[{part}]"
        else:
            # printable on any terminal, even when the key holds a lone surrogate
            name = str(part).encode("utf-8", "backslashreplace").decode("utf-8")
            name = name if len(name) <= 40 else name[:37] + "..."
            shown += f".{name}" if shown else name
    return shown


def check_json_value(value: Any, where: str, *, label: str = "field") -> None:
    """Raise :class:`InputError` ``"<where>: <label> '<path>': <problem>"`` unless ``value`` can
    be processed: nesting at most :data:`MAX_JSON_DEPTH` levels (``value`` itself is level 1), no
    lone surrogate in a string or key, no integer of more than :data:`MAX_INT_DIGITS` digits, no
    NaN or Infinity. Iterative, so deep or cyclic Python values cannot overflow the stack."""
    if _is_fine(value):
        return
    path, problem = _locate(value)
    at = f"{label} '{_show_path(path)}': " if path else ""
    raise InputError(f"{where}: {at}{problem}")


#: JSON text without any of these cannot hold a lone surrogate, NaN, Infinity (a literal, or a
#: number beyond 1.8e308) or an over-long integer, so only its nesting needs a look.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_BIG_EXPONENT = re.compile(r"[eE][+-]?0*[1-9][0-9][0-9]")
#: Every ASCII digit made a 0, an exponent's E an e and its sign a +: a run of 200 digits, or a
#: digit after an exponent's e, is then a plain substring (the regular expression tried at every
#: digit and every e: 60 ms of 1,000 2-KB lines, now a few). The text's UTF-8 bytes are translated,
#: not the text: str.translate looks each distinct character up in a dict (2 us of a 150-byte fact
#: line, bytes.translate 0.1); a JSON number's digits are ASCII, and an ASCII byte of UTF-8 is
#: always that ASCII character, so the same substrings are found.
_ZEROS = bytes.maketrans(b"123456789E-", b"000000000e+")
_DIGIT_RUN = b"0" * 200


def needs_check(text: str) -> bool:
    """Whether a parsed JSON text may hold what :func:`check_json_value` refuses (a cheap scan):
    NaN, Infinity, a surrogate's escape, 200 digits in a row or an exponent of 100 or more."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH or "NaN" in text or "Infinity" in text:
        return True
    if "\\u" in text and _SURROGATE.search(text):
        return True
    zeros = text.encode("utf-8", "surrogatepass").translate(_ZEROS)
    return _DIGIT_RUN in zeros or ((b"e0" in zeros or b"e+0" in zeros) and bool(_BIG_EXPONENT.search(text)))


def _too_deep_at(text: str, first_line: int) -> str:
    """Where the nesting of a JSON text first passes :data:`MAX_JSON_DEPTH` levels."""
    depth, line, line_start, in_string, escaped = 0, first_line, 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return f"line {line} column {i - line_start + 1}"
        elif ch in "]}":
            depth -= 1
        elif ch == "\n":
            line, line_start = line + 1, i + 1
    return f"line {first_line}"


def _json_error(path: Path, exc: json.JSONDecodeError, line: int | None) -> InputError:
    rel, col = exc.lineno, exc.colno
    end = len(exc.doc.rstrip())
    if exc.pos >= end and "\n" in exc.doc[end:exc.pos]:  # ended too soon: where it ends, not on the next line
        rel = exc.doc.count("\n", 0, end) + 1
        col = end - exc.doc.rfind("\n", 0, end)
    lineno = rel if line is None else line + rel - 1
    at = f"line {lineno} column {col}"
    # "Unterminated string starting at" is half a sentence without its position
    sentence = f"{exc.msg}: {at}" if exc.msg.endswith(" at") else exc.msg
    return InputError(f"{path}: {at}: invalid JSON: {sentence}")


class _DuplicateKey(Exception):
    """Raised by :func:`_unique_keys` (not a ValueError: that means a long integer below)."""

    def __init__(self, key: str, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(key)
        self.key = key
        ids = [v for k, v in pairs if k == "id" and isinstance(v, (str, int))]
        self.record = f" (id {str(ids[0])!r})" if len(ids) == 1 else ""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing a key given twice: json.loads keeps the last value silently
    (``{"value": "1", "value": "2"}`` was judged as "2")."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key, pairs)
            seen.add(key)
    return obj


#: ``json.loads`` with any setting builds a decoder each call (3 us): this one parses with the hook.
_UNIQUE = json.JSONDecoder(object_pairs_hook=_unique_keys)


def _all_keys_kept(text: str, value: Any) -> bool:
    """Whether ``value``, parsed from ``text`` without the hook, kept every key of the text. Each
    key of the text is followed by one ``:`` outside strings, and no other ``:`` is outside a
    string, so the text's colons are its keys plus the colons inside its strings. The value's
    keys (each object's ``len``: fewer than its text's when a key was given twice) and the colons
    of its strings (those of the text, unless a ``\\u003a`` escape spells one) are counted level
    by level, until they account for every colon: then no key was dropped. They never count more
    than the text holds, so a dropped key always leaves them short (as does a ``:`` in a key:
    such a text takes the hook, no harm). A dataset line's count stops at its facts' ``len``, before
    any field is looked at."""
    colons = text.count(":")
    escaped: bool | None = None  # whether an escape may spell a colon: looked for at the first string that has one
    counted, level = 0, [value]
    while level:
        for node in level:
            kind = type(node)
            if kind is dict:
                counted += len(node)
            elif kind is str and ":" in node:
                if escaped is None:
                    escaped = "\\u003a" in text or "\\u003A" in text
                if escaped:
                    return False
                counted += node.count(":")
        if counted >= colons:
            break
        below: list[Any] = []  # the next level, only when this one left colons to account for
        for node in level:
            if type(node) is dict:
                below.extend(node.values())
            elif type(node) is list:
                below.extend(node)
        level = below
    return counted == colons


def _loads(text: str, parse_int: Any = None) -> Any:
    """``json.loads`` refusing duplicate keys. The hook costs 0.4 us an object (a dataset line of 20
    facts: 8 us, 40% of its parse), so a text is parsed without it and the keys kept are checked
    by counting (:func:`_all_keys_kept`); only a text that fails the count is parsed again with
    it. A text of two objects or more, as the hook would have met them first, goes to the hook
    when it fails to parse (whose error is then the one it always was: a duplicate key before a
    syntax error) or nests more than :data:`MAX_JSON_DEPTH` brackets (the hook adds a frame at
    every object: only far shallower texts surely parse the same both ways)."""
    objects = text.count("{")  # a "{" in a string counts too: then the hook may run, no harm
    if objects == 0:
        return json.loads(text, parse_int=parse_int)
    if objects == 1:
        value = json.loads(text, parse_int=parse_int)
        if (type(value) is dict and text.count(":") == len(value)) or _all_keys_kept(text, value):
            return value  # (a fact line: its colons are its keys', no string has one)
    elif objects + text.count("[") <= MAX_JSON_DEPTH:
        try:
            value = json.loads(text, parse_int=parse_int)
        except (ValueError, RecursionError):
            pass
        else:
            if _all_keys_kept(text, value):
                return value
    if parse_int is None and type(text) is str and not text.startswith("\ufeff"):  # json.loads' BOM error
        return _UNIQUE.decode(text)
    return json.loads(text, parse_int=parse_int, object_pairs_hook=_unique_keys)


def _duplicate_key_line(text: str, first_line: int) -> int:
    """The line of the first key given twice in one object (only called once one is known)."""
    keys: list[set[str] | None] = []  # per open container: an object's keys, None for an array
    line, i, end = first_line, 0, len(text)
    while i < end:
        ch = text[i]
        if ch == '"':
            key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
            rest = text[i:i + 64].lstrip()
            if keys and keys[-1] is not None and rest.startswith(":"):
                if key in keys[-1]:
                    return line
                keys[-1].add(key)
            continue
        if ch == "{" or ch == "[":
            keys.append(set() if ch == "{" else None)
        elif (ch == "}" or ch == "]") and keys:
            keys.pop()
        elif ch == "\n":
            line += 1
        i += 1
    return first_line


def parse_json(text: str, path: Path, line: int | None = None, *, unit: str = "line") -> Any:
    """``json.loads`` with every failure turned into a one-line :class:`InputError`, a key given
    twice in one object included. ``unit``: what a line stands for (``row`` in a table's copy)."""
    try:
        try:
            return _loads(text)
        except json.JSONDecodeError:
            raise
        except ValueError:  # an integer longer than int() takes: read again, marked for the check
            return _loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc, line) from None
    except RecursionError:
        where = _too_deep_at(text, line or 1)
        raise InputError(f"{path}: {where}: nested deeper than {MAX_JSON_DEPTH} levels") from None
    except _DuplicateKey as exc:
        at = _duplicate_key_line(text, line or 1)
        raise InputError(f"{path}: {unit} {at}: duplicate key {exc.key!r} in one object{exc.record} "
                         "(JSON readers would keep only the last value): write each key once") from None


def parse_json_line(raw: bytes | str, path: Path, lineno: int, *, unit: str = "line") -> Any:
    """One line of a JSON-lines file, parsed and checked (a UTF-8 BOM is fine). ``unit``: what
    the line stands for (``row``: a table's row copied to JSON lines), for the messages."""
    if isinstance(raw, bytes):
        try:
            raw = raw.removeprefix(codecs.BOM_UTF8).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{path}: {unit} {lineno}: not valid UTF-8") from None
    value = parse_json(raw, path, lineno, unit=unit)
    if needs_check(raw):
        check_json_value(value, f"{path}: {unit} {lineno}")
    return value


def coerce_id(value: object, key: str, prefix: str) -> str:
    """An id as a string: a string, or an integer turned into its decimal string."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if value is not None and not isinstance(value, str):
        raise InputError(f"{prefix}: {key!r} must be a string or an integer, "
                         f"got {json_type(value)} {json.dumps(value)}")
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{prefix}: missing or empty {key!r} (a non-empty string or an integer)")
    return value


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs, every repeated key kept (:func:`named_doc_id`)."""


#: A JSON string (its characters between the quotes), as JSON writes one.
_JSON_STRING = r'"((?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*)"'


def named_doc_id(raw: bytes, key: str = "doc_id") -> str | None:
    """The doc_id a line that was refused names, when it can be told for sure, else None: the
    ``key`` of the line parsed as a JSON object (a string or an integer, as :func:`coerce_id`
    takes it; None when the key is repeated with another value), or, for a line that is no valid
    JSON (cut short, a stray comma), the one ``"key": "..."`` string its raw text holds in a key's
    place (after ``{`` or ``,``). Read only for a line already refused: what ``--skip-invalid``
    leaves out with it."""
    text = raw.decode("utf-8", "replace")
    try:
        rec = json.loads(text, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):  # not JSON: the raw text, strictly
        pattern = re.compile(r'(?:^|[{,])\s*' + re.escape(json.dumps(key)) + r'\s*:\s*' + _JSON_STRING)
        found = [json.loads(f'"{m[1]}"') for m in pattern.finditer(text)]
    else:
        if not isinstance(rec, _Pairs):
            return None
        found = [v for k, v in rec if k == key]
    try:  # a bool, a list, null, a blank string: no doc_id
        values = {coerce_id(v, key, "") for v in found}
    except InputError:
        return None
    return values.pop() if len(values) == 1 else None


def read_error(path: Path, exc: OSError | UnicodeDecodeError) -> InputError:
    """The one-line error for a file that cannot be read."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return InputError(f"{path}: cannot read file: {reason}")


#: The most a settings file (a config, an alias file, a calibration report) may hold, in
#: bytes: such files are read whole, and a path to a device or a pipe would be read until
#: memory is gone (``-c /dev/zero``).
SETTINGS_MAX_CHARS = 64 * 1024 * 1024


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # a BOM, as some Windows tools write, is fine
    except (OSError, UnicodeDecodeError) as exc:
        raise read_error(path, exc) from None


def read_settings(path: Path, expected: str) -> str:
    """A settings file's text (a config, an alias file, a calibration report), read whole as
    :func:`read_text` reads it, but its first bytes checked as the data inputs' are
    (:func:`~factjudge.io.inputs.check_head`: ``/dev/zero``, or a link to it, is refused after
    4 KB) and no more than :data:`SETTINGS_MAX_CHARS` read. One read, so a pipe (``-c <(...)``)
    works too. ``expected`` names what the file should be, for the message."""
    try:
        with path.open("rb") as fh:
            data = fh.read(HEAD_BYTES)
            check_head(path, data, expected)
            data += fh.read(SETTINGS_MAX_CHARS + 1 - len(data))
        text = data.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise read_error(path, exc) from None
    if len(data) > SETTINGS_MAX_CHARS:
        raise InputError(f"{path}: over {SETTINGS_MAX_CHARS:,} bytes, too large for {expected}")
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as text mode reads it


def jsonl_lines(path: Path, start: int = 0, stop: int | None = None,
                first_line: int = 1) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, raw line) of every non-blank line, read lazily. Binary lines
    end at b"\\n" only, as JSON lines do (str.splitlines() would also split at U+2028, which a JSON
    string may hold raw). ``start``, ``stop``: the lines from the one at byte ``start`` (numbered
    ``first_line``) to the one at ``stop`` (both line starts; None: the end)."""
    try:
        with path.open("rb") as fh:
            fh.seek(start)
            offset = start
            for lineno, raw in enumerate(fh, start=first_line):
                if stop is not None and offset >= stop:
                    break
                if not raw.isspace():  # not blank (the ASCII whitespace strip() removes), the line not copied
                    yield lineno, offset, raw
                offset += len(raw)
    except OSError as exc:
        raise read_error(path, exc) from None


def middle_line_start(path: Path) -> tuple[int, int] | None:
    """(the byte offset of the first line that starts after a regular file's middle byte, its
    size): where a file read in two parts is cut (the size when no line starts after it). None
    for a file that is no regular file or cannot be read (its reader says why)."""
    try:
        with path.open("rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            size = fh.seek(0, 2)
            fh.seek(size // 2)
            fh.readline()
            return fh.tell(), size
    except OSError:
        return None


def lines_before(path: Path, offset: int) -> int:
    """How many lines (b"\\n") the first ``offset`` bytes of a file hold: the number of the line
    at ``offset``, minus one (a C count of 1 MB blocks: ~0.1 s of 130 MB)."""
    count = 0
    try:
        with path.open("rb", buffering=0) as fh:
            while offset > 0:
                block = fh.read(min(offset, 1 << 20))
                if not block:
                    break
                count += block.count(b"\n")
                offset -= len(block)
    except OSError as exc:
        raise read_error(path, exc) from None
    return count




def parse_object_line(raw: bytes, path: Path, lineno: int, unit: str = "line") -> dict[str, Any]:
    """One JSON object per line; ``unit`` names what the line stands for in ``path`` (``row``:
    the JSON-lines copy of a table, line N = row N)."""
    rec = parse_json_line(raw, path, lineno, unit=unit)
    if not isinstance(rec, dict):
        raise InputError(f"{path}: {unit} {lineno}: expected a JSON object, got {json_type(rec)}")
    return rec


def looks_like_object(raw: bytes) -> bool:
    """Whether a line looks like a JSON object (what a JSON-lines file of facts or documents
    holds), before it is parsed."""
    return raw.lstrip(b"\xef\xbb\xbf \t\r").startswith(b"{")


def read_line_at(fh: IO[bytes], offset: int) -> bytes:
    """The line at ``offset`` of an open file (read again by the offset :func:`jsonl_lines` gave)."""
    fh.seek(offset)
    return fh.readline()
