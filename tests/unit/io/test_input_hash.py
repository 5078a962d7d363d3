"""The input hash of a document (``DocInfo.input_sha256``) is what a resumed run compares: it must
not change for the same input whatever reads it, or every existing run folder would judge its
documents again. The figures below were computed by the readers of 9ad1cc5 (before the format
registry) on these exact inputs."""
import json

import pytest

from factjudge.io.datasets import JsonlDataset, SplitDataset
from factjudge.models import JudgeConfig

GOLD = [{"doc_id": "A", "id": "g1", "fact_type": "revenue", "value": "12 EUR", "period": "2023"},
        {"doc_id": "A", "id": 2, "fact_type": "ceo", "name": "Ada Lovelace"},
        {"doc_id": "B", "id": "g3", "fact_type": "revenue", "value": "7"}]
PRED = [{"doc_id": "A", "id": "p1", "fact_type": "revenue", "value": "12"},
        {"doc_id": "C", "id": "p2", "fact_type": "ceo", "name": "Grace Hopper"}]
SALT = "a fixed salt"
PINNED = {
    "A": "a24fec269872bfb906cecca03fbf19652909543c242af55d7c2d036d2dab3028",
    "B": "d8d4ca49173c00bf8825c4228d264dd36afae46928ae45b583400ae7113a0c03",
    "C": "b353ced1877f66ad5ccc4714a176c74491f195acfeb7d7673e4767c1032e58aa",
}


def _documents():
    ids = list(dict.fromkeys(f["doc_id"] for f in (*GOLD, *PRED)))
    strip = lambda f: {k: v for k, v in f.items() if k != "doc_id"}  # noqa: E731
    return [{"doc_id": d, "gold_facts": [strip(f) for f in GOLD if f["doc_id"] == d],
             "predicted_facts": [strip(f) for f in PRED if f["doc_id"] == d]} for d in ids]


def _write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _write_csv(path, records):
    names = list(dict.fromkeys(k for r in records for k in r))
    lines = [",".join(names)] + [",".join(str(r.get(n, "")) for n in names) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _hashes(data):
    assert data.scan(JudgeConfig(), SALT) == []
    return {i.doc_id: i.input_sha256 for i in data.infos}


def test_a_dataset_jsonl_hashes_as_before(tmp_path):
    assert _hashes(JsonlDataset(_write_jsonl(tmp_path / "d.jsonl", _documents()))) == PINNED


def test_fact_files_hash_as_before(tmp_path):
    data = SplitDataset(_write_jsonl(tmp_path / "g.jsonl", GOLD), _write_jsonl(tmp_path / "p.jsonl", PRED))
    assert _hashes(data) == PINNED


def test_csv_fact_files_hash_as_before(tmp_path):
    # CSV cells are strings: the integer id 2 is read as "2", as the .jsonl reader coerces it
    data = SplitDataset(_write_csv(tmp_path / "g.csv", GOLD), _write_csv(tmp_path / "p.csv", PRED))
    assert _hashes(data) == PINNED


def test_fact_files_in_two_formats_hash_as_before(tmp_path):
    data = SplitDataset(_write_csv(tmp_path / "g.csv", GOLD), _write_jsonl(tmp_path / "p.jsonl", PRED))
    assert _hashes(data) == PINNED


def test_parquet_fact_files_hash_as_before(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    g, p = tmp_path / "g.parquet", tmp_path / "p.parquet"
    for path, facts in ((g, GOLD), (p, PRED)):
        names = list(dict.fromkeys(k for f in facts for k in f))  # from_pylist sees the first row only
        pq.write_table(pa.table({n: [None if n not in f else str(f[n]) for f in facts] for n in names}), path)
    assert _hashes(SplitDataset(g, p)) == PINNED


@pytest.mark.ray
@pytest.mark.xdist_group("ray")  # the worker's one Ray (ray_session in tests/conftest.py)
@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")
def test_a_ray_dataset_hashes_as_before(ray_session):
    from factjudge.io.formats.ray_rows import RayDataset

    rows = [{k: json.dumps(v) if k != "doc_id" else v for k, v in doc.items()} for doc in _documents()]
    data = RayDataset(ray_session.data.from_items(rows), "rows")
    assert _hashes(data) == PINNED
    assert [d.doc_id for d in data.documents(skip={"B"})] == ["A", "C"]
