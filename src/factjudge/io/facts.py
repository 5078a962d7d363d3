"""Fact files (``.json``, ``.jsonl``, or a table through :mod:`.tables`) and facts handed over in
Python: read, checked and validated into plain dicts, each problem one line naming the file and
the record."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..errors import InputError
from ..models import VERDICT_KEY
from .inputs import check_input_kind, empty_file_error, rename_fields
from .jsonl import (
    check_json_value,
    coerce_id,
    json_type,
    jsonl_lines,
    needs_check,
    parse_json,
    parse_json_line,
    read_text,
)
from .tables import is_table, read_table_records


def read_fact_records(path: str | Path, columns: Mapping[str, str] | None = None) -> Iterable[tuple[str, Any]]:
    """Raw records of a ``.json`` / ``.jsonl`` file, each with a label naming where it sits
    (``record N`` or ``line N``, both counted from 1), each checked by :func:`check_json_value`.
    A ``.jsonl`` file is read one line at a time, when the records are drawn. ``columns`` (the
    config key) renames the file's own field names to factjudge's (``{"id": "fact_id"}``)."""
    path = Path(path)
    check_input_kind(path)
    if is_table(path):
        # a Parquet cell can hold NaN, Infinity or deep nesting: checked here, where the file and
        # the row are known (later checks could only say "gold facts: record N")
        records = read_table_records(path, columns=columns)
        for where, rec in records:
            check_json_value(rec, f"{path}: {where}")
        return records
    if columns:
        return ((where, rename_fields(rec, columns, f"{path}: {where}"))
                for where, rec in read_fact_records(path))
    if path.suffix.lower() == ".jsonl":
        return _jsonl_records(path)
    text = read_text(path)
    if not text.strip():
        raise empty_file_error(path, "a JSON list of facts ([] for none) or an object {\"facts\": [...]}")
    data = parse_json(text, path)
    if isinstance(data, dict) and set(data) == {"facts"}:
        data = data["facts"]
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a list of facts or an object {{\"facts\": [...]}}")
    records = [(f"record {i}", rec) for i, rec in enumerate(data, start=1)]
    if needs_check(text):
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
    return _validated(records, source, checked, str)


_Key = TypeVar("_Key")


def _validated(records: Iterable[tuple[_Key, Any]], source: str, checked: bool,
               label: Callable[[_Key], str]) -> list[dict[str, Any]]:
    """:func:`validate_facts` of records each given with a key that ``label`` names (``record
    3``) only when a message needs it: a fact that passes every check, as nearly all do, costs
    no text (two prefixes a fact were 40% of checking a dataset's facts)."""
    facts: list[dict[str, Any]] = []
    seen: dict[str, tuple[_Key, dict[str, Any]]] = {}
    for key, rec in records:
        if not checked:
            check_json_value(rec, f"{source}: {label(key)}")
        if isinstance(rec, dict):
            fact_id, fact_type = rec.get("id"), rec.get("fact_type")
            if (type(fact_id) is str and fact_id.strip() and type(fact_type) is str and fact_type.strip()
                    and VERDICT_KEY not in rec and fact_id not in seen):
                seen[fact_id] = (key, rec)
                facts.append(rec)  # what the checks below keep: the record itself
                continue
        facts.append(_checked_fact(key, rec, source, label, seen))
    return facts


def _checked_fact(key: _Key, rec: Any, source: str, label: Callable[[_Key], str],
                  seen: dict[str, tuple[_Key, dict[str, Any]]]) -> dict[str, Any]:
    """One record checked in full (a fact to coerce, or the one-line error of a bad record)."""
    where = label(key)
    prefix = f"{source}: {where}"
    if not isinstance(rec, dict):
        raise InputError(f"{prefix}: a fact must be a JSON object, got {json_type(rec)}")
    if "id" not in rec and ("gold_facts" in rec or "predicted_facts" in rec):
        raise InputError(f"{prefix}: this is a document of an eval dataset (doc_id, gold_facts, "
                         "predicted_facts), not a fact: score it with factjudge eval FILE")
    if "id" not in rec:
        _missing_key(rec, prefix, "id", "(a non-empty string or an integer)")
    fact_id = coerce_id(rec.get("id"), "id", prefix)
    prefix = f"{prefix} (id {fact_id!r})"
    fact_type = rec.get("fact_type")
    if fact_type is not None and not isinstance(fact_type, str):
        raise InputError(f"{prefix}: 'fact_type' must be a string, "
                         f"got {json_type(fact_type)} {json.dumps(fact_type)}")
    if "fact_type" not in rec:
        _missing_key(rec, prefix, "fact_type", "(a non-empty string)")
    if not isinstance(fact_type, str) or not fact_type.strip():
        raise InputError(f"{prefix}: missing or empty 'fact_type' (a non-empty string)")
    if VERDICT_KEY in rec:  # the one name an output fact adds: any other field name is the fact's
        raise InputError(f"{prefix}: field {VERDICT_KEY!r} is reserved for factjudge's verdict in its "
                         "output: rename the field")
    if fact_id in seen:
        first, other = seen[fact_id]
        raise InputError(f"{prefix}: duplicate id, first seen at {label(first)}"
                         f"{_other_document(other.get('doc_id'), rec.get('doc_id'))}")
    seen[fact_id] = (key, rec)
    # facts are never changed in place: the record itself is kept unless its id was coerced
    return rec if rec.get("id") is fact_id else {**rec, "id": fact_id}


def _missing_key(rec: dict[str, Any], prefix: str, name: str, what: str) -> None:
    """A fact without ``id`` or ``fact_type``: the one-line error names the fields it has, so
    fields named otherwise (``fact_id``, ``type``) show at once, and how to map them."""
    found = ", ".join(list(rec)[:12]) + (", ..." if len(rec) > 12 else "") or "none"
    raise InputError(f"{prefix}: missing or empty {name!r} {what}; fields found: {found} (map yours "
                     f"with the config key columns: {{{name}: YOUR_FIELD}})")


def _other_document(first: object, this: object) -> str:
    if first is None or this is None or first == this:
        return ""
    return (f" (doc_id {first!r} there, {this!r} here): this file holds several documents; score them "
            "with factjudge eval --gold GOLD --predicted PREDICTED -o OUT (factjudge judge scores one)")


def one_document(facts: list[dict[str, Any]], path: str | Path, command: str) -> None:
    """Refuse facts of several documents (``doc_id`` values) given as one document: facts of one
    would be matched against another's."""
    doc_ids = list(dict.fromkeys(f["doc_id"] for f in facts if f.get("doc_id") is not None))
    if len(doc_ids) > 1:
        shown = ", ".join(repr(d) for d in doc_ids[:3]) + (", ..." if len(doc_ids) > 3 else "")
        raise InputError(f"{path}: the facts carry {len(doc_ids)} doc_ids ({shown}): judge scores one "
                         f"document; score a file of many documents with {command}")


def load_facts(path: str | Path, columns: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Load and validate a fact file (``.json`` list, ``{"facts": [...]}``, ``.jsonl`` or a table);
    ``columns`` maps the file's own field names to factjudge's (the config key ``columns``)."""
    return validate_facts(read_fact_records(path, columns), str(path), checked=True)


def validate_fact_list(facts: Iterable[Any], source: str, columns: Mapping[str, str] | None = None, *,
                       checked: bool = False) -> list[dict[str, Any]]:
    """A list of facts checked as a fact file's records are: ``record N`` counts from 1, and
    ``columns`` (the config key) renames each fact's fields first."""
    records: Iterable[tuple[int, Any]] = enumerate(facts, start=1)
    if columns:
        records = ((i, rename_fields(f, columns, f"{source}: record {i}")) for i, f in records)
    return validate_numbered(records, source, "record", checked=checked)


def validate_numbered(records: Iterable[tuple[int, Any]], source: str, unit: str, *,
                      checked: bool = False) -> list[dict[str, Any]]:
    """:func:`validate_facts` of records given by number, each named ``<unit> <number>`` (``line
    3``) only in a message."""
    return _validated(records, source, checked, lambda number: f"{unit} {number}")


def coerce_facts(facts: Iterable[Mapping[str, Any]] | None, source: str) -> list[dict[str, Any]]:
    """Validate facts handed over in Python (the same rules as files)."""
    return [] if facts is None else validate_fact_list(facts, source)


