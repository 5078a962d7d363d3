"""Hostile batch servers and batch files (issue 20, items 2 and 18): ids a server hands out never
become paths or URLs unchecked; conflicting answers for one question are counted and named."""
import base64
import json
import os
import resource
import subprocess
import sys

import evalkit
import pytest
from evalkit import CONFIG, DOCS, TRUTH, write_jsonl
from scripted_server import Reply, ScriptedServer, answer, describe


def run_cli(*args, cache_dir, env=None):
    return evalkit.run_cli(*args, cache_dir=cache_dir, env=env)


@pytest.fixture
def batch_eval(tmp_path, server):
    """A function running ``eval --batch`` into ``tmp_path/out`` (at ``base_url``, with ``env``)."""
    server.truth = TRUTH
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(CONFIG), encoding="utf-8")
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)

    def run(base_url=None, env=None):
        return run_cli("eval", data, "-c", cfg, "--model", "m", "--base-url", base_url or server.base_url,
                       "-o", tmp_path / "out", "--batch", "--poll-interval", "0.01",
                       cache_dir=tmp_path / "cache", env=env)
    return run


def written_outside(tmp_path, out):
    """Files a run wrote under tmp_path but outside its output folder and cache."""
    return sorted(str(p) for p in tmp_path.rglob("*") if p.is_file() and out not in p.parents
                  and (tmp_path / "cache") not in p.parents and p.suffix == ".jsonl"
                  and p.name != "data.jsonl")


def last_line(proc):
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("hostile", ["absolute", "dotdot"])
def test_a_batch_id_that_is_a_path_is_refused_and_nothing_is_written_outside(tmp_path, server, batch_eval,
                                                                             hostile):
    target = tmp_path / "x"
    target.mkdir()
    evil = str(target / "evil") if hostile == "absolute" else "../" * 40 + str(target / "evil").lstrip("/")
    server.hostile_ids = {"batch_1": evil}
    proc = batch_eval()
    assert proc.returncode == 2, proc.stderr
    assert written_outside(tmp_path, tmp_path / "out") == [] and list(target.iterdir()) == []
    line = last_line(proc)
    assert line.startswith("factjudge: error: creating the batch: the server at 127.0.0.1:")
    assert repr(evil[:40])[:-1] in line and "not a batch id" in line and "dashboard" in line
    assert "Traceback" not in proc.stderr and "\n" not in line
    # the batch is never polled under the hostile id, and a run again refuses it the same way
    assert [c for c in server.batch_calls if c[0] == "GET" and "batch_1" not in c[1]
            and c[1] != "/v1/batches"] == []
    again = batch_eval()
    assert again.returncode == 2 and "not a batch id" in last_line(again)
    assert written_outside(tmp_path, tmp_path / "out") == []


def test_a_file_id_that_is_a_path_is_refused_before_it_is_requested(tmp_path, server, batch_eval):
    # file-1 is the uploaded input, file-2 the batch's output file
    evil = "../../../v1/files/file-1"
    server.hostile_ids = {"file-2": evil}
    proc = batch_eval()
    assert proc.returncode == 2, proc.stderr
    line = last_line(proc)
    assert "the server at 127.0.0.1:" in line and repr(evil) in line and "not a file id" in line
    assert "dashboard" in line and "resume polling" not in line
    assert not any(path.endswith("/content") for _, path in server.batch_calls)
    assert written_outside(tmp_path, tmp_path / "out") == []


def test_an_uploaded_file_id_and_a_long_id_are_refused_truncated(tmp_path, server, batch_eval):
    evil = "file-" + "A" * 5000 + "\n/etc"
    server.hostile_ids = {"file-1": evil}
    proc = batch_eval()
    assert proc.returncode == 2, proc.stderr
    line = last_line(proc)
    assert line.startswith("factjudge: error: uploading input-001-round1.jsonl: the server at ")
    assert "not a file id" in line and len(line) < 400 and "..." in line
    assert ("POST", "/v1/batches") not in server.batch_calls


