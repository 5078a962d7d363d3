"""Formats ``csv``, ``tsv`` and ``parquet``: one side's facts, one per row, with a ``doc_id``
column (read by :mod:`factjudge.io.tables`)."""
from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ...models import JudgeConfig
from ...util.exiting import clean_up_at_exit
from ..inputs import check_input_kind
from ..scan import FactEntry, Problem
from ..tables import DATASET_REQUIRED, TableKind, iter_table_rows
from .fact_jsonl import FactLines


class TableFacts(FactLines):
    """A table of facts, copied once into JSON lines (row N on line N) when read, so that it is
    read again by offset as JSON lines are; the copy lives as long as the source."""

    def __init__(self, path: Path, kind: TableKind) -> None:
        super().__init__(path, unit="row")
        self.kind = kind
        self._spool: tempfile.TemporaryDirectory[str] | None = None

    def check(self) -> None:
        if self.kind != "parquet":  # a Parquet file is binary: pyarrow says what is wrong with one
            check_input_kind(self.path)

    def read(self, config: JudgeConfig) -> Iterator[FactEntry | Problem]:
        if self._spool is None:
            self._spool = tempfile.TemporaryDirectory(prefix="factjudge-")
            clean_up_at_exit(self._spool.cleanup)  # the CLI leaves by os._exit: no finalizer runs
        self.file = Path(self._spool.name) / "facts.jsonl"
        with self.file.open("w", encoding="utf-8") as out:
            line = 1
            for row, rec in iter_table_rows(self.path, DATASET_REQUIRED, config.columns, kind=self.kind):
                out.write("\n" * (row - line))  # blank lines for rows the table skipped
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                line = row + 1
        return super().read(config)


def csv_facts(path: Path) -> TableFacts:
    return TableFacts(path, "csv")


def tsv_facts(path: Path) -> TableFacts:
    return TableFacts(path, "tsv")


def parquet_facts(path: Path) -> TableFacts:
    return TableFacts(path, "parquet")
