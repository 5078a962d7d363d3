"""Rules first, LLM only where needed: an exact rules match is final, and so is proof (issue #36):
a pair the rules prove different on a hard field (:mod:`factjudge.judges.rules.proof`) is never
asked. A fact every candidate of whose type is proved different is the negative without a call;
otherwise the candidates proved different are left out of its question, so the model cannot link
them (and reads fewer tokens). ``proof_guard: false`` in the config asks as before."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import CallUsage, Verdict
from .base import Estimate, JudgeBase, JudgePass, JudgeTask, Stage, negative_status
from .llm.batch_lines import BatchRequest
from .llm.direction import LLMPass
from .llm.judge import LLMJudge

if TYPE_CHECKING:
    from .rules.judge import RulesJudge, RulesPass
    from .rules.proof import Proof

#: Proofs named in a verdict's reasoning, at most.
SHOWN_PROOFS = 3


def _by_rules(verdict: Verdict) -> Verdict:
    return verdict.model_copy(update={"reasoning": f"[decided by the rules judge: exact match] {verdict.reasoning}",
                                      "usage": CallUsage(llm_calls_saved=1)})


def _by_llm(verdict: Verdict, left_out: int = 0) -> Verdict:
    if verdict.reasoning is not None:
        verdict.reasoning = f"[decided by the LLM judge] {verdict.reasoning}"
    if left_out:
        verdict.usage.proof_left_out += left_out
    return verdict


def _by_proof(verdict: Verdict, proofs: dict[str, Proof], direction: Any) -> Verdict:
    """The negative, with the rules' reasoning: every candidate of the fact's type is proved
    different (the rules' own verdict may be a TP by a similar text where an identifier differs)."""
    shown = "; ".join(f"{cid}: {p.reasoning()}" for cid, p in list(proofs.items())[:SHOWN_PROOFS])
    more = f"; and {len(proofs) - SHOWN_PROOFS} more" if len(proofs) > SHOWN_PROOFS else ""
    negative = negative_status(direction)
    rules = f" {verdict.reasoning}" if verdict.status == negative and verdict.reasoning else ""
    return Verdict(fact_id=verdict.fact_id, status=negative,
                   reasoning=f"[decided by the rules judge: proved different] {negative}: every candidate of "
                             f"its fact_type is proved different ({shown}{more}).{rules}",
                   usage=CallUsage(llm_calls_saved=1, proved_different=1))


class HybridJudge(JudgeBase):
    """An exact rules match (every compared field equal after normalisation, exactly one such
    candidate) is final, and so is a difference the rules prove; everything else goes to the LLM
    judge."""

    name = "hybrid"

    def __init__(self, rules: RulesJudge, llm: LLMJudge) -> None:
        self.rules, self.llm = rules, llm

    def identity(self) -> dict[str, Any]:
        return {**self.llm.identity(), "name": self.name, "rules": self.rules.identity(), "proof_guard": True}

    def run_info(self) -> dict[str, Any]:
        return self.llm.run_info()

    def batch_llm(self) -> LLMJudge:
        return self.llm

    def open(self, questions: JudgePass) -> HybridPass:
        return HybridPass(self.rules.open(questions), self.llm.open(questions))

    async def judge(self, task: JudgeTask) -> Verdict:
        """One question on its own (a run asks through :meth:`open`)."""
        verdict, exact = self.rules.decide(task)
        if exact:
            return _by_rules(verdict)
        proofs: dict[str, Proof] = {}
        if task.config.proof_guard:
            rules = self.rules.open(JudgePass(task.direction, task.candidates, task.config, task.fields))
            proofs, of_type = rules.proofs(task.subject)
            if proofs and len(proofs) == of_type:
                return _by_proof(verdict, proofs, task.direction)
        if proofs:
            task = JudgeTask(task.direction, task.subject, [c for c in task.candidates if str(c["id"]) not in proofs],
                             task.config, task.fields)
        return _by_llm(await self.llm.judge(task), len(proofs))

    async def aclose(self) -> None:
        await self.llm.aclose()


class HybridPass:
    """One direction: the rules judge's index and the LLM's prompts, each built once."""

    def __init__(self, rules: RulesPass, llm: LLMPass) -> None:
        self.rules, self.llm = rules, llm
        self.guard = llm.questions.config.proof_guard

    def _proved(self, subject: dict[str, Any]) -> tuple[dict[str, Proof], bool]:
        """The candidates proved different, and whether that is all of the subject's type."""
        if not self.guard:
            return {}, False
        proofs, of_type = self.rules.proofs(subject)
        return proofs, bool(proofs) and len(proofs) == of_type

    async def judge(self, subject: dict[str, Any]) -> Verdict:
        skipped = self.llm.questions.unasked(subject)  # no candidate of its type: neither is asked
        if skipped is not None:
            return skipped
        verdict, exact = self.rules.decide(subject)
        if exact:
            return _by_rules(verdict)
        proofs, every = self._proved(subject)
        if every:
            return _by_proof(verdict, proofs, self.llm.questions.direction)
        return _by_llm(await self.llm.judge(subject, proofs.keys()), len(proofs))

    def stages(self, subjects: list[dict[str, Any]]) -> list[Stage]:
        return self.llm.stages(subjects)

    def estimate(self, subject: dict[str, Any]) -> Estimate:
        if self.rules.decide(subject)[1]:
            return Estimate("decided_by_rules")
        proofs, every = self._proved(subject)
        return Estimate("decided_by_rules") if every else self.llm.estimate(subject, proofs.keys())

    def batch_request(self, subject: dict[str, Any]) -> BatchRequest | None:
        if self.rules.decide(subject)[1]:
            return None
        proofs, every = self._proved(subject)
        return None if every else self.llm.batch_request(subject, proofs.keys())
