"""The judge contract, shared by the rules, LLM and hybrid judges, juries and any judge of a user's own.

A judge is asked per direction of a document: :meth:`Judge.open` takes one :class:`JudgePass`
(the direction, its candidates, the config) and returns what judges that direction's subjects,
one :class:`~factjudge.models.Verdict` per call. What a judge works out once per candidate list
(the rules judge's index, the LLM's prompt prefix and request plan) lives in that object and is
freed with it. A judge of one's own subclasses :class:`JudgeBase` and writes one method,
``judge(task)``, called with a :class:`JudgeTask` per question.

A judge never raises for a failed question: a fact it cannot decide comes back with status
``ERROR`` and the reason in ``note``. Only a judge that cannot work at all (a key, model or
request format the server refuses, a server never reached) raises
:class:`~factjudge.errors.JudgeSetupError`, which stops the run.

What only some judges can do is a small protocol of its own, checked where it is used:
:class:`Staged` (the order a direction is asked in, and warm-up), :class:`Estimates` (dry runs),
:class:`RunInfo` (what goes into ``usage``), :class:`ConfigWarnings` (config keys it ignores),
:class:`Inline` (a direction decided at once, without tasks: the rules judge); batch lines are the
LLM package's (:mod:`factjudge.judges.llm.batch_lines`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, Protocol, TypeGuard, cast, runtime_checkable

from ..core.scope import NOT_COMPARED
from ..models import CallUsage, Direction, JudgeConfig, NegativeStatus, Verdict
from ..util.jsonutil import canonical_json

#: Bumped whenever the wording or layout of the LLM's prompts changes: part of eval's resume hash
#: (here, so that the run's manifest needs no prompt module) and of the response-cache key. 4:
#: facts as tables, the field names once per fact_type (issue #25). 5: the answer names the matched
#: id or null, without a status object; tighter instructions (issue #25: on WebNLG's 3+3 triples the
#: instructions and the schema were most of each prompt).
PROMPT_FORMAT_VERSION = "5"

_NEGATIVE: dict[Direction, NegativeStatus] = {"gold": "FN", "predicted": "FP"}


def negative_status(direction: Direction) -> NegativeStatus:
    """FN for a gold fact nothing matched, FP for a predicted one."""
    return _NEGATIVE[direction]


def type_key(fact: Mapping[str, Any]) -> str:
    """A fact's fact_type as a hashable key (any JSON value may be one)."""
    return canonical_json(fact.get("fact_type"))


@dataclass(frozen=True)
class JudgeTask:
    """One question for a judge: is ``subject`` matched by one of ``candidates``?"""

    direction: Direction
    subject: dict[str, Any]
    candidates: list[dict[str, Any]]
    config: JudgeConfig
    #: The fields compared per fact_type when ``config.fields`` is not given (see scope.py).
    fields: dict[str, tuple[str, ...]] | None = None

    @property
    def compared(self) -> list[str]:
        """The fields to compare for this subject: ``config.fields`` in order; else the fields of
        its fact_type's gold facts (``fields``); else its own. ``fact_type`` is checked before any
        field, and ``id`` is never data: listing it compares nothing (both read as missing)."""
        if (named := self.config.fields_for(self.subject.get("fact_type"))) is not None:
            return named
        if self.fields is not None and self.subject.get("fact_type") in self.fields:
            return list(self.fields[self.subject["fact_type"]])
        return [k for k in self.subject if k not in NOT_COMPARED]

    @property
    def subject_id(self) -> str:
        return str(self.subject["id"])

    @property
    def candidate_ids(self) -> list[str]:
        return [c["id"] for c in self.candidates]


#: What the rules judge works out once per fact of a document (its normal forms), by the identity
#: of the fact dict, each entry holding its fact: a fact is a subject in one direction, a candidate
#: in the other and read again by the document's analysis. One document's and one config's: the
#: pipeline makes it per document, so it is freed with the document.
FactForms = dict[int, tuple[Mapping[str, Any], Any]]


