"""Data models shared by every stage: config, per-pass verdicts, usage and the result."""
from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal, TextIO, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import to_jsonable_python

from .errors import missing_dependency
from .util.bounds import COUNT_MAX

Direction = Literal["gold", "predicted"]
#: A fact judged unmatched: FN in the gold pass, FP in the predicted pass.
NegativeStatus = Literal["FN", "FP"]
PassStatus = Literal["TP", "FN", "FP", "ERROR"]
Status = Literal["TP", "FN", "FP", "ERROR", "OUT_OF_SCOPE"]
DIRECTIONS: tuple[Direction, Direction] = ("gold", "predicted")
PASS_STATUSES: tuple[PassStatus, ...] = ("TP", "FN", "FP", "ERROR")

#: Fields factjudge adds to every output fact; an input fact may not carry them.
OUTPUT_FIELDS = ("in_scope", "status", "matched_ids", "description", "reasoning", "linked_reasoning",
                 "votes")

Number = StrictInt | StrictFloat

#: Config keys whose null value means the same as leaving them out.
_NULL_IS_DEFAULT = ("entity_types", "matching_rules", "tolerances", "aliases")


class Tolerance(BaseModel):
    """Numeric tolerance for one field: equal when within either bound."""

    model_config = ConfigDict(extra="forbid")
    relative: Number | None = Field(default=None, ge=0)
    absolute: Number | None = Field(default=None, ge=0)


#: What the config key ``columns`` can rename: a fact's identity and type, a document's id and
#: its two lists of facts.
ColumnName = Literal["doc_id", "id", "fact_type", "gold_facts", "predicted_facts"]


def alias_values(text: str) -> list[str]:
    """The values of an alias group written as one string: ``CEO = chief executive officer``."""
    return [part.strip() for part in text.split("=") if part.strip()]


class AliasGroup(BaseModel):
    """Values that name the same thing, for the rules judge (``aliases`` in the config): for the
    fields listed, or for every field when ``field`` is None."""

    model_config = ConfigDict(extra="forbid")
    field: StrictStr | list[StrictStr] | None = None
    values: list[StrictStr]

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        # "CEO = chief executive officer = chief executive": a group for every field
        return {"values": alias_values(data)} if isinstance(data, str) else data

    @field_validator("values")
    @classmethod
    def _two_values(cls, values: list[str]) -> list[str]:
        kept = [v.strip() for v in values if v.strip()]
        if len(kept) < 2:
            raise ValueError(f"an alias group needs at least two values, got {values!r} "
                             "(write 'CEO = chief executive officer')")
        return kept

    @property
    def fields(self) -> tuple[str, ...] | None:
        return (self.field,) if isinstance(self.field, str) else (
            tuple(self.field) if self.field else None)

    def label(self) -> str:
        return " = ".join(self.values)


class RulesKnowledge(BaseModel):
    """The rules judge's built-in knowledge, each family on by default (see docs/concepts/judging.md)."""

    model_config = ConfigDict(extra="forbid")
    #: Corporate and public titles and their abbreviations (CEO = chief executive officer).
    titles: StrictBool = True
    #: US states, Canadian provinces and countries: names, codes, short forms; a state or
    #: country qualifier may be absent on one side (Berlin = Berlin, Germany).
    places: StrictBool = True
    #: Company-name word variants (Pharma = Pharmaceuticals), acronyms (IBM), generic trailing
    #: words (Sequoia = Sequoia Capital).
    companies: StrictBool = True
    #: Honorifics and generational suffixes a person's name may drop (Dr., Sir, Jr.).
    honorifics: StrictBool = True
    #: Person-name variants: initials, short given names, middle names (J. Smith = Jane Smith).
    names: StrictBool = True