def test_safe_ids_of_real_providers_pass():
    from factjudge.judges.llm.batch_api import BatchError, safe_id

    for good in ("batch_abc123", "file-abc123", "batch_6caaf24d-54a5-46be-b1b7-518884fcbdde",
                 "file-2", "b.1", "01jh6xa7reempvjyh6n3yst2zw"):
        assert safe_id(good, "batch id", "x") == good
    for bad in ("", ".", "..", ".hidden", "a/b", "a\\b", "a b", "a\n", "é", "x" * 257, None, 5):
        with pytest.raises(BatchError):
            safe_id(bad, "batch id", "x")


def test_a_hand_edited_state_file_with_a_path_for_an_id_is_refused(tmp_path, server, batch_eval):
    (tmp_path / "out").mkdir()
    job = {"round": 1, "file": "batch/input-001-round1.jsonl", "lines": 1, "step": "submitted",
           "input_file_id": "file-1", "batch_id": "/tmp/evil", "status": "in_progress"}
    (tmp_path / "out" / "batch.json").write_text(json.dumps(
        {"version": 1, "judge": None, "round": 1, "finished": False, "jobs": [job]}))
    proc = batch_eval()
    assert proc.returncode == 2 and server.batch_calls == []
    assert last_line(proc) == (f"factjudge: error: {tmp_path / 'out' / 'batch.json'}: batch_id '/tmp/evil': "
                               "not a batch id (1-256 ASCII letters, digits, '_', '-' or '.', not starting "
                               "with '.'), so factjudge puts it in no URL and no file name")


# --------------------------------------------------------------------------- item 18: conflicts


def completion_line(custom_id, content):
    body = {"id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}]}
    return {"id": "r", "custom_id": custom_id, "response": {"status_code": 200, "body": body}, "error": None}


def test_conflicting_answers_for_one_custom_id_are_counted_and_named(tmp_path, server):
    from factjudge.judges.llm.cache import ResponseCache

    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(CONFIG), encoding="utf-8")
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    cache, file = tmp_path / "cache", tmp_path / "in.jsonl"
    proc = run_cli("eval", data, "-c", cfg, "--model", "m", "--base-url", server.base_url, "-o",
                   tmp_path / "out", "--batch-export", file, cache_dir=cache)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in file.read_text().splitlines()]

    def said(line, truthful=True):
        direction, subject, _ = describe(line["body"])
        return answer(direction, subject, TRUTH.get((direction, subject)) if truthful else None,
                      reasoning="a second opinion" if not truthful else "scripted").content

    first = [completion_line(x["custom_id"], said(x)) for x in lines]
    # in the same file: an identical repeat and a different answer; in a second file: another
    again = [first[0], completion_line(lines[1]["custom_id"], said(lines[1], truthful=False))]
    write_jsonl(tmp_path / "out1.jsonl", first + again)
    write_jsonl(tmp_path / "out2.jsonl", [completion_line(lines[2]["custom_id"], said(lines[2], False))])
    proc = run_cli("batch-import", tmp_path / "out1.jsonl", tmp_path / "out2.jsonl", cache_dir=cache)
    assert proc.returncode == 0, proc.stderr
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert counts == {"lines": len(lines) + 3, "stored": len(lines), "already_present": 1, "conflicts": 2,
                      "invalid": 0, "errors": 0, "unknown": 0}
    assert "1 already present, 2 conflicting" in proc.stderr
    warning = next(x for x in proc.stderr.splitlines() if x.startswith("factjudge: warning:"))
    assert lines[1]["custom_id"] in warning and lines[2]["custom_id"] in warning
    assert "kept" in warning and "first" in warning
    stored = ResponseCache(cache)
    for x in lines[:3]:  # the first answer is the one kept
        assert stored.get(x["custom_id"]) == {"content": said(x)}
    # the same files again: the same conflicts; identical answers only: no conflict, no warning
    proc = run_cli("batch-import", tmp_path / "out1.jsonl", cache_dir=cache)
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (counts["stored"], counts["already_present"], counts["conflicts"]) == (0, len(lines) + 1, 1)
    write_jsonl(tmp_path / "out3.jsonl", first)
    proc = run_cli("batch-import", tmp_path / "out3.jsonl", cache_dir=cache)
    assert proc.returncode == 0 and "warning" not in proc.stderr and "conflict" not in proc.stderr
    assert "conflicts" not in json.loads(proc.stdout.strip().splitlines()[-1])


