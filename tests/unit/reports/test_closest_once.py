"""Issue 39: eval's reports read each result line once and search each line's closest facts once."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from factjudge import evaluate_dataset
from factjudge.reports import rows
from factjudge.reports.review import ReviewQueue, review_queue
from factjudge.reports.rows import ClosestMemo


def _doc(i: int) -> dict[str, Any]:
    gold = [{"id": "g1", "fact_type": "revenue", "company": "Acme", "value": f"{i}00"},
            {"id": "g2", "fact_type": "ceo", "company": "Acme", "person": "Ann Lee"}]
    pred = [{"id": "p1", "fact_type": "revenue", "company": "Acme", "value": f"{i}01"},
            {"id": "p2", "fact_type": "ceo", "company": "Acme", "person": "Ann Lee"}]
    return {"doc_id": f"d{i}", "gold_facts": gold, "predicted_facts": pred}


def test_eval_searches_each_line_s_closest_facts_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(_doc(i)) + "\n" for i in range(1, 6)), encoding="utf-8")
    searched: list[str] = []
    finder = rows._finder

    def counted(line: Any, facts: Any, *forms: Any) -> Any:
        searched.append(line["doc_id"])
        return finder(line, facts, *forms)

    monkeypatch.setattr(rows, "_finder", counted)
    evaluate_dataset(data, out_dir=tmp_path / "out")
    assert sorted(searched) == [f"d{i}" for i in range(1, 6)]  # the rows, document view and review reuse it
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "101" in report and "review.html" in {p.name for p in (tmp_path / "out").iterdir()}


def test_memo_keeps_the_worst_documents_and_searches_the_others() -> None:
    memo = ClosestMemo(keep=1)
    lines = [{"doc_id": f"d{i}", "metrics": {"fn": 1, "fp": 0, "errors": 0}, "gold_facts": [],
              "predicted_facts": []} for i in range(3)]
    found: list[Any] = [{("gold", "g1"): ("kept", i)} for i in range(3)]
    memo.add(lines[0], (0.5, -1, 0), found[0])
    memo.add(lines[1], (0.2, -1, 1), found[1])  # worse: replaces d0
    memo.add(lines[2], (0.9, -1, 2), found[2])  # better than the kept one: not kept
    assert memo(lines[1]) is found[1]
    assert memo(lines[0]) == {} and memo(lines[2]) == {}  # searched again (no facts: nothing close)


def test_review_queue_holds_only_the_most_informative_decisions() -> None:
    lines = [{"doc_id": f"d{i}", "input_sha256": "x", "gold_facts": [
        {"id": "g1", "fact_type": "t", "a": "x", "status": "TP", "matched_ids": ["p1"]},
        {"id": "g2", "fact_type": "u", "a": "y", "status": "FN"}],
        "predicted_facts": [{"id": "p1", "fact_type": "t", "a": "x", "status": "TP", "matched_ids": ["g1"]}]}
        for i in range(4)]
    queue = ReviewQueue(max_items=3)
    for line in lines:
        queue.add(line)
    items, left_out = queue.items()
    assert left_out == 5 and [i["doc_id"] for i in items] == ["d0", "d1", "d2"]
    assert all(i["kind"] == "link" for i in items)  # priority 1 beats a miss with nothing close (0.5)
    assert (items, left_out) == review_queue(lines, max_items=3)


def _many_tp(i: int) -> dict[str, Any]:
    facts = [{"id": f"f{k}", "fact_type": "ceo", "company": f"C{k}", "person": f"P{k}"} for k in range(5)]
    miss = {"id": "x", "fact_type": "revenue", "company": "Acme", "value": f"{i}"}
    return {"doc_id": f"d{i}", "gold_facts": [*facts, miss], "predicted_facts": facts}


def test_select_rows_builds_only_the_rows_it_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    from factjudge import run_judge

    lines = [{"doc_id": d["doc_id"], **run_judge(d["gold_facts"], d["predicted_facts"], {}).to_dict()}
             for d in map(_many_tp, range(6))]
    copied: list[Any] = []
    shown = rows.shown_fields
    monkeypatch.setattr(rows, "shown_fields", lambda fact: copied.append(fact) or shown(fact))
    searched: list[str] = []

    def search(line: Any) -> Any:
        searched.append(line["doc_id"])
        return rows.closest_detail(line)

    got = rows.select_rows(lines, 2, tp_limit=3, closest=search)
    assert [(r["doc_id"], r["status"]) for r in got] == [
        ("d0", "TP"), ("d0", "TP"), ("d0", "TP"), ("d0", "FN"), ("d1", "FN")]
    # each kept row's fact and the one fact it is linked to; no row of a full quota is built
    assert len(copied) == 3 * 2 + 2
    assert searched == ["d0", "d1"]  # not the lines read after the failing rows are full


def test_review_queue_makes_only_the_items_it_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    from factjudge.reports import review

    lines = [{"doc_id": f"d{i}", "input_sha256": "x", "gold_facts": [
        {"id": "g1", "fact_type": "t", "a": "x", "status": "TP", "matched_ids": ["p1"]},
        {"id": "g2", "fact_type": "u", "a": "y", "status": "FN"}],
        "predicted_facts": [{"id": "p1", "fact_type": "t", "a": "x", "status": "TP", "matched_ids": ["g1"]}]}
        for i in range(4)]
    made: list[str] = []
    item = review._item
    monkeypatch.setattr(review, "_item", lambda *a: made.append(a[1]) or item(*a))
    queue = ReviewQueue(max_items=3)
    for line in lines:
        queue.add(line)
    items, left_out = queue.items()
    assert left_out == 5 and [(i["doc_id"], i["kind"]) for i in items] == [("d0", "link"), ("d1", "link"),
                                                                             ("d2", "link")]
    # d0's link and miss, d1's link fill the queue; d2's link replaces d0's miss: only the three
    # kept are made, at the end (d0's miss was made too, to be dropped)
    assert made == ["link", "link", "link"]


def test_a_full_review_queue_above_every_link_s_priority_reads_no_link(monkeypatch: pytest.MonkeyPatch) -> None:
    # issue #39: a run's decisions are mostly links (priority 3 at most); once the queue keeps
    # only near misses above that, a line's links are counted, not read (a prediction's confidence
    # read per link before: 2 here)
    from types import SimpleNamespace

    from calls import count_calls

    from factjudge.reports import review

    gold = [{"id": "g1", "fact_type": "t", "a": "x", "status": "FN"}]
    near: Any = {("gold", "g1"): ({"id": "p1"}, SimpleNamespace(score=90.0))}
    miss = {"doc_id": "d0", "input_sha256": "x", "gold_facts": gold, "predicted_facts": []}
    links = {"doc_id": "d1", "input_sha256": "x", "gold_facts": [
        {"id": f"g{k}", "fact_type": "t", "a": "x", "status": "TP", "matched_ids": [f"p{k}"]} for k in (1, 2)],
        "predicted_facts": [{"id": f"p{k}", "fact_type": "t", "a": "x", "status": "TP", "confidence": 0.0,
                             "matched_ids": [f"g{k}"]} for k in (1, 2)]}
    queue = ReviewQueue(max_items=1)
    queue.add(miss, near)
    reads = count_calls(monkeypatch, review, "_confidence")
    queue.add(links, {})
    items, left_out = queue.items()
    assert reads == [0] and left_out == 2 and [(i["doc_id"], i["priority"]) for i in items] == [("d0", 3.9)]
    queue = ReviewQueue(max_items=2)  # room for a link: it is read and kept
    queue.add(miss, near)
    queue.add(links, {})
    assert reads == [2] and [(i["doc_id"], i["kind"]) for i in queue.items()[0]] == [("d0", "miss"), ("d1", "link")]


def test_the_reports_reuse_the_lines_the_pass_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from factjudge.evaluation import runner
    from factjudge.io.runfolder import RunFolder

    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(_doc(i)) + "\n" for i in range(1, 9)), encoding="utf-8")
    read: list[int] = []
    line_at = RunFolder.line_at
    monkeypatch.setattr(RunFolder, "line_at", lambda self, fh, ref: read.append(ref.offset) or line_at(self, fh, ref))
    pages = {}
    for keep in (runner.KEEP_FACTS, 0, 9):
        read.clear()
        monkeypatch.setattr(runner, "KEEP_FACTS", keep)
        out = tmp_path / f"out{keep}"
        evaluate_dataset(data, out_dir=out)
        pages[keep] = [(out / name).read_text(encoding="utf-8").replace(str(out), "OUT")
                       for name in ("report.md", "report.html")]
        # 8 lines of 4 facts: all kept, none, or the two worst (the others read again)
        assert len(read) == {runner.KEEP_FACTS: 0, 0: 8, 9: 6}[keep]
    strip = [re.compile(r"\d{4}-\d\d-\d\dT[\d:+]+"), re.compile(r"(seconds[^\n]{0,120}?)\d+\.\d+")]

    def steady(text: str) -> str:
        return strip[1].sub(r"\1S", strip[0].sub("T", text))

    assert [steady(t) for t in pages[0]] == [steady(t) for t in pages[runner.KEEP_FACTS]] == [
        steady(t) for t in pages[9]]


def _count_field_comparisons(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the fields the rules judge compares from now on, in order."""
    from factjudge.judges.rules import closeness, compare

    compared: list[str] = []
    field, outcome = compare.compare_field, compare.compare_outcome

    def counted(name: str, *args: Any, **kwargs: Any) -> Any:
        compared.append(name)
        return field(name, *args, **kwargs)

    def counted_outcome(name: str, *args: Any, **kwargs: Any) -> Any:
        compared.append(name)
        return outcome(name, *args, **kwargs)

    monkeypatch.setattr(compare, "compare_field", counted)  # what compare_facts calls
    monkeypatch.setattr(closeness, "compare_field", counted, raising=False)
    # what the closest-fact search calls (it reads a field's verdict and similarity only)
    monkeypatch.setattr(closeness, "compare_outcome", counted_outcome, raising=False)
    return compared


