"""Prompts, response schemas and answer validation for the per-fact judge calls.

Layout is pinned for provider prefix caching: the system message and the candidate list are
byte-identical for every call of one direction in one document; the single fact judged comes last.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .models import Direction, JudgeConfig, Verdict

#: Bumped whenever the wording or layout of the prompts changes (part of response-cache keys).
PROMPT_FORMAT_VERSION = "1"

# Per direction: (subject side, candidate side, negative status, id key, matched key)
_SIDES: dict[str, tuple[str, str, str, str, str]] = {
    "gold": ("GOLD", "PREDICTED", "FN", "gold_fact_id", "matched_predicted_id"),
    "predicted": ("PREDICTED", "GOLD", "FP", "predicted_fact_id", "matched_gold_id"),
}


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def negative_status(direction: Direction) -> str:
    return _SIDES[direction][2]


def system_message(direction: Direction, config: JudgeConfig) -> str:
    subject, other, negative, _, matched_key = _SIDES[direction]
    lines = [
        "You judge the output of a fact-extraction system against a reference.",
        f"You are given a list of {other} facts (the candidates) and then one {subject} fact.",
        f"Decide whether one of the {other} candidates states the same fact as the {subject} fact,",
        "under the matching rules below. Compare meaning, not formatting: units, number formats,",
        "date formats and wording may differ; facts of different fact_type never match.",
        f"- If exactly one candidate matches (or several do and one is clearly the best), answer "
        f"status \"TP\" and put its id in {matched_key}.",
        f"- If no candidate matches, answer status \"{negative}\" and {matched_key} null.",
        "Write your reasoning first, field by field, then decide. Use only ids that appear in the"
        " candidate list.",
        "",
        "Matching rules:",
    ]
    if config.matching_rules:
        lines += [f"- {r if isinstance(r, str) else canonical_json(r)}" for r in config.matching_rules]
    else:
        lines.append("- (none beyond the above)")
    if config.fields:
        lines += ["", "Fields to compare: " + ", ".join(config.fields)]
    if config.tolerances:
        lines += ["", "Numeric tolerances per field (a value matches when within either bound):"]
        for name, tol in config.tolerances.items():
            lines.append(f"- {name}: {canonical_json(tol.model_dump(exclude_none=True))}")
    return "\n".join(lines)


def candidates_message(direction: Direction, candidates: list[dict[str, Any]]) -> str:
    other = _SIDES[direction][1]
    body = "\n".join(canonical_json(c) for c in candidates)
    return f"{other} facts (candidates), one JSON object per line:\n{body}"


def subject_message(direction: Direction, fact: dict[str, Any]) -> str:
    return f"{_SIDES[direction][0]} fact to judge:\n{canonical_json(fact)}"


def prefix_messages(
    direction: Direction, candidates: list[dict[str, Any]], config: JudgeConfig
) -> list[dict[str, str]]:
    """The shared prefix of every call of one direction in one document."""
    return [
        {"role": "system", "content": system_message(direction, config)},
        {"role": "user", "content": candidates_message(direction, candidates)},
    ]


def response_format(direction: Direction, subject_id: str, candidate_ids: list[str]) -> dict[str, Any]:
    """OpenAI strict ``json_schema`` response format; reasoning comes before the decision."""
    _, _, negative, id_key, matched_key = _SIDES[direction]
    schema = {
        "type": "object",
        "properties": {
            id_key: {"type": "string", "enum": [subject_id]},
            "reasoning": {"type": "string"},
            "status": {"type": "string", "enum": ["TP", negative]},
            matched_key: {"anyOf": [{"type": "string", "enum": list(candidate_ids)}, {"type": "null"}]},
        },
        "required": [id_key, "reasoning", "status", matched_key],
        "additionalProperties": False,
    }
    return {
        "type": "json_schema",
        "json_schema": {"name": f"{direction}_fact_verdict", "strict": True, "schema": schema},
    }


@dataclass(frozen=True)
class JudgeTask:
    """One question for a judge: is ``subject`` matched by one of ``candidates``?"""

    direction: Direction
    subject: dict[str, Any]
    candidates: list[dict[str, Any]]
    config: JudgeConfig
    prefix: list[dict[str, str]]
    #: Stable name of the document and direction, for provider prompt caches.
    cache_key: str = ""

    @property
    def subject_id(self) -> str:
        return self.subject["id"]

    @property
    def candidate_ids(self) -> list[str]:
        return [c["id"] for c in self.candidates]

    def messages(self) -> list[dict[str, str]]:
        return [*self.prefix, {"role": "user", "content": subject_message(self.direction, self.subject)}]

    def response_format(self) -> dict[str, Any]:
        return response_format(self.direction, self.subject_id, self.candidate_ids)


class InvalidAnswer(ValueError):
    """The judge's answer breaks the schema or the rules; the message is told back to the model."""


