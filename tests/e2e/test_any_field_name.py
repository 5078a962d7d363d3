"""Any field name (issue 34 item 5): a fact's own ``status``, ``description``, ``reasoning``,
``matched_ids``, ``in_scope`` and ``votes`` go through judge, eval (results.jsonl, facts.csv, the
DataFrame, report.html), compare, agree, calibrate and review apply unchanged, and the verdicts are
those of the same facts without them; factjudge's verdict sits under the one key ``factjudge``.
And a run folder an older factjudge wrote (the verdict beside the fact's fields) is still read by
resume, compare and agree."""
import csv
import json
import shutil

import pytest
from evalkit import REVIEW_DOCS, REVIEW_VERDICTS, export_lines, read_lines, review_data, run_cli, write_jsonl

from factjudge.io.tables import eval_to_pandas
from factjudge.models import OUTPUT_FIELDS

#: A user's fields named like every field of factjudge's verdict, the same on every fact (so that
#: they cannot change what matches what).
USER = {"status": "shipped", "description": "Switch 8-port", "reasoning": "typed by hand",
        "matched_ids": ["x9"], "in_scope": "no", "votes": 7, "linked_reasoning": None}
SIDES = ("gold_facts", "predicted_facts")


def with_user_fields(docs):
    return [{**d, **{s: [{**f, **USER} for f in d[s]] for s in SIDES}} for d in docs]


def verdicts(lines):
    """(doc_id, side, id) -> (status, matched ids) of a results.jsonl."""
    return {(x["doc_id"], s, f["id"]): (f["factjudge"]["status"], f["factjudge"]["matched_ids"])
            for x in lines for s in SIDES for f in x[s]}


