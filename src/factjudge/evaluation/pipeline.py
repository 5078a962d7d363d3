"""run_judge: scope, both passes (concurrent, bounded), reconciliation, metrics, output."""
from __future__ import annotations

import asyncio
import hashlib
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from ..core.alerts import document_warnings
from ..core.analysis import analyse
from ..core.fields import FieldComparer, Match, count_fields, field_counts
from ..core.metrics import compute_metrics
from ..core.reconcile import Outcome, reconcile
from ..core.scope import (
    compared_fields,
    fact_fields,
    in_scope_facts,
    matching_rules_check,
    nothing_to_compare,
    read_by_default,
)
from ..errors import FactJudgeWarning
from ..io.config import parse_config
from ..io.facts import coerce_facts
from ..judges.base import Judge, candidate_types, error_verdict, verdict_problem
from ..judges.prompts import JudgeTask, negative_status, prefix_messages
from ..models import (
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
from ..util.jsonutil import canonical_json
from ..util.terminal import printable


class ProgressObserver(Protocol):
    """What judging reports as it goes (the CLI's progress bar is one)."""

    def on_questions(self, count: int) -> None:
        """A document is about to ask ``count`` judge questions (called once per document)."""

    def on_verdict(self, direction: Direction, verdict: Verdict) -> None:
        """One question of the ``direction`` pass was answered (before reconciliation)."""


def _no_candidates_verdict(direction: Direction, fact_id: str, of_its_type: bool = False) -> Verdict:
    other = "predicted" if direction == "gold" else "gold"
    which = f"{other} facts of its fact_type" if of_its_type else f"{other} facts"
    return Verdict(fact_id=fact_id, status=negative_status(direction),
                   note=f"no in-scope {which} to compare with; no judge call made")


def directions(gold: list[dict[str, Any]], predicted: list[dict[str, Any]]
               ) -> tuple[tuple[Direction, list[dict[str, Any]], list[dict[str, Any]]], ...]:
    """``(direction, subjects, candidates)`` of both passes: gold facts against the predicted
    ones, then predicted facts against the gold ones."""
    return ("gold", gold, predicted), ("predicted", predicted, gold)


def questions(gold_facts: Iterable[Mapping[str, Any]], predicted_facts: Iterable[Mapping[str, Any]],
              config: JudgeConfig, doc_id: str = ""
              ) -> list[tuple[Direction, list[dict[str, Any]], Callable[[dict[str, Any]], JudgeTask] | None]]:
    """A document's questions as the judge is asked them, without asking: per direction the
    in-scope subjects and the task maker (None when there are no candidates: no call then)."""
    gold = in_scope_facts(coerce_facts(gold_facts, "gold facts"), config)
    predicted = in_scope_facts(coerce_facts(predicted_facts, "predicted facts"), config)
    fields, _ = compared_fields(gold, predicted, config)
    return [(direction, subjects, task_factory(direction, candidates, config, doc_id, fields)
             if candidates else None) for direction, subjects, candidates in directions(gold, predicted)]


def task_factory(direction: Direction, candidates: list[dict[str, Any]], config: JudgeConfig,
                 doc_id: str, fields: dict[str, tuple[str, ...]] | None = None,
                 shared: dict[str, Any] | None = None, prompts: bool = True
                 ) -> Callable[[dict[str, Any]], JudgeTask]:
    """Tasks of one direction, all sharing one prefix (and so one provider cache entry), or one
    prefix per fact_type with ``candidates: same_type`` (for a judge that reads prompts);
    ``fields``: the compared fields per fact_type (:func:`factjudge.core.scope.compared_fields`);
    ``shared``: the tasks' :attr:`~factjudge.judges.prompts.JudgeTask.shared` dict; ``prompts=False``:
    no prompt (an empty prefix), for a judge that reads none (``Judge.reads_prompts``)."""
    shared = {} if shared is None else shared
    if config.candidates == "same_type" and prompts:
        return _same_type_factory(direction, candidates, config, doc_id, fields, shared, prompts)
    return _one_prefix_factory(direction, candidates, config, doc_id, fields, shared, prompts)


def _one_prefix_factory(direction: Direction, candidates: list[dict[str, Any]], config: JudgeConfig,
                        doc_id: str, fields: dict[str, tuple[str, ...]] | None, shared: dict[str, Any],
                        prompts: bool) -> Callable[[dict[str, Any]], JudgeTask]:
    if not prompts:
        return lambda fact: JudgeTask(direction, fact, candidates, config, [], "", fields, shared)
    prefix = prefix_messages(direction, candidates, config, fields)
    # Derived from the document's content, so providers route its calls to the same cache.
    digest = hashlib.sha256(canonical_json(prefix).encode("utf-8")).hexdigest()[:16]
    label = f"{doc_id[:24]}-" if doc_id else ""
    key = f"factjudge-{label}{direction}-{digest}"
    # A fact no candidate shares a fact_type with can only be the negative: asking would invite an
    # answer the checks refuse (Qwen2.5-Coder-1.5B named a gross_profit fact for a revenue one three
    # times running, twice on 52 calibration pairs: two ERRORs)
    types = {_type_key(c) for c in candidates}
    return lambda fact: (JudgeTask(direction, fact, candidates, config, prefix, key, fields, shared)
                         if _type_key(fact) in types else _unasked(direction, fact, config, fields))


def _unasked(direction: Direction, fact: dict[str, Any], config: JudgeConfig,
             fields: dict[str, tuple[str, ...]] | None) -> JudgeTask:
    """The task of a fact no candidate can match: none shown, no call (see :func:`has_candidates`)."""
    return JudgeTask(direction, fact, [], config, [], "", fields, {})


def _type_key(fact: Mapping[str, Any]) -> str:
    return canonical_json(fact.get("fact_type"))


def _by_type_key(facts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``facts`` by :func:`_type_key`, types in order of first appearance, facts in input order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for fact in facts:
        groups.setdefault(_type_key(fact), []).append(fact)
    return groups


def _same_type_factory(direction: Direction, candidates: list[dict[str, Any]], config: JudgeConfig,
                       doc_id: str, fields: dict[str, tuple[str, ...]] | None, shared: dict[str, Any],
                       prompts: bool) -> Callable[[dict[str, Any]], JudgeTask]:
    """``candidates: same_type``: a fact is shown only the candidates of its fact_type, the only
    ones it can match, under one prefix per fact_type (each with its own ``shared`` dict, kept in
    the direction's so that it is freed with it). A fact of a type no candidate has gets a task
    without candidates: no call (see :func:`has_candidates`)."""
    groups = _by_type_key(candidates)
    makers: dict[str, Callable[[dict[str, Any]], JudgeTask]] = {}

    def make(fact: dict[str, Any]) -> JudgeTask:
        key = _type_key(fact)
        if key not in makers:
            group = groups.get(key, [])
            makers[key] = (_one_prefix_factory(direction, group, config, doc_id, fields,
                                               shared.setdefault(f"fact_type {key}", {}), prompts) if group
                           else lambda f: _unasked(direction, f, config, fields))
        return makers[key](fact)
    return make


def has_candidates(task: JudgeTask) -> bool:
    """Whether a task asks anything: a fact of a type the other side lacks has no candidate (for a
    judge that reads prompts), and its verdict is the negative without a call."""
    return bool(task.candidates)


def prefix_groups(subjects: list[dict[str, Any]], same_type: bool) -> list[list[dict[str, Any]]]:
    """The subjects in the groups whose questions share a prefix: one group, or one per fact_type
    (in order of first appearance) with ``candidates: same_type``, asked one group after another so
    each group's first call warms the provider's cache (and a local server's slot) for the rest."""
    return list(_by_type_key(subjects).values()) if same_type else [subjects]


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


async def _judge_direction(
    direction: Direction,
    subjects: list[dict[str, Any]],
    candidates: list[dict[str, Any]],
    config: JudgeConfig,
    judge: Judge,
    limiter: asyncio.Semaphore,
    width: int,
    tally: _Tally,
    doc_id: str,
    progress: ProgressObserver | None,
    warmup: bool,
    fields: dict[str, tuple[str, ...]] | None = None,
) -> dict[str, _Answer]:
    if not candidates:
        return {f["id"]: tally.keep(_no_candidates_verdict(direction, f["id"])) for f in subjects}
    answers: dict[str, _Answer] = {}
    shared: dict[str, Any] = {}
    make_task = task_factory(direction, candidates, config, doc_id, fields, shared,
                             prompts=judge.reads_prompts)
    types = candidate_types(candidates)

    async def one(fact: dict[str, Any]) -> Verdict:
        task = make_task(fact)  # built only when its turn comes: prompts are never all in memory
        if not has_candidates(task):
            verdict = _no_candidates_verdict(direction, fact["id"], of_its_type=True)
        else:
            async with limiter:
                verdict = await judge.judge(task)
            problem = verdict_problem(task, verdict, types)
            if problem:  # a judge of the user's own that broke the contract: claim nothing
                verdict = error_verdict(
                    task, f"judge {judge.name!r} answered wrongly: {problem}", verdict.usage)
        if progress:
            progress.on_verdict(direction, verdict)
        answers[verdict.fact_id] = tally.keep(verdict)
        return verdict

    async def group(facts: list[dict[str, Any]]) -> None:
        rest = iter(facts)
        if warmup:
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

    for facts in prefix_groups(subjects, config.candidates == "same_type" and judge.reads_prompts):
        await group(facts)  # with candidates: same_type, one fact_type (one prefix) after another
    shared.clear()  # the direction is done: free what its tasks shared (the rules index) now
    return answers


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
    out = fact if in_place else dict(fact)
    out.update(in_scope=in_scope, status=status, matched_ids=matched,
               description=description, reasoning=reasoning, linked_reasoning=linked or {})
    if votes is not None:  # a jury's verdict: each juror's vote
        out["votes"] = votes
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
    (give the limiter's size); ``doc_id`` labels the provider prompt-cache key; ``warmup``
    (default: the judge's own ``warmup``) sends each direction's first call alone so the rest
    hit the cache; ``in_place`` writes the verdict fields into the given fact dicts instead of
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
    if limiter is None:
        limiter = asyncio.Semaphore(concurrency)

    gold_in, pred_in = in_scope_facts(gold, config), in_scope_facts(predicted, config)
    if progress:
        progress.on_questions((len(gold_in) if pred_in else 0) + (len(pred_in) if gold_in else 0))
    warm = judge.warmup if warmup is None else warmup
    fields, warnings = compared_fields(gold_in, pred_in, config)
    warnings += nothing_to_compare(gold_in, pred_in, config, fields) + read_by_default(gold_in, pred_in, config, fields)
    tally = _Tally()
    gv, pv = await gather_all(*(
        _judge_direction(direction, subjects, candidates, config, judge, limiter, concurrency, tally,
                         doc_id, progress, warm, fields)
        for direction, subjects, candidates in directions(gold_in, pred_in)))
    rec = reconcile([f["id"] for f in gold_in], [f["id"] for f in pred_in], gv, pv,
                    one_to_one=config.one_to_one, link_policy=config.link_policy)
    usage = tally.usage.model_copy(update=judge.run_info())
    gold_out = _assemble(gold, gv, rec.gold, pv, in_place)
    pred_out = _assemble(predicted, pv, rec.predicted, gv, in_place)
    analysis = _analysis(gold_out, pred_out, rec.dropped, config, fields)
    metrics = compute_metrics(((f["fact_type"], f["status"]) for f in gold_out),
                              ((f["fact_type"], f["status"]) for f in pred_out))
    if tally.asked:
        metrics.jury_agreement = tally.agreed / tally.asked
    usage.seconds = round(time.perf_counter() - started, 3)
    # built from checked parts: validating would copy every output fact once more
    return JudgeResult.model_construct(
        gold_facts=gold_out, predicted_facts=pred_out, metrics=metrics, dedup_notes=rec.notes,
        conflicts=rec.conflicts, warnings=warnings, usage=usage, config=config.model_dump(mode="json"),
        analysis=analysis)


def _analysis(gold: list[dict[str, Any]], predicted: list[dict[str, Any]],
              dropped: list[tuple[Direction, str, str]], config: JudgeConfig,
              fields: dict[str, tuple[str, ...]] | None) -> Analysis:
    """Near misses, merges and splits (:func:`factjudge.core.analysis.analyse`) and the field-level
    counts (:func:`factjudge.core.fields.count_fields`), with the rules judge's field comparison
    whichever judge ran: one closeness measure everywhere."""
    fn_types = {f["fact_type"] for f in gold if f["status"] == "FN"}
    prepare: list[Any] = []  # the facts normalised once, for the ranker and the field comparison
    if not any(f["status"] == "FP" and f["fact_type"] in fn_types for f in predicted):
        analysis = analyse(gold, predicted, dropped, lambda subjects, candidates: [])  # no pair to look for
    else:
        # only now: a run without an FN and an FP of one type never loads the rules judge
        from ..judges.rules.closeness import preparer, rules_ranker

        prepare.append(preparer(config))
        analysis = analyse(gold, predicted, dropped, rules_ranker(config, fields, prepare=prepare[0]))
    comparer: list[FieldComparer] = []

    def compare(g: Mapping[str, Any], p: Mapping[str, Any], names: Sequence[str]) -> Mapping[str, Match]:
        if not comparer:  # only when a pair needs it: flat facts linked need no comparison
            from ..judges.rules.fieldscore import rules_field_comparer

            comparer.append(rules_field_comparer(config, *prepare))
        return comparer[0](g, p, names)

    analysis.fields = field_counts(count_fields(gold, predicted, analysis,
                                                lambda f: fact_fields(f, config, fields), compare))
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
    """What the config asks for that the run's judge would ignore silently: ``matching_rules``
    with the rules judge, alias groups on numbers, amounts, dates or currency fields."""
    out = matching_rules_check(config, judge.reads_prompts)
    if config.aliases:
        # the rules judge's normaliser decides what is a number: imported only for a config with aliases
        from ..judges.rules.knowledge import alias_check
        out += alias_check(config)
    return out


#: OpenAI caches prompt prefixes of at least this many tokens.
MIN_CACHED_PREFIX = 1024
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
    after provider prefix caching (estimated), and answers already in the response cache."""
    config = parse_config(judge_config)
    out: dict[str, Any] = {}
    for direction, subjects, make_task in questions(gold_facts, predicted_facts, config, doc_id):
        stats = dict.fromkeys(PREVIEW_STATS, 0)
        out[direction] = stats
        if make_task is None:
            continue
        warm: set[str] = set()  # the prefixes a call has sent (one, or one per fact_type)
        for fact in subjects:
            task = make_task(fact)
            if not has_candidates(task):
                continue
            est = judge.estimate(task)
            if est.outcome != "call":
                stats["cache_hits" if est.outcome == "cache_hit" else est.outcome] += 1
                continue
            stats["calls"] += 1
            stats["prompt_tokens"] += est.prompt_tokens
            uncached = est.prompt_tokens
            if est.shortlisted:
                stats["shortlisted"] += 1
            else:
                if task.prompt_cache_key in warm and est.shared_prefix_tokens >= MIN_CACHED_PREFIX:
                    uncached -= est.shared_prefix_tokens
                warm.add(task.prompt_cache_key)
            stats["prompt_tokens_after_prefix_cache"] += uncached
    out["token_counter"] = judge.run_info().get("token_counter")
    return out
