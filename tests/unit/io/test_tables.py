"""Tables in (CSV / TSV / Parquet fact files) and out (pandas DataFrames, facts.csv)."""
import csv
import json
import sys

import pytest
from evalkit import ROOT, run_cli, run_process

from factjudge import load_config, load_facts, run_judge
from factjudge.errors import InputError, OptionalDependencyError
from factjudge.io.facts import validate_facts
from factjudge.io.formats import open_dataset
from factjudge.io.tables import (
    DATASET_REQUIRED,
    FACT_REQUIRED,
    is_table,
    iter_result_lines,
    iter_table_rows,
    read_table_records,
)
from factjudge.models import FACT_COLUMNS, result_rows
from factjudge.reports.facts_csv import FactsCsvWriter, write_facts_csv

EXAMPLES = ROOT / "examples"


def columns_of(facts):
    cols = {}
    for fact in facts:
        cols.update(dict.fromkeys(fact))
    return list(cols)


def write_delimited(path, facts, delimiter=","):
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns_of(facts), delimiter=delimiter)
        w.writeheader()
        w.writerows(facts)  # a missing field is an empty cell
    return path


def write_parquet(path, facts):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    cols = columns_of(facts)
    pq.write_table(pa.Table.from_pylist([{c: f.get(c) for c in cols} for f in facts]), path)
    return path


def load_table(path):
    return validate_facts(read_table_records(path), str(path))


def error_of(fn, *args):
    with pytest.raises(InputError) as info:
        fn(*args)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


def judged_example():
    return run_judge(load_facts(EXAMPLES / "report_gold.json"),
                     load_facts(EXAMPLES / "report_predicted.jsonl"),
                     load_config(EXAMPLES / "config.yaml"))


# --------------------------------------------------------------------------- tables in


@pytest.mark.parametrize("name", ["report_gold.json", "report_predicted.jsonl"])
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet"])
def test_tables_load_the_same_facts_as_json(tmp_path, name, suffix):
    expected = load_facts(EXAMPLES / name)
    path = tmp_path / f"facts{suffix}"
    if suffix == ".parquet":
        write_parquet(path, expected)
    else:
        write_delimited(path, expected, "\t" if suffix == ".tsv" else ",")
    assert is_table(path)
    assert load_table(path) == expected  # same facts; a field a fact lacks stays absent


