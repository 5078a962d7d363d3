"""A person's review export (``review.jsonl``, written by review.html) read safely, and the gold
set it corrects written as a new file in the gold's own format.

The export's first line is its header, ``{"_header": {"kind": "factjudge review", "run": {...},
"items": N}}``: the run it was made from (:func:`~factjudge.core.review.run_identity`) and how many
lines follow, so an export cut short (a download stopped half way) is refused as a whole rather
than read in part. Each further line is one reviewed item::

    {"id", "doc_id", "kind", "verdict", "match", "judge_match", "category",
     "gold_fact", "predicted_fact", "gold_correction", "note"}

``id``, ``gold_fact``, ``predicted_fact``, ``match``, ``category`` and ``note`` are what
``factjudge calibrate`` reads of a label line, so the export is a labels file as it stands.
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..core.review import EXPORT_KIND, KINDS, VERDICTS, Kind, Review, Verdict
from ..errors import InputError
from .files import same_file, write_atomic
from .inputs import check_input_kind
from .jsonl import coerce_id, json_type, jsonl_lines, parse_json_line
from .tables import iter_table_rows, table_delimiter

__all__ = ["GoldChanges", "ReviewExport", "ReviewLine", "REVIEW_KEYS", "load_review", "write_corrected_gold"]

#: The keys of an export line.
REVIEW_KEYS = ("id", "doc_id", "kind", "verdict", "match", "judge_match", "category", "gold_fact",
               "predicted_fact", "gold_correction", "note")
#: Gold fields a correction may not change: they name the fact.
FIXED_FIELDS = ("id", "fact_type")


@dataclass(frozen=True)
class ReviewLine:
    """One line of an export: the review and the facts it was about."""

    id: str
    review: Review
    line: int
    gold_fact: Mapping[str, Any] | None
    predicted_fact: Mapping[str, Any] | None


@dataclass(frozen=True)
class ReviewExport:
    path: Path
    run: dict[str, Any]
    lines: list[ReviewLine]

    @property
    def reviews(self) -> list[Review]:
        return [x.review for x in self.lines]


def review_header(rec: object) -> dict[str, Any] | None:
    """The header of a review export (None: ``rec`` is not one)."""
    if isinstance(rec, dict) and set(rec) == {"_header"} and isinstance(rec["_header"], dict) \
            and rec["_header"].get("kind") == EXPORT_KIND:
        return cast(dict[str, Any], rec["_header"])
    return None


def _fact(value: object, what: str, prefix: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("fact_type"), str):
        raise InputError(f"{prefix}: '{what}' must be a fact object with a fact_type, or null, "
                         f"got {json_type(value)}")
    coerce_id(value.get("id"), "id", f"{prefix}: {what}")
    return value


def _line(path: Path, lineno: int, rec: object) -> ReviewLine:
    prefix = f"{path}: line {lineno}"
    if not isinstance(rec, dict):
        raise InputError(f"{prefix}: a reviewed item must be a JSON object, got {json_type(rec)}")
    unknown = [k for k in rec if k not in REVIEW_KEYS]
    if unknown:
        raise InputError(f"{prefix}: unknown key {unknown[0]!r} (a reviewed item has {', '.join(REVIEW_KEYS)})")
    doc_id = coerce_id(rec.get("doc_id"), "doc_id", prefix)
    kind, verdict = rec.get("kind"), rec.get("verdict")
    if kind not in KINDS:
        raise InputError(f"{prefix}: 'kind' must be one of {', '.join(KINDS)}, got {json.dumps(kind)}")
    if verdict not in VERDICTS or (verdict == "omission" and kind != "extra"):
        raise InputError(f"{prefix}: 'verdict' must be right or wrong (or omission for an extra), "
                         f"got {json.dumps(verdict)}")
    gold = _fact(rec.get("gold_fact"), "gold_fact", prefix)
    pred = _fact(rec.get("predicted_fact"), "predicted_fact", prefix)
    if doc_id is None or (gold is None and pred is None):
        raise InputError(f"{prefix}: a reviewed item needs its doc_id and a gold or predicted fact")
    if verdict == "omission" and pred is None:
        raise InputError(f"{prefix}: an omission needs the predicted fact the gold set lacks")
    correction = rec.get("gold_correction") or {}
    if not isinstance(correction, dict) or (correction and gold is None):
        raise InputError(f"{prefix}: 'gold_correction' must be an object of gold fields (with a gold_fact), or null")
    fixed = [k for k in FIXED_FIELDS if k in correction]
    if fixed:
        raise InputError(f"{prefix}: 'gold_correction' may not change {fixed[0]!r} (it names the fact)")
    review = Review(doc_id=doc_id, kind=cast(Kind, kind), verdict=cast(Verdict, verdict),
                    gold_id=None if gold is None else str(gold["id"]),
                    predicted_id=None if pred is None else str(pred["id"]), gold_correction=correction)
    expected = review.match
    if rec.get("match") != expected:
        raise InputError(f"{prefix}: 'match' {json.dumps(rec.get('match'))} does not follow from kind "
                         f"{kind} and verdict {verdict} (expected {json.dumps(expected)})")
    return ReviewLine(coerce_id(rec.get("id"), "id", prefix) or f"line {lineno}", review, lineno, gold, pred)


def load_review(path: str | Path) -> ReviewExport:
    """Read and check a review export; every problem is a one-line InputError naming the line.
    An export whose line count is not its header's (cut short, or lines added) is refused whole."""
    path = Path(path)
    check_input_kind(path, "JSON lines", "export it from review.html (the Export button)")
    header: dict[str, Any] | None = None
    lines: list[ReviewLine] = []
    seen: dict[str, int] = {}
    for lineno, _, raw in jsonl_lines(path):
        rec = parse_json_line(raw.removesuffix(b"\n"), path, lineno)
        if header is None:
            header = review_header(rec)
            if header is None:
                raise InputError(f"{path}: line {lineno}: not a review export (the first line is its "
                                 f'{{"_header": {{"kind": "{EXPORT_KIND}", ...}}}})')
            continue
        item = _line(path, lineno, rec)
        key = item.id
        if key in seen:
            raise InputError(f"{path}: line {lineno}: duplicate id {key!r}, first seen at line {seen[key]}")
        seen[key] = lineno
        lines.append(item)
    if header is None:
        raise InputError(f"{path}: empty (not a review export)")
    run = header.get("run")
    if not isinstance(run, dict):
        raise InputError(f"{path}: line 1: the header names no run ('run')")
    if header.get("items") != len(lines):
        raise InputError(f"{path}: holds {len(lines)} reviewed items where its header says "
                         f"{json.dumps(header.get('items'))}: the export was cut short or edited; export it again")
    return ReviewExport(path, run, lines)