#: Keys written only when set, so that runs without them keep their outputs, input hashes (resume)
#: and response-cache keys as they were.
_DROPPED_AT_DEFAULT: dict[str, Any] = {"columns": {}, "decimal_separator": ".", "date_order": "MDY",
                                       "ordered": [], "record_type": None,
                                       "langextract_compare": ["extraction_text", "attributes"]}


#: The parts of a LangExtract extraction the config key ``langextract_compare`` may name.
LangExtractPart = Literal["extraction_text", "attributes", "span", "alignment_status"]
_LANGEXTRACT_COMPARED: tuple[LangExtractPart, ...] = ("extraction_text", "attributes")


class JudgeConfig(BaseModel):
    """The judge config file. Unknown keys are rejected so typos never pass silently."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        # "entity_types:" with nothing after it is null in YAML; it means "none given"
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if not (v is None and k in _NULL_IS_DEFAULT)}
        return data

    entity_types: list[StrictStr] = Field(default_factory=list)
    matching_rules: list[StrictStr | dict[str, Any]] = Field(default_factory=list)
    #: The fields to compare: one list for every fact_type, or a list per fact_type
    #: (``{invoice: [vendor, total, line_items], line_item: [sku, qty]}``; an unlisted type compares
    #: the fields its gold facts carry, as without the key).
    fields: list[StrictStr] | dict[StrictStr, list[StrictStr]] | None = None
    tolerances: dict[StrictStr, Tolerance] = Field(default_factory=dict)
    one_to_one: StrictBool = False
    # rules judge (text similarity, 0-100 rapidfuzz score)
    text_threshold: Number = Field(default=90, ge=0, le=100)
    ignore_company_suffixes: StrictBool = True
    #: Rules judge: how ``1,234`` and ``1.234`` are read (a single separator before three
    #: digits): ``"."`` decimal point (the default: ``1,234`` is 1234) or ``","`` decimal comma
    #: (``1,234`` is 1.234). Unambiguous forms (``148,16``, ``1.234,50``) are read either way.
    decimal_separator: Literal[".", ","] = "."
    #: Rules judge: the list fields (or paths inside a list's items, ``line_items.taxes``) whose
    #: items are compared by position; every other list is compared as an unordered list.
    ordered: list[StrictStr] = Field(default_factory=list)
    #: Rules judge: how ``03/04/2024`` is read: ``MDY`` (the default: March 4), ``DMY`` (3 April)
    #: or ``YMD`` (year-first data; such a day-month form is then read month first).
    #: ``13/05/2024`` and ``03.04.2024`` (day first) are read either way.
    date_order: Literal["MDY", "DMY", "YMD"] = "MDY"
    # LLM prompt budget: larger candidate lists are shortlisted to fit (see README)
    max_prompt_tokens: StrictInt = Field(default=100_000, ge=256)
    #: Always shortlist to this many candidates (cheaper, off by default: it defeats prefix caching).
    shortlist_top_k: StrictInt | None = Field(default=None, ge=1)
    #: LLM judge: how the answer's schema reaches the server (see README); the CLI flag overrides it.
    structured_output: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    #: LLM judge: what the answer's ``reasoning`` holds: ``full`` (field by field), ``brief`` (one
    #: sentence) or ``none`` (no reasoning field in the schema); the CLI's --reasoning overrides it.
    reasoning: Literal["full", "brief", "none"] = "full"
    #: Reconciliation: a link stands when ``either`` pass names it (the default), or only when
    #: ``both`` do (stricter: a lenient pass cannot make a link alone; see docs/concepts/reconciliation.md).
    link_policy: Literal["either", "both"] = "either"
    #: LLM judge: which candidates a question shows: ``all`` of the other side (one prompt prefix
    #: per direction, the default), or only those of the judged fact's ``fact_type`` (the only
    #: ones it can match: one prefix per direction and fact_type, cheaper on documents of several
    #: types; the answer's schema then differs between types). The CLI's --candidates overrides it.
    candidates: Literal["all", "same_type"] = "all"
    #: Rules judge: groups of equivalent values, per field or for all fields (see docs/concepts/judging.md).
    aliases: list[AliasGroup] = Field(default_factory=list)
    #: A CSV or YAML file of alias groups, relative to the config file; read when the config is
    #: loaded (its groups are added to ``aliases``, so they are part of every run's identity).
    aliases_file: StrictStr | None = None
    #: Rules judge: the built-in knowledge families, each switchable.
    rules_knowledge: RulesKnowledge = Field(default_factory=RulesKnowledge)
    #: factjudge's names for the input's own column or field names, e.g. ``{"doc_id":
    #: "document_id", "id": "fact_id", "fact_type": "type"}`` (fact files, datasets, tables).
    columns: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    #: Input format ``records``: the fact_type of the record a document's top-level scalar keys
    #: form (default: the file's stem, ``invoices.jsonl`` gives ``invoices``).
    record_type: StrictStr | None = Field(default=None, min_length=1)
    #: Input format ``langextract``: which parts of an extraction are compared fields: its
    #: ``extraction_text``, its ``attributes``, its ``span`` (``char_start``, ``char_end``) and its
    #: ``alignment_status``. The span and alignment are kept as evidence either way.
    langextract_compare: list[LangExtractPart] = Field(default_factory=lambda: list(_LANGEXTRACT_COMPARED))

    @field_validator("columns")
    @classmethod
    def _columns_distinct(cls, value: dict[str, str]) -> dict[str, str]:
        known = get_args(ColumnName)
        for key in value:
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f"did you mean {close[0]!r}?" if close else "known: " + ", ".join(known)
                raise ValueError(f"{key!r} is not a name factjudge reads ({hint}); map it as "
                                 f"{{FACTJUDGE_NAME: YOUR_NAME}}, e.g. {{id: {key}}}")
        theirs = [v for v in value.values() if v.strip()]
        if len(theirs) < len(value):
            raise ValueError("a column name must be a non-empty string")
        if len(set(theirs)) < len(theirs):
            raise ValueError(f"two names are mapped to the same column: {value}")
        return value

    @model_serializer(mode="wrap")
    def _no_columns_when_none(self, handler: SerializerFunctionWrapHandler) -> Any:
        # a run without the key keeps its outputs and its input hashes (resume) as they were
        data = handler(self)
        if isinstance(data, dict):
            for key, default in _DROPPED_AT_DEFAULT.items():
                if key in data and data[key] == default:
                    data.pop(key)
        return data

    def fields_for(self, fact_type: Any) -> list[str] | None:
        """The fields ``fields`` names for ``fact_type`` (in order, once, ``fact_type`` left out);
        None where it names none: the gold facts then decide (see core/scope.py)."""
        if isinstance(self.fields, dict):
            named = self.fields.get(fact_type) if isinstance(fact_type, str) else None
        else:
            named = self.fields
        return None if named is None else [f for f in dict.fromkeys(named) if f != "fact_type"]

    def field_names(self) -> list[str]:
        """Every field ``fields`` names, for any fact_type."""
        named = self.fields.values() if isinstance(self.fields, dict) else [self.fields or []]
        return list(dict.fromkeys(f for names in named for f in names))

    @field_validator("text_threshold")
    @classmethod
    def _threshold_on_the_0_100_scale(cls, value: float) -> float:
        # 0.9 would let nearly any two texts match: someone meant 90 on a 0-1 scale
        if 0 < value < 1:
            raise ValueError(f"{value} looks like a 0-1 fraction, but text_threshold is a "
                             f"similarity on the 0-100 scale: write {value * 100:g}")
        return value


class CallUsage(BaseModel):
    """What one judged fact cost."""

    llm_calls: int = 0
    cache_hits: int = 0
    #: Questions the hybrid judge settled with the rules judge instead of an LLM call.
    llm_calls_saved: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: CallUsage) -> None:
        """Add ``other``'s counts to these: the one place usage is summed (a document's
        :class:`Usage`, a jury's verdict, each juror's share)."""
        for name in CallUsage.model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @classmethod
    def total(cls, usages: Iterable[CallUsage]) -> CallUsage:
        """The sum of ``usages``."""
        out = CallUsage()
        for usage in usages:
            out.add(usage)
        return out


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


def quoted(value: Any) -> str:
    """``repr(value)`` for a message, cut at :data:`QUOTE_LIMIT` characters."""
    return cut_text(repr(value), QUOTE_LIMIT)


class Verdict(BaseModel):
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


class Prices(BaseModel):
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
        return data


class Counts(BaseModel):
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


#: What an in-scope fact is to a scorer (see :mod:`factjudge.core.analysis`); out-of-scope and
#: ERROR facts are ``out_of_scope`` and ``error``.
FactCategory = Literal["correct", "near_miss", "missing", "spurious", "duplicate", "error", "out_of_scope"]
#: The categories counted per fact type, in the order they are shown.
CATEGORIES = ("correct", "near_miss", "missing", "spurious", "duplicate")


class CategoryCounts(BaseModel):
    """The categories of :mod:`factjudge.core.analysis`, counted for one fact type or overall.

    ``correct`` counts the links kept (= TP gold facts); a near miss is one FN gold fact and one
    FP prediction counted once, so ``near_miss + missing = FN`` and ``near_miss + spurious +
    duplicate = FP``."""

    correct: int = 0
    near_miss: int = 0
    missing: int = 0
    spurious: int = 0
    duplicate: int = 0
    #: Predictions linked to several gold facts.
    merges: int = 0
    #: Gold facts whose other predictions were dropped as duplicates.
    splits: int = 0
    #: Near misses per compared field they differ in (one near miss may count in several fields).
    near_miss_fields: dict[str, int] = Field(default_factory=dict)
    #: Near misses that differ in one compared field only, per that field.
    one_field: dict[str, int] = Field(default_factory=dict)

    def add(self, other: CategoryCounts) -> None:
        for name in (*CATEGORIES, "merges", "splits"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in ((self.near_miss_fields, other.near_miss_fields), (self.one_field, other.one_field)):
            for key, n in theirs.items():
                mine[key] = mine.get(key, 0) + n


class NearMiss(BaseModel):
    """An FN gold fact and an FP prediction of the same type that pair up: they agree on at least
    half of the compared fields (and on one at least) but not on all."""

    fact_type: Any
    gold: str
    predicted: str
    #: The closeness of the pair: the mean of the per-field similarities, 0-100 (the rules
    #: judge's field scores, the scale of its reasoning).
    score: float
    agree: list[str]
    differ: list[str]


class Merge(BaseModel):
    """A prediction linked to several gold facts (with ``one_to_one``, all but one were dropped)."""

    fact_type: Any
    predicted: str
    gold: list[str]


class Split(BaseModel):
    """A gold fact that several predictions named: one link kept, the others dropped as duplicates."""

    fact_type: Any
    gold: str
    kept: str | None
    dropped: list[str]


class Analysis(BaseModel):
    """Where one document's errors are: near misses, merges and splits (:mod:`factjudge.core.analysis`)."""

    near_misses: list[NearMiss] = Field(default_factory=list)
    merges: list[Merge] = Field(default_factory=list)
    splits: list[Split] = Field(default_factory=list)

    def marks(self) -> dict[tuple[str, str], dict[str, Any]]:
        """(side, id) -> what this says of the fact: ``partner`` (the near-miss partner, or for a
        duplicate the prediction kept), ``differ`` and ``closeness`` (near misses), ``near_miss``
        / ``duplicate`` flags and ``granularity`` (``merge`` or ``split``)."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for m in self.merges:
            for key in (("predicted", m.predicted), *(("gold", g) for g in m.gold)):
                out.setdefault(key, {})["granularity"] = "merge"
        for s in self.splits:
            out.setdefault(("gold", s.gold), {})["granularity"] = "split"
            for p in s.dropped:
                out.setdefault(("predicted", p), {}).update(granularity="split", duplicate=True, partner=s.kept)
        for n in self.near_misses:
            for key, partner in ((("gold", n.gold), n.predicted), (("predicted", n.predicted), n.gold)):
                out.setdefault(key, {}).update(near_miss=True, partner=partner, differ=list(n.differ),
                                               closeness=n.score)
        return out


def fact_category(side: str, status: Any, mark: Mapping[str, Any] | None) -> FactCategory:
    """A fact's category from its final status and its :meth:`Analysis.marks` entry."""
    if status in ("TP", "ERROR", "OUT_OF_SCOPE"):
        return "correct" if status == "TP" else "error" if status == "ERROR" else "out_of_scope"
    mark = mark or {}
    if mark.get("near_miss"):
        return "near_miss"
    if side == "gold":
        return "missing"
    return "duplicate" if mark.get("duplicate") else "spurious"


