"""Dataset readers: every bad line named with its file and line before any call; usage errors."""
import json

import pytest
from evalkit import DOCS, TRUTH, read_lines, run_cli, write_jsonl

# --------------------------------------------------------------------------- bad input


def test_bad_lines_stop_the_run_before_any_call(server, tmp_path):
    lines = [json.dumps(DOCS[0]), "{not json", json.dumps({"doc_id": "X", "gold_facts": [{"id": "1"}],
                                                              "predicted_facts": []}),
             "", json.dumps(DOCS[1]), json.dumps({**DOCS[2], "doc_id": "A"}),
             json.dumps({"doc_id": "Y", "gold_facts": {}, "predicted_facts": []}), "[1]"]
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = run_cli("eval", data, "--model", "m", "--base-url", server.base_url, "--no-cache", "-o", out)
    assert proc.returncode == 2 and server.requests == [] and not out.exists()
    assert "Traceback" not in proc.stderr
    err = proc.stderr.strip().splitlines()
    assert err == [
        f"factjudge: error: {data}: line 2 column 2: invalid JSON: Expecting property name enclosed in double quotes",
        f"factjudge: error: {data}: line 3: gold_facts: record 1 (id '1'): missing or empty 'fact_type' "
        "(a non-empty string); fields found: id (map yours with the config key columns: {fact_type: YOUR_FIELD})",
        f"factjudge: error: {data}: line 6: duplicate doc_id 'A', first seen at line 1",
        f"factjudge: error: {data}: line 7 (doc_id 'Y'): 'gold_facts' must be a list of facts",
        f"factjudge: error: {data}: line 8: expected a JSON object, got array",
        "factjudge: error: 5 bad line(s); nothing was judged (--skip-invalid scores the rest)",
    ]

    server.truth = TRUTH
    proc = run_cli("eval", data, "--model", "m", "--base-url", server.base_url, "--no-cache",
                   "-o", out, "--skip-invalid")
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["documents"] == 2
    assert [(x["file"], x["line"]) for x in s["skipped"]] == [(str(data), n) for n in (2, 3, 6, 7, 8)]
    assert "duplicate doc_id" in s["skipped"][2]["error"]
    assert "5 bad line(s) skipped" in proc.stderr
    assert "Skipped input lines" in (out / "report.md").read_text()


def test_bad_lines_of_the_gold_predicted_form_name_file_and_line(tmp_path):
    g = tmp_path / "g.jsonl"
    g.write_text("\n".join([
        json.dumps({"doc_id": "a", "id": "1", "fact_type": "t"}),
        json.dumps({"id": "2", "fact_type": "t"}),
        json.dumps({"doc_id": "b", "id": "1", "fact_type": "t"}),
        json.dumps({"doc_id": "a", "id": 1, "fact_type": "t"}),
        json.dumps({"doc_id": "a", "id": "3", "fact_type": "t", "factjudge": "TP"}),
    ]) + "\n")
    p = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": "a", "id": "x"}])
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"factjudge: error: {g}: line 2: missing or empty 'doc_id' (a non-empty string or an integer)",
        f"factjudge: error: {g}: line 4 (id '1'): duplicate id in document 'a', first seen at line 1",
        f"factjudge: error: {g}: line 5 (id '3'): field 'factjudge' is reserved for "
        "factjudge's verdict in its output: rename the field",
        f"factjudge: error: {p}: line 1 (id 'x'): missing or empty 'fact_type' (a non-empty string); "
        "fields found: id (map yours with the config key columns: {fact_type: YOUR_FIELD})",
        "factjudge: error: 4 bad line(s); nothing was judged (--skip-invalid scores the rest)",
    ]
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-o", tmp_path / "out",
                   "--skip-invalid")
    assert proc.returncode == 0, proc.stderr
    lines = read_lines(tmp_path / "out" / "results.jsonl")
    # a's bad lines of known doc_id (gold line 5, predicted line 1) leave it out: it is not scored
    # from 1 of its gold facts; line 2's document is unknown, which a warning says
    assert [(x["doc_id"], [f["id"] for f in x["gold_facts"]], x["predicted_facts"]) for x in lines] == [
        ("b", ["1"], [])]
    assert "factjudge: warning: 1 fact line(s) of unknown documents were skipped" in proc.stderr


