"""The invoice example (examples/invoices, docs/how-to/nested-lists.md) end to end, issue 34 item
6: line items reordered, one item's price wrong, one item missing, a missed and an invented
invoice, decimal commas, a ``description`` field inside line items, a DMY config. Pins the record
verdicts and the field-level counts in summary.json, the reports, compare and the DataFrame."""
import json

import pytest
from evalkit import ROOT, read_lines, run_cli

from factjudge.io.tables import FIELD_COLUMNS, eval_to_pandas

DATA = ROOT / "examples" / "invoices" / "dataset.jsonl"
CONFIG = ROOT / "examples" / "invoices" / "config.yaml"

#: (correct, wrong, missing, spurious) per path, over the three documents.
FIELDS = {
    "vendor": (3, 0, 1, 1), "number": (3, 0, 1, 1), "date": (3, 0, 1, 1), "total": (3, 0, 1, 1),
    "line_items": (2, 1, 1, 1),
    # northwind: 3 items in another order, equal; contoso: Router equal, Switch's price wrong,
    # Patch panel not extracted; fabrikam: Toner equal, Paper's invoice missed, Consulting invented
    "line_items[]": (5, 1, 2, 1),
    "line_items[].description": (6, 0, 2, 1), "line_items[].quantity": (6, 0, 2, 1),
    "line_items[].unit_price": (5, 1, 2, 1),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("invoices") / "out"
    proc = run_cli("eval", DATA, "-c", CONFIG, "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out


def test_record_verdicts(run):
    verdicts = {line["doc_id"]: tuple([f["factjudge"]["status"] for f in line[side]]
                                      for side in ("gold_facts", "predicted_facts"))
                for line in read_lines(run / "results.jsonl")}
    assert verdicts == {
        "northwind-1001": (["TP"], ["TP"]),  # items reordered, 1.234,50 = 1234.50, 06/05/2024 = 2024-05-06
        "contoso-2002": (["FN"], ["FP"]),  # a wrong price and a missing item: a near miss
        "fabrikam-batch": (["TP", "FN"], ["TP", "FP"]),
    }
    summary = json.loads((run / "summary.json").read_text())
    assert summary["micro"]["f1"] == 0.5
    assert summary["categories"]["near_miss"] == 1


def test_field_counts_in_summary_json(run):
    fields = json.loads((run / "summary.json").read_text())["fields"]
    assert list(fields) == ["invoice"]
    got = {path: (c["correct"], c["wrong"], c["missing"], c["spurious"]) for path, c in fields["invoice"].items()}
    assert got == FIELDS
    price = fields["invoice"]["line_items[].unit_price"]
    assert price["precision"] == 5 / 7 and price["recall"] == 5 / 8
    assert set(price["ci95"]) == {"precision", "recall", "f1"}
    low, high = price["ci95"]["f1"]
    assert low <= price["f1"] <= high


def test_the_reports_show_the_field_table_worst_first(run):
    md = (run / "report.md").read_text()
    table = md.split("## Fields", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ")[1] for line in table.splitlines() if line.startswith("| invoice")]
    assert rows[0] == "line_items"  # F1 0.500, the worst
    assert rows[-2:] == ["line_items\\[\\].description", "line_items\\[\\].quantity"]  # 0.800
    html = (run / "report.html").read_text()
    assert 'id="fields-table"' in html and "line_items[].unit_price" in html


def test_the_dataframe_has_a_row_per_document_type_and_path(run):
    frame = eval_to_pandas(run, level="field")
    assert list(frame.columns) == list(FIELD_COLUMNS)
    summed = frame.groupby("field")[["correct", "wrong", "missing", "spurious"]].sum()
    assert {path: tuple(int(x) for x in row) for path, row in summed.iterrows()} == FIELDS
    contoso = frame[(frame.doc_id == "contoso-2002") & (frame.field == "line_items[]")].iloc[0]
    assert (contoso.correct, contoso.wrong, contoso.missing, contoso.spurious) == (1, 1, 1, 0)


def test_compare_shows_each_field_of_both_runs(run, tmp_path):
    fixed = tmp_path / "fixed.jsonl"
    fixed.write_text(DATA.read_text().replace('"185,00"', '"180,00"'))
    proc = run_cli("eval", fixed, "-c", CONFIG, "-o", tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("compare", run, tmp_path / "b", "-o", tmp_path / "cmp")
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "cmp" / "compare.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| invoice | line_items\\[\\].unit_price |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[10:13] == ["0.667", "0.800", "+0.133"]  # F1 A, B, B-A: the price now right
    assert 'id="fields-table"' in (tmp_path / "cmp" / "compare.html").read_text()
