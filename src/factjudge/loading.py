"""Loading and validation of fact files and judge configs.

Every problem is raised as :class:`InputError` with a one-line message that names the file and
the record, so the CLI can print it and exit 2 without a traceback.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml
from pydantic import ValidationError

from .errors import InputError
from .models import OUTPUT_FIELDS, JudgeConfig




def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for error messages."""
    for kind, name in ((bool, "boolean"), ((int, float), "number"), (str, "string"),
                       (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # a BOM, as some Windows tools write, is fine
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"{path}: cannot read file: {reason}") from None


def _json_error(path: Path, exc: json.JSONDecodeError, line: int | None = None) -> InputError:
    where = f"line {line}" if line is not None else f"line {exc.lineno} column {exc.colno}"
    return InputError(f"{path}: {where}: invalid JSON: {exc.msg}")


def read_fact_records(path: str | Path) -> list[tuple[str, Any]]:
    """Raw records of a ``.json`` / ``.jsonl`` file, each with a label naming where it sits."""
    path = Path(path)
    text = _read_text(path)
    if path.suffix.lower() == ".jsonl":
        records = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append((f"line {lineno}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise _json_error(path, exc, lineno) from None
        return records
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc) from None
    if isinstance(data, dict) and set(data) == {"facts"}:
        data = data["facts"]
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a list of facts or an object {{\"facts\": [...]}}")
    return [(f"record {i}", rec) for i, rec in enumerate(data)]


def validate_facts(records: Iterable[tuple[str, Any]], source: str) -> list[dict[str, Any]]:
    """Check each record and return the facts with string ids, other fields untouched."""
    facts: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for where, rec in records:
        prefix = f"{source}: {where}"
        if not isinstance(rec, dict):
            raise InputError(f"{prefix}: a fact must be a JSON object, got {json_type(rec)}")
        fact_id = rec.get("id")
        if isinstance(fact_id, int) and not isinstance(fact_id, bool):
            fact_id = str(fact_id)
        if fact_id is not None and not isinstance(fact_id, str):
            raise InputError(f"{prefix}: 'id' must be a string or an integer, "
                             f"got {json_type(fact_id)} {json.dumps(fact_id)}")
        if not isinstance(fact_id, str) or not fact_id.strip():
            raise InputError(f"{prefix}: missing or empty 'id' (a non-empty string or an integer)")
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
        fact = dict(rec)
        fact["id"] = fact_id
        facts.append(fact)
    return facts


def load_facts(path: str | Path) -> list[dict[str, Any]]:
    """Load and validate a fact file (``.json`` list, ``{"facts": [...]}``, or ``.jsonl``)."""
    return validate_facts(read_fact_records(path), str(path))


def coerce_facts(facts: Iterable[Mapping[str, Any]] | None, source: str) -> list[dict[str, Any]]:
    """Validate facts handed over in Python (the same rules as files)."""
    if facts is None:
        return []
    return validate_facts(((f"record {i}", f) for i, f in enumerate(facts)), source)


def _config_error(source: str, data: Any, exc: ValidationError) -> InputError:
    err = exc.errors()[0]
    # pydantic adds union branch names to the location; keep only the parts present in the input
    parts, node = [], data
    for part in err["loc"]:
        if isinstance(node, dict) and part in node or (
                isinstance(node, list) and isinstance(part, int) and part < len(node)):
            parts.append(str(part))
            node = node[part]
        else:
            break
    loc = ".".join(parts) or "(top level)"
    if err["type"] == "extra_forbidden":
        return InputError(f"{source}: unknown config key '{loc}'")
    msg = err["msg"]
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
    try:
        return JudgeConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise _config_error(source, dict(data), exc) from None


def load_config(path: str | Path | None) -> JudgeConfig:
    """Load a ``.json`` / ``.yaml`` / ``.yml`` judge config; ``None`` gives the defaults."""
    if path is None:
        return JudgeConfig()
    path = Path(path)
    text = _read_text(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _json_error(path, exc) from None
    elif suffix in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}: " if mark is not None else ""
            problem = getattr(exc, "problem", None) or "invalid YAML"
            raise InputError(f"{path}: {where}invalid YAML: {problem}") from None
    else:
        raise InputError(f"{path}: config must be a .json, .yaml or .yml file")
    return parse_config(data, str(path))


def check_writable(path: Path) -> None:
    """Fail before any work when ``path`` cannot be written as an output file."""
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a file name for the output")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as exc:
        raise InputError(f"{path}: cannot write the output here: {exc.strerror or exc}") from None


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file, so a reader never sees half an output."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; an output file gets the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
