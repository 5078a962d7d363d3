"""A jury: several judges answer every question, a strict majority decides.

Each juror answers the same question (each opens the direction itself); its answer is one vote,
``"TP:<matched id>"``, ``"FN"``, ``"FP"`` or ``"ERROR"``. The verdict:

1. an answer given by more than half of the jurors wins (failed jurors count in the jury's size);
2. otherwise, if the failed jurors could have made a majority had they answered, the question is
   ``ERROR`` (nothing is guessed; a run started again asks only them, the others' answers are in
   the response cache);
3. otherwise (a real split, e.g. 1-1 or TP:p1 / TP:p2 / FN) the negative verdict (FN or FP, no
   match), with a note naming the votes.

A question to a jury holds one slot of the pipeline's pool (``--concurrency``) and its jurors
answer one after another inside it: one judge call per juror, each counted against the
concurrency, so at most ``concurrency`` calls are in flight whatever the size of the jury.

A model asked K times (``--repeats``) is K jurors that differ only in their ``name``
(``llm#1`` ... ``llm#K``, see :func:`repeat_name`): the LLM judge puts its name in its identity
and in its response-cache key, so every repeat is asked and cached on its own.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import InputError, JudgeSetupError
from ..models import PASS_STATUSES, CallUsage, PassStatus, Verdict
from .base import (
    Estimate,
    Judge,
    JudgeBase,
    JudgePass,
    JudgeTask,
    Stage,
    Staged,
    Verdicts,
    candidate_types,
    error_verdict,
    negative_status,
    run_info_of,
    verdict_problem,
)


def vote_of(verdict: Verdict) -> str:
    """A juror's answer as a vote: ``"TP:<id>"``, ``"FN"``, ``"FP"`` or ``"ERROR"``."""
    if verdict.status == "TP":
        return f"TP:{verdict.matched_id}"
    return verdict.status


def parse_vote(vote: str) -> tuple[PassStatus, str | None]:
    """A vote back as (status, matched id): ``"TP:p1"`` -> ``("TP", "p1")``, ``"FN"`` -> ``("FN", None)``."""
    status, _, matched = vote.partition(":")
    for known in PASS_STATUSES:
        if status == known:
            return known, matched or None
    raise ValueError(f"not a vote: {vote!r}")


def repeat_name(base: str, k: int) -> str:
    """The name of repeat ``k`` (1-based) of a judge named ``base``: ``llm#2``."""
    return f"{base}#{k}"


def default_labels(jurors: Sequence[Judge]) -> list[str]:
    """Juror names for the votes: the model (or the judge's name), then ``@server`` where one
    model sits on several servers, then ``#k`` in jury order where names still repeat."""
    idents = [j.identity() for j in jurors]
    labels = [str(i.get("model") or j.name) for j, i in zip(jurors, idents, strict=False)]
    for label in set(labels):
        same = [n for n, x in enumerate(labels) if x == label]
        servers = {idents[n].get("server") for n in same}
        if len(same) > 1 and len(servers) == len(same) and None not in servers:
            for n in same:
                labels[n] = f"{label}@{idents[n]['server']}"
    counts = Counter(labels)
    seen: Counter[str] = Counter()
    for n, label in enumerate(labels):
        if counts[label] > 1:
            seen[label] += 1
            labels[n] = f"{label}#{seen[label]}"
    return labels


def _join(parts: Iterable[str]) -> str:
    return ", ".join(parts)