class JudgePass:
    """One direction of one document, as a judge opens it: the subjects of ``direction`` are
    judged against ``candidates`` (the other side's in-scope facts) under ``config``; ``fields``:
    the compared fields per fact_type (:func:`factjudge.core.scope.compared_fields`); ``doc_id``
    names the document (an LLM labels its provider prompt-cache key with it); ``forms``: the
    document's :data:`FactForms`, shared by its two directions (None: worked out per direction)."""

    def __init__(self, direction: Direction, candidates: list[dict[str, Any]], config: JudgeConfig,
                 fields: dict[str, tuple[str, ...]] | None = None, doc_id: str = "",
                 forms: FactForms | None = None) -> None:
        self.direction, self.candidates, self.config = direction, candidates, config
        self.fields, self.doc_id, self.forms = fields, doc_id, forms

    @cached_property
    def by_type(self) -> dict[str, list[dict[str, Any]]]:
        """The candidates by :func:`type_key`, types in order of first appearance, facts in input order."""
        return by_type_key(self.candidates)

    def task(self, subject: dict[str, Any], same_type: bool = False) -> JudgeTask:
        """The question about ``subject``; ``same_type``: shown only the candidates of its
        fact_type (``candidates: same_type``), the only ones it can match."""
        shown = self.by_type.get(type_key(subject), []) if same_type else self.candidates
        return JudgeTask(self.direction, subject, shown, self.config, self.fields)

    def unasked(self, subject: Mapping[str, Any]) -> Verdict | None:
        """The verdict of a fact no candidate shares a fact_type with, which can only be the
        negative, without a question (asking would invite an answer the checks refuse:
        Qwen2.5-Coder-1.5B named a gross_profit fact for a revenue one three times running, twice on
        52 calibration pairs: two ERRORs); None for a fact worth asking about."""
        if type_key(subject) in self.by_type:
            return None
        return unasked_verdict(self.direction, str(subject["id"]), of_its_type=bool(self.candidates))


def by_type_key(facts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``facts`` by :func:`type_key`, types in order of first appearance, facts in input order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for fact in facts:
        groups.setdefault(type_key(fact), []).append(fact)
    return groups


def unasked_verdict(direction: Direction, fact_id: str, of_its_type: bool = False) -> Verdict:
    """The negative verdict of a fact with no candidate (of its fact_type): no judge call."""
    other = "predicted" if direction == "gold" else "gold"
    which = f"{other} facts of its fact_type" if of_its_type else f"{other} facts"
    return Verdict(fact_id=fact_id, status=negative_status(direction),
                   note=f"no in-scope {which} to compare with; no judge call made")


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
    #: Of ``prompt_tokens``, those a provider would serve from its prompt cache (the shared prefix
    #: after an earlier call of the same direction sent it, when the provider caches a prefix that long).
    cached_prefix_tokens: int = 0


@dataclass(frozen=True)
class Stage:
    """Subjects of a direction asked together; ``warm``: one at a time until one has really
    reached an LLM, so the rest hit a warm provider prompt cache."""

    subjects: list[dict[str, Any]]
    warm: bool = False


class Verdicts(Protocol):
    """One direction of one document, opened by :meth:`Judge.open`: judges its subjects."""

    async def judge(self, subject: dict[str, Any]) -> Verdict: ...


@runtime_checkable
class Inline(Protocol):
    """An opened direction that decides a subject at once, waiting on nothing (no I/O, no other
    task: the rules judge). The pipeline then judges the direction in a plain loop, without the
    tasks, workers and limiter that let an LLM's questions wait concurrently (about 19 tasks a
    document); ``judge_now(subject)`` is the verdict ``await judge(subject)`` gives."""

    def judge_now(self, subject: dict[str, Any]) -> Verdict: ...


@runtime_checkable
class Staged(Protocol):
    """An opened direction that says in which groups its subjects are asked, one group after
    another (the LLM: one per prompt prefix), and which to warm up first."""

    def stages(self, subjects: list[dict[str, Any]]) -> list[Stage]: ...


@runtime_checkable
class Estimates(Protocol):
    """An opened direction that can say what a question would cost (``--dry-run``) without asking:
    a judge without it calls no LLM, so nothing is to be paid."""

    def estimate(self, subject: dict[str, Any]) -> Estimate: ...


@runtime_checkable
class Judge(Protocol):
    """What the pipeline, ``eval`` and the CLI use of every judge, and nothing more."""

    name: str

    def identity(self) -> dict[str, Any]:
        """Everything that changes verdicts (kind, model, server, sampling...): part of the resume
        hash of ``eval`` and of the response-cache key."""
        ...

    def open(self, questions: JudgePass) -> Verdicts:
        """What judges the subjects of one direction of one document (built once per direction)."""
        ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: object) -> None: ...


