"""A whole eval run whose predictions carry the extractor's confidence: summary.json's
``confidence``, the reliability diagram and thresholds table of report.html and report.md, hostile
values, compare's AUROC of both runs, and the judge-corrected figures."""
import json

import pytest
from evalkit import run_cli, write_jsonl

# name facts judged by the rules judge (equal names match): per document the gold names, and the
# predicted names with their confidence (None: no confidence key).
SPEC = [("d1", ["alpha", "bravo", "charlie", "delta"],
         [("alpha", 0.95), ("bravo", 0.9), ("xray", 0.85), ("charlie", 0.6), ("yankee", 0.3)]),
        ("d2", ["echo", "foxtrot", "golf"],
         [("echo", 0.97), ("hotel", 0.9), ("foxtrot", 0.7), ("india", 0.5), ("golf", "0.8")]),
        ("d3", ["juliet"], [("juliet", "high"), ("kilo", 0.2), ("lima", None), ("mike", -1), ("nov", 2),
                            ("osc", "NaN")])]


def _docs(spec=SPEC, field="confidence"):
    docs = []
    for doc_id, gold, predicted in spec:
        pred = []
        for i, (name, conf) in enumerate(predicted):
            fact = {"id": f"{doc_id}-p{i}", "fact_type": "name", "name": name}
            if conf is not None:
                fact[field] = conf
            pred.append(fact)
        docs.append({"doc_id": doc_id, "predicted_facts": pred,
                     "gold_facts": [{"id": f"{doc_id}-g{i}", "fact_type": "name", "name": n}
                                    for i, n in enumerate(gold)]})
    return docs


@pytest.fixture
def run(tmp_path):
    out = tmp_path / "out"
    proc = run_cli("eval", write_jsonl(tmp_path / "data.jsonl", _docs()), "-o", out)
    return proc, out


def test_summary_gives_the_confidence_figures_against_the_verdicts(run):
    proc, out = run
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    c = summary["confidence"]
    # with a confidence: correct 0.95 0.9 0.6 0.97 0.7 0.8 ("0.8" read as a number); wrong 0.85 0.3
    # 0.9 0.5 0.2. Without: juliet "high", lima, mike -1, nov 2, osc "NaN" (4 of them invalid).
    assert (c["field"], c["predictions"], c["without_confidence"], c["invalid"]) == ("confidence", 11, 5, 4)
    correct, wrong = [0.95, 0.9, 0.6, 0.97, 0.7, 0.8], [0.85, 0.3, 0.9, 0.5, 0.2]
    pairs = sum((x > w) + (x == w) / 2 for x in correct for w in wrong)
    assert c["auroc"] == pytest.approx(pairs / 30) == pytest.approx(23.5 / 30)
    assert c["brier"] == pytest.approx((sum((1 - x) ** 2 for x in correct) + sum(w * w for w in wrong)) / 11)
    assert c["ece_bins"] == 10 and len(c["bins"]) == 10
    # [0.9, 1.0]: 0.95 0.9 0.97 correct, 0.9 wrong; [0.8, 0.9): 0.8 correct, 0.85 wrong; 0.7, 0.6 correct
    # alone; 0.5, 0.3, 0.2 wrong alone
    gaps = [abs(0.75 - (0.95 + 0.9 + 0.97 + 0.9) / 4) * 4, abs(0.5 - 0.825) * 2, 0.3 + 0.4, 0.5 + 0.3 + 0.2]
    assert c["ece"] == pytest.approx(sum(gaps) / 11)
    at = {r["threshold"]: r for r in c["thresholds"]}
    # >= 0.9: four kept, three correct; 8 gold facts, alpha bravo echo recalled (juliet's link has no confidence)
    assert at[0.9] == {"threshold": 0.9, "precision": 0.75, "recall": 3 / 8, "kept": pytest.approx(4 / 11),
                       "kept_predictions": 4}
    assert [r["share_reviewed"] for r in c["review"]] == [0.05, 0.1, 0.2, 0.3, 0.5]
    assert c["review"][2] == {"share_reviewed": 0.2, "reviewed": 2, "errors_caught": 0.4}  # 0.2 and 0.3: wrong
    warnings = [w for w in summary["warnings"] if "confidence" in w]
    assert warnings == ["confidence: 4 predicted facts carry a confidence that is not a number in [0, 1] "
                        "(first: 'high' in document 'd3'): counted as without a confidence"]
    assert proc.stderr.count("not a number in [0, 1]") == 1


def test_reports_show_the_reliability_diagram_and_the_thresholds_table(run):
    _, out = run
    html = (out / "report.html").read_text()
    assert '<h2 id="confidence">Extractor confidence</h2>' in html
    svg = html[html.index('<svg xmlns="http://www.w3.org/2000/svg" width="280"'):]
    svg = svg[:svg.index("</svg>")]
    assert 'id="reliability-diagram"' in svg and svg.count("<rect") == 7 and svg.count("<circle") == 7
    assert "confidence 0.9-1.0: 4 predictions, mean confidence 0.930, share correct 0.750" in svg
    assert "auto-accept at &gt;= 0.90: precision 0.750, recall 0.375, 36% of predictions kept" in html
    assert 'id="confidence-thresholds"' in html and "<td>&gt;= 0.95</td>" in html
    assert 'id="confidence-review"' in html
    md = (out / "report.md").read_text()
    assert "## Extractor confidence" in md and "| 0.9-1.0 | 4 | 0.930 | 0.750 |" in md
    assert "| &gt;= 0.90 | 0.750 | 0.375 | 36% \\(4\\) |" in md


