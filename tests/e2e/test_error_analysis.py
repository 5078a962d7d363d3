"""Error analysis end to end (#23 items 2, 3, 5, 6; #22 item 5's near-miss count): near misses and
the fields they differ in, the categories, merges and splits in results.jsonl, summary.json, the
summary lines, the reports, compare and the DataFrames; one closeness measure everywhere."""
import json

import pytest
from evalkit import CONFIG, TRUTH, fact, llm_args, read_lines, run_cli, write_jsonl

from factjudge import run_judge
from factjudge.io.tables import eval_to_pandas

GOLD = [fact("g1", "role", person="Jane Smith", role="treasurer"),
        fact("g2", "role", person="Bob Jones", role="CFO"),
        fact("g3", "role", person="Ann Lee", role="chair"),
        fact("g4", "city", name="Berlin")]
PRED = [fact("p1", "role", person="Jane Smith", role="secretary"),       # near miss: role
        fact("p2", "role", person="Bob Jones", role="CFO"),              # correct
        fact("p3", "role", person="Bob Jones", role="CFO"),              # duplicate of p2 (a split)
        fact("p4", "role", person="Zed Zorro", role="intern"),           # spurious
        fact("p5", "city", name="Bergen")]                               # one field: not a near miss
DOCS = [{"doc_id": "d1", "gold_facts": GOLD, "predicted_facts": PRED}]


