"""The review loop on the command line: review.html's queue, an export as its script writes it,
``factjudge review apply`` (reviewed figures, the corrected gold, the inputs untouched, a mismatched
or cut export refused) and ``factjudge calibrate`` reading the export as it stands."""
import csv
import hashlib
import json
import re

import pytest
from evalkit import REVIEW_DOCS as DOCS
from evalkit import REVIEW_VERDICTS as VERDICTS
from evalkit import export_lines, fact, read_lines, review_data, run_cli, write_jsonl


def digest(*paths):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


@pytest.fixture
def reviewed(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    out = tmp_path / "out"
    assert run_cli("eval", data, "-o", out).returncode == 0
    export = write_jsonl(tmp_path / "review.jsonl", export_lines(review_data(out), VERDICTS))
    return data, out, export


def test_the_queue_puts_near_misses_and_omissions_before_plain_links(reviewed):
    _, out, _ = reviewed
    items = review_data(out)["items"]
    assert [(i["doc_id"], i["kind"], i["gold"] and i["gold"]["id"], i["predicted"] and i["predicted"]["id"])
            for i in items] == [("A", "miss", "g2", "p2"), ("A", "miss", "g3", "p3"),
                                ("A", "extra", None, "p4"), ("A", "link", "g1", "p1"), ("B", "link", "g1", "p1")]
    assert items[2]["reason"].startswith("possible gold omission")
    # the facts as given: no status, matched_ids or reasoning in what the export carries
    assert items[0]["gold"] == fact("g2", entity="Xco", period="2023", value="200")


def test_review_apply_gives_the_hand_counted_figures_and_the_corrected_gold(reviewed, tmp_path):
    data, out, export = reviewed
    before = digest(data, export)
    corrected = tmp_path / "corrected.jsonl"
    proc = run_cli("review", "apply", out, export, "-o", corrected)
    assert proc.returncode == 0, proc.stderr
    # by hand: gold A g1 g2 (now linked) + the added auditor TP, A g3 and B g1 FN -> R 3/5;
    # predicted A p1 p2 p4 TP, A p3 and B p1 FP -> P 3/5
    assert "judge:    P 0.400 R 0.500 F1 0.444" in proc.stdout
    assert "reviewed: P 0.600 R 0.600 F1 0.600 on 5 reviewed facts (omission 1, right 2, wrong 2)" in proc.stdout
    assert "precision 0.500 recall 0.500 kappa 0.000 (tp 1 fp 1 fn 1 tn 1)" in proc.stdout
    reviewed = json.loads((out / "summary.json").read_text())["reviewed"]
    assert (reviewed["tp_predicted"], reviewed["fp"], reviewed["tp_gold"], reviewed["fn"]) == (3, 2, 3, 2)
    assert reviewed["precision"] == reviewed["recall"] == 0.6 and reviewed["reviewed"] == 5
    assert "reviewed: P 0.600 R 0.600 F1 0.600 on 5 reviewed facts" in (out / "review.html").read_text()
    # the gold in its own format: A's g2 corrected, the omission added under a new id; B byte for byte
    lines = corrected.read_text(encoding="utf-8").splitlines()
    a = json.loads(lines[0])
    assert a["gold_facts"][1] == fact("g2", entity="Xco", period="2023", value="201")
    assert a["gold_facts"][3] == fact("p4-gold", "auditor", name="KPMG")
    assert a["predicted_facts"] == DOCS[0]["predicted_facts"]
    assert lines[1] == data.read_text(encoding="utf-8").splitlines()[1]
    assert "gold: 1 facts corrected, 1 added (omissions)" in proc.stdout
    assert digest(data, export) == before  # the inputs are only read


def _card(html, ident):
    """A card of report.html: its value and the line under it."""
    found = re.search(rf'<div class="value" id="{ident}">([^<]*)</div><div class="ci">([^<]*)</div>', html)
    return found and found.groups()


def test_review_apply_shows_the_reviewed_figures_beside_the_judges_in_both_reports(reviewed):
    _, out, export = reviewed
    md_before = (out / "report.md").read_text(encoding="utf-8")
    html_before = (out / "report.html").read_text(encoding="utf-8")
    assert "Reviewed by a person" not in md_before and _card(html_before, "reviewed") is None
    proc = run_cli("review", "apply", out, export)
    assert proc.returncode == 0, proc.stderr
    r = json.loads((out / "summary.json").read_text())["reviewed"]
    line = f"reviewed: P {r['precision']:.3f} R {r['recall']:.3f} F1 {r['f1']:.3f} on {r['reviewed']} reviewed facts"
    assert line == "reviewed: P 0.600 R 0.600 F1 0.600 on 5 reviewed facts"  # the hand count above
    md = (out / "report.md").read_text(encoding="utf-8")
    section = md[md.index("## Reviewed by a person"):md.index("## Totals")]
    assert f"**{line}**" in section
    assert "| judge | 0.400 | 0.500 | 0.444 |" in section
    assert "| reviewed \\(5 facts\\) | 0.600 | 0.600 | 0.600 |" in section
    assert md.replace(section, "") == md_before  # the rest as eval wrote it
    html = (out / "report.html").read_text(encoding="utf-8")
    assert _card(html, "reviewed") == ("0.600", "P 0.600 R 0.600 on 5 reviewed facts")
    assert _card(html, "micro-f1") == _card(html_before, "micro-f1") == ("0.444", "95% CI [0.286, 1.000]")
    assert f"<strong>{line}</strong>" in html
    assert f"{out / 'report.md'}, {out / 'report.html'}" in proc.stderr
    # applied again (the same export): the same reports, the section once
    assert run_cli("review", "apply", out, export).returncode == 0
    assert (out / "report.md").read_text(encoding="utf-8") == md


def test_review_apply_keeps_the_rows_eval_listed(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    out = tmp_path / "out"
    assert run_cli("eval", data, "-o", out, "--report-rows", "1").returncode == 0
    assert json.loads((out / "summary.json").read_text())["report_rows"] == 1
    before = (out / "report.md").read_text(encoding="utf-8")
    export = write_jsonl(tmp_path / "review.jsonl", export_lines(review_data(out), VERDICTS))
    assert run_cli("review", "apply", out, export).returncode == 0
    after = (out / "report.md").read_text(encoding="utf-8")
    facts = after.index("## FN, FP and ERROR facts")
    assert after[facts:] == before[before.index("## FN, FP and ERROR facts"):]


def test_review_apply_never_writes_through_a_linked_report(reviewed, tmp_path):
    _, out, export = reviewed
    mine = tmp_path / "mine.md"
    mine.write_text("my notes\n", encoding="utf-8")
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(mine)
    summary = (out / "summary.json").read_bytes()
    proc = run_cli("review", "apply", out, export, "-o", tmp_path / "corrected.jsonl")
    assert proc.returncode == 2 and "report.md: not a file factjudge wrote" in proc.stderr
    assert mine.read_text(encoding="utf-8") == "my notes\n"
    assert (out / "summary.json").read_bytes() == summary and not (tmp_path / "corrected.jsonl").exists()


def test_the_next_run_on_the_corrected_gold_scores_the_reviewed_pairs(reviewed, tmp_path):
    _, out, export = reviewed
    corrected = tmp_path / "corrected.jsonl"
    assert run_cli("review", "apply", out, export, "-o", corrected).returncode == 0
    again = tmp_path / "again"
    assert run_cli("eval", corrected, "-o", again).returncode == 0
    micro = json.loads((again / "summary.json").read_text())["micro"]
    # g2 now matches p2 and the auditor is in gold: B's link (wrong to the person) is still the judge's
    assert (micro["tp_gold"], micro["fn"], micro["tp_predicted"], micro["fp"]) == (4, 1, 4, 1)


def test_calibrate_reads_the_export_as_labels(reviewed, tmp_path):
    _, _, export = reviewed
    report = tmp_path / "calibration.json"
    proc = run_cli("calibrate", export, "-o", report)
    assert proc.returncode == 0, proc.stderr
    # the four pairs (the omission has none), judged alone by the rules judge: A g1-p1 linked and
    # right (tp), B g1-p1 linked but wrong (fp), A g2-p2 not linked but a match (fn), A g3-p3 (tn)
    overall = json.loads(report.read_text())["overall"]
    assert (overall["tp"], overall["fp"], overall["fn"], overall["tn"]) == (1, 1, 1, 1)
    assert (overall["precision"], overall["recall"], overall["kappa"]) == (0.5, 0.5, 0.0)
    # and eval takes it as a judge calibration
    data = write_jsonl(tmp_path / "d2.jsonl", DOCS)
    proc = run_cli("eval", data, "-o", tmp_path / "cal", "--judge-calibration", report)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "cal" / "summary.json").read_text())["judge_corrected"]["link_precision"] == 0.5