class JuryJudge(JudgeBase):
    """Every question to every juror; a strict majority over (status, matched id) decides.

    ``names`` label the jurors in ``votes`` and in ``usage.jurors`` (default:
    :func:`default_labels`). Output facts carry ``votes``; ``metrics.jury_agreement`` is the
    share of questions all jurors answered alike.
    """

    name = "jury"

    def __init__(self, jurors: Sequence[Judge], names: Sequence[str] | None = None) -> None:
        if not jurors:
            raise JudgeSetupError("a jury needs at least one juror")
        self.jurors = list(jurors)
        self.names = list(names) if names is not None else default_labels(self.jurors)
        if len(self.names) != len(self.jurors):
            raise JudgeSetupError(f"{len(self.names)} names for {len(self.jurors)} jurors")
        if len(set(self.names)) != len(self.names):
            raise JudgeSetupError(f"juror names must be unique, got {self.names}")

    # ------------------------------------------------------------------ the contract

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "decision": "strict majority, else negative",
                "jurors": [{"juror": n, **j.identity()} for n, j in zip(self.names, self.jurors, strict=False)]}

    def run_info(self) -> dict[str, Any]:
        """The jurors' run info, each key's distinct values joined (``tiktoken:o200k_base, estimate:...``)."""
        merged: dict[str, list[Any]] = {}
        lists: set[str] = set()  # a list's items are merged (an LLM judge's ``adapted``)
        for juror in self.jurors:
            for key, value in run_info_of(juror).items():
                if isinstance(value, list):
                    lists.add(key)
                for item in value if isinstance(value, list) else [value]:
                    if item is not None and item not in merged.setdefault(key, []):
                        merged[key].append(item)
        return {k: (v if k in lists else _join(map(str, v)) if len(v) > 1 else v[0])
                for k, v in merged.items() if v}

    def open(self, questions: JudgePass) -> JuryPass:
        return JuryPass(self, questions)

    async def aclose(self) -> None:
        results = await asyncio.gather(*(j.aclose() for j in self.jurors), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def judge(self, task: JudgeTask) -> Verdict:
        """One question on its own (a run asks through :meth:`open`)."""
        questions = JudgePass(task.direction, task.candidates, task.config, task.fields)
        return await self.open(questions).judge(task.subject)

    # ------------------------------------------------------------------ the decision

    def decide(self, task: JudgeTask, verdicts: Sequence[Verdict]) -> Verdict:
        """The jury's verdict from its jurors' verdicts (in jury order)."""
        names = self.names
        votes = {n: vote_of(v) for n, v in zip(names, verdicts, strict=False)}
        usage = CallUsage.total(v.usage for v in verdicts)
        per_juror = {n: v.usage.model_copy() for n, v in zip(names, verdicts, strict=False)}
        failed = [(n, v) for n, v in zip(names, verdicts, strict=False) if v.status == "ERROR"]
        answers = Counter(vote for vote in votes.values() if vote != "ERROR")
        size = len(verdicts)
        best, top = answers.most_common(1)[0] if answers else (None, 0)
        failures = _join(f"{n} failed: {v.note or 'no reason given'}" for n, v in failed)
        shown = _join(f"{n}: {vote}" for n, vote in votes.items())
        reasoning = " | ".join(f"[{n}: {votes[n]}] {v.reasoning}" for n, v in zip(names, verdicts, strict=False)
                               if v.reasoning is not None) or None
        notes = self._juror_notes(verdicts)

        def verdict(status: PassStatus, matched: str | None, *note: str) -> Verdict:
            return Verdict(fact_id=task.subject_id, status=status,
                           matched_id=matched, reasoning=reasoning,
                           note="; ".join(n for n in (*note, *notes) if n), usage=usage,
                           votes=votes, juror_usage=per_juror)

        if best is not None and 2 * top > size:
            dissent = _join(f"{n}: {vote}" for n, vote in votes.items() if vote != best)
            status, matched = parse_vote(best)
            return verdict(status, matched,
                           f"jury: {top} of {size} voted {best} (dissent {dissent})" if top < size else "",
                           failures)
        if 2 * (top + len(failed)) > size:
            return verdict("ERROR", None, f"jury undecided: {len(failed)} of {size} juror(s) failed "
                           f"and their answers could have decided it ({failures}); votes {shown}")
        negative = negative_status(task.direction)
        return verdict(negative, None, f"jury: no strict majority of {size} ({shown}): {negative} "
                       "by default", failures)

    def _juror_notes(self, verdicts: Sequence[Verdict]) -> list[str]:
        """The notes of the jurors that answered (truncated context...), each once, naming the
        jurors it came from unless all of them gave it."""
        by_note: dict[str, list[str]] = {}
        for n, v in zip(self.names, verdicts, strict=False):
            if v.note and v.status != "ERROR":
                by_note.setdefault(v.note, []).append(n)
        return [note if len(who) == len(verdicts) else f"{_join(who)}: {note}"
                for note, who in by_note.items()]


class JuryPass:
    """One direction of a document, opened by every juror; a question to the jury is one to each
    juror, one at a time (one slot of the pipeline's pool, one call)."""

    def __init__(self, jury: JuryJudge, questions: JudgePass) -> None:
        self.jury, self.questions = jury, questions
        self.opened: list[Verdicts] = [j.open(questions) for j in jury.jurors]
        self.types = candidate_types(questions.candidates)

    async def judge(self, subject: dict[str, Any]) -> Verdict:
        skipped = self.questions.unasked(subject)
        if skipped is not None:
            return skipped
        task = self.questions.task(subject)
        verdicts: list[Verdict] = []
        for label, juror in zip(self.jury.names, self.opened, strict=False):
            verdict = await juror.judge(subject)
            problem = verdict_problem(task, verdict, self.types)
            if problem:  # a juror that broke the contract: its vote is a failure, not a claim
                verdict = error_verdict(task, f"juror {label!r} answered wrongly: {problem}", verdict.usage)
            verdicts.append(verdict)
        return self.jury.decide(task, verdicts)

    def stages(self, subjects: list[dict[str, Any]]) -> list[Stage]:
        """The first juror's groups that warm up (its first question warms every LLM juror's
        provider cache), else the first juror's groups."""
        staged = [j.stages(subjects) for j in self.opened if isinstance(j, Staged)]
        return next((s for s in staged if any(stage.warm for stage in s)),
                    staged[0] if staged else [Stage(subjects)])

    def estimate(self, subject: dict[str, Any]) -> Estimate:
        """Refused: an :class:`Estimate` describes one call, a jury question makes one per juror."""
        raise JudgeSetupError("a dry run previews one judge, not a jury: preview each juror's model "
                              "on its own (a jury asks every question once per juror)")


def split_model_spec(spec: str) -> tuple[str, str | None]:
    """``"NAME@http://host:port/v1"`` -> ``("NAME", "http://host:port/v1")``; a plain ``"NAME"``
    -> ``("NAME", None)`` (its server is the default one). Only an ``@`` followed by ``http://`` or
    ``https://`` starts a server, so model names with an ``@`` of their own still work."""
    lowered = spec.lower()
    at = min((i for i in (lowered.find("@http://"), lowered.find("@https://")) if i >= 0), default=-1)
    if at < 0:
        if lowered.startswith(("http://", "https://")):
            # a URL without its model's name: taken as the name, it went to the server and into
            # run.json, summary.json and the reports, with any password it held (not repeated here)
            raise InputError("--model URL: give the model name before the URL (NAME@URL), or the URL "
                             "with --base-url")
        return spec, None
    name, url = spec[:at], spec[at + 1:]
    if not name.strip():
        # the spec is not repeated: its URL may hold a password (as the other URL messages)
        raise InputError("--model @URL: give the model name before the @ (NAME@URL)")
    return name, url