def test_closest_search_leaves_a_candidate_that_cannot_win(monkeypatch: pytest.MonkeyPatch) -> None:
    """The closest-fact search of every failing fact (finish_run's largest part) compares a
    candidate's fields only until it cannot beat the closest so far, and tries the likely closest
    first; it finds what the full ranking puts first."""
    from factjudge import run_judge
    from factjudge.judges.rules import closeness
    from factjudge.models import JudgeConfig

    gold = [{"id": "g1", "fact_type": "role", "company": "Acme Corp", "person": "Ann Lee", "role": "CEO",
             "city": "Oslo"}]
    pred = [{"id": "p1", "fact_type": "role", "company": "Globex", "person": "Bob Stone", "role": "CFO",
             "city": "Oslo"},
            {"id": "p2", "fact_type": "role", "company": "Initech", "person": "Carl Dunn", "role": "CTO",
             "city": "Rome"},
            {"id": "p3", "fact_type": "role", "company": "Acme Corp", "person": "Ann Lee", "role": "CEO",
             "city": "Bergen"}]
    line = {"doc_id": "d1", **run_judge(gold, pred, {}).to_dict()}
    compared = _count_field_comparisons(monkeypatch)
    found = rows.closest_detail(line, ("FN",))
    # p3 in full (4 fields); p1 and p2 left at their second differing field: 12 comparisons before
    assert len(compared) == 8
    fact, near = found[("gold", "g1")]
    assert fact["id"] == "p3" and near.differ == ["city"]
    monkeypatch.undo()
    assert (2, near) == closeness.rules_ranker(JudgeConfig())(gold, pred)[0][0]