@runtime_checkable
class RunInfo(Protocol):
    """A judge that reports how its questions were asked, for ``usage`` (token counter,
    structured-output mode)."""

    def run_info(self) -> dict[str, Any]: ...


@runtime_checkable
class ConfigWarnings(Protocol):
    """A judge that ignores some config keys says which, before a run (the rules judge reads no
    ``matching_rules``)."""

    def config_warnings(self, config: JudgeConfig) -> list[str]: ...


def run_info_of(judge: object) -> dict[str, Any]:
    """``judge``'s :class:`RunInfo`, or nothing."""
    # what isinstance(judge, RunInfo) checks (a protocol of one method), without typing's check,
    # which walks the protocol's members on each call (7 us: once a document)
    run_info = getattr(judge, "run_info", None)
    return cast(RunInfo, judge).run_info() if run_info is not None else {}


def is_inline(opened: object) -> TypeGuard[Inline]:
    """``isinstance(opened, Inline)``: what the runtime check of a one-method protocol comes to
    (the method is there and not None), at 0.1 us instead of typing's 7 (twice a document)."""
    return getattr(opened, "judge_now", None) is not None


class _AskEach:
    """A direction opened by :class:`JudgeBase`: each subject asked through the judge's ``judge(task)``."""

    def __init__(self, judge: JudgeBase, questions: JudgePass) -> None:
        self.ask, self.questions = judge.judge, questions
        self.same_type = questions.config.candidates == "same_type"

    async def judge(self, subject: dict[str, Any]) -> Verdict:
        skipped = self.questions.unasked(subject)
        if skipped is not None:
            return skipped
        return await self.ask(self.questions.task(subject, self.same_type))


class JudgeBase:
    """A judge of your own subclasses it and writes ``judge(task)`` (and ``identity()`` when it has
    settings that change its verdicts). It is asked only about facts with a candidate of their
    fact_type (shown only those with ``candidates: same_type``)."""

    name = "judge"

    async def judge(self, task: JudgeTask) -> Verdict:
        raise NotImplementedError

    def identity(self) -> dict[str, Any]:
        return {"name": self.name}

    def open(self, questions: JudgePass) -> Verdicts:
        return _AskEach(self, questions)

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


def fact_type_problem(task: JudgeTask, matched_id: str, types: Mapping[str, Any] | None = None) -> str:
    """Facts of different fact_type never match: why a TP naming ``matched_id`` is wrong, or "".
    ``types``: the candidates' fact_type by id, when the caller has it (a scan per answer would
    make a large document's run quadratic)."""
    want = task.subject.get("fact_type")
    got = types.get(matched_id, want) if types is not None else next(
        (c.get("fact_type") for c in task.candidates if c["id"] == matched_id), want)
    return _type_problem(matched_id, got, want)


def _type_problem(matched_id: str, got: Any, want: Any) -> str:
    if got != want:
        return (f"{matched_id!r} is a {got!r} fact and the judged fact is {want!r}: facts of "
                "different fact_type never match")
    return ""


def verdict_problem(task: JudgeTask, verdict: Verdict, types: Mapping[str, Any]) -> str:
    return answer_problem(task.direction, task.subject, verdict, types)


def answer_problem(direction: Direction, subject: Mapping[str, Any], verdict: Verdict,
                   types: Mapping[str, Any]) -> str:
    """Why ``verdict`` breaks the contract for the question about ``subject`` in ``direction``
    (``types``: :func:`candidate_types`), or "": :func:`verdict_problem` without building the
    task (the pipeline checks every verdict of every judge)."""
    subject_id = str(subject["id"])
    if verdict.fact_id != subject_id:
        return f"verdict for {verdict.fact_id!r}, asked about {subject_id!r}"
    if verdict.status == "TP" and verdict.matched_id not in types:
        return f"TP names {verdict.matched_id!r}, which is not a candidate"
    if verdict.status == "TP" and verdict.matched_id is not None:
        want = subject.get("fact_type")
        problem = _type_problem(verdict.matched_id, types.get(verdict.matched_id, want), want)
        if problem:
            return problem
    if verdict.status in ("FN", "FP") and (verdict.status != negative_status(direction)
                                         or verdict.matched_id is not None):
        return f"status {verdict.status} with match {verdict.matched_id!r} in the {direction} pass"
    return ""
