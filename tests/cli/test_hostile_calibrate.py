"""``factjudge calibrate`` on hostile label files (issue 20, item 10). U+2028, NEL, deep nesting,
5,000-digit integers and lone surrogates are covered in tests/unit/evaluation/test_calibrate.py
(fixed when calibrate moved to io.jsonl's reader); this adds the form feed, which str.splitlines()
would also have taken for a line end."""
import json

import evalkit

GOLD = {"id": "g1", "fact_type": "revenue", "value": "1"}
PRED = {"id": "p1", "fact_type": "revenue", "value": "1"}


def test_a_raw_form_feed_is_one_error_on_its_own_line_not_a_split_line(tmp_path):
    path = tmp_path / "labels.jsonl"
    first = json.dumps({"id": "c1", "gold_fact": GOLD, "predicted_fact": PRED, "match": True,
                        "note": "a\fb"}).replace("\\f", "\f")  # raw: JSON forbids it in a string
    second = json.dumps({"id": "c2", "gold_fact": GOLD, "predicted_fact": PRED, "match": True})
    path.write_text(first + "\n" + second + "\n", encoding="utf-8")
    proc = evalkit.run_cli("calibrate", path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"factjudge: error: {path}: line 1 column {first.index(chr(12)) + 1}: invalid JSON: Invalid control "
        f"character at: line 1 column {first.index(chr(12)) + 1}"]


def spreadsheet(path):
    """An .xlsx file as far as its bytes go: a ZIP archive."""
    import zipfile
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("xl/workbook.xml", "<workbook/>")
    return path


def test_a_spreadsheet_of_labels_is_named_as_one_not_as_bad_utf8(tmp_path):
    """As the data inputs refuse it (issue 32, Low): by its suffix, and by its bytes under
    another name; in one line saying what a labels file is."""
    path = spreadsheet(tmp_path / "labels.xlsx")
    proc = evalkit.run_cli("calibrate", path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"factjudge: error: {path}: spreadsheets (.xlsx) are not read: write one label per line as "
        'JSON: {"id", "gold_fact", "predicted_fact", "match"}']
    renamed = spreadsheet(tmp_path / "labels.jsonl")
    proc = evalkit.run_cli("calibrate", renamed)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"factjudge: error: {renamed}: this is a zip archive (an .xlsx, .ods or .docx file?), not JSON lines"]
