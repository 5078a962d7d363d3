"""Loading and validation of fact files and judge configs, and writing of output files.

Every problem is raised as :class:`InputError` with a one-line message that names the file and
the record, so the CLI can print it and exit 2 without a traceback. Input that parses but that no
later step could process (nesting deeper than :data:`MAX_JSON_DEPTH`, a lone surrogate, an
integer of more than :data:`MAX_INT_DIGITS` digits, NaN or Infinity) is refused here, by
:func:`check_json_value`, rather than failing in the middle of a run.
"""
from __future__ import annotations

import codecs
import difflib
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from .errors import InputError
from .models import OUTPUT_FIELDS, JudgeConfig, Tolerance

#: No fact needs more; the limit keeps every recursive step after loading (json.dumps, pydantic,
#: the judges) far from Python's recursion limit.
MAX_JSON_DEPTH = 100
#: Python refuses to turn longer integers into text (``sys.int_max_str_digits``), which every
#: output and prompt does, so they are refused when read instead of when written.
MAX_INT_DIGITS = 4300
_INT_LIMIT = 10 ** MAX_INT_DIGITS
_NON_FINITE = "is not valid JSON (JSON has no NaN or Infinity; write null or a string)"


def json_type(value: Any) -> str:
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
_SUSPECT = re.compile(r"NaN|Infinity|\\u[dD][89a-fA-F]|\d{200}|[eE][+-]?0*[1-9]\d\d")


def _needs_check(text: str) -> bool:
    return text.count("[") + text.count("{") > MAX_JSON_DEPTH or bool(_SUSPECT.search(text))


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
    lineno = exc.lineno if line is None else line + exc.lineno - 1
    at = f"line {lineno} column {exc.colno}"
    # "Unterminated string starting at" is half a sentence without its position
    sentence = f"{exc.msg}: {at}" if exc.msg.endswith(" at") else exc.msg
    return InputError(f"{path}: {at}: invalid JSON: {sentence}")


def _loads(text: str, path: Path, line: int | None = None) -> Any:
    """``json.loads`` with every failure turned into a one-line :class:`InputError`."""
    try:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise
        except ValueError:  # an integer longer than int() takes: read again, marked for the check
            return json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc, line) from None
    except RecursionError:
        where = _too_deep_at(text, line or 1)
        raise InputError(f"{path}: {where}: nested deeper than {MAX_JSON_DEPTH} levels") from None


def parse_json_line(raw: bytes | str, path: Path, lineno: int) -> Any:
    """One line of a JSON-lines file, parsed and checked (a UTF-8 BOM is fine)."""
    if isinstance(raw, bytes):
        try:
            raw = raw.removeprefix(codecs.BOM_UTF8).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{path}: line {lineno}: not valid UTF-8") from None
    value = _loads(raw, path, lineno)
    if _needs_check(raw):
        check_json_value(value, f"{path}: line {lineno}")
    return value


def coerce_id(value: Any, key: str, prefix: str) -> str:
    """An id as a string: a string, or an integer turned into its decimal string."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if value is not None and not isinstance(value, str):
        raise InputError(f"{prefix}: {key!r} must be a string or an integer, "
                         f"got {json_type(value)} {json.dumps(value)}")
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{prefix}: missing or empty {key!r} (a non-empty string or an integer)")
    return value


# --------------------------------------------------------------------------- facts


def read_error(path: Path, exc: OSError | UnicodeDecodeError) -> InputError:
    """The one-line error for a file that cannot be read."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return InputError(f"{path}: cannot read file: {reason}")


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # a BOM, as some Windows tools write, is fine
    except (OSError, UnicodeDecodeError) as exc:
        raise read_error(path, exc) from None


