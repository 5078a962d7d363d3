"""Datasets for ``eval``: a ``.jsonl`` of documents, or gold and predicted files of facts that
carry their ``doc_id``. Read lazily: ``scan()`` validates every line and keeps per document only
its id, an input hash and its number of questions; ``documents()`` reads them again when judged.

The scan is one for every format (:mod:`.scan`); the formats are a registry (:mod:`.formats`),
and :func:`open_dataset` picks them by name, suffix or first record."""
from __future__ import annotations

from pathlib import Path

from .formats import open_dataset, open_documents, open_facts
from .scan import Dataset, DocInfo, Document, PairedFacts, Problem, ScannedDataset


class JsonlDataset(ScannedDataset):
    """``DATASET.jsonl``: one document per line, ``{"doc_id", "gold_facts", "predicted_facts"}``."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(open_documents(Path(path), "dataset"))
        self.path = Path(path)


class SplitDataset(ScannedDataset):
    """``--gold G --predicted P``: one fact per line (``.jsonl``) or row (``.csv``, ``.tsv``,
    ``.parquet``), grouped by its ``doc_id``; each file read in the format of its suffix."""

    def __init__(self, gold: str | Path, predicted: str | Path) -> None:
        super().__init__(PairedFacts(open_facts(Path(gold)), open_facts(Path(predicted))))


__all__ = ["Dataset", "DocInfo", "Document", "JsonlDataset", "Problem", "ScannedDataset", "SplitDataset",
           "open_dataset"]
