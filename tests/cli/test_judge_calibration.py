"""``eval --judge-calibration CAL.json``: the figures corrected for the judge's measured link errors,
the warnings when the calibration was made otherwise, and the refusals of a bad file."""
import json
import os
import subprocess
import sys

import pytest
from evalkit import CONFIG, DOCS, ROOT, run_cli, write_jsonl


def _label(i, gold, pred, match):
    return {"id": f"l{i}", "gold_fact": {"id": "g", "fact_type": "revenue", "value": gold},
            "predicted_fact": {"id": "p", "fact_type": "revenue", "value": pred}, "match": match}


# Decided by any judge that links equal values only: tp 2 (equal, labelled match), fp 2 (equal,
# labelled no match), fn 1 (different, labelled match), tn 1. Link precision 2/4, recall 2/3.
LABELS = [_label(1, "1", "1", True), _label(2, "2", "2", True), _label(3, "5", "5", False),
          _label(4, "6", "6", False), _label(5, "3", "4", True), _label(6, "7", "8", False)]


@pytest.fixture
def setup(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps(CONFIG))
    labels = write_jsonl(tmp_path / "labels.jsonl", LABELS)
    cal = tmp_path / "cal.json"
    proc = run_cli("calibrate", labels, "-c", config, "-o", cal)
    assert proc.returncode == 0, proc.stderr
    return data, config, cal


def test_calibrate_records_its_judge_and_config(setup):
    _, _, cal = setup
    report = json.loads(cal.read_text())
    assert {k: report["overall"][k] for k in ("tp", "fp", "fn", "tn")} == {"tp": 2, "fp": 2, "fn": 1, "tn": 1}
    assert report["judge_identity"] == {"name": "rules"}
    assert report["config"]["entity_types"] == CONFIG["entity_types"]
    assert report["config"]["link_policy"] == "either"


def test_eval_reports_the_corrected_figures_next_to_the_raw_ones(setup, tmp_path):
    data, config, cal = setup
    out = tmp_path / "out"
    proc = run_cli("eval", data, "-c", config, "-o", out, "--judge-calibration", cal)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    jc, micro = summary["judge_corrected"], summary["micro"]
    factor = (2 / 4) / (2 / 3)  # the judge's link precision over its link recall
    assert (jc["link_precision"], jc["link_recall"]) == (0.5, pytest.approx(2 / 3))
    assert jc["precision"] == pytest.approx(micro["precision"] * factor)
    assert jc["recall"] == pytest.approx(micro["recall"] * factor)
    assert jc["calibration"] == {"source": str(cal), "judge": "rules", "tp": 2, "fp": 2, "fn": 1, "tn": 1}
    low, high = jc["ci95"]["f1"]
    assert low <= jc["f1"] <= high
    assert summary["warnings"] == [] and "warning" not in proc.stderr
    assert "judge-corrected (judge link precision 0.500, recall 0.667" in proc.stderr
    md = (out / "report.md").read_text()
    assert "## Judge-corrected estimates" in md and f"| judge-corrected | {jc['precision']:.3f} |" in md
    html = (out / "report.html").read_text()
    assert 'id="judge-corrected-table"' in html and f"<td class=\"num\">{jc['f1']:.3f}</td>" in html


def test_without_the_option_nothing_changes(setup, tmp_path):
    data, config, _ = setup
    out = tmp_path / "out"
    assert run_cli("eval", data, "-c", config, "-o", out).returncode == 0
    summary = json.loads((out / "summary.json").read_text())
    assert "judge_corrected" not in summary
    assert "Judge-corrected" not in (out / "report.md").read_text()
    assert "judge-corrected" not in (out / "report.html").read_text()


def test_a_calibration_of_another_config_or_judge_is_warned_about(setup, tmp_path):
    data, config, cal = setup
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**CONFIG, "link_policy": "both"}))
    proc = run_cli("eval", data, "-c", other, "-o", tmp_path / "out", "--judge-calibration", cal)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    expected = (f"judge calibration {cal} was made with another config (link_policy 'either' there, "
                "'both' here)")
    assert any(w.startswith(expected) for w in summary["warnings"])
    assert f"factjudge: warning: {expected}" in proc.stderr
    report = json.loads(cal.read_text())
    report["judge_identity"] = {"name": "llm", "model": "qwen"}
    cal.write_text(json.dumps(report))
    proc = run_cli("eval", data, "-c", config, "-o", tmp_path / "out2", "--judge-calibration", cal)
    assert "was made with another judge (model 'qwen' there, None here; name 'llm' there, 'rules' here)" in proc.stderr


@pytest.mark.parametrize(("content", "problem"), [
    ("{", "line 1 column 2: invalid JSON"),
    ("[1, 2]", "not a calibration report written by 'factjudge calibrate -o' (a JSON object), got array"),
    ('{"labels": 3}', "not a calibration report written by 'factjudge calibrate -o': 'overall': Field required"),
    ('{"overall": {"tp": "2", "fp": 0, "fn": 0, "tn": 0}}', "'overall.tp': Input should be a valid integer"),
    ('{"overall": {"tp": 2, "fp": -1, "fn": 0, "tn": 0}}', "'overall.fp': Input should be greater than or equal to 0"),
    ('{"overall": {"tp": 0, "fp": 3, "fn": 2, "tn": 1}}', "made no link the labels confirm (tp 0 of 6 scored)"),
    # beyond float range: was an OverflowError traceback once every question was paid for
    ('{"overall": {"tp": 1%s, "fp": 1, "fn": 1, "tn": 1}}' % ("0" * 400),
     "'overall.tp': Input should be less than or equal to 9007199254740992"),
])
def test_a_bad_calibration_file_stops_before_any_judging(tmp_path, content, problem):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    cal = tmp_path / "CAL.json"
    cal.write_text(content)
    out = tmp_path / "out"
    proc = run_cli("eval", data, "-o", out, "--judge-calibration", cal)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"factjudge: error: {cal}: ")
    assert problem in proc.stderr
    assert not out.exists()


def test_a_missing_calibration_file(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    proc = run_cli("eval", data, "-o", tmp_path / "out", "--judge-calibration", tmp_path / "nope.json")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert str(tmp_path / "nope.json") in proc.stderr


def test_calibrate_text_is_stdout_whole_and_the_wrote_line_stderr_alone(tmp_path):
    """The text report on stdout, read separately and merged with stderr as a shell's ``2>&1``
    does (a real process: the buffers and ``os._exit``): whole, ending on its last line, and the
    ``wrote`` line on stderr on a line of its own after it."""
    labels, out = ROOT / "benchmarks" / "labelled" / "dev" / "finance.jsonl", tmp_path / "x.json"
    argv = [sys.executable, "-m", "factjudge", "calibrate", str(labels), "-o", str(out)]
    env = {**os.environ, "FACTJUDGE_CACHE_DIR": str(tmp_path / "cache")}
    apart = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert apart.returncode == 0, apart.stderr
    assert apart.stdout.startswith("calibration: 39 labels, 39 scored, 0 errors | accuracy ")
    assert "\n\nby category\ncategory " in apart.stdout and "\n\nby fact_type\nfact_type " in apart.stdout
    assert not apart.stdout.endswith("\n\n")  # no blank line left before the next output
    assert apart.stderr == f"wrote {out}\n"
    merged = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            timeout=120)
    assert merged.stdout == apart.stdout + apart.stderr
