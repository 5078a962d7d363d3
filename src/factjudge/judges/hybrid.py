"""Rules first, LLM only where needed."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import CallUsage, Verdict
from .base import Estimate, JudgeBase, JudgePass, JudgeTask, Stage
from .llm.batch_lines import BatchRequest
from .llm.direction import LLMPass
from .llm.judge import LLMJudge

if TYPE_CHECKING:
    from .rules.judge import RulesJudge, RulesPass


def _by_rules(verdict: Verdict) -> Verdict:
    return verdict.model_copy(update={"reasoning": f"[decided by the rules judge: exact match] {verdict.reasoning}",
                                      "usage": CallUsage(llm_calls_saved=1)})


def _by_llm(verdict: Verdict) -> Verdict:
    if verdict.reasoning is not None:
        verdict.reasoning = f"[decided by the LLM judge] {verdict.reasoning}"
    return verdict


class HybridJudge(JudgeBase):
    """An exact rules match (every compared field equal after normalisation, exactly one such
    candidate) is final; everything else goes to the LLM judge."""

    name = "hybrid"

    def __init__(self, rules: RulesJudge, llm: LLMJudge) -> None:
        self.rules, self.llm = rules, llm

    def identity(self) -> dict[str, Any]:
        return {**self.llm.identity(), "name": self.name, "rules": self.rules.identity()}

    def run_info(self) -> dict[str, Any]:
        return self.llm.run_info()

    def batch_llm(self) -> LLMJudge:
        return self.llm

    def open(self, questions: JudgePass) -> HybridPass:
        return HybridPass(self.rules.open(questions), self.llm.open(questions))

    async def judge(self, task: JudgeTask) -> Verdict:
        verdict, exact = self.rules.decide(task)
        return _by_rules(verdict) if exact else _by_llm(await self.llm.judge(task))

    async def aclose(self) -> None:
        await self.llm.aclose()


class HybridPass:
    """One direction: the rules judge's index and the LLM's prompts, each built once."""

    def __init__(self, rules: RulesPass, llm: LLMPass) -> None:
        self.rules, self.llm = rules, llm

    async def judge(self, subject: dict[str, Any]) -> Verdict:
        skipped = self.llm.questions.unasked(subject)  # no candidate of its type: neither is asked
        if skipped is not None:
            return skipped
        verdict, exact = self.rules.decide(subject)
        return _by_rules(verdict) if exact else _by_llm(await self.llm.judge(subject))

    def stages(self, subjects: list[dict[str, Any]]) -> list[Stage]:
        return self.llm.stages(subjects)

    def estimate(self, subject: dict[str, Any]) -> Estimate:
        if self.rules.decide(subject)[1]:
            return Estimate("decided_by_rules")
        return self.llm.estimate(subject)

    def batch_request(self, subject: dict[str, Any]) -> BatchRequest | None:
        return None if self.rules.decide(subject)[1] else self.llm.batch_request(subject)
