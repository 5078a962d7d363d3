"""What a file is before it is parsed, and the names of its columns: a spreadsheet or another
binary file is refused in one line (twenty "invalid JSON" lines and a ``--skip-invalid`` hint
helped nobody), an empty file is named as empty, and the config key ``columns`` renames a file's
own column or field names to factjudge's (``doc_id``, ``id``, ``fact_type``...)."""
from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError

#: Spreadsheets are not read: no well-kept small reader is a dependency (openpyxl, odfpy are
#: not), and a CSV export is one menu away in every spreadsheet program.
SPREADSHEET_SUFFIXES = (".xlsx", ".xlsm", ".xls", ".ods", ".numbers")
EXPORT_CSV = ("export the sheet as CSV (Excel: File > Save As > 'CSV UTF-8 (Comma delimited)'; LibreOffice: "
              "File > Save As > 'Text CSV') and give the .csv file")
#: Leading bytes of files people give by mistake, and what they are.
_MAGIC = ((b"PK\x03\x04", "a zip archive (an .xlsx, .ods or .docx file?)"),
          (b"\xd0\xcf\x11\xe0", "an old Office file (.xls or .doc?)"),
          (b"%PDF", "a PDF file"), (b"PAR1", "a Parquet file (name it .parquet)"),
          (b"\x1f\x8b", "a gzip file (decompress it first)"))


def check_input_kind(path: Path, expected: str = "JSON, JSON lines or CSV", export: str = EXPORT_CSV) -> None:
    """Refuse, in one line, a spreadsheet (by its suffix) and a binary file given as JSON, JSON
    lines or CSV (by its first bytes): no line of it could be read, so no line is "bad". An input
    read in fewer formats names them (``expected``) and says how to write one (``export``)."""
    suffix = path.suffix.lower()
    if suffix in SPREADSHEET_SUFFIXES:
        raise InputError(f"{path}: spreadsheets ({suffix}) are not read: {export}")
    if suffix == ".parquet":
        return
    try:
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return  # the reader says why, in its own words
    check_head(path, head, expected)


#: How much of a file :func:`check_head` looks at.
HEAD_BYTES = 4096


def check_head(path: Path, head: bytes, expected: str) -> None:
    """Refuse, in one line, a file whose first bytes (``head``) show an archive, an Office file,
    a PDF or other binary data (``/dev/zero``) where text (``expected``) was wanted."""
    for magic, what in _MAGIC:
        if head.startswith(magic):
            raise InputError(f"{path}: this is {what}, not {expected}")
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 is named later
        raise InputError(f"{path}: a binary file, not {expected}")


def is_empty(path: Path) -> bool:
    """Whether the file holds nothing but white space (0 bytes included)."""
    try:
        if path.stat().st_size > 65536:
            return False
        return not path.read_bytes().removeprefix(b"\xef\xbb\xbf").strip()
    except OSError:
        return False


def empty_file_error(path: Path, expected: str) -> InputError:
    return InputError(f"{path}: empty file: expected {expected}")


def rename_fields(rec: object, columns: Mapping[str, str], where: str) -> Any:
    """``rec`` with its own field names replaced by factjudge's, as the config key ``columns``
    maps them (``{"id": "fact_id"}``: the field ``fact_id`` is the fact's ``id``)."""
    if not columns or not isinstance(rec, dict):
        return rec
    inverse = {theirs: ours for ours, theirs in columns.items()}
    if not any(name in rec for name in inverse):
        return rec
    for theirs, ours in inverse.items():
        if theirs in rec and ours in rec and ours != theirs:
            raise InputError(f"{where}: both {theirs!r} (mapped to {ours!r} by config key 'columns') "
                             f"and {ours!r} are present: keep one")
    return {inverse.get(k, k): v for k, v in rec.items()}


def rename_header(path: Path, names: Sequence[str], columns: Mapping[str, str], where: str) -> list[str]:
    """A table's column names with ``columns`` applied (see :func:`rename_fields`)."""
    if not columns:
        return list(names)
    inverse = {theirs: ours for ours, theirs in columns.items()}
    for theirs, ours in inverse.items():
        if theirs in names and ours in names and ours != theirs:
            raise InputError(f"{path}: {where}: both {theirs!r} (mapped to {ours!r} by config key "
                             f"'columns') and {ours!r} are columns: keep one")
    return [inverse.get(n, n) for n in names]


def missing_column(path: Path, where: str, name: str, found: Sequence[str], required: Sequence[str],
                   hint: str = "") -> InputError:
    """The error for a missing required column: the columns found and the ones expected, and how
    to map one's own names."""
    shown = [n for n in found if n] or ["none"]
    listed = ", ".join(shown[:12]) + (", ..." if len(shown) > 12 else "")
    return InputError(f"{path}: {where}: missing column {name!r}{hint} (columns found: {listed}; "
                      f"expected: {', '.join(required)}; map yours with the config key columns: "
                      f"{{{name}: YOUR_COLUMN}})")


def csv_problem(exc: csv.Error, line: int, start: int) -> str:
    """What a :class:`csv.Error` of a ``strict`` csv reader means, in the words of a person fixing
    the file (tables, alias files); ``line``: where the reader stopped, ``start``: the line its
    row starts at, which the message names (the quote to fix opened there)."""
    text = str(exc)
    at = f" (at line {line})" if line != start else ""
    if text == "unexpected end of data":
        return ('a quoted cell is not closed: the file ends inside it (a stray \'"\', or a file '
                'cut short? a \'"\' inside a quoted cell is written "")')
    if "expected after" in text:
        return (f'text after the closing quote of a quoted cell{at} (a \'"\' inside a quoted cell '
                'is written "")')
    if text.startswith("field larger than field limit"):
        return (f"a cell longer than {csv.field_size_limit():,} characters{at} (a stray '\"' "
                "opening a quoted cell that runs on?)")
    return f"bad CSV{at}: {text}"
