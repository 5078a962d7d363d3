"""``factjudge agree`` on result folders a person or another tool edited (issue 20, item 11): a
malformed result line or summary is one line naming the file, the line and the field (exit 2),
never a traceback, and nothing is written."""
import json
import shutil

import evalkit
import pytest
from evalkit import write_jsonl

DOC = {"doc_id": "d1",
       "gold_facts": [{"id": "g1", "fact_type": "revenue", "value": "1"},
                      {"id": "g2", "fact_type": "revenue", "value": "2"}],
       "predicted_facts": [{"id": "p1", "fact_type": "revenue", "value": "1"}]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished eval folders of the rules judge (offline) on the same document."""
    tmp = tmp_path_factory.mktemp("agree")
    data = write_jsonl(tmp / "d.jsonl", [DOC])
    for name in ("a", "b"):
        proc = evalkit.run_cli("eval", data, "-o", tmp / name, "-q", cache_dir=tmp / "cache")
        assert proc.returncode == 0, proc.stderr
    return tmp / "a", tmp / "b"


def edited(runs, tmp_path, edit_line=None, text=None, edit_summary=None):
    """A copy of run B whose only result line is edited (a function of the parsed line, or
    ``text`` replacing it), or whose summary.json is."""
    out = tmp_path / "b"
    shutil.copytree(runs[1], out)
    results = out / "results.jsonl"
    line = json.loads(results.read_text(encoding="utf-8"))
    if edit_line is not None:
        edit_line(line)
    results.write_text((text(json.dumps(line)) if text else json.dumps(line)) + "\n", encoding="utf-8")
    if edit_summary is not None:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        edit_summary(summary)
        (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return out


def gold0(**kw):
    return lambda line: line["gold_facts"][0].update(kw)


def verdict0(**kw):
    return lambda line: line["gold_facts"][0]["factjudge"].update(kw)


def deeper(where, inner, status="TP"):
    return lambda text: text.replace('"status": "TP"', f'"status": "{status}", "{where}": {inner}', 1)


LINE_CASES = {
    "matched_ids number": (dict(edit_line=verdict0(matched_ids=5)),
                           "line 1: field 'gold_facts[0].factjudge.matched_ids': must be a list of fact ids, "
                           "got number"),
    "matched_ids nested": (dict(edit_line=verdict0(matched_ids=[["p1"]])),
                           "line 1: field 'gold_facts[0].factjudge.matched_ids[0]': a fact id is a string or an "
                           "integer, got array"),
    "id array": (dict(edit_line=gold0(id=[1])),
                 "line 1: field 'gold_facts[0].id': a fact id is a string or an integer, got array"),
    "surrogate status": (dict(edit_line=verdict0(status="\ud800")),
                         "line 1: field 'gold_facts[0].factjudge...': lone surrogate \\ud800"),
    "surrogate doc_id": (dict(edit_line=lambda line: line.update(doc_id="d\udc00")),
                         "line 1: field 'doc_id': lone surrogate \\udc00"),
    "surrogate reasoning": (dict(edit_line=verdict0(reasoning="\ud800", status="FN", matched_ids=[])),
                            "line 1: field 'gold_facts[0].factjudge...': lone surrogate \\ud800"),
    # too deep or too long for json.loads: RunFolder's reader says so (without the field)
    "deep nesting": (dict(text=deeper("x", "[" * 100_000 + "]" * 100_000)),
                     "line 1: not a factjudge result line (not JSON)"),
    "5,000 digits": (dict(text=deeper("x", "7" * 5000)), "line 1: not a factjudge result line (not JSON)"),
    "deep but parseable": (dict(text=deeper("x", "[" * 500 + "]" * 500, status="FN")),
                           "line 1: field 'gold_facts[0].factjudge...': nested deeper than 100 levels"),
}


# what agree prints is checked (a lone surrogate, deep nesting): in a fact only when the runs
# decide it differently, so the edits above make the fact differ


@pytest.mark.parametrize("case", LINE_CASES)
def test_a_malformed_result_line_is_one_line_naming_file_line_and_field(runs, tmp_path, case):
    edit, message = LINE_CASES[case]
    bad = edited(runs, tmp_path, **edit)
    for a, b in ((runs[0], bad), (bad, runs[0])):  # streamed (A) or indexed (B): the same answer
        proc = evalkit.run_cli("agree", a, b, "-o", tmp_path / "html")
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == "" and not (tmp_path / "html").exists()
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"factjudge: error: {bad / 'results.jsonl'}: {message}")
        lines[0].encode("utf-8")  # printable


SUMMARY_CASES = {
    "jurors number": (lambda s: s["judge"].update(name="jury", jurors=5),
                      "field 'judge.jurors': must be a list of jurors, got number"),
    "surrogate judge name": (lambda s: s["judge"].update(name="r\ud800"),
                             "field 'judge.name': lone surrogate \\ud800"),
}


@pytest.mark.parametrize("case", SUMMARY_CASES)
def test_a_malformed_judge_in_summary_json_is_one_line(runs, tmp_path, case):
    edit, message = SUMMARY_CASES[case]
    bad = edited(runs, tmp_path, edit_summary=edit)
    proc = evalkit.run_cli("agree", runs[0], bad)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"factjudge: error: {bad / 'summary.json'}: {message}")
    lines[0].encode("utf-8")  # printable


def test_well_formed_folders_still_agree(runs):
    proc = evalkit.run_cli("agree", *runs)
    assert proc.returncode == 0, proc.stderr
    assert "differing facts: 0" in proc.stdout
