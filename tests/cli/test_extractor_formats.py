"""eval on extractors' outputs as they write them (issue #35 item 1): gold and predictions in
different formats, the formats found from the files or named with --gold-format and
--predicted-format, errors in one line. The LangExtract line is what ``lx.io.save_annotated_documents``
writes (google/langextract ``langextract/io.py`` and ``langextract/data_lib.py``)."""
import json

from evalkit import run_cli

NOTE = "Patient was given aspirin 100 mg daily and ibuprofen as needed."
GOLD_CSV = ("doc_id,id,fact_type,extraction_text,dosage\n"
            "note-1,g1,medication,Aspirin,100mg\n"
            "note-1,g2,medication,ibuprofen,\n"
            "note-1,g3,condition,headache,\n"
            "note-1,g4,condition,fever,\n"
            "note-2,g5,medication,paracetamol,500 mg\n")


def _extraction(cls, text, interval, index, attributes=None):
    return {"extraction_class": cls, "extraction_text": text,
            "char_interval": None if interval is None else {"start_pos": interval[0], "end_pos": interval[1]},
            "alignment_status": None if interval is None else "match_exact", "extraction_index": index,
            "group_index": index - 1, "description": None, "attributes": attributes}


LANGEXTRACT = [
    {"extractions": [_extraction("medication", "aspirin", (18, 25), 1, {"dosage": "100 mg", "frequency": "daily"}),
                     _extraction("medication", "ibuprofen", (43, 52), 2, {"frequency": "as needed"}),
                     _extraction("condition", "headache", None, 3),  # ungrounded
                     _extraction("condition", "nausea", None, 4)],
     "text": NOTE, "document_id": "note-1"},
    {"extractions": [_extraction("medication", "paracetamol", (0, 11), 1, {"dosage": "1 g"})],
     "text": "Paracetamol 1 g at night.", "document_id": "note-2"},
]


def _write(tmp_path, lines=LANGEXTRACT, name="extractions.jsonl"):
    (tmp_path / "gold.csv").write_text(GOLD_CSV, encoding="utf-8")
    path = tmp_path / name
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in lines), encoding="utf-8")
    return tmp_path / "gold.csv", path


def _verdicts(out):
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {d["doc_id"]: {side: {f["id"]: (f["factjudge"]["status"], f["factjudge"].get("matched_ids"))
            for f in d[f"{side}_facts"]}
                          for side in ("gold", "predicted")} for d in lines}


def test_gold_in_csv_and_predictions_from_langextract_are_scored_fact_by_fact(tmp_path):
    gold, predicted = _write(tmp_path)
    out = tmp_path / "out"
    proc = run_cli("eval", "--gold", gold, "--predicted", predicted, "-o", out, "-q")
    assert proc.returncode == 0, proc.stderr
    assert _verdicts(out) == {
        "note-1": {"gold": {"g1": ("TP", ["medication-1"]), "g2": ("TP", ["medication-2"]),
                            "g3": ("TP", ["condition-1"]), "g4": ("FN", [])},
                   "predicted": {"medication-1": ("TP", ["g1"]), "medication-2": ("TP", ["g2"]),
                                 "condition-1": ("TP", ["g3"]), "condition-2": ("FP", [])}},
        # the dosage is compared (a gold field), the span is not: 500 mg vs 1 g is a miss
        "note-2": {"gold": {"g5": ("FN", [])}, "predicted": {"medication-1": ("FP", [])}},
    }
    summary = json.loads((out / "summary.json").read_text())
    micro = summary["micro"]
    assert (micro["tp_gold"], micro["fp"], micro["fn"], round(micro["f1"], 3)) == (3, 2, 2, 0.6)
    line = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    ungrounded = next(f for f in line["predicted_facts"] if f["id"] == "condition-1")
    assert ungrounded["evidence"] == {"extraction_index": 3, "group_index": 2}  # no span: kept as it is
    # the same run with the formats named gives the same verdicts
    named = tmp_path / "named"
    proc = run_cli("eval", "--gold", gold, "--predicted", predicted, "--gold-format", "csv",
                   "--predicted-format", "langextract", "-o", named, "-q")
    assert proc.returncode == 0 and _verdicts(named) == _verdicts(out)