def test_a_hostile_field_name_and_values_are_text(tmp_path):
    spec = [("d1", ["a"], [("a", 0.9), ("b", "<script>alert(1)</script>"), ("c", 0.1)])]
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({"confidence_field": "<b>conf</b>"}))
    out = tmp_path / "out"
    proc = run_cli("eval", write_jsonl(tmp_path / "d.jsonl", _docs(spec, "<b>conf</b>")), "-c", config, "-o", out)
    assert proc.returncode == 0, proc.stderr
    c = json.loads((out / "summary.json").read_text())["confidence"]
    assert (c["field"], c["predictions"], c["invalid"], c["auroc"]) == ("<b>conf</b>", 2, 1, 1.0)
    html = (out / "report.html").read_text()
    assert "<b>conf</b>" not in html and "&lt;b&gt;conf&lt;/b&gt;" in html
    assert "<script>alert(1)" not in html


def test_named_confidence_field_is_not_compared(tmp_path):
    # both sides carry "p" and it differs: compared, nothing would match; named, everything does
    docs = [{"doc_id": "d", "gold_facts": [{"id": "g", "fact_type": "t", "name": "a", "p": 1}],
             "predicted_facts": [{"id": "x", "fact_type": "t", "name": "a", "p": 0.4}]}]
    data = write_jsonl(tmp_path / "d.jsonl", docs)
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({"confidence_field": "p"}))
    proc = run_cli("eval", data, "-c", config, "-o", tmp_path / "named")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "named" / "summary.json").read_text())
    assert summary["micro"]["tp_predicted"] == 1 and summary["confidence"]["predictions"] == 1
    proc = run_cli("eval", data, "-o", tmp_path / "unnamed")
    summary = json.loads((tmp_path / "unnamed" / "summary.json").read_text())
    assert summary["micro"]["fp"] == 1 and "confidence" not in summary  # a gold fact's p is a fact field


def test_no_confidence_renders_nothing_new(tmp_path):
    docs = _docs([("d1", ["a"], [("a", None), ("b", None)])])
    out = tmp_path / "out"
    assert run_cli("eval", write_jsonl(tmp_path / "d.jsonl", docs), "-o", out).returncode == 0
    assert "confidence" not in json.loads((out / "summary.json").read_text())
    assert "Extractor confidence" not in (out / "report.html").read_text()
    assert "Extractor confidence" not in (out / "report.md").read_text()


def test_compare_shows_the_auroc_of_both_runs(run, tmp_path):
    _, out_a = run
    worse = [(d, g, [(n, 1 - c if isinstance(c, float) else c) for n, c in p]) for d, g, p in SPEC]
    out_b = tmp_path / "b"
    assert run_cli("eval", write_jsonl(tmp_path / "b.jsonl", _docs(worse)), "-o", out_b).returncode == 0
    proc = run_cli("compare", out_a, out_b, "-o", tmp_path / "cmp")
    assert proc.returncode == 0, proc.stderr
    a = json.loads((out_a / "summary.json").read_text())["confidence"]["auroc"]
    b = json.loads((out_b / "summary.json").read_text())["confidence"]["auroc"]
    line = f"extractor confidence AUROC (a correct prediction ranked above a wrong one, over the shared " \
           f"documents): A {a:.3f}, B {b:.3f}"
    assert b < a and line in proc.stdout
    assert line in (tmp_path / "cmp" / "compare.html").read_text()


def test_judge_calibration_corrects_the_confidence_figures_too(run, tmp_path):
    _, out = run
    labels = [{"id": f"l{i}", "match": m, "gold_fact": {"id": "g", "fact_type": "name", "name": a},
               "predicted_fact": {"id": "p", "fact_type": "name", "name": b}}
              for i, (a, b, m) in enumerate([("x", "x", True), ("y", "y", True), ("w", "w", True),
                                             ("z", "z", False), ("u", "v", True), ("s", "t", True)])]
    cal = tmp_path / "cal.json"
    assert run_cli("calibrate", write_jsonl(tmp_path / "labels.jsonl", labels), "-o", cal).returncode == 0
    out2 = tmp_path / "out2"
    data = write_jsonl(tmp_path / "data.jsonl", _docs())
    proc = run_cli("eval", data, "-o", out2, "--judge-calibration", cal)
    assert proc.returncode == 0, proc.stderr
    c = json.loads((out2 / "summary.json").read_text())["confidence"]
    # tp 3, fp 1, fn 2: link precision 3/4, link recall 3/5: each share of correct predictions x 1.25
    jc = c["judge_corrected"]
    assert jc["factor"] == pytest.approx(1.25)
    assert jc["ece"] == pytest.approx(sum(b["predictions"] * abs(min(1, b["accuracy"] * 1.25) - b["confidence"])
                                          for b in c["bins"] if b["predictions"]) / 11)
    assert {r["threshold"]: r["precision"] for r in jc["thresholds"]}[0.9] == pytest.approx(0.75 * 1.25)
    assert "Judge-corrected (--judge-calibration): ECE" in (out2 / "report.html").read_text()
    plain = json.loads((out / "summary.json").read_text())["confidence"]
    assert plain["judge_corrected"] is None