def test_csv_empty_cells_are_absent_and_nothing_is_guessed(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("\ufeffid,fact_type,value,flag,note\n"  # BOM, as Excel writes
                    "1,revenue,12,true,\n"
                    "g2,ceo,,, \n", encoding="utf-8")
    assert load_table(path) == [
        {"id": "1", "fact_type": "revenue", "value": "12", "flag": "true"},  # strings, as given
        {"id": "g2", "fact_type": "ceo", "note": " "},  # whitespace is a value; empty is absent
    ]


def test_csv_labels_rows_and_lines(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text('id,fact_type,text\r\n'
                    'g1,quote,"two\r\nlines"\r\n'
                    '\r\n'
                    ',,\r\n'  # a row of empty cells: skipped like a blank line
                    'g2,quote,x,,\r\n'  # trailing empty cells beyond the header are fine
                    'g1,quote,again\r\n', encoding="utf-8")
    records = read_table_records(path)
    assert [label for label, _ in records] == ["row 1 (line 2)", "row 2 (line 6)", "row 3 (line 7)"]
    assert records[0][1]["text"] == "two\r\nlines"
    assert [row for row, _ in iter_table_rows(path)] == [1, 2, 3]
    msg = error_of(validate_facts, records, str(path))
    assert msg == (f"{path}: row 3 (line 7) (id 'g1'): duplicate id, first seen at row 1 (line 2)")


def test_csv_old_mac_line_ends(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b'id,fact_type,text\rg1,quote,1\rg2,quote,"a\rb"\r')
    assert read_table_records(path) == [
        ("row 1 (line 2)", {"id": "g1", "fact_type": "quote", "text": "1"}),
        ("row 2 (line 3)", {"id": "g2", "fact_type": "quote", "text": "a\rb"})]


def test_tsv_uses_tabs_and_keeps_commas(tmp_path):
    path = tmp_path / "f.tsv"
    path.write_text("id\tfact_type\tvalue\ng1\trevenue\t1,245.6\n", encoding="utf-8")
    assert load_table(path) == [{"id": "g1", "fact_type": "revenue", "value": "1,245.6"}]


def test_header_only_is_no_facts(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("id,fact_type\n", encoding="utf-8")
    assert read_table_records(path) == []


def test_parquet_keeps_types(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "fact_type": ["employees", "margin", "listed"],
        "count": pa.array([4310, None, 7], pa.int32()),
        "ratio": [None, 0.098, float("nan")],
        "flag": [None, False, True],
        "tags": [["a", "b"], None, []],
    }), path)
    records = read_table_records(path)
    assert [label for label, _ in records] == ["row 1", "row 2", "row 3"]
    rows = [rec for _, rec in records]
    assert rows == [
        {"id": 1, "fact_type": "employees", "count": 4310, "tags": ["a", "b"]},
        {"id": 2, "fact_type": "margin", "ratio": 0.098, "flag": False},
        {"id": 3, "fact_type": "listed", "count": 7, "flag": True, "tags": []},  # NaN is absent
    ]
    # plain Python values, not numpy or pyarrow scalars
    assert type(rows[0]["count"]) is int and type(rows[1]["ratio"]) is float
    assert type(rows[1]["flag"]) is bool and type(rows[0]["tags"]) is list
    facts = load_table(path)
    assert [f["id"] for f in facts] == ["1", "2", "3"]  # integer ids become strings, as in JSON
    assert facts[0]["count"] == 4310 and facts[2]["flag"] is True


def test_parquet_nan_inside_a_list_or_struct_is_an_absent_item(tmp_path):
    """pandas and Polars write a missing float as NaN, in a list too: read as the null it stands
    for (a NaN cell already is an absent field), not refused as a value JSON cannot hold; the eval
    path (a split dataset's Parquet side) reads it as the facts' loader does."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    nan = float("nan")
    path = tmp_path / "gold.parquet"
    pq.write_table(pa.table({
        "doc_id": ["d1"], "id": ["g1"], "fact_type": ["invoice"],
        "amounts": pa.array([[1.5, nan, 2.0]], pa.list_(pa.float64())),
        "items": pa.array([[{"p": 1.0, "q": "a"}, {"p": nan, "q": "b"}]]),
    }), path)
    want = {"doc_id": "d1", "id": "g1", "fact_type": "invoice", "amounts": [1.5, None, 2.0],
            "items": [{"p": 1.0, "q": "a"}, {"p": None, "q": "b"}]}
    assert load_table(path) == [want]
    assert [rec for _, rec in iter_table_rows(path, DATASET_REQUIRED)] == [want]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    data = open_dataset((path, empty))
    assert data.scan(load_config(None), "salt") == []  # before: "row 1: field 'amounts[1]': NaN ..."
    assert [d.gold for d in data.documents()] == [[{k: v for k, v in want.items() if k != "doc_id"}]]


def test_parquet_equals_json_with_numbers(tmp_path, write_json):
    facts = [{"id": "g1", "fact_type": "revenue", "value": 1245.6, "year": 2023, "audited": True},
             {"id": "g2", "fact_type": "revenue", "value": 1102.3, "year": 2022, "audited": False}]
    path = write_parquet(tmp_path / "f.parquet", facts)
    assert load_table(path) == load_facts(write_json("f.json", facts))


def test_iter_table_rows_for_datasets(tmp_path):
    path = tmp_path / "gold.csv"
    path.write_text("doc_id,id,fact_type\nd1,g1,revenue\nd2,g1,revenue\n", encoding="utf-8")
    assert list(iter_table_rows(path, DATASET_REQUIRED)) == [
        (1, {"doc_id": "d1", "id": "g1", "fact_type": "revenue"}),
        (2, {"doc_id": "d2", "id": "g1", "fact_type": "revenue"})]
    path.write_text("id,fact_type\ng1,revenue\n", encoding="utf-8")
    assert error_of(lambda: list(iter_table_rows(path, DATASET_REQUIRED))) == (
        f"{path}: header: missing column 'doc_id' (columns found: id, fact_type; expected: doc_id, id, "
        "fact_type; map yours with the config key columns: {doc_id: YOUR_COLUMN})")


@pytest.mark.parametrize("text, expected", [
    ("id,fact_type,value,value\ng1,r,1,2\n", "header: duplicate column 'value' (columns 3 and 4)"),
    ("fact_type,value\nr,1\n", "header: missing column 'id' (columns found: fact_type, value; expected: id, "
     "fact_type; map yours with the config key columns: {id: YOUR_COLUMN})"),
    ("id,value\ng1,1\n", "header: missing column 'fact_type' (columns found: id, value; expected: id, "
     "fact_type; map yours with the config key columns: {fact_type: YOUR_COLUMN})"),
    ("id, fact_type\ng1,r\n", "header: missing column 'fact_type' (found ' fact_type': check spaces and case) "
     "(columns found: id,  fact_type; expected: id, fact_type; map yours with the config key columns: "
     "{fact_type: YOUR_COLUMN})"),
    ("id,fact_type\ng1,r\ng2,r,extra\n",
     "row 2 (line 3): 3 cells but the header has 2 columns (value 'extra' in column 3, which has no header)"),
    ("id,fact_type,value\ng1,r,1\ng2,r\n",  # a row cut short is no fact without its value
     "row 2 (line 3): 2 cells but the header has 3 columns (a line cut short, or a quote or line end out of "
     "place? an empty cell still needs its delimiter)"),
    ('id,fact_type,value\ng1,r,"12\n',  # a file cut inside a quoted cell
     "row 1 (line 2): a quoted cell is not closed: the file ends inside it (a stray '\"', or a file cut "
     "short? a '\"' inside a quoted cell is written \"\")"),
    ('id,fact_type,value\n\ng1,r,"12"3\n',
     "row 1 (line 3): text after the closing quote of a quoted cell (a '\"' inside a quoted cell is "
     "written \"\")"),
    ('id,fact_type,value\ng1,r,"a\nb"c\n',  # named by the row's first line, and where it failed
     "row 1 (line 2): text after the closing quote of a quoted cell (at line 3) (a '\"' inside a quoted "
     "cell is written \"\")"),
    ('id,"fact_type\ng1,r\n', "header (line 1): a quoted cell is not closed: the file ends inside it "
     "(a stray '\"', or a file cut short? a '\"' inside a quoted cell is written \"\")"),
    (",id,fact_type\n0,g1,r\n",
     ("row 1 (line 2): column 1: value '0' under a column with no name in the header "
      "(an index written by pandas? write with index=False)")),
    ("", "empty file: expected a header row naming the columns"),
])
def test_csv_errors_name_file_row_and_column(tmp_path, text, expected):
    path = tmp_path / "f.csv"
    path.write_text(text, encoding="utf-8")
    assert error_of(read_table_records, path) == f"{path}: {expected}"


def test_a_stray_quote_is_an_error_not_the_rest_of_the_file_in_one_cell(tmp_path):
    """A '"' opening a cell that is never closed took every later line into that cell: one
    document was read, with the rest of the file as its value, and eval exited 0. It is an error
    naming the row and the line the quote opened at, as is a row with fewer cells than the header;
    a quoted cell closed on a later line is still one cell, and a row may leave out columns
    without a name."""
    gold = tmp_path / "g.csv"
    gold.write_text('doc_id,id,fact_type,value\nd1,g1,rev,"1234.5\nd1,g2,rev,77\nd2,g1,rev,5\n'
                    'd3,g1,rev,6\n', encoding="utf-8")
    pred = tmp_path / "p.csv"
    pred.write_text("doc_id,id,fact_type,value\nd1,p1,rev,77\n", encoding="utf-8")
    proc = run_cli("eval", "--gold", gold, "--predicted", pred, "-o", tmp_path / "out", "-q")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == (f"factjudge: error: {gold}: row 1 (line 2): a quoted cell is not closed: the file ends "
                           "inside it (a stray '\"', or a file cut short? a '\"' inside a quoted cell is "
                           'written "")\n')
    assert not (tmp_path / "out" / "summary.json").exists()

    gold.write_text('doc_id,id,fact_type,value,\nd1,g1,rev,"12,\n34 ""net"""\nd1,g2,rev\n', encoding="utf-8")
    assert error_of(read_table_records, gold).startswith(f"{gold}: row 2 (line 4): 3 cells but the header has 5 ")
    gold.write_text('doc_id,id,fact_type,value,\nd1,g1,rev,"12,\n34 ""net"""\nd1,g2,rev,5\n', encoding="utf-8")
    assert read_table_records(gold) == [  # the last column has no name: it may be left out
        ("row 1 (line 2)", {"doc_id": "d1", "id": "g1", "fact_type": "rev", "value": '12,\n34 "net"'}),
        ("row 2 (line 4)", {"doc_id": "d1", "id": "g2", "fact_type": "rev", "value": "5"})]


def test_csv_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b"id,fact_type,name\ng1,ceo,Mar\xc3\xada\ng2,ceo,Mar\xeda\n")
    assert error_of(read_table_records, path) == \
        f"{path}: line 3: not valid UTF-8 (byte 0xed at byte 11 of the line)"
    path.write_bytes("id,fact_type\ng1,ceo\n".encode("utf-16"))
    assert "UTF-16" in error_of(read_table_records, path)