@pytest.mark.parametrize("args, message", [
    ([], "give either DATASET.jsonl or both --gold and --predicted"),
    (["data.jsonl", "--gold", "g.jsonl", "--predicted", "p.jsonl"], "give either DATASET.jsonl"),
    (["--gold", "g.jsonl"], "--gold and --predicted go together"),
    (["missing.jsonl"], "missing.jsonl: cannot read file"),
    (["empty.jsonl"], "empty.jsonl: empty file: expected one document per line"),
    (["data.jsonl", "-c", "bad.yaml"], "bad.yaml: unknown config key 'entity_typs'"),
    (["data.jsonl", "--judge", "llm"], "--model"),
    (["data.jsonl", "--model", "gpt-4o-mini"], "OPENAI_API_KEY"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, args, message):
    write_jsonl(tmp_path / "data.jsonl", DOCS[:1])
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "bad.yaml").write_text("entity_typs: [a]\n")
    proc = run_cli("eval", *args, "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_output_folder_that_cannot_be_written_exits_2(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS[:1])
    (tmp_path / "file").write_text("")
    for out, message in ((tmp_path / "file", "file: not a folder"),
                         (tmp_path / "file" / "sub", "file/sub: cannot read or write: Not a directory")):
        proc = run_cli("eval", data, "-o", out)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert proc.stderr.strip().splitlines() == [f"factjudge: error: {tmp_path}/{message}"]


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_a_foreign_results_file_is_never_overwritten(tmp_path, overwrite):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS[:1])
    out = tmp_path / "theirs"
    out.mkdir()
    (out / "results.jsonl").write_text("my precious data\n")
    (out / "summary.json").write_text("{}")
    proc = run_cli("eval", data, "-o", out, *overwrite)
    assert proc.returncode == 2
    assert ("results.jsonl: line 1: not a factjudge result line (not JSON); eval replaces its results.jsonl "
            "(--overwrite or not): move this one or choose another output folder") in proc.stderr
    assert (out / "results.jsonl").read_text() == "my precious data\n"
    assert (out / "summary.json").read_text() == "{}"


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize(("name", "text", "why"), [
    ("results.jsonl", '{"text": "raw"}\n', "line 1: not a factjudge result line (no doc_id)"),
    ("summary.json", '{"my_metrics": {"f1": 0.9}}', "not a factjudge summary"),
    ("report.md", "my notes\n", "not the report.md factjudge writes"),
    ("facts.csv", "my,facts\n1,2\n", "not the facts.csv factjudge writes"),
    ("review.html", "<html><title>my review</title></html>", "not the review.html factjudge writes"),
])
def test_a_users_file_under_a_name_eval_writes_is_never_removed(tmp_path, overwrite, name, text, why):
    """In a run folder of its own or in a folder of older results alike, --overwrite or not: eval
    removed a user's results.jsonl, summary.json and report.md with --overwrite, and a user's
    facts.csv beside a finished run when it ran again (a review found both)."""
    data = write_jsonl(tmp_path / "data.jsonl", DOCS[:1])
    out = tmp_path / "out"
    assert run_cli("eval", data, "-o", out).returncode == 0
    (out / name).write_text(text, encoding="utf-8")
    proc = run_cli("eval", data, "-o", out, *(["--overwrite"] if overwrite else []))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"factjudge: error: {out / name}: {why}; eval replaces its {name} (--overwrite or not): move this "
        "one or choose another output folder"]
    assert (out / name).read_text(encoding="utf-8") == text
    (out / name).unlink()  # the folder is eval's again
    assert run_cli("eval", data, "-o", out, "--csv").returncode == 0
    assert run_cli("eval", data, "-o", out).returncode == 0  # its own facts.csv goes as stale output
    assert not (out / "facts.csv").exists()




# --------------------------------------------------------------------------- documents held by the scan


@pytest.mark.parametrize("budget, held", [(100_000, 5), (0, 0), (3, 2)])
def test_the_scan_holds_the_first_documents_within_its_budget(tmp_path, monkeypatch, budget, held):
    """The first documents up to HOLD_FACTS facts are held as the scan read them (judging takes
    them from memory); the others are read again, each in its place: the documents are the same."""
    from factjudge.io import scan
    from factjudge.io.config import parse_config
    from factjudge.io.datasets import JsonlDataset

    docs = [{"doc_id": f"d{i}", "gold_facts": [{"id": f"g{i}", "fact_type": "t", "v": str(i)}],
             "predicted_facts": [{"id": f"p{i}", "fact_type": "t", "v": str(i)}][: i % 2]} for i in range(5)]
    # facts: d0 1, d1 2, d2 1, d3 2, d4 1: a budget of 3 holds d0 and d1 only
    monkeypatch.setattr(scan, "HOLD_FACTS", budget)
    data = JsonlDataset(write_jsonl(tmp_path / "d.jsonl", docs))
    assert data.scan(parse_config({}), "salt") == []
    assert [d.position for d in data.held] == list(range(held))
    read = [(d.doc_id, d.gold, d.predicted) for d in data.documents(skip={"d1"})]
    assert read == [(d["doc_id"], d["gold_facts"], d["predicted_facts"]) for d in docs if d["doc_id"] != "d1"]
    assert [isinstance(d, scan.HeldDocument) for d in data.documents()] == [i < held for i in range(5)]
