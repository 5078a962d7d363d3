"""The input formats of ``eval``, by name: :data:`FORMATS`. A format reads either whole
documents (both sides in one input: :class:`~factjudge.io.scan.DocumentSource`) or one side's
facts, each with its ``doc_id`` (:class:`~factjudge.io.scan.FactSource`; gold and predictions may
then be in different formats). Everything a format has in common with the others (duplicate
doc_ids, the input hash, the field check, pairing the sides) is done once, in
:mod:`factjudge.io.scan`.

A format is picked by name (``--format``, ``--gold-format``, ``--predicted-format``) or else by
the file's suffix; when several formats of the wanted kind share a suffix, the first whose
``claims`` accepts the file's first record is taken, else the first registered.

**Adding a format**: one module in this folder (copy ``dataset_jsonl.py`` for whole documents,
``fact_jsonl.py`` for one side's facts) and one entry in :data:`FORMATS`."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ...errors import InputError
from ..jsonl import jsonl_lines, parse_json_line
from ..scan import DocumentSource, FactSource, PairedFacts, ScannedDataset
from .dataset_jsonl import DatasetLines
from .fact_jsonl import FactLines
from .fact_table import csv_facts, parquet_facts, tsv_facts
from .langextract import LangExtractLines
from .langextract import claims as langextract_claims
from .ray_rows import RayRows
from .records import RecordLines
from .records import claims as records_claims
from .spans import GlinerLines, SpacyLines, gliner_claims, spacy_claims

#: What an input holds: whole documents (both sides), or one side's facts.
Holds = Literal["documents", "facts"]


@dataclass(frozen=True)
class InputFormat:
    """One entry of the registry: ``documents`` or ``facts`` opens a file as a source (a format
    gives one of them), ``suffixes`` (lower case, with the dot) pick it when no format is named,
    ``claims(first record)`` tells it apart from another format of the same suffix, ``help`` is
    its line in ``--help``. ``files``: False for a format read from an object handed over in
    Python (``ray``: a ``ray.data.Dataset``), which the CLI does not offer."""

    name: str
    help: str
    suffixes: tuple[str, ...] = ()
    documents: Callable[[Any], DocumentSource] | None = None  # given the Path (or the object: files=False)
    facts: Callable[[Path], FactSource] | None = None
    claims: Callable[[Any], bool] | None = None
    files: bool = True

    def holds(self) -> Holds:
        return "documents" if self.documents is not None else "facts"


FORMATS: dict[str, InputFormat] = {f.name: f for f in (
    InputFormat("dataset", "JSON lines, one document per line: {doc_id, gold_facts, predicted_facts}",
                (".jsonl",), documents=DatasetLines),
    InputFormat("facts", "JSON lines, one fact per line, each with its doc_id", (".jsonl",), facts=FactLines),
    InputFormat("csv", "CSV, one fact per row, a doc_id column (';', tab or '|' found from the header)",
                (".csv",), facts=csv_facts),
    InputFormat("tsv", "tab-separated, one fact per row, a doc_id column", (".tsv",), facts=tsv_facts),
    InputFormat("parquet", "Parquet, one fact per row, a doc_id column", (".parquet",), facts=parquet_facts),
    # extractors' outputs, one document per line: told from "facts" (and each other) by the first
    # line; "records" last, as it claims any object with a list of objects and no fact_type
    InputFormat("langextract", "LangExtract's annotated documents (lx.io.save_annotated_documents), one per line",
                (".jsonl",), facts=LangExtractLines, claims=langextract_claims),
    InputFormat("spacy", "spaCy's Doc.to_json(), one document per line: its ents and span groups",
                (".jsonl",), facts=SpacyLines, claims=spacy_claims),
    InputFormat("gliner", "GLiNER's predict_entities() list, one document per line", (".jsonl",),
                facts=GlinerLines, claims=gliner_claims),
    InputFormat("records", "one object per document in your own schema (a Pydantic model_dump(), a "
                "structured output): each list of objects a fact type", (".jsonl",), facts=RecordLines,
                claims=records_claims),
    InputFormat("ray", "a ray.data.Dataset of documents, rows {doc_id, gold_facts, predicted_facts} "
                "(evaluate_ray)", documents=RayRows, files=False),
)}
#: What a file is read as when no format is named and none has its suffix.
DEFAULTS: dict[Holds, str] = {"documents": "dataset", "facts": "facts"}


def file_formats() -> list[str]:
    """The names of the formats read from files (the CLI's choices)."""
    return [name for name, fmt in FORMATS.items() if fmt.files]


def first_record(path: Path) -> Any:
    """The first line of a JSON-lines file parsed, when it is an object or an array (for
    ``claims``; GLiNER writes a list per line)."""
    try:
        for lineno, _, raw in jsonl_lines(path):
            rec = parse_json_line(raw, path, lineno)
            return rec if isinstance(rec, (dict, list)) else None
    except InputError:
        return None  # the format picked says what is wrong, in its own words
    return None


def pick_format(path: Path, holds: Holds, name: str | None = None, option: str = "--format") -> InputFormat:
    """The format ``path`` is read in: the one named (``option`` says where, for the error),
    else the one of its suffix and first record, else the default."""
    if name is not None:
        fmt = FORMATS.get(name)
        if fmt is None or not fmt.files:
            raise InputError(f"{option} {name!r}: no such input format (known: {', '.join(file_formats())})")
        if fmt.holds() != holds:
            where = ("give the file as the dataset, not as --gold/--predicted" if fmt.holds() == "documents"
                     else "give gold and predicted files with --gold and --predicted")
            raise InputError(f"{path}: {option} {name!r} reads {fmt.holds()}, not {holds}: {where}")
        return fmt
    suffix = path.suffix.lower()
    fits = [f for f in FORMATS.values() if suffix in f.suffixes and f.holds() == holds and f.files]
    if len(fits) > 1:
        first = first_record(path)
        claimed = [f for f in fits if f.claims is not None and first is not None and f.claims(first)]
        fits = claimed or fits
    return fits[0] if fits else FORMATS[DEFAULTS[holds]]


def open_documents(path: Path, name: str | None = None, option: str = "--format") -> DocumentSource:
    opener = pick_format(path, "documents", name, option).documents
    assert opener is not None  # pick_format gives a format of documents
    return opener(path)


def open_facts(path: Path, name: str | None = None, option: str = "--format") -> FactSource:
    opener = pick_format(path, "facts", name, option).facts
    assert opener is not None  # pick_format gives a format of facts
    return opener(path)


def open_dataset(dataset: str | Path | tuple[str | Path, str | Path], *, input_format: str | None = None,
                 gold_format: str | None = None, predicted_format: str | None = None) -> ScannedDataset:
    """A dataset (not yet scanned) from a file of documents or a ``(gold, predicted)`` pair of fact
    files. ``input_format`` names the format of the documents, or of both fact files; the side's
    own name wins. Unnamed, each file's format is found by its suffix and first record."""
    if isinstance(dataset, tuple):
        gold, predicted = Path(dataset[0]), Path(dataset[1])
        gold_source = open_facts(gold, gold_format or input_format, "--gold-format" if gold_format else "--format")
        predicted_source = open_facts(predicted, predicted_format or input_format,
                                      "--predicted-format" if predicted_format else "--format")
        if isinstance(gold_source, RecordLines) and isinstance(predicted_source, RecordLines):
            # one record type on both sides by default (a gold file in another format names its types)
            predicted_source.default_type = gold.stem
        return ScannedDataset(PairedFacts(gold_source, predicted_source))
    if gold_format or predicted_format:
        raise InputError("--gold-format and --predicted-format name the formats of --gold and "
                         "--predicted; a dataset's is --format")
    return ScannedDataset(open_documents(Path(dataset), input_format))


__all__ = ["DEFAULTS", "FORMATS", "InputFormat", "file_formats", "first_record", "open_dataset", "open_documents",
           "open_facts", "pick_format"]
