"""The reports package as pure functions: Markdown escaping, provenance, rows (closest, linked, TP, worst
documents first), the embedded document data, and the compare pages."""
import json
import re

import pytest
from evalkit import ROOT

from factjudge import run_judge
from factjudge.core.aggregate import Summary
from factjudge.io.run_models import CompareResult
from factjudge.models import Counts
from factjudge.reports.docview import embed_documents, json_for_script
from factjudge.reports.html import bar_chart, render_compare_html, render_html
from factjudge.reports.markdown import md_escape, render_compare_markdown, render_markdown
from factjudge.reports.rows import (
    changed_facts,
    closest_facts,
    collect_rows,
    fact_type_keys,
    select_rows,
    worst_order_key,
)
from factjudge.reports.text import banners, config_hash

HOSTILE_MODEL = 'm <img src=x onerror="alert(1)">'
HOSTILE_TEXT = ("[x](javascript:alert(1)) ![i](http://e/x.png) <javascript:alert(2)> "
                "<b>bold</b> *em* __strong__ `code` a|b ~~s~~ $x$ \\[y] &lt; [ref]: javascript:z")


def md_render(text: str) -> str:
    """CommonMark with tables and raw HTML on, as GitHub and most viewers read report.md."""
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").enable("table").enable("strikethrough").render(text)


def line_of(doc_id, gold, predicted, config=None):
    return {"doc_id": doc_id, **run_judge(gold, predicted, config or {}).to_dict()}


def example_lines():
    docs = [json.loads(x) for x in (ROOT / "examples" / "dataset.jsonl").read_text().splitlines()]
    config = {"entity_types": ["revenue", "net_income", "ceo", "headquarters", "segment_revenue",
                               "operating_margin", "employees"]}
    return [line_of(d["doc_id"], d["gold_facts"], d["predicted_facts"], config) for d in docs]


def summary_of(lines, **extra):
    """A summary shaped like evaluate's, from result lines."""
    keys = ("tp_gold", "fn", "tp_predicted", "fp", "errors", "out_of_scope_gold", "out_of_scope_predicted")
    micro = {k: sum(x["metrics"][k] for x in lines) for k in keys}
    micro.update(precision=0.5, recall=0.5, f1=0.5)
    return Summary.model_validate({"documents": len(lines), "micro": micro,
            "macro": {"precision": 0.5, "recall": 0.5, "f1": 0.5,
                      "defined": {"precision": 1, "recall": 1, "f1": 1}},
            "by_fact_type": {}, "ci95": {"precision": [0.1, 0.9], "recall": None, "f1": [0.2, 0.8]},
            "conflicts": {}, "usage": {"llm_calls": 0, "seconds": 0.1},
            "bootstrap": {"resamples": 10, "seed": 0, "level": 0.95}, "skipped": [],
            "judge": {"name": "llm", "model": HOSTILE_MODEL, "temperature": 0.0},
            "config": {"entity_types": ["revenue"], "tolerances": {"value": {"relative": 0.01}},
                       "matching_rules": ["Names [match](javascript:x) <i>loosely</i>"]},
            **extra})


PROVENANCE = {"factjudge": "9.9.9", "created": "2025-06-01T12:00:00+00:00",
              "inputs": ["data/gold <x>.jsonl", "data/pred_[1].jsonl"]}


# --------------------------------------------------------------------------- md_escape


@pytest.mark.parametrize("raw, escaped", [
    ("[x](javascript:alert(1))", r"\[x\]\(javascript:alert\(1\)\)"),
    ("<img src=x>", "&lt;img src=x&gt;"),
    ("a|b", r"a\|b"),
    ("`c` *e* ~s~ $m$ \\", r"\`c\` \*e\* \~s\~ \$m\$ \\"),
    ("&lt;", "&amp;lt;"),
    ("gold_promoted_by_predicted", "gold_promoted_by_predicted"),  # intraword: no emphasis
    ("_a_ __b__ x_", r"\_a\_ \_\_b\_\_ x\_"),
    ("two\nlines\r\n", "two lines "),
    (12.5, "12.5"),
])
def test_md_escape(raw, escaped):
    assert md_escape(raw) == escaped


