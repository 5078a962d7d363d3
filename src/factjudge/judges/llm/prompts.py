"""Prompts, response schemas and answer validation for the per-fact judge calls.

Layout is pinned for provider prefix caching: the system message and the candidate list are
byte-identical for every call of one direction in one document; the single fact judged comes last.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Literal

from ...errors import InvalidAnswer, PromptTooLarge
from ...models import (
    REASONING_LIMIT,
    Direction,
    JudgeConfig,
    NegativeStatus,
    PassStatus,
    Verdict,
    cut_text,
    quoted,
)
from ...util.jsonutil import canonical_json
from ..base import JudgeTask, fact_type_problem

# Per direction: (subject side, candidate side, negative status, id key, matched key)
_SIDES: dict[Direction, tuple[str, str, NegativeStatus, str, str]] = {
    "gold": ("GOLD", "PREDICTED", "FN", "gold_fact_id", "matched_predicted_id"),
    "predicted": ("PREDICTED", "GOLD", "FP", "predicted_fact_id", "matched_gold_id"),
}


#: What the system message asks of the answer's ``reasoning`` per ``JudgeConfig.reasoning``
#: (``--reasoning``). ``full`` is the wording of every earlier prompt format, byte for byte.
_REASONING_ASKED = {
    "full": "Write your reasoning first, field by field, then decide.",
    "brief": "Write your reasoning first, in one short sentence naming the fields that decide, then decide.",
    "none": "Answer without reasoning.",
}
#: A verdict's reasoning when none was asked for (``reasoning: none``).
NO_REASONING = "(no reasoning asked: reasoning none)"


# --- how facts are written: tables ------------------------------------------------------------
# A candidate written as a JSON object repeats every key and its quotes: ~38 tokens a fact on the
# 100+100 shape of issue #25, 98% of the prompt. Written as a table (the field names once per
# fact_type, then one line per fact) it is about half.

#: Between the cells of a table line.
CELL_SEPARATOR = " | "
#: How a table starts (then the fact_type, as a cell); no bare cell starts with its word and colon.
_TYPE_LINE = "fact_type: "
#: How to read a table's cells, per kind of cell. A prompt says it for the kinds its tables hold and
#: no other: half of WebNLG's documents hold no empty, quoted or JSON cell, and the whole legend was
#: 30 of the 378 tokens of a call there (o200k_base).
CELL_NOTES = {
    "empty": "an empty cell is a missing field",
    "quoted": "a quoted cell is a JSON string",
    "json": "null, true, false and numbers are JSON",
}


#: What ``json.loads`` reads as a number or constant (ASCII digits only, as its C scanner).
_JSON_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|NaN|-?Infinity")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


#: Strings up to this long have their _bare answer remembered (at most 65,536 of them: a few MB).
_REMEMBERED_CHARS = 200


def _bare(text: str) -> bool:
    """Whether a string may stand in a cell unquoted: it cannot be read as anything else (an empty
    cell, JSON, a separator, a line break, spaces that vanish when read, a table's first line).
    Remembered for short strings: a run asks it of the same values again and again (each fact's
    cells as a candidate and as the judged fact, units, periods, names: 60 checks a question on
    llm_overhead.py's 10+10 facts, a third of the judge's own time in its profile)."""
    return _bare_short(text) if len(text) <= _REMEMBERED_CHARS else _is_bare(text)


def _is_bare(text: str) -> bool:
    return not (not text or text != text.strip() or "|" in text or text[0] in '"[{'
                or text.startswith(_TYPE_LINE.rstrip()) or _CONTROL.search(text) or _JSON_SCALAR.fullmatch(text))


_bare_short = lru_cache(maxsize=1 << 16)(_is_bare)


def fact_cell(value: object) -> str:
    """One value as a table cell: a string bare where it cannot be misread, else JSON."""
    return value if isinstance(value, str) and _bare(value) else canonical_json(value)


#: The compared fields per fact_type (``JudgeTask.fields``): a table of such a type shows exactly
#: these, in this order; facts of other types show all of theirs.
Fields = Mapping[Any, tuple[str, ...]]


def _columns(facts: list[dict[str, Any]], fields: Fields | None = None) -> list[str]:
    fact_type = facts[0].get("fact_type", _NO_TYPE) if facts else _NO_TYPE
    if fields is not None and isinstance(fact_type, str) and fact_type in fields:
        return ["id", *fields[fact_type]]
    return ["id", *sorted({k for f in facts for k in f} - {"id", "fact_type"})]


def _row(fact: dict[str, Any], columns: list[str]) -> str:
    return CELL_SEPARATOR.join(fact_cell(fact[k]) if k in fact else "" for k in columns)


_NO_TYPE = object()


def _by_type(facts: list[dict[str, Any]]) -> list[tuple[Any, list[dict[str, Any]]]]:
    groups: dict[str, tuple[Any, list[dict[str, Any]]]] = {}
    for fact in facts:
        ft = fact.get("fact_type", _NO_TYPE)
        groups.setdefault("" if ft is _NO_TYPE else canonical_json(ft), (ft, []))[1].append(fact)
    return list(groups.values())


def fact_tables(facts: list[dict[str, Any]], fields: Fields | None = None) -> str:
    """``facts`` as tables, one per fact_type in order of first appearance, rows in input order;
    the columns of a table are ``id`` and then its type's compared fields (``fields``), else its
    facts' other fields, sorted. A field that is not compared is not shown: the prompt needs no
    list of fields to compare, nor the model to skip metadata (``confidence``, ``page``)."""
    return written_facts(facts, fields)[0]


def cell_notes(facts: list[dict[str, Any]], fields: Fields | None = None) -> str:
    """How to read the cells of ``facts``' tables: the CELL_NOTES of the kinds of cell they hold."""
    return written_facts(facts, fields)[1]


def written_facts(facts: list[dict[str, Any]], fields: Fields | None = None) -> tuple[str, str]:
    """:func:`fact_tables` and :func:`cell_notes` of ``facts`` in one pass (a direction's prefix
    needs both: one string check a cell, not two)."""
    kinds: set[str] = set()
    lines: list[str] = []
    for ft, group in _by_type(facts):
        lines += _noted_table(ft, _columns(group, fields), group, kinds)
    return "\n".join(lines), _notes(kinds)


def _noted_table(fact_type: object, columns: list[str], facts: list[dict[str, Any]], kinds: set[str]) -> list[str]:
    """The lines of one fact_type's table (``_NO_TYPE``: none), adding to ``kinds`` the
    :data:`CELL_NOTES` kinds of its cells (:func:`_noted_cell`; ``empty`` for an absent one)."""
    if fact_type is _NO_TYPE:
        kinds.add("empty")
        lines = [_TYPE_LINE]
    else:
        lines = [_TYPE_LINE + _noted_cell(fact_type, kinds)]
    lines.append(CELL_SEPARATOR.join([_noted_cell(c, kinds) for c in columns]))
    for fact in facts:
        cells = []
        for k in columns:
            if k in fact:
                cells.append(_noted_cell(fact[k], kinds))
            else:
                kinds.add("empty")
                cells.append("")
        lines.append(CELL_SEPARATOR.join(cells))
    return lines


def _notes(kinds: set[str]) -> str:
    """The CELL_NOTES of ``kinds``, in their order."""
    return "; ".join(note for kind, note in CELL_NOTES.items() if kind in kinds)


def system_message(direction: Direction, config: JudgeConfig) -> str:
    # worded tightly: on a document of 3+3 facts (WebNLG) this message is a quarter of each prompt
    subject, other, _, id_key, matched_key = _SIDES[direction]
    rules = config.matching_rules
    lines = [
        f"Does one of the {other} facts (candidates) state the same fact as the {subject} fact given last"
        f"{', under the matching rules below' if rules else ''}? "
        "Compare meaning, not formatting (units, number and date formats, wording); facts of different "
        "fact_type never match.",
        # the answer's JSON shown: without it Qwen2.5-Coder-1.5B looped in its reasoning until the
        # output budget on 7 of 12 gold questions (250 tokens), with it on none of 8 (#25)
        f'Answer {{"{id_key}": <judged fact id>, "reasoning": "...", "{matched_key}": <matching candidate '
        f'id, the best if several match, or null>}}. {_REASONING_ASKED[config.reasoning]}',
        "",
        "Matching rules:",
    ]
    if config.matching_rules:
        lines += [f"- {r if isinstance(r, str) else canonical_json(r)}" for r in config.matching_rules]
    else:
        del lines[-2:]  # no rules: no heading either
    if isinstance(config.fields, list) and config.fields:  # the tables show every field then
        lines += ["", "Fields to compare: " + ", ".join(config.fields)]  # (a mapping: per type, in them)
    if config.tolerances:
        lines += ["", "Numeric tolerances per field (a value matches when within either bound):"]
        for name, tol in config.tolerances.items():
            lines.append(f"- {name}: {canonical_json(tol.model_dump(exclude_none=True))}")
    return "\n".join(lines)


def candidates_message(direction: Direction, candidates: list[dict[str, Any]], fields: Fields | None = None) -> str:
    other = _SIDES[direction][1]
    tables, notes = written_facts(candidates, fields)
    legend = f"In the tables, {notes}.\n" if notes else ""
    return f"{legend}{other} facts (candidates):\n{tables}"


def _noted_cell(value: object, kinds: set[str]) -> str:
    """:func:`fact_cell` of a present value, adding to ``kinds`` the :data:`CELL_NOTES` kind its
    cell needs (``quoted``, ``json``; none for a bare string): one string check for both."""
    if isinstance(value, str):
        if _bare(value):
            return value
        kinds.add("quoted")
    else:
        kinds.add("json")
    return canonical_json(value)


def subject_message(direction: Direction, fact: dict[str, Any], fields: Fields | None = None) -> str:
    # cell_notes([fact]) and fact_tables([fact]) in one pass: one message per question asked
    kinds: set[str] = set()
    table = "\n".join(_noted_table(fact.get("fact_type", _NO_TYPE), _columns([fact], fields), [fact], kinds))
    notes = _notes(kinds)
    return f"{_SIDES[direction][0]} fact to judge{f' ({notes})' if notes else ''}:\n{table}"


def prefix_messages(
    direction: Direction, candidates: list[dict[str, Any]], config: JudgeConfig,
    fields: dict[str, tuple[str, ...]] | None = None,
) -> list[dict[str, str]]:
    """The shared prefix of every call of one direction in one document."""
    return [
        {"role": "system", "content": system_message(direction, config)},
        {"role": "user", "content": candidates_message(direction, candidates, fields)},
    ]


#: How the answer's JSON schema reaches the server: OpenAI's strict ``json_schema``, llama-cpp-python's
#: ``{"type": "json_object", "schema": ...}``, or ``none`` (described in the prompt, no
#: ``response_format``). ``auto`` starts with the first and falls back when the server refuses it.
STRUCTURED_OUTPUT_MODES = ("json_schema", "json_object", "none")
StructuredOutput = Literal["auto", "json_schema", "json_object", "none"]


#: Pinning the judged fact's id (``--pin-id``): ``auto`` pins where the server is self-hosted.
PIN_ID_CHOICES = ("auto", "always", "never")
#: What the answer's ``reasoning`` holds (``--reasoning``, config key ``reasoning``).
REASONING_CHOICES = ("full", "brief", "none")


def verdict_schema(direction: Direction, candidate_ids: list[str], subject_id: str | None = None,
                   drop: frozenset[str] = frozenset(), reasoning: str = "full") -> dict[str, Any]:
    """The answer's JSON schema. Unpinned (``subject_id`` None), one per document and direction
    (the judged fact's id is a plain string, checked in code), so every call of a direction sends
    the same bytes and providers that cache the schema with the prompt prefix can. Pinned, the
    id is a one-value enum: a server that compiles the schema into a grammar per request
    (llama.cpp, vLLM, Ollama) then cannot let the model copy the matched id into it (measured
    with Qwen2.5-Coder-1.5B on llama.cpp: 6 of 30 facts ERROR "gold_fact_id must be 'g2', got
    'p7'", issue #21). The matched id is a candidate's id or null, and the verdict follows from it
    (TP, or the direction's negative): a contradictory answer cannot be written (format 4 had a
    ``decision`` object of two shapes, ``{status, id}``: 290 of WebNLG's 728 prompt tokens a call
    were the schema, now about 100). ``reasoning`` comes first. ``drop``: schema keywords
    the server refused (Gemini's OpenAI-compatible endpoint: ``additionalProperties``), left out
    everywhere. ``reasoning`` ``none``: no reasoning field at all (``brief`` asks for less in
    the prompt, with the same schema: a length bound is a keyword not every provider takes)."""
    _, _, _, id_key, matched_key = _SIDES[direction]
    judged: dict[str, Any] = {"type": "string"} if subject_id is None else {"type": "string", "enum": [subject_id]}
    matched = {"anyOf": [{"type": "string", "enum": list(candidate_ids)}, {"type": "null"}]}
    properties: dict[str, Any] = {id_key: judged, "reasoning": {"type": "string"}, matched_key: matched}
    if reasoning == "none":
        del properties["reasoning"]
    schema = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return _without(schema, drop) if drop else schema


def _without(node: object, drop: frozenset[str]) -> Any:
    """``node`` with the schema keywords ``drop`` removed at every level (property names, the
    keys under ``properties``, are data and stay)."""
    if isinstance(node, list):
        return [_without(n, drop) for n in node]
    if not isinstance(node, dict):
        return node
    return {k: ({p: _without(v2, drop) for p, v2 in v.items()} if k == "properties" else _without(v, drop))
            for k, v in node.items() if k not in drop or k == "properties"}


#: JSON Schema keywords a provider's dialect may refuse by name, in what ``verdict_schema``
#: writes or a provider complains about: Gemini's OpenAI-compatible endpoint answers HTTP 400
#: ``Invalid JSON payload received. Unknown name "additionalProperties" at
#: 'generation_config.response_schema': Cannot find field.`` (also for ``$schema``, ``$defs``).
DROPPABLE_KEYWORDS = ("additionalProperties", "$schema", "$defs")


def refused_keywords(error_body: str) -> frozenset[str]:
    """The schema keywords a refusal names as unknown (``Unknown name "additionalProperties"``,
    as Gemini words it), among those that can be dropped without changing what is asked."""
    return frozenset(k for k in DROPPABLE_KEYWORDS
                     if f'Unknown name \\"{k}\\"' in error_body or f'Unknown name "{k}"' in error_body)


def response_format(direction: Direction, candidate_ids: list[str], mode: str, subject_id: str | None = None,
                    drop: frozenset[str] = frozenset(), reasoning: str = "full") -> dict[str, Any] | None:
    """The request's ``response_format`` in structured-output ``mode`` (None for ``none``)."""
    schema = verdict_schema(direction, candidate_ids, subject_id, drop, reasoning)
    if mode == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": schema}}
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


def schema_instruction(direction: Direction, candidate_ids: list[str], drop: frozenset[str] = frozenset(),
                       reasoning: str = "full") -> str:
    """Appended to the system message when the server may not read the schema: mode ``none``,
    and ``json_object``, which OpenAI and DeepSeek take without a schema (llama-cpp-python reads
    the ``schema`` beside it). It names JSON: DeepSeek's JSON Output wants the word "json" in the
    prompt (https://api-docs.deepseek.com/guides/json_mode); "JSON" is that word, as OpenAI
    checks it (in any case)."""
    return ("\n\nAnswer with one JSON object and nothing else, following this JSON schema:\n"
            + canonical_json(verdict_schema(direction, candidate_ids, drop=drop, reasoning=reasoning)))


#: How the question's own message names the candidates proved different (:func:`last_message`).
PROVED_NOTE = "Proved different"


def last_message(task: JudgeTask, proved: tuple[str, ...] = ()) -> dict[str, str]:
    """The one message that differs between the calls of a direction: the fact judged, and the
    candidates the rules proved different from it (``proved``: the hybrid judge's)."""
    content = subject_message(task.direction, task.subject, task.fields)
    if proved:
        content += (f"\n\n{PROVED_NOTE} by exact rules (an identifier, number or date differs), so never the "
                    f"match: {', '.join(proved)}")
    return {"role": "user", "content": content}


@dataclass(eq=False)
class Prefix:
    """The messages every call of one direction of a document starts with (of one fact_type's
    with ``candidates: same_type``, or of one shortlist), byte-identical so a provider caches them
    once, and ``cache_key``, the name they are sent under as OpenAI's ``prompt_cache_key``.
    ``plans``: what an LLM judge works out once about requests with this prefix, per request
    shape; kept here, so it is freed with the direction."""

    messages: list[dict[str, str]]
    cache_key: str = ""
    plans: dict[Any, Any] = field(default_factory=dict, repr=False)


def direction_prefix(direction: Direction, candidates: list[dict[str, Any]], config: JudgeConfig,
                     doc_id: str = "", fields: dict[str, tuple[str, ...]] | None = None) -> Prefix:
    """The prefix of one direction of document ``doc_id`` against ``candidates``; its cache key is
    derived from the document's content, so providers route its calls to the same cache."""
    messages = prefix_messages(direction, candidates, config, fields)
    digest = hashlib.sha256(canonical_json(messages).encode("utf-8")).hexdigest()[:16]
    label = f"{doc_id[:24]}-" if doc_id else ""
    return Prefix(messages, f"factjudge-{label}{direction}-{digest}")


@dataclass(frozen=True)
class Asked:
    """A question as an LLM is asked it: the task, and the prefix its direction's calls share."""

    task: JudgeTask
    prefix: Prefix
    #: Candidates of the prefix the rules proved different (the hybrid judge's), named in the
    #: question's own message instead of a prefix of their own without them: the prefix stays
    #: the one a provider has cached (judges/llm/direction.py).
    proved: tuple[str, ...] = ()

    @cached_property
    def last(self) -> dict[str, str]:
        """The question's own message (:func:`last_message`), built once however often the
        question is counted, keyed and sent."""
        return last_message(self.task, self.proved)

    def messages(self) -> list[dict[str, str]]:
        return [*self.prefix.messages, self.last]

    def with_candidates(self, candidates: list[dict[str, Any]]) -> Asked:
        """The same question over another candidate list (a shortlist), with its own prefix."""
        t = self.task
        task = JudgeTask(t.direction, t.subject, candidates, t.config, t.fields)
        return Asked(task, Prefix(prefix_messages(t.direction, candidates, t.config, t.fields),
                                  self.prefix.cache_key))


def parse_answer(task: JudgeTask, content: str | None) -> Verdict:
    """Validate an answer in code, whatever the server promised about structured output."""
    _, _, negative, id_key, matched_key = _SIDES[task.direction]
    if not content or not content.strip():  # DeepSeek's JSON Output may answer blank content
        raise InvalidAnswer("the answer was empty")
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise InvalidAnswer(f"the answer is not valid JSON ({exc})") from None
    except RecursionError:
        raise InvalidAnswer("the answer is nested too deeply") from None
    if not isinstance(data, dict):
        raise InvalidAnswer("the answer must be a JSON object")
    asked = task.config.reasoning != "none"
    expected = {id_key, "reasoning", matched_key} if asked else {id_key, matched_key}
    if not asked:  # a model (or server) that reasons anyway: its reasoning is taken and dropped
        data.pop("reasoning", None)
    if set(data) != expected:
        missing, extra = sorted(expected - set(data)), sorted(set(data) - expected)
        raise InvalidAnswer(f"the answer must have exactly the keys {sorted(expected)}"
                            f" (missing {missing}, unexpected {extra})")
    if data[id_key] != task.subject_id:
        raise InvalidAnswer(f"{id_key} must be {task.subject_id!r}, got {quoted(data[id_key])}")
    if asked and not isinstance(data["reasoning"], str):
        raise InvalidAnswer("reasoning must be a string")
    matched = data[matched_key]
    status: PassStatus = negative if matched is None else "TP"
    if matched is not None:
        if not isinstance(matched, str) or matched not in task.candidate_ids:
            raise InvalidAnswer(f"{matched_key} {quoted(matched)} is not the id of a candidate (or null)")
        problem = fact_type_problem(task, matched)
        if problem:
            raise InvalidAnswer(problem)
    # the one place an LLM's reasoning enters a verdict: bounded here (see REASONING_LIMIT)
    return Verdict(fact_id=task.subject_id, status=status, matched_id=matched,
                   reasoning=cut_text(data["reasoning"], REASONING_LIMIT) if asked else NO_REASONING)


def reask_messages(content: str | None, problem: str) -> list[dict[str, str]]:
    """What follows an invalid answer when the question is asked again: the answer, and what was
    wrong with it (live re-asks and batch re-exports send the same)."""
    return [{"role": "assistant", "content": content or ""},
            {"role": "user", "content": f"Your answer was invalid: {problem}. Answer again, following "
                                        "the JSON schema exactly."}]


# --- prompt budget and shortlisting -----------------------------------------------------------

#: OpenAI structured outputs: at most 1000 enum values per schema (3 are ours), and at most
#: 15,000 characters of enum strings once an enum has more than 250 values.
MAX_CANDIDATE_ENUM = 997
_ENUM_CHAR_LIMIT, _ENUM_CHAR_LIMIT_ABOVE = 15_000, 250


def _enum_size_fits(n: int, chars: int) -> bool:
    return n <= MAX_CANDIDATE_ENUM and (n <= _ENUM_CHAR_LIMIT_ABOVE or chars <= _ENUM_CHAR_LIMIT)


def enum_fits(ids: list[str]) -> bool:
    return _enum_size_fits(len(ids), sum(map(len, ids)))


def _ranking_text(fact: dict[str, Any]) -> str:
    return " ".join(canonical_json(v) if not isinstance(v, str) else v
                    for k, v in fact.items() if k not in ("id", "fact_type"))


def rank_candidates(subject: dict[str, Any], candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Same fact_type first, then lexical similarity to the subject, then input order."""
    from rapidfuzz import fuzz

    text = _ranking_text(subject)
    scored = [(c.get("fact_type") != subject.get("fact_type"), -fuzz.token_set_ratio(text, _ranking_text(c)), i)
              for i, c in enumerate(candidates)]
    return [candidates[i] for *_, i in sorted(scored)]


@dataclass(frozen=True)
class PreparedCall:
    asked: Asked          # possibly with a shortlisted candidate list
    prompt_tokens: int    # counted before sending (messages + schema)
    note: str = ""        # says when the candidate list was shortlisted


def prepare_call(asked: Asked, count_prompt: Callable[[Asked], int],
                 count_text: Callable[[str], int]) -> PreparedCall:
    """Fit a call into ``config.max_prompt_tokens`` and the enum limit, shortlisting if needed.

    ``count_prompt(asked)`` counts a whole request (messages and schema) as the judge sends it;
    ``count_text(str)`` counts a piece of text. Raises :class:`PromptTooLarge`."""
    task = asked.task
    config = task.config
    budget, top_k = config.max_prompt_tokens, config.shortlist_top_k
    tokens = count_prompt(asked)
    n = len(task.candidates)
    if top_k is None and tokens <= budget and enum_fits(task.candidate_ids):
        return PreparedCall(asked, tokens)
    used = count_prompt(asked.with_candidates([]))
    kept: list[dict[str, Any]] = []
    id_chars = 0
    # a candidate of another fact_type can never match: a shortlist holds only the subject's type
    same_type = [c for c in task.candidates if c.get("fact_type") == task.subject.get("fact_type")]
    for cand in rank_candidates(task.subject, same_type)[: top_k or n]:
        if len(kept) == MAX_CANDIDATE_ENUM:
            break
        # the candidate's line in the prompt (the first one's with its table head) plus its id in the enum
        line = fact_tables([cand], task.fields) if not kept else _row(cand, _columns([cand], task.fields))
        cost = count_text(line) + count_text(canonical_json(cand["id"])) + 2
        if used + cost > budget or not _enum_size_fits(len(kept) + 1, id_chars + len(cand["id"])):
            continue  # a smaller candidate further down may still fit
        kept.append(cand)
        used += cost
        id_chars += len(cand["id"])
    if len(kept) == n:  # nothing was cut: keep the shared prefix (and its provider cache entry)
        return PreparedCall(asked, tokens)
    if not kept and same_type:
        raise PromptTooLarge(f"prompt does not fit max_prompt_tokens={budget} even with one candidate "
                             f"({used} tokens without any)")
    order = {id(c): i for i, c in enumerate(task.candidates)}
    short = asked.with_candidates(sorted(kept, key=lambda c: order[id(c)]))
    # a table's columns are its facts' fields together: a row may hold empty cells its own count missed
    while len(kept) > 1 and count_prompt(short) > budget:
        kept.pop()  # the lowest ranked
        short = asked.with_candidates(sorted(kept, key=lambda c: order[id(c)]))
    why = (f"shortlist_top_k={top_k}" if top_k is not None and len(kept) == min(top_k, n)
           else f"max_prompt_tokens={budget}" if tokens > budget else "the schema's enum limit")
    note = (f"context truncated: {len(kept)} of {n} candidates kept ({why}): its fact_type, by "
            "lexical similarity")
    return PreparedCall(short, count_prompt(short), note)
