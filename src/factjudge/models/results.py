"""What a judge answers and what judging one document gives: a pass's :class:`Verdict` (and how
long its texts may be), the counts and ratios (:class:`Counts`, :class:`Metrics`) and the
document's :class:`JudgeResult`, the documented output format."""
from __future__ import annotations

import json
from typing import Any, TextIO

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer
from pydantic_core import to_jsonable_python

from .analysis import Analysis
from .base import Model
from .frames import result_to_pandas
from .statuses import PassStatus
from .usage import CallUsage, Usage

#: The most characters of one judge answer's reasoning kept (an LLM's answer, one juror's):
#: real answers are far shorter. Measured on 2,399 free-text answers of GPT-4, GPT-4 Turbo,
#: Claude 2 and Llama 2 to FinanceBench questions, which give their reasoning: median 561
#: characters, 99th percentile 7,292, longest 10,845. A server writing more is cut here (512 KB
#: per answer made a 120 MB results.jsonl and a 67 MB report.html over 20 documents).
REASONING_LIMIT = 20_000
#: The most characters of one value quoted in a reasoning or an error (the rules judge's
#: ``"a" vs "b"``, a server's wrong id): the longest field value in the real data at hand is 609
#: characters (a FinanceBench answer; WebNLG 2020 triple parts: 120), so real values are quoted
#: whole, and a 30 MB text no longer makes every reasoning that names it 30 MB.
QUOTE_LIMIT = 1_000
#: The most characters of a verdict's reasoning or note that reach the results, whichever judge
#: wrote them (a user's own judge is bounded by nothing else); room for a jury of five, each
#: juror's answer within :data:`REASONING_LIMIT`.
VERDICT_TEXT_LIMIT = 5 * REASONING_LIMIT


def cut_text(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit`` characters and
    a marker saying what was cut: ``… [cut: 524,288 characters, the first 20,000 kept]``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … [cut: {len(text):,} characters, the first {limit:,} kept]"


def quoted(value: object) -> str:
    """``repr(value)`` for a message, cut at :data:`QUOTE_LIMIT` characters."""
    return cut_text(repr(value), QUOTE_LIMIT)


class Verdict(Model):
    """One pass's answer about one fact, after validation."""

    fact_id: str
    status: PassStatus
    matched_id: str | None = None
    reasoning: str | None = None
    #: Why the verdict is what it is when no judge said so (no candidates, ERROR reason, ...).
    note: str = ""
    usage: CallUsage = Field(default_factory=CallUsage)
    #: A jury's verdict: each juror's vote, juror name -> "TP:<matched id>", "FN", "FP" or "ERROR".
    votes: dict[str, str] | None = None
    #: A jury's verdict: what each juror's answer cost (``usage`` is their sum).
    juror_usage: dict[str, CallUsage] | None = None



class Counts(Model):
    tp_gold: int = 0
    fn: int = 0
    tp_predicted: int = 0
    fp: int = 0
    errors: int = 0
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None


class Metrics(Counts):
    out_of_scope_gold: int = 0
    out_of_scope_predicted: int = 0
    by_fact_type: dict[str, Counts] = Field(default_factory=dict)
    #: A jury only: share of the questions asked where every juror gave the same answer (a failed
    #: juror gave none); None (left out of the output) for a single judge or when nothing was asked.
    jury_agreement: float | None = None

    @model_serializer(mode="wrap")
    def _no_agreement_without_a_jury(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if self.jury_agreement is None and isinstance(data, dict):
            data.pop("jury_agreement", None)
        return data



class JudgeResult(Model):
    """The result of judging one document; ``to_json()`` is the documented output format."""

    gold_facts: list[dict[str, Any]]
    predicted_facts: list[dict[str, Any]]
    metrics: Metrics
    dedup_notes: list[str]
    #: How many times each reconciliation rule changed something, by kind.
    conflicts: dict[str, int] = Field(default_factory=dict)
    #: What the run noticed about its inputs (fields compared on one side only, scope).
    warnings: list[str] = Field(default_factory=list)
    usage: Usage
    #: The config the document was judged with (in a run folder, the run's: results.jsonl's lines
    #: leave it out and its readers put it back).
    config: dict[str, Any] = Field(default_factory=dict)
    #: Near misses, merges and splits (:mod:`factjudge.core.analysis`).
    analysis: Analysis = Field(default_factory=Analysis)

    def __repr__(self) -> str:
        # Short: a notebook cell should not print every fact, and asyncio (3.11) reprs the result
        # of asyncio.run() when it restores the SIGINT handler, which for a million facts cost
        # gigabytes. The facts are in gold_facts / predicted_facts.
        m = self.metrics
        return (f"JudgeResult(gold_facts=[{len(self.gold_facts)} facts], predicted_facts="
                f"[{len(self.predicted_facts)} facts], precision={m.precision!r}, recall={m.recall!r}, "
                f"f1={m.f1!r}, errors={m.errors})")

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_json(self, indent: int | None = 2) -> str:
        return self.model_dump_json(indent=indent)

    def write_json(self, fh: TextIO) -> None:
        """Write :meth:`to_json`'s document to ``fh`` one fact at a time: a large document's output
        never sits in memory as one string (nor once more as its encoded bytes)."""
        rest = self.model_dump(mode="json", exclude={"gold_facts", "predicted_facts"})
        fh.write("{")
        for n, key in enumerate(("gold_facts", "predicted_facts")):
            fh.write(f'{"," if n else ""}\n  "{key}": ')
            facts = getattr(self, key)
            if not facts:
                fh.write("[]")
                continue
            fh.write("[")
            for i, fact in enumerate(facts):
                text = json.dumps(fact, indent=2, ensure_ascii=False, default=to_jsonable_python)
                fh.write(("," if i else "") + "\n    " + text.replace("\n", "\n    "))
            fh.write("\n  ]")
        for key, value in rest.items():
            text = json.dumps(value, indent=2, ensure_ascii=False)
            fh.write(f',\n  "{key}": ' + text.replace("\n", "\n  "))
        fh.write("\n}\n")

    def to_pandas(self) -> Any:
        """One row per fact (side, id, fact_type, status, matched ids, reasons, then the fact's
        own fields) as a pandas DataFrame; needs pandas (``pip install 'factjudge[pandas]'``)."""
        return result_to_pandas(self)