def test_md_escape_leaves_no_markup_in_a_commonmark_renderer():
    rendered = md_render(f"| a | b |\n|---|---|\n| {md_escape(HOSTILE_TEXT)} | {md_escape(HOSTILE_MODEL)} |\n")
    assert re.findall(r"<(\w+)", rendered) == ["table", "thead", "tr", "th", "th", "tbody", "tr", "td", "td"]
    # what a reader sees is the text itself
    visible = re.sub(r"<[^>]+>", "", rendered).replace("&lt;", "<").replace("&gt;", ">") \
        .replace("&quot;", '"').replace("&amp;", "&")
    assert HOSTILE_TEXT in visible and HOSTILE_MODEL in visible


def test_markdown_report_escapes_model_names_and_fact_text():
    gold = [{"id": "g1", "fact_type": "revenue", "value": HOSTILE_TEXT},
            {"id": "g|2", "fact_type": "revenue", "value": "x"}]
    line = line_of("doc [1](javascript:d)", gold, [{"id": "p1", "fact_type": "revenue", "value": "y"}])
    summary = summary_of([line], provenance=PROVENANCE,
                         skipped=[{"file": "<f>.jsonl", "line": 3, "error": "bad *x*"}],
                         by_fact_type={"rev_<i>": {**line["metrics"]}})
    worst = [{"doc_id": line["doc_id"], **{k: line["metrics"][k] for k in
                                           ("precision", "recall", "f1", "fn", "fp", "errors")}}]
    rows = collect_rows(line)
    md = render_markdown(summary, worst, rows, len(rows))
    assert "<img" not in md and "<i>" not in md and "](javascript" not in md
    assert "judge llm m &lt;img src=x onerror=\"alert\\(1\\)\"&gt;." in md
    rendered = md_render(md)
    assert not re.search(r"<(a|img|i|b|em|strong|code|del|script)\b", rendered)
    # every table row has as many cells as its header: no | in a value split a cell
    for table in re.findall(r"<table>.*?</table>", rendered, re.S):
        width = len(re.findall(r"<th[ >]", table.split("</thead>")[0]))
        for tr in re.findall(r"<tr>(.*?)</tr>", table.split("</thead>")[1], re.S):
            assert len(re.findall(r"<td", tr)) == width


# --------------------------------------------------------------------------- provenance


def test_provenance_config_and_judge_settings_in_both_reports():
    lines = example_lines()[:2]
    summary = summary_of(lines, provenance=PROVENANCE)
    rows = [r for x in lines for r in collect_rows(x)]
    md = render_markdown(summary, [], rows, len(rows))
    prov = md.split("## Provenance")[1]
    assert "| factjudge | 9.9.9 |" in prov and "| created | 2025-06-01T12:00:00+00:00 |" in prov
    assert "| input | data/gold &lt;x&gt;.jsonl |" in prov and r"| input | data/pred\_\[1\].jsonl |" in prov
    assert r'| tolerances | {"value": {"relative": 0.01}} |' in prov
    assert "| temperature | 0.0 |" in prov and "| model | m &lt;img" in prov
    assert md.index("## Usage") < md.index("## Provenance")  # run-to-run details come last

    page = render_html(summary, [], rows, len(rows))
    assert ('<p class="muted" id="provenance-line">factjudge 9.9.9, created 2025-06-01T12:00:00+00:00, '
            "input data/gold &lt;x&gt;.jsonl, data/pred_[1].jsonl.") in page
    table = page.split('id="config-table"')[1].split("</table>")[0]
    assert "<th>tolerances</th><td><code>{&#34;value&#34;: {&#34;relative&#34;: 0.01}}</code></td>" in table
    assert "<li>Names [match](javascript:x) &lt;i&gt;loosely&lt;/i&gt;</li>" in table
    judge = page.split('id="judge-table"')[1].split("</table>")[0]
    assert "<th>model</th><td>m &lt;img src=x onerror=&#34;alert(1)&#34;&gt;</td>" in judge
    assert "<img" not in page

    # an old summary without provenance still renders
    old = summary_of(lines)
    assert "| factjudge | not recorded |" in render_markdown(old, [], [], 0)
    assert 'id="provenance-line"' not in render_html(old, [], [], 0)


