"""Issue 39: the rules judge waits on nothing, so the pipeline judges its directions inline: no
asyncio task per direction or worker (19 a document of 10 + 10 facts before, 0.2-0.4 s of 1,000
documents), and the same results as when its verdicts are awaited through the task machinery."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from factjudge.evaluation.pipeline import run_judge_async
from factjudge.evaluation.runner import judge_documents
from factjudge.io.config import parse_config
from factjudge.io.scan import Document
from factjudge.judges.base import JudgeBase, JudgePass, Verdicts
from factjudge.judges.rules.judge import RulesJudge
from factjudge.models import JudgeResult, Verdict

T = TypeVar("T")


def _run_counting_tasks(make: Callable[[], Awaitable[T]]) -> tuple[T, int]:
    """``make()``'s result, and how many asyncio tasks were created while it ran."""
    made = [0]

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        made[0] += 1
        return asyncio.Task(coro, loop=loop, **kwargs)

    async def main() -> tuple[T, int]:
        asyncio.get_running_loop().set_task_factory(factory)
        result = await make()
        return result, made[0]  # not the loop's own tasks when asyncio.run closes it

    return asyncio.run(main())


def _document(i: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    gold = [{"id": f"g{k}", "fact_type": "revenue", "company": "Acme Inc.", "period": f"FY{2010 + k}",
             "value": f"{100 + k}", "unit": "USD million"} for k in range(6)]
    predicted = [{"id": f"p{k}", "fact_type": "revenue", "company": "ACME" if k % 2 else "Acme Inc.",
                  "period": f"FY{2010 + k}", "value": f"{100 + k + (k == 3)}.0", "unit": "USD million"}
                 for k in range(5)]
    predicted.append({"id": "p9", "fact_type": "ceo", "company": "Acme", "person": f"Person {i}"})
    return gold, predicted


class _Awaited:
    """The rules judge's direction with only the awaitable ``judge``: judged through the tasks."""

    def __init__(self, opened: Any) -> None:
        self.opened = opened

    async def judge(self, subject: dict[str, Any]) -> Verdict:
        await asyncio.sleep(0)  # a real wait, as an LLM's
        return self.opened.judge_now(subject)


class _AwaitedRules(JudgeBase):
    name = "rules"

    def __init__(self) -> None:
        self.rules = RulesJudge()

    def open(self, questions: JudgePass) -> Verdicts:
        return _Awaited(self.rules.open(questions))


def _comparable(result: JudgeResult) -> dict[str, Any]:
    dumped = result.model_dump(mode="json")
    dumped["usage"].pop("seconds")
    return dumped


def test_a_rules_document_is_judged_without_a_task_and_as_through_the_tasks() -> None:
    gold, predicted = _document(0)
    inline, tasks = _run_counting_tasks(lambda: run_judge_async(gold, predicted, {}, RulesJudge()))
    assert tasks == 0  # before: a task per direction and per worker, 2 + 2 x 6
    awaited, awaited_tasks = _run_counting_tasks(lambda: run_judge_async(gold, predicted, {}, _AwaitedRules()))
    assert awaited_tasks > 2  # a judge that waits still gets its concurrent directions and workers
    assert _comparable(inline) == _comparable(awaited)
    assert [f["factjudge"]["status"] for f in inline.gold_facts].count("TP") >= 4  # it did match


def test_a_rules_dataset_makes_one_task_per_document() -> None:
    documents = [Document(f"d{i}", *_document(i)) for i in range(30)]
    results: list[str] = []
    _, tasks = _run_counting_tasks(lambda: judge_documents(
        documents, parse_config({}), RulesJudge(), lambda doc, result: results.append(doc.doc_id)))
    assert sorted(results) == sorted(d.doc_id for d in documents)
    assert tasks == len(documents)  # the runner's window; before: 15 per document here (450)
