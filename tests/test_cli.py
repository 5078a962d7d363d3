"""The command line, run as a real process: exit codes, stdout JSON, one-line errors on stderr."""
import json
import os
import subprocess
import sys

import pytest

from scripted_server import Reply

GOLD = [{"id": "g1", "fact_type": "revenue", "value": "10"}, {"id": 2, "fact_type": "misc", "x": 1}]
PRED = [{"id": "p1", "fact_type": "revenue", "value": "10"}]


def run_cli(*args, env=None):
    full_env = {**os.environ, **(env or {})}
    full_env.pop("OPENAI_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "factjudge", *map(str, args)], capture_output=True,
                          text=True, env=full_env, timeout=120)


@pytest.fixture
def files(write_json, tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("entity_types: [revenue]\n", encoding="utf-8")
    return write_json("gold.json", GOLD), write_json("pred.jsonl", PRED), cfg


def test_llm_run_writes_json_to_stdout_and_summary_to_stderr(server, files):
    gold, pred, cfg = files
    server.truth = {("gold", "g1"): "p1", ("predicted", "p1"): "g1"}
    proc = run_cli("judge", gold, pred, "--config", cfg, "--model", "m", "--base-url", server.base_url)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"gold_facts", "predicted_facts", "metrics", "dedup_notes", "conflicts",
                        "usage", "config"}
    assert [f["status"] for f in out["gold_facts"]] == ["TP", "OUT_OF_SCOPE"]
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
    assert data["gold_facts"][0]["status"] == "ERROR" and data["metrics"]["errors"] == 1
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