class JudgeResult(BaseModel):
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


# --------------------------------------------------------------------------- DataFrames of results

#: The columns of :meth:`Analysis.marks` and the category (:func:`fact_category`), per fact.
ANALYSIS_COLUMNS = ("category", "partner", "differ", "closeness", "granularity")
#: The fixed columns of the output tables, in order; the facts' own fields follow.
FACT_COLUMNS = ("doc_id", "side", "id", "fact_type", "status", "in_scope", "matched_ids",
                "description", "reasoning", "linked_reasoning", "votes", *ANALYSIS_COLUMNS)


#: The fixed columns factjudge fills that do not come from the fact itself: every column but the
#: fact's ``id`` and ``fact_type`` and the :data:`OUTPUT_FIELDS` (which an input fact may not
#: have). A fact may have fields of these names (``category`` and ``partner`` are ordinary
#: business fields): they go to ``fact.<name>`` (:func:`fact_column`), never into factjudge's column.
ADDED_COLUMNS = tuple(c for c in FACT_COLUMNS if c not in ("id", "fact_type", *OUTPUT_FIELDS))
_PREFIX = "fact."


def fact_column(name: str) -> str:
    """The column of a fact's own field ``name``: ``name`` itself, except that a field named like
    an :data:`ADDED_COLUMNS` column (``doc_id``, ``side``, ``category``, ``partner``, ...), or
    like one with ``fact.`` prefixes (``fact.doc_id``, ``fact.fact.side``), gets one more
    ``fact.`` in front. So ``category`` is ``fact.category``, ``fact.category`` is
    ``fact.fact.category``, and no fact field ever shares a column with factjudge's columns or
    with another field of the fact (``fact.other`` and any other name are kept as they are)."""
    base = name
    while base.startswith(_PREFIX):
        base = base[len(_PREFIX):]
    return _PREFIX + name if base in ADDED_COLUMNS else name