def test_missing_file(tmp_path):
    path = tmp_path / "nope.csv"
    assert error_of(read_table_records, path).startswith(f"{path}: cannot read file: ")


def test_unreadable_parquet(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "f.parquet"
    path.write_bytes(b"id,fact_type\ng1,r\n")
    assert error_of(read_table_records, path).startswith(f"{path}: cannot read Parquet file: ")


def test_parquet_errors_name_the_column(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"id": ["g1"], "kind": ["r"]}), path)
    assert error_of(read_table_records, path) == (
        f"{path}: schema: missing column 'fact_type' (columns found: id, kind; expected: id, fact_type; "
        "map yours with the config key columns: {fact_type: YOUR_COLUMN})")
    pq.write_table(pa.Table.from_arrays([pa.array(["g1"]), pa.array(["r"]), pa.array(["x"])],
                                        names=["id", "fact_type", "id"]), path)
    assert error_of(read_table_records, path) == \
        f"{path}: schema: duplicate column 'id' (columns 1 and 3)"
    pq.write_table(pa.table({"id": ["g1", "g2"], "fact_type": ["r", "r"],
                             "raw": pa.array([b"ok", b"\xff"], pa.binary())}), path)
    assert error_of(read_table_records, path) == \
        f"{path}: row 2: column 'raw': binary value that is not UTF-8 text"


