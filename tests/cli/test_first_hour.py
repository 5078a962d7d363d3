"""The first hour of a new user (issue #24): a confident score that rests on a likely mistake either
stops with one line (exit 2) or is impossible to miss (a warning on stderr and in ``warnings``, an
alert in summary.json that the reports show as a banner); input people actually have is read or
named in one line."""
import json

import pytest
from evalkit import fact, run_cli, write_jsonl
from markupsafe import escape
from scripted_server import Reply


def facts_of(doc_id, *facts):
    return [{"doc_id": doc_id, **f} for f in facts]


def eval_split(tmp_path, gold, predicted, *extra):
    out = tmp_path / "out"
    proc = run_cli("eval", "--gold", gold, "--predicted", predicted, "-o", out, *extra)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else None
    return proc, summary, out


def alert_kinds(summary):
    return [a["kind"] for a in summary["alerts"]]


def test_fact_types_differing_in_case_warn_and_raise_a_banner(tmp_path):
    g = write_jsonl(tmp_path / "g.jsonl", facts_of("a", fact("g1", "Revenue", value="1")))
    p = write_jsonl(tmp_path / "p.jsonl", facts_of("a", fact("p1", "revenue", value="1")))
    proc, summary, out = eval_split(tmp_path, g, p)
    assert proc.returncode == 0
    assert "fact_type 'Revenue' (gold) and 'revenue' (predicted) differ only in case" in proc.stderr
    assert alert_kinds(summary) == ["fact_type_case"]
    assert any("'Revenue' (gold)" in w for w in summary["warnings"])
    page = (out / "report.html").read_text()
    assert 'role="alert"' in page and "&#39;Revenue&#39; (gold)" in page.split('id="banners"')[1].split("</div>")[0]
    assert "> **Warning:** fact_type 'Revenue'" in (out / "report.md").read_text()


def test_fact_types_differing_in_case_warn_in_judge(tmp_path, write_json):
    g = write_json("g.json", [fact("g1", "Revenue", value="1")])
    p = write_json("p.json", [fact("p1", "revenue", value="1")])
    proc = run_cli("judge", g, p)
    assert proc.returncode == 0
    assert "factjudge: warning: fact_type 'Revenue' (gold) and 'revenue' (predicted)" in proc.stderr
    assert any("differ only in case" in w for w in json.loads(proc.stdout)["warnings"])


def test_entity_types_matching_no_fact_raise_a_banner_over_a_perfect_score(tmp_path):
    g = write_jsonl(tmp_path / "g.jsonl", facts_of("a", fact("g1", value="1"), fact("g2", "headquarters", city="X")))
    p = write_jsonl(tmp_path / "p.jsonl", facts_of("a", fact("p1", value="1"), fact("p2", "headquarters", city="Y")))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("entity_types: [revenue, headquarter]\n")
    proc, summary, out = eval_split(tmp_path, g, p, "-c", cfg)
    assert proc.returncode == 0 and summary["micro"]["f1"] == 1.0
    assert alert_kinds(summary) == ["entity_types"]
    message = summary["alerts"][0]["message"]
    assert "'headquarter'" in message and "2 fact(s) of types not listed are out of scope" in message
    assert "1 alert(s): see the warnings below" in proc.stderr.splitlines()[0]
    assert f"factjudge: warning: {message}" in proc.stderr
    assert str(escape(message)) in (out / "report.html").read_text()


def test_an_empty_predicted_file_raises_a_banner(tmp_path):
    g = write_jsonl(tmp_path / "g.jsonl", facts_of("a", fact("g1", value="1")))
    p = tmp_path / "p.jsonl"
    p.write_text("")
    proc, summary, _ = eval_split(tmp_path, g, p)
    assert proc.returncode == 0
    assert alert_kinds(summary) == ["empty_side"]
    assert "no predicted facts at all: every gold fact counts as missed (FN)" in proc.stderr


def test_an_empty_gold_side_of_a_dataset_raises_a_banner(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", [{"doc_id": "a", "gold_facts": [],
                                               "predicted_facts": [fact("p1", value="1")]}])
    out = tmp_path / "out"
    proc = run_cli("eval", data, "-o", out)
    summary = json.loads((out / "summary.json").read_text())
    assert proc.returncode == 0 and alert_kinds(summary) == ["empty_side"]
    assert "no gold facts at all: every predicted fact counts as spurious (FP)" in proc.stderr


