"""The deterministic, offline ``rules`` judge.

It answers the same question as the LLM judge (is the subject fact matched by one of the
candidates?) with normalisation (:mod:`factjudge.judges.rules.normalize`) and per-field comparisons
(:mod:`factjudge.judges.rules.compare`): ``fact_type`` must be equal, and the compared fields are
``config.fields`` or, when that is None, every field of the subject except ``id`` and
``fact_type``.

A candidate matches when every compared field matches. Among matching candidates the highest
score (the mean of the field scores, 0-100) wins, ties go to the earliest candidate.

Speed: a subject is only fully compared with the candidates its direction's
:class:`~factjudge.judges.rules.index.CandidateIndex` shortlists. The index is built once per
direction of a document, when the judge opens it (:class:`RulesPass`), so it is freed when that
direction is done.
"""
from __future__ import annotations

from typing import Any

from ...core.scope import matching_rules_check, per_fact_type
from ...models import Direction, JudgeConfig, NegativeStatus, PassStatus, Verdict, quoted
from ..base import JudgeBase, JudgePass, JudgeTask, negative_status
from .compare import CandidateResult, Forms, Prepared, compare_facts, finish_facts
from .index import SMALL_POOL, CandidateIndex, shortlist
from .knowledge import knowledge_for
from .proof import Proof, proved_different


class RulesJudge(JudgeBase):
    """Deterministic offline judge: normalisation + per-field rules, no LLM calls."""

    name = "rules"

    def open(self, questions: JudgePass) -> RulesPass:
        return RulesPass(self, questions)

    def config_warnings(self, config: JudgeConfig) -> list[str]:
        return matching_rules_check(config)

    @staticmethod
    def index(candidates: list[dict[str, Any]], config: JudgeConfig, forms: Forms | None = None) -> CandidateIndex:
        """``forms``: the document's facts prepared already (:attr:`~..base.JudgePass.forms`)."""
        return CandidateIndex(candidates, config.ignore_company_suffixes, knowledge_for(config), config, forms)

    def decide(self, task: JudgeTask, index: CandidateIndex | None = None) -> tuple[Verdict, bool]:
        """The verdict, and whether it is exact: one candidate matched, every field equal.
        ``index``: the task's candidates indexed (a question on its own indexes them itself)."""
        if index is None:
            index = self.index(task.candidates, task.config)
        return _decide(task.direction, task.subject, task.compared, task.config, index)

    async def judge(self, task: JudgeTask) -> Verdict:
        return self.decide(task)[0]


class RulesPass:
    """One direction of a document: its candidates indexed once, every subject judged against them
    (a large document holds one direction's index at a time). It waits on nothing: the pipeline
    judges it inline (:class:`~factjudge.judges.base.Inline`), without tasks."""

    def __init__(self, rules: RulesJudge, questions: JudgePass) -> None:
        self.rules, self.questions = rules, questions
        self.index = rules.index(questions.candidates, questions.config, questions.forms)
        # a subclass's own decide(task) is asked as before: with a task per subject
        self.own = type(rules).decide is RulesJudge.decide
        # a subject's JudgeTask.compared, once per fact_type that the config or the document names
        self.compared = per_fact_type(questions.config, questions.fields,
                                      lambda subject: questions.task(subject).compared)

    def decide(self, subject: dict[str, Any]) -> tuple[Verdict, bool]:
        asked = self.questions
        if not self.own:
            return self.rules.decide(asked.task(subject), self.index)
        return _decide(asked.direction, subject, self.compared(subject), asked.config, self.index)

    def proofs(self, subject: dict[str, Any]) -> tuple[dict[str, Proof], int]:
        """The candidates of ``subject``'s fact_type proved different from it on a hard field
        (:mod:`.proof`), by id, and how many candidates of its type there are."""
        task = self.questions.task(subject)
        index, config = self.index, task.config
        prepared = index.prepare(subject)
        bucket = index.bucket(prepared.fact_type)
        fields = task.compared
        proofs = {}
        for i in bucket:
            cand = index.prepared[i]
            proof = proved_different(prepared, cand, subject, self.questions.candidates[i], fields, config)
            if proof is not None:
                proofs[cand.fact_id] = proof
        return proofs, len(bucket)

    def judge_now(self, subject: dict[str, Any]) -> Verdict:
        return self.decide(subject)[0]

    async def judge(self, subject: dict[str, Any]) -> Verdict:
        return self.judge_now(subject)