def test_missing_pyarrow_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import fails as if not installed
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    path = tmp_path / "f.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(OptionalDependencyError) as info:
        read_table_records(path)
    assert isinstance(info.value, InputError) and isinstance(info.value, ImportError)
    assert str(info.value) == "pyarrow is needed to read .parquet files: pip install 'factjudge[parquet]'"


# --------------------------------------------------------------------------- tables out


def test_missing_pandas_says_what_to_install(monkeypatch):
    from factjudge.io.tables import eval_to_pandas
    from factjudge.models import result_to_pandas

    monkeypatch.setitem(sys.modules, "pandas", None)
    for call in (lambda: result_to_pandas(judged_example()), lambda: eval_to_pandas(ROOT)):
        with pytest.raises(ImportError) as info:
            call()
        assert str(info.value) == "pandas is needed for to_pandas(): pip install 'factjudge[pandas]'"


def test_result_to_pandas_one_row_per_fact():
    pytest.importorskip("pandas")
    from factjudge.models import result_to_pandas

    result = judged_example()
    df = result_to_pandas(result)
    assert len(df) == 39
    assert list(df.columns[:len(FACT_COLUMNS)]) == list(FACT_COLUMNS)
    assert {"entity", "period", "value", "unit"} <= set(df.columns)
    out = result.to_dict()
    expected = [(side, f["id"], f["factjudge"]["status"], f["factjudge"]["in_scope"], f["factjudge"]["matched_ids"])
                for side in ("gold", "predicted") for f in out[f"{side}_facts"]]
    got = [(r.side, r.id, r.status, bool(r.in_scope), r.matched_ids) for r in df.itertuples()]
    assert got == expected
    assert df["doc_id"].isna().all()
    assert df["status"].value_counts().to_dict() == {"TP": 24, "FP": 7, "FN": 5, "OUT_OF_SCOPE": 3}
    g09 = df[(df.side == "gold") & (df.id == "g09")].iloc[0]
    assert g09["entity"] == "Contoso Robotics Inc." and g09["value"] == "0.42"
    assert df.equals(result_to_pandas(out))  # the dict form gives the same frame