def parse_answer(task: JudgeTask, content: str | None) -> Verdict:
    """Validate an answer in code, whatever the server promised about structured output."""
    _, _, negative, id_key, matched_key = _SIDES[task.direction]
    if not content:
        raise InvalidAnswer("the answer was empty")
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise InvalidAnswer(f"the answer is not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InvalidAnswer("the answer must be a JSON object")
    expected = {id_key, "reasoning", "status", matched_key}
    if set(data) != expected:
        missing, extra = sorted(expected - set(data)), sorted(set(data) - expected)
        raise InvalidAnswer(f"the answer must have exactly the keys {sorted(expected)}"
                            f" (missing {missing}, unexpected {extra})")
    if data[id_key] != task.subject_id:
        raise InvalidAnswer(f"{id_key} must be {task.subject_id!r}, got {data[id_key]!r}")
    if not isinstance(data["reasoning"], str):
        raise InvalidAnswer("reasoning must be a string")
    status, matched = data["status"], data[matched_key]
    if status == "TP":
        if matched is None:
            raise InvalidAnswer(f"status TP requires {matched_key} to name a candidate")
        if matched not in task.candidate_ids:
            raise InvalidAnswer(f"{matched_key} {matched!r} is not the id of a candidate")
    elif status == negative:
        if matched is not None:
            raise InvalidAnswer(f"status {negative} requires {matched_key} to be null")
    else:
        raise InvalidAnswer(f"status must be \"TP\" or \"{negative}\", got {status!r}")
    return Verdict(fact_id=task.subject_id, status=status, matched_id=matched,
                   reasoning=data["reasoning"])


# --- prompt budget and shortlisting -----------------------------------------------------------

#: OpenAI structured outputs: at most 1000 enum values per schema (3 are ours), and at most
#: 15,000 characters of enum strings once an enum has more than 250 values.
MAX_CANDIDATE_ENUM = 997
_ENUM_CHAR_LIMIT, _ENUM_CHAR_LIMIT_ABOVE = 15_000, 250


class PromptTooLarge(ValueError):
    """Not even one candidate fits the prompt budget."""


def _enum_size_fits(n: int, chars: int) -> bool:
    return n <= MAX_CANDIDATE_ENUM and (n <= _ENUM_CHAR_LIMIT_ABOVE or chars <= _ENUM_CHAR_LIMIT)


def enum_fits(ids: list[str]) -> bool:
    return _enum_size_fits(len(ids), sum(map(len, ids)))


def _fact_text(fact: dict[str, Any]) -> str:
    return " ".join(canonical_json(v) if not isinstance(v, str) else v
                    for k, v in fact.items() if k not in ("id", "fact_type"))


def rank_candidates(subject: dict[str, Any], candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Same fact_type first, then lexical similarity to the subject, then input order."""
    from rapidfuzz import fuzz

    text = _fact_text(subject)
    scored = [(c.get("fact_type") != subject.get("fact_type"), -fuzz.token_set_ratio(text, _fact_text(c)), i)
              for i, c in enumerate(candidates)]
    return [candidates[i] for *_, i in sorted(scored)]


@dataclass(frozen=True)
class PreparedCall:
    task: JudgeTask       # possibly with a shortlisted candidate list
    prompt_tokens: int    # counted before sending (messages + schema)
    note: str = ""        # says when the candidate list was shortlisted


def prepare_call(task: JudgeTask, count_text: Any, count_messages: Any) -> PreparedCall:
    """Fit a call into ``config.max_prompt_tokens`` and the enum limit, shortlisting if needed.

    ``count_text(str) -> int`` and ``count_messages(messages) -> int`` count tokens.
    """
    config = task.config
    budget, top_k = config.max_prompt_tokens, config.shortlist_top_k
    tokens = count_messages(task.messages()) + count_text(canonical_json(task.response_format()))
    n = len(task.candidates)
    if top_k is None and tokens <= budget and enum_fits(task.candidate_ids):
        return PreparedCall(task, tokens)
    empty = JudgeTask(task.direction, task.subject, [], config,
                      prefix_messages(task.direction, [], config), task.cache_key)
    used = count_messages(empty.messages()) + count_text(canonical_json(empty.response_format()))
    kept: list[dict[str, Any]] = []
    id_chars = 0
    for cand in rank_candidates(task.subject, task.candidates)[: top_k or n]:
        if len(kept) == MAX_CANDIDATE_ENUM:
            break
        # the candidate's line in the prompt plus its id in the schema enum
        cost = count_text(canonical_json(cand)) + count_text(canonical_json(cand["id"])) + 1
        if used + cost > budget or not _enum_size_fits(len(kept) + 1, id_chars + len(cand["id"])):
            continue  # a smaller candidate further down may still fit
        kept.append(cand)
        used += cost
        id_chars += len(cand["id"])
    if len(kept) == n:  # nothing was cut: keep the shared prefix (and its provider cache entry)
        return PreparedCall(task, tokens)
    if not kept:
        raise PromptTooLarge(f"prompt does not fit max_prompt_tokens={budget} even with one candidate "
                             f"({used} tokens without any)")
    order = {id(c): i for i, c in enumerate(task.candidates)}
    kept.sort(key=lambda c: order[id(c)])
    why = (f"shortlist_top_k={top_k}" if top_k is not None and len(kept) == min(top_k, n)
           else f"max_prompt_tokens={budget}" if tokens > budget else "the schema's enum limit")
    short = JudgeTask(task.direction, task.subject, kept, config,
                      prefix_messages(task.direction, kept, config), task.cache_key)
    tokens = count_messages(short.messages()) + count_text(canonical_json(short.response_format()))
    note = (f"context truncated: {len(kept)} of {n} candidates kept ({why}), chosen by fact_type "
            "and lexical similarity")
    return PreparedCall(short, tokens, note)