# --------------------------------------------------------------------------- rows


NEAR = [
    {"id": "g1", "fact_type": "revenue", "entity": "Contoso", "period": "FY2023", "value": "9.8%"},
    {"id": "g2", "fact_type": "ceo", "name": "Maria Lopez"},
    {"id": "g3", "fact_type": "revenue", "entity": "Contoso", "period": "FY2022", "value": "7"},
]
NEAR_PRED = [
    {"id": "p1", "fact_type": "revenue", "entity": "Fabrikam", "period": "FY2021", "value": "1"},
    {"id": "p2", "fact_type": "revenue", "entity": "Contoso", "period": "FY2023", "value": "9.9%"},
    {"id": "p3", "fact_type": "ceo", "name": "Maria Lopez"},
    {"id": "p4", "fact_type": "headcount", "entity": "Contoso", "period": "FY2023", "value": "9.8%"},
    {"id": "p5", "fact_type": "revenue", "entity": "Contoso", "period": "FY2022", "value": "7"},
]


def test_rows_show_the_closest_fact_of_a_near_miss_and_no_matched_column():
    line = line_of("d", NEAR, NEAR_PRED)
    rows = {(r["side"], r["id"]): r for r in collect_rows(line)}
    assert set(rows) == {("gold", "g1"), ("predicted", "p1"), ("predicted", "p2"), ("predicted", "p4")}
    g1 = rows[("gold", "g1")]
    # same fact_type only (p4 has the very same text, but another type), the most similar text
    assert g1["closest"]["id"] == "p2" and g1["closest"]["status"] == "FP"
    assert g1["closest"]["fact"] == {"entity": "Contoso", "period": "FY2023", "value": "9.9%"}
    assert 0 < g1["closest"]["score"] < 100 and g1["linked"] == [] and g1["matched_ids"] == []
    assert rows[("predicted", "p2")]["closest"]["id"] == "g1"
    assert rows[("predicted", "p4")]["closest"] is None  # no gold fact of its type
    md = render_markdown(summary_of([line]), [], list(rows.values()), 4)
    header = next(x for x in md.splitlines() if x.startswith("| doc_id | side | id |"))
    assert "matched" not in header and "linked / closest" in header
    g1_md = next(x for x in md.splitlines() if x.startswith("| d | gold | g1 |"))
    assert r'closest p2 \(FP, ' in g1_md and '"value": "9.9%"' in g1_md


def test_closest_facts_ties_go_to_the_earliest_and_zero_scores_to_none():
    line = {"doc_id": "d",
            "gold_facts": [{"id": "g", "fact_type": "t", "v": "abc", "status": "FN"},
                           {"id": "h", "fact_type": "t", "v": "zzz", "status": "FN"}],
            "predicted_facts": [{"id": "p", "fact_type": "t", "v": "abc", "status": "FP"},
                                {"id": "q", "fact_type": "t", "v": "abc", "status": "TP"}]}
    near = closest_facts(line)
    assert near[("gold", "g")][0]["id"] == "p" and near[("gold", "g")][1] == 100
    assert ("gold", "h") not in near


