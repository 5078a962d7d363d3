"""What judging cost: one judged fact's calls and tokens (:class:`CallUsage`), a document's or a
run's (:class:`Usage`), and the prices that turn tokens into money (:class:`Prices`)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ConfigDict, SerializerFunctionWrapHandler, model_serializer

from ..util.bounds import COUNT_MAX
from .base import Model


class CallUsage(Model):
    """What one judged fact cost."""

    llm_calls: int = 0
    cache_hits: int = 0
    #: Questions the hybrid judge settled with the rules judge instead of an LLM call.
    llm_calls_saved: int = 0
    #: Of those, the questions the hybrid judge settled because the rules proved every candidate
    #: of the fact's type different on a hard field (judges/rules/proof.py).
    proved_different: int = 0
    #: Candidates left out of the LLM's questions because the rules proved them different.
    proof_left_out: int = 0
    retries: int = 0
    #: Of the retries, the questions asked again because the answer was invalid or cut.
    reasks: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0

    @model_serializer(mode="wrap")
    def _absent_when_zero(self, handler: SerializerFunctionWrapHandler) -> Any:
        return _without_zero_proofs(handler(self))

    def add(self, other: CallUsage) -> None:
        """Add ``other``'s counts to these: the one place usage is summed (a document's
        :class:`Usage`, a jury's verdict, each juror's share)."""
        # what pydantic's __setattr__ does for a model without assignment validation, without
        # its per-field dispatch: once per judged fact, 11 setattr calls were 4% of a rules run
        mine, theirs = self.__dict__, other.__dict__
        for name in _COUNT_FIELDS:
            mine[name] += theirs[name]
        self.__pydantic_fields_set__.update(_COUNT_FIELDS)

    @classmethod
    def total(cls, usages: Iterable[CallUsage]) -> CallUsage:
        """The sum of ``usages``."""
        out = CallUsage()
        for usage in usages:
            out.add(usage)
        return out



#: The counts :meth:`CallUsage.add` sums.
_COUNT_FIELDS = tuple(CallUsage.model_fields)


class Prices(Model):
    """What tokens cost, per million, in the user's currency (``--price-in``, ``--price-cached``,
    ``--price-out``). A price not given counts 0, except ``cached``: without it cached prompt
    tokens are priced as input, an upper bound. Providers discount them, not waive them: OpenAI
    bills cached input at a half (gpt-4o, gpt-4o-mini: $0.075 against $0.15) down to a tenth (the
    gpt-5 family) of the input price (https://developers.openai.com/api/docs/pricing, read on
    2026-11-05); Anthropic bills cache hits at 0.1x the base input price and 5-minute cache
    writes at 1.25x (https://platform.claude.com/docs/en/about-claude/pricing, "Cache hits and
    refreshes"), which :meth:`cost` prices as input."""

    model_config = ConfigDict(frozen=True)

    input: float | None = None
    cached: float | None = None
    output: float | None = None

    @property
    def given(self) -> bool:
        return any(p is not None for p in (self.input, self.cached, self.output))

    def cost(self, prompt_tokens: int, cached_prompt_tokens: int, completion_tokens: int) -> float:
        """The cost of these tokens; ``cached_prompt_tokens`` are part of ``prompt_tokens``, as in
        OpenAI's ``usage.prompt_tokens_details.cached_tokens``."""
        cached = max(0, min(cached_prompt_tokens, prompt_tokens))  # a server's count, not trusted
        cached_price = self.input if self.cached is None else self.cached
        return ((prompt_tokens - cached) * (self.input or 0) + cached * (cached_price or 0)
                + completion_tokens * (self.output or 0)) / 1e6

    def describe(self) -> str:
        """The prices as the summary lines name them."""

        def one(name: str, price: float | None) -> str:
            return f"{name} {price:g}" if price is not None else f"{name} 0 (not given)"

        cached = (f"cached {self.cached:g}" if self.cached is not None
                  else "cached prompt tokens priced as input (no --price-cached)")
        return f"per million tokens: {one('input', self.input)}, {cached}, {one('output', self.output)}"

    def usage_fields(self, prompt_tokens: int, cached_prompt_tokens: int,
                     completion_tokens: int) -> dict[str, Any]:
        """``cost`` and ``prices`` as a run's ``usage`` gives them; no cost (None) for counts past
        COUNT_MAX, which only an older version's stored usage can hold (a server's are bounded
        where read), instead of an OverflowError once the judging is done."""
        counts = (prompt_tokens, cached_prompt_tokens, completion_tokens)
        cost = None if max(counts) > COUNT_MAX else round(self.cost(*counts), 6)
        return {"cost": cost, "prices": self.model_dump()}


def money(amount: float) -> str:
    """A cost as the summary lines print it: 4 decimals, 6 below 0.01 (a small run's cost)."""
    return f"{amount:,.4f}" if amount >= 0.01 or amount == 0 else f"{amount:.6f}"


class Usage(CallUsage):
    seconds: float = 0.0
    #: How prompt tokens were counted before sending ("tiktoken:..." or "estimate:..."), if they were.
    token_counter: str | None = None
    #: The structured-output mode the LLM judge used (``auto`` settles on one), if any.
    structured_output: str | None = None
    #: How the LLM judge's requests were adapted to what the server refused (``no_temperature``,
    #: ``max_completion_tokens``, ``system_in_user``); absent when nothing was.
    adapted: list[str] | None = None
    #: A jury's usage per juror (juror name -> its calls and tokens); absent for a single judge.
    jurors: dict[str, CallUsage] | None = None
    #: What the run cost at the prices given (:meth:`Prices.usage_fields`); absent without prices.
    cost: float | None = None
    #: The prices ``cost`` was computed with (:class:`Prices`, per million tokens).
    prices: dict[str, float | None] | None = None

    def add_jurors(self, per_juror: dict[str, CallUsage]) -> None:
        """Add one jury verdict's per-juror usage to ``jurors``."""
        jurors = self.jurors if self.jurors is not None else {}
        for juror, call in per_juror.items():
            jurors.setdefault(juror, CallUsage()).add(call)
        self.jurors = jurors

    @model_serializer(mode="wrap")
    def _absent_when_none(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):  # outputs without a jury, prices or an adaptation stay as they were
            for name in ("jurors", "cost", "prices", "adapted"):
                if getattr(self, name) is None:
                    data.pop(name, None)
        return _without_zero_proofs(data)


def _without_zero_proofs(data: Any) -> Any:
    """Usage without the proof guard's counts and the re-asks when zero: the outputs of a run
    without them stay as they were."""
    if isinstance(data, dict):
        for name in _PROOF_COUNTS:
            if data.get(name) == 0:
                del data[name]
    return data


_PROOF_COUNTS = ("proved_different", "proof_left_out", "reasks")
