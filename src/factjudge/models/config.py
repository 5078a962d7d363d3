"""The judge config file (:class:`JudgeConfig`) and its parts: numeric tolerances, alias groups,
the rules judge's knowledge switches, the names of the input's columns."""
from __future__ import annotations

import difflib
from typing import Any, Literal, get_args

from pydantic import (
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

from .base import Model

Number = StrictInt | StrictFloat

#: Config keys whose null value means the same as leaving them out.
_NULL_IS_DEFAULT = ("entity_types", "matching_rules", "tolerances", "aliases")


class Tolerance(Model):
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


class AliasGroup(Model):
    """Values that name the same thing, for the rules judge (``aliases`` in the config): for the
    fields listed, or for every field when ``field`` is None."""

    model_config = ConfigDict(extra="forbid")
    field: StrictStr | list[StrictStr] | None = None
    values: list[StrictStr]

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: object) -> Any:
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


class RulesKnowledge(Model):
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
    #: Medication routes and frequencies as sig codes (PO = by mouth, TID = three times daily =
    #: every 8 hours), in route/frequency/sig fields; PRN (as needed) stays a qualifier.
    clinical: StrictBool = True
    #: Units pint does not read: data sizes in decimal prefixes (1,500 GB = 1.5 TB; TiB apart),
    #: Hz, mAh, W, nits, inch marks (15.6" = 15.6 in), units written together or apart.
    units: StrictBool = True
    #: Durations (18 months = 1.5 years, 2 weeks = 14 days) and number words before a unit.
    durations: StrictBool = True
    #: An amount per week or month and its exact yearly equivalent ($5,000/month = $60,000/year);
    #: an amount per period never equals one of another period or none.
    per_period: StrictBool = True
    #: Bound notations of the same bound (5+ years = at least 5 years; up to = at most).
    bounds: StrictBool = True
    #: Abbreviations and their expansions, with or without the abbreviation in parentheses
    #: (VAT = value-added tax (VAT), NDA, SOW, PO = purchase order).
    abbreviations: StrictBool = True
    #: Job-posting vocabulary: work arrangements (remote = work from home), seniority (Sr. =
    #: senior, entry-level = junior), employment types.
    jobs: StrictBool = True
    #: Results-table vocabulary, in split and metric fields: dataset splits (held-out = test,
    #: dev = validation) and metric names (acc = accuracy, EM = exact match).
    results: StrictBool = True
    #: Products named as listings name them, in product, item and model fields: without the
    #: brand (Contoso Zephyr 14 = Zephyr 14) or a trailing parenthetical spec; never another model.
    products: StrictBool = True
    #: Relation names of triples, in relation, property and predicate fields only: camelCase,
    #: snake_case and phrase forms of one relation (birthPlace = birth_place = wasBornIn), DBpedia's
    #: other names (operatingOrganisation = operator); never its inverse or another relation.
    relations: StrictBool = True
    #: Calendar quarters, halves and fiscal years written as the months they span (Q2 2023 =
    #: April-June 2023 = three months ended June 30, 2023); a fiscal quarter stays apart.
    periods: StrictBool = True
    #: Whole values written in words (four thousand three hundred and ten = 4,310; fifty-one
    #: percent = 51%) and the Indian scales (1 crore = 10 million, 1 lakh = 100,000).
    numbers: StrictBool = True
    #: Document types with a qualifier that keeps the type, in document fields (Tax Invoice =
    #: VAT invoice = Invoice); a pro forma invoice or a credit note stays apart.
    documents: StrictBool = True

    @model_serializer(mode="wrap")
    def _new_families_only_when_off(self, handler: SerializerFunctionWrapHandler) -> Any:
        # the families of issue 37 are written only when switched off, so a config that does not
        # name them keeps its dump, and so its runs' input hashes (resume), as they were
        data = handler(self)
        if isinstance(data, dict):
            for key in _FAMILIES_OF_ISSUE_37:
                if data.get(key) is True:
                    data.pop(key)
        return data


#: The knowledge families added by issue 37 (on by default, written only when off).
_FAMILIES_OF_ISSUE_37 = ("clinical", "units", "durations", "per_period", "bounds", "abbreviations",
                         "jobs", "results", "products", "relations", "periods", "numbers",
                         "documents")


#: Keys written only when set, so that runs without them keep their outputs, input hashes (resume)
#: and response-cache keys as they were.
_DROPPED_AT_DEFAULT: dict[str, Any] = {"columns": {}, "decimal_separator": ".", "date_order": "MDY",
                                       "ordered": [], "record_type": None, "confidence_field": None,
                                       "langextract_compare": ["extraction_text", "attributes"],
                                       "identifier_fields": [], "proof_guard": True}


#: The parts of a LangExtract extraction the config key ``langextract_compare`` may name.
LangExtractPart = Literal["extraction_text", "attributes", "span", "alignment_status"]
_LANGEXTRACT_COMPARED: tuple[LangExtractPart, ...] = ("extraction_text", "attributes")


class JudgeConfig(Model):
    """The judge config file. Unknown keys are rejected so typos never pass silently."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: object) -> Any:
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
    #: The predictions' field holding the extractor's confidence in [0, 1] (default: the first of
    #: ``confidence``, ``score``, ``probability`` predictions carry and gold facts do not). Never
    #: compared; summary.json's ``confidence`` measures it against the verdicts (core/confidence.py).
    confidence_field: StrictStr | None = Field(default=None, min_length=1)
    #: The fields holding identifiers or codes (compared after normalising case, spaces and
    #: punctuation; two that differ then prove the facts different), besides those recognised by
    #: name: ``id``, ``number``, ``no``, ``code``, ``sku``, ``ticker``, ``iban``... alone or as the
    #: last part (``invoice_number``, ``customer_id``; judges/rules/proof.py).
    identifier_fields: list[StrictStr] = Field(default_factory=list)
    #: Hybrid judge: a pair the rules prove different on a hard field (a number beyond tolerance, a
    #: date, an identifier) is not asked: the model cannot overrule proof. On by default.
    proof_guard: StrictBool = True

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

    def fields_for(self, fact_type: object) -> list[str] | None:
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

    @field_validator("ordered")
    @classmethod
    def _paths_as_compared(cls, value: list[str]) -> list[str]:
        # the reports' field table writes paths with [] (line_items[].taxes): the same path
        return [p.replace("[]", "") for p in value]

    @field_validator("text_threshold")
    @classmethod
    def _threshold_on_the_0_100_scale(cls, value: float) -> float:
        # 0.9 would let nearly any two texts match: someone meant 90 on a 0-1 scale
        if 0 < value < 1:
            raise ValueError(f"{value} looks like a 0-1 fraction, but text_threshold is a "
                             f"similarity on the 0-100 scale: write {value * 100:g}")
        return value