def test_tp_rows_carry_the_fact_they_are_linked_to():
    line = line_of("d", NEAR, NEAR_PRED)
    assert all(r["status"] != "TP" for r in collect_rows(line))
    tp = [r for r in collect_rows(line, include_tp=True) if r["status"] == "TP"]
    assert {(r["side"], r["id"]) for r in tp} == {("gold", "g2"), ("gold", "g3"), ("predicted", "p3"),
                                                  ("predicted", "p5")}
    g2 = next(r for r in tp if r["id"] == "g2")
    assert g2["linked"] == [{"id": "p3", "status": "TP", "fact": {"name": "Maria Lopez"}}]
    assert g2["closest"] is None
    summary = summary_of([line])
    rows = collect_rows(line, include_tp=True)
    md = render_markdown(summary, [], rows, 4)
    spot = md.split("## TP facts (spot check)")[1].split("## Usage")[0]
    assert '| d | gold | g2 | ceo | TP | {"name": "Maria Lopez"} | linked p3 {"name": "Maria Lopez"} |' in spot
    failing = md.split("## FN, FP and ERROR facts")[1].split("##")[0]
    assert "| TP |" not in failing
    page = render_html(summary, [], rows, 4)
    trs = re.findall(r"<tr data-type[^>]*>", page)
    assert len(trs) == 8 and sum(" hidden" in t for t in trs) == 4
    assert all(" hidden" in t for t in trs if 'data-status="TP"' in t)
    assert '<option value="TP">TP</option>' in page and '<option value="all">all</option>' in page
    assert 'showing <span id="shown">4</span> of <span id="rows-in-table">8</span> rows' in page


def test_select_rows_takes_the_worst_documents_first_and_reads_no_further():
    lines = example_lines()
    order = sorted(range(len(lines)), key=lambda i: worst_order_key(lines[i]["metrics"], i))
    f1s = [lines[i]["metrics"]["f1"] for i in order]
    assert f1s == sorted(f1s)
    read = []

    def stream():
        for i in order:
            read.append(i)
            yield lines[i]

    first = collect_rows(lines[order[0]])
    rows = select_rows(stream(), len(first) + 1)
    assert rows[:len(first)] == first and rows[-1]["doc_id"] == lines[order[1]]["doc_id"]
    assert read == order[:2]
    total = sum(len(collect_rows(x)) for x in lines)
    summary = summary_of(lines)
    md = render_markdown(summary, [], rows, total, rows_order="worst")
    assert (f"Showing the {len(rows)} rows of the worst documents first, of {total} FN/FP/ERROR "
            "facts; all of them are in results.jsonl.") in md
    assert f"Showing the first {len(rows)} of {total}" in render_markdown(summary, [], rows, total)
    page = render_html(summary, [], rows, total, rows_order="worst")
    assert f"Showing the {len(rows)} rows of the worst documents first, of {total}" in page
    # TP rows have their own budget
    mixed = select_rows(iter(lines), 3, tp_limit=2)
    assert [r["status"] == "TP" for r in mixed].count(True) == 2 and len(mixed) == 5


def test_the_document_filter_lists_the_documents_of_the_rows():
    lines = example_lines()
    rows = select_rows(lines, 1000)
    page = render_html(summary_of(lines), [], rows, len(rows))
    select = page.split('<select id="filter-doc">')[1].split("</select>")[0]
    assert re.findall(r'<option value="([^"]*)">', select) == ["", *dict.fromkeys(r["doc_id"] for r in rows)]


# --------------------------------------------------------------------------- document view data


