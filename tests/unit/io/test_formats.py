"""The registry of input formats: picked by name, else by suffix and first record; gold and
predictions in different formats; one entry adds a format."""
import json

import pytest

from factjudge.errors import InputError
from factjudge.io import formats
from factjudge.io.formats import FORMATS, InputFormat, open_dataset, pick_format
from factjudge.io.formats.fact_jsonl import FactLines
from factjudge.models import JudgeConfig

GOLD = [{"doc_id": "A", "id": "g1", "fact_type": "revenue", "value": "12"},
        {"doc_id": "B", "id": "g2", "fact_type": "revenue", "value": "7"}]
PRED = [{"doc_id": "A", "id": "p1", "fact_type": "revenue", "value": "12"}]


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _csv(path, records, delimiter=","):
    names = list(dict.fromkeys(k for r in records for k in r))
    rows = [names] + [[str(r.get(n, "")) for n in names] for r in records]
    path.write_text("".join(delimiter.join(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _documents(data):
    assert data.scan(JudgeConfig(), "salt") == []
    return [(d.doc_id, d.gold, d.predicted) for d in data.documents()]


def test_the_existing_formats_are_entries_picked_by_suffix(tmp_path):
    assert {"dataset", "facts", "csv", "tsv", "parquet"} <= set(FORMATS)
    picked = {s: pick_format(tmp_path / f"x{s}", "facts").name for s in (".jsonl", ".CSV", ".tsv", ".parquet", ".txt")}
    assert picked == {".jsonl": "facts", ".CSV": "csv", ".tsv": "tsv", ".parquet": "parquet", ".txt": "facts"}
    assert pick_format(tmp_path / "d.jsonl", "documents").name == "dataset"


def test_gold_and_predictions_may_come_in_different_formats(tmp_path):
    same = _documents(open_dataset((_jsonl(tmp_path / "g.jsonl", GOLD), _jsonl(tmp_path / "p.jsonl", PRED))))
    mixed = _documents(open_dataset((_csv(tmp_path / "g.csv", GOLD), _jsonl(tmp_path / "p.jsonl", PRED))))
    assert mixed == same and [d[0] for d in same] == ["A", "B"]


def test_a_named_format_wins_over_the_suffix(tmp_path):
    gold = _csv(tmp_path / "gold.txt", GOLD)  # a .txt suffix is read as JSON lines unless named
    with pytest.raises(InputError, match="not a JSON-lines file"):
        open_dataset((gold, _jsonl(tmp_path / "p.jsonl", PRED))).scan(JudgeConfig(), "salt")
    data = open_dataset((gold, _jsonl(tmp_path / "p.jsonl", PRED)), gold_format="csv")
    assert _documents(data)[0][1] == [{"id": "g1", "fact_type": "revenue", "value": "12"}]
    tsv = _csv(tmp_path / "both.dat", GOLD, "\t")
    assert _documents(open_dataset((tsv, tsv), input_format="tsv"))[1][2] == [
        {"id": "g2", "fact_type": "revenue", "value": "7"}]


def test_a_format_named_for_the_wrong_input_is_one_line(tmp_path):
    data = _jsonl(tmp_path / "d.jsonl", [{"doc_id": "A", "gold_facts": [], "predicted_facts": []}])
    with pytest.raises(InputError, match=r"d\.jsonl: --format 'csv' reads facts, not documents: give gold "
                                         "and predicted files with --gold and --predicted$"):
        open_dataset(data, input_format="csv")
    with pytest.raises(InputError, match=r"--gold-format 'dataset' reads documents, not facts"):
        open_dataset((data, data), gold_format="dataset")
    with pytest.raises(InputError, match=r"--predicted-format 'xlsx': no such input format \(known: dataset, facts"):
        open_dataset((data, data), predicted_format="xlsx")


def test_formats_that_share_a_suffix_are_told_apart_by_the_first_record(tmp_path, monkeypatch):
    """What a new format needs: one entry (here a JSON-lines format of facts whose records carry
    'extraction_class' instead of 'fact_type')."""

    class Renamed(FactLines):
        def _record(self, raw, lineno):
            rec = super()._record(raw, lineno)
            return {("fact_type" if k == "extraction_class" else k): v for k, v in rec.items()}

    entry = InputFormat("renamed", "test", (".jsonl",), facts=Renamed,
                        claims=lambda first: "extraction_class" in first)
    monkeypatch.setitem(formats.FORMATS, "renamed", entry)
    theirs = [{"doc_id": "A", "id": "p1", "extraction_class": "revenue", "value": "12"}]
    pred = _jsonl(tmp_path / "p.jsonl", theirs)
    assert pick_format(pred, "facts").name == "renamed"
    assert pick_format(_jsonl(tmp_path / "g.jsonl", GOLD), "facts").name == "facts"
    docs = _documents(open_dataset((tmp_path / "g.jsonl", pred)))
    assert docs[0] == ("A", [{"id": "g1", "fact_type": "revenue", "value": "12"}],
                       [{"id": "p1", "fact_type": "revenue", "value": "12"}])


def test_a_format_may_hold_a_documents_facts_on_one_line_without_ids(tmp_path, monkeypatch):
    """The shape of extractor outputs (one document per line, entities without ids): one record a
    document, its facts numbered per type when loaded, the same on every reading."""
    import contextlib

    from factjudge.io.jsonl import jsonl_lines, parse_object_line, read_line_at
    from factjudge.io.scan import FactEntry

    class Entities(FactLines):
        def _facts(self, raw, lineno):
            counts = {}
            facts = []
            for ent in parse_object_line(raw, self.path, lineno)["ents"]:
                counts[ent["label"]] = counts.get(ent["label"], 0) + 1
                facts.append({"id": f"{ent['label']}-{counts[ent['label']]}", "fact_type": ent["label"],
                              "value": ent["text"]})
            return facts

        def read(self, columns):
            for lineno, offset, raw in jsonl_lines(self.path):
                yield FactEntry(lineno, offset, parse_object_line(raw, self.path, lineno)["doc"])

        @contextlib.contextmanager
        def opened(self):
            with self.path.open("rb") as fh:
                yield lambda keys, lines: [self._facts(read_line_at(fh, k), n)
                                           for k, n in zip(keys, lines, strict=True)]

    monkeypatch.setitem(formats.FORMATS, "entities", InputFormat("entities", "test", (".ents",), facts=Entities))
    pred = _jsonl(tmp_path / "p.ents", [{"doc": "A", "ents": [{"label": "revenue", "text": "12"},
                                                               {"label": "revenue", "text": "13"}]}])
    data = open_dataset((_csv(tmp_path / "g.csv", GOLD), pred))
    docs = _documents(data)
    assert docs[0][2] == [{"id": "revenue-1", "fact_type": "revenue", "value": "12"},
                          {"id": "revenue-2", "fact_type": "revenue", "value": "13"}]
    assert data.infos[0].questions == 3 and _documents(data) == docs