def test_result_to_pandas_types_and_renamed_fields():
    pd = pytest.importorskip("pandas")
    from factjudge.models import result_to_pandas

    gold = [{"id": "g1", "fact_type": "n", "value": 3, "side": "left", "ok": True},
            {"id": "g2", "fact_type": "n", "value": 4.5, "tags": ["a"]},
            {"id": "g3", "fact_type": "n"}]
    pred = [{"id": "p1", "fact_type": "n", "value": 3, "side": "left", "ok": True}]
    df = result_to_pandas(run_judge(gold, pred, {}), doc_id="d1")
    assert list(df["doc_id"]) == ["d1"] * 4
    assert list(df["side"]) == ["gold", "gold", "gold", "predicted"]
    assert list(df["fact.side"].fillna("")) == ["left", "", "", "left"]
    assert str(df["ok"].dtype) == "boolean"
    assert bool(df["ok"].iloc[0]) is True
    assert df["ok"].iloc[1] is pd.NA
    assert df["tags"].iloc[1] == ["a"] and df["tags"].iloc[0] is None
    assert df["reasoning"].iloc[0] is None or isinstance(df["reasoning"].iloc[0], str)
    ints = result_to_pandas(run_judge([{"id": "g1", "fact_type": "n", "year": 2023},
                                       {"id": "g2", "fact_type": "n"}], [], {}))
    assert str(ints["year"].dtype) == "Int64" and ints["year"].iloc[0] == 2023  # not 2023.0


@pytest.fixture(scope="module")
def eval_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "out"
    env_cache = tmp_path_factory.mktemp("cache")
    proc = run_cli("eval", EXAMPLES / "dataset.jsonl", "-c", EXAMPLES / "config.yaml", "-o", out, "-q",
                   cwd=ROOT, cache_dir=env_cache)
    assert proc.returncode == 0, proc.stderr
    return out


