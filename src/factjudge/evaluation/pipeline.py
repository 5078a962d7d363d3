"""run_judge: scope, both directions asked (concurrent, bounded), reconciliation, analysis, output.

A judge opens each direction of a document (:meth:`~factjudge.judges.base.Judge.open`) and judges
its subjects; how it asks (prompts, caches, the order and warm-up of its calls) is the judge's."""
from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from ..core.alerts import document_warnings
from ..core.analysis import analyse
from ..core.fields import FieldComparer, Match, count_fields, field_counts
from ..core.metrics import compute_metrics
from ..core.reconcile import Outcome, reconcile
from ..core.scope import (
    compared_fields,
    fields_by_type,
    in_scope_facts,
    scope_warnings,
)
from ..errors import FactJudgeWarning
from ..io.config import parse_config
from ..io.facts import coerce_facts
from ..judges.base import (
    ConfigWarnings,
    Estimate,
    Estimates,
    FactForms,
    Judge,
    JudgePass,
    Stage,
    Staged,
    Verdicts,
    answer_problem,
    candidate_types,
    error_verdict,
    is_inline,
    run_info_of,
    unasked_verdict,
)
from ..models import (
    VERDICT_KEY,
    VERDICT_TEXT_LIMIT,
    Analysis,
    Direction,
    JudgeConfig,
    JudgeResult,
    PassStatus,
    Status,
    Usage,
    Verdict,
    cut_text,
)
from ..util.aio import gather_all, run_sync
from ..util.terminal import printable


class ProgressObserver(Protocol):
    """What judging reports as it goes (the CLI's progress bar is one)."""

    def on_questions(self, count: int) -> None:
        """A document is about to ask ``count`` judge questions (called once per document)."""

    def on_verdict(self, direction: Direction, verdict: Verdict) -> None:
        """One question of the ``direction`` pass was answered (before reconciliation)."""


def directions(gold: list[dict[str, Any]], predicted: list[dict[str, Any]]
               ) -> tuple[tuple[Direction, list[dict[str, Any]], list[dict[str, Any]]], ...]:
    """``(direction, subjects, candidates)`` of both passes: gold facts against the predicted
    ones, then predicted facts against the gold ones."""
    return ("gold", gold, predicted), ("predicted", predicted, gold)


def questions(gold_facts: Iterable[Mapping[str, Any]], predicted_facts: Iterable[Mapping[str, Any]],
              config: JudgeConfig, doc_id: str = "") -> list[tuple[JudgePass, list[dict[str, Any]]]]:
    """A document's questions without asking them: per direction what a judge opens and the
    subjects it would be asked about (none without candidates; a fact no candidate shares a
    fact_type with is decided without a call: left out)."""
    gold = in_scope_facts(coerce_facts(gold_facts, "gold facts"), config)
    predicted = in_scope_facts(coerce_facts(predicted_facts, "predicted facts"), config)
    fields, _ = compared_fields(gold, predicted, config)
    out = []
    for direction, subjects, candidates in directions(gold, predicted):
        asked = JudgePass(direction, candidates, config, fields, doc_id)
        out.append((asked, [s for s in subjects if asked.unasked(s) is None] if candidates else []))
    return out


class _Answer(NamedTuple):
    """What a run keeps of one verdict once its usage is counted: a pydantic Verdict per fact
    would hold ~1 KB each until the output is built."""

    status: PassStatus
    matched_id: str | None
    reasoning: str | None
    note: str
    votes: dict[str, str] | None


