"""``eval --mlflow`` against a real local MLflow file store (MLFLOW_TRACKING_URI a temporary folder),
read back with MLflow's own client: no mock. Skipped, with the reason, where the mlflow extra is
missing; there, ``--mlflow`` is one line and exit 2."""
import contextlib
import http.server
import importlib.util
import json
import socket
import threading
import time

import pytest
from evalkit import ROOT, run_cli
from example_truth import TRUTH
from scripted_server import Reply, ScriptedServer

from factjudge.reports.text import config_hash

HAS_MLFLOW = importlib.util.find_spec("mlflow") is not None
NO_MLFLOW = "needs the mlflow extra: pip install 'factjudge[mlflow]' (or mlflow-skinny)"


def dataset(tmp_path):
    gold = json.loads((ROOT / "examples" / "report_gold.json").read_text(encoding="utf-8"))
    pred = [json.loads(x) for x in (ROOT / "examples" / "report_predicted.jsonl").read_text().splitlines() if x]
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"doc_id": "contoso", "gold_facts": gold, "predicted_facts": pred}) + "\n",
                    encoding="utf-8")
    return data


@pytest.mark.skipif(HAS_MLFLOW, reason="mlflow is installed: the run is logged instead (test below)")
def test_without_the_extra_mlflow_is_one_line_and_nothing_is_judged(tmp_path):
    proc = run_cli("eval", dataset(tmp_path), "-o", tmp_path / "out", "--mlflow")
    assert proc.returncode == 2
    assert proc.stderr == ("factjudge: error: --mlflow needs MLflow, which is not installed: "
                           "pip install 'factjudge[mlflow]' (or pip install mlflow-skinny)\n")
    assert not (tmp_path / "out").exists()


@pytest.fixture
def store(tmp_path):
    """A local MLflow file store in a temporary folder, as MLflow's environment variables name it."""
    pytest.importorskip("mlflow", reason=NO_MLFLOW)
    uri = (tmp_path / "mlruns").as_uri()
    # MLflow 3 refuses a folder store unless told to (it prefers a database, which needs SQLAlchemy)
    return {"MLFLOW_TRACKING_URI": uri, "MLFLOW_ALLOW_FILE_STORE": "true", "MLFLOW_EXPERIMENT_NAME": "factjudge-test"}


def logged_runs(store):
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=store["MLFLOW_TRACKING_URI"])
    experiment = client.get_experiment_by_name(store["MLFLOW_EXPERIMENT_NAME"])
    return client, client.search_runs([experiment.experiment_id]) if experiment else []


def test_eval_logs_params_metrics_and_reports_to_a_local_store(tmp_path, store):
    out = tmp_path / "out"
    with ScriptedServer(truth=TRUTH) as server:
        server.faults[("gold", "g01")] = [Reply(content="nonsense")] * 20  # one ERROR fact
        proc = run_cli("eval", dataset(tmp_path), "-o", out, "--model", "m", "--base-url", server.base_url,
                       "--price-in", "2", "--price-out", "8", "--mlflow", env=store)
    assert proc.returncode == 1, proc.stderr  # the ERROR fact; the run is logged all the same
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    client, runs = logged_runs(store)
    assert len(runs) == 1 and f"logged to MLflow: run {runs[0].info.run_id}" in proc.stderr
    run = runs[0]
    params, metrics = run.data.params, run.data.metrics
    assert (params["judge"], params["model"]) == ("llm", "m")
    assert params["config_hash"] == config_hash(summary["config"]) and params["dataset"].endswith("data.jsonl")
    assert params["judge.temperature"] == json.dumps(summary["judge"]["temperature"])
    micro, ci = summary["micro"], summary["ci95"]
    for k in ("precision", "recall", "f1"):
        assert metrics[f"micro_{k}"] == pytest.approx(micro[k])
        assert metrics[f"macro_{k}"] == pytest.approx(summary["macro"][k])
        assert [metrics[f"micro_{k}_ci95_low"], metrics[f"micro_{k}_ci95_high"]] == pytest.approx(ci[k])
    assert metrics["errors"] == micro["errors"] == 1 and metrics["error_share"] > 0
    assert metrics["type/revenue/f1"] == pytest.approx(summary["by_fact_type"]["revenue"]["f1"])
    assert metrics["type/revenue/fn"] == summary["by_fact_type"]["revenue"]["fn"]
    assert metrics["usage_cost"] == pytest.approx(summary["usage"]["cost"]) and metrics["usage_cost"] > 0
    assert metrics["usage_llm_calls"] == summary["usage"]["llm_calls"] > 0
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"summary.json", "report.html", "report.md", "run.json"} <= names
    (tmp_path / "back").mkdir()
    got = client.download_artifacts(run.info.run_id, "summary.json", str(tmp_path / "back"))
    assert json.loads(open(got, encoding="utf-8").read()) == summary