def test_an_empty_predicted_file_warns_in_judge(tmp_path, write_json):
    g = write_json("g.json", [fact("g1", value="1")])
    p = tmp_path / "p.jsonl"
    p.write_text("")
    proc = run_cli("judge", g, p)
    assert proc.returncode == 0
    assert "factjudge: warning: no predicted facts at all" in proc.stderr


@pytest.mark.parametrize("name", ["real.xlsx", "real.ods", "real.xls"])
def test_a_spreadsheet_is_refused_in_one_line_without_skip_invalid(tmp_path, name):
    g = tmp_path / name
    g.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    p = write_jsonl(tmp_path / "p.jsonl", facts_of("a", fact("p1", value="1")))
    for extra in ((), ("--skip-invalid",)):
        proc, summary, _ = eval_split(tmp_path, g, p, *extra)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and summary is None
        assert lines == [f"factjudge: error: {g}: spreadsheets ({g.suffix}) are not read: export the sheet "
                         "as CSV (Excel: File > Save As > 'CSV UTF-8 (Comma delimited)'; LibreOffice: File > "
                         "Save As > 'Text CSV') and give the .csv file"]
    proc = run_cli("judge", g, p)
    assert proc.returncode == 2 and "spreadsheets" in proc.stderr and "skip-invalid" not in proc.stderr


def test_a_zip_renamed_to_jsonl_is_not_bad_lines(tmp_path):
    g = tmp_path / "gold.jsonl"
    g.write_bytes(b"PK\x03\x04" + b"\x00\x01garbage\n" * 20)
    p = write_jsonl(tmp_path / "p.jsonl", facts_of("a", fact("p1", value="1")))
    proc, summary, _ = eval_split(tmp_path, g, p, "--skip-invalid")
    assert proc.returncode == 2 and summary is None
    assert proc.stderr.strip().splitlines() == [
        f"factjudge: error: {g}: this is a zip archive (an .xlsx, .ods or .docx file?), not JSON, JSON lines or CSV"]


def test_a_file_with_no_json_line_stops_even_with_skip_invalid(tmp_path):
    g = tmp_path / "gold.jsonl"
    g.write_text("doc_id;id;fact_type\na;g1;revenue\n")
    p = write_jsonl(tmp_path / "p.jsonl", facts_of("a", fact("p1", value="1")))
    proc, summary, _ = eval_split(tmp_path, g, p, "--skip-invalid")
    assert proc.returncode == 2 and summary is None
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "skip-invalid" not in lines[0]
    assert lines[0].startswith(f"factjudge: error: {g}: not a JSON-lines file: none of its 2 line(s) is a "
                               "JSON object (line 1 column 1: invalid JSON")


def test_an_error_heavy_run_raises_a_banner_and_says_what_the_figures_rest_on(server, tmp_path):
    g = write_jsonl(tmp_path / "g.jsonl", facts_of("a", fact("g1", value="1"), fact("g2", value="2")))
    p = write_jsonl(tmp_path / "p.jsonl", facts_of("a", fact("p1", value="1"), fact("p2", value="2")))
    server.truth = {("gold", "g1"): "p1"}
    for key in (("gold", "g2"), ("predicted", "p1"), ("predicted", "p2")):
        server.faults[key] = [Reply(content="nonsense")] * 3
    proc, summary, out = eval_split(tmp_path, g, p, "--judge", "llm", "--model", "m",
                                    "--base-url", server.base_url)
    assert proc.returncode == 1 and summary["micro"]["errors"] == 3
    assert alert_kinds(summary) == ["errors"]
    message = ("3 of 4 in-scope facts (75%) could not be judged (ERROR): precision, recall and F1 rest on "
               "the other 1 only; run again to retry them")
    assert summary["alerts"][0]["message"] == message
    assert f"factjudge: warning: {message}" in proc.stderr
    assert str(escape(message)) in (out / "report.html").read_text()


def test_a_few_errors_raise_no_banner():
    from factjudge.core.alerts import error_alert
    from factjudge.models import Counts

    assert error_alert(Counts(tp_gold=10, tp_predicted=10, errors=1)) is None  # 1 of 21: under 5%
    assert error_alert(Counts(tp_gold=9, tp_predicted=9, errors=1)) is not None  # 1 of 19: over 5%
    assert error_alert(Counts()) is None


