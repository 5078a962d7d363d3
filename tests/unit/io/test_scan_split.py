"""A large dataset file is scanned on two cores (``DatasetLines.halves``: the second half in a
forked child): everything the scan gives must be what the one-core scan gives, in the same order,
whatever the lines hold and wherever the middle falls."""
import json
import os

import pytest
from hypo import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factjudge.errors import InputError
from factjudge.io import scan
from factjudge.io.formats.dataset_jsonl import DatasetLines
from factjudge.io.scan import ScannedDataset
from factjudge.models import JudgeConfig
from factjudge.util.forked import cpu_count

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or cpu_count() < 2, reason="needs fork and two cores")


@pytest.fixture(autouse=True)
def fork_anyway(monkeypatch):
    """The scan forks though a thread another test left behind runs (second_core would say no:
    the split would go untested in a whole run of the tests)."""
    monkeypatch.setattr(scan, "second_core", lambda: True)


def fact(i, kind):
    return {"id": f"f{i}", "fact_type": f"type_{kind}", "value": str(i), f"field_{kind}": "x"}


def good(doc_id, facts, kinds, text):
    rec = {"doc_id": doc_id, "gold_facts": [fact(i, kinds[i % len(kinds)]) for i in range(facts)],
           "predicted_facts": [fact(i, kinds[-1]) for i in range(facts // 2)]}
    if text:
        rec["text"] = "the document"
    return json.dumps(rec)


line = st.one_of(
    st.builds(good, st.sampled_from(["a", "b", "c", "d", "e", 7]), st.integers(0, 5),
              st.lists(st.integers(0, 3), min_size=1, max_size=3), st.booleans()),
    st.builds(good, st.uuids().map(str), st.integers(0, 3), st.just([0]), st.just(False)),
    st.just('{"doc_id": "x", "gold_facts": [}'),  # bad JSON
    st.just('{"doc_id": "y", "gold_facts": {}, "predicted_facts": []}'),  # bad facts
    st.just('{"doc_id": "z", "gold_facts": [{"id": 1}], "predicted_facts": []}'),
    st.just('not json at all'),
    st.just(""), st.just("   "),  # blank lines
)


def scanned(path, split, config):
    """Everything a scan gives (or the error it raises), split in two halves or not."""
    source = DatasetLines(path)
    source.split_bytes = 0 if split else 1 << 62
    data = ScannedDataset(source)
    try:
        problems = data.scan(config, "salt")
    except InputError as exc:
        return ("error", str(exc))
    texts = list(data.texts())
    return (problems, data.infos, list(data._keys), data.held, data.fact_types, data.warnings,
            list(source._offsets), list(source._lines), texts, list(data.documents()))


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(line, max_size=30), bom=st.booleans(), crlf=st.booleans(),
       entity_types=st.sampled_from([[], ["type_0"], ["type_9"]]))
def test_the_two_core_scan_is_the_one_core_scan(tmp_path, lines, bom, crlf, entity_types):
    path = tmp_path / "data.jsonl"
    ends = ["\n", "\r\n" if crlf else "\n"]
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + "".join(
        text + ends[i % 2] for i, text in enumerate(lines)).encode())
    config = JudgeConfig(entity_types=entity_types)
    assert scanned(path, True, config) == scanned(path, False, config)


def test_a_file_of_no_json_object_is_refused_the_same_way(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text("a,b,c\n" * 50 + "1,2,3\n" * 50)
    one, two = scanned(path, False, JudgeConfig()), scanned(path, True, JudgeConfig())
    assert one == two and one[0] == "error" and "not a JSON-lines file" in one[1]


def test_the_second_half_is_scanned_in_another_process(tmp_path, monkeypatch):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(good(f"d{i}", 4, [0, 1], False) + "\n" for i in range(200)))
    pids = []
    real = scan.doc_hash

    def hashed(salt, doc):
        pids.append(os.getpid())
        return real(salt, doc)

    monkeypatch.setattr(scan, "doc_hash", hashed)
    one = scanned(path, False, JudgeConfig())
    assert pids == [os.getpid()] * 200
    pids.clear()
    assert scanned(path, True, JudgeConfig()) == one
    # the child's calls are counted in the child: here, only the first half's documents
    cut = path.read_bytes().index(b"\n", path.stat().st_size // 2) + 1
    assert pids == [os.getpid()] * path.read_bytes()[:cut].count(b"\n")
    assert 90 < len(pids) < 110


def test_a_duplicate_in_the_second_half_adds_no_fact_type_nor_field(tmp_path):
    path = tmp_path / "data.jsonl"
    lines = [good(f"d{i}", 2, [0], False) for i in range(20)] + [good("d3", 2, [3], False)]
    path.write_text("".join(f"{text}\n" for text in lines))
    one, two = scanned(path, False, JudgeConfig()), scanned(path, True, JudgeConfig())
    assert one == two
    assert "type_3" not in two[4] and [p.line for p in two[0]] == [21]


@pytest.mark.parametrize("split", [False, True])
def test_texts_reads_no_line_again_when_no_line_holds_a_text(tmp_path, monkeypatch, split):
    from factjudge.io.formats import dataset_jsonl

    reads = []
    real = dataset_jsonl.read_line_at
    monkeypatch.setattr(dataset_jsonl, "read_line_at", lambda fh, offset: reads.append(offset) or real(fh, offset))
    path = tmp_path / "data.jsonl"
    lines = [good(f"d{i}", 2, [0], False) for i in range(20)]
    path.write_text("".join(f"{text}\n" for text in lines))
    source = DatasetLines(path)
    source.split_bytes = 0 if split else 1 << 62
    data = ScannedDataset(source)
    data.scan(JudgeConfig(), "salt")
    reads.clear()  # (a split scan reads the second half's held documents again)
    assert list(data.texts()) == [(f"d{i}", None) for i in range(20)] and reads == []
    # one line with a text (here, in the second half): every line is looked at for it
    path.write_text("".join(f"{text}\n" for text in lines[:-1]) + good("d19", 2, [0], True) + "\n")
    data.scan(JudgeConfig(), "salt")
    reads.clear()
    assert list(data.texts()) == [*((f"d{i}", None) for i in range(19)), ("d19", "the document")]
    assert len(reads) == 20