def test_many_conflicts_name_the_first_few(tmp_path, server):
    from factjudge.judges.llm.batch_import import Imported, conflict_warning

    ids = [f"{i:064x}" for i in range(12)]
    text = conflict_warning(ids)
    assert "12 custom_id(s)" in text and ids[0] in text and ids[4] in text and ids[5] not in text
    assert text.endswith("and 7 more") and "\n" not in text
    assert Imported().counts() == {"lines": 0, "stored": 0, "already_present": 0, "invalid": 0,
                                   "errors": 0, "unknown": 0}
    odd = conflict_warning(["a\nb", "\ud800", "y" * 500])
    assert "\n" not in odd and "'a\\nb'" in odd and "'\\ud800'" in odd and "..." in odd
    odd.encode("utf-8")  # printable


def test_a_batch_run_into_a_folder_in_use_stops_and_touches_nothing(tmp_path, server, batch_eval):
    from factjudge.io.runfolder import FolderLock

    out = tmp_path / "out"
    with FolderLock(out):  # another run holds the folder, as a live eval would
        before = sorted(p.name for p in out.iterdir())
        proc = batch_eval()
        assert proc.returncode == 2, proc.stderr
        assert "in use by another factjudge run" in last_line(proc)
        assert sorted(p.name for p in out.iterdir()) == before
        assert server.batch_calls == []
    assert batch_eval().returncode == 0  # once it is let go, the run goes through


def test_a_base_url_with_a_query_keeps_it_on_every_batch_call(tmp_path, server):
    """Azure's ?api-version= goes after /files and /batches (and joins a query of their own)."""
    server.truth = TRUTH
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(CONFIG), encoding="utf-8")
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    proc = run_cli("eval", data, "-c", cfg, "--model", "m", "--base-url",
                   server.base_url + "?api-version=2024-10-21", "-o", tmp_path / "out", "--batch",
                   "--poll-interval", "0.01", cache_dir=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert server.batch_queries and all("api-version=2024-10-21" in q for q in server.batch_queries)
    assert all(q.count("?") == 1 for q in server.batch_queries)


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "1e9"])
def test_a_poll_interval_that_cannot_work_is_refused_naming_the_option(tmp_path, server, value):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    proc = run_cli("eval", data, "--model", "m", "--base-url", server.base_url, "-o", tmp_path / "out",
                   "--batch", "--poll-interval", value, cache_dir=tmp_path / "cache")
    assert proc.returncode == 2 and "--poll-interval" in last_line(proc), proc.stderr
    assert not (tmp_path / "out").exists() and server.batch_calls == []


def test_a_line_over_the_reply_cap_is_refused_without_reading_it_whole(tmp_path):
    """Issue 32, item 10: a 50 MB output line took 1.4 GB. A line longer than the live reply cap
    is refused naming the file and the line, read in bounded chunks: under a 200 MB address-space
    cap (the process needs about 60 MB) a 120 MB line is refused in one line, no MemoryError."""
    from factjudge.judges.llm.backends import MAX_BODY_BYTES
    from factjudge.judges.llm.cache import ResponseCache

    ResponseCache(tmp_path / "cache")  # an (empty) response cache, as an export leaves one
    bomb = tmp_path / "out.jsonl"
    head = json.dumps(completion_line("q-1", "x")).encode().split(b'"x"')
    with bomb.open("wb") as fh:
        fh.write(json.dumps(completion_line("q-0", "{}")).encode() + b"\n")
        fh.write(head[0] + b'"')
        for _ in range(120):
            fh.write(b"y" * (1 << 20))
        fh.write(b'"' + head[1] + b"\n")
    cap = 200 << 20

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["FACTJUDGE_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-m", "factjudge", "batch-import", str(bomb)], capture_output=True,
                          text=True, env=env, preexec_fn=limit, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"factjudge: error: {bomb}: line 2: longer than {MAX_BODY_BYTES >> 20} MiB, the "
                           "largest reply factjudge reads (is this a batch output file?)\n")