class _Tally:
    """Usage and jury agreement, added up as verdicts arrive."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.asked = self.agreed = 0  # questions a jury answered, and those every juror answered alike

    def keep(self, verdict: Verdict) -> _Answer:
        if any(verdict.usage.__dict__.values()):  # a rules verdict costs nothing: no sum of zeros
            self.usage.add(verdict.usage)
        if verdict.juror_usage is not None:
            self.usage.add_jurors(verdict.juror_usage)
        if verdict.votes:
            self.asked += 1
            self.agreed += len(set(verdict.votes.values())) == 1 and "ERROR" not in verdict.votes.values()
        # every verdict of any judge passes here: what reaches the results is bounded once more
        # (an LLM's answer and the rules judge's quotes are bounded where they are written)
        reasoning = verdict.reasoning
        if reasoning is not None:
            reasoning = cut_text(reasoning, VERDICT_TEXT_LIMIT)
        return _Answer(verdict.status, verdict.matched_id, reasoning,
                       cut_text(verdict.note, VERDICT_TEXT_LIMIT), verdict.votes)


def _stages(opened: Verdicts, subjects: list[dict[str, Any]], warmup: bool | None) -> list[Stage]:
    """The groups ``opened`` asks its subjects in (:class:`Staged`), ``warmup`` overriding theirs."""
    stages = opened.stages(subjects) if isinstance(opened, Staged) else [Stage(subjects)]
    return stages if warmup is None else [Stage(s.subjects, warmup) for s in stages]


async def _judge_passes(passes: Iterable[tuple[JudgePass, list[dict[str, Any]]]], judge: Judge,
                        limiter: asyncio.Semaphore, width: int, tally: _Tally,
                        progress: ProgressObserver | None, warmup: bool | None) -> list[dict[str, _Answer]]:
    """Each pass's answers (``passes``: what a judge opens, and its subjects). A direction the judge
    decides at once (:class:`~factjudge.judges.base.Inline`: the rules judge) is judged on the
    spot, in a plain loop, and freed before the next is opened; the others are asked concurrently,
    a task each (an LLM's questions wait on the server)."""
    answers: list[dict[str, _Answer]] = []
    waiting: list[tuple[Verdicts, list[dict[str, Any]], _Taken]] = []
    for asked, subjects in passes:
        if not asked.candidates:
            answers.append({f["id"]: tally.keep(unasked_verdict(asked.direction, f["id"])) for f in subjects})
            continue
        opened = judge.open(asked)  # what the judge works out once for the direction: freed with it
        taken = _Taken(asked, judge, tally, progress)
        if is_inline(opened):
            for fact in subjects:
                taken.keep(fact, opened.judge_now(fact))
        else:
            waiting.append((opened, subjects, taken))
        answers.append(taken.answers)
        del opened  # an inline direction's index is freed before the next one is built
    if waiting:
        await gather_all(*(_judge_direction(opened, subjects, taken, limiter, width, warmup)
                           for opened, subjects, taken in waiting))
    return answers


class _Taken:
    """One direction's verdicts as they come, however they were asked: checked against the
    contract, reported, counted and kept."""

    def __init__(self, asked: JudgePass, judge: Judge, tally: _Tally, progress: ProgressObserver | None) -> None:
        self.asked, self.judge_name, self.tally, self.progress = asked, judge.name, tally, progress
        self.types = candidate_types(asked.candidates)
        self.answers: dict[str, _Answer] = {}

    def keep(self, fact: dict[str, Any], verdict: Verdict) -> Verdict:
        problem = answer_problem(self.asked.direction, fact, verdict, self.types)
        if problem:  # a judge of the user's own that broke the contract: claim nothing
            verdict = error_verdict(self.asked.task(fact), f"judge {self.judge_name!r} answered wrongly: {problem}",
                                    verdict.usage)
        if self.progress:
            self.progress.on_verdict(self.asked.direction, verdict)
        self.answers[verdict.fact_id] = self.tally.keep(verdict)
        return verdict


async def _judge_direction(opened: Verdicts, subjects: list[dict[str, Any]], taken: _Taken,
                           limiter: asyncio.Semaphore, width: int, warmup: bool | None) -> None:
    """One direction's subjects asked through ``width`` workers sharing ``limiter``, in the
    judge's stages (:class:`~factjudge.judges.base.Staged`)."""
    async def one(fact: dict[str, Any]) -> Verdict:
        async with limiter:
            verdict = await opened.judge(fact)
        return taken.keep(fact, verdict)

    async def stage(facts: list[dict[str, Any]], warm: bool) -> None:
        rest = iter(facts)
        if warm:
            # One at a time until a question really reached the LLM (not the rules judge or the
            # response cache): the rest then fan out to a warm provider cache.
            left = len(facts)
            for fact in rest:
                left -= 1
                if (await one(fact)).usage.llm_calls or left <= 1:
                    break

        async def worker() -> None:
            for fact in rest:  # one iterator shared by the workers: each fact is asked once
                await one(fact)

        # ``width`` workers, not a task per fact: a million waiting tasks would cost gigabytes
        await gather_all(*(worker() for _ in range(max(1, min(width, len(facts))))))

    for group in _stages(opened, subjects, warmup):
        await stage(group.subjects, group.warm)  # e.g. one prompt prefix after another


def _changed_by_reconciliation(own: _Answer, status: PassStatus, matched: list[str]) -> str:
    """The final decision, when reconciliation made it differ from the fact's own pass."""
    if own.status == "ERROR" or (own.status == status and (
            status != "TP" or own.matched_id in matched)):
        return ""
    said = f"{own.status} {own.matched_id}" if own.matched_id else own.status
    final = f"TP with {', '.join(matched)}" if status == "TP" else status
    return f"final: {final} (its own pass said {said})"


def _output_fact(fact: dict[str, Any], in_scope: bool, status: Status, matched: list[str],
                 description: str, reasoning: str | None,
                 votes: dict[str, str] | None = None,
                 linked: dict[str, str | None] | None = None, in_place: bool = False) -> dict[str, Any]:
    """The fact unchanged plus its verdict under :data:`VERDICT_KEY`: the fact's own fields may
    have any name, the verdict's included."""
    out = fact if in_place else dict(fact)
    verdict: dict[str, Any] = {"in_scope": in_scope, "status": status, "matched_ids": matched,
                               "description": description, "reasoning": reasoning,
                               "linked_reasoning": linked or {}}
    if votes is not None:  # a jury's verdict: each juror's vote
        verdict["votes"] = votes
    out[VERDICT_KEY] = verdict
    return out


async def run_judge_async(
    gold_facts: Iterable[Mapping[str, Any]],
    predicted_facts: Iterable[Mapping[str, Any]],
    judge_config: JudgeConfig | Mapping[str, Any] | None = None,
    judge: Judge | None = None,
    *,
    concurrency: int = 8,
    limiter: asyncio.Semaphore | None = None,
    progress: ProgressObserver | None = None,
    doc_id: str = "",
    warmup: bool | None = None,
    in_place: bool = False,
) -> JudgeResult:
    """Judge one document. ``limiter`` lets several documents share one pool of calls;
    ``concurrency`` is also how many of this document's questions wait on ``limiter`` at once
    (give the limiter's size); ``doc_id`` names the document to the judge (an LLM labels its
    provider prompt-cache key with it); ``warmup`` (default: the judge's own, see
    :class:`~factjudge.judges.base.Staged`) sends each group's first call alone so the rest hit
    the cache; ``in_place`` writes the verdict fields into the given fact dicts instead of
    copies of them (a large document then needs less memory; give each side its own dicts)."""
    started = time.perf_counter()
    config = parse_config(judge_config)
    gold = coerce_facts(gold_facts, "gold facts")
    predicted = coerce_facts(predicted_facts, "predicted facts")
    if judge is None:
        from ..judges.rules.judge import RulesJudge  # only now: an LLM run never loads the rules judge
        judge = RulesJudge()
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    return await judge_checked(gold, predicted, config, judge, started=started, concurrency=concurrency,
                               limiter=limiter, progress=progress, doc_id=doc_id, warmup=warmup,
                               in_place=in_place)


async def judge_checked(
    gold: list[dict[str, Any]],
    predicted: list[dict[str, Any]],
    config: JudgeConfig,
    judge: Judge,
    *,
    started: float | None = None,
    concurrency: int = 8,
    limiter: asyncio.Semaphore | None = None,
    progress: ProgressObserver | None = None,
    doc_id: str = "",
    warmup: bool | None = None,
    in_place: bool = False,
    forms: FactForms | None = None,
    config_json: dict[str, Any] | None = None,
    fields_out: list[dict[str, tuple[str, ...]] | None] | None = None,
) -> JudgeResult:
    """:func:`run_judge_async` of facts checked already (``validate_facts``: a dataset's
    documents, checked as they are read): checking them once more was 3% of a rules run.
    ``forms``: where the document's facts are kept prepared (the output facts too), for a caller
    that reads them again with the same config (a worker's closest-fact search). ``config_json``:
    ``config.model_dump(mode="json")`` when the caller has it (a worker: one dict for every
    document, not a dump each, ~25 us). ``fields_out``: a list that receives the fields compared
    per fact_type (:func:`~factjudge.core.scope.compared_fields`), for a caller that compares the
    output facts again with the same config (a worker's closest-fact search: ~20 us)."""
    started = time.perf_counter() if started is None else started
    limiter = asyncio.Semaphore(concurrency) if limiter is None else limiter
    gold_in, pred_in = in_scope_facts(gold, config), in_scope_facts(predicted, config)
    if progress:
        progress.on_questions((len(gold_in) if pred_in else 0) + (len(pred_in) if gold_in else 0))
    fields, warnings = compared_fields(gold_in, pred_in, config)
    if fields_out is not None:
        fields_out.append(fields)
    warnings += scope_warnings(gold_in, pred_in, config, fields)
    tally = _Tally()
    forms = {} if forms is None else forms  # the facts prepared once: both directions and the analysis
    gv, pv = await _judge_passes(((JudgePass(direction, candidates, config, fields, doc_id, forms), subjects)
                                  for direction, subjects, candidates in directions(gold_in, pred_in)),
                                 judge, limiter, concurrency, tally, progress, warmup)
    rec = reconcile([f["id"] for f in gold_in], [f["id"] for f in pred_in], gv, pv,
                    one_to_one=config.one_to_one, link_policy=config.link_policy)
    usage = tally.usage.model_copy(update=run_info_of(judge))
    gold_out = _assemble(gold, gv, rec.gold, pv, in_place)
    pred_out = _assemble(predicted, pv, rec.predicted, gv, in_place)
    _share_forms(forms, (gold, gold_out), (predicted, pred_out))
    analysis = _analysis(gold_out, pred_out, rec.dropped, config, fields, forms)
    metrics = compute_metrics(((f["fact_type"], f[VERDICT_KEY]["status"]) for f in gold_out),
                              ((f["fact_type"], f[VERDICT_KEY]["status"]) for f in pred_out))
    if tally.asked:
        metrics.jury_agreement = tally.agreed / tally.asked
    usage.seconds = round(time.perf_counter() - started, 3)
    # built from checked parts: validating would copy every output fact once more
    return JudgeResult.model_construct(
        gold_facts=gold_out, predicted_facts=pred_out, metrics=metrics, dedup_notes=rec.notes,
        conflicts=rec.conflicts, warnings=warnings, usage=usage,
        config=config.model_dump(mode="json") if config_json is None else config_json,
        analysis=analysis)


def _share_forms(forms: FactForms, *sides: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    """Each output fact given its input fact's normal forms in ``forms``: the analysis (and a
    worker's closest-fact search) read the output facts, whose fields are the input's."""
    for facts, out in sides:
        for fact, copy in zip(facts, out, strict=True):
            hit = forms.get(id(fact))
            if hit is not None and hit[0] is fact:
                forms[id(copy)] = (copy, hit[1])


def _analysis(gold: list[dict[str, Any]], predicted: list[dict[str, Any]],
              dropped: list[tuple[Direction, str, str]], config: JudgeConfig,
              fields: dict[str, tuple[str, ...]] | None, forms: FactForms | None = None) -> Analysis:
    """Near misses, merges and splits (:func:`factjudge.core.analysis.analyse`) and the field-level
    counts (:func:`factjudge.core.fields.count_fields`), with the rules judge's field comparison
    whichever judge ran: one closeness measure everywhere."""
    fn_types = {f["fact_type"] for f in gold if f[VERDICT_KEY]["status"] == "FN"}
    prepare: list[Any] = []  # the facts normalised once, for the ranker and the field comparison
    if not any(f[VERDICT_KEY]["status"] == "FP" and f["fact_type"] in fn_types for f in predicted):
        analysis = analyse(gold, predicted, dropped, lambda subjects, candidates: [])  # no pair to look for
    else:
        # only now: a run without an FN and an FP of one type never loads the rules judge
        from ..judges.rules.closeness import preparer, rules_ranker

        prepare.append(preparer(config, forms))
        analysis = analyse(gold, predicted, dropped, rules_ranker(config, fields, prepare=prepare[0]))
    comparer: list[FieldComparer] = []

    def compare(g: Mapping[str, Any], p: Mapping[str, Any], names: Sequence[str]) -> Mapping[str, Match]:
        if not comparer:  # only when a pair needs it: flat facts linked need no comparison
            from ..judges.rules.closeness import preparer
            from ..judges.rules.fieldscore import rules_field_comparer

            comparer.append(rules_field_comparer(config, prepare[0] if prepare else preparer(config, forms)))
        return comparer[0](g, p, names)

    # each fact type's fields worked out once, not once a fact (~11 a 20-fact document)
    analysis.fields = field_counts(count_fields(gold, predicted, analysis, fields_by_type(config, fields), compare))
    return analysis


def _assemble(facts: list[dict[str, Any]], answers: Mapping[str, _Answer],
              outcomes: Mapping[str, Outcome], others: Mapping[str, _Answer],
              in_place: bool) -> list[dict[str, Any]]:
    """One side's output facts: its own pass's ``answers``, the reconciled ``outcomes`` and the
    reasoning of the linked facts (``others``: the other pass's answers)."""
    out = []
    for fact in facts:
        if fact["id"] not in outcomes:
            out.append(_output_fact(fact, False, "OUT_OF_SCOPE", [],
                                    f"fact_type {fact['fact_type']!r} is not in entity_types; "
                                    "not judged", None, in_place=in_place))
            continue
        v, o = answers[fact["id"]], outcomes[fact["id"]]
        notes = [v.note, *o.notes]
        changed = _changed_by_reconciliation(v, o.status, o.matched_ids)
        if changed:
            notes.insert(0, changed)
        linked = {i: others[i].reasoning for i in o.matched_ids if i in others}
        out.append(_output_fact(fact, True, o.status, o.matched_ids, "; ".join(n for n in notes if n),
                                v.reasoning, v.votes, linked, in_place))
    return out


def run_judge(
    gold_facts: Iterable[Mapping[str, Any]],
    predicted_facts: Iterable[Mapping[str, Any]],
    judge_config: JudgeConfig | Mapping[str, Any] | None = None,
    judge: Judge | None = None,
    **kwargs: Any,
) -> JudgeResult:
    """Synchronous :func:`run_judge_async`; also works inside a running loop (e.g. Jupyter)."""

    config = parse_config(judge_config)
    gold, predicted = coerce_facts(gold_facts, "gold facts"), coerce_facts(predicted_facts, "predicted facts")
    before = document_warnings(config, gold, predicted, "the facts")

    async def once() -> JudgeResult:
        try:
            return await run_judge_async(gold, predicted, config, judge, **kwargs)
        finally:
            # This loop ends with the call: release the judge's connections while it still runs
            # (an LLM judge opens new ones on its next use).
            if judge is not None:
                await judge.aclose()

    result = run_sync(once)
    result.warnings[:0] = before
    warn_user(result.warnings)
    return result


def warn_user(messages: Iterable[str]) -> None:
    """Each message once through Python's :mod:`warnings` (a script or notebook sees them where it
    looks, not only in ``warnings`` of the result), as :class:`FactJudgeWarning`. Python prints
    them on stderr: the names in them have their control characters escaped (the result keeps
    them as they were)."""
    for message in dict.fromkeys(messages):
        warnings.warn(printable(message), FactJudgeWarning, stacklevel=3)


def judge_config_warnings(config: JudgeConfig, judge: Judge) -> list[str]:
    """What the config asks for that the run's judge would ignore silently (its
    :class:`~factjudge.judges.base.ConfigWarnings`: ``matching_rules`` with the rules judge), alias
    groups on numbers, amounts, dates or currency fields."""
    out = judge.config_warnings(config) if isinstance(judge, ConfigWarnings) else []
    if config.aliases:
        # the rules judge's normaliser decides what is a number: imported only for a config with aliases
        from ..judges.rules.knowledge import alias_check
        out += alias_check(config)
    return out


#: What :func:`preview` counts per direction.
PREVIEW_STATS = ("calls", "cache_hits", "decided_by_rules", "too_large", "shortlisted",
                 "prompt_tokens", "prompt_tokens_after_prefix_cache")


def preview(
    gold_facts: Iterable[Mapping[str, Any]],
    predicted_facts: Iterable[Mapping[str, Any]],
    judge_config: JudgeConfig | Mapping[str, Any] | None,
    judge: Judge,
    doc_id: str = "",
) -> dict[str, Any]:
    """What judging would cost, without any call: calls per direction, prompt tokens before and
    after provider prefix caching (estimated by the judge, :class:`~factjudge.judges.base.Estimates`;
    a judge without estimates calls no LLM), and answers already in the response cache."""
    config = parse_config(judge_config)
    out: dict[str, Any] = {}
    for asked, subjects in questions(gold_facts, predicted_facts, config, doc_id):
        stats = dict.fromkeys(PREVIEW_STATS, 0)
        out[asked.direction] = stats
        opened = judge.open(asked) if subjects else None
        for fact in subjects:
            est = opened.estimate(fact) if isinstance(opened, Estimates) else Estimate("decided_by_rules")
            if est.outcome != "call":
                stats["cache_hits" if est.outcome == "cache_hit" else est.outcome] += 1
                continue
            stats["calls"] += 1
            stats["shortlisted"] += est.shortlisted
            stats["prompt_tokens"] += est.prompt_tokens
            stats["prompt_tokens_after_prefix_cache"] += est.prompt_tokens - est.cached_prefix_tokens
    out["token_counter"] = run_info_of(judge).get("token_counter")
    return out
