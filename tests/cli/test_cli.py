"""The command line: exit codes, stdout JSON, one-line errors on stderr (in this process; the first
test runs a real one, whose outputs must survive main()'s os._exit)."""
import json

import pytest
from evalkit import run_cli
from scripted_server import Reply

GOLD = [{"id": "g1", "fact_type": "revenue", "value": "10"}, {"id": 2, "fact_type": "misc", "x": 1}]
PRED = [{"id": "p1", "fact_type": "revenue", "value": "10"}]


@pytest.fixture
def files(write_json, tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("entity_types: [revenue]\n", encoding="utf-8")
    return write_json("gold.json", GOLD), write_json("pred.jsonl", PRED), cfg


def test_llm_run_writes_json_to_stdout_and_summary_to_stderr(server, files):
    gold, pred, cfg = files
    server.truth = {("gold", "g1"): "p1", ("predicted", "p1"): "g1"}
    proc = run_cli("judge", gold, pred, "--config", cfg, "--model", "m", "--base-url", server.base_url,
                   real_process=True)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"gold_facts", "predicted_facts", "metrics", "dedup_notes", "conflicts",
                        "warnings", "usage", "config", "analysis"}
    assert [f["factjudge"]["status"] for f in out["gold_facts"]] == ["TP", "OUT_OF_SCOPE"]
    assert out["gold_facts"][1]["id"] == "2"
    assert out["metrics"]["f1"] == 1.0 and out["usage"]["llm_calls"] == 2
    assert "P 1.000 R 1.000 F1 1.000" in proc.stderr and "2 calls" in proc.stderr


def test_output_file_and_exit_1_on_error_facts(server, files, tmp_path):
    gold, pred, cfg = files
    server.truth = {("predicted", "p1"): "g1"}
    server.faults[("gold", "g1")] = [Reply(content="nonsense")] * 3
    out = tmp_path / "res" / "out.json"
    proc = run_cli("judge", gold, pred, "-c", cfg, "--judge", "llm", "--model", "m",
                   "--base-url", server.base_url, "-o", out)
    assert proc.returncode == 1
    assert proc.stdout == ""
    data = json.loads(out.read_text())
    assert data["gold_facts"][0]["factjudge"]["status"] == "ERROR" and data["metrics"]["errors"] == 1
    assert "could not be judged" in proc.stderr


@pytest.mark.parametrize("mutate, message", [
    (lambda g, p, c: g.write_text("[{]"), "gold.json: line 1 column 3: invalid JSON"),
    (lambda g, p, c: p.write_text('{"id": "p1"}\n'), "pred.jsonl: line 1 (id 'p1'): missing or empty 'fact_type'"),
    (lambda g, p, c: c.write_text("entity_typs: [a]\n"), "cfg.yaml: unknown config key 'entity_typs'"),
    (lambda g, p, c: c.write_text("one_to_one: maybe\n"), "cfg.yaml: config key 'one_to_one'"),
])
def test_bad_input_exits_2_with_one_line(files, mutate, message):
    gold, pred, cfg = files
    mutate(gold, pred, cfg)
    proc = run_cli("judge", gold, pred, "-c", cfg)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr


def test_usage_errors_exit_2(files):
    gold, pred, _ = files
    assert run_cli("judge", gold).returncode == 2
    proc = run_cli("judge", gold, pred, "--judge", "llm")
    assert proc.returncode == 2 and "--model" in proc.stderr
    proc = run_cli("judge", gold, pred, "--model", "gpt-4o-mini")
    assert proc.returncode == 2 and "OPENAI_API_KEY" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert run_cli("judge", gold, pred, "--concurrency", "0").returncode == 2


def test_help_names_the_extras_to_install():
    """Help text is Rich markup: an unescaped [openai] was taken for a tag and vanished, leaving
    "pip install 'factjudge'"."""
    proc = run_cli("eval", "--help", env={"COLUMNS": "250"})
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.replace("│", " ").split())
    assert "pip install 'factjudge[openai]'" in text and "pip install 'factjudge[mlflow]'" in text
    assert "'factjudge'" not in text and "\\[" not in text


def test_refused_key_or_model_stops_with_one_line(server, files, tmp_path):
    gold, pred, cfg = files
    server.faults[("gold", "g1")] = [Reply(status=404, body=json.dumps(
        {"error": {"message": "The model `nope` does not exist"}}))]
    out = tmp_path / "out.json"
    proc = run_cli("judge", gold, pred, "-c", cfg, "--model", "nope", "--base-url", server.base_url,
                   "-o", out)
    assert proc.returncode == 2 and not out.exists()
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "404" in lines[0] and "does not exist" in lines[0]
    assert "no output written" in lines[0] and "Traceback" not in proc.stderr


def test_an_unwritable_output_is_refused_before_any_call(server, files, tmp_path):
    gold, pred, cfg = files
    for bad in (tmp_path, tmp_path / "file.txt" / "out.json"):
        (tmp_path / "file.txt").write_text("x")
        proc = run_cli("judge", gold, pred, "-c", cfg, "--model", "m", "--base-url", server.base_url,
                       "-o", bad)
        assert proc.returncode == 2 and str(bad) in proc.stderr and "Traceback" not in proc.stderr
    assert server.requests == []


def test_a_named_key_variable_that_is_unset_is_a_usage_error(server, files):
    gold, pred, cfg = files
    proc = run_cli("judge", gold, pred, "--model", "m", "--base-url", server.base_url,
                   "--api-key-env", "FACTJUDGE_TEST_NO_SUCH_KEY")
    assert proc.returncode == 2 and "FACTJUDGE_TEST_NO_SUCH_KEY is not set" in proc.stderr
    assert server.requests == []
