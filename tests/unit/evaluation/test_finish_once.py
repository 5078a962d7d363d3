"""Issue 39: eval's work outside the judge done once: a document's facts checked when read (not
again before judging), a line's analysis validated once when the run is written, the bootstrap's
resamples drawn once for the micro and the field intervals, and the reports reading back only the
lines they show."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from factjudge import evaluate_dataset
from factjudge.core import aggregate
from factjudge.core.aggregate import Aggregator, DocStats, bootstrap_ci, field_intervals, run_intervals
from factjudge.evaluation import runner
from factjudge.io import facts as facts_module
from factjudge.io import scan
from factjudge.io.formats import dataset_jsonl
from factjudge.io.runfolder import RunFolder
from factjudge.models import Analysis, CallUsage


def _doc(i: int) -> dict[str, Any]:
    gold = [{"id": "g1", "fact_type": "revenue", "company": "Acme", "value": f"{i}00"},
            {"id": "g2", "fact_type": "ceo", "company": "Acme", "person": "Ann Lee"}]
    pred = [{"id": "p1", "fact_type": "revenue", "company": "Acme", "value": f"{i}01" if i % 2 else f"{i}00"},
            {"id": "p2", "fact_type": "ceo", "company": "Acme", "person": "Ann Lee"}]
    return {"doc_id": f"d{i}", "gold_facts": gold, "predicted_facts": pred}


def _data(tmp_path: Path, docs: int) -> Path:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(_doc(i)) + "\n" for i in range(1, docs + 1)), encoding="utf-8")
    return data


@pytest.mark.parametrize("hold, reads", [(scan.HOLD_FACTS, 1), (0, 2)])
def test_a_document_s_facts_are_checked_when_read_not_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           hold: int, reads: int) -> None:
    monkeypatch.setattr(scan, "HOLD_FACTS", hold)
    calls: list[str] = []
    check = facts_module.validate_fact_list

    def counted(facts: Any, source: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(source)
        return check(facts, source, *args, **kwargs)

    monkeypatch.setattr(dataset_jsonl, "validate_fact_list", counted)
    monkeypatch.setattr(facts_module, "validate_fact_list", counted)  # coerce_facts' way
    evaluate_dataset(_data(tmp_path, 3), out_dir=tmp_path / "out")
    # each side of each document: once by the scan, and once more when read again to be judged
    # (a document beyond what the scan holds)
    assert len(calls) == 3 * 2 * reads, calls


def test_a_line_s_analysis_is_validated_once_when_the_run_is_written(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    validated: list[Any] = []
    validate = Analysis.model_validate

    def counted(data: Any, *args: Any, **kwargs: Any) -> Any:
        validated.append(data)
        return validate(data, *args, **kwargs)

    data = _data(tmp_path, 4)
    monkeypatch.setattr(Analysis, "model_validate", counted)
    evaluate_dataset(data, out_dir=tmp_path / "out", settings=runner.ReportSettings(csv=True))
    assert len(validated) == 4  # the categories, the field tally, the near misses, facts.csv: one


def test_the_reports_read_back_only_the_lines_they_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    parse = RunFolder.parse

    def counted(self: RunFolder, lineno: int, raw: bytes) -> dict[str, Any]:
        line = parse(self, lineno, raw)
        parsed.append(line["doc_id"])
        return line

    monkeypatch.setattr(RunFolder, "parse", counted)
    # none of the lines kept from the pass (tests/unit/reports/test_closest_once.py: those kept are
    # not read at all): the others are read back by where they are
    monkeypatch.setattr(runner, "KEEP_FACTS", 0)
    # one failing row shown: the worst document, and the TP spot checks of the worst documents
    evaluate_dataset(_data(tmp_path, 40), out_dir=tmp_path / "out",
                     settings=runner.ReportSettings(report_rows=1))
    assert parsed and len(parsed) < 40, parsed  # every line was parsed again before
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "| d1 | gold | g1 | revenue | FN |" in report


def _stats(i: int, rng: random.Random) -> DocStats:
    key = [rng.randrange(5) for _ in range(4)]
    return DocStats(doc_id=f"d{i}", counts={"tp_predicted": key[0], "fp": key[1], "tp_gold": key[2],
                                            "fn": key[3], "errors": 0},
                    by_type={}, conflicts={}, usage={},
                    fields={"t": {"a": [rng.randrange(3), rng.randrange(2), rng.randrange(2), 0],
                                  "b": [rng.randrange(3), 0, rng.randrange(2), rng.randrange(2)]}})


def test_the_bootstrap_draws_each_resample_once_with_the_same_intervals(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    agg = Aggregator()
    for i in range(60):
        agg.add(_stats(i, rng))
    keys = list(zip(*agg.keys, strict=False))
    alone_micro = bootstrap_ci(keys, 200, 3)
    alone_fields = field_intervals(agg.field_columns, agg.documents, 200, 3)
    draws: list[int] = []
    choices = random.Random.choices

    def counted(self: random.Random, *args: Any, **kwargs: Any) -> Any:
        draws.append(1)
        return choices(self, *args, **kwargs)

    monkeypatch.setattr(aggregate.random.Random, "choices", counted)
    # Python's draws counted: numpy, imported by an earlier test, would draw them otherwise
    monkeypatch.setitem(sys.modules, "numpy", None)
    summary = agg.summary(200, 3)
    assert len(draws) == 200  # twice that before: once for the micro intervals, once for the fields'
    assert summary.ci95 == alone_micro
    assert {t: {p: s.ci95 for p, s in paths.items()} for t, paths in summary.fields.items()} == alone_fields


def test_usage_add_sums_every_count_and_marks_it_set() -> None:
    total = CallUsage()
    total.add(CallUsage(llm_calls=2, prompt_tokens=30, reasks=1))
    total.add(CallUsage(llm_calls=1, completion_tokens=4))
    assert total == CallUsage(llm_calls=3, prompt_tokens=30, completion_tokens=4, reasks=1)
    assert set(CallUsage.model_fields) <= total.model_fields_set
    assert total.model_dump(exclude_unset=True)["cache_hits"] == 0


@pytest.mark.parametrize("documents", [1, 2, 37, 600])
def test_numpy_draws_the_same_resamples_as_python(documents: int) -> None:
    pytest.importorskip("numpy")
    rng = random.Random(documents)
    agg = Aggregator()
    for i in range(documents):
        agg.add(_stats(i, rng))
    keys = list(zip(*agg.keys, strict=False))
    for seed in (0, 5):
        python = run_intervals(keys, agg.field_columns, documents, 150, seed, use_numpy=False)
        assert run_intervals(keys, agg.field_columns, documents, 150, seed, use_numpy=True) == python
        assert python[0] == bootstrap_ci(keys, 150, seed)