def import_pandas() -> Any:
    try:
        import pandas as pd
    except ImportError as exc:
        raise missing_dependency("pandas is needed for to_pandas(): pip install 'factjudge[pandas]'",
                                 exc, "pandas") from None
    return pd


def result_rows(result: Any, doc_id: str | None = None) -> Iterator[dict[str, Any]]:
    """One row dict per fact of a result (gold facts first, then predicted, in input order).

    ``result`` is a :class:`~factjudge.models.JudgeResult`, its ``to_dict()``, or a line of an
    eval ``results.jsonl`` (whose ``doc_id`` is used when ``doc_id`` is not given). Keys: the
    :data:`FACT_COLUMNS`, then the fact's own fields, named by :func:`fact_column` (``doc_id``
    is ``fact.doc_id``, ``fact.doc_id`` is ``fact.fact.doc_id``: both values are kept)."""
    if isinstance(result, Mapping):
        line: Mapping[str, Any] = result
        if doc_id is None:
            doc_id = line.get("doc_id")
    else:
        line = {"gold_facts": result.gold_facts, "predicted_facts": result.predicted_facts,
                "analysis": result.analysis}
    marks = line_analysis(line).marks()
    for side in ("gold", "predicted"):
        for fact in line.get(f"{side}_facts") or ():
            mark = marks.get((side, str(fact.get("id"))), {})
            row: dict[str, Any] = {
                "doc_id": doc_id, "side": side, "id": fact.get("id"),
                "fact_type": fact.get("fact_type"), "status": fact.get("status"),
                "in_scope": fact.get("in_scope"), "matched_ids": list(fact.get("matched_ids") or ()),
                "description": fact.get("description"), "reasoning": fact.get("reasoning"),
                "linked_reasoning": fact.get("linked_reasoning"), "votes": fact.get("votes"),
                "category": fact_category(side, fact.get("status"), mark), "partner": mark.get("partner"),
                "differ": mark.get("differ"), "closeness": mark.get("closeness"),
                "granularity": mark.get("granularity"),
            }
            for key, value in fact.items():
                if key in ("id", "fact_type") or key in OUTPUT_FIELDS:
                    continue
                row[fact_column(key)] = value
            yield row