def test_a_store_mlflow_refuses_is_one_line_after_the_outputs(tmp_path, store):
    out = tmp_path / "out"
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the store's folder should be", encoding="utf-8")
    env = {**store, "MLFLOW_TRACKING_URI": blocked.as_uri()}
    proc = run_cli("eval", dataset(tmp_path), "-o", out, "--mlflow", "-q", env=env)
    assert proc.returncode == 2 and (out / "report.html").exists()
    errors = [line for line in proc.stderr.splitlines() if line.startswith("factjudge: error:")]
    assert len(errors) == 1 and f"--mlflow: logging to MLflow at {blocked.as_uri()} failed" in errors[0], proc.stderr
    assert f"the outputs are kept in {out}" in errors[0] and "Traceback" not in proc.stderr


#: Fact types whose names MLflow refuses or merges once sanitised (issue 32, item 3).
HOSTILE_TYPES = ["revenue (USD)", "revenue [USD]", "rate/", "a//b", "..", ".", "a/../b", "/x", "x" * 400,
                 "rate:", "rate", "rate_", "revenue _USD_"]


def typed_dataset(tmp_path, types):
    """One document: a fact of each type, found (F1 1.0) for the even-numbered types and given a
    wrong value (F1 0.0) for the odd-numbered ones."""
    gold = [{"id": f"g{i}", "fact_type": t, "entity": "Contoso", "period": "FY2023", "value": str(i)}
            for i, t in enumerate(types)]
    pred = [{**g, "id": f"p{i}", "value": g["value"] if i % 2 == 0 else "999"} for i, g in enumerate(gold)]
    data = tmp_path / "types.jsonl"
    data.write_text(json.dumps({"doc_id": "d", "gold_facts": gold, "predicted_facts": pred}) + "\n", encoding="utf-8")
    return data


def test_per_type_metric_names_are_distinct_and_valid_for_any_type_name():
    """Every fact type gets its own metric names, each one MLflow's own check accepts."""
    pytest.importorskip("mlflow", reason=NO_MLFLOW)
    from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, _validate_metric_name

    from factjudge.cli.mlflow_hook import run_metrics, type_metric_names

    figures = {"precision": 1.0, "recall": 1.0, "f1": 1.0, "tp_gold": 1, "fn": 0, "tp_predicted": 1, "fp": 0}
    names = type_metric_names(HOSTILE_TYPES)
    assert sorted(names) == sorted(HOSTILE_TYPES) and len(set(names.values())) == len(HOSTILE_TYPES)
    metrics = run_metrics({"by_fact_type": {t: figures for t in HOSTILE_TYPES}})
    typed = [k for k in metrics if k.startswith("type/")]
    assert len(typed) == len(HOSTILE_TYPES) * 8
    for key in typed:
        _validate_metric_name(key)
        assert len(key) <= MAX_ENTITY_KEY_LENGTH
    assert names["rate"] == "rate" and metrics["type/rate/f1"] == 1.0  # a plain name is kept as it is


def test_types_that_sanitise_alike_are_logged_apart_with_their_names(tmp_path, store):
    out = tmp_path / "out"
    proc = run_cli("eval", typed_dataset(tmp_path, HOSTILE_TYPES), "-o", out, "--mlflow", "-q", env=store)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    client, runs = logged_runs(store)
    assert len(runs) == 1
    metrics = runs[0].data.metrics
    (tmp_path / "back").mkdir()
    got = client.download_artifacts(runs[0].info.run_id, "fact_types.json", str(tmp_path / "back"))
    names = json.loads(open(got, encoding="utf-8").read())
    assert sorted(names) == sorted(HOSTILE_TYPES)
    for fact_type in HOSTILE_TYPES:
        assert metrics[f"type/{names[fact_type]}/f1"] == summary["by_fact_type"][fact_type]["f1"]
    assert metrics[f"type/{names['revenue (USD)']}/f1"] == 1.0 and metrics[f"type/{names['revenue [USD]']}/f1"] == 0.0


