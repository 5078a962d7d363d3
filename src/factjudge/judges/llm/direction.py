"""One direction of one document as the LLM judge asks it (:meth:`LLMJudge.open`).

Everything the LLM works out once per direction lives here and goes with it: the prompt prefix
the direction's calls share (one per fact_type with ``candidates: same_type``) and its provider
prompt-cache key, the request plans kept on each prefix, the order the subjects are asked in
(one prefix after another, the first call of each alone until it reached the server, so the rest
hit a warm provider cache), the dry run's estimate of what a provider's prefix cache saves, and
the question's line of a batch file.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ...errors import PromptTooLarge
from ...models import Verdict
from ..base import Estimate, JudgePass, Stage, by_type_key, type_key
from .prompts import Asked, Prefix, direction_prefix
from .request import body, cache_key

if TYPE_CHECKING:
    from .batch_lines import BatchRequest
    from .judge import LLMJudge

#: OpenAI caches prompt prefixes of at least this many tokens.
MIN_CACHED_PREFIX = 1024


class LLMPass:
    """The questions of one direction of a document to ``llm`` (see the module's docstring)."""

    def __init__(self, llm: LLMJudge, questions: JudgePass) -> None:
        self.llm, self.questions = llm, questions
        self.same_type = questions.config.candidates == "same_type"
        self._prefixes: dict[str, Prefix] = {}  # by fact_type key with same_type, else under ""
        self._warm: set[str] = set()  # the prefixes an estimated call has sent (dry run)

    def _prefix(self, subject: dict[str, Any]) -> Prefix:
        key = type_key(subject) if self.same_type else ""
        prefix = self._prefixes.get(key)
        if prefix is None:
            q = self.questions
            candidates = q.by_type.get(key, []) if self.same_type else q.candidates
            prefix = self._prefixes[key] = direction_prefix(q.direction, candidates, q.config, q.doc_id, q.fields)
        return prefix

    def asked(self, subject: dict[str, Any], leave_out: Collection[str] = (), keep_prefix: bool = True) -> Asked:
        """The question about ``subject`` as sent: shown the candidates of its prefix, but those
        in ``leave_out`` (ids the rules proved different). They are named in the question, the
        prefix kept, where a provider caches it and they are fewer than half its candidates
        (:meth:`_keeps_prefix`); otherwise they are left out of a prefix of its own (fewer
        tokens, none of them cached). ``keep_prefix`` False: always left out (a batch line,
        whose answer cannot be asked again)."""
        asked = Asked(self.questions.task(subject, self.same_type), self._prefix(subject))
        if not leave_out:
            return asked
        kept = [c for c in asked.task.candidates if str(c["id"]) not in leave_out]
        if keep_prefix and self._keeps_prefix(asked, len(kept)):
            return Asked(asked.task, asked.prefix, tuple(str(c["id"]) for c in asked.task.candidates
                                                         if str(c["id"]) in leave_out))
        return asked.with_candidates(kept)

    def _keeps_prefix(self, asked: Asked, kept: int) -> bool:
        """Whether the question is cheaper on its direction's cached prefix, the proved candidates
        named, than on a prefix of its own without them. Each question of the hybrid judge had a
        prefix of its own: 0% of its prompt tokens cached, 28.0 M prompt tokens for 1,000 facts a
        side against the llm judge's 7.5 M (benchmarks/cost.py). A provider's cached read costs a
        half (OpenAI's older models) to a tenth (Claude, GPT-4.1) of a token sent: a prefix of
        its own pays when it drops more than half the candidates, or when the prefix is too short
        to be cached at all."""
        return kept * 2 > len(asked.task.candidates) and self.llm.plan(asked).tokens >= MIN_CACHED_PREFIX

    async def judge(self, subject: dict[str, Any], leave_out: Collection[str] = ()) -> Verdict:
        skipped = self.questions.unasked(subject)
        if skipped is not None:
            return skipped
        asked = self.asked(subject, leave_out)
        verdict = await self.llm.ask(asked)
        if verdict.matched_id is None or verdict.matched_id not in asked.proved:
            return verdict
        # the model linked a candidate the rules proved different, which is not its to overrule:
        # asked again without the proved candidates, as a prefix of its own
        again = await self.llm.ask(self.asked(subject, leave_out, keep_prefix=False))
        again.usage.add(verdict.usage)
        again.note = "; ".join(n for n in (again.note, f"asked again without the candidates the rules proved "
                                           f"different: the first answer linked {verdict.matched_id}") if n)
        return again

    def stages(self, subjects: list[dict[str, Any]]) -> list[Stage]:
        """One prefix after another (with ``candidates: same_type``, one fact_type in order of first
        appearance), each group's first call alone when the judge warms up: it warms the
        provider's cache (and a local server's slot) for the rest of the group."""
        groups = list(by_type_key(subjects).values()) if self.same_type else [subjects]
        return [Stage(group, self.llm.warmup) for group in groups]

    def estimate(self, subject: dict[str, Any], leave_out: Collection[str] = ()) -> Estimate:
        asked = self.asked(subject, leave_out)
        llm = self.llm
        try:
            call = llm.prepare(asked)
        except PromptTooLarge:
            return Estimate("too_large")
        plan = llm.plan(call.asked)
        if llm.cache is not None and llm.cache.get(cache_key(plan, call.asked)) is not None:
            return Estimate("cache_hit")
        if call.asked is not asked or (leave_out and not asked.proved):  # a prefix of its own: cached by no call
            return Estimate("call", call.prompt_tokens, 0, True)
        key = asked.prefix.cache_key
        cached = plan.tokens if key in self._warm and plan.tokens >= MIN_CACHED_PREFIX else 0
        self._warm.add(key)
        return Estimate("call", call.prompt_tokens, plan.tokens, False, cached)

    def batch_request(self, subject: dict[str, Any], leave_out: Collection[str] = ()) -> BatchRequest | None:
        """The live request about ``subject`` as a batch line, unless nothing would be sent (no
        candidate of its type, too large, or answered in the response cache)."""
        if self.questions.unasked(subject) is not None:
            return None
        llm = self.llm
        try:
            call = llm.prepare(self.asked(subject, leave_out, keep_prefix=False))
        except PromptTooLarge:
            return None
        task = call.asked.task
        plan = llm.plan(call.asked)
        key = cache_key(plan, call.asked)
        if llm.cache is not None and llm.cache.get(key) is not None:
            return None
        # the batch files' module (and its sqlite3, ~3 ms to import): a batch export's only
        from .batch_lines import BatchRequest

        return BatchRequest(key, body(plan, call.asked, []).obj(), task)
