"""Provider batch APIs: ``eval --batch-export``, ``factjudge batch-import``, ``eval --batch``.

The CLI runs in this process (as a real one where a run is killed); the provider is the scripted
server, whose Files and Batches endpoints answer batch lines with the same truth table and faults
as live requests. The reference for every end-to-end test is a plain live run: a batch run must
write the same files (but for ``usage``: what the run cost)."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import evalkit
import pytest
from evalkit import CALLS, CONFIG, DOCS, TRUTH, read_lines, without_usage, write_jsonl
from scripted_server import Reply, ScriptedServer, answer, describe, http_error

from factjudge.judges.llm.batch_api import ENDPOINT
from factjudge.judges.llm.batch_lines import PieceWriter, QuestionStore
from factjudge.judges.llm.cache import ResponseCache

HEX64 = re.compile(r"^[0-9a-f]{64}$")
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[^<\"]*")  # when a report was made


def run_cli(*args, cache_dir, timeout=180):
    return evalkit.run_cli(*args, cache_dir=cache_dir, timeout=timeout)  # in this process


@pytest.fixture
def setup(tmp_path, server):
    """(eval arguments without -o, a live reference folder, the server)."""
    server.truth = TRUTH
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(CONFIG), encoding="utf-8")
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    args = ["eval", data, "-c", cfg, "--model", "m", "--base-url", server.base_url]
    ref = tmp_path / "reference"
    proc = run_cli(*args, "--no-cache", "-o", ref, cache_dir=tmp_path / "unused")
    assert proc.returncode == 0, proc.stderr
    server.live_reference = list(server.requests)
    server.requests.clear()
    server.usage_log.clear()
    return args, ref, server


def same_outputs(out, ref):
    assert without_usage(read_lines(out / "results.jsonl")) == without_usage(read_lines(ref / "results.jsonl"))
    s1, s2 = (json.loads((d / "summary.json").read_text()) for d in (out, ref))
    assert without_usage(s1) == without_usage(s2)
    md1, md2 = ((d / "report.md").read_text().split("## Usage")[0] for d in (out, ref))
    assert md1 == md2
    h1, h2 = (STAMP.sub("", (d / "report.html").read_text().split("<h2>Usage</h2>")[0]) for d in (out, ref))
    assert h1 == h2


def canon(body):
    return json.dumps(body, sort_keys=True)


def subject_doc(subject_id):
    return subject_id.split("-")[0]


def completion_line(custom_id, content, status=200):
    body = {"id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}]}
    if status != 200:
        body = {"error": {"message": f"scripted {status}"}}
    return {"id": f"r-{custom_id[:6]}", "custom_id": custom_id,
            "response": {"status_code": status, "request_id": "r", "body": body}, "error": None}


def truthful(line):
    direction, subject, _ = describe(line["body"])
    return answer(direction, subject, TRUTH.get((direction, subject))).content


# --------------------------------------------------------------------------- export


def test_export_writes_every_live_request_once_and_changes_nothing(setup, tmp_path):
    args, ref, server = setup
    cache, out, file = tmp_path / "cache", tmp_path / "out", tmp_path / "batch.jsonl"
    proc = run_cli(*args, "-o", out, "--batch-export", file, cache_dir=cache)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {CALLS} question(s) to {file}" in proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1])["lines"] == CALLS
    assert server.requests == [] and not out.exists()  # nothing asked, no output folder made

    lines = read_lines(file)
    assert len(lines) == CALLS
    assert all(set(x) == {"custom_id", "method", "url", "body"} and x["method"] == "POST"
               and x["url"] == ENDPOINT and HEX64.match(x["custom_id"]) for x in lines)
    assert len({x["custom_id"] for x in lines}) == CALLS
    # exactly the requests of the live run (which asked each question once)
    assert sorted(canon(x["body"]) for x in lines) == sorted(canon(b) for b in server.live_reference)
    # lines of one document and direction are adjacent
    groups = [(subject_doc(describe(x["body"])[1]), describe(x["body"])[0]) for x in lines]
    runs = [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g]
    assert len(runs) == len(set(runs))
    # the context of each question is in the response cache's file, for the import
    store = QuestionStore(ResponseCache(cache))
    q = store.get(lines[0]["custom_id"])
    assert q is not None and (q.task.direction, q.task.subject_id) == describe(lines[0]["body"])[:2]
    assert q.task.candidate_ids == describe(lines[0]["body"])[2]


def test_export_skips_finished_documents_without_touching_the_folder(setup, tmp_path):
    args, ref, server = setup
    out, file = tmp_path / "out", tmp_path / "batch.jsonl"
    data = args[1]
    write_jsonl(data, DOCS[:3])  # A, B and C finished (with their own response cache)
    assert run_cli(*args, "-o", out, cache_dir=tmp_path / "other").returncode == 0
    write_jsonl(data, DOCS)
    with (out / "results.jsonl").open("ab") as fh:
        fh.write(b'{"doc_id": "D", "cut off by a ki')  # a killed run's last line: eval would cut it
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    server.requests.clear()
    proc = run_cli(*args, "-o", out, "--batch-export", file, cache_dir=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert {subject_doc(describe(x["body"])[1]) for x in read_lines(file)} == {"d", "e"}
    assert len(read_lines(file)) == 2 + 3
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert server.requests == []


@pytest.mark.parametrize("extra, message", [
    ([], "needs an LLM judge"),
    (["--model", "m", "--no-cache"], "needs the response cache"),
    (["--model", "m", "--dry-run"], "drop it with --batch-export"),
])
def test_export_usage_errors_are_one_line(tmp_path, extra, message):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    proc = run_cli("eval", data, "-o", tmp_path / "out", "--batch-export", tmp_path / "b.jsonl", *extra,
                   "--base-url", "http://127.0.0.1:9/v1", cache_dir=tmp_path / "cache") if extra else \
        run_cli("eval", data, "-o", tmp_path / "out", "--batch-export", tmp_path / "b.jsonl",
                cache_dir=tmp_path / "cache")
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "b.jsonl").exists()


def test_export_needs_no_api_key(tmp_path):
    """An export calls nothing: the default OpenAI server and no OPENAI_API_KEY is fine."""
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    proc = run_cli("eval", data, "-o", tmp_path / "out", "--model", "gpt-4o-mini", "--batch-export",
                   tmp_path / "b.jsonl", cache_dir=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert all(x["body"]["model"] == "gpt-4o-mini" for x in read_lines(tmp_path / "b.jsonl"))


def test_hybrid_export_holds_only_what_the_llm_would_be_asked(setup, tmp_path):
    args, ref, server = setup
    assert run_cli(*args, "--judge", "hybrid", "--no-cache", "-o", tmp_path / "h",
                   cache_dir=tmp_path / "x").returncode == 0
    live = sorted(canon(b) for b in server.requests)
    assert 0 < len(live) < CALLS
    proc = run_cli(*args, "--judge", "hybrid", "-o", tmp_path / "out", "--batch-export",
                   tmp_path / "b.jsonl", cache_dir=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert sorted(canon(x["body"]) for x in read_lines(tmp_path / "b.jsonl")) == live


def test_files_are_split_within_the_limits_keeping_groups_together(tmp_path):
    path = tmp_path / "in.jsonl"
    (tmp_path / "in.jsonl.5").write_text("stale\n")  # left by an earlier, larger export
    writer = PieceWriter(path, max_lines=3, max_bytes=10_000)
    for group, size in enumerate([2, 2, 5, 1]):
        for i in range(size):
            writer.add(f'{{"g": {group}, "i": {i}}}\n'.encode())
        writer.end_group()
    files = writer.finish()
    assert [f.name for f in files] == ["in.jsonl", "in.jsonl.2", "in.jsonl.3", "in.jsonl.4"]
    content = [[json.loads(x)["g"] for x in f.read_text().splitlines()] for f in files]
    # a group that fits in one file is never split; a larger one fills files in order
    assert content == [[0, 0], [1, 1, 2], [2, 2, 2], [2, 3]]
    assert not (tmp_path / "in.jsonl.5").exists()
    assert not list(tmp_path.glob(".*.tmp"))

    writer = PieceWriter(path, max_lines=100, max_bytes=26)  # 13 bytes a line: 2 per file
    for i in range(5):
        writer.add(f'{{"i": {i:05d}}}\n'.encode())
        writer.end_group()
    files = writer.finish()
    assert [len(f.read_bytes().splitlines()) for f in files] == [2, 2, 1]
    assert all(len(f.read_bytes()) <= 26 for f in files)
    assert not (tmp_path / "in.jsonl.4").exists()  # the earlier export's extra piece is gone

    writer = PieceWriter(path)
    assert writer.finish() == [path] and path.read_bytes() == b""  # nothing to ask: an empty file


# --------------------------------------------------------------------------- import


def test_export_import_eval_writes_what_a_live_run_writes(setup, tmp_path):
    args, ref, server = setup
    cache, out = tmp_path / "cache", tmp_path / "out"
    export = [*args, "-o", out, "--batch-export"]
    assert run_cli(*export, tmp_path / "round1.jsonl", cache_dir=cache).returncode == 0
    lines = read_lines(tmp_path / "round1.jsonl")

    # the batch: two invalid answers, one failed request, one line of another export
    bad = {lines[0]["custom_id"]: "nonsense", lines[3]["custom_id"]: json.dumps(
        {"gold_fact_id": "wrong", "reasoning": "r", "matched_predicted_id": None})}
    failed = lines[5]["custom_id"]
    output = [completion_line(x["custom_id"], bad.get(x["custom_id"]) or truthful(x),
                              500 if x["custom_id"] == failed else 200) for x in lines]
    output.append(completion_line("f" * 64, "{}"))
    write_jsonl(tmp_path / "output1.jsonl", output)

    proc = run_cli("batch-import", tmp_path / "output1.jsonl", cache_dir=cache)
    assert proc.returncode == 0, proc.stderr
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert counts == {"lines": CALLS + 1, "stored": CALLS - 3, "already_present": 0, "invalid": 2,
                      "errors": 1, "unknown": 1}
    assert "the answer is not valid JSON" in proc.stderr and "HTTP 500: scripted 500" in proc.stderr
    # importing the same file again changes nothing
    proc = run_cli("batch-import", tmp_path / "output1.jsonl", cache_dir=cache)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "lines": CALLS + 1, "stored": 0, "already_present": CALLS - 3, "invalid": 2, "errors": 1, "unknown": 1}

    # the next export holds exactly the three unanswered questions; invalid ones with the live re-ask
    assert run_cli(*export, tmp_path / "round2.jsonl", cache_dir=cache).returncode == 0
    again = {x["custom_id"]: x for x in read_lines(tmp_path / "round2.jsonl")}
    assert set(again) == set(bad) | {failed}
    for cid in bad:
        messages = again[cid]["body"]["messages"]
        assert messages[3] == {"role": "assistant", "content": bad[cid]}
        assert messages[4]["content"].startswith("Your answer was invalid: ")
        assert messages[:3] == next(x for x in lines if x["custom_id"] == cid)["body"]["messages"]
    assert again[failed]["body"] == next(x for x in lines if x["custom_id"] == failed)["body"]
    write_jsonl(tmp_path / "output2.jsonl", [completion_line(c, truthful(x)) for c, x in again.items()])
    assert run_cli("batch-import", tmp_path / "output2.jsonl", cache_dir=cache).returncode == 0
    proc = run_cli(*export, tmp_path / "round3.jsonl", cache_dir=cache)
    assert "wrote 0 question(s)" in proc.stderr and read_lines(tmp_path / "round3.jsonl") == []

    # the same eval now asks nothing and writes what the live run wrote
    proc = run_cli(*args, "-o", out, cache_dir=cache)
    assert proc.returncode == 0, proc.stderr
    assert server.requests == []
    same_outputs(out, ref)


def test_bad_output_lines_stop_the_import_before_anything_is_stored(setup, tmp_path):
    args, ref, server = setup
    cache = tmp_path / "cache"
    file = tmp_path / "in.jsonl"
    assert run_cli(*args, "-o", tmp_path / "out", "--batch-export", file, cache_dir=cache).returncode == 0
    lines = read_lines(file)
    good = completion_line(lines[0]["custom_id"], truthful(lines[0]))
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps(good) + "\n" + '{"custom_id": "x", "respo\n', encoding="utf-8")
    proc = run_cli("batch-import", out, cache_dir=cache)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"factjudge: error: {out}: line 2: not JSON (is this a batch output file?)"
    proc = run_cli("batch-import", file, cache_dir=cache)  # the input file by mistake
    assert proc.returncode == 2 and "line 1: a batch input line, not an output line" in proc.stderr
    out.write_text(json.dumps(good) + "\n", encoding="utf-8")
    proc = run_cli("batch-import", out, cache_dir=cache)
    assert json.loads(proc.stdout.strip().splitlines()[-1])["stored"] == 1  # nothing was stored before
    # vLLM's run_batch reports a failed request with an error string
    failed = tmp_path / "failed.jsonl"
    write_jsonl(failed, [{"id": "v", "custom_id": lines[1]["custom_id"], "response": None,
                          "error": "The model `x` does not exist."}])
    proc = run_cli("batch-import", failed, cache_dir=cache)
    assert proc.returncode == 0 and json.loads(proc.stdout.strip().splitlines()[-1])["errors"] == 1
    assert "failed: " in proc.stderr and "The model `x` does not exist." in proc.stderr
    proc = run_cli("batch-import", out, cache_dir=tmp_path / "elsewhere")
    assert proc.returncode == 2 and "no response cache in" in proc.stderr
    other = tmp_path / "other"
    ResponseCache(other)
    proc = run_cli("batch-import", out, cache_dir=other)
    assert proc.returncode == 2 and "pass the --cache-dir the export used" in proc.stderr


# --------------------------------------------------------------------------- --batch


def batch_args(args, out, interval="0.01"):
    return [*args, "-o", out, "--batch", "--poll-interval", interval]


def test_batch_runs_on_the_server_and_writes_what_a_live_run_writes(setup, tmp_path):
    args, ref, server = setup
    cache, out = tmp_path / "cache", tmp_path / "out"
    server.faults[("gold", "a-g1")] = [Reply(content="nonsense")]       # invalid: asked again
    server.faults[("predicted", "e-p1")] = [http_error(500)]            # a failed request
    proc = run_cli(*batch_args(args, out), cache_dir=cache)
    assert proc.returncode == 0, proc.stderr
    assert server.requests == []  # every answer came through batches
    assert len(server.batches) == 2 and all(b["status"] == "completed" for b in server.batches.values())
    assert len(server.batch_requests) == CALLS + 2
    second = server.batch_requests[CALLS:]
    reask = next(b for b in second if describe(b)[:2] == ("gold", "a-g1"))
    assert reask["messages"][3]["content"] == "nonsense" and "invalid" in reask["messages"][4]["content"]
    assert {describe(b)[:2] for b in second} == {("gold", "a-g1"), ("predicted", "e-p1")}
    # uploads, creates and polls carry the judge's auth headers; multipart upload with purpose=batch
    assert ("POST", "/v1/files") in server.batch_calls and ("POST", "/v1/batches") in server.batch_calls
    state = json.loads((out / "batch.json").read_text())
    assert state["finished"] and [j["step"] for j in state["jobs"]] == ["done", "done"]
    assert state["jobs"][0]["imported"]["stored"] == CALLS - 2
    assert "batch round 1" in proc.stderr and "submitted batch batch_1" in proc.stderr
    same_outputs(out, ref)

    # the same command again: nothing to submit, nothing to ask, the same files
    before = {n: (out / n).read_bytes() for n in ("results.jsonl", "summary.json")}
    proc = run_cli(*batch_args(args, out), cache_dir=cache)
    assert proc.returncode == 0, proc.stderr
    assert len(server.batches) == 2 and server.requests == []
    assert {n: (out / n).read_bytes() for n in before} == before


def wait_for(predicate, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out")


def started_batch(out):
    try:
        state = json.loads((out / "batch.json").read_text())
    except (OSError, ValueError):
        return False
    return any(j.get("batch_id") for j in state["jobs"])


@pytest.mark.parametrize("cut", ["polling", "creating"])
def test_a_killed_batch_run_resumes_and_never_submits_twice(setup, tmp_path, cut):
    """Killed mid-poll; or (as if) killed after the server created the batch but before its id
    was saved: the run started again finds the batch instead of creating another."""
    args, ref, server = setup
    cache, out = tmp_path / "cache", tmp_path / "out"
    server.batch_hold = True
    env = {**os.environ, "FACTJUDGE_CACHE_DIR": str(cache)}
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.Popen([sys.executable, "-m", "factjudge", *map(str, batch_args(args, out, "0.02"))],
                            env=env, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: started_batch(out) and len(server.batch_calls) >= 6)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert len(server.batches) == 1 and not (out / "summary.json").exists()
    if cut == "polling":  # another judge may not take over the folder's unfinished batch
        proc = run_cli(*batch_args(args, out), "--temperature", "0.5", cache_dir=cache)
        assert proc.returncode == 2 and "unfinished batches (batch_1) of another judge" in proc.stderr
        assert len(server.batches) == 1
    if cut == "creating":
        state = json.loads((out / "batch.json").read_text())
        state["jobs"][0].update(step="creating", batch_id=None, status=None)
        (out / "batch.json").write_text(json.dumps(state))
    server.batch_hold = False
    proc = run_cli(*batch_args(args, out), cache_dir=cache)
    assert proc.returncode == 0, proc.stderr
    assert len(server.batches) == 1 and len(server.files) == 1 + 1  # one input, one output file
    assert server.requests == []
    same_outputs(out, ref)


def test_a_batch_run_keeps_the_config_it_started_with(setup, tmp_path):
    """The config is read once per run: a file changed while the batch runs does not change what
    its live phase judges with (read again, a broken file stopped the run after the batches were
    paid for; another config asked every question again live)."""
    args, ref, server = setup
    cache, out = tmp_path / "cache", tmp_path / "out"
    server.batch_hold = True
    env = {**os.environ, "FACTJUDGE_CACHE_DIR": str(cache)}
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.Popen([sys.executable, "-m", "factjudge", *map(str, batch_args(args, out, "0.02"))],
                            env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        wait_for(lambda: started_batch(out) and len(server.batch_calls) >= 6)
        (tmp_path / "cfg.json").write_text(json.dumps({**CONFIG, "no_such_key": 1}), encoding="utf-8")
        server.batch_hold = False
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert server.requests == [] and len(server.batches) == 1
    same_outputs(out, ref)


def test_an_expired_batch_is_asked_again_for_the_rest(setup, tmp_path):
    args, ref, server = setup
    server.batch_plan = [{"status": "expired", "answered": 5}]
    out = tmp_path / "out"
    proc = run_cli(*batch_args(args, out), cache_dir=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert [b["status"] for b in server.batches.values()] == ["expired", "completed"]
    assert server.batches["batch_2"]["request_counts"]["total"] == CALLS - 5
    assert server.requests == []
    same_outputs(out, ref)


def test_what_the_batch_rounds_leave_unanswered_is_asked_live(setup, tmp_path):
    args, ref, server = setup
    server.batch_plan = [{"status": "expired", "answered": 0}] * 3
    out = tmp_path / "out"
    proc = run_cli(*batch_args(args, out), cache_dir=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert len(server.batches) == 3  # the re-ask limit: answer_retries + 1 rounds
    assert len(server.requests) == CALLS and "asked live" in proc.stderr
    same_outputs(out, ref)


def test_a_failed_batch_stops_with_one_line_and_a_new_run_submits_again(setup, tmp_path):
    args, ref, server = setup
    server.batch_plan = [{"status": "failed"}]
    out, cache = tmp_path / "out", tmp_path / "cache"
    proc = run_cli(*batch_args(args, out), cache_dir=cache)
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("factjudge: error: batch batch_1 failed: scripted_failure: scripted batch failure")
    assert server.requests == [] and not (out / "summary.json").exists()
    proc = run_cli(*batch_args(args, out), cache_dir=cache)
    assert proc.returncode == 0, proc.stderr
    assert len(server.batches) == 2 and server.requests == []
    same_outputs(out, ref)


def test_a_cancelled_batch_keeps_its_answers_and_stops(setup, tmp_path):
    args, ref, server = setup
    server.batch_plan = [{"status": "cancelled", "answered": 4}]
    out, cache = tmp_path / "out", tmp_path / "cache"
    proc = run_cli(*batch_args(args, out), cache_dir=cache)
    assert proc.returncode == 2
    assert "batch batch_1 was cancelled (its answers were imported)" in proc.stderr.strip().splitlines()[-1]
    proc = run_cli(*batch_args(args, out), cache_dir=cache)
    assert proc.returncode == 0, proc.stderr
    assert server.batches["batch_2"]["request_counts"]["total"] == CALLS - 4
    assert server.requests == []
    same_outputs(out, ref)


def test_a_corrupt_state_file_is_one_line(server, tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "batch.json").write_text("{not json")
    proc = run_cli("eval", data, "--model", "m", "--base-url", server.base_url, "-o", tmp_path / "out",
                   "--batch", cache_dir=tmp_path / "cache")
    assert proc.returncode == 2 and server.batch_calls == []
    assert proc.stderr.strip().splitlines()[-1].endswith(
        "batch.json: not a factjudge batch state file; remove it (check the provider's dashboard for "
        "batches it may list)")


def test_a_server_without_the_batch_api_is_one_line(tmp_path):
    with ScriptedServer(truth=TRUTH) as server:
        data = write_jsonl(tmp_path / "data.jsonl", DOCS)
        proc = run_cli("eval", data, "--model", "m", "--base-url", server.base_url + "/nothing",
                       "-o", tmp_path / "out", "--batch", cache_dir=tmp_path / "cache")
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("factjudge: error: uploading ") and "HTTP 404" in last and "Batch API" in last