def test_embedded_documents_are_inert_json_within_the_caps():
    hostile = line_of("x</script><script>alert(1)</script>",
                      [{"id": "g1", "fact_type": "t", "v": "</SCRIPT><!--<script>"}],
                      [{"id": "p1", "fact_type": "t", "v": "</SCRIPT><!--<script>"}])
    lines = [hostile, *example_lines()]
    worst = [{"doc_id": x["doc_id"], "precision": 0, "recall": 0, "f1": 0, "fn": 1, "fp": 1, "errors": 0}
             for x in lines]
    page = render_html(summary_of(lines), worst, [], 0, documents=lines, max_documents=3)
    data = page.split('<script type="application/json" id="doc-data">')[1].split("</script>")[0]
    assert "<" not in data and ">" not in data
    docs = json.loads(data)
    assert [d["doc_id"] for d in docs] == [x["doc_id"] for x in lines[:3]]
    assert docs[0]["gold"][0]["fields"] == {"v": "</SCRIPT><!--<script>"}
    assert docs[0]["pairs"] == [[0, 0]]
    # the worst-documents table links the embedded documents only
    links = re.findall(r'<a href="#doc=([^"]*)" class="doclink">', page.split('id="worst"')[1].split("</table>")[0])
    assert links == ["x%3C%2Fscript%3E%3Cscript%3Ealert%281%29%3C%2Fscript%3E",
                     lines[1]["doc_id"], lines[2]["doc_id"]]
    assert page.count("<script>") == 1 and page.count("</script>") == 2  # the page's own only
    # the size cap leaves out what does not fit, and says so
    sizes = [len(json_for_script(p).encode()) + 1 for p in embed_documents(lines[1:], 10, 10**9)[0]]
    kept, left_out = embed_documents(lines[1:], 10, sizes[0] + sizes[2])
    assert [d["doc_id"] for d in kept] == [lines[1]["doc_id"]] + [
        x["doc_id"] for x, s in zip(lines[2:], sizes[1:], strict=False) if s <= sizes[2]][:1]
    assert left_out == len(lines) - 1 - len(kept)
    assert "No document is embedded" in render_html(summary_of(lines), worst, [], 0)


def test_document_payload_pairs_and_closest():
    line = line_of("d", NEAR, NEAR_PRED)
    (doc,), _ = embed_documents([line])
    ids = lambda pairs: sorted((doc["gold"][g]["id"], doc["predicted"][p]["id"]) for g, p, *_ in pairs)  # noqa: E731
    assert ids(doc["pairs"]) == [("g2", "p3"), ("g3", "p5")]
    # dashed "closest" connectors, one per pair: g1 <-> p2 both ways counts once
    assert ids(doc["near"]) == [("g1", "p2"), ("g3", "p1")]
    assert doc["gold"][0]["closest"] == {"id": "p2", "score": doc["gold"][0]["closest"]["score"]}
    assert doc["gold"][0]["status"] == "FN" and doc["predicted"][3]["closest"] is None


# --------------------------------------------------------------------------- compare


def test_changed_facts_by_side_and_id():
    a = {"doc_id": "d", "gold_facts": [
        {"id": "g1", "fact_type": "t", "v": 1, "status": "FN", "reasoning": "ra"},
        {"id": "g2", "fact_type": "t", "v": 2, "status": "TP"},
        {"id": "g3", "fact_type": "t", "v": 3, "status": "TP"},
        {"id": "g4", "fact_type": "t", "v": 4, "status": "FN"}],
        "predicted_facts": [
        {"id": "p1", "fact_type": "t", "v": 9, "status": "FP"},
        {"id": "p2", "fact_type": "t", "v": 2, "status": "TP"},
        {"id": "p3", "fact_type": "t", "v": 5, "status": "FP"}]}
    b = {"doc_id": "d", "gold_facts": [
        {"id": "g1", "fact_type": "t", "v": 1, "status": "TP", "reasoning": "rb", "description": "n"},
        {"id": "g2", "fact_type": "t", "v": 2, "status": "FN"},
        {"id": "g3", "fact_type": "t", "v": 3, "status": "TP"},
        {"id": "g4", "fact_type": "t", "v": 4, "status": "ERROR"}],
        "predicted_facts": [
        {"id": "p1", "fact_type": "t", "v": 1, "status": "TP"},
        {"id": "p4", "fact_type": "t", "v": 7, "status": "FP"}]}
    changed = changed_facts(a, b)
    got = [(c["side"], c["id"], c["status_a"], c["status_b"], c["change"], c["same_fact"]) for c in changed]
    assert got == [
        ("gold", "g1", "FN", "TP", "fixed", True),
        ("gold", "g2", "TP", "FN", "broke", True),
        ("gold", "g4", "FN", "ERROR", "other", True),
        ("predicted", "p1", "FP", "TP", "fixed", False),  # same id, another fact
        ("predicted", "p2", "TP", None, "broke", True),
        ("predicted", "p3", "FP", None, "fixed", True),
        ("predicted", "p4", None, "FP", "new", True),  # not in A: neither fixed nor broken
    ]
    g1 = changed[0]
    assert (g1["doc_id"], g1["fact_type"], g1["fact"], g1["reasoning_a"], g1["reasoning_b"], g1["note_b"]) == (
        "d", "t", {"v": 1}, "ra", "rb", "n")
    assert changed[5]["fact"] == {"v": 5}  # gone in B: A's fields
    assert changed_facts(a, a) == []


