"""Facts as tables: CSV / TSV / Parquet fact files in, one row per judged fact out.

In: :func:`read_table_records` / :func:`iter_table_rows` read a ``.csv``, ``.tsv`` or ``.parquet``
file with one fact per row. Columns ``id`` and ``fact_type`` (and ``doc_id`` for split datasets)
and any others become the fact's fields; an empty cell is an absent field. Every problem is an
:class:`~factjudge.errors.InputError` with a one-line message naming the file, the row and the
column.

Out: :func:`result_to_pandas` and :func:`eval_to_pandas` give a pandas DataFrame with one row per
fact; :func:`write_facts_csv` / :class:`FactsCsvWriter` write the same columns to a CSV file with
the standard library only. Columns: :data:`FACT_COLUMNS`, then every fact field met (in the order
first met). A fact field named like a column factjudge fills in (``doc_id``, ``side`` or an
analysis column such as ``category`` or ``partner``) is renamed ``fact.<name>``, and one already
named ``fact.<name>`` gets one more prefix (``fact.fact.doc_id``), so both values are kept
(:func:`factjudge.models.fact_column`). In ``facts.csv`` a cell a spreadsheet would run as a
formula starts with ``'`` (:func:`factjudge.reports.facts_csv.formula_safe`).

pandas (``pip install 'factjudge[pandas]'``) and pyarrow (``pip install 'factjudge[parquet]'``) are
optional: they are imported only when needed, and a missing one is an :class:`OptionalDependencyError`
(both an ``ImportError`` and an ``InputError``) saying what to install.
"""
from __future__ import annotations

import codecs
import csv
import datetime as _dt
import decimal
import io
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Literal

from ..core.fields import field_score
from ..errors import InputError, missing_dependency
from ..models import import_pandas, line_analysis, result_rows, results_frame
from .inputs import check_input_kind, csv_problem, empty_file_error, missing_column, rename_header
from .jsonl import read_error

#: Suffixes read as tables (compared case-insensitively).
TABLE_SUFFIXES = (".csv", ".tsv", ".parquet")
#: Columns a fact file must have; a split dataset also needs ``doc_id``.
FACT_REQUIRED = ("id", "fact_type")
DATASET_REQUIRED = ("doc_id", "id", "fact_type")

_PARQUET_BATCH = 8192
#: How a table is read: by its suffix unless a format names it (``--gold-format csv``).
TableKind = Literal["csv", "tsv", "parquet"]


def table_kind(path: str | Path) -> TableKind:
    """How a table file is read by its suffix (``.tsv``, ``.parquet``, else CSV)."""
    suffix = Path(path).suffix.lower()
    return "parquet" if suffix == ".parquet" else "tsv" if suffix == ".tsv" else "csv"


def is_table(path: str | Path) -> bool:
    """Whether ``path`` is read as a table (``.csv``, ``.tsv``, ``.parquet``) by its suffix."""
    return Path(path).suffix.lower() in TABLE_SUFFIXES


# --------------------------------------------------------------------------- tables in