def line_analysis(line: Mapping[str, Any]) -> Analysis:
    """The :class:`Analysis` of a result line (or of a dict holding one); empty when the line has
    none (a line of an older version: its FN and FP facts then count as missing / spurious)."""
    found = line.get("analysis")
    if isinstance(found, Analysis):
        return found
    return Analysis.model_validate(found) if isinstance(found, Mapping) else Analysis()


def _columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The fixed columns, then every other key in the order first met."""
    extra: dict[str, None] = {}
    for row in rows:
        for key in row:
            if key not in extra:
                extra[key] = None
    return list(FACT_COLUMNS) + [k for k in extra if k not in FACT_COLUMNS]


def results_frame(rows: list[dict[str, Any]]) -> Any:
    """A DataFrame of ``rows``. Fixed columns have fixed types; a fact field whose present values
    are all integers (or all booleans) keeps them with pandas' nullable ``Int64`` / ``boolean``
    when some rows lack it, instead of turning into floats; missing values are NA/None."""
    pd = import_pandas()
    columns = _columns(rows)
    data: dict[str, Any] = {}
    for name in columns:
        values = [row.get(name) for row in rows]
        if name in ("doc_id", "matched_ids", "reasoning"):  # lists, and None kept as None
            data[name] = pd.Series(values, dtype=object)
            continue
        present = [v for v in values if v is not None]
        if len(present) < len(values) and present:
            if all(isinstance(v, bool) for v in present):
                data[name] = pd.Series(values, dtype="boolean")
                continue
            if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
                data[name] = pd.Series(values, dtype="Int64")
                continue
        if present and any(isinstance(v, (list, dict)) for v in present):
            data[name] = pd.Series(values, dtype=object)
            continue
        data[name] = pd.Series(values) if present else pd.Series(values, dtype=object)
    return pd.DataFrame(data, columns=columns)


def result_to_pandas(result: Any, doc_id: str | None = None) -> Any:
    """A ``pandas.DataFrame`` with one row per fact of one judged document.

    Columns: ``doc_id`` (``None`` unless given), ``side`` (``"gold"`` / ``"predicted"``), ``id``,
    ``fact_type``, ``status``, ``in_scope``, ``matched_ids`` (a list), ``description``,
    ``reasoning``, then the facts' own fields (an absent field is missing: None / NA), named by
    :func:`fact_column` (a fact's own ``doc_id`` is ``fact.doc_id``).
    ``result`` is a :class:`~factjudge.models.JudgeResult` or its ``to_dict()``.
    Raises :class:`OptionalDependencyError` (an ``ImportError``) without pandas."""
    import_pandas()
    return results_frame(list(result_rows(result, doc_id)))