# --------------------------------------------------------------------------- the corrected gold


@dataclass
class GoldChanges:
    """What a review changes in the gold set, per document: field values by gold id, and the
    predicted facts the gold set lacks."""

    values: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    added: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def of(cls, export: ReviewExport) -> GoldChanges:
        out = cls()
        for x in export.lines:
            r = x.review
            if r.gold_correction and r.gold_id is not None:
                out.values.setdefault(r.doc_id, {}).setdefault(r.gold_id, {}).update(r.gold_correction)
            if r.verdict == "omission" and x.predicted_fact is not None:
                out.added.setdefault(r.doc_id, []).append(dict(x.predicted_fact))
        return out

    def fact_count(self) -> tuple[int, int]:
        """(gold facts corrected, facts added)."""
        return sum(len(v) for v in self.values.values()), sum(len(v) for v in self.added.values())


def _new_id(fact: Mapping[str, Any], taken: set[str]) -> str:
    """An id for a fact added to gold: its predicted id with ``-gold`` (numbered if taken)."""
    base = f"{fact.get('id')}-gold"
    new, n = base, 1
    while new in taken:
        n += 1
        new = f"{base}{n}"
    taken.add(new)
    return new


def _correct(facts: list[Any], doc_id: str, changes: GoldChanges, applied: list[str]) -> list[Any]:
    """``facts`` (one document's gold) with the changes made; ``applied`` gets the keys done."""
    values = changes.values.get(doc_id, {})
    out = []
    for f in facts:
        fid = str(f.get("id")) if isinstance(f, dict) else None
        if fid is not None and fid in values:
            f = {**f, **values[fid]}
            applied.append(f"{doc_id}/{fid}")
        out.append(f)
    taken = {str(f.get("id")) for f in out if isinstance(f, dict)}
    for added in changes.added.get(doc_id, ()):
        out.append({**added, "id": _new_id(added, taken)})
    return out


def _dumps(rec: object) -> str:
    return json.dumps(rec, ensure_ascii=False)


def _dataset_jsonl(src: Path, changes: GoldChanges, applied: list[str], placed: set[str]) -> str:
    """The dataset with the changes made; ``placed`` gets the documents given their omissions."""
    out = io.StringIO()
    for lineno, _, raw in jsonl_lines(src):
        rec = parse_json_line(raw.removesuffix(b"\n"), src, lineno)
        doc_id = str(rec.get("doc_id")) if isinstance(rec, dict) else None
        if doc_id is None or (doc_id not in changes.values and doc_id not in changes.added):
            out.write(raw.removesuffix(b"\n").decode("utf-8-sig") + "\n")  # untouched, byte for byte
            continue
        rec["gold_facts"] = _correct(list(rec.get("gold_facts") or []), doc_id, changes, applied)
        placed.add(doc_id)
        out.write(_dumps(rec) + "\n")
    return out.getvalue()


def _not_applied(changes: GoldChanges, applied: list[str], placed: set[str] | None) -> list[str]:
    """The review's changes that writing the gold did not make, in the review's order: a gold
    fact's ``doc_id/id``, a dataset's document whose omissions found no line (``placed``: those
    that did; None for a fact file or a table, which take an omission of any document)."""
    done = set(applied)
    missed = [f"{d}/{g}" for d, values in changes.values.items() for g in values if f"{d}/{g}" not in done]
    if placed is not None:
        missed += [f"{d} (omissions)" for d in changes.added if d not in placed]
    return missed