def test_a_semicolon_csv_is_read(tmp_path):
    g = tmp_path / "g.csv"
    g.write_text("doc_id;id;fact_type;value\na;g1;revenue;1,5\nb;g2;revenue;2\n", encoding="utf-8")
    p = tmp_path / "p.csv"
    p.write_text("doc_id;id;fact_type;value\na;p1;revenue;1,5\nb;p2;revenue;2\n", encoding="utf-8")
    proc, summary, _ = eval_split(tmp_path, g, p)
    assert proc.returncode == 0, proc.stderr
    assert summary["documents"] == 2 and summary["micro"]["f1"] == 1.0


@pytest.mark.parametrize("delimiter", ["\t", "|"])
def test_other_delimiters_of_a_csv_are_found(tmp_path, delimiter):
    from factjudge.io.facts import load_facts

    path = tmp_path / "f.csv"
    path.write_text(delimiter.join(["id", "fact_type", "value"]) + "\n" + delimiter.join(["g1", "r", "a,b"]) + "\n")
    assert load_facts(path) == [{"id": "g1", "fact_type": "r", "value": "a,b"}]


def test_judge_on_a_csv_of_several_documents_points_to_eval(tmp_path):
    g = tmp_path / "gold.csv"
    g.write_text("doc_id,id,fact_type,value\na,1,revenue,5\na,2,revenue,6\nb,1,revenue,7\n")
    proc = run_cli("judge", g, g)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1
    assert lines[0] == (f"factjudge: error: {g}: row 3 (line 4) (id '1'): duplicate id, first seen at row 1 "
                        "(line 2) (doc_id 'a' there, 'b' here): this file holds several documents; score them "
                        "with factjudge eval --gold GOLD --predicted PREDICTED -o OUT (factjudge judge scores one)")
    g.write_text("doc_id,id,fact_type,value\na,1,revenue,5\nb,2,revenue,7\n")
    proc = run_cli("judge", g, g)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"factjudge: error: {g}: the facts carry 2 doc_ids ('a', 'b'): judge scores "
                                   f"one document; score a file of many documents with factjudge eval --gold {g} "
                                   f"--predicted {g} -o OUT")


@pytest.mark.parametrize("name, expected", [
    ("f.json", 'empty file: expected a JSON list of facts ([] for none) or an object {"facts": [...]}'),
    ("f.csv", "empty file: expected a header row naming the columns"),
])
def test_an_empty_fact_file_is_named_empty(tmp_path, name, expected):
    path = tmp_path / name
    path.write_text("\n")
    p = write_jsonl(tmp_path / "p.jsonl", [fact("p1", value="1")])
    proc = run_cli("judge", path, p)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"factjudge: error: {path}: {expected}"


def test_an_empty_dataset_is_named_empty(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("")
    proc = run_cli("eval", data, "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"factjudge: error: {data}: empty file: expected one document per line, "
                                   '{"doc_id", "gold_facts", "predicted_facts"}')


def test_formats_are_named_per_side(tmp_path):
    """An export named .txt is read as CSV when --gold-format says so; the other side keeps its own."""
    g = tmp_path / "gold_export.txt"
    g.write_text("doc_id,id,fact_type,value\na,g1,revenue,5\nb,g2,revenue,7\n", encoding="utf-8")
    p = write_jsonl(tmp_path / "p.jsonl", facts_of("a", fact("p1", value="5")))
    proc, summary, _ = eval_split(tmp_path, g, p, "--gold-format", "csv")
    assert proc.returncode == 0, proc.stderr
    assert summary["documents"] == 2 and summary["micro"]["recall"] == 0.5


@pytest.mark.parametrize("args, message", [
    (["--format", "csv"], "{data}: --format 'csv' reads facts, not documents: give gold and predicted "
                          "files with --gold and --predicted"),
    (["--format", "xlsx"], "--format 'xlsx': no such input format (known: dataset, facts, csv, tsv, parquet, "
                          "langextract, spacy, gliner, records)"),
    (["--gold-format", "csv"], "--gold-format and --predicted-format go with --gold and --predicted; a "
                               "dataset's format is --format"),
])
def test_a_format_that_cannot_be_is_one_line(tmp_path, args, message):
    data = write_jsonl(tmp_path / "data.jsonl", [{"doc_id": "a", "gold_facts": [], "predicted_facts": []}])
    proc = run_cli("eval", data, "-o", tmp_path / "out", *args)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"factjudge: error: {message.format(data=data)}"]
    assert not (tmp_path / "out").exists()
