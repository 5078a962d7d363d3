"""Hostile output folders and inputs (issue #20, items 1, 4 and 15): two runs into one folder, a
folder factjudge did not write, an input rewritten while eval runs. Each stops with one line (exit
2) and leaves every file it did not write as it was."""
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading

import pytest
from evalkit import DOCS, TRUTH, llm_args, read_lines, run_cli, write_jsonl
from scripted_server import ScriptedServer

from factjudge.errors import InputError
from factjudge.evaluation.runner import evaluate_async, input_salt
from factjudge.io import scan
from factjudge.io.config import parse_config
from factjudge.io.datasets import JsonlDataset
from factjudge.io.runfolder import LOCK, OWN_NAMES, FolderLock
from factjudge.judges.rules.judge import RulesJudge
from factjudge.runners.batch import BATCH_DIR, STATE_FILE


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def error_line(proc):
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


class HeldServer(ScriptedServer):
    """Answers from TRUTH, but holds the first question asked until ``release`` is set: a run
    stays in the middle of its work as long as a test needs."""

    def __init__(self):
        super().__init__(truth=TRUTH, responder=self._held)
        self.asked, self.release = threading.Event(), threading.Event()

    async def _held(self, request):
        if not self.asked.is_set():
            self.asked.set()
            while not self.release.is_set():
                await asyncio.sleep(0.01)
        return self._from_truth(request)


# factjudge whose scan holds no document in memory: each is read again when it is judged, as the
# documents beyond io.scan.HOLD_FACTS are
READ_AGAIN = ("import runpy, factjudge.io.scan as scan; scan.HOLD_FACTS = 0; "
              "runpy.run_module('factjudge', run_name='__main__', alter_sys=True)")


