"""Mistakes a new user makes: each one is caught or explained, never a silently wrong score."""
import json

from evalkit import ROOT, run_cli

from factjudge import run_judge

GOLD = [{"id": "g1", "fact_type": "revenue", "entity": "Contoso", "value": "12.5"},
        {"id": "g2", "fact_type": "ceo", "name": "Jane Doe"}]
PRED = [{"id": "p1", "fact_type": "revenue", "entity": "Contoso", "value": "12.5"},
        {"id": "p2", "fact_type": "ceo", "name": "Jane Doe"}]


def cli(*args, cwd=None):
    return run_cli(*args, cwd=cwd)


def test_extra_metadata_on_predictions_does_not_zero_the_score():
    noisy = [{**p, "confidence": 0.9, "page": 3} for p in PRED]
    result = run_judge(GOLD, noisy, {})
    assert result.metrics.f1 == 1.0
    # the confidence is the extractor's (summary.json measures it), not a field to warn about
    assert result.warnings == [
        "ceo: predicted facts carry page, which no gold fact of this type has: not "
        "compared (set 'fields' to compare them)",
        "revenue: predicted facts carry page, which no gold fact of this type has: not "
        "compared (set 'fields' to compare them)"]
    # 'fields' still decides when given
    assert run_judge(GOLD, noisy, {"fields": ["value", "confidence"]}).metrics.tp_gold == 0


def test_gold_fields_missing_from_predictions_are_named_and_compared():
    bare = [{k: v for k, v in p.items() if k != "entity"} for p in PRED]
    result = run_judge(GOLD, bare, {})
    assert "revenue: gold facts carry entity, which no predicted fact of this type has" in result.warnings[0]
    assert [f["factjudge"]["status"] for f in result.gold_facts] == ["FN", "TP"]


def test_a_misspelled_entity_type_warns_and_nothing_in_scope_stops(write_json, tmp_path):
    g, p = write_json("g.json", GOLD), write_json("p.json", PRED)
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps({"entity_types": ["revenu"]}))
    proc = cli("judge", g, p, "-c", typo, "-o", tmp_path / "out.json")
    assert proc.returncode == 2 and not (tmp_path / "out.json").exists()
    assert proc.stderr.startswith("factjudge: error: ") and "no fact is in scope" in proc.stderr
    half = tmp_path / "half.json"
    half.write_text(json.dumps({"entity_types": ["revenu", "ceo"]}))
    proc = cli("judge", g, p, "-c", half, "-o", tmp_path / "out.json")
    assert proc.returncode == 0
    assert "factjudge: warning: entity_types 'revenu' matches no fact in" in proc.stderr
    assert "(did you mean 'revenue'?)" in proc.stderr
    out = json.loads((tmp_path / "out.json").read_text())
    assert any("'revenu'" in w for w in out["warnings"])
    # both inputs empty: nothing to judge is not a mistake
    e1, e2 = write_json("e1.json", []), write_json("e2.json", [])
    assert cli("judge", e1, e2, "-c", typo, "-q").returncode == 0


def test_reasoning_never_contradicts_the_status_unexplained():
    from factjudge import JudgeBase, Verdict

    class Stubborn(JudgeBase):
        """Gold side: g1 is FN; predicted side: p1 matches g1 (the predicted side promotes)."""
        name = "stubborn"

        async def judge(self, task):
            if task.direction == "gold":
                return Verdict(fact_id=task.subject_id, status="FN", reasoning="FN: no match")
            return Verdict(fact_id=task.subject_id, status="TP", matched_id="g1",
                           reasoning="TP: matches g1")

    result = run_judge(GOLD[:1], PRED[:1], {}, Stubborn())
    g = result.gold_facts[0]
    assert g["factjudge"]["status"] == "TP" and g["factjudge"]["reasoning"] == "FN: no match"
    assert g["factjudge"]["description"].startswith("final: TP with p1 (its own pass said FN)")
    assert g["factjudge"]["linked_reasoning"] == {"p1": "TP: matches g1"}
    assert result.predicted_facts[0]["factjudge"]["linked_reasoning"] == {"g1": "FN: no match"}


def test_text_threshold_on_the_wrong_scale_is_an_error(write_json, tmp_path):
    g, p = write_json("g.json", GOLD), write_json("p.json", PRED)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("text_threshold: 0.9\n")
    proc = cli("judge", g, p, "-c", cfg)
    assert proc.returncode == 2 and "0-100 scale" in proc.stderr and proc.stderr.count("\n") == 1


def test_messages_version_and_one_output_option(write_json, tmp_path):
    from factjudge import __version__
    assert cli("--version").stdout.strip() == f"factjudge {__version__}"
    g, p = write_json("g.json", GOLD), write_json("p.json", PRED)
    for flag in ("-o", "--output", "--output-dir"):
        assert cli("judge", g, p, flag, tmp_path / f"{flag}.json", "-q").returncode == 0
    assert cli("eval", ROOT / "examples" / "dataset.jsonl", "--output", tmp_path / "ev", "-q").returncode == 0
    bad = cli("judge", g, p, "--concurrency", "0")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("factjudge: error: Invalid value for '--concurrency'")
    assert cli("judge", g, p, "-o", g).returncode == 2  # never overwrite an input
    assert json.loads(g.read_text()) == GOLD


def test_a_dataset_given_to_judge_and_facts_given_to_eval_name_the_right_command(tmp_path):
    proc = cli("judge", ROOT / "examples" / "dataset.jsonl", ROOT / "examples" / "report_predicted.jsonl")
    assert proc.returncode == 2 and "score it with factjudge eval FILE" in proc.stderr
    proc = cli("eval", ROOT / "examples" / "report_predicted.jsonl", "-o", tmp_path / "o")
    assert proc.returncode == 2 and "--gold G --predicted P" in proc.stderr