def test_closest_search_compares_a_pair_of_values_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's documents repeat values (companies, periods): their normal forms are shared, and
    the closest-fact search compares a pair of them once a run, not once a document."""
    from factjudge import run_judge

    gold = [{"id": "g1", "fact_type": "role", "company": "Acme Corp", "person": "Ann Lee", "city": "Oslo"}]
    pred = [{"id": "p1", "fact_type": "role", "company": "Acme Corp", "person": "Ann Lee", "city": "Rome"}]
    first = {"doc_id": "d1", **run_judge(gold, pred, {}).to_dict()}
    again = {**first, "doc_id": "d2"}  # a run's lines share their config (RunFolder.with_config)
    compared = _count_field_comparisons(monkeypatch)
    found = rows.closest_detail(first)
    # g1 against p1 and p1 against g1: the equal company and person once, Oslo/Rome each way (6 before)
    assert sorted(compared) == ["city", "city", "company", "person"]
    assert rows.closest_detail(again) == found and len(compared) == 4  # nothing compared again (12 before)


def test_review_page_encodes_each_item_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """review.html embeds the items' JSON its size cut measured (each was encoded twice)."""
    from factjudge.core.aggregate import Aggregator, doc_stats
    from factjudge.reports import docview, review

    lines = [{"doc_id": f"d{i}", "input_sha256": "x", "gold_facts": [
        {"id": "g1", "fact_type": "t", "a": "<x>", "status": "TP", "matched_ids": ["p1"]},
        {"id": "g2", "fact_type": "u", "a": "y\u2028", "status": "FN"}],
        "predicted_facts": [{"id": "p1", "fact_type": "t", "a": "<x>", "status": "TP", "matched_ids": ["g1"]}],
        "metrics": {"tp_predicted": 1, "fp": 0, "tp_gold": 1, "fn": 1, "errors": 0}} for i in range(4)]
    queue = ReviewQueue(max_items=5)
    agg = Aggregator()
    for line in lines:
        queue.add(line)
        agg.add(doc_stats(line))
    encoded: list[Any] = []
    encode = docview._COMPACT
    monkeypatch.setattr(docview, "_COMPACT", lambda data: encoded.append(data) or encode(data))
    page = review.render_review(agg.summary(10, 0), queue)
    by_page = encoded[:]  # (not what items() below encodes)
    items, _ = queue.items()
    assert len(items) == 5
    # each item once, then the page's data without them (the items were encoded a second time in it)
    assert sum(x == i for x in by_page for i in items) == 5
    assert [x for x in by_page if isinstance(x, dict) and "run" in x] == [
        {"run": by_page[-1]["run"], "kind": review.EXPORT_KIND, "items": []}]
    data = page.split('id="review-data">', 1)[1].split("</script>", 1)[0]
    assert data == docview.json_for_script({**by_page[-1], "items": items})