def make_cmp(lines_a, lines_b, a="runs/a <x>", b="runs/[b](javascript:x)"):
    metric = lambda a_, b_, lo, hi: {"a": a_, "b": b_, "diff": b_ - a_, "ci95": [lo, hi],  # noqa: E731
                                     "excludes_zero": lo > 0 or hi < 0}
    changed = [c for la, lb in zip(lines_a, lines_b, strict=False) for c in changed_facts(la, lb)]
    return CompareResult.model_validate({"a": a, "b": b, "documents": len(lines_a), "only_a": 1, "only_b": 0,
            "bootstrap": {"resamples": 100, "seed": 3},
            "warnings": ["the gold facts differ in 1 of the 2 shared documents <b>"],
            "metrics": {"precision": metric(0.5, 0.7, 0.05, 0.3), "recall": metric(0.6, 0.55, -0.2, 0.1),
                        "f1": metric(0.55, 0.6, -0.01, 0.12)},
            "by_fact_type": {"rev<i>": {"precision": {"a": 0.5, "b": 1.0, "diff": 0.5, "ci95": None,
                                                      "excludes_zero": None},
                                        "recall": {"a": None, "b": 1.0, "diff": None, "ci95": [0.1, 0.2],
                                                   "excludes_zero": True},
                                        "f1": {"a": 0.5, "b": 1.0, "diff": 0.5}}},
            "changed": changed, "changed_total": len(changed) + 5,
            "provenance": {"factjudge": "9.9.9", "created": "2025-06-01T12:00:00+00:00"}})


def test_compare_pages():
    a = line_of("doc <1>", NEAR, NEAR_PRED)
    b = line_of("doc <1>", NEAR, [{**f, "value": "9.8%"} if f["id"] == "p2" else f for f in NEAR_PRED[:3]]
                + [{"id": "p9", "fact_type": "ceo", "name": HOSTILE_TEXT}])
    cmp = make_cmp([a], [b])
    kinds = sorted((c["id"], c["change"]) for c in cmp.changed)
    assert kinds == [("g1", "fixed"), ("g3", "broke"), ("p2", "fixed"), ("p4", "fixed"), ("p5", "broke"),
                     ("p9", "new")]

    md = render_compare_markdown(cmp)
    assert "A: runs/a &lt;x&gt;" in md and r"B: runs/\[b\]\(javascript:x\)" in md
    assert "| precision | 0.500 | 0.700 | +0.200 | \\[+0.050, +0.300\\] | yes |" in md
    assert "| recall | 0.600 | 0.550 | -0.050 | \\[-0.200, +0.100\\] | no |" in md
    assert "| rev&lt;i&gt; | 0.500 | 1.000 | +0.500 |  | n/a | 1.000 | n/a | \\[+0.100, +0.200\\] |" in md
    assert "2 fixed" not in md and "3 fixed, 2 broke, 1 new in B, 0 other (showing 6 of 11)." in md
    assert "(100 resamples, seed 3)" in md and "(1 only in A and 0 only in B left out)" in md
    assert "| doc &lt;1&gt; | gold | g1 | revenue | FN | TP | fixed |" in md
    assert "| predicted | p5 | revenue | TP | absent | broke |" in md
    rendered = md_render(md)
    assert not re.search(r"<(a|img|i|b|em|strong|code|script)\b", rendered)

    page = render_compare_html(cmp)
    assert "<img" not in page and "<i>" not in page and "<b>" not in page
    assert '<code id="path-b">runs/[b](javascript:x)</code>' in page
    assert 'id="diff-precision">+0.200</div>' in page and 'class="card good"' in page
    assert re.findall(r'<option value="([^"]*)">', page.split('id="filter-change"')[1].split("</select>")[0]) == [
        "", "fixed", "broke", "new", "other"]
    assert re.findall(r'<option value="([^"]*)">', page.split('id="filter-doc"')[1].split("</select>")[0]) == [
        "", "doc &lt;1&gt;"]
    assert len(re.findall(r'<tr data-type="[^"]*" data-change="broke" data-doc="doc &lt;1&gt;">', page)) == 2
    assert "(the table holds 6 of 11)" in page