def test_an_export_of_another_run_is_refused_with_the_reason(reviewed, tmp_path):
    data, out, export = reviewed
    other_docs = [DOCS[0], {**DOCS[1], "predicted_facts": [fact("p1", entity="Yco", value="6")]}]
    other = tmp_path / "other"
    assert run_cli("eval", write_jsonl(tmp_path / "other.jsonl", other_docs), "-o", other).returncode == 0
    summary = (other / "summary.json").read_bytes()
    proc = run_cli("review", "apply", other, export, "-o", tmp_path / "corrected.jsonl")
    assert proc.returncode == 2
    assert "not a review of" in proc.stderr and "different inputs" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "corrected.jsonl").exists() and (other / "summary.json").read_bytes() == summary


def test_a_cut_export_is_refused_whole(reviewed, tmp_path):
    _, out, export = reviewed
    text = export.read_text(encoding="utf-8")
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 1], encoding="utf-8")  # a whole line lost
    summary = (out / "summary.json").read_bytes()
    proc = run_cli("review", "apply", out, cut, "-o", tmp_path / "corrected.jsonl")
    assert proc.returncode == 2 and "holds 4 reviewed items where its header says 5" in proc.stderr
    half = tmp_path / "half.jsonl"
    half.write_text(text[: len(text) - 40], encoding="utf-8")  # cut mid-line
    proc = run_cli("review", "apply", out, half, "-o", tmp_path / "corrected.jsonl")
    assert proc.returncode == 2 and f"{half}: line 6" in proc.stderr
    assert not (tmp_path / "corrected.jsonl").exists() and (out / "summary.json").read_bytes() == summary


