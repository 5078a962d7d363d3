"""eval with the documents' text (issue #35 item 3): each prediction checked against its text,
FP predictions found there counted as possible gold omissions per type, LangExtract extractions
without a span (``char_interval`` null, as ``lx.io.save_annotated_documents`` writes an extraction
it could not align: google/langextract ``langextract/data_lib.py``) counted as ungrounded; the
text from the inputs or from ``--documents``."""
import json

from evalkit import run_cli

NOTE = "Patient was given aspirin 100 mg daily and ibuprofen as needed; reports NAUSEA."
GOLD_CSV = ("doc_id,id,fact_type,extraction_text\n"
            "note-1,g1,medication,aspirin\n"
            "note-1,g2,condition,headache\n"
            "note-2,g3,medication,paracetamol\n")


def _extraction(cls, text, interval, index):
    return {"extraction_class": cls, "extraction_text": text,
            "char_interval": None if interval is None else {"start_pos": interval[0], "end_pos": interval[1]},
            "alignment_status": None if interval is None else "match_exact", "extraction_index": index,
            "group_index": index - 1, "description": None, "attributes": None}


LANGEXTRACT = [
    {"extractions": [_extraction("medication", "aspirin", (18, 25), 1),     # TP, at its span
                     _extraction("medication", "ibuprofen", (43, 52), 2),   # FP at its span: omission?
                     _extraction("condition", "nausea", None, 3),           # FP, no span, in the text
                     _extraction("condition", "fever", None, 4)],           # FP, no span, not in the text
     "text": NOTE, "document_id": "note-1"},
    {"extractions": [_extraction("medication", "paracetamol", (0, 11), 1)],
     "text": "Paracetamol 1 g at night.", "document_id": "note-2"},
]


def _write(tmp_path, lines=LANGEXTRACT):
    (tmp_path / "gold.csv").write_text(GOLD_CSV, encoding="utf-8")
    path = tmp_path / "extractions.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    return tmp_path / "gold.csv", path


def _eval(tmp_path, *args):
    out = tmp_path / "out"
    proc = run_cli("eval", *args, "-o", out, "-q")
    assert proc.returncode == 0, proc.stderr
    return out, json.loads((out / "summary.json").read_text())


def test_langextract_with_text_counts_possible_gold_omissions_and_ungrounded_extractions(tmp_path):
    gold, predicted = _write(tmp_path)
    out, summary = _eval(tmp_path, "--gold", gold, "--predicted", predicted)
    assert summary["micro"]["fp"] == 3
    assert summary["source"] == {
        "text_from": "inputs", "documents": 2, "documents_without_text": 0,
        "found": {"total": 4, "by_fact_type": {"medication": 3, "condition": 1}},
        "not_found": {"total": 1, "by_fact_type": {"condition": 1}},
        "possible_gold_omissions": {"total": 2, "by_fact_type": {"medication": 1, "condition": 1}},
        "ungrounded": {"total": 2, "by_fact_type": {"condition": 2}},
    }
    # listed first in the reports, before the totals; the text is not copied into results.jsonl
    md = (out / "report.md").read_text()
    assert md.index("## Possible gold omissions") < md.index("## Totals")
    assert "| note-1 | medication | medication-2 | extraction_text: ibuprofen |" in md
    assert "| note-1 | condition | condition-1 | extraction_text: nausea |" in md
    assert "fever" not in md.split("## Possible gold omissions")[1].split("## Totals")[0]
    assert NOTE not in (out / "results.jsonl").read_text()
    html = (out / "report.html").read_text()
    assert html.index('id="possible-gold-omissions"') < html.index("<h2>Totals</h2>")


def test_the_texts_of_a_documents_file_serve_facts_without_text(tmp_path):
    (tmp_path / "gold.csv").write_text(GOLD_CSV, encoding="utf-8")
    facts = [{"doc_id": "note-1", "id": "p1", "fact_type": "medication", "extraction_text": "Aspirin"},
             {"doc_id": "note-1", "id": "p2", "fact_type": "medication", "extraction_text": "IBUPROFEN"},
             {"doc_id": "note-1", "id": "p3", "fact_type": "medication", "extraction_text": "morphine"},
             {"doc_id": "note-2", "id": "p4", "fact_type": "medication", "extraction_text": "paracetamol"}]
    (tmp_path / "pred.jsonl").write_text("".join(json.dumps(f) + "\n" for f in facts), encoding="utf-8")
    (tmp_path / "documents.jsonl").write_text(json.dumps({"doc_id": "note-1", "text": NOTE}) + "\n",
                                              encoding="utf-8")
    _, summary = _eval(tmp_path, "--gold", tmp_path / "gold.csv", "--predicted", tmp_path / "pred.jsonl",
                       "--documents", tmp_path / "documents.jsonl")
    s = summary["source"]
    assert (s["text_from"], s["documents"], s["documents_without_text"]) == ("documents file", 1, 1)
    assert (s["found"]["total"], s["not_found"]["total"]) == (2, 1)   # note-2's p4 is not counted
    assert s["possible_gold_omissions"] == {"total": 1, "by_fact_type": {"medication": 1}}  # ibuprofen
    assert s["ungrounded"]["total"] == 0  # facts without evidence are not "ungrounded"