def test_fact_type_keys():
    line = line_of("d", NEAR, NEAR_PRED)
    assert fact_type_keys(line) == {"ceo": (1, 0, 1, 0), "headcount": (0, 1, 0, 0), "revenue": (1, 2, 1, 1)}


# --------------------------------------------------------------------------- reading the pages (#24)


def facts_table(page: str) -> str:
    return page.split('<table id="facts">')[1].split("</tbody></table>")[0]


def test_facts_are_field_tables_not_json():
    line = line_of("d", NEAR, NEAR_PRED)
    rows = collect_rows(line)
    table = facts_table(render_html(summary_of([line]), [], rows, len(rows)))
    assert "{&#34;entity&#34;: " not in table and "{&#34;name&#34;: " not in table  # no raw JSON left
    # the FN gold fact g1: its own fields, then the closest fact p2's fields, each a name/value row
    assert '<dl class="fields"><dt>entity</dt><dd>Contoso</dd><dt>period</dt><dd>FY2023</dd>' in table
    assert "<dt>value</dt><dd>9.8%</dd>" in table and "<dt>value</dt><dd>9.9%</dd>" in table
    head = re.findall(r"<th>([^<]*)</th>", table.split("</thead>")[0])
    assert len(head) <= 5, head  # 9 columns were cramped at 1400 px and broke words at 800 px


def one_sided_first():
    """Worst first: a document with no predictions at all, then one with both sides."""
    empty = line_of("no predictions", NEAR, [])
    both = line_of("both sides", NEAR, NEAR_PRED)
    return [empty, both]


def test_document_view_opens_on_the_worst_document_with_both_sides():
    lines = one_sided_first()
    page = render_html(summary_of(lines), [], [], 0, documents=lines)
    assert 'data-start="1"' in page.split('id="docview"')[1].split(">")[0]
    # no document has both sides: the worst one
    page = render_html(summary_of(lines[:1]), [], [], 0, documents=lines[:1])
    assert 'data-start="0"' in page.split('id="docview"')[1].split(">")[0]


def test_bar_chart_sorted_by_support_and_a_zero_labelled_once():
    by_type = {"alpha": {"tp_gold": 0, "fn": 1, "precision": 0.0, "recall": 0.0, "f1": 0.0},
               "beta": {"tp_gold": 5, "fn": 3, "precision": 0.5, "recall": 0.625, "f1": 0.55},
               "gamma": {"tp_gold": 2, "fn": 0, "precision": 0.0, "recall": 1.0, "f1": 0.0}}
    chart = bar_chart({t: Counts(**c) for t, c in by_type.items()})
    assert [g["name"] for g in chart["groups"]] == ["beta", "gamma", "alpha"]
    labels = {g["name"]: [b.get("short") for b in g["bars"] if b.get("short")] for g in chart["groups"]}
    assert labels["alpha"] == ["0.00 (P, R, F1)"]
    assert labels["gamma"] == ["0.00 (P, F1)", "1.00"]
    assert labels["beta"] == ["0.50", "0.62", "0.55"]


def error_summary(errors: int, **extra):
    lines = [line_of("d", NEAR, NEAR_PRED)]
    summary = summary_of(lines, **extra)
    summary.micro.errors = errors
    return summary


def in_scope(summary) -> int:
    m = summary.micro
    return m.tp_gold + m.fn + m.tp_predicted + m.fp + m.errors


