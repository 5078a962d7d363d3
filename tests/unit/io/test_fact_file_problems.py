"""A bad record of a split fact file (``--gold``/``--predicted``) never leaves its document scored as
if it were complete: a document that can be told is left out whole, both sides, as a bad dataset
line's is; a bad record of an unknown document is a warning naming it."""
import json

import pytest

from factjudge.io.formats import open_dataset
from factjudge.io.jsonl import named_doc_id
from factjudge.models import JudgeConfig

GOOD_A = {"doc_id": "a", "id": "g1", "fact_type": "revenue", "value": 1}
GOLD_B = {"doc_id": "b", "id": "g9", "fact_type": "revenue", "value": 9}
PRED = [{"doc_id": "a", "id": "p1", "fact_type": "revenue", "value": 1},
        {"doc_id": "a", "id": "p3", "fact_type": "revenue", "value": 3},
        {"doc_id": "b", "id": "p9", "fact_type": "revenue", "value": 9}]


def _lines(path, *lines):
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines),
                    encoding="utf-8")
    return path


def _scan(gold, pred):
    data = open_dataset((gold, pred))
    problems = data.scan(JudgeConfig(), "salt")
    return data, problems, {d.doc_id: ([f["id"] for f in d.gold], [f["id"] for f in d.predicted])
                            for d in data.documents()}


BAD_LINES = {
    "broken JSON": '{"doc_id":"a","id":"g2","fact_type":"revenue","value":',
    "no fact_type": '{"doc_id":"a","id":"g2","value":2}',
    "an id that is a list": '{"doc_id":"a","id":["g2"],"fact_type":"revenue","value":2}',
}


@pytest.mark.parametrize("bad", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_a_bad_fact_line_of_a_known_document_leaves_the_document_out(tmp_path, bad):
    gold = _lines(tmp_path / "g.jsonl", GOOD_A, bad, {**GOOD_A, "id": "g3"}, GOLD_B)
    data, problems, docs = _scan(gold, _lines(tmp_path / "p.jsonl", *PRED))
    assert docs == {"b": (["g9"], ["p9"])}  # not a: scored from 2 of its 3 gold facts before
    assert [(p.file, p.line, p.doc_id) for p in problems] == [(str(gold), 2, "a")]
    record = problems[0].to_dict()
    assert record["error"].startswith(f"{gold}: line ") and record["error"].endswith(
        "(document 'a' left out, both sides: a document with a fact in doubt is not scored)")
    assert problems[0].message.startswith(f"{gold}: line ") and "left out" not in problems[0].message
    assert data.warnings == []


def test_a_bad_predicted_line_leaves_the_gold_side_out_too(tmp_path):
    pred = _lines(tmp_path / "p.jsonl", PRED[0], '{"doc_id": "a", "id": "p3", "value": 3}', PRED[2])
    _, problems, docs = _scan(_lines(tmp_path / "g.jsonl", GOOD_A, GOLD_B), pred)
    assert docs == {"b": (["g9"], ["p9"])} and [p.doc_id for p in problems] == ["a"]


def test_a_bad_line_of_an_unknown_document_is_a_warning_naming_it(tmp_path):
    gold = _lines(tmp_path / "g.jsonl", GOOD_A, '{"id":"g2","fact_type":"revenue","value":',
                  '{"doc_id": ["a"], "id": "g4", "fact_type": "revenue"}', {**GOOD_A, "id": "g3"}, GOLD_B)
    data, problems, docs = _scan(gold, _lines(tmp_path / "p.jsonl", *PRED))
    assert docs == {"a": (["g1", "g3"], ["p1", "p3"]), "b": (["g9"], ["p9"])}  # the run goes on
    assert [(p.line, p.doc_id) for p in problems] == [(2, None), (3, None)]
    assert data.warnings == [
        f"2 fact line(s) of unknown documents were skipped ({gold}: lines 2, 3): their doc_id could not "
        "be read, so some documents may be scored without a fact; fix them and run again"]


def test_a_csv_row_with_a_bad_cell_leaves_its_document_out(tmp_path):
    gold = tmp_path / "g.csv"
    gold.write_text("doc_id,id,fact_type,value\na,g1,revenue,1\na,g2,,2\na,g3,revenue,3\nb,g9,revenue,9\n",
                    encoding="utf-8")
    _, problems, docs = _scan(gold, _lines(tmp_path / "p.jsonl", *PRED))
    assert docs == {"b": (["g9"], ["p9"])}
    assert [(p.file, p.line, p.doc_id) for p in problems] == [(str(gold), 2, "a")]
    assert problems[0].to_dict()["error"].startswith(f"{gold}: row 2")


def test_a_csv_row_without_its_doc_id_is_a_warning(tmp_path):
    gold = tmp_path / "g.csv"
    gold.write_text("doc_id,id,fact_type,value\na,g1,revenue,1\n,g2,revenue,2\n", encoding="utf-8")
    data, problems, docs = _scan(gold, _lines(tmp_path / "p.jsonl", *PRED))
    assert docs["a"] == (["g1"], ["p1", "p3"]) and [p.doc_id for p in problems] == [None]
    assert data.warnings[0].startswith(f"1 fact row(s) of unknown documents were skipped ({gold}: row 2)")


def test_the_doc_id_columns_names_is_read_from_a_bad_line(tmp_path):
    gold = _lines(tmp_path / "g.jsonl", {"doc": "a", "id": "g1", "fact_type": "revenue"},
                  '{"doc": "a", "id": "g2", "fact_type":', {"doc": "b", "id": "g9", "fact_type": "revenue"})
    data = open_dataset((gold, _lines(tmp_path / "p.jsonl", *PRED)))
    problems = data.scan(JudgeConfig(columns={"doc_id": "doc"}), "salt")
    assert [p.doc_id for p in problems] == ["a"] and [d.doc_id for d in data.documents()] == ["b"]


@pytest.mark.parametrize(("raw", "doc_id"), [
    (b'{"doc_id":"a","value":', "a"),                       # cut short
    (b'{"id": "x", "doc_id" : "a\\u00e9",, }', "a\u00e9"),   # a stray comma; escapes read as JSON reads them
    (b'\xef\xbb\xbf{"doc_id": "a",', "a"),                  # a BOM
    (b'{"doc_id": 7, "id": []}', "7"),                      # valid JSON: an integer, as coerce_id takes it
    (b'{"doc_id": "a", "x": "b", "doc_id": "b",', None),    # two of them
    (b'{"doc_id": "a", "doc_id": "b"}', None),
    (b'{"doc_id": true}', None),
    (b'{"doc_id": "  ",', None),
    (b'{"doc_id": 7,', None),                               # broken JSON: strings only
    (b'{"note": "see \\"doc_id\\": \\"z\\"",', None),       # inside a string, not a key
    (b'{"note": "x" "doc_id": "z",', None),                 # not in a key's place
    (b'["doc_id", "a"]', None),
])
def test_named_doc_id_reads_a_refused_line_strictly(raw, doc_id):
    assert named_doc_id(raw) == doc_id
