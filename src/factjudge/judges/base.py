"""The judge contract, shared by the rules, LLM and hybrid judges and any judge of a user's own.

A judge answers one question per call (a :class:`~factjudge.judges.prompts.JudgeTask`) and returns a
:class:`~factjudge.models.Verdict`. It never raises for a failed question: a fact it cannot decide
comes back with status ``ERROR`` and the reason in ``note``. Only a judge that cannot work at all
(a key, model or request format the server refuses, a server never reached) raises
:class:`~factjudge.errors.JudgeSetupError`, which stops the run.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ..models import CallUsage, Verdict
from .prompts import JudgeTask, fact_type_problem, negative_status

#: What a dry run learns about one question without asking it.
Outcome = Literal["call", "cache_hit", "decided_by_rules", "too_large"]


@dataclass(frozen=True)
class Estimate:
    """What asking one question would cost (for ``--dry-run``)."""

    outcome: Outcome
    #: Prompt tokens of the request as it would be sent (0 unless ``outcome == "call"``).
    prompt_tokens: int = 0
    #: Tokens of the shared prefix a provider can cache; 0 when the call was shortlisted.
    shared_prefix_tokens: int = 0
    shortlisted: bool = False


@dataclass(frozen=True)
class BatchRequest:
    """A question as one line of an OpenAI batch file: ``custom_id`` is its response-cache key,
    ``body`` exactly the live request, ``task`` the question as asked (after any shortlist)."""

    custom_id: str
    body: dict[str, Any]
    task: JudgeTask


class BatchTarget(Protocol):
    """The LLM behind a judge, as a provider batch API needs it (an
    :class:`~factjudge.judges.llm.judge.LLMJudge`): the server its requests go to (``endpoint``,
    a :class:`~factjudge.judges.llm.backends.Endpoint`), the response cache its answers are
    imported into (``cache``, a :class:`~factjudge.judges.llm.cache.ResponseCache` or None) and how
    many times it asks again after an invalid answer. Typed loosely here: those classes live above
    the contract."""

    model: str
    answer_retries: int

    @property
    def endpoint(self) -> Any: ...

    @property
    def cache(self) -> Any: ...


@runtime_checkable
class Judge(Protocol):
    """What the pipeline, ``eval`` and the CLI use of a judge, and nothing more."""

    name: str
    #: Send each direction's questions one at a time until one has really reached an LLM, so the
    #: rest hit a warm provider prompt cache.
    warmup: bool
    #: Reads its tasks' prompts (``task.prefix``, ``task.messages()``). A judge that does not gets
    #: tasks without one: a large document's prompt costs as much memory as its facts.
    reads_prompts: bool

    async def judge(self, task: JudgeTask) -> Verdict: ...

    def identity(self) -> dict[str, Any]:
        """Everything that changes verdicts (kind, model, server, sampling...): part of the resume
        hash of ``eval`` and of the response-cache key."""
        ...

    def estimate(self, task: JudgeTask) -> Estimate: ...

    def batch_request(self, task: JudgeTask) -> BatchRequest | None:
        """The live request of a question an LLM would be asked and whose answer is not cached
        yet (for ``--batch-export``); None when nothing would be sent."""
        ...

    def run_info(self) -> dict[str, Any]:
        """How the questions were asked, for ``usage`` (token counter, structured-output mode)."""
        ...

    def batch_target(self) -> BatchTarget | None:
        """The LLM whose requests :meth:`batch_request` writes (for ``--batch``), or None for a
        judge that has none (the rules judge) or several (a jury)."""
        ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: object) -> None: ...


class JudgeBase:
    """Defaults for the optional parts of :class:`Judge`; a judge of your own subclasses it and
    writes ``judge()`` (and ``identity()`` when it has settings that change its verdicts)."""

    name = "judge"
    warmup = False
    reads_prompts = True

    async def judge(self, task: JudgeTask) -> Verdict:
        raise NotImplementedError

    def identity(self) -> dict[str, Any]:
        return {"name": self.name}

    def estimate(self, task: JudgeTask) -> Estimate:
        return Estimate("decided_by_rules")  # no LLM: nothing to pay for

    def batch_request(self, task: JudgeTask) -> BatchRequest | None:
        return None

    def run_info(self) -> dict[str, Any]:
        return {}

    def batch_target(self) -> BatchTarget | None:
        return None

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> JudgeBase:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def error_verdict(task: JudgeTask, reason: str, usage: CallUsage | None = None) -> Verdict:
    # an ERROR description is one line, whatever exception or server text it quotes
    note = " ".join(reason.split())
    return Verdict(fact_id=task.subject_id, status="ERROR", note=note, usage=usage or CallUsage())


def candidate_types(candidates: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Each candidate's fact_type by id, for :func:`verdict_problem`."""
    return {c["id"]: c.get("fact_type") for c in candidates}


def verdict_problem(task: JudgeTask, verdict: Verdict, types: Mapping[str, Any]) -> str:
    if verdict.fact_id != task.subject_id:
        return f"verdict for {verdict.fact_id!r}, asked about {task.subject_id!r}"
    if verdict.status == "TP" and verdict.matched_id not in types:
        return f"TP names {verdict.matched_id!r}, which is not a candidate"
    if verdict.status == "TP" and verdict.matched_id is not None:
        problem = fact_type_problem(task, verdict.matched_id, types)
        if problem:
            return problem
    if verdict.status in ("FN", "FP") and (verdict.status != negative_status(task.direction)
                                         or verdict.matched_id is not None):
        return f"status {verdict.status} with match {verdict.matched_id!r} in the {task.direction} pass"
    return ""