def test_the_facts_table_calls_no_macro_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """report.html's rows write their doc_id link and facts as the macros do, without calling
    them (two or three calls a row were 14% of the page's rendering)."""
    import jinja2.runtime

    from factjudge.reports.html import environment

    def doc(i: int) -> dict[str, Any]:
        gold = [{"id": f"g{k}", "fact_type": "ceo", "company": f"C{k} <&>", "person": f"P{k}"} for k in range(8)]
        pred = [{"id": f"p{k}", "fact_type": "ceo", "company": f"C{k} <&>", "person": f"Q{k}" if k % 2 else f"P{k}",
                 "n": [k]} for k in range(8)]
        return {"doc_id": f"d/{i}", "gold_facts": gold, "predicted_facts": pred}

    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(doc(i)) + "\n" for i in range(3)), encoding="utf-8")
    calls: list[str] = []
    invoke = jinja2.runtime.Macro._invoke
    monkeypatch.setattr(jinja2.runtime.Macro, "_invoke",
                        lambda self, *a: calls.append(self.name) or invoke(self, *a))
    evaluate_dataset(data, out_dir=tmp_path / "out")
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    table = page.split('<table id="facts">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr data-type") == 3 * 16  # 4 FN, 4 FP and 8 TP rows a document
    assert calls.count("fields") == 0 and calls.count("doc_anchor") <= 3 + 3  # the worst table's, the sources'
    monkeypatch.undo()
    fields = environment().get_template("macros.html.j2").module.fields  # type: ignore[attr-defined]
    anchor = '<td><a href="#doc=d%2F1" class="doclink">d/1</a></td>'
    assert anchor in table
    for k in range(8):  # each prediction as the macro writes it: in its row, and as a gold row's linked or closest fact
        assert table.count(str(fields({"company": f"C{k} <&>", "person": f"Q{k}" if k % 2 else f"P{k}",
                                       "n": [k]}))) == 2 * 3


def test_the_facts_table_s_pieces_do_not_pass_through_the_page_s_template(monkeypatch: pytest.MonkeyPatch) -> None:
    """report.html's table is rendered on its own: the page's template writes as many pieces
    whatever the rows (an included table's every piece passed up through its layers)."""
    from factjudge import run_judge
    from factjudge.core.aggregate import Aggregator, doc_stats
    from factjudge.reports.html import environment, render_html

    lines = [{"doc_id": d["doc_id"], **run_judge(d["gold_facts"], d["predicted_facts"], {}).to_dict()}
             for d in map(_many_tp, range(4))]
    agg = Aggregator()
    for line in lines:
        agg.add(doc_stats(line))
    summary = agg.summary(10, 0)
    page = environment().get_template("report.html.j2")
    root = page.root_render_func
    pieces: list[str] = []

    def counted(context: Any) -> Any:
        for piece in root(context):
            pieces.append(piece)
            yield piece

    monkeypatch.setattr(page, "root_render_func", counted)
    written = {}
    for shown in (1, 4):
        pieces.clear()
        rows_shown = rows.select_rows(lines[:shown], 100, tp_limit=100)
        html = render_html(summary, [], rows_shown, len(rows_shown))
        written[shown] = len(pieces)
        assert html.count("<tr data-type") == len(rows_shown) == 11 * shown  # 5 TP a side, 1 FN
    assert written[4] == written[1]  # some 50 more a row before
