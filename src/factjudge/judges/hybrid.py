"""Rules first, LLM only where needed."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import CallUsage, Verdict
from .base import BatchRequest, Estimate, JudgeBase
from .llm.judge import LLMJudge
from .prompts import JudgeTask

if TYPE_CHECKING:
    from .rules.judge import RulesJudge


class HybridJudge(JudgeBase):
    """An exact rules match (every compared field equal after normalisation, exactly one such
    candidate) is final; everything else goes to the LLM judge."""

    name = "hybrid"

    def __init__(self, rules: RulesJudge, llm: LLMJudge) -> None:
        self.rules, self.llm = rules, llm
        self.warmup = llm.warmup

    def identity(self) -> dict[str, Any]:
        return {**self.llm.identity(), "name": self.name, "rules": self.rules.identity()}

    def run_info(self) -> dict[str, Any]:
        return self.llm.run_info()

    def estimate(self, task: JudgeTask) -> Estimate:
        if self.rules.decide(task)[1]:
            return Estimate("decided_by_rules")
        return self.llm.estimate(task)

    def batch_request(self, task: JudgeTask) -> BatchRequest | None:
        return None if self.rules.decide(task)[1] else self.llm.batch_request(task)

    def batch_target(self) -> LLMJudge:
        return self.llm

    async def judge(self, task: JudgeTask) -> Verdict:
        verdict, exact = self.rules.decide(task)
        if exact:
            return verdict.model_copy(update={
                "reasoning": f"[decided by the rules judge: exact match] {verdict.reasoning}",
                "usage": CallUsage(llm_calls_saved=1)})
        verdict = await self.llm.judge(task)
        if verdict.reasoning is not None:
            verdict.reasoning = f"[decided by the LLM judge] {verdict.reasoning}"
        return verdict

    async def aclose(self) -> None:
        await self.llm.aclose()