def test_a_documents_file_holding_none_of_the_runs_doc_ids_is_said(tmp_path):
    """Its doc_ids a case apart from the run's: the check asked for found nothing, exit 0 and not
    a word (a review)."""
    gold, predicted = _write(tmp_path)
    docs = tmp_path / "documents.jsonl"
    docs.write_text('{"doc_id": "NOTE-1", "text": "aspirin"}\n', encoding="utf-8")
    proc = run_cli("eval", "--gold", gold, "--predicted", predicted, "--documents", docs, "-o", tmp_path / "o")
    assert proc.returncode == 0, proc.stderr
    warning = (f"{docs}: none of the run's 2 doc_ids has a text in it (the run's first 'note-1', the file's "
               "first 'NOTE-1'): the source check found nothing")
    assert f"warning: {warning}" in proc.stderr
    assert warning in json.loads((tmp_path / "o" / "summary.json").read_text())["warnings"]


def test_a_bad_documents_file_is_one_line_before_any_judging(tmp_path):
    gold, predicted = _write(tmp_path)
    docs = tmp_path / "documents.jsonl"
    docs.write_text('{"doc_id": "note-1", "text": "x"}\n{"doc_id": "note-2", "text": 3}\n', encoding="utf-8")
    proc = run_cli("eval", "--gold", gold, "--predicted", predicted, "--documents", docs, "-o", tmp_path / "o")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert f"{docs}: line 2 (doc_id 'note-2'): 'text' must be a string, got number" in proc.stderr
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_without_a_text_summary_json_has_no_source(tmp_path):
    facts = [{"doc_id": "note-1", "id": "p1", "fact_type": "medication", "extraction_text": "aspirin"}]
    (tmp_path / "pred.jsonl").write_text("".join(json.dumps(f) + "\n" for f in facts), encoding="utf-8")
    (tmp_path / "gold.csv").write_text(GOLD_CSV, encoding="utf-8")
    out, summary = _eval(tmp_path, "--gold", tmp_path / "gold.csv", "--predicted", tmp_path / "pred.jsonl")
    assert "source" not in summary
    assert "Possible gold omissions" not in (out / "report.md").read_text()


def test_a_near_miss_found_at_its_span_is_a_wrong_value_not_a_possible_omission(tmp_path):
    """A LangExtract span covers the extraction's text only: paracetamol 1 g against gold's 500 mg
    is at its span, but it is the near-miss partner of a missed gold fact (a wrong dosage of a
    fact gold has), so it is not counted as a fact gold lacks; ibuprofen, which gold lacks, is."""
    (tmp_path / "gold.csv").write_text("doc_id,id,fact_type,extraction_text,dosage\n"
                                       "note-3,g1,medication,paracetamol,500 mg\n", encoding="utf-8")
    text = "Paracetamol 1 g at night; ibuprofen 200 mg."
    extractions = [{**_extraction("medication", "paracetamol", (0, 11), 1), "attributes": {"dosage": "1 g"}},
                   {**_extraction("medication", "ibuprofen", (26, 35), 2), "attributes": {"dosage": "200 mg"}}]
    path = tmp_path / "extractions.jsonl"
    path.write_text(json.dumps({"extractions": extractions, "text": text, "document_id": "note-3"}) + "\n",
                    encoding="utf-8")
    out, summary = _eval(tmp_path, "--gold", tmp_path / "gold.csv", "--predicted", path)
    line = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert [(m["gold"], m["predicted"]) for m in line["analysis"]["near_misses"]] == [("g1", "medication-1")]
    s = summary["source"]
    assert s["found"]["total"] == 2
    assert s["possible_gold_omissions"] == {"total": 1, "by_fact_type": {"medication": 1}}  # ibuprofen only


def test_the_source_check_reads_figures_as_the_config_says(tmp_path):
    """A German filing's "1.234,5" holds a predicted 1234.5 once decimal_separator is ','."""
    doc = {"doc_id": "d", "text": "Der Umsatz betrug 1.234,5 Mio. EUR.",
           "gold_facts": [{"id": "g", "fact_type": "revenue", "value": "1.234,5"}],
           "predicted_facts": [{"id": "p", "fact_type": "revenue", "value": 1234.5},
                               {"id": "q", "fact_type": "revenue", "value": 99.5}]}
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"decimal_separator": ","}), encoding="utf-8")
    _, summary = _eval(tmp_path, data, "-c", cfg)
    assert summary["micro"]["tp_predicted"] == 1
    assert (summary["source"]["found"]["total"], summary["source"]["not_found"]["total"]) == (1, 1)
