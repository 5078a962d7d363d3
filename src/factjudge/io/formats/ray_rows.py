"""Format ``ray``: a ``ray.data.Dataset`` of documents handed over in Python (``evaluate_ray``),
rows ``{"doc_id", "gold_facts", "predicted_facts"}``; a facts column holds a list of facts or the
JSON text of one. Ray Data stores lists of objects as Arrow structs when it can, which gives every
fact the fields of all facts near it (missing ones as null): null fields of such columns are
dropped (see :func:`table_rows`). Ray itself is not imported here: the dataset is given, and
pyarrow (a dependency of ``ray[data]``) is imported when a batch is read."""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import InputError
from ...models import JudgeConfig
from ..facts import validate_fact_list
from ..inputs import rename_fields
from ..scan import Document, Located, Problem, ScannedDataset, doc_id_of

if TYPE_CHECKING:  # pragma: no cover
    import ray.data


def plain(value: Any) -> Any:
    """numpy arrays and scalars (what Ray may hand back for list columns) as plain Python."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def row_doc_id(row: Mapping[str, Any], prefix: str, columns: Mapping[str, str]) -> str:
    row = rename_fields(dict(row), columns, prefix)
    return doc_id_of({"doc_id": plain(row.get("doc_id"))}, prefix)


def row_document(row: Mapping[str, Any], prefix: str, columns: Mapping[str, str]) -> Document:
    """A document from a row, checked as a ``.jsonl`` dataset line is (the config key ``columns``
    renames the row's fields and its facts' as a line's)."""
    row = rename_fields(dict(row), columns, prefix)
    doc_id = row_doc_id(row, prefix, {})
    sides = []
    for key in ("gold_facts", "predicted_facts"):
        facts = plain(row.get(key))
        if isinstance(facts, str):
            try:
                facts = json.loads(facts)
            except json.JSONDecodeError as exc:
                raise InputError(f"{prefix} (doc_id {doc_id!r}): {key!r}: invalid JSON: {exc.msg}") from None
        if not isinstance(facts, list):
            raise InputError(f"{prefix} (doc_id {doc_id!r}): {key!r} must be a list of facts "
                             "(or its JSON text)")
        sides.append(validate_fact_list(facts, f"{prefix}: {key}", columns))
    return Document(doc_id, *sides)


def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def table_rows(table: Any) -> list[dict[str, Any]]:
    """The rows of an Arrow batch. A facts column of Arrow structs gives each fact the fields of
    every fact in the batch, missing ones as null, so which fields a fact gets would depend on
    its neighbours: there null fields are dropped (as if missing), on the driver and on the
    workers alike, so a document hashes the same in every batch."""
    import pyarrow as pa  # a dependency of ray[data]

    rows: list[dict[str, Any]] = table.to_pylist()
    for key in ("gold_facts", "predicted_facts"):
        if key in table.column_names:
            kind = table.schema.field(key).type
            if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and pa.types.is_struct(kind.value_type):
                for row in rows:
                    row[key] = _no_nulls(row[key])
    return rows


def dataset_rows(ds: ray.data.Dataset) -> Iterator[dict[str, Any]]:
    """The rows of ``ds`` on the driver, in dataset order, converted as the workers convert them."""
    ctx = getattr(ds, "context", None)
    options = getattr(ctx, "execution_options", None)
    before = getattr(options, "preserve_order", None)
    if options is not None:
        options.preserve_order = True  # this dataset's own context: its rows in order
    try:
        for batch in ds.iter_batches(batch_format="pyarrow", batch_size=None):
            yield from table_rows(batch)
    finally:
        if options is not None:
            options.preserve_order = before


class RayRows:
    """The rows of a ``ray.data.Dataset`` of documents as a document source: read on the driver in
    dataset order (each line of ``results.jsonl`` follows it), checked like the lines of a
    ``.jsonl`` dataset; problems name the row (1-based) as their line."""

    def __init__(self, ds: ray.data.Dataset, name: str = "ray dataset") -> None:
        self.ds, self.name = ds, name
        #: For provenance: the name given (Ray datasets need not come from files).
        self.sources = [name]
        #: The config key ``columns`` (set by ``read``).
        self.columns: dict[str, str] = {}

    def read(self, config: JudgeConfig) -> Iterator[Located | Problem]:
        self.columns = dict(config.columns)
        for n, row in enumerate(dataset_rows(self.ds), start=1):
            prefix = f"{self.name}: row {n}"
            try:
                yield Located(self.name, n, f"row {n}", n, row_document(row, prefix, self.columns))
            except InputError as exc:
                yield Problem(self.name, n, str(exc))

    def read_again(self, keys: Iterable[int]) -> Iterator[Document]:
        """The scanned documents read again on the driver (for a dry run)."""
        wanted = set(keys)
        for n, row in enumerate(dataset_rows(self.ds), start=1):
            if n in wanted:
                yield row_document(row, f"{self.name}: row {n}", self.columns)

    def texts(self, keys: Iterable[int]) -> Iterator[str | None]:
        """None each: a Ray run's report shows no source text (its rows are not read again)."""
        return (None for _ in keys)

    def warnings(self) -> list[str]:
        return []


class RayDataset(ScannedDataset):
    """A ``ray.data.Dataset`` of documents, rows ``{"doc_id", "gold_facts", "predicted_facts"}``,
    as a factjudge :class:`~factjudge.io.datasets.Dataset` (see :class:`RayRows`)."""

    def __init__(self, ds: ray.data.Dataset, name: str = "ray dataset") -> None:
        super().__init__(RayRows(ds, name))
        self.ds, self.name = ds, name
