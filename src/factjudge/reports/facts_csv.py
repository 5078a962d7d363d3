"""facts.csv: one row per fact of an eval run, for spreadsheets."""
from __future__ import annotations

import csv
import json
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io.files import AtomicFile
from ..models import FACT_COLUMNS, fact_column, result_rows

# Formula injection (https://owasp.org/www-community/attacks/CSV_Injection): a spreadsheet runs a
# cell that starts with = + - @, a tab or a carriage return as a formula (=HYPERLINK(...) in a
# doc_id, in a fact, or in a remote model's reasoning). As OWASP recommends, such a cell gets a
# single quote in front, which spreadsheets read as "this is text" and do not show. The rule:
# - a cell matching _FORMULA (after any number of quotes, one of = + - @ TAB CR) gets one more
#   quote in front, so "'=x" becomes "''=x" and reading one quote off gives every value back;
# - except a cell that is a plain decimal number or percentage (-12.9, +3, -1e5, -1.5%): a
#   spreadsheet reads it as that number, and a number is no formula, so negative values stay
#   numbers in the sheet (OWASP's list would quote them: "-12.9" would become text).
# The csv module quotes separators, quotes and line breaks, so no cell can start mid-value.
_FORMULA = re.compile(r"'*[=+\-@\t\r]")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?%?")


def formula_safe(cell: str) -> str:
    """``cell``, with a ``'`` in front when a spreadsheet would run it as a formula (see above)."""
    if _FORMULA.match(cell) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def csv_cell(value: Any) -> str:
    """A value as a CSV cell: strings as they are, None as empty, the rest as JSON
    (``true``/``false``, numbers, lists and objects); a cell a spreadsheet would run as a formula
    starts with ``'`` (:func:`formula_safe`)."""
    if value is None:
        return ""
    return formula_safe(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


class FactsCsvWriter:
    """Writes ``facts.csv`` (one row per fact, the columns of :func:`result_to_pandas`) as the
    result lines come, with the standard library only; use as a context manager::

        with FactsCsvWriter(out_dir / "facts.csv") as w:
            for line in lines:
                w.add(line)

    The facts' fields are known only at the end, so rows are spooled to a temporary file (memory
    does not grow with the dataset) unless ``fields`` names them up front (others are then an
    error). The file appears atomically on a clean exit; on an exception nothing is written."""

    def __init__(self, path: str | Path, fields: Sequence[str] | None = None) -> None:
        self.path = Path(path)
        self.rows = 0
        self._fields = None if fields is None else [fact_column(f) for f in fields]
        self._extra: dict[str, None] = {}
        self._out = AtomicFile(self.path, newline="")  # the csv module writes its own newlines
        self._writer = csv.writer(self._out.handle)
        self._spool: Any = None
        if self._fields is None:
            self._spool = tempfile.TemporaryFile("w+", encoding="utf-8", dir=self._out.folder)
        else:
            self._writer.writerow(self._header(self._fields))

    def add(self, line: Any, doc_id: str | None = None) -> int:
        """Add the facts of one result line (or JudgeResult); returns how many rows."""
        n = 0
        fields = self._fields  # None: spooled, the columns are known at the end
        for row in result_rows(line, doc_id):
            if fields is None:
                for key in row:
                    if key not in self._extra and key not in FACT_COLUMNS:
                        self._extra[key] = None
                self._spool.write(json.dumps(row, ensure_ascii=False) + "\n")
            else:
                unknown = [k for k in row if k not in FACT_COLUMNS and k not in fields]
                if unknown:
                    raise InputError(f"fact field {unknown[0]!r} is not among the fields given")
                self._writer.writerow(self._cells(row, list(FACT_COLUMNS) + fields))
            n += 1
        self.rows += n
        return n

    @staticmethod
    def _header(fields: Sequence[str]) -> list[str]:
        # a fact field's name is the user's text too
        return list(FACT_COLUMNS) + [formula_safe(f) for f in fields]

    @staticmethod
    def _cells(row: Mapping[str, Any], columns: Sequence[str]) -> list[str]:
        return [csv_cell(row.get(c)) for c in columns]

    def close(self) -> None:
        """Finish the file (write the spooled rows) and put it in place."""
        if self._out.handle.closed:
            return
        try:
            if self._spool is not None:
                columns = list(FACT_COLUMNS) + list(self._extra)
                self._writer.writerow(self._header(list(self._extra)))
                self._spool.seek(0)
                for text in self._spool:
                    self._writer.writerow(self._cells(json.loads(text), columns))
            self._out.commit()
        except BaseException:
            self.abort()
            raise
        finally:
            if self._spool is not None:
                self._spool.close()

    def abort(self) -> None:
        """Drop what was written; the destination is left as it was."""
        self._out.abort()
        if self._spool is not None:
            self._spool.close()

    def __enter__(self) -> FactsCsvWriter:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_facts_csv(lines: Iterable[Any], path: str | Path,
                    fields: Sequence[str] | None = None) -> int:
    """Write ``facts.csv``: one row per fact of every result line in ``lines`` (dicts as in
    ``results.jsonl``, or JudgeResults), the columns of :func:`result_to_pandas`; fact fields that
    are not strings are JSON-encoded (``true``, ``12.5``, ``["a", "b"]``), a missing value is an
    empty cell, ``matched_ids`` a JSON list; a cell (or a field's name) that a spreadsheet would
    run as a formula starts with ``'`` (:func:`formula_safe`). No pandas needed; ``lines`` is
    read once, lazily.
    Returns the number of rows."""
    with FactsCsvWriter(path, fields) as writer:
        for line in lines:
            writer.add(line)
    return writer.rows
