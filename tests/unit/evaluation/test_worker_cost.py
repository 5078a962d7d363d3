"""Issue 39: what a worker (``eval --workers``) does per document that it need not: parse the
line it has just written to search its closest facts, and typing's protocol checks (7 us each)
for what the pipeline asks of the judge and of each direction it opens."""
from __future__ import annotations

import asyncio
import json
import typing
from typing import Any

import pytest

from factjudge.evaluation import workers
from factjudge.evaluation.pipeline import run_judge_async
from factjudge.io.config import parse_config
from factjudge.io.scan import HeldDocument
from factjudge.judges.base import Inline, JudgeBase, JudgePass, RunInfo, Verdicts, is_inline, run_info_of
from factjudge.judges.rules.judge import RulesJudge
from factjudge.models import Verdict
from factjudge.reports.rows import closest_detail, closest_ids


def _document(i: int) -> HeldDocument:
    gold = [{"id": f"g{k}", "fact_type": "revenue", "company": "Acme Inc.", "period": f"FY{2010 + k}",
             "value": f"{100 + k}", "unit": "USD million"} for k in range(4)]
    predicted = [{"id": f"p{k}", "fact_type": "revenue", "company": "ACME", "period": f"FY{2010 + k}",
                  "value": f"{100 + k + (k == 2)}", "unit": "USD million"} for k in range(4)]
    return HeldDocument(f"d{i}", gold, predicted, i)


class _Held:
    """A worker's dataset whose documents the scan held, every one (none read again)."""

    def __init__(self, held: list[HeldDocument]) -> None:
        self.held, self.infos, self.sources = held, [], ["data.jsonl"]

    def read_again(self, positions: Any) -> Any:
        assert not list(positions)
        return iter(())


def test_a_worker_searches_a_line_s_closest_facts_without_parsing_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    config = parse_config({})
    held = [_document(0), _document(1)]
    monkeypatch.setattr(workers, "_WORKER", {
        "dataset": _Held(held), "config": config, "judge": RulesJudge(), "salt": "", "loop": asyncio.new_event_loop(),
        "closest": config.model_dump(mode="json"), "config_json": config.model_dump(mode="json")})
    parsed = [0]
    loads = json.loads

    def counting(*args: Any, **kwargs: Any) -> Any:
        parsed[0] += 1
        return loads(*args, **kwargs)

    monkeypatch.setattr(json, "loads", counting)
    try:
        lines, changed = workers._judge_chunk([(0, "a" * 64), (1, "b" * 64)])
    finally:
        workers._WORKER["loop"].close()
    assert parsed[0] == 0  # before: each line parsed again, once a document
    monkeypatch.setattr(json, "loads", loads)
    assert changed is None and [line.doc_id for line in lines] == ["d0", "d1"]
    for line in lines:  # the closest facts of the line as the finishing pass reads it
        read = json.loads(line.data)
        read["config"] = config.model_dump(mode="json")
        assert line.closest == closest_ids(closest_detail(read))
        assert line.closest  # a near miss each side: p2's value differs
    assert lines[0].data.endswith(b"\n") and json.loads(lines[0].data)["doc_id"] == "d0"