def _decide(direction: Direction, fact: dict[str, Any], fields: list[str], config: JudgeConfig,
            index: CandidateIndex) -> tuple[Verdict, bool]:
    """:meth:`RulesJudge.decide` of ``fact`` in ``direction``, comparing ``fields`` (its task's
    :attr:`~..base.JudgeTask.compared`), without a task."""
    negative = negative_status(direction)
    other: Direction = "predicted" if direction == "gold" else "gold"
    subject = index.prepare(fact)

    def verdict(status: PassStatus, reasoning: str, matched: str | None = None) -> Verdict:
        return Verdict(fact_id=str(fact["id"]), status=status, matched_id=matched, reasoning=reasoning)

    bucket = index.bucket(subject.fact_type)
    if not bucket:
        return verdict(negative, f"{negative}: none of the {index.size} {other} facts has "
                                 f"fact_type {quoted(subject.fact_type)}."), False
    # A bucket this small is compared whole: looking its candidates up cost more than comparing
    # them (10 facts a side: 2 of a type). The shortlist holds every match, so the matches are
    # the same; a miss is explained by the closest of the shortlist, as when it was looked up.
    whole = len(bucket) <= SMALL_POOL
    # each candidate compared up to its first differing field: a match needs every field equal,
    # and only when none matches are the others' fields read (the closest, and its reasoning)
    results = [compare_facts(subject, index.prepared[i], fields, config, index.knowledge, until_miss=True)
               for i in (bucket if whole else shortlist(index, subject, fields, config))]
    matches = [r for r in results if r.ok]
    if matches:
        best = max(matches, key=lambda r: (r.score, -r.candidate.position))
        return verdict("TP", _tp_reasoning(best, matches, fields),
                       best.candidate.fact_id), len(matches) == 1 and best.exact
    if whole:
        listed = set(shortlist(index, subject, fields, config))
        results = [r for r in results if r.candidate.position in listed]
    if results:
        results = [finish_facts(r, subject, fields, config, index.knowledge) for r in results]
        closest = max(results, key=lambda r: r.closeness)
        how = ""
    else:
        i = index.closest_overall(subject, fields)
        closest = compare_facts(subject, index.prepared[i], fields, config, index.knowledge)
        how = " (by overall similarity: none agrees on the indexed fields)"
    return verdict(negative, _negative_reasoning(negative, other, subject, closest, len(bucket),
                                                 how)), False


def _tp_reasoning(best: CandidateResult, matches: list[CandidateResult], fields: list[str]) -> str:
    head = f"TP: matches {best.candidate.fact_id} (fact_type {quoted(best.candidate.fact_type)}"
    head += f", score {best.score:.1f})." if fields else "; no fields to compare)."
    same = [f.name for f in best.fields if f.identical]
    lines = [head, *([f"Identical: {', '.join(same)}."] if same else []),
             *(f.line() + "." for f in best.fields if not f.identical)]
    if len(matches) > 1:
        ids = ", ".join(m.candidate.fact_id for m in matches)
        lines.append(f"{len(matches)} candidates matched ({ids}); the best score wins, "
                     "the earliest on ties.")
    return " ".join(lines)


def _negative_reasoning(negative: NegativeStatus, other: Direction, subject: Prepared, closest: CandidateResult,
                        same_type: int, how: str) -> str:
    failed = [f for f in closest.fields if not f.ok]
    agreed = [f.name for f in closest.fields if f.ok]
    lines = [f"{negative}: no {other} fact of fact_type {quoted(subject.fact_type)} matches "
             f"({same_type} of that type). Closest: {closest.candidate.fact_id}{how}."]
    if closest.empty:
        lines.append(f"Nothing to compare: {', '.join(closest.empty)} null, empty or absent on both sides.")
    lines += [f"{f.line()}." for f in failed]
    if agreed:
        lines.append(f"Agrees on {', '.join(agreed)}.")
    return " ".join(lines)