def test_error_banner_above_five_percent_in_both_reports():
    summary = error_summary(1)  # 1 of 9 in-scope facts
    n = in_scope(summary)
    assert banners(summary) == [f"1 of {n} in-scope facts ({100 / n:.0f}%) are ERROR: the judge gave no "
                                "verdict on them and P, R and F1 leave them out. Check usage and the "
                                "ERROR rows before reading the figures."]
    page = render_html(summary, [], [], 0)
    banner = page.split('id="banners"')[1].split("</div>")[0]
    assert "1 of " in banner and page.index('id="banners"') < page.index('class="cards"')
    md = render_markdown(summary, [], [], 0)
    assert md.splitlines()[2].startswith(f"> **Warning:** 1 of {n} in-scope facts")
    # at most 5%: no banner
    quiet = error_summary(0)
    assert banners(quiet) == [] and 'id="banners"' not in render_html(quiet, [], [], 0)
    assert "**Warning:**" not in render_markdown(quiet, [], [], 0)


def test_the_summary_alerts_are_banners_and_an_errors_alert_is_not_repeated():
    summary = error_summary(0, alerts=[{"kind": "empty_side", "message": "an empty predicted file <b>"}])
    assert banners(summary) == ["an empty predicted file <b>"]
    page = render_html(summary, [], [], 0)
    assert "an empty predicted file &lt;b&gt;" in page.split('id="banners"')[1]
    assert "> **Warning:** an empty predicted file &lt;b&gt;" in render_markdown(summary, [], [], 0)
    errors = error_summary(1, alerts=[{"kind": "errors", "message": "1 of 9 in-scope facts could not be judged"}])
    assert banners(errors) == ["1 of 9 in-scope facts could not be judged"]  # not said twice


def test_compare_shows_both_versions_and_new_predictions_apart():
    a = line_of("d", NEAR, NEAR_PRED)
    b = line_of("d", NEAR, [{**NEAR_PRED[0], "value": "2"}, *NEAR_PRED[1:4],
                            {"id": "p9", "fact_type": "ceo", "name": "Maria Lopez"}])
    b["gold_facts"][1]["status"] = "FN"  # so p9 is not matched by g2 in both runs
    changed = changed_facts(a, b)
    by_id = {c["id"]: c for c in changed}
    assert by_id["p9"]["change"] == "new" and by_id["p9"]["status_a"] is None
    p1 = by_id.get("p1")
    assert p1 is None or p1["fact_a"] == {"entity": "Fabrikam", "period": "FY2021", "value": "1"}
    cmp = make_cmp([a], [b])
    page = render_compare_html(cmp)
    assert re.findall(r'<option value="([^"]*)">', page.split('id="filter-change"')[1].split("</select>")[0]) == [
        "", "fixed", "broke", "new", "other"]
    assert '<td class="new">new in B</td>' in page
    md = render_compare_markdown(cmp)
    assert re.search(r"\d+ fixed, \d+ broke, 1 new in B, \d+ other", md)


def test_compare_a_different_fact_with_the_same_id_shows_a_and_b():
    a = {"doc_id": "d", "gold_facts": [], "predicted_facts": [
        {"id": "p1", "fact_type": "t", "v": "old", "status": "FP"}]}
    b = {"doc_id": "d", "gold_facts": [], "predicted_facts": [
        {"id": "p1", "fact_type": "t", "v": "new", "status": "TP"}]}
    (c,) = changed_facts(a, b)
    assert (c["same_fact"], c["fact_a"], c["fact"]) == (False, {"v": "old"}, {"v": "new"})
    cmp = make_cmp([a], [b])
    row = render_compare_html(cmp).split('data-change="fixed"')[1].split("</tr>")[0]
    assert "<dt>v</dt><dd>old</dd>" in row and "<dt>v</dt><dd>new</dd>" in row
    assert '| A: {"v": "old"}; B: {"v": "new"} |' in render_compare_markdown(cmp)


def test_config_hash_is_stable_and_tells_configs_apart():
    assert config_hash({"a": 1, "b": [1, 2]}) == config_hash({"b": [1, 2], "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2}) and len(config_hash({})) == 8