# --------------------------------------------------------------------------- secrets on the batch path

KEY = "sk-test-batch-SECRET123"
USER, PASSWORD = "alice", "pa55SECRET"


def with_auth(server, auth):
    """(base URL, env, the Authorization header sent, the secrets that must show nowhere) of a run
    authorised by an API key or by the base URL's userinfo."""
    if auth == "key":
        return server.base_url, {"OPENAI_API_KEY": KEY}, f"Bearer {KEY}", (KEY,)
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    return server.base_url.replace("//", f"//{USER}:{PASSWORD}@"), None, f"Basic {token}", (PASSWORD, token)


def shown_or_written(tmp_path, proc, secrets):
    """The secrets found on stdout, stderr or in any file under tmp_path (out/batch.json, the cache)."""
    found = [f"output: {s}" for s in secrets if s in proc.stdout + proc.stderr]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            found += [f"{path.name}: {s}" for s in secrets if s.encode() in path.read_bytes()]
    return found


@pytest.mark.parametrize("auth", ["key", "url"])
def test_an_upload_answered_with_text_echoing_the_key_stops_without_it(tmp_path, server, batch_eval, auth):
    """A proxy answering the upload with a 200 that is not JSON, echoing the request's headers and
    path: the error quoted its start unredacted."""
    url, env, header, secrets = with_auth(server, auth)
    server.batch_gate = lambda request: Reply(body=f"echo {request.headers.get('Authorization')} {request.path_qs}",
                                              headers={"content-type": "text/plain"})
    proc = batch_eval(url, env)
    assert proc.returncode == 2, proc.stderr
    assert server.batch_headers[0]["Authorization"] == header  # it was sent
    line = last_line(proc)
    assert "did not answer JSON" in line and f"echo {header.split()[0]} ***" in line
    assert shown_or_written(tmp_path, proc, secrets) == []


@pytest.mark.parametrize("auth", ["key", "url"])
def test_a_failed_batch_quoting_the_key_is_said_and_saved_without_it(tmp_path, server, batch_eval, auth):
    """The server's reason for a failed batch was printed and kept in out/batch.json as it came."""
    url, env, header, secrets = with_auth(server, auth)
    server.batch_plan = [{"status": "failed", "message": f"rejected credentials {header}"}]
    proc = batch_eval(url, env)
    assert proc.returncode == 2, proc.stderr
    assert "failed: scripted_failure: rejected credentials " in last_line(proc)
    assert "rejected credentials " in (tmp_path / "out" / "batch.json").read_text()
    assert shown_or_written(tmp_path, proc, secrets) == []


@pytest.mark.parametrize("valid", [True, False])
def test_batch_answers_quoting_the_key_reach_no_file_and_no_line(tmp_path, server, batch_eval, valid):
    """A live answer is cached redacted; a batch answer was cached as it came, and an invalid one
    was kept as it came for the next round's re-ask (its input file); the provider's output file
    was downloaded into out/batch/ as it came."""
    def quoting(body):
        direction, subject, _ = describe(body)
        if not valid:
            return Reply(content=f"no JSON: proxy saw Authorization: Bearer {KEY}")
        return answer(direction, subject, TRUTH.get((direction, subject)),
                      reasoning=f"proxy saw Authorization: Bearer {KEY}")

    server.responder = quoting
    proc = batch_eval(env={"OPENAI_API_KEY": KEY})
    assert proc.returncode == (0 if valid else 1), proc.stderr  # invalid every time: ERROR facts
    assert server.batch_requests  # answered by the batch
    assert shown_or_written(tmp_path, proc, (KEY,)) == []  # the downloaded output files too
    if valid:  # not asked live; the reasoning shown as a live answer's
        assert server.requests == [] and "Bearer ***" in (tmp_path / "out" / "results.jsonl").read_text()


