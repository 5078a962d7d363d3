"""``eval --gold --predicted --skip-invalid``: a bad fact line never leaves its document scored as if
it were complete (a confident score resting on a likely mistake): the document is left out and
said so, or, when its document cannot be told, a warning says which lines were skipped."""
import json

from evalkit import run_cli

GOOD = ['{"doc_id":"a","id":"g1","fact_type":"revenue","value":1}',
        '{"doc_id":"a","id":"g3","fact_type":"revenue","value":3}',
        '{"doc_id":"b","id":"g9","fact_type":"revenue","value":9}']
PRED = ['{"doc_id":"a","id":"p1","fact_type":"revenue","value":1}',
        '{"doc_id":"a","id":"p3","fact_type":"revenue","value":3}',
        '{"doc_id":"b","id":"p9","fact_type":"revenue","value":9}']


def _run(tmp_path, bad, *extra):
    """eval of a gold file whose second line is ``bad`` (doc a's g2)."""
    g, p, out = tmp_path / "g.jsonl", tmp_path / "p.jsonl", tmp_path / "out"
    g.write_text("\n".join([GOOD[0], bad, *GOOD[1:]]) + "\n", encoding="utf-8")
    p.write_text("\n".join(PRED) + "\n", encoding="utf-8")
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-o", out, *extra)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else None
    docs = [json.loads(ln)["doc_id"] for ln in (out / "results.jsonl").read_text().splitlines()] if summary else None
    return proc, summary, docs, g


def test_a_broken_line_whose_doc_id_reads_leaves_its_document_out(tmp_path):
    proc, summary, docs, g = _run(tmp_path, '{"doc_id":"a","id":"g2","fact_type":"revenue","value":', "--skip-invalid")
    assert proc.returncode == 0 and docs == ["b"] and summary["documents"] == 1  # a was P=R=F1=1 from 2 of 3
    [skipped] = summary["skipped"]
    assert skipped["file"] == str(g) and skipped["line"] == 2
    assert skipped["error"].endswith("(document 'a' left out, both sides: a document with a fact in doubt "
                                     "is not scored)")
    assert f"factjudge: skipped: {skipped['error']}" in proc.stderr.splitlines()
    assert "factjudge: 1 bad line(s) skipped; listed in summary.json" in proc.stderr
    assert "unknown documents" not in proc.stderr


def test_a_valid_line_with_an_invalid_fact_leaves_its_document_out(tmp_path):
    proc, summary, docs, _ = _run(tmp_path, '{"doc_id":"a","id":"g2","value":2}', "--skip-invalid")
    assert proc.returncode == 0 and docs == ["b"]
    assert "document 'a' left out" in summary["skipped"][0]["error"]


def test_a_bad_line_of_an_unknown_document_is_a_warning_on_stderr_and_in_the_summary(tmp_path):
    proc, summary, docs, g = _run(tmp_path, '{"id":"g2","fact_type":"revenue","value":', "--skip-invalid")
    assert proc.returncode == 0 and docs == ["a", "b"]  # the run goes on, as --skip-invalid asks
    warning = (f"1 fact line(s) of unknown documents were skipped ({g}: line 2): their doc_id could not be "
               "read, so some documents may be scored without a fact; fix them and run again")
    assert summary["warnings"] == [warning]
    assert f"factjudge: warning: {warning}" in proc.stderr.splitlines()
    assert summary["skipped"][0]["line"] == 2 and "left out" not in summary["skipped"][0]["error"]


def test_without_skip_invalid_the_run_stops_as_before(tmp_path):
    proc, summary, _, g = _run(tmp_path, '{"doc_id":"a","id":"g2","fact_type":"revenue","value":')
    assert proc.returncode == 2 and summary is None
    assert proc.stderr.strip().splitlines() == [
        f"factjudge: error: {g}: line 2 column 55: invalid JSON: Expecting value",
        "factjudge: error: 1 bad line(s); nothing was judged (--skip-invalid scores the rest)"]


def test_a_repeated_fact_id_leaves_its_document_out_as_a_dataset_line_would_be(tmp_path):
    """The repeat was dropped and the document scored with the first fact (a perfect score, the
    other value never seen); a dataset line holding both is skipped whole."""
    g, p = tmp_path / "g.jsonl", tmp_path / "p.jsonl"
    g.write_text('{"doc_id":"a","id":"g1","fact_type":"revenue","value":1}\n'
                 '{"doc_id":"a","id":"g1","fact_type":"revenue","value":5}\n'
                 '{"doc_id":"b","id":"g3","fact_type":"revenue","value":3}\n', encoding="utf-8")
    p.write_text('{"doc_id":"a","id":"p1","fact_type":"revenue","value":1}\n'
                 '{"doc_id":"b","id":"p3","fact_type":"revenue","value":3}\n', encoding="utf-8")
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-o", tmp_path / "out", "--skip-invalid", "-q")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["micro"]["tp_gold"] == 1 and summary["documents"] == 1, summary["micro"]
    assert summary["skipped"][0]["error"].endswith("(document 'a' left out, both sides: a document with a fact "
                                                   "in doubt is not scored)")
