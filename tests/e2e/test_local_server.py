"""Issue #36 item 3: a local server works the first time. A cold server is waited for (llama.cpp's
``/health`` says 503 "Loading model" while it loads), a silent one is asked again with a longer
timeout instead of timing out real questions, and the questions in flight keep to the slots its
``/props`` gives (llama.cpp's ``total_slots``; else the length of ``/slots``)."""
from __future__ import annotations

import json

from evalkit import fact, run_cli, write_jsonl
from scripted_server import ScriptedServer

DOC = {"doc_id": "d", "gold_facts": [fact(f"g{i}", value=str(i)) for i in range(6)],
       "predicted_facts": [fact(f"p{i}", value=str(i)) for i in range(6)]}
TRUTH = {**{("gold", f"g{i}"): f"p{i}" for i in range(6)}, **{("predicted", f"p{i}"): f"g{i}" for i in range(6)}}


def run(tmp_path, server, *args, timeout="1"):
    tmp_path.mkdir(exist_ok=True)
    data = write_jsonl(tmp_path / "data.jsonl", [DOC])
    proc = run_cli("eval", data, "--model", "m", "--base-url", server.base_url, "--timeout", timeout, *args,
                   "-o", tmp_path / "out")
    summary = (json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
               if (tmp_path / "out" / "summary.json").exists() else None)
    return proc, summary


def test_a_cold_llama_server_is_waited_for_and_no_fact_is_error(tmp_path):
    # /health asked again every second while it says 503: loading for under one, the second answers 200
    server = ScriptedServer(truth=TRUTH)
    server.llama_health, server.loading_seconds = True, 0.8
    with server:
        proc, summary = run(tmp_path, server)
    assert proc.returncode == 0, proc.stderr
    assert summary["micro"]["errors"] == 0 and summary["micro"]["tp_gold"] == 6
    assert "waiting for the server at 127.0.0.1" in proc.stderr and "to load its model" in proc.stderr
    assert "ready after" in proc.stderr
    assert server.probes[0] == "/health"


def test_a_server_silent_for_its_first_seconds_makes_no_error(tmp_path):
    """No /health at all (not llama.cpp): its first answers come 1.6 s after it started, beyond
    --timeout 0.3 and the question's 0.9 s; the request goes again with 0.6 s, then 1.2 s (the
    third try answered whenever the first question was sent in its first 0.5 s)."""
    server = ScriptedServer(truth=TRUTH)
    server.loading_seconds = 1.6
    with server:
        proc, summary = run(tmp_path, server, "--concurrency", "2", timeout="0.3")
    assert proc.returncode == 0, proc.stderr
    assert summary["micro"]["errors"] == 0 and summary["micro"]["tp_gold"] == 6
    assert proc.stderr.count("asking again with up to") == 1  # said once
    assert summary["usage"]["retries"] >= 2 and "retries" in proc.stderr


def test_the_slots_are_read_from_props_and_kept_to(tmp_path):
    server = ScriptedServer(truth=TRUTH, delay=0.2)
    server.llama_health, server.props = True, {"total_slots": 2, "default_generation_settings": {"n_ctx": 4096}}
    with server:
        proc, _ = run(tmp_path, server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("has 2 slot(s) (its /props)") == 1
    assert server.max_in_flight == 2  # not the 8 questions of the default concurrency


def test_slots_from_the_slot_list_and_a_given_concurrency_wins(tmp_path):
    server = ScriptedServer(truth=TRUTH, delay=0.2)
    server.llama_health, server.slot_list = True, [{"id": 0}, {"id": 1}, {"id": 2}]
    with server:
        proc, _ = run(tmp_path, server)
        assert "has 3 slot(s)" in proc.stderr and server.max_in_flight == 3
        server.max_in_flight = 0
        proc, _ = run(tmp_path / "again", server, "--concurrency", "5", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    assert "slot(s)" not in proc.stderr and server.max_in_flight > 3
