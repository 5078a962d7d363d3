"""What the document view of report.html embeds: for each of the worst documents its facts, the
matched pairs and the closest-fact links, as JSON the page's script reads (never as markup).

:func:`json_for_script` writes that JSON so it cannot end the ``<script type="application/json">``
element it sits in: ``<``, ``>`` and ``&`` as ``\\u003c`` etc. (so no ``</script>``, no ``<!--``)."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..core.grounding import Finder, Span, ground, segments
from ..models import Direction, status_of, verdict_of
from .format import fmt
from .rows import ClosestMap, closest_detail, shown_fields

#: Defaults of the document view: how many documents and how much JSON report.html embeds.
MAX_DOCUMENTS = 50
MAX_DOCUMENT_BYTES = 5_000_000
#: A document's text is shown up to this many characters.
MAX_TEXT_CHARS = 100_000


#: One encoder for every call: ``json.dumps`` with options builds an encoder a call (a report
#: and review.html ask for about 10,000).
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def json_for_script(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``</script>``, no ``<!--``."""
    return (_COMPACT(data)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _source(payload: dict[str, Any], text: str, find: Callable[[str], Finder]) -> None:
    """The document's text in ``payload`` as pieces, each marked with the facts whose evidence
    covers it (``g3``, ``p1``: the cards' keys), and each prediction tagged found or not found in
    it (:func:`~factjudge.core.grounding.ground`). A text over :data:`MAX_TEXT_CHARS` is cut."""
    cut = text[:MAX_TEXT_CHARS]
    finder: Finder | None = None

    def lazy(value: str) -> Sequence[Span]:
        nonlocal finder
        finder = finder or find(text)
        return finder(value)

    marks: list[tuple[Span, str]] = []
    for side, key in (("gold", "g"), ("predicted", "p")):
        for i, (fact, shown) in enumerate(zip(payload.pop(f"_{side}"), payload[side], strict=True)):
            if status_of(fact) == "OUT_OF_SCOPE":
                continue
            g = ground(fact, text, lazy)
            marks += [(span, f"{key}{i}") for span in g.spans]
            if side == "predicted":
                shown["source"] = g.tag
                shown["ungrounded"] = g.ungrounded
    payload["text"] = [[piece, keys] for piece, keys in segments(cut, marks)]
    payload["text_cut"] = len(text) - len(cut)


def _doc_payload(line: Mapping[str, Any],
                 closest: Callable[[Mapping[str, Any]], ClosestMap] = closest_detail) -> dict[str, Any]:
    """What the document view needs of one result line (indices instead of ids for the links)."""
    near_of = {key: (fact, round(near.score, 1)) for key, (fact, near) in closest(line).items()}
    gold, pred = line.get("gold_facts") or [], line.get("predicted_facts") or []
    g_index = {str(f.get("id")): i for i, f in enumerate(gold)}
    p_index = {str(f.get("id")): j for j, f in enumerate(pred)}
    pairs: dict[tuple[int, int], None] = {}
    for i, f in enumerate(gold):
        for m in verdict_of(f).get("matched_ids") or []:
            if str(m) in p_index:
                pairs[(i, p_index[str(m)])] = None
    for j, f in enumerate(pred):
        for m in verdict_of(f).get("matched_ids") or []:
            if str(m) in g_index:
                pairs[(g_index[str(m)], j)] = None
    near: list[list[Any]] = []
    seen: set[tuple[int, int]] = set()

    def fact(f: Mapping[str, Any], side: Direction) -> dict[str, Any]:
        hit, verdict = near_of.get((side, str(f.get("id")))), verdict_of(f)
        return {"id": str(f.get("id")), "fact_type": str(f.get("fact_type")),
                "status": str(verdict.get("status")), "fields": shown_fields(f),
                "note": verdict.get("description") or "", "reasoning": verdict.get("reasoning") or "",
                "closest": None if hit is None else {"id": str(hit[0].get("id")), "score": hit[1]}}

    sides: tuple[tuple[Direction, list[Any], dict[str, int]], ...] = (
        ("gold", gold, p_index), ("predicted", pred, g_index))
    for side, facts, index in sides:
        for k, f in enumerate(facts):
            hit = near_of.get((side, str(f.get("id"))))
            if hit is None:
                continue
            other = index[str(hit[0].get("id"))]
            pair = (k, other) if side == "gold" else (other, k)
            if pair not in seen and pair not in pairs:
                seen.add(pair)
                near.append([pair[0], pair[1], "g" if side == "gold" else "p", hit[1]])
    m = line.get("metrics") or {}
    info = (f"{len(gold)} gold, {len(pred)} predicted facts; P {fmt(m.get('precision'))} "
            f"R {fmt(m.get('recall'))} F1 {fmt(m.get('f1'))}; FN {m.get('fn', 0)}, "
            f"FP {m.get('fp', 0)}, ERROR {m.get('errors', 0)}; {len(pairs)} matched pairs")
    return {"doc_id": str(line.get("doc_id")),
            "label": f"{line.get('doc_id')} \u2014 F1 {fmt(m.get('f1'))}, FN {m.get('fn', 0)}, "
                     f"FP {m.get('fp', 0)}, ERROR {m.get('errors', 0)}",
            "info": info,
            "gold": [fact(f, "gold") for f in gold], "predicted": [fact(f, "predicted") for f in pred],
            "pairs": [list(p) for p in pairs], "near": near}


def embed_documents(documents: Iterable[Mapping[str, Any]], max_documents: int = MAX_DOCUMENTS,
                    max_bytes: int = MAX_DOCUMENT_BYTES, texts: Mapping[str, str] | None = None,
                    find: Callable[[str], Finder] | None = None,
                    closest: Callable[[Mapping[str, Any]], ClosestMap] = closest_detail
                    ) -> tuple[list[dict[str, Any]], int]:
    """The document-view payloads of ``documents`` (in order) that fit: at most ``max_documents``,
    at most ``max_bytes`` of JSON in all (a document that would pass the cap is left out and the
    next ones are tried). ``texts``: doc_id -> the document's text, shown with each fact's evidence
    marked (``find`` searches a value in a text: :func:`factjudge.judges.rules.locate.finder`).
    ``closest``: :func:`~.rows.closest_detail` or a :class:`~.rows.ClosestMemo` holding it.
    Returns (payloads, documents left out for size)."""
    out: list[dict[str, Any]] = []
    size = left_out = 0
    for line in documents:
        if len(out) >= max_documents:
            break
        payload = _doc_payload(line, closest)
        text = (texts or {}).get(str(line.get("doc_id")))
        if text is not None and find is not None:
            payload["_gold"], payload["_predicted"] = line.get("gold_facts") or [], line.get("predicted_facts") or []
            _source(payload, text, find)
        n = len(json_for_script(payload).encode("utf-8")) + 1
        if size + n > max_bytes:
            left_out += 1
            continue
        out.append(payload)
        size += n
    return out, left_out


def first_with_both_sides(payloads: list[dict[str, Any]]) -> int:
    """Where the document view opens: the worst document with facts on both sides (the worst one
    may have no prediction at all: an empty right half, no line to follow), else the worst."""
    return next((i for i, p in enumerate(payloads) if p["gold"] and p["predicted"]), 0)
