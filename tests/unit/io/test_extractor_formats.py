"""The input formats of extractors' outputs (issue #35 item 1): files written the way each tool
writes them, read as facts with ids per type and their evidence kept; each format's errors in one
line naming the file and the line; detection from the first record.

Sources of the shapes: LangExtract ``langextract/io.py`` (``save_annotated_documents``: one
``data_lib.annotated_document_to_dict`` per line, keys in dataclass order: ``extractions``,
``text``, then ``document_id``) and ``langextract/core/data.py`` (google/langextract); spaCy
``Doc.to_json`` (explosion/spaCy ``spacy/tokens/doc.pyx``, https://spacy.io/api/doc#to_json);
GLiNER ``predict_entities`` (urchade/GLiNER, usage docs: ``[{start, end, text, label, score}]``);
Pydantic ``model_dump_json`` (a real model below)."""
import json
from typing import Optional

import pytest
from pydantic import BaseModel

from factjudge.io.formats import open_dataset, pick_format
from factjudge.models import JudgeConfig

NOTE = "Patient was given aspirin 100 mg daily and ibuprofen as needed."


def _lines(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def _extraction(cls, text, interval, status="match_exact", index=1, attributes=None, description=None):
    """One extraction as ``enum_asdict_factory`` writes it (every field, nulls included)."""
    return {"extraction_class": cls, "extraction_text": text,
            "char_interval": None if interval is None else {"start_pos": interval[0], "end_pos": interval[1]},
            "alignment_status": status if interval is not None else None, "extraction_index": index,
            "group_index": index - 1, "description": description, "attributes": attributes}


def _langextract(path, docs):
    return _lines(path, [{"extractions": ext, "text": text, "document_id": doc_id} for doc_id, text, ext in docs])


LX_DOCS = [("note-1", NOTE, [
    _extraction("medication", "aspirin", (18, 25), attributes={"dosage": "100 mg", "frequency": "daily"}),
    _extraction("medication", "ibuprofen", (43, 52), index=2, attributes={"frequency": ["as needed", "prn"]},
                description="an NSAID"),
    # ungrounded: the model wrote a text LangExtract could not find in the note
    _extraction("condition", "headache", None, index=3, attributes=None),
]), ("note-2", "No medication.", None)]


def _facts(source, config=None, side="predicted"):
    """Each document's facts of one side, read from ``source`` (gold: an empty JSON-lines file)."""
    empty = source.parent / "empty.jsonl"
    empty.write_text("")
    data = open_dataset((empty, source)) if side == "predicted" else open_dataset((source, empty))
    problems = data.scan(config or JudgeConfig(), "salt")
    assert problems == []
    return {d.doc_id: (d.predicted if side == "predicted" else d.gold) for d in data.documents()}


def _problems(source, config=None, fmt=None):
    empty = source.parent / "empty.jsonl"
    empty.write_text("")
    return [p.message for p in open_dataset((empty, source), predicted_format=fmt).scan(config or JudgeConfig(), "s")]


# --------------------------------------------------------------------------- langextract


def test_langextract_extractions_are_facts_with_their_evidence(tmp_path):
    docs = _facts(_langextract(tmp_path / "extractions.jsonl", LX_DOCS))
    assert docs["note-2"] == []  # extractions null: a document without facts
    aspirin, ibuprofen, headache = docs["note-1"]
    assert aspirin == {"id": "medication-1", "fact_type": "medication", "extraction_text": "aspirin",
                       "dosage": "100 mg", "frequency": "daily",
                       "evidence": {"start": 18, "end": 25, "alignment_status": "match_exact",
                                    "extraction_index": 1, "group_index": 0}}
    assert NOTE[18:25] == "aspirin" and NOTE[43:52] == "ibuprofen"
    # LangExtract's description is evidence (an attribute named description would be a field)
    assert ibuprofen["frequency"] == ["as needed", "prn"] and "description" not in ibuprofen
    assert ibuprofen["evidence"]["description"] == "an NSAID"
    # ungrounded (char_interval null): no span in its evidence, the fact itself still read
    assert headache == {"id": "condition-1", "fact_type": "condition", "extraction_text": "headache",
                        "evidence": {"extraction_index": 3, "group_index": 2}}


def test_langextract_span_and_alignment_are_compared_only_when_asked(tmp_path):
    path = _langextract(tmp_path / "x.jsonl", LX_DOCS)
    config = JudgeConfig(langextract_compare=["span", "alignment_status"])
    aspirin, _, headache = _facts(path, config)["note-1"]
    assert {k: v for k, v in aspirin.items() if k != "evidence"} == {
        "id": "medication-1", "fact_type": "medication", "char_start": 18, "char_end": 25,
        "alignment_status": "match_exact"}
    assert headache["char_start"] is None and headache["alignment_status"] is None
    # the default config leaves these keys out of its dump: runs without them keep their hashes
    assert "langextract_compare" not in JudgeConfig().model_dump() and "record_type" not in JudgeConfig().model_dump()


def test_langextract_ids_are_the_same_on_every_reading(tmp_path):
    path = _langextract(tmp_path / "x.jsonl", LX_DOCS)
    assert _facts(path) == _facts(path)
    assert [f["id"] for f in _facts(path)["note-1"]] == ["medication-1", "medication-2", "condition-1"]


@pytest.mark.parametrize(("extraction", "message"), [
    (_extraction("medication", "aspirin", (18, 25), attributes={"factjudge": "active"}),
     "{f}: line 1 (id 'medication-1'): field 'factjudge' is reserved for "
     "factjudge's verdict in its output: rename the field"),
    (_extraction("medication", "aspirin", (18, 25), attributes={"id": "m1"}),
     "{f}: line 1 (document_id 'note-1'): extraction 1 (medication): attribute 'id' has the name of a field "
     "factjudge gives every LangExtract fact: rename it"),
    (_extraction("", "aspirin", (18, 25)),
     "{f}: line 1 (document_id 'note-1'): extraction 1: 'extraction_class' must be a non-empty string, got string"),
    ({**_extraction("medication", "aspirin", (18, 25)), "char_interval": {"start_pos": 25, "end_pos": 18}},
     "{f}: line 1 (document_id 'note-1'): extraction 1 (medication): 'char_interval' {{start_pos: 25, "
     "end_pos: 18}} is no span of characters (two offsets, start <= end)"),
])
def test_langextract_errors_name_the_file_the_line_and_what_was_expected(tmp_path, extraction, message):
    path = _langextract(tmp_path / "x.jsonl", [("note-1", NOTE, [extraction])])
    assert _problems(path) == [message.format(f=path)]


def test_a_line_that_is_no_annotated_document_says_what_langextract_writes(tmp_path):
    path = _lines(tmp_path / "x.jsonl", [{"document_id": "a", "extractions": []}, {"text": "t", "document_id": "b"}])
    [problem] = _problems(path, fmt="langextract")
    assert problem.startswith(f"{path}: line 2: missing 'extractions': expected LangExtract's annotated "
                              "document {\"document_id\", \"text\", \"extractions\"")
    assert "\n" not in problem


# --------------------------------------------------------------------------- records


class Tax(BaseModel):
    kind: str
    rate: float


class LineItem(BaseModel):
    sku: str
    qty: int
    discount: Optional[float] = None  # noqa: UP045 (written as users write their models)
    taxes: list[Tax] = []


class Invoice(BaseModel):
    invoice_number: str
    vendor: str
    total: float
    po_number: Optional[str] = None  # noqa: UP045
    notes: list[str] = []
    line_items: list[LineItem] = []


INVOICES = [
    Invoice(invoice_number="INV-7", vendor="Acme", total=148.16, notes=["net 30"],
            line_items=[LineItem(sku="A1", qty=2, taxes=[Tax(kind="VAT", rate=0.2), Tax(kind="eco", rate=0.01)]),
                        LineItem(sku="B2", qty=1)]),
    Invoice(invoice_number="INV-8", vendor="Globex", total=12.0),
]


def _dumps(path, models):
    path.write_text("".join(m.model_dump_json() + "\n" for m in models), encoding="utf-8")
    return path


def test_a_pydantic_dump_is_one_record_and_a_fact_per_item_of_its_lists(tmp_path):
    path = _dumps(tmp_path / "invoices.jsonl", INVOICES)
    docs = _facts(path, JudgeConfig(columns={"doc_id": "invoice_number"}))
    record, first, second = docs["INV-7"]
    assert record == {"id": "invoices-1", "fact_type": "invoices", "vendor": "Acme", "total": 148.16,
                      "po_number": None, "notes": ["net 30"]}
    assert first == {"id": "line_items-1", "fact_type": "line_items", "sku": "A1", "qty": 2, "discount": None,
                     "taxes": [{"kind": "VAT", "rate": 0.2}, {"kind": "eco", "rate": 0.01}]}  # kept nested
    assert second["id"] == "line_items-2" and second["taxes"] == []
    # an empty list is no facts of its type; an empty list of values stays a field
    assert docs["INV-8"] == [{"id": "invoices-1", "fact_type": "invoices", "vendor": "Globex", "total": 12.0,
                              "po_number": None}]


def test_records_doc_ids_come_from_a_key_else_the_line_number(tmp_path):
    plain = _dumps(tmp_path / "invoices.jsonl", INVOICES)
    assert list(_facts(plain)) == ["1", "2"]  # no doc_id, document_id or id: the line number
    keyed = _lines(tmp_path / "keyed.jsonl", [{"document_id": "d9", "total": 3, "items": [{"sku": "A"}]}])
    facts = _facts(keyed, JudgeConfig(record_type="invoice"))["d9"]
    assert facts == [{"id": "invoice-1", "fact_type": "invoice", "total": 3},
                     {"id": "items-1", "fact_type": "items", "sku": "A"}]
    with_ids = _lines(tmp_path / "ids.jsonl", [{"id": 4, "items": [{"id": "x1", "sku": "A"}, {"id": None}]}])
    # an item's own id is kept, scoped by its list; a null one is no id
    assert [f["id"] for f in _facts(with_ids)["4"]] == ["items:x1", "items-2"]


def test_records_item_ids_are_scoped_per_list_so_each_list_may_number_from_1(tmp_path):
    """A model numbering each list's items from 1 (line_items 1, 2; taxes 1) was refused as
    duplicate ids ("line 1 (id '1'): duplicate id, first seen at line 1"); the record's own id is
    scoped as well. An id names its object and is not compared (nested-lists.md says why)."""
    path = _lines(tmp_path / "invoices.jsonl", [
        {"document_id": "d1", "id": 7, "total": 3, "line_items": [{"id": 1, "sku": "A"}, {"id": 2, "sku": "B"}],
         "taxes": [{"id": 1, "kind": "VAT"}, {"kind": "eco"}]}])
    facts = _facts(path)["d1"]
    assert [(f["id"], f["fact_type"]) for f in facts] == [
        ("invoices:7", "invoices"), ("line_items:1", "line_items"), ("line_items:2", "line_items"),
        ("taxes:1", "taxes"), ("taxes-2", "taxes")]
    assert facts[1] == {"id": "line_items:1", "fact_type": "line_items", "sku": "A"}


def test_a_list_named_as_the_record_type_is_refused_only_where_a_record_would_share_its_type(tmp_path):
    """``items.jsonl``: the stem names the record type. A line with a record and a list ``items``
    mixed the two into one fact type (a gold total FN against a predicted item); a line of lists
    only has no record, so nothing mixes and it is read."""
    path = _lines(tmp_path / "items.jsonl", [{"doc_id": "d1", "items": [{"sku": "A"}]},
                                             {"doc_id": "d2", "total": 3, "items": [{"sku": "B"}]}])
    assert _problems(path, fmt="records") == [
        f"{path}: line 2: the list 'items' has the name of the record type (the file's stem): its items and the "
        "record would be one fact type; name the record type otherwise with record_type in the config"]
    docs = _facts(path, JudgeConfig(record_type="invoice"))
    assert docs["d2"] == [{"id": "invoice-1", "fact_type": "invoice", "total": 3},
                          {"id": "items-1", "fact_type": "items", "sku": "B"}]


@pytest.mark.parametrize(("record", "config", "message"), [
    ({"doc_id": "a", "items": [{"sku": "A"}, "B"]}, {},
     "{f}: line 1: 'items' item 2 is string: a list is either records (objects, each a fact) or values (a field), "
     "not both"),
    ({"doc_id": "a", "items": [{"sku": "A", "fact_type": "x"}]}, {},
     "{f}: line 1: 'items' item 1 has a field 'fact_type': the list's key names the type of its items"),
    ({"doc_id": "a", "items": [{"sku": "A", "factjudge": "open"}]}, {},
     "{f}: line 1 (id 'items-1'): field 'factjudge' is reserved for "
     "factjudge's verdict in its output: rename the field"),
    # a top-level fact_type silently replaced the record type (a gold record 'receipt' against a
    # predicted 'r': one FN and one FP); the format names the type, so the field is refused
    ({"doc_id": "a", "fact_type": "receipt", "total": 3, "items": [{"sku": "A"}]}, {},
     "{f}: line 1: a top-level field 'fact_type' (\"receipt\"): the records format names the record's type "
     "itself ('r', the file's stem; record_type in the config names it otherwise): rename the field upstream"),
    # the record type named as a list: the record and the items were facts of one type 'items'
    ({"doc_id": "a", "total": 3, "items": [{"sku": "A"}]}, {"record_type": "items"},
     "{f}: line 1: the list 'items' has the name of the record type (the config's record_type): its items and "
     "the record would be one fact type; name the record type otherwise with record_type in the config"),
    ({"doc_id": "a", "items": [{"id": 1, "sku": "A"}, {"id": "1", "sku": "B"}]}, {},
     "{f}: line 1: 'items' items 1 and 2 have the same id \"1\": an item's id names it within its list"),
    ({"doc_id": "a", "items": [{"id": 1.5, "sku": "A"}]}, {},
     "{f}: line 1: 'items' item 1: 'id' must be a string or an integer, got number 1.5"),
    ({"number": "a", "items": [{"sku": "A"}]}, {"columns": {"doc_id": "invoice_number"}},
     "{f}: line 1: no key 'invoice_number' (the doc_id, as the config key columns names it); keys found: number, "
     "items"),
])
def test_records_errors_are_one_line_naming_file_and_line(tmp_path, record, config, message):
    """Each problem of a records line is one line naming the file and the line (and the item)."""
    path = _lines(tmp_path / "r.jsonl", [record])
    assert _problems(path, JudgeConfig(**config), fmt="records") == [message.format(f=path)]


# --------------------------------------------------------------------------- spacy and gliner

TEXT = "Bank of America hired Jane Smith in New York."


def test_spacy_docs_give_a_fact_per_entity_and_span_overlapping_ones_included(tmp_path):
    doc = {"text": TEXT,
           "ents": [{"start": 0, "end": 15, "label": "ORG"}, {"start": 22, "end": 32, "label": "PERSON"},
                    {"start": 36, "end": 44, "label": "GPE"}],
           # a span group (spancat) may overlap the entities and itself; to_json writes kb_id too
           "spans": {"sc": [{"start": 0, "end": 4, "label": "ORG", "kb_id": ""},
                            {"start": 0, "end": 15, "label": "ORG", "kb_id": ""},  # = an ent: read once
                            {"start": 36, "end": 44, "label": "CITY", "kb_id": ""}]},
           "tokens": [{"id": 0, "start": 0, "end": 4}],
           "_": {"doc_id": "news-1"}}
    facts = _facts(_lines(tmp_path / "docs.jsonl", [doc, {"text": "Nothing.", "ents": [], "tokens": []}]))
    assert [(f["id"], f["text"], f["evidence"]) for f in facts["news-1"]] == [
        ("ORG-1", "Bank of America", {"start": 0, "end": 15}), ("PERSON-1", "Jane Smith", {"start": 22, "end": 32}),
        ("GPE-1", "New York", {"start": 36, "end": 44}), ("ORG-2", "Bank", {"start": 0, "end": 4}),
        ("CITY-1", "New York", {"start": 36, "end": 44})]
    assert facts["2"] == []  # no doc_id: the line number


def test_gliner_lists_give_a_fact_per_entity_with_its_score(tmp_path):
    # predict_entities with flat_ner=False: nested spans overlap
    ents = [{"start": 0, "end": 15, "text": "Bank of America", "label": "organization", "score": 0.97},
            {"start": 8, "end": 15, "text": "America", "label": "location", "score": 0.41},
            {"start": 22, "end": 32, "text": "Jane Smith", "label": "person", "score": 0.99}]
    path = _lines(tmp_path / "gliner.jsonl", [ents, {"doc_id": "d2", "text": TEXT, "entities": ents[:1]}])
    facts = _facts(path)
    assert facts["1"][1] == {"id": "location-1", "fact_type": "location", "text": "America", "score": 0.41,
                             "evidence": {"start": 8, "end": 15}}
    assert [f["id"] for f in facts["1"]] == ["organization-1", "location-1", "person-1"]
    assert [f["text"] for f in facts["d2"]] == ["Bank of America"]


@pytest.mark.parametrize(("fmt", "record", "message"), [
    ("spacy", {"ents": []}, "{f}: line 1: expected spaCy's Doc.to_json() {{\"text\", \"ents\": [{{\"start\", \"end\", "
                            "\"label\"}}]}}: 'text' is missing"),
    ("spacy", {"text": "abc", "ents": [{"start": 1, "end": 9, "label": "X"}]},
     "{f}: line 1: ents item 1 (X): span 1-9 lies outside the document's text (3 characters)"),
    ("spacy", {"text": "abc", "ents": [{"start": 0, "end": 1}]},
     "{f}: line 1: ents item 1: 'label' must be a non-empty string, got null"),
    ("gliner", [{"start": "0", "end": 3, "text": "abc", "label": "X"}],
     "{f}: line 1: entity 1 (X): 'start' and 'end' must be character offsets (integers), got string and number"),
    ("gliner", {"doc_id": "a", "text": "abc", "entities": [{"start": 0, "end": 2, "text": "abc", "label": "X"}]},
     "{f}: line 1: entity 1 (X): 'text' 'abc' is not the text's characters 0-2 ('ab')"),
    ("gliner", {"doc_id": "a"}, "{f}: line 1: expected GLiNER's predict_entities() list [{{\"start\", \"end\", "
                                "\"text\", \"label\", \"score\"}}], or {{\"doc_id\", \"entities\": [...]}}: "
                                "'entities' is missing"),
])
def test_span_formats_errors_are_one_line_naming_file_and_line(tmp_path, fmt, record, message):
    path = _lines(tmp_path / "s.jsonl", [record])
    assert _problems(path, fmt=fmt) == [message.format(f=path)]


# --------------------------------------------------------------------------- detection


def test_each_format_is_detected_from_the_first_record(tmp_path):
    files = {
        "langextract": _langextract(tmp_path / "lx.jsonl", LX_DOCS),
        "records": _dumps(tmp_path / "invoices.jsonl", INVOICES),
        "spacy": _lines(tmp_path / "sp.jsonl", [{"text": "a", "ents": [], "tokens": []}]),
        "gliner": _lines(tmp_path / "gl.jsonl", [[{"start": 0, "end": 1, "text": "a", "label": "X", "score": 1}]]),
        "facts": _lines(tmp_path / "f.jsonl", [{"doc_id": "a", "id": "1", "fact_type": "x", "items": [{"a": 1}]}]),
    }
    assert {name: pick_format(path, "facts").name for name, path in files.items()} == {n: n for n in files}
    # a fact whose type column is named otherwise is still read as facts (and told how to map it)
    other = _lines(tmp_path / "o.jsonl", [{"doc_id": "a", "id": "1", "type": "x", "items": [{"a": 1}]}])
    assert pick_format(other, "facts").name == "facts"


def test_the_source_text_is_kept_for_the_document_view(tmp_path):
    from factjudge.io.formats.langextract import LangExtractLines

    src = LangExtractLines(_langextract(tmp_path / "x.jsonl", LX_DOCS))
    entries = list(src.read(JudgeConfig()))
    assert src.source_text(entries[0].key, entries[0].line) == NOTE