def test_a_langextract_attribute_with_a_reserved_name_is_one_line(tmp_path):
    lines = [{**LANGEXTRACT[1], "extractions": [_extraction("medication", "paracetamol", (0, 11), 1,
                                                            {"factjudge": "active"})]}]
    gold, predicted = _write(tmp_path, lines)
    proc = run_cli("eval", "--gold", gold, "--predicted", predicted, "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[0] == (
        f"factjudge: error: {predicted}: line 1 (id 'medication-1'): field 'factjudge' is reserved for "
        "factjudge's verdict in its output: rename the field")


def test_a_named_format_that_does_not_fit_the_file_says_what_it_expected(tmp_path):
    gold, _ = _write(tmp_path)
    spacy = tmp_path / "docs.jsonl"
    spacy.write_text(json.dumps({"ents": [{"start": 0, "end": 3, "label": "X"}]}) + "\n")
    proc = run_cli("eval", "--gold", gold, "--predicted", spacy, "--predicted-format", "spacy", "-o", tmp_path / "o")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[0] == (
        f"factjudge: error: {spacy}: line 1: expected spaCy's Doc.to_json() {{\"text\", \"ents\": [{{\"start\", "
        "\"end\", \"label\"}]}: 'text' is missing")


def test_spans_are_evidence_unless_the_config_asks_to_compare_them(tmp_path):
    """Gold and predictions both from LangExtract, the same extractions found at other offsets:
    all correct by default; with ``langextract_compare: [extraction_text, span]`` the moved ones
    are misses."""
    moved = json.loads(json.dumps(LANGEXTRACT))
    moved[0]["extractions"][0]["char_interval"] = {"start_pos": 0, "end_pos": 7}
    (tmp_path / "gold").mkdir()
    _, gold = _write(tmp_path / "gold", LANGEXTRACT, "annotated.jsonl")
    _, predicted = _write(tmp_path, moved, "predicted.jsonl")
    proc = run_cli("eval", "--gold", gold, "--predicted", predicted, "-o", tmp_path / "a", "-q")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["micro"]["f1"] == 1.0
    config = tmp_path / "c.yaml"
    config.write_text("langextract_compare: [extraction_text, span]\n")
    proc = run_cli("eval", "--gold", gold, "--predicted", predicted, "-c", config, "-o", tmp_path / "b", "-q")
    assert proc.returncode == 0, proc.stderr
    assert _verdicts(tmp_path / "b")["note-1"]["predicted"]["medication-1"] == ("FP", [])
    assert _verdicts(tmp_path / "b")["note-1"]["predicted"]["medication-2"] == ("TP", ["medication-2"])


def test_records_of_gold_and_predictions_files_named_differently_meet(tmp_path):
    """A Pydantic dump on both sides, in files named as people name them: the records' type is
    the gold file's stem on both sides by default (it was each file's own: no record could match)."""
    invoice = {"doc_id": "d1", "vendor": "Acme", "total": 148.16,
               "line_items": [{"sku": "A1", "qty": 2}, {"sku": "B2", "qty": 1}]}
    gold, predicted = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold.write_text(json.dumps(invoice) + "\n")
    predicted.write_text(json.dumps({**invoice, "line_items": invoice["line_items"][::-1]}) + "\n")
    out = tmp_path / "out"
    proc = run_cli("eval", "--gold", gold, "--predicted", predicted, "--format", "records", "-o", out, "-q")
    assert proc.returncode == 0, proc.stderr
    assert _verdicts(out) == {"d1": {
        "gold": {"gold-1": ("TP", ["gold-1"]), "line_items-1": ("TP", ["line_items-2"]),
                 "line_items-2": ("TP", ["line_items-1"])},
        "predicted": {"gold-1": ("TP", ["gold-1"]), "line_items-1": ("TP", ["line_items-2"]),
                      "line_items-2": ("TP", ["line_items-1"])}}}