@pytest.fixture
def run(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    out = tmp_path / "out"
    proc = run_cli("eval", data, "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_summary_json_counts_the_categories_per_fact_type_and_they_add_up(run):
    out, _ = run
    summary = json.loads((out / "summary.json").read_text())
    role = summary["categories_by_fact_type"]["role"]
    assert {k: role[k] for k in ("correct", "near_miss", "missing", "spurious", "duplicate", "merges", "splits")} == {
        "correct": 1, "near_miss": 1, "missing": 1, "spurious": 1, "duplicate": 1, "merges": 0, "splits": 1}
    assert role["near_miss_fields"] == {"role": 1} == role["one_field"]
    city = summary["categories_by_fact_type"]["city"]
    assert (city["near_miss"], city["missing"], city["spurious"]) == (0, 1, 1)
    for t, c in summary["categories_by_fact_type"].items():  # the identities, per fact type
        m = summary["by_fact_type"][t]
        assert (c["correct"], c["near_miss"] + c["missing"], c["near_miss"] + c["spurious"] + c["duplicate"]) == (
            m["tp_gold"], m["fn"], m["fp"])
    total = summary["categories"]
    assert (total["near_miss"], total["missing"], total["spurious"], total["one_field"]) == (1, 2, 2, {"role": 1})
    [line] = read_lines(out / "results.jsonl")
    assert line["analysis"]["near_misses"] == [{"fact_type": "role", "gold": "g1", "predicted": "p1",
                                                "score": line["analysis"]["near_misses"][0]["score"],
                                                "agree": ["person"], "differ": ["role"]}]
    assert line["analysis"]["splits"] == [{"fact_type": "role", "gold": "g2", "kept": "p2", "dropped": ["p3"]}]


def test_the_summary_line_counts_near_misses_and_suggests_the_hybrid_judge(run):
    _, proc = run
    line = next(x for x in proc.stderr.splitlines() if x.startswith("1 documents"))
    assert ("| 1 correct, 1 near miss (one field only: role 1), 2 missing, 2 spurious, 1 duplicate: "
            "review the near misses or try --judge hybrid") in line


def test_the_judge_summary_line_too(tmp_path):
    gold = write_jsonl(tmp_path / "g.jsonl", GOLD)
    pred = write_jsonl(tmp_path / "p.jsonl", PRED)
    proc = run_cli("judge", gold, pred, "-o", tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr
    assert "1 near miss (one field only: role 1)" in proc.stderr and "--judge hybrid" in proc.stderr
    assert json.loads((tmp_path / "r.json").read_text())["analysis"]["near_misses"][0]["differ"] == ["role"]


def test_the_reports_say_where_the_errors_are(run):
    out, _ = run
    md = (out / "report.md").read_text()
    section = md.split("## Where the errors are")[1].split("\n## ")[0]
    assert "| role | 1 | 1 | 1 | 1 | 1 | 0 | 1 | role 1 of 1 \\(1 in one field only\\) |" in section
    html = (out / "report.html").read_text()
    assert 'id="categories"' in html and "role 1 of 1 (1 in one field only)" in html


def test_one_closeness_measure_in_the_reasoning_and_the_report(run):
    """The rules judge says "similarity 67 < 90" for Berlin / Bergen; the report's closest fact used
    another scorer (token_set_ratio: 100 for Berlin / "Berlin, Germany" where the judge said 60) and
    now says what the judge says."""
    out, _ = run
    [line] = read_lines(out / "results.jsonl")
    g4 = next(f for f in line["gold_facts"] if f["id"] == "g4")
    assert "similarity 67 < 90" in g4["factjudge"]["reasoning"]
    md = (out / "report.md").read_text()
    row = next(x for x in md.splitlines() if x.startswith("| d1 | gold | g4 |"))
    assert r"closest p5 \(FP, 66.7; differs in: name\)" in row  # the same score, one decimal
    g1 = next(x for x in md.splitlines() if x.startswith("| d1 | gold | g1 |"))
    # two fields: person 100, role as the judge scored it; the mean is the closeness
    role_score = float(next(f for f in line["gold_facts"] if f["id"] == "g1")["factjudge"]["reasoning"]
                       .split("similarity ")[1].split(" ")[0])
    shown = float(g1.split("closest p1 \\(FP, ")[1].split(";")[0])
    assert abs(shown - (100 + role_score) / 2) <= 0.5 and "differs in: role\\)" in g1  # the reasoning rounds


def test_dataframes_carry_the_category_of_every_fact(run):
    out, _ = run
    df = eval_to_pandas(out).set_index(["side", "id"])
    assert df.loc[("gold", "g1"), "category"] == "near_miss" and df.loc[("gold", "g1"), "partner"] == "p1"
    assert df.loc[("gold", "g1"), "differ"] == ["role"] and df.loc[("predicted", "p1"), "differ"] == ["role"]
    assert df.loc[("predicted", "p3"), "category"] == "duplicate" and df.loc[("predicted", "p3"), "partner"] == "p2"
    assert df.loc[("gold", "g2"), "granularity"] == "split" and df.loc[("predicted", "p3"), "granularity"] == "split"
    assert df.loc[("gold", "g3"), "category"] == "missing" and df.loc[("predicted", "p4"), "category"] == "spurious"
    assert df.loc[("predicted", "p2"), "category"] == "correct"
    one = run_judge(GOLD, PRED).to_pandas().set_index(["side", "id"])
    assert (one["category"] == df["category"]).all()


def test_a_merge_is_counted_per_fact_type(tmp_path):
    gold = [fact("g1", "deal", buyer="Acme", target="Initech"), fact("g2", "deal", buyer="Acme", target="Initech")]
    pred = [fact("p1", "deal", buyer="Acme", target="Initech")]
    data = write_jsonl(tmp_path / "data.jsonl", [{"doc_id": "d", "gold_facts": gold, "predicted_facts": pred}])
    proc = run_cli("eval", data, "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["categories_by_fact_type"]["deal"]["merges"] == 1
    df = eval_to_pandas(tmp_path / "out")
    assert list(df["granularity"]) == ["merge", "merge", "merge"]


def test_compare_aggregates_near_misses_per_fact_type(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    cfg = tmp_path / "loose.json"
    cfg.write_text(json.dumps({"text_threshold": 20}))
    assert run_cli("eval", data, "-o", tmp_path / "a").returncode == 0
    assert run_cli("eval", data, "-c", cfg, "-o", tmp_path / "b").returncode == 0
    proc = run_cli("compare", tmp_path / "a", tmp_path / "b", "-o", tmp_path / "cmp")
    assert proc.returncode == 0, proc.stderr
    assert "near misses: A 1 (role 1), B 0" in proc.stdout
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert "| role | A | 1 | 1 | 1 | 1 | 1 | 0 | 1 | role 1 of 1 \\(1 in one field only\\) |" in md


def test_an_llm_run_is_analysed_with_the_same_measure(server, dataset, tmp_path):
    """The hand-worked dataset of evalkit, judged by the scripted LLM: its categories follow."""
    data, cfg = dataset
    server.truth = TRUTH
    out = tmp_path / "out"
    proc = run_cli("eval", data, "-c", cfg, *llm_args(server, tmp_path / "cache"), "-o", out)
    assert proc.returncode == 0, proc.stderr
    cats = json.loads((out / "summary.json").read_text())["categories_by_fact_type"]
    pick = ("correct", "near_miss", "missing", "spurious", "duplicate", "splits")
    assert {t: tuple(c[k] for k in pick) for t, c in cats.items()} == {
        "ceo": (1, 0, 1, 1, 0, 0), "revenue": (3, 0, 2, 2, 1, 1)}
    assert CONFIG["entity_types"] == ["revenue", "ceo"]
    assert "try --judge hybrid" not in proc.stderr  # no near miss, and not the rules judge