def old_layout(line):
    """A result line as factjudge wrote it before the verdict had its own key."""
    return {**line, **{s: [{**{k: v for k, v in f.items() if k != "factjudge"}, **f["factjudge"]}
                           for f in line[s]] for s in SIDES}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The review documents evaluated plain and with the user's fields (rules judge, offline)."""
    tmp = tmp_path_factory.mktemp("names")
    outs = {}
    for name, docs in (("plain", REVIEW_DOCS), ("user", with_user_fields(REVIEW_DOCS))):
        data = write_jsonl(tmp / f"{name}.jsonl", docs)
        proc = run_cli("eval", data, "-o", tmp / name, "--csv")
        assert proc.returncode == 0, proc.stderr
        outs[name] = (data, tmp / name)
    return outs


def test_judge_gives_the_facts_back_unchanged_with_the_verdict_beside(tmp_path):
    doc = with_user_fields(REVIEW_DOCS)[0]
    plain = REVIEW_DOCS[0]
    out = {}
    for name, d in (("plain", plain), ("user", doc)):
        gold = write_jsonl(tmp_path / f"{name}-g.jsonl", d["gold_facts"])
        pred = write_jsonl(tmp_path / f"{name}-p.jsonl", d["predicted_facts"])
        proc = run_cli("judge", gold, pred)
        assert proc.returncode == 0, proc.stderr
        out[name] = json.loads(proc.stdout)
    for side in SIDES:
        assert [{k: v for k, v in f.items() if k != "factjudge"} for f in out["user"][side]] == doc[side]
        assert [(f["factjudge"]["status"], f["factjudge"]["matched_ids"], f["factjudge"]["in_scope"])
                for f in out["user"][side]] == [
            (f["factjudge"]["status"], f["factjudge"]["matched_ids"], f["factjudge"]["in_scope"])
            for f in out["plain"][side]]
        # the judge compared the user's fields as any other (equal on every fact here)
        assert "status, description, reasoning, matched_ids, in_scope, votes" in \
            out["user"][side][0]["factjudge"]["reasoning"]
    assert out["user"]["metrics"] == out["plain"]["metrics"]


def test_eval_keeps_the_fields_and_gives_the_same_verdicts(runs):
    _, plain = runs["plain"]
    _, user = runs["user"]
    lines = read_lines(user / "results.jsonl")
    by_key = {(d["doc_id"], s, f["id"]): f for d in with_user_fields(REVIEW_DOCS) for s in SIDES for f in d[s]}
    for x in lines:
        for s in SIDES:
            for f in x[s]:
                assert {k: v for k, v in f.items() if k != "factjudge"} == by_key[(x["doc_id"], s, f["id"])]
                assert set(f["factjudge"]) <= set(OUTPUT_FIELDS)
    assert verdicts(lines) == verdicts(read_lines(plain / "results.jsonl"))
    micro = [json.loads((o / "summary.json").read_text())["micro"] for o in (plain, user)]
    assert micro[0] == micro[1] and (micro[1]["tp_gold"], micro[1]["fn"], micro[1]["fp"]) == (2, 2, 3)


def test_facts_csv_and_the_dataframe_keep_factjudges_columns_and_the_users_apart(runs):
    _, user = runs["user"]
    with (user / "facts.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    frame = eval_to_pandas(user)
    expected = sorted(s for s, _ in verdicts(read_lines(user / "results.jsonl")).values())
    assert sorted(r["status"] for r in rows) == sorted(frame["status"]) == expected
    assert {r["fact.status"] for r in rows} == set(frame["fact.status"]) == {"shipped"}
    assert {r["fact.description"] for r in rows} == set(frame["fact.description"]) == {"Switch 8-port"}
    assert {r["fact.reasoning"] for r in rows} == {"typed by hand"}
    assert all(json.loads(r["fact.matched_ids"]) == ["x9"] for r in rows)
    assert list(frame["fact.matched_ids"].iloc[0]) == ["x9"] and set(frame["fact.votes"]) == {7}
    assert {r["fact.in_scope"] for r in rows} == {"no"} and set(frame["in_scope"]) == {True}
    assert all(r["votes"] == "" for r in rows)  # no jury sat: factjudge's votes column is empty


def test_report_html_shows_the_users_fields_as_fields(runs):
    _, user = runs["user"]
    html = (user / "report.html").read_text(encoding="utf-8")
    payloads = json.loads(html.split('<script type="application/json" id="doc-data">', 1)[1].split("</script>", 1)[0])
    facts = [f for d in payloads for f in d["gold"] + d["predicted"]]
    shown = {(d["doc_id"], f["id"]): f["status"] for d in payloads for f in d["gold"] + d["predicted"]}
    assert shown and all(shown[(doc, i)] == v[0] for (doc, _, i), v in verdicts(
        read_lines(user / "results.jsonl")).items() if (doc, i) in shown)
    # the document view: the user's fields among the fact's fields, factjudge's status its own
    assert all({k: f["fields"][k] for k in USER} == USER for f in facts)
    assert "typed by hand" in html and "Switch 8-port" in html


def test_compare_and_agree_see_no_change(runs, tmp_path):
    _, plain = runs["plain"]
    _, user = runs["user"]
    again = tmp_path / "again"
    shutil.copytree(user, again)
    proc = run_cli("compare", user, again, "-o", tmp_path / "cmp")
    assert proc.returncode == 0, proc.stderr
    assert "0 facts changed status" in proc.stdout + proc.stderr
    proc = run_cli("compare", plain, user, "-o", tmp_path / "cmp2")
    assert proc.returncode == 0 and "0 facts changed status" in proc.stdout + proc.stderr
    proc = run_cli("agree", user, again, "-o", tmp_path / "agree")
    assert proc.returncode == 0, proc.stderr
    assert "differing facts: 0" in proc.stdout


def test_review_apply_and_calibrate_keep_the_users_fields(runs, tmp_path):
    results = {}
    for name in ("plain", "user"):
        _, out = runs[name]
        work = tmp_path / name
        shutil.copytree(out, work)
        data = review_data(work)
        for item in data["items"]:  # the export holds the facts as given: the user's fields too
            for side in ("gold", "predicted"):
                if item[side] is not None:
                    assert "factjudge" not in item[side]
                    assert all(item[side].get(k) == v for k, v in USER.items()) == (name == "user")
        export = write_jsonl(tmp_path / f"{name}-review.jsonl", export_lines(data, REVIEW_VERDICTS))
        corrected = tmp_path / f"{name}-corrected.jsonl"
        proc = run_cli("review", "apply", work, export, "-o", corrected)
        assert proc.returncode == 0, proc.stderr
        reviewed = json.loads((work / "summary.json").read_text())["reviewed"]
        reviewed.pop("source")  # the export's path
        gold = [f for line in read_lines(corrected) for f in line["gold_facts"]]
        report = tmp_path / f"{name}-calibration.json"
        proc = run_cli("calibrate", export, "-o", report)
        assert proc.returncode == 0, proc.stderr
        results[name] = reviewed, gold, json.loads(report.read_text())["overall"]
    (r_plain, g_plain, c_plain), (r_user, g_user, c_user) = results["plain"], results["user"]
    assert r_user == r_plain and c_user == c_plain
    assert (c_user["tp"], c_user["fp"], c_user["fn"], c_user["tn"]) == (1, 1, 1, 1)
    assert g_user == [{**f, **USER} for f in g_plain]  # corrected and added gold: the user's fields kept


def test_a_folder_in_the_old_layout_is_resumed_compared_and_agreed(runs, tmp_path):
    """results.jsonl as an older factjudge wrote it (the verdict beside the fact's fields): eval
    resumes it (the lines it has reused, the missing one judged), compare and agree read it."""
    data, plain = runs["plain"]
    old = tmp_path / "old"
    shutil.copytree(plain, old)
    lines = [old_layout(x) for x in read_lines(plain / "results.jsonl")]
    assert "factjudge" not in lines[0]["gold_facts"][0] and lines[0]["gold_facts"][0]["status"] == "TP"
    # killed before the last document and the summary were written
    write_jsonl(old / "results.jsonl", lines[:-1])
    (old / "summary.json").unlink()

    proc = run_cli("eval", data, "-o", old, "--csv")
    assert proc.returncode == 0, proc.stderr
    assert "1 reused" in proc.stderr
    resumed = read_lines(old / "results.jsonl")
    assert resumed[0] == lines[0]  # the old line kept as it was, the new one in the new layout
    assert "factjudge" in resumed[1]["gold_facts"][0]
    summaries = [json.loads((d / "summary.json").read_text()) for d in (old, plain)]
    assert summaries[0]["micro"] == summaries[1]["micro"]
    assert summaries[0]["by_fact_type"] == summaries[1]["by_fact_type"]
    assert eval_to_pandas(old)[["id", "status"]].values.tolist() == \
        eval_to_pandas(plain)[["id", "status"]].values.tolist()

    write_jsonl(old / "results.jsonl", lines)  # the whole folder in the old layout
    for a, b in ((old, plain), (plain, old)):
        proc = run_cli("compare", a, b, "-o", tmp_path / "cmp")
        assert proc.returncode == 0, proc.stderr
        assert "0 facts changed status" in proc.stdout + proc.stderr
        assert "gold facts differ" not in proc.stdout + proc.stderr
        proc = run_cli("agree", a, b, "-o", tmp_path / "agree")
        assert proc.returncode == 0, proc.stderr
        assert "differing facts: 0" in proc.stdout and "kappa" in proc.stdout