def result_lines(out):
    return [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def test_eval_to_pandas(eval_dir):
    pytest.importorskip("pandas")
    from factjudge.io.tables import eval_to_pandas

    lines = result_lines(eval_dir)
    df = eval_to_pandas(eval_dir)
    expected = [(line["doc_id"], side, f["id"], f["factjudge"]["status"], f["factjudge"]["matched_ids"])
                for line in lines for side in ("gold", "predicted") for f in line[f"{side}_facts"]]
    assert len(df) == len(expected) > 0
    assert [(r.doc_id, r.side, r.id, r.status, r.matched_ids) for r in df.itertuples()] == expected
    assert list(df.columns[:len(FACT_COLUMNS)]) == list(FACT_COLUMNS)
    assert df.equals(eval_to_pandas(eval_dir / "results.jsonl"))


def test_eval_to_pandas_not_an_eval_folder(tmp_path):
    pytest.importorskip("pandas")
    from factjudge.io.tables import eval_to_pandas

    assert error_of(eval_to_pandas, tmp_path) == f"{tmp_path}: not an eval output folder (no results.jsonl)"
    (tmp_path / "results.jsonl").write_text('{"doc_id": "d"}\n', encoding="utf-8")
    assert error_of(eval_to_pandas, tmp_path) == \
        f"{tmp_path / 'results.jsonl'}: line 1: not a factjudge result line (no input_sha256)"


def test_write_facts_csv_reads_back(eval_dir, tmp_path):
    lines = result_lines(eval_dir)
    path = tmp_path / "facts.csv"
    n = write_facts_csv(iter(lines), path)  # any iterable, read once
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
        header = reader.fieldnames
    expected = [row for line in lines for row in result_rows(line)]
    assert n == len(rows) == len(expected) > 0
    assert header[:len(FACT_COLUMNS)] == list(FACT_COLUMNS)
    assert set(header) == {k for row in expected for k in row}
    for got, want in zip(rows, expected, strict=False):
        assert got["doc_id"] == want["doc_id"] and got["side"] == want["side"]
        assert got["id"] == want["id"] and got["status"] == want["status"]
        assert got["in_scope"] == ("true" if want["in_scope"] else "false")
        assert json.loads(got["matched_ids"]) == want["matched_ids"]
        assert got["reasoning"] == (want["reasoning"] or "")
        for key in header[len(FACT_COLUMNS):]:
            value = want.get(key)
            assert got[key] == ("" if value is None else value if isinstance(value, str)
                                else json.dumps(value, ensure_ascii=False))


def test_write_facts_csv_encodes_non_scalars(tmp_path):
    result = run_judge([{"id": "g1", "fact_type": "n", "value": 3.5, "tags": ["a", "b"],
                         "meta": {"page": 2}, "doc_id": "inner", "note": "a, \"quoted\"\nline"}],
                       [], {})
    path = tmp_path / "sub" / "facts.csv"
    assert write_facts_csv([result], path) == 1
    with path.open(encoding="utf-8", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["doc_id"] == "" and row["fact.doc_id"] == "inner"
    assert row["value"] == "3.5" and json.loads(row["tags"]) == ["a", "b"]
    assert json.loads(row["meta"]) == {"page": 2} and row["note"] == "a, \"quoted\"\nline"
    assert row["status"] == "FN" and row["matched_ids"] == "[]"


def test_facts_csv_writer_is_atomic(tmp_path):
    path = tmp_path / "facts.csv"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(RuntimeError), FactsCsvWriter(path) as w:
        w.add(judged_example(), doc_id="d1")
        raise RuntimeError("boom")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["facts.csv"]  # no temporary left
    with FactsCsvWriter(path, fields=["entity", "period", "value", "unit", "name", "location",
                                      "segment", "date", "text"]) as w:
        assert w.add(judged_example(), doc_id="d1") == 39
    assert len(path.read_text(encoding="utf-8").splitlines()) == 40


def test_iter_result_lines_of_an_unfinished_run(tmp_path):
    line = {"doc_id": "d1", "input_sha256": "x", **judged_example().to_dict()}
    other = dict(line, doc_id="d2")
    again = dict(line, gold_facts=[])
    text = "".join(json.dumps(x) + "\n" for x in (line, other, again)) + '{"doc_id": "d3", "go'
    (tmp_path / "results.jsonl").write_text(text, encoding="utf-8")
    got = list(iter_result_lines(tmp_path))
    assert [x["doc_id"] for x in got] == ["d1", "d2"]  # latest line of d1, in d1's place
    assert got[0]["gold_facts"] == []


def test_a_broken_pandas_install_keeps_its_import_error(monkeypatch):
    from factjudge.models import result_to_pandas

    class Broken:  # pandas is there but fails to import, as with a numpy built for another ABI
        def find_spec(self, name, path=None, target=None):
            if name == "pandas":
                raise ImportError("numpy.core.multiarray failed to import", name="numpy")
            return None

    monkeypatch.delitem(sys.modules, "pandas", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Broken(), *sys.meta_path])
    with pytest.raises(ImportError) as info:
        result_to_pandas(judged_example())
    assert str(info.value) == ("pandas is needed for to_pandas(): pip install 'factjudge[pandas]' "
                               "(importing pandas failed: numpy.core.multiarray failed to import)")


def test_parquet_written_by_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "f.parquet"
    df = pd.DataFrame({"id": ["g1", "g2"], "fact_type": ["r", "r"], "value": [1.5, None],
                       "year": [2023, 2022]}, index=[10, 20])  # a non-default index is stored too
    df.to_parquet(path)
    assert load_table(path) == [{"id": "g1", "fact_type": "r", "value": 1.5, "year": 2023},
                                {"id": "g2", "fact_type": "r", "year": 2022}]


def test_split_tables_score_like_the_jsonl_dataset_and_eval_writes_facts_csv(tmp_path):
    """--gold/--predicted as CSV files give the same results as the one-line-per-document form,
    errors name the row, and --csv writes facts.csv."""
    import csv as csv_mod
    docs = [json.loads(x) for x in (ROOT / "examples" / "dataset.jsonl").read_text().splitlines()]
    for side in ("gold", "predicted"):
        rows = [{"doc_id": d["doc_id"], **f} for d in docs for f in d[f"{side}_facts"]]
        cols = list(dict.fromkeys(k for r in rows for k in r))
        with (tmp_path / f"{side}.csv").open("w", newline="", encoding="utf-8") as fh:
            w = csv_mod.DictWriter(fh, cols)
            w.writeheader()
            w.writerows({k: v if isinstance(v, str) else json.dumps(v) for k, v in r.items()} for r in rows)
    cfg = ROOT / "examples" / "config.yaml"

    def run(*args):
        return run_cli("eval", *args, "-c", cfg, "-q")
    assert run("--gold", tmp_path / "gold.csv", "--predicted", tmp_path / "predicted.csv",
               "-o", tmp_path / "t", "--csv").returncode == 0
    assert run(ROOT / "examples" / "dataset.jsonl", "-o", tmp_path / "j").returncode == 0
    summary = {d: json.loads((tmp_path / d / "summary.json").read_text()) for d in ("t", "j")}
    assert summary["t"]["micro"] == summary["j"]["micro"]
    with (tmp_path / "t" / "facts.csv").open(encoding="utf-8") as fh:
        facts = list(csv_mod.DictReader(fh))
    assert len(facts) == sum(len(d["gold_facts"]) + len(d["predicted_facts"]) for d in docs)
    with (tmp_path / "gold.csv").open(newline="", encoding="utf-8") as fh:
        table = list(csv_mod.reader(fh))
    table[3][table[0].index("fact_type")] = ""  # row 3 loses its fact_type
    with (tmp_path / "gold.csv").open("w", newline="", encoding="utf-8") as fh:
        csv_mod.writer(fh).writerows(table)
    bad = run("--gold", tmp_path / "gold.csv", "--predicted", tmp_path / "predicted.csv", "-o", tmp_path / "b")
    assert bad.returncode == 2 and f"{tmp_path / 'gold.csv'}: row 3" in bad.stderr and "fact_type" in bad.stderr


def test_judge_result_to_pandas():
    pytest.importorskip("pandas")
    from factjudge import load_config, load_facts, run_judge
    result = run_judge(load_facts(ROOT / "examples" / "report_gold.json"),
                       load_facts(ROOT / "examples" / "report_predicted.jsonl"),
                       load_config(ROOT / "examples" / "config.yaml"))
    frame = result.to_pandas()
    assert len(frame) == len(result.gold_facts) + len(result.predicted_facts)
    assert list(frame["status"]) == [f["factjudge"]["status"] for f in result.gold_facts + result.predicted_facts]


# Every column factjudge fills that does not come from the fact (the fact brings id and fact_type),
# the verdict's included, written out here so a new column cannot slip by.
FILLED_BY_FACTJUDGE = ("doc_id", "side", "status", "in_scope", "matched_ids", "description", "reasoning",
                       "linked_reasoning", "votes", "category", "partner", "differ", "closeness", "granularity")


def test_every_filled_column_is_named_here():
    assert set(FACT_COLUMNS) - {"id", "fact_type"} == set(FILLED_BY_FACTJUDGE)


def test_user_fields_named_like_factjudge_columns_are_kept_apart(tmp_path):
    """A gold fact with a field of every name factjudge fills (category, partner, ...): each
    stays in fact.<name>, factjudge's column holds factjudge's value (in facts.csv,
    eval_to_pandas and JudgeResult.to_pandas), and a fact without the field leaves fact.<name>
    empty, never factjudge's value."""
    pytest.importorskip("pandas")
    from factjudge.io.tables import eval_to_pandas

    def user_value(name, fact_id):
        return f"mine-{name}-{fact_id}"
    docs = [json.loads(x) for x in (EXAMPLES / "dataset.jsonl").read_text().splitlines()]
    for doc in docs:
        for fact in doc["gold_facts"]:
            fact.update({name: user_value(name, fact["id"]) for name in FILLED_BY_FACTJUDGE})
            fact["fact.category"] = "deeper"  # one already prefixed keeps its value too
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    # the judge compares the example's fields only, so the added fields leave the verdicts alone
    config_path = tmp_path / "config.yaml"
    config_path.write_text((EXAMPLES / "config.yaml").read_text(encoding="utf-8")
                           + "fields: [entity, period, value, unit]\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = run_cli("eval", dataset, "-c", config_path, "-o", out, "-q", "--csv")
    assert proc.returncode == 0, proc.stderr

    # factjudge's values: the same lines with the user's fields taken off the facts
    lines = result_lines(out)
    plain = [{**line, **{f"{side}_facts": [{k: v for k, v in f.items()
                                             if k not in FILLED_BY_FACTJUDGE and k != "fact.category"}
                                            for f in line[f"{side}_facts"]] for side in ("gold", "predicted")}}
             for line in lines]
    expected = [row for line in plain for row in result_rows(line)]
    assert any(row["category"] == "near_miss" for row in expected)
    assert any(row["partner"] is not None for row in expected)

    with (out / "facts.csv").open(encoding="utf-8", newline="") as fh:
        csv_rows = list(csv.DictReader(fh))
    frame = eval_to_pandas(out)
    config = load_config(config_path)
    judged = [run_judge(d["gold_facts"], d["predicted_facts"], config) for d in docs]
    plain_judged = [row for r in judged for row in result_rows(
        {"gold_facts": [{k: v for k, v in f.items() if k not in FILLED_BY_FACTJUDGE and k != "fact.category"}
                        for f in r.gold_facts],
         "predicted_facts": r.predicted_facts, "analysis": r.analysis.model_dump()})]
    judged_rows = [row for r in judged for row in r.to_pandas().to_dict("records")]

    def same(got, want, as_csv):
        if as_csv:
            from factjudge.reports.facts_csv import csv_cell
            return got == csv_cell(want)
        return got == want or (want is None and (got is None or got != got))  # NA / NaN

    for rows, want_rows, as_csv in ((csv_rows, expected, True), (frame.to_dict("records"), expected, False),
                                    (judged_rows, plain_judged, False)):
        assert len(rows) == len(want_rows) > 0
        for got, want in zip(rows, want_rows, strict=True):
            for name in FILLED_BY_FACTJUDGE:
                if name == "doc_id" and want_rows is plain_judged:
                    continue  # to_pandas() of one document has no doc_id
                assert same(got[name], want[name], as_csv), (name, got[name], want[name])
                mine = user_value(name, got["id"]) if got["side"] == "gold" else None
                assert same(got[f"fact.{name}"], mine, as_csv), (name, got)
            assert same(got["fact.fact.category"], "deeper" if got["side"] == "gold" else None, as_csv)


@pytest.mark.parametrize("text, problem", [
    ("id;fact_type;value\ng1;r;1;5\n", r"row 1 \(line 2\): 4 cells but the header has 3 columns"),
    ("doc_id;id;type\na;g1;r\n", r"header: missing column 'fact_type'"),
])
def test_an_error_in_a_sniffed_csv_names_the_delimiter(tmp_path, text, problem):
    """A header read with ';' (found by sniffing, not the ',' of .csv) explains errors no ','
    file would have: the message says which delimiter was used."""
    path = tmp_path / "f.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=problem + r".*; read with delimiter ';' \(found in the header, "
                                         r"not ','\)$"):
        read_table_records(path, DATASET_REQUIRED if "doc_id" in text else FACT_REQUIRED)


def test_an_error_in_a_csv_read_with_its_own_delimiter_is_unchanged(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("id,fact_type,value\ng1,r,1,5\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"4 cells but the header has 3 columns \(value '5' in column 4, "
                                         r"which has no header\)$"):
        read_table_records(path)


def test_a_run_on_fact_tables_leaves_nothing_in_the_temporary_folder(tmp_path):
    """The tables are read into a temporary folder; the CLI leaves by os._exit, where its
    finalizer never ran: every such run left a copy of the facts behind (a review found 40)."""
    temp = tmp_path / "temp"
    temp.mkdir()
    for side, facts in (("gold", [("d1", "g1", "7")]), ("pred", [("d1", "p1", "7")])):
        (tmp_path / f"{side}.csv").write_text("doc_id,id,fact_type,value\n" + "".join(
            f"{d},{i},revenue,{v}\n" for d, i, v in facts), encoding="utf-8")
    proc = run_process(["eval", "--gold", str(tmp_path / "gold.csv"), "--predicted", str(tmp_path / "pred.csv"),
                        "-o", str(tmp_path / "out"), "-q"], env={"TMPDIR": str(temp)})
    assert proc.returncode == 0, proc.stderr
    assert list(temp.iterdir()) == []