def jsonl_lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, raw line) of every non-blank line, read lazily. Binary lines
    end at b"\\n" only, as JSON lines do (str.splitlines() would also split at U+2028, which a JSON
    string may hold raw)."""
    try:
        with path.open("rb") as fh:
            offset = 0
            for lineno, raw in enumerate(fh, start=1):
                if raw.strip():
                    yield lineno, offset, raw
                offset += len(raw)
    except OSError as exc:
        raise read_error(path, exc) from None


def read_fact_records(path: str | Path) -> Iterable[tuple[str, Any]]:
    """Raw records of a ``.json`` / ``.jsonl`` file, each with a label naming where it sits
    (``record N`` or ``line N``, both counted from 1), each checked by :func:`check_json_value`.
    A ``.jsonl`` file is read one line at a time, when the records are drawn."""
    path = Path(path)
    if path.suffix.lower() in (".csv", ".tsv", ".parquet"):
        from .tables import read_table_records  # tables imports this module
        return read_table_records(path)
    if path.suffix.lower() == ".jsonl":
        return _jsonl_records(path)
    text = read_text(path)
    data = _loads(text, path)
    if isinstance(data, dict) and set(data) == {"facts"}:
        data = data["facts"]
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a list of facts or an object {{\"facts\": [...]}}")
    records = [(f"record {i}", rec) for i, rec in enumerate(data, start=1)]
    if _needs_check(text):
        for where, rec in records:
            check_json_value(rec, f"{path}: {where}")
    return records


def _jsonl_records(path: Path) -> Iterator[tuple[str, Any]]:
    # Each line is its own json.loads, so each would get its own copy of every key and of every
    # repeated value (fact types, periods, units, entities): one string for each keeps a million
    # facts hundreds of MB smaller. Long values are seldom repeated; the table goes with the load.
    shared: dict[str, str] = {}
    for lineno, _, line in jsonl_lines(path):
        rec = parse_json_line(line.removesuffix(b"\n"), path, lineno)
        if isinstance(rec, dict):
            rec = {shared.setdefault(k, k): (shared.setdefault(v, v) if isinstance(v, str)
                                             and len(v) <= 64 and k != "id" else v)
                   for k, v in rec.items()}
        yield f"line {lineno}", rec


def validate_facts(records: Iterable[tuple[str, Any]], source: str, *,
                   checked: bool = False) -> list[dict[str, Any]]:
    """Check each record and return the facts with string ids, other fields untouched.

    ``checked``: the records have passed :func:`check_json_value` already (as
    :func:`read_fact_records` returns them), so it is not run a second time.
    """
    facts: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for where, rec in records:
        prefix = f"{source}: {where}"
        if not checked:
            check_json_value(rec, prefix)
        if not isinstance(rec, dict):
            raise InputError(f"{prefix}: a fact must be a JSON object, got {json_type(rec)}")
        if "id" not in rec and ("gold_facts" in rec or "predicted_facts" in rec):
            raise InputError(f"{prefix}: this is a document of an eval dataset (doc_id, gold_facts, "
                             "predicted_facts), not a fact: score it with factjudge eval FILE")
        fact_id = coerce_id(rec.get("id"), "id", prefix)
        prefix = f"{prefix} (id {fact_id!r})"
        fact_type = rec.get("fact_type")
        if fact_type is not None and not isinstance(fact_type, str):
            raise InputError(f"{prefix}: 'fact_type' must be a string, "
                             f"got {json_type(fact_type)} {json.dumps(fact_type)}")
        if not isinstance(fact_type, str) or not fact_type.strip():
            raise InputError(f"{prefix}: missing or empty 'fact_type' (a non-empty string)")
        reserved = [k for k in OUTPUT_FIELDS if k in rec]
        if reserved:
            raise InputError(f"{prefix}: field {reserved[0]!r} is reserved for factjudge's output")
        if fact_id in seen:
            raise InputError(f"{prefix}: duplicate id, first seen at {seen[fact_id]}")
        seen[fact_id] = where
        # facts are never changed in place: the record itself is kept unless its id was coerced
        facts.append(rec if rec.get("id") is fact_id else {**rec, "id": fact_id})
    return facts


def load_facts(path: str | Path) -> list[dict[str, Any]]:
    """Load and validate a fact file (``.json`` list, ``{"facts": [...]}``, or ``.jsonl``)."""
    return validate_facts(read_fact_records(path), str(path), checked=True)


def coerce_facts(facts: Iterable[Mapping[str, Any]] | None, source: str) -> list[dict[str, Any]]:
    """Validate facts handed over in Python (the same rules as files; ``record N`` is the list
    index, counted from 0 as Python does)."""
    if facts is None:
        return []
    return validate_facts(((f"record {i}", f) for i, f in enumerate(facts, start=1)), source)


# --------------------------------------------------------------------------- config


def _tolerance_example(name: str, value: Any) -> str:
    bound = value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.01
    return json.dumps({name: {"relative": bound}})


def _unknown_key(source: str, loc: list[str]) -> InputError:
    known = list(Tolerance.model_fields if loc[0] == "tolerances" and len(loc) == 3
                 else JudgeConfig.model_fields)
    key = ".".join(loc)
    close = difflib.get_close_matches(loc[-1], known, n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(known)}"
    return InputError(f"{source}: unknown config key '{key}' ({hint})")


def _config_error(source: str, data: Any, exc: ValidationError) -> InputError:
    err = exc.errors()[0]
    # pydantic adds union branch names to the location; keep only the parts present in the input
    parts, node = [], data
    for part in err["loc"]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            break
        parts.append(str(part))
    loc = ".".join(parts) or "(top level)"
    if err["type"] == "extra_forbidden" and parts:
        return _unknown_key(source, parts)
    if parts[:1] == ["tolerances"] and len(parts) <= 2 and err["type"] in ("dict_type", "model_type"):
        got = f"got {json_type(node)} {json.dumps(node, default=str)[:40]}"
        if len(parts) == 1:
            return InputError(f"{source}: config key 'tolerances': expected an object of fields "
                              f"and their bounds, {got}: write {_tolerance_example('value', node)}")
        return InputError(f"{source}: config key '{loc}': a tolerance is an object naming its "
                          f"bound, {got}: write {_tolerance_example(parts[1], node)} "
                          "(or {\"absolute\": ...})")
    msg = err["msg"]
    if err["type"] == "value_error":  # our own validators' messages, without pydantic's prefix
        msg = str(err["ctx"]["error"])
    if err["type"] == "int_type" and any(e["type"] == "float_type" for e in exc.errors()[1:]):
        msg = "Input should be a number"  # not just the first branch of int | float
    return InputError(f"{source}: config key '{loc}': {msg}")


def parse_config(data: Any, source: str = "config") -> JudgeConfig:
    if data is None:
        data = {}
    if isinstance(data, JudgeConfig):
        return data
    if not isinstance(data, Mapping):
        raise InputError(f"{source}: the config must be a mapping of keys to values")
    data = dict(data)
    check_json_value(data, source, label="config key")
    try:
        return JudgeConfig.model_validate(data)
    except ValidationError as exc:
        raise _config_error(source, data, exc) from None


def load_config(path: str | Path | None) -> JudgeConfig:
    """Load a ``.json`` / ``.yaml`` / ``.yml`` judge config; ``None`` gives the defaults."""
    if path is None:
        return JudgeConfig()
    path = Path(path)
    text = read_text(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        data = _loads(text, path)
    elif suffix in (".yaml", ".yml"):
        from .yaml_config import load_yaml  # PyYAML is imported only for a YAML config
        data = load_yaml(text, path)
    else:
        raise InputError(f"{path}: config must be a .json, .yaml or .yml file")
    return parse_config(data, str(path))


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