def read_table_records(path: str | Path, required: Sequence[str] = FACT_REQUIRED,
                       columns: Mapping[str, str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Every row of a ``.csv`` / ``.tsv`` / ``.parquet`` fact file as ``(label, record)``.

    The label says where the row sits, for :func:`factjudge.io.facts.validate_facts`:
    ``row N`` (N from 1; the header is not a row), and for CSV/TSV also the file line where the
    row starts: ``row N (line M)``.

    Types are the file's own. **CSV/TSV cells are strings**: nothing is guessed, so ``12`` is the
    string ``"12"`` and ``true`` the string ``"true"`` (the rules judge reads numbers in strings
    anyway; an ``id`` string is used as it is). Parquet keeps its column types (int, float, bool,
    string, lists, structs), as plain Python values; dates and times become ISO strings, decimals
    numbers (or strings when a float would change them), UTF-8 binary strings.

    An empty cell is an absent field (not ``""``); so is a Parquet null or NaN, and a NaN inside a
    Parquet list or struct is a null there (an absent item, as a JSON null in a list is). The
    ``__index_level_N__`` columns pandas adds for a non-default index are left out. Blank lines and
    rows whose cells are all empty are skipped and not counted. A CSV row has a cell for every
    column of the header: a shorter one is an error (a line cut short, or cells lost to a quote
    out of place), and so is a longer one unless the extra cells are empty (a trailing
    delimiter). Columns without a name in the header must be empty (and may be left out of a
    row). A quoted cell may hold delimiters and line ends; one whose closing quote never comes, or
    with text after it, is an error naming the line where its row starts.

    Raises :class:`~factjudge.errors.InputError`: unreadable file, invalid UTF-8, a duplicate or
    missing ``required`` column, a ragged row, a quoted cell not closed, an unreadable Parquet
    file, or
    :class:`OptionalDependencyError` when a ``.parquet`` file is given without pyarrow.

    ``columns`` (the config key): factjudge's names for the file's own column names
    (``{"id": "fact_id"}``), applied to the header before anything else. A ``.csv`` whose header
    reads as one column with ``,`` but as several with ``;``, a tab or ``|`` (a European Excel
    export) is read with that delimiter.
    """
    return list(iter_table_records(path, required, columns))


def iter_table_records(path: str | Path, required: Sequence[str] = FACT_REQUIRED,
                       columns: Mapping[str, str] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """:func:`read_table_records`, lazily (the file is read as the rows are taken)."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        for row, rec in _parquet_rows(path, required, columns or {}):
            yield f"row {row}", rec
    else:
        for row, line, rec in _delimited_rows(path, required, columns or {}):
            yield f"row {row} (line {line})", rec


def iter_table_rows(path: str | Path, required: Sequence[str] = FACT_REQUIRED,
                    columns: Mapping[str, str] | None = None, *,
                    kind: TableKind | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row number, record)`` of every row, lazily, row numbers from 1 (the header is not a row).

    For a split dataset pass ``required=DATASET_REQUIRED`` so a missing ``doc_id`` column is
    reported once, by name. ``kind``: how to read the file, whatever its suffix says. Same rules
    and errors as :func:`read_table_records`."""
    path = Path(path)
    kind = kind or table_kind(path)
    if kind == "parquet":
        yield from _parquet_rows(path, required, columns or {})
    else:
        for row, _line, rec in _delimited_rows(path, required, columns or {}, "\t" if kind == "tsv" else ","):
            yield row, rec


def _check_header(path: Path, original: Sequence[str], required: Sequence[str],
                  columns: Mapping[str, str], where: str = "header") -> list[str]:
    """The header's names with ``columns`` applied, checked: no name twice, every required one."""
    names = rename_header(path, original, columns, where)
    seen: dict[str, int] = {}
    for col, name in enumerate(names, start=1):
        if name == "":
            continue
        if name in seen:
            raise InputError(f"{path}: {where}: duplicate column {name!r} (columns {seen[name]} "
                             f"and {col})")
        seen[name] = col
    for name in required:
        if name not in seen:
            near = [n for n in seen if n.strip().casefold() == name]
            hint = f" (found {near[0]!r}: check spaces and case)" if near else ""
            raise missing_column(path, where, name, original, required, hint)
    return names


def _decoded_lines(path: Path, fh: BinaryIO) -> Iterator[str]:
    """The file's lines as text with their line ends (``\\n``, ``\\r\\n`` or ``\\r``, as the csv
    module wants them), strictly UTF-8 (a leading BOM is dropped). A bad byte is reported at its
    own line, not wherever a decoder's buffer happened to end."""
    head = fh.read(4)
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise InputError(f"{path}: the file is UTF-16 (as Excel's 'Unicode Text' writes); "
                         "save it as UTF-8 CSV")
    fh.seek(0)
    text = io.TextIOWrapper(fh, encoding="utf-8-sig", errors="surrogateescape", newline="")
    for lineno, line in enumerate(text, start=1):
        try:
            line.encode("utf-8")  # a byte that was not UTF-8 is a lone surrogate here
        except UnicodeEncodeError as exc:
            byte = ord(line[exc.start]) - 0xDC00
            col = len(line[:exc.start].encode("utf-8", "surrogateescape")) + 1
            raise InputError(f"{path}: line {lineno}: not valid UTF-8 (byte 0x{byte:02x} at "
                             f"byte {col} of the line)") from None
        yield line


def _sniffed(fh: BinaryIO, default: str) -> str:
    """The delimiter of a delimited file: ``default`` (``,`` for .csv, tab for .tsv) unless its
    header reads as one column with it but as several with what :class:`csv.Sniffer` finds among
    ``,`` ``;`` tab ``|`` (Excel writes ``;`` where the decimal separator is a comma)."""
    sample = fh.read(65536).decode("utf-8-sig", "replace")
    fh.seek(0)
    lines = [line for line in sample.splitlines() if line.strip()]
    if not lines or len(next(csv.reader(lines[:1], delimiter=default), [])) > 1:
        return default
    try:
        found = csv.Sniffer().sniff("\n".join(lines[:20]), delimiters=",;\t|").delimiter
    except csv.Error:  # one line only, or no consistent delimiter: count them in the header
        counts = {d: lines[0].count(d) for d in ",;\t|"}
        found = max(counts, key=lambda d: counts[d])
        if not counts[found]:
            return default
    return found


def table_delimiter(path: Path) -> str:
    """The delimiter eval reads the table ``path`` with (by its suffix, unless its header says
    otherwise: :func:`_sniffed`)."""
    default = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        with path.open("rb") as fh:
            return _sniffed(fh, default)
    except OSError as exc:
        raise read_error(path, exc) from None


def _delimited_rows(path: Path, required: Sequence[str], columns: Mapping[str, str],
                    default: str | None = None) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(row, first line, record)`` of a CSV (``,``) or TSV (tab) file, with the csv module;
    ``default``: the delimiter unless the header says otherwise (by the suffix when None)."""
    check_input_kind(path)
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise read_error(path, exc) from None
    with fh:
        default = default or ("\t" if path.suffix.lower() == ".tsv" else ",")
        delimiter = _sniffed(fh, default)
        try:
            yield from _delimited(path, fh, delimiter, required, columns)
        except InputError as exc:
            if delimiter == default:
                raise
            # a delimiter found by sniffing explains errors a file of its own delimiter would not have
            raise InputError(f"{exc}; read with delimiter {_DELIMITER_NAMES[delimiter]} (found in the "
                             f"header, not {_DELIMITER_NAMES[default]})") from None


#: Delimiters as messages name them.
_DELIMITER_NAMES = {",": "','", ";": "';'", "\t": "tab", "|": "'|'"}


def _delimited(path: Path, fh: BinaryIO, delimiter: str, required: Sequence[str],
               columns: Mapping[str, str]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """The rows of :func:`_delimited_rows`, read with ``delimiter``."""
    # strict: a cell whose closing quote never comes is an error; without it the csv module takes
    # the rest of the file into that cell, and a stray '"' swallows every row after it unseen
    reader = csv.reader(_decoded_lines(path, fh), delimiter=delimiter, strict=True)
    row, end = 0, 0  # rows read, and the last line of the last one: a csv.Error is in the next
    header: list[str] | None = None
    try:
        header = next(reader, None)
        while header is not None and not any(header):  # blank lines before the header
            end = reader.line_num
            header = next(reader, None)
        if header is None:
            raise empty_file_error(path, "a header row naming the columns")
        header = _check_header(path, header, required, columns)
        width = len(header)
        # cells up to the last named column: a row may leave out only unnamed ones at its end
        needed = max((col for col, name in enumerate(header, start=1) if name), default=0)
        end = reader.line_num
        for cells in reader:
            start, end = end + 1, reader.line_num
            if not any(cells):
                continue  # a blank line, or a row of empty cells
            row += 1
            where = f"{path}: row {row} (line {start})"
            if len(cells) < needed:  # never read as absent fields: the cells went somewhere
                raise InputError(f"{where}: {len(cells)} cells but the header has {width} columns "
                                 "(a line cut short, or a quote or line end out of place? an empty "
                                 "cell still needs its delimiter)")
            if len(cells) > width:  # empty cells past the header: a trailing delimiter
                extra = next((i for i in range(width, len(cells)) if cells[i]), None)
                if extra is not None:
                    raise InputError(
                        f"{where}: {len(cells)} cells but the header has {width} columns "
                        f"(value {_short(cells[extra])} in column {extra + 1}, which has no header)")
            rec: dict[str, Any] = {}
            for col, (name, value) in enumerate(zip(header, cells, strict=False), start=1):
                if value == "":
                    continue
                if name == "":
                    raise InputError(f"{where}: column {col}: value {_short(value)} under a "
                                     "column with no name in the header (an index written "
                                     "by pandas? write with index=False)")
                rec[name] = value
            yield row, start, rec
    except csv.Error as exc:
        # named by the line its row starts at, where the quote to fix opened: the csv module's
        # own line is where it gave up (the end of the file, for a quote never closed)
        where = f"row {row + 1} (line {end + 1})" if header is not None else f"header (line {end + 1})"
        raise InputError(f"{path}: {where}: {csv_problem(exc, reader.line_num, end + 1)}") from None



def _short(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _import_pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise missing_dependency("pyarrow is needed to read .parquet files: pip install 'factjudge[parquet]'",
                                 exc, "pyarrow") from None
    return pq


def _parquet_rows(path: Path, required: Sequence[str],
                  renames: Mapping[str, str]) -> Iterator[tuple[int, dict[str, Any]]]:
    pq = _import_pyarrow()
    import pyarrow as pa

    def unreadable(exc: BaseException) -> InputError:
        reason = (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
        reason = " ".join(reason.split()) or type(exc).__name__
        return InputError(f"{path}: cannot read Parquet file: {reason}")

    failures = (pa.ArrowException, OSError, ValueError)
    try:
        pf = pq.ParquetFile(path)
        names = list(pf.schema_arrow.names)
    except failures as exc:
        raise unreadable(exc) from None
    names = _check_header(path, names, required, renames, "schema")
    # the index pandas stores as columns when it is not a plain 0..n-1 range: not a fact field
    keep = [not re.fullmatch(r"__index_level_\d+__", name) for name in names]
    row = 0
    batches = pf.iter_batches(batch_size=_PARQUET_BATCH)
    while True:
        try:
            batch = next(batches, None)
            if batch is None:
                break
            columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        except failures as exc:
            raise unreadable(exc) from None
        for values in zip(*columns, strict=False) if columns else ():
            row += 1
            rec: dict[str, Any] = {}
            for name, value, kept in zip(names, values, keep, strict=False):
                if not kept or value is None or (isinstance(value, float) and math.isnan(value)):
                    continue
                rec[name] = _plain(value, path, row, name)
            yield row, rec
        if not columns:  # no columns at all: count the rows all the same
            for _ in range(batch.num_rows):
                row += 1
                yield row, {}


def _plain(value: object, path: Path, row: int, column: str) -> Any:
    """A value from pyarrow as JSON-ready plain Python (what facts hold everywhere else). A NaN
    inside a list or a struct is null, as a NaN cell is an absent field: pandas and Polars write
    a missing float as NaN, and ``[1.5, NaN]`` is one value and one absent item (a JSON null in a
    list), not a value JSON cannot hold."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v, path, row, column) for k, v in value.items()}
    if isinstance(value, list) and value and all(
            isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) for x in value):
        return {k: _plain(v, path, row, column) for k, v in value}  # a Parquet MAP with text keys
    if isinstance(value, (list, tuple)):
        return [_plain(v, path, row, column) for v in value]
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return str(value)
        if value == value.to_integral_value():
            return int(value)
        as_float = float(value)
        return as_float if decimal.Decimal(repr(as_float)) == value else str(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{path}: row {row}: column {column!r}: binary value that is not "
                             "UTF-8 text") from None
    item = getattr(value, "item", None)  # a numpy scalar, should one come through
    if callable(item):
        return _plain(item(), path, row, column)
    raise InputError(f"{path}: row {row}: column {column!r}: unsupported value type "
                     f"{type(value).__name__}")


# --------------------------------------------------------------------------- tables out


def iter_result_lines(out: str | Path) -> Iterator[dict[str, Any]]:
    """The lines of an eval output folder's ``results.jsonl`` (or of that file), parsed, read
    by :class:`~factjudge.io.runfolder.RunFolder`.

    Reads a run still going or interrupted too: a last line cut off by a kill is left out, and
    when a document appears on several lines (judged again after an ERROR) only its last line
    counts, at the place of its first. This keeps those lines in memory until the end; the
    ``results.jsonl`` of a finished run has one line per document and is streamed."""
    # Here, not at the top: reading facts (judge's inputs) needs no run folder, whose import
    # (the aggregate and its models) cost the judge command ~10 ms of its start.
    from .runfolder import RESULTS, RunFolder

    out = Path(out)
    folder = RunFolder(out) if out.is_dir() else RunFolder(out.parent, results=out)
    if not folder.results.is_file():
        raise InputError(f"{out}: not an eval output folder (no {RESULTS})")
    return folder.lines()


#: The columns of :func:`eval_to_pandas` at ``level="field"``.
FIELD_COLUMNS = ("doc_id", "fact_type", "field", "correct", "wrong", "missing", "spurious", "precision", "recall",
                 "f1")


def eval_to_pandas(out: str | Path, level: Literal["fact", "field"] = "fact") -> Any:
    """A ``pandas.DataFrame`` of an eval output folder (its ``results.jsonl``), in dataset order.

    ``level="fact"``: one row per fact of every document, the same columns as
    :func:`result_to_pandas`, with ``doc_id`` filled in. ``level="field"``: one row per document,
    fact type and field path (``total``, ``line_items[]``, ``line_items[].unit_price``) with its
    field-level counts and that document's precision, recall and F1 (:data:`FIELD_COLUMNS`; sum
    the counts over documents for a run's figures, as ``summary.json``'s ``fields`` does).

    Raises :class:`~factjudge.errors.InputError` for a folder that is not an eval output,
    :class:`OptionalDependencyError` (an ``ImportError``) without pandas."""
    pd = import_pandas()
    rows: list[dict[str, Any]] = []
    if level == "field":
        for line in iter_result_lines(out):
            for fact_type, paths in line_analysis(line).fields.items():
                for path, c in paths.items():
                    score = field_score([c.correct, c.wrong, c.missing, c.spurious])
                    rows.append({"doc_id": line.get("doc_id"), "fact_type": fact_type, "field": path,
                                 **score.model_dump(exclude={"ci95"})})
        return pd.DataFrame(rows, columns=list(FIELD_COLUMNS))
    if level != "fact":
        raise ValueError(f"level must be 'fact' or 'field', not {level!r}")
    for line in iter_result_lines(out):
        rows.extend(result_rows(line))
    return results_frame(rows)


__all__ = [
    "TABLE_SUFFIXES", "FACT_REQUIRED", "DATASET_REQUIRED", "TableKind", "is_table", "table_kind", "read_table_records",
    "iter_table_records", "iter_table_rows", "iter_result_lines", "eval_to_pandas", "FIELD_COLUMNS",
]
