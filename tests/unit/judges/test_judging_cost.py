"""Issue 39: the rules judge's per-fact cost. A comparison's reasoning is written only for the
comparison a verdict explains, two different texts are compared once per run, and explaining a
list does not align its items again; the verdicts and their reasoning stay what they were."""
from __future__ import annotations

from typing import Any

import pytest

from factjudge.judges.base import JudgeTask
from factjudge.judges.rules import compare
from factjudge.judges.rules.judge import RulesJudge
from factjudge.models import JudgeConfig


def _counting(monkeypatch: pytest.MonkeyPatch, name: str, unexplained: bool = False) -> list[int]:
    """Calls of ``compare.<name>`` (``unexplained``: only those not writing a reasoning)."""
    calls = [0]
    original = getattr(compare, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += not (unexplained and args[-1])
        return original(*args, **kwargs)

    monkeypatch.setattr(compare, name, counted)
    return calls


def _revenue(fid: str, company: str, value: str) -> dict[str, Any]:
    return {"id": fid, "fact_type": "revenue", "company": company, "period": "FY2023", "value": value,
            "unit": "USD million"}


def test_only_the_explained_comparison_writes_its_reasoning(monkeypatch: pytest.MonkeyPatch) -> None:
    subject = _revenue("g1", "Acme Inc.", "1,234.5")
    candidates = [_revenue("p0", "Acme Inc.", "1,234.5"),
                  *(_revenue(f"p{i}", "Acme Inc. Holdings", f"{1234.5 + i * 100:.1f}") for i in range(1, 6))]
    shown = _counting(monkeypatch, "_shown")
    verdict, _ = RulesJudge().decide(JudgeTask("gold", subject, candidates, JudgeConfig()))
    assert verdict.status == "TP" and verdict.matched_id == "p0"
    # the best candidate's fields are named, not quoted (identical); the other candidates'
    # comparisons were never written (before: every field of every candidate compared, 13)
    assert shown[0] == 0
    compared = compare.compare_field("value", compare.normalized(subject, -1, True).get("value"),
                                     compare.normalized(candidates[1], 0, True).get("value"), JudgeConfig())
    assert shown[0] == 0
    assert compared.detail == ("1,234.5 [USD million] = 1234500000 USD vs 1334.5 [USD million] = 1334500000 USD: "
                               "differ (abs. diff 100000000, rel. diff 7.49%; no tolerance)")
    assert shown[0] == 1


def test_two_different_texts_are_compared_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    known = _counting(monkeypatch, "_compare_known_texts", unexplained=True)
    config = JudgeConfig()
    judge = RulesJudge()
    subject = {"id": "g1", "fact_type": "ceo", "company": "Orion Pharma Corp.", "person": "Wei Okafor"}
    candidates = [{"id": "p1", "fact_type": "ceo", "company": "Orion Pharma Corp.", "person": "Wei Okafor-Lund"}]
    first = judge.decide(JudgeTask("gold", subject, candidates, config))
    once = known[0]
    again = judge.decide(JudgeTask("gold", dict(subject, id="g2"), candidates, config))
    assert once == 1 and known[0] == once  # the second document's pair: the outcome worked out before
    assert first[0].reasoning == again[0].reasoning.replace("g2", "g1")
    assert first[0].status == "FN"


def test_explaining_a_list_does_not_align_its_items_again(monkeypatch: pytest.MonkeyPatch) -> None:
    items = [{"description": f"Part {n}", "quantity": n, "unit_price": 10.0 * n} for n in range(1, 6)]
    gold = {"id": "g1", "fact_type": "invoice", "number": "INV-1", "line_items": items}
    shuffled = [dict(x) for x in reversed(items)]
    shuffled[0]["unit_price"] = 99.0  # one price wrong: the reasoning names that item
    predicted = {"id": "p1", "fact_type": "invoice", "number": "INV-1", "line_items": shuffled}
    pairs = _counting(monkeypatch, "_compare_item")
    verdict, _ = RulesJudge().decide(JudgeTask("gold", gold, [predicted], JudgeConfig()))
    assert verdict.status == "FN"
    assert "item 5 (Part 5) unit_price" in verdict.reasoning
    assert pairs[0] == 25  # 5 x 5 item pairs, once (explaining compared them all again: 50)
