"""Alias files (the config's ``aliases_file``): groups of equivalent values for the rules judge.

* CSV: one group a row. Without a header every cell is a value, for every field
  (``CEO,chief executive officer,chief executive``). With a header whose first cell is ``field``,
  the first column names the field the row is for (empty: every field) and the others are values.
* YAML: a list of groups, each a string (``CEO = chief executive officer``) or a mapping
  (``{field: role, values: [CEO, chief executive officer]}``), or a mapping whose ``aliases`` key
  holds that list.

Every error is one line naming the file and the row or group.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from pydantic import ValidationError

from ..errors import InputError
from ..models import AliasGroup
from .inputs import csv_problem
from .jsonl import read_settings


def _group(data: object, where: str) -> AliasGroup:
    try:
        return AliasGroup.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = str(err["ctx"]["error"]) if err["type"] == "value_error" else err["msg"]
        loc = ".".join(str(p) for p in err["loc"])
        raise InputError(f"{where}: {f'{loc}: ' if loc else ''}{msg}") from None


def _csv_groups(text: str, path: Path) -> list[AliasGroup]:
    # strict: a quote never closed is an error, not every later group taken into one value
    reader = csv.reader(io.StringIO(text), strict=True)
    rows: list[list[str]] = []
    end = 0  # the last line of the last row read: a csv.Error is in the row after it
    try:
        for r in reader:
            end = reader.line_num
            if any(c.strip() for c in r):
                rows.append(r)
    except csv.Error as exc:
        raise InputError(f"{path}: line {end + 1}: {csv_problem(exc, reader.line_num, end + 1)}") from None
    header = bool(rows) and rows[0][0].strip().casefold() == "field"
    groups = []
    for number, row in enumerate(rows[1:] if header else rows, start=2 if header else 1):
        where = f"{path}: row {number}"
        if header:
            field = row[0].strip() or None
            groups.append(_group({"field": field, "values": row[1:]}, where))
        else:
            groups.append(_group({"values": row}, where))
    return groups


def _yaml_groups(text: str, path: Path) -> list[AliasGroup]:
    from .yaml_config import load_yaml  # PyYAML only when a YAML file is read

    data = load_yaml(text, path)
    if isinstance(data, dict) and set(data) == {"aliases"}:
        data = data["aliases"]
    if not isinstance(data, list):
        raise InputError(f"{path}: an alias file holds a list of groups ('CEO = chief executive "
                         "officer' or {field: role, values: [...]}), not a "
                         f"{type(data).__name__}")
    return [_group(item, f"{path}: group {i}") for i, item in enumerate(data, start=1)]


def read_alias_file(path: Path) -> list[AliasGroup]:
    """The alias groups of a ``.csv``, ``.yaml`` or ``.yml`` file."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".yaml", ".yml"):
        raise InputError(f"{path}: an alias file must be .csv, .yaml or .yml")
    text = read_settings(path, "an alias file (CSV or YAML)")
    groups = _csv_groups(text, path) if suffix == ".csv" else _yaml_groups(text, path)
    if not groups:
        raise InputError(f"{path}: the alias file holds no group")
    return groups