def test_the_corrected_gold_never_replaces_an_input(reviewed):
    data, out, export = reviewed
    before = digest(data, export)
    for target in (data, export):
        proc = run_cli("review", "apply", out, export, "-o", target)
        assert proc.returncode == 2 and "is an input" in proc.stderr
    assert digest(data, export) == before


def _judged_and_reviewed(tmp_path, gold):
    """The predictions of DOCS, a run against ``gold`` and the review export of VERDICTS."""
    predicted = write_jsonl(tmp_path / "predicted.jsonl",
                            [{"doc_id": d["doc_id"], **f} for d in DOCS for f in d["predicted_facts"]])
    out = tmp_path / "out"
    proc = run_cli("eval", "--gold", gold, "--predicted", predicted, "-o", out)
    assert proc.returncode == 0, proc.stderr
    export = write_jsonl(tmp_path / "review.jsonl", export_lines(review_data(out), VERDICTS))
    return predicted, out, export


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ";.csv"])
def test_fact_files_are_corrected_in_their_own_format(tmp_path, suffix):
    """``;.csv``: a table with ';' (Excel's where the decimal separator is a comma), which eval
    reads: apply read it with ',' and refused it as lacking doc_id and id (a review)."""
    gold_rows = [{"doc_id": d["doc_id"], **f} for d in DOCS for f in d["gold_facts"]]
    delimiter = ";" if suffix.startswith(";") else ","
    suffix = suffix.lstrip(";")
    if suffix == ".csv":
        gold = tmp_path / "gold.csv"
        with gold.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, ["doc_id", "id", "fact_type", "entity", "period", "value", "name"],
                                    delimiter=delimiter)
            writer.writeheader()
            writer.writerows(gold_rows)
    else:
        gold = write_jsonl(tmp_path / "gold.jsonl", gold_rows)
    predicted, out, export = _judged_and_reviewed(tmp_path, gold)
    before = digest(gold, predicted)
    corrected = tmp_path / f"corrected{suffix}"
    proc = run_cli("review", "apply", out, export, "-o", corrected)
    assert proc.returncode == 0, proc.stderr
    assert digest(gold, predicted) == before
    if suffix == ".csv":
        rows = list(csv.DictReader(corrected.open(encoding="utf-8", newline=""), delimiter=delimiter))
    else:
        rows = read_lines(corrected)
    by_key = {(r["doc_id"], r["id"]): r for r in rows}
    assert by_key[("A", "g2")]["value"] == "201" and by_key[("A", "g1")]["value"] == "100"
    assert by_key[("A", "p4-gold")]["name"] == "KPMG" and by_key[("A", "p4-gold")]["fact_type"] == "auditor"
    assert len(rows) == len(gold_rows) + 1
    # the next run reads it as gold
    assert run_cli("eval", "--gold", corrected, "--predicted", predicted, "-o", tmp_path / "again").returncode == 0