@contextlib.contextmanager
def silent_tracking_server():
    """A tracking server on 127.0.0.1 that takes connections and never answers (its backlog
    completes the handshake; nothing ever reads the request)."""
    with socket.create_server(("127.0.0.1", 0), backlog=64) as sock:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


class _Unavailable(http.server.BaseHTTPRequestHandler):
    def _refuse(self):
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _refuse

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def unavailable_tracking_server():
    """A tracking server on 127.0.0.1 answering 503 to every request."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def eval_into(tmp_path, store, uri, *args):
    """``eval --mlflow`` (rules judge) logging to ``uri``; the process and its seconds."""
    started = time.monotonic()
    proc = run_cli("eval", dataset(tmp_path), "-o", tmp_path / "out", "--mlflow", "-q", *args,
                   env={**store, "MLFLOW_TRACKING_URI": uri})
    return proc, time.monotonic() - started


def assert_outputs_kept(tmp_path, proc):
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["documents"] == 1 and (out / "report.html").stat().st_size > 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("factjudge: error:")]
    assert len(errors) == 1 and errors[0].endswith(f"the outputs are kept in {out}"), proc.stderr
    assert "Traceback" not in proc.stderr
    return errors[0]


def test_a_tracking_server_that_never_answers_is_given_up_on_in_bounded_time(tmp_path, store):
    """Issue 32, item 9: it kept eval running over 20 minutes after the outputs were written.
    factjudge's own MLflow defaults (10 s a request, one retry) end it in about 25 s."""
    with silent_tracking_server() as uri:
        proc, seconds = eval_into(tmp_path, store, uri)
    assert proc.returncode == 2 and seconds < 40, (seconds, proc.stderr)
    error = assert_outputs_kept(tmp_path, proc)
    assert f"logging to MLflow at {uri} failed" in error


def test_a_tracking_server_answering_503_is_given_up_on_in_seconds(tmp_path, store):
    """It took 248 s (MLflow's 7 retries with backoff)."""
    with unavailable_tracking_server() as uri:
        proc, seconds = eval_into(tmp_path, store, uri)
    assert proc.returncode == 2 and seconds < 15, (seconds, proc.stderr)
    assert "503" in assert_outputs_kept(tmp_path, proc)


def test_past_the_deadline_logging_stops_whatever_mlflow_is_told(tmp_path, store, monkeypatch):
    """The user's own MLFLOW_HTTP_REQUEST_TIMEOUT is respected; the deadline still ends the run."""
    from factjudge.cli import mlflow_hook

    monkeypatch.setattr(mlflow_hook, "DEADLINE_SECONDS", 2)
    with silent_tracking_server() as uri:
        proc, seconds = eval_into(tmp_path, {**store, "MLFLOW_HTTP_REQUEST_TIMEOUT": "120"}, uri)
    assert proc.returncode == 2 and seconds < 10, (seconds, proc.stderr)
    assert "MLflow did not finish within 2 s" in assert_outputs_kept(tmp_path, proc)


@pytest.mark.parametrize("tracking", ["a file for a folder store", "a server answering 503"])
def test_a_failing_mlflow_keeps_the_gate_exit_code(tmp_path, store, tracking):
    """Issue 32 (Low): a failing --mlflow hid the gate's exit 3 (exit 2); the run's verdict wins."""
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the store's folder should be", encoding="utf-8")
    with contextlib.ExitStack() as stack:
        uri = stack.enter_context(unavailable_tracking_server()) if "503" in tracking else blocked.as_uri()
        proc, _ = eval_into(tmp_path, store, uri, "--fail-under-f1", "1")
    assert proc.returncode == 3, proc.stderr
    assert "below the gate: micro f1" in proc.stderr
    assert_outputs_kept(tmp_path, proc)