def test_a_rules_document_makes_no_protocol_check(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[type] = []
    meta = type(Inline)
    check = meta.__instancecheck__

    def counting(cls: type, instance: Any) -> bool:
        checked.append(cls)
        return bool(check(cls, instance))

    monkeypatch.setattr(meta, "__instancecheck__", counting)
    doc = _document(0)
    asyncio.run(run_judge_async(doc.gold, doc.predicted, {}, RulesJudge()))
    assert [c for c in checked if c in (Inline, RunInfo)] == []  # before: Inline twice, RunInfo once


class _WithInfo(JudgeBase):
    name = "info"

    def open(self, questions: JudgePass) -> Verdicts:
        return RulesJudge().open(questions)

    async def judge(self, task: Any) -> Verdict:
        raise AssertionError("not asked")

    def run_info(self) -> dict[str, Any]:
        return {"token_counter": "estimate:test"}


def test_the_checks_answer_as_the_protocols_do() -> None:
    config = parse_config({})
    doc = _document(0)
    asked = JudgePass("gold", doc.predicted, config, None)
    for opened in (RulesJudge().open(asked), JudgeBase.open(_WithInfo(), asked), object()):
        assert is_inline(opened) == isinstance(opened, Inline)
    for judge in (RulesJudge(), _WithInfo(), object()):
        assert run_info_of(judge) == (typing.cast(RunInfo, judge).run_info() if isinstance(judge, RunInfo) else {})
    assert run_info_of(_WithInfo()) == {"token_counter": "estimate:test"}


def test_a_worker_prepares_each_fact_of_a_document_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The closest-fact search reads the facts the judge prepared: none is normalised again."""
    from factjudge.judges.rules import compare

    config = parse_config({})
    monkeypatch.setattr(workers, "_WORKER", {
        "dataset": _Held([_document(0), _document(1)]), "config": config, "judge": RulesJudge(), "salt": "",
        "loop": asyncio.new_event_loop(), "closest": config.model_dump(mode="json"),
        "config_json": config.model_dump(mode="json")})
    prepared: list[str] = []
    normalized = compare.normalized

    def counting(fact: dict[str, Any], *args: Any) -> compare.Prepared:
        prepared.append(str(fact["id"]))
        return normalized(fact, *args)

    monkeypatch.setattr(compare, "normalized", counting)
    try:
        lines, _ = workers._judge_chunk([(0, "a" * 64), (1, "b" * 64)])
    finally:
        workers._WORKER["loop"].close()
    assert all(line.closest for line in lines)  # the search ran: a near miss each side
    assert len(prepared) == 16  # 8 facts a document; before: 32, each again for the search


def _worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """What _start sets in a worker (without its signal handler and its thread)."""
    config = parse_config({})
    as_json = config.model_dump(mode="json")
    monkeypatch.setattr(workers, "_WORKER", {
        "dataset": _Held([_document(0), _document(1), _document(2)]), "config": config, "judge": RulesJudge(),
        "salt": "", "loop": asyncio.new_event_loop(), "config_json": as_json, "closest": as_json})


def test_a_worker_dumps_the_config_once_not_once_a_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """A result holds the run's config as JSON: a worker's results share the one dict it made."""
    from factjudge.models import JudgeConfig

    _worker(monkeypatch)
    dumped = [0]
    dump = JudgeConfig.model_dump

    def counting(self: JudgeConfig, *args: Any, **kwargs: Any) -> dict[str, Any]:
        dumped[0] += 1
        return dump(self, *args, **kwargs)

    monkeypatch.setattr(JudgeConfig, "model_dump", counting)
    try:
        lines, _ = workers._judge_chunk([(0, "a" * 64), (1, "b" * 64), (2, "c" * 64)])
    finally:
        workers._WORKER["loop"].close()
    assert dumped[0] == 0  # before: one a document
    assert len(lines) == 3 and all(b'"config"' not in line.data for line in lines)


def test_a_worker_s_closest_search_reads_the_fields_the_judge_compared(monkeypatch: pytest.MonkeyPatch) -> None:
    """compared_fields once a document (the judge's), not once more for the closest search; the
    closest facts are those of the line as the finishing pass reads it."""
    from factjudge.core import scope
    from factjudge.evaluation import pipeline
    from factjudge.reports import rows

    _worker(monkeypatch)
    calls = [0]

    def counting(*args: Any) -> Any:
        calls[0] += 1
        return scope.compared_fields(*args)

    monkeypatch.setattr(pipeline, "compared_fields", counting)
    monkeypatch.setattr(rows, "compared_fields", counting)
    try:
        lines, _ = workers._judge_chunk([(0, "a" * 64), (1, "b" * 64), (2, "c" * 64)])
    finally:
        workers._WORKER["loop"].close()
    assert calls[0] == 3  # before: 6, twice a document
    monkeypatch.undo()
    for line in lines:
        read = json.loads(line.data)
        read["config"] = parse_config({}).model_dump(mode="json")
        assert line.closest and line.closest == closest_ids(closest_detail(read))