def _fact_jsonl(src: Path, changes: GoldChanges, applied: list[str]) -> str:
    out = io.StringIO()
    seen_ids: dict[str, set[str]] = {}
    for lineno, _, raw in jsonl_lines(src):
        rec = parse_json_line(raw.removesuffix(b"\n"), src, lineno)
        if not isinstance(rec, dict):
            raise InputError(f"{src}: line {lineno}: not a fact object")
        doc_id, fid = str(rec.get("doc_id")), str(rec.get("id"))
        seen_ids.setdefault(doc_id, set()).add(fid)
        value = changes.values.get(doc_id, {}).get(fid)
        if value is None:
            out.write(raw.removesuffix(b"\n").decode("utf-8-sig") + "\n")
            continue
        applied.append(f"{doc_id}/{fid}")
        out.write(_dumps({**rec, **value}) + "\n")
    for doc_id, facts in changes.added.items():
        taken = seen_ids.setdefault(doc_id, set())
        for f in facts:
            out.write(_dumps({"doc_id": doc_id, **f, "id": _new_id(f, taken)}) + "\n")
    return out.getvalue()


def _fact_table(src: Path, changes: GoldChanges, applied: list[str], delimiter: str) -> str:
    # Read first as eval reads a table, for its errors: a quote never closed (which a lenient
    # csv reader turns into one cell holding the rest of the file), a row short of cells, a
    # duplicate column, bad UTF-8; all one line naming the row. Then the cells, as they are.
    for _ in iter_table_rows(src, (), kind="tsv" if delimiter == "\t" else "csv"):
        pass
    with src.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter, strict=True)
        header = list(reader.fieldnames or [])
        rows = list(reader)
    for row in rows:
        row.pop(None, None)  # empty cells past the header (checked above)
    if "doc_id" not in header or "id" not in header:
        raise InputError(f"{src}: the corrected gold is written for a table with 'doc_id' and 'id' "
                         "columns; this one lacks one")
    new_fields = {k for v in changes.values.values() for c in v.values() for k in c}
    new_fields |= {k for facts in changes.added.values() for f in facts for k in f}
    header += sorted(k for k in new_fields if k not in header)
    seen_ids: dict[str, set[str]] = {}
    for row in rows:
        doc_id, fid = row["doc_id"], row["id"]
        seen_ids.setdefault(doc_id, set()).add(fid)
        value = changes.values.get(doc_id, {}).get(fid)
        if value is not None:
            applied.append(f"{doc_id}/{fid}")
            row.update({k: _cell(v) for k, v in value.items()})
    for doc_id, facts in changes.added.items():
        taken = seen_ids.setdefault(doc_id, set())
        for f in facts:
            rows.append({"doc_id": doc_id, **{k: _cell(v) for k, v in f.items()}, "id": _new_id(f, taken)})
    out = io.StringIO()
    writer = csv.DictWriter(out, header, delimiter=delimiter, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _cell(value: object) -> str:
    return "" if value is None else value if isinstance(value, str) else _dumps(value)


def write_corrected_gold(gold: Path, out: Path, changes: GoldChanges,
                         protected: Sequence[Path] = ()) -> list[str]:
    """Write ``gold`` with ``changes`` made to ``out`` (atomically, in the gold's own format: a
    ``.jsonl`` dataset, a ``.jsonl`` fact file, a ``.csv`` or ``.tsv`` table); ``gold`` is only
    read. Refused when ``out`` is ``gold`` or one of ``protected`` (the other inputs). Returns the
    ``doc_id/id`` of the corrected gold facts found."""
    for src in (gold, *protected):
        if same_file(src, out) or Path(src).resolve() == out.resolve():
            raise InputError(f"{out}: is an input ({src}); the corrected gold goes to a new file")
    if not gold.is_file():
        raise InputError(f"{gold}: the run's gold input is gone (give it with --gold)")
    applied: list[str] = []
    suffix = gold.suffix.lower()
    placed: set[str] | None = None
    if suffix == ".jsonl":
        first = next((parse_json_line(raw.removesuffix(b"\n"), gold, n) for n, _, raw in jsonl_lines(gold)), None)
        if isinstance(first, dict) and "gold_facts" in first:
            placed = set()
            text = _dataset_jsonl(gold, changes, applied, placed)
        else:
            text = _fact_jsonl(gold, changes, applied)
    elif suffix in (".csv", ".tsv"):
        text = _fact_table(gold, changes, applied, table_delimiter(gold))  # a ';' table stays one
    else:
        raise InputError(f"{gold}: the corrected gold is written as .jsonl (a dataset or a fact file), "
                         f".csv or .tsv; this gold is {suffix or 'without a suffix'}")
    missed = _not_applied(changes, applied, placed)
    if missed:  # a corrected gold missing corrections would pass for the reviewed set
        shown = ", ".join(missed[:3]) + (f" and {len(missed) - 3} more" if len(missed) > 3 else "")
        raise InputError(f"{gold}: {len(missed)} of the review's changes name gold facts or documents this "
                         f"file does not hold as written ({shown}): the run read it through the config's "
                         "columns or another format; nothing was written")
    write_atomic(out, text)
    return applied