@pytest.mark.parametrize("status", [307, 308])
def test_a_batch_call_redirected_to_another_origin_is_refused_and_never_carries_the_key(
        tmp_path, server, batch_eval, status):
    """The Files and Batches client followed redirects to any origin (aiohttp's default), unlike
    the live backend: one line naming both origins now, and the other server is never called."""
    with ScriptedServer() as other:
        server.batch_gate = lambda request: Reply(
            status=status, headers={"Location": f"http://127.0.0.1:{other.port}{request.path_qs}"}, body="")
        proc = batch_eval(env={"OPENAI_API_KEY": KEY})
        assert proc.returncode == 2, proc.stderr
        assert other.batch_calls == [] and other.batch_headers == []
    line = last_line(proc)
    assert line.startswith("factjudge: error: uploading input-001-round1.jsonl: HTTP ")
    assert f"127.0.0.1:{server.port}" in line and f"127.0.0.1:{other.port}" in line and KEY not in line


def test_a_batch_call_redirected_within_the_origin_is_followed_with_the_key(tmp_path, server, batch_eval):
    """A 307 to the same server (a gateway moving a call) is followed, the upload sent again whole."""
    def moved(request):
        if request.query.get("moved"):
            return None
        return Reply(status=307, headers={"Location": f"{request.path}?moved=1"}, body="")

    server.batch_gate = moved
    proc = batch_eval(env={"OPENAI_API_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    assert ("POST", "/v1/files") in server.batch_calls and server.files["file-1"]["bytes"] > 0
    assert all(h["Authorization"] == f"Bearer {KEY}" for h in server.batch_headers)
    assert all(q.endswith("moved=1") for q in server.batch_queries[1::2])


def test_a_downloaded_file_has_every_key_hidden_even_one_split_between_two_pieces(tmp_path, server):
    """Read in pieces of up to 1 MiB: 3 MiB of keys at every offset put some across a boundary."""
    import asyncio

    from factjudge.judges.llm.backends import endpoint
    from factjudge.judges.llm.batch_api import BatchClient

    data = "".join(f"{KEY}{'x' * (i % 97)}\n" for i in range(45_000)).encode()
    server.files["file-9"], server.file_data["file-9"] = {"id": "file-9"}, data
    dest = tmp_path / "out.jsonl"

    async def download():
        async with BatchClient(endpoint(server.base_url, KEY)) as client:
            await client.download("file-9", dest, lines=1)

    asyncio.run(download())
    assert len(data) > 3 << 20
    assert dest.read_bytes() == data.replace(KEY.encode(), b"***")


# --------------------------------------------------------------------------- a batch object's words, an answer's size


def stop_at_third_check(server):
    """The batch held in progress; the third retrieve answered with an HTTP 400 (not retried): the
    run stops there, its batch.json holding what the second one said."""
    def gate(request):
        checks = [p for m, p in server.batch_calls if m == "GET" and p.startswith("/v1/batches/")]
        if request.method == "GET" and request.path.startswith("/v1/batches/") and len(checks) >= 2:
            return Reply(status=400, body=json.dumps({"error": {"message": "scripted stop"}}))
        return None

    server.batch_hold = True
    server.batch_gate = gate


def saved_job(tmp_path):
    return json.loads((tmp_path / "out" / "batch.json").read_text(encoding="utf-8"))["jobs"][0]


@pytest.mark.parametrize("auth", ["key", "url"])
def test_a_batch_status_and_counts_quoting_the_key_are_shown_and_saved_without_it(tmp_path, server, batch_eval,
                                                                                  auth):
    """A batch object's status and request_counts went to the progress line and batch.json as the
    server gave them: a proxy quoting the request's Authorization header there showed the key."""
    url, env, header, secrets = with_auth(server, auth)

    def quoting(obj):
        obj["status"] = f"{obj['status']} (proxy saw {header})"
        obj["request_counts"] = {"total": header, "completed": -1, "failed": 2.5, "extra": header}
        return obj

    server.batch_view = quoting
    stop_at_third_check(server)
    proc = batch_eval(url, env)
    assert proc.returncode == 2, proc.stderr
    assert "scripted stop" in last_line(proc) and "resume polling" in last_line(proc)
    assert shown_or_written(tmp_path, proc, secrets) == []
    shown = f"in_progress (proxy saw {header.split()[0]} ***)"
    job = saved_job(tmp_path)
    assert job["status"] == shown and job["request_counts"] == {}  # no count is trusted
    assert f"batch_1 {shown} ?/{job['lines']} |" in proc.stderr  # the counts shown as unknown


def test_a_huge_status_with_control_characters_is_cut_and_escaped(tmp_path, server, batch_eval):
    """A status of 200,000 characters went whole into every progress line and batch.json."""
    def huge(obj):
        obj["status"] = f"{obj['status']}\x1b[2J\r" + "x" * 200_000
        obj["request_counts"] = {"total": 10**30, "completed": True, "failed": 1}
        return obj

    server.batch_view = huge
    stop_at_third_check(server)
    proc = batch_eval(env={"OPENAI_API_KEY": KEY})
    assert proc.returncode == 2, proc.stderr
    assert max(len(line) for line in proc.stderr.splitlines()) < 1000, proc.stderr[:2000]
    status = saved_job(tmp_path)["status"]
    assert status.startswith("in_progress\\x1b[2J\\x0dxxx") and "[cut: " in status and len(status) < 200
    assert saved_job(tmp_path)["request_counts"] == {"failed": 1}  # 10**30 and True are no counts
    assert "in_progress\\x1b[2J\\x0dxxx" in proc.stderr and "?/" in proc.stderr and ", 1 failed" in proc.stderr


@pytest.mark.parametrize("call", ["POST /v1/files", "POST /v1/batches", "GET /v1/batches/batch_1"])
def test_a_json_answer_over_the_cap_is_one_line_read_no_further(tmp_path, server, batch_eval, call):
    """The Files and Batches answers were read whole, however large (the chat reply's are capped):
    9 MiB of JSON, a valid answer but for its size, stops the run with one line."""
    from factjudge.judges.llm.batch_api import MAX_ANSWER_BYTES

    method, path = call.split()
    pad = "x" * (9 << 20)
    answers = {"/v1/files": {"id": "file-1", "object": "file", "pad": pad},
               "/v1/batches": {"id": "batch_1", "object": "batch", "status": "validating", "pad": pad},
               "/v1/batches/batch_1": {"id": "batch_1", "object": "batch", "status": "failed", "pad": pad}}
    server.batch_gate = lambda request: Reply(body=json.dumps(answers[path])) \
        if (request.method, request.path) == (method, path) else None
    proc = batch_eval()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    what = {"/v1/files": "uploading input-001-round1.jsonl", "/v1/batches": "creating the batch",
            "/v1/batches/batch_1": "checking batch batch_1"}[path]
    assert last_line(proc).startswith(
        f"factjudge: error: {what}: the server at 127.0.0.1:{server.port} answered more than "
        f"{MAX_ANSWER_BYTES >> 20} MiB (read no further)")
    assert [x for x in proc.stderr.splitlines() if "error" in x] == [last_line(proc)]


def test_a_download_longer_than_its_answers_can_be_stops_and_leaves_no_file(tmp_path, server):
    """The output file is streamed to disk (memory bounded); its length is bounded too, by what the
    import would take from its lines (a batch of 2 lines: 2 x (8 MiB + 1))."""
    import asyncio

    from factjudge.judges.llm.backends import MAX_BODY_BYTES, endpoint
    from factjudge.judges.llm.batch_api import BatchClient, BatchError

    data = b"x" * (2 * (MAX_BODY_BYTES + 1) + 1)
    server.files["file-9"], server.file_data["file-9"] = {"id": "file-9"}, data
    dest = tmp_path / "out.jsonl"

    async def download(lines):
        async with BatchClient(endpoint(server.base_url, KEY)) as client:
            await client.download("file-9", dest, lines=lines)

    with pytest.raises(BatchError) as raised:
        asyncio.run(download(2))
    assert str(raised.value) == (f"downloading file file-9: the server at 127.0.0.1:{server.port} sent "
                                 "more than 16 MiB, more than the batch's answers can be (read no further)")
    assert list(tmp_path.iterdir()) == []
    asyncio.run(download(3))
    assert dest.read_bytes() == data