def start(argv, cache, hold=True):
    """``factjudge ARGV`` as a real process, left running (``hold``: False, no document held)."""
    env = {**os.environ, "FACTJUDGE_CACHE_DIR": str(cache)}
    env.pop("OPENAI_API_KEY", None)
    how = ["-m", "factjudge"] if hold else ["-c", READ_AGAIN]
    return subprocess.Popen([sys.executable, *how, *map(str, argv)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@contextlib.contextmanager
def held_run(server, argv, cache, hold=True):
    """``factjudge ARGV`` as a real process, held at its first question while the block runs;
    after it, the process has ended and its stderr is in ``.err``."""
    run = start(argv, cache, hold)
    try:
        assert server.asked.wait(60), run.communicate()
        yield run
    finally:
        server.release.set()
        run.err = run.communicate(timeout=120)[1]


# --------------------------------------------------------------------------- item 1: one run a folder

def test_a_second_eval_into_a_folder_in_use_stops_and_touches_nothing(dataset, tmp_path):
    data, cfg = dataset
    out = tmp_path / "out"
    with HeldServer() as server:
        args = ["eval", data, "-c", cfg, "--concurrency", "1", *llm_args(server, tmp_path / "c1"), "-o", out]
        with held_run(server, args, tmp_path / "c1") as first:
            before = snapshot(out)
            second = run_cli(*args, cache_dir=tmp_path / "c2")
            assert second.returncode == 2
            assert error_line(second) == (f"factjudge: error: {out}: in use by another factjudge run "
                                          f"(process {first.pid}); wait for it to end, or give another "
                                          "output folder")
            assert snapshot(out) == before
        assert first.returncode == 0, first.err
    assert [x["doc_id"] for x in read_lines(out / "results.jsonl")] == [d["doc_id"] for d in DOCS]


def test_a_killed_run_leaves_no_lock_behind(dataset, tmp_path):
    data, cfg = dataset
    out = tmp_path / "out"
    with HeldServer() as server:
        args = ["eval", data, "-c", cfg, *llm_args(server, tmp_path / "c1"), "-o", out]
        first = start(args, tmp_path / "c1")
        assert server.asked.wait(60), first.communicate()
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        server.release.set()
        assert (out / LOCK).exists()  # the file stays; the lock went with the process
        proc = run_cli(*args, cache_dir=tmp_path / "c1")
    assert proc.returncode == 0, proc.stderr
    assert "5 documents" in proc.stderr


def test_a_finished_folder_is_locked_too(dataset, tmp_path):
    data, cfg = dataset
    out = tmp_path / "out"
    assert run_cli("eval", data, "-c", cfg, "-o", out).returncode == 0
    before = snapshot(out)
    with FolderLock(out):  # this process holds it, as a run would
        proc = run_cli("eval", data, "-c", cfg, "-o", out, real_process=True)
        assert proc.returncode == 2 and "in use by another factjudge run" in error_line(proc)
        assert snapshot(out) == before
    assert run_cli("eval", data, "-c", cfg, "-o", out).returncode == 0  # let go: it runs


# --------------------------------------------------------------------------- item 4: whose folder

def user_folder(tmp_path):
    """A folder of the user's: the inputs and files that happen to bear eval's output names."""
    (tmp_path / "facts.csv").write_text("doc_id,id,fact_type,value\nd1,g1,revenue,5\n", encoding="utf-8")
    (tmp_path / "predicted.csv").write_text("doc_id,id,fact_type,value\nd1,p1,revenue,5\n", encoding="utf-8")
    (tmp_path / "report.md").write_text("# my report\n", encoding="utf-8")
    (tmp_path / "summary.json").write_text('{"mine": true}\n', encoding="utf-8")
    (tmp_path / "report.html").write_text("<p>mine</p>\n", encoding="utf-8")
    return snapshot(tmp_path)


def test_eval_refuses_a_folder_it_did_not_write(tmp_path):
    before = user_folder(tmp_path)
    proc = run_cli("eval", "--gold", "facts.csv", "--predicted", "predicted.csv", "-o", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert error_line(proc) == ("factjudge: error: .: not an eval output folder (it holds files factjudge "
                                "did not write: facts.csv, predicted.csv, report.html and 2 more); give "
                                "a new or empty folder")
    assert snapshot(tmp_path) == before  # nothing replaced, removed or added (no lock file either)


@pytest.mark.parametrize("names", [["summary.json"], ["report.md", "report.html", "facts.csv"]])
def test_reports_without_results_are_the_users(dataset, tmp_path, names):
    data, cfg = dataset
    out = tmp_path / "out"
    out.mkdir()
    for name in names:
        (out / name).write_text("mine\n", encoding="utf-8")
    proc = run_cli("eval", data, "-c", cfg, "-o", out, "--overwrite")
    assert proc.returncode == 2 and "not an eval output folder" in error_line(proc)
    assert {p.name for p in out.iterdir()} == set(names)
    assert all((out / n).read_text(encoding="utf-8") == "mine\n" for n in names)


def test_a_run_json_of_the_users_is_never_replaced(dataset, tmp_path):
    data, cfg = dataset
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text('{"my": "settings"}\n', encoding="utf-8")
    proc = run_cli("eval", data, "-c", cfg, "-o", out, "--overwrite")
    assert proc.returncode == 2
    assert error_line(proc) == (f"factjudge: error: {out / 'run.json'}: not a factjudge run manifest; "
                                "eval writes only into a new or empty folder or one of its runs: give "
                                "another -o")
    assert snapshot(out) == {"run.json": b'{"my": "settings"}\n'}


def test_an_input_among_the_outputs_of_its_own_run_folder_is_refused(tmp_path):
    out = tmp_path / "out"
    user_folder(tmp_path)
    args = ["eval", "--gold", tmp_path / "facts.csv", "--predicted", tmp_path / "predicted.csv", "-o", out]
    assert run_cli(*args).returncode == 0
    (out / "facts.csv").write_bytes((tmp_path / "facts.csv").read_bytes())  # the gold moved in
    before = snapshot(out)
    proc = run_cli("eval", "--gold", out / "facts.csv", "--predicted", tmp_path / "predicted.csv", "-o", out)
    assert proc.returncode == 2
    assert error_line(proc) == (f"factjudge: error: {out / 'facts.csv'}: an input of this run is the "
                                "output folder's facts.csv, which eval replaces; move it or give another "
                                "folder")
    assert snapshot(out) == before


def test_files_the_user_adds_to_a_run_folder_stay(dataset, tmp_path):
    data, cfg = dataset
    out = tmp_path / "out"
    assert run_cli("eval", data, "-c", cfg, "-o", out).returncode == 0
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    (out / ".results.jsonl.notes").write_text("mine too\n", encoding="utf-8")
    assert run_cli("eval", data, "-c", cfg, "-o", out).returncode == 0  # resumed: all reused
    write_jsonl(data, DOCS[:3])
    assert run_cli("eval", data, "-c", cfg, "-o", out, "--overwrite").returncode == 0
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert (out / ".results.jsonl.notes").read_text(encoding="utf-8") == "mine too\n"


def test_the_names_eval_writes_include_the_batch_files():
    assert {STATE_FILE, BATCH_DIR} <= OWN_NAMES


# --------------------------------------------------------------------------- item 15: input rewritten

def padded_docs(value="3", doc_id="E"):
    """DOCS with document E's changing parts (its gold value, its doc_id) 16 KB into its line, past
    what Python's 8 KB read buffer holds of it when the documents before it are read."""
    docs = [dict(d) for d in DOCS[:-1]]
    e = DOCS[-1]
    padding = {"id": "e-p9", "fact_type": "auditor", "name": "x" * 16_000}  # out of scope: no question
    docs.append({"predicted_facts": [*e["predicted_facts"], padding],
                 "gold_facts": [dict(e["gold_facts"][0], value=value)], "doc_id": doc_id})
    return docs


def same_length_rewrite(data, key, new):
    """Rewrite document E of ``data`` in place with the same byte length: its ``key`` -> ``new``."""
    docs = padded_docs(**{key: new})
    size = data.stat().st_size
    write_jsonl(data, docs)
    assert data.stat().st_size == size
    return docs


@pytest.mark.parametrize("key, new", [("value", "4"), ("doc_id", "F")])
def test_a_dataset_rewritten_during_eval_stops_with_one_line(dataset, tmp_path, key, new):
    """A document read again when it is judged (beyond the scan's HOLD_FACTS)."""
    data, cfg = dataset
    write_jsonl(data, padded_docs())
    out = tmp_path / "out"
    with HeldServer() as server:
        args = ["eval", data, "-c", cfg, "--concurrency", "1", *llm_args(server, tmp_path / "c1"), "-o", out]
        with held_run(server, args, tmp_path / "c1", hold=False) as run:
            # concurrency 1: two documents are read, A (held) and B; E is read after the change
            docs = same_length_rewrite(data, key, new)
        err = run.err
        assert run.returncode == 2, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err, err
        assert lines[0] == (f"factjudge: error: {data}: changed while eval ran (document 'E' is not what "
                            "the scan read); the documents judged before are kept: run the same command "
                            "again")
        assert not (out / "summary.json").exists()  # nothing passes for a finished run
        assert "E" not in {x["doc_id"] for x in read_lines(out / "results.jsonl")}
        proc = run_cli(*args, cache_dir=tmp_path / "c1")
    assert proc.returncode == 0, proc.stderr
    got = {x["doc_id"]: x for x in read_lines(out / "results.jsonl")}
    assert list(got) == [d["doc_id"] for d in docs]
    assert [f["value"] for f in got[docs[-1]["doc_id"]]["gold_facts"]] == [new if key == "value" else "3"]


def test_a_dataset_rewritten_during_eval_is_judged_as_the_scan_held_it(dataset, tmp_path):
    """The documents the scan holds (io.scan.HOLD_FACTS) are judged as it read them: a rewrite of
    the input during the run changes none of the run's results (each line's hash is its content's)."""
    data, cfg = dataset
    write_jsonl(data, padded_docs())
    out = tmp_path / "out"
    with HeldServer() as server:
        args = ["eval", data, "-c", cfg, "--concurrency", "1", *llm_args(server, tmp_path / "c1"), "-o", out]
        with held_run(server, args, tmp_path / "c1") as run:
            same_length_rewrite(data, "value", "4")
        assert run.returncode == 0, run.err
        got = {x["doc_id"]: x for x in read_lines(out / "results.jsonl")}
        assert [f["value"] for f in got["E"]["gold_facts"]] == ["3"]  # as scanned, not "4"
        assert (out / "summary.json").exists()
        again = run_cli(*args, cache_dir=tmp_path / "c1")  # the input now differs from E's hash: E again
        assert again.returncode == 0, again.stderr
    assert [f["value"] for f in read_lines(out / "results.jsonl")[-1]["gold_facts"]] == ["4"]


def test_a_run_that_fails_lets_its_folder_go(tmp_path, monkeypatch):
    """In one process (a notebook): the folder is free again after a run that raised."""
    monkeypatch.setattr(scan, "HOLD_FACTS", 0)  # every document read again: E's change is found
    data = write_jsonl(tmp_path / "data.jsonl", padded_docs())
    config, judge, out = parse_config({"entity_types": ["revenue", "ceo"]}), RulesJudge(), tmp_path / "out"

    def scanned():
        ds = JsonlDataset(data)
        assert ds.scan(config, input_salt(config, judge)) == []
        return ds

    ds = scanned()
    same_length_rewrite(data, "value", "4")
    with pytest.raises(InputError, match="changed while eval ran"):
        asyncio.run(evaluate_async(ds, config, judge, out))
    run = asyncio.run(evaluate_async(scanned(), config, judge, out))
    assert run.summary.documents == len(DOCS)


def test_a_folder_lock_is_exclusive_until_let_go(tmp_path):
    lock = FolderLock(tmp_path / "new")
    with lock:
        with pytest.raises(InputError, match="in use by another factjudge run"):
            FolderLock(tmp_path / "new").acquire()
    with FolderLock(tmp_path / "new"):
        pass


def test_a_batch_run_refuses_a_folder_it_did_not_write(server, dataset, tmp_path):
    data, cfg = dataset
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    proc = run_cli("eval", data, "-c", cfg, *llm_args(server, tmp_path / "cache"), "-o", out, "--batch")
    assert proc.returncode == 2 and "not an eval output folder" in proc.stderr.strip().splitlines()[-1]
    assert snapshot(out) == {"notes.txt": b"mine\n"} and server.batch_calls == []