@pytest.mark.parametrize("shape", ["facts", "dataset"])
def test_a_gold_read_through_columns_is_refused_not_written_without_its_corrections(tmp_path, shape):
    """A run that read its gold through the config's columns: apply found none of the review's
    gold facts under doc_id and id, wrote the gold unchanged and reported "0 facts corrected"
    with exit 0 (a review found it); now nothing is written and the line says why."""
    names = {"doc_id": "document", "id": "fact_id"}
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({"columns": names}), encoding="utf-8")

    def renamed(f, doc_id):
        return {"document": doc_id, "fact_id": f["id"], **{k: v for k, v in f.items() if k != "id"}}

    out = tmp_path / "out"
    if shape == "facts":
        gold = write_jsonl(tmp_path / "gold.jsonl", [renamed(f, d["doc_id"]) for d in DOCS for f in d["gold_facts"]])
        predicted = write_jsonl(tmp_path / "predicted.jsonl",
                                [renamed(f, d["doc_id"]) for d in DOCS for f in d["predicted_facts"]])
        proc = run_cli("eval", "--gold", gold, "--predicted", predicted, "-c", config, "-o", out)
    else:
        names["gold_facts"] = "gold"
        config.write_text(json.dumps({"columns": names}), encoding="utf-8")
        gold = write_jsonl(tmp_path / "data.jsonl", [
            {"document": d["doc_id"], "gold": [renamed(f, d["doc_id"]) for f in d["gold_facts"]],
             "predicted_facts": [renamed(f, d["doc_id"]) for f in d["predicted_facts"]]} for d in DOCS])
        proc = run_cli("eval", gold, "-c", config, "-o", out)
    assert proc.returncode == 0, proc.stderr
    export = write_jsonl(tmp_path / "review.jsonl", export_lines(review_data(out), VERDICTS))
    corrected = tmp_path / "corrected.jsonl"
    proc = run_cli("review", "apply", out, export, "-o", corrected)
    assert proc.returncode == 2 and not corrected.exists()
    assert re.fullmatch(rf"factjudge: error: {re.escape(str(gold))}: \d+ of the review's changes name gold facts or "
                        r"documents this file does not hold as written \(A/g2.*\): the run read it through the "
                        r"config's columns or another format; nothing was written", proc.stderr.strip())


@pytest.mark.parametrize("tail, problem", [
    ("", None),  # the gold as eval read it: a trailing delimiter on a row is empty cells
    ('B,g9,revenue,Yco,,"7\nB,g10,revenue,Yco,,8\n', "row 5 (line 6): a quoted cell is not closed"),
    ("B,g9,revenue,Yco\n", "row 5 (line 6): 4 cells but the header has 7 columns"),
])
def test_the_corrected_gold_reads_a_table_as_eval_does(tmp_path, tail, problem):
    """The corrected gold re-reads the gold table: a row eval read (empty cells past the header)
    made review apply fail with a traceback, and a gold edited since (a stray '"', a row cut short)
    was copied with the rest of the file in one cell, or a row without its last cells. The table
    is read with eval's own rules and errors."""
    gold = tmp_path / "gold.csv"
    header = ["doc_id", "id", "fact_type", "entity", "period", "value", "name"]
    lines = [",".join(header)] + [",".join(str(f.get(k, d["doc_id"] if k == "doc_id" else ""))
                                           for k in header) for d in DOCS for f in d["gold_facts"]]
    lines[1] += ",,"  # empty cells past the header: eval reads them
    gold.write_text("\n".join(lines) + "\n", encoding="utf-8")
    predicted, out, export = _judged_and_reviewed(tmp_path, gold)
    with gold.open("a", encoding="utf-8") as fh:
        fh.write(tail)  # edited after the run
    corrected = tmp_path / "corrected.csv"
    proc = run_cli("review", "apply", out, export, "-o", corrected)
    if problem is None:
        assert proc.returncode == 0, proc.stderr
        rows = list(csv.DictReader(corrected.open(encoding="utf-8", newline="")))
        by_key = {(r["doc_id"], r["id"]): r for r in rows}
        assert len(rows) == len(lines) - 1 + 1  # the gold's rows and the omission added
        assert by_key[("A", "g2")]["value"] == "201" and by_key[("A", "g1")]["value"] == "100"
    else:
        assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
        assert f"{gold}: {problem}" in proc.stderr and not corrected.exists()
