"""review.html: a person reviews the judge's decisions of a run, most informative first, and
exports them as ``review.jsonl`` (:mod:`factjudge.io.review`).

Why a static page beside report.html rather than a local server: it opens from a ``file://`` URL,
offline, from a CI artifact, with nothing listening on a port and no token to leak; progress is
kept in the browser's ``localStorage`` under the run's identity, and the export is a download the
person saves. It holds every reviewable decision of the run (up to :data:`MAX_ITEMS`), where
report.html's document view holds only the worst documents.

The queue (:func:`review_queue`) puts first what most changes the figures' uncertainty: a miss or
an extra with a close fact on the other side (a near miss: the judge may have missed a link), an
extra with nothing close (a possible gold omission; first among them those found in the
source text), a link the LLM made where the rules judge
could not confirm it (hybrid) or on a low-confidence prediction, then the other links, then
misses with nothing close. Values are embedded as JSON the page's script reads
(:func:`~.docview.json_for_script`) and shown with ``textContent`` only.
"""
from __future__ import annotations

import heapq
from collections.abc import Container, Iterable, Mapping
from typing import Any

from markupsafe import Markup

from ..core.aggregate import Summary
from ..core.review import EXPORT_KIND, reviews_needed, run_identity
from ..models import own_fields, status_of, verdict_of
from .docview import json_for_script
from .format import fmt
from .rows import ROW_STATUSES, ClosestMap, closest_detail
from .text import reviewed_line

#: At most this many decisions, and this much JSON, are embedded (most informative first).
MAX_ITEMS = 3000
MAX_BYTES = 8_000_000
#: The interval widths the "reviews needed" table is worked out for.
WIDTHS = (0.10, 0.05)
#: The judge's link precision and recall assumed when the run has no calibration.
ASSUMED_LINK_RATE = 0.9
#: Where the hybrid judge says the LLM decided (judges/hybrid.py).
LLM_DECIDED = "[decided by the LLM judge]"


def input_fact(fact: Mapping[str, Any]) -> dict[str, Any]:
    """A result fact as it was given: without the judge's verdict."""
    return own_fields(fact)


def _confidence(fact: Mapping[str, Any]) -> float | None:
    value = fact.get("confidence")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    return None


def _item(doc_id: str, kind: str, gold: Mapping[str, Any] | None, pred: Mapping[str, Any] | None,
          priority: float, reason: str, similarity: float | None = None) -> dict[str, Any]:
    subject = gold if kind != "extra" else pred
    assert subject is not None
    verdict = verdict_of(subject)
    return {"key": json_for_script([doc_id, kind, gold and str(gold.get("id")), pred and str(pred.get("id"))]),
            "doc_id": doc_id, "kind": kind, "priority": round(priority, 4), "reason": reason,
            "similarity": similarity, "status": str(verdict.get("status")),
            "gold": None if gold is None else input_fact(gold),
            "predicted": None if pred is None else input_fact(pred),
            "reasoning": str(verdict.get("reasoning") or ""), "note": str(verdict.get("description") or "")}


#: A decision before its item is made: ``_item``'s arguments (the priority the fifth).
_Decision = tuple[str, str, Mapping[str, Any] | None, Mapping[str, Any] | None, float, str, float | None]


def line_items(line: Mapping[str, Any], found: Container[tuple[str, str]] = (),
               near: ClosestMap | None = None) -> list[dict[str, Any]]:
    """The reviewable decisions of one result line: each link, each miss, each extra. ``found``:
    (doc_id, id) of the FP predictions found in their document's text (possible gold omissions);
    ``near``: the line's :func:`~.rows.closest_detail`, when it was worked out already."""
    return [_item(*d) for d in _decisions(line, found, near) if d is not None]


#: The highest priority of a link (one on a prediction of confidence 0).
TOP_LINK = 3


def _link(doc_id: str, g: Mapping[str, Any], verdict: Mapping[str, Any], p: Mapping[str, Any]) -> _Decision:
    conf = _confidence(p)
    if LLM_DECIDED in str(verdict.get("reasoning") or ""):
        return (doc_id, "link", g, p, 2.5, "LLM link the rules judge could not confirm", None)
    if conf is not None and conf < 0.8:
        return (doc_id, "link", g, p, 2 + (1 - conf), f"link on a low-confidence prediction ({conf:g})", None)
    return (doc_id, "link", g, p, 1, "link", None)


def _decisions(line: Mapping[str, Any], found: Container[tuple[str, str]],
               near: ClosestMap | None, links: bool = True) -> list[_Decision | None]:
    """:func:`line_items` before each item is made: the queue makes only those it keeps (a
    run's decisions are one per fact; it keeps 3,000). ``links`` False: each link is None in
    its place, counted but not made (the queue keeps none below :data:`TOP_LINK`)."""
    doc_id = str(line.get("doc_id"))
    gold, pred = line.get("gold_facts") or [], line.get("predicted_facts") or []
    by_id = {str(f.get("id")): f for f in pred}
    if near is None:
        near = closest_detail(line, ROW_STATUSES)
    items: list[_Decision | None] = []
    # a miss and an extra closest to each other are one decision: listed once, as the miss
    shown: set[tuple[str, str]] = set()
    for g in gold:
        verdict = verdict_of(g)
        if verdict.get("status") == "TP":
            for pid in verdict.get("matched_ids") or []:
                p = by_id.get(str(pid))
                if p is not None:
                    items.append(_link(doc_id, g, verdict, p) if links else None)
        elif verdict.get("status") == "FN":
            hit = near.get(("gold", str(g.get("id"))))
            if hit is None:
                items.append((doc_id, "miss", g, None, 0.5, "miss: nothing predicted of this type is close", None))
            else:
                score = round(hit[1].score, 1)
                shown.add((str(g["id"]), str(hit[0]["id"])))
                items.append((doc_id, "miss", g, hit[0], 3 + score / 100,
                              f"near miss: closest predicted fact, similarity {score:g}", score))
    for p in pred:
        if status_of(p) != "FP":
            continue
        hit = near.get(("predicted", str(p.get("id"))))
        if hit is not None and (str(hit[0].get("id")), str(p.get("id"))) in shown:
            continue
        if hit is None and (doc_id, str(p.get("id"))) in found:
            items.append((doc_id, "extra", None, p, 2.9, "possible gold omission: found in the source, "
                          "no gold fact of this type is close", None))
        elif hit is None:
            items.append((doc_id, "extra", None, p, 2.8, "possible gold omission: no gold fact of "
                          "this type is close", None))
        else:
            score = round(hit[1].score, 1)
            items.append((doc_id, "extra", hit[0], p, 3 + score / 100,
                          f"near miss: closest gold fact, similarity {score:g}", score))
    return items


class ReviewQueue:
    """The review queue built one result line at a time (dataset order), holding only the
    ``max_items`` most informative decisions: a run's decisions are one per fact, and a run of a
    million facts held them all. ``found`` as for :func:`line_items`."""

    def __init__(self, max_items: int = MAX_ITEMS, found: Container[tuple[str, str]] = ()) -> None:
        self.max_items, self.found = max_items, found
        self.total = 0
        #: (doc_id, input_sha256) of every line, for the run's identity.
        self.inputs: list[tuple[str, str]] = []
        # the least informative first; a decision's item is made at the end, for those kept only: a
        # run's first 3,000 decisions were all made items, most to be replaced
        self._heap: list[tuple[tuple[float, int], _Decision]] = []

    def add(self, line: Mapping[str, Any], near: ClosestMap | None = None) -> None:
        self.inputs.append((str(line.get("doc_id")), str(line.get("input_sha256"))))
        # a full queue whose least informative decision is above every link's priority keeps no
        # link: those are counted, not made (most of a run's decisions; the queue's add 36.6 -> 31.6 us
        # a 20-fact document of the 1M shape)
        full = len(self._heap) >= self.max_items
        for decision in _decisions(line, self.found, near, links=not (full and self._heap[0][0][0] >= TOP_LINK)):
            if decision is None:
                self.total += 1
                continue
            key = (round(decision[4], 4), -self.total)  # ties: the earlier first
            self.total += 1
            if len(self._heap) < self.max_items:
                heapq.heappush(self._heap, (key, decision))
            elif key > self._heap[0][0]:
                heapq.heapreplace(self._heap, (key, decision))

    def items(self, max_bytes: int = MAX_BYTES) -> tuple[list[dict[str, Any]], int]:
        """The kept decisions, most informative first, cut at ``max_bytes`` of JSON, and how many
        of the run's decisions are left out."""
        out, _, left_out = self._cut(max_bytes)
        return out, left_out

    def _cut(self, max_bytes: int) -> tuple[list[dict[str, Any]], list[str], int]:
        """:meth:`items` with each item's JSON (:func:`~.docview.json_for_script`), which its
        size was measured by: review.html embeds these, not the items encoded again."""
        out: list[dict[str, Any]] = []
        encoded: list[str] = []
        size = 0
        for _, decision in sorted(self._heap, reverse=True):
            item = _item(*decision)
            text = json_for_script(item)
            n = len(text.encode("utf-8")) + 1
            if size + n > max_bytes:
                break
            out.append(item)
            encoded.append(text)
            size += n
        return out, encoded, self.total - len(out)


def _data_json(data: Mapping[str, Any], encoded: list[str]) -> Markup:
    """``json_for_script(data)``, its items (last) joined from their JSON measured already:
    not encoding the 3,000 items again took review.html from 0.065 s to 0.037 s CPU (1,000 x 20 facts).
    The same text: the compact encoding of a list is its elements' joined by commas."""
    head = json_for_script({**data, "items": []})
    assert head.endswith('"items":[]}'), head[-40:]
    return Markup(f"{head[:-2]}{','.join(encoded)}]}}")


def review_queue(lines: Iterable[Mapping[str, Any]], max_items: int = MAX_ITEMS,
                 max_bytes: int = MAX_BYTES, found: Container[tuple[str, str]] = ()
                 ) -> tuple[list[dict[str, Any]], int]:
    """Every reviewable decision of the run, most informative first (ties in dataset order), cut
    at ``max_items`` and ``max_bytes`` of JSON; ``found`` as for :func:`line_items`. Returns
    (items, decisions left out)."""
    queue = ReviewQueue(max_items, found)
    for line in lines:
        queue.add(line)
    return queue.items(max_bytes)


def needed_rows(summary: Summary) -> tuple[str, list[list[str]]]:
    """How many reviewed pairs the judge-corrected precision and recall need for their intervals
    to be :data:`WIDTHS` wide, and from which link rates."""
    corrected = summary.judge_corrected or {}
    p_j = corrected.get("link_precision") or ASSUMED_LINK_RATE
    r_j = corrected.get("link_recall") or ASSUMED_LINK_RATE
    source = ("the run's judge calibration" if corrected else
              f"an assumed {ASSUMED_LINK_RATE:g} (the run has no judge calibration)")
    note = (f"Reviews needed for the judge-corrected figure's 95% interval to be this wide, from the "
            f"calibration alone, at the judge's link precision {p_j:.2f} and recall {r_j:.2f} "
            f"({source}); the export of these reviews is such a calibration (factjudge calibrate).")
    rows = []
    for name in ("precision", "recall"):
        raw = getattr(summary.micro, name)
        if raw is None:
            continue
        rows.append([name, fmt(raw), *(f"{reviews_needed(raw, p_j, r_j, w):,}" for w in WIDTHS)])
    return note, rows


def render_review(summary: Summary, lines: Iterable[Mapping[str, Any]] | ReviewQueue,
                  omissions: Container[tuple[str, str]] = ()) -> str:
    """review.html of a run: ``lines`` its result lines (dataset order), read once, or the
    :class:`ReviewQueue` they were added to; the run's identity
    (:func:`~factjudge.core.review.run_identity`) is taken from them and ``summary``.
    ``omissions``: (doc_id, id) of the FP predictions found in the source, put first among extras."""
    if isinstance(lines, ReviewQueue):
        queue = lines
    else:
        queue = ReviewQueue(found=omissions)
        for line in lines:
            queue.add(line)
    # the pages' module (with the document view's): at the end only, not at an eval run's start
    from .html import render_page

    items, encoded, left_out = queue._cut(MAX_BYTES)
    run = run_identity(summary.judge, summary.config, queue.inputs)
    note, rows = needed_rows(summary)
    m = summary.micro
    data = {"run": dict(run), "kind": EXPORT_KIND, "items": items}
    return render_page(
        "review.html.j2", summary=summary, items=items, left_out=left_out, data=data,
        data_json=_data_json(data, encoded),
        needed_note=note, needed_header=["figure", "now", *(f"width {w:g}" for w in WIDTHS)],
        needed=rows, judge_line=f"judge: P {fmt(m.precision)} R {fmt(m.recall)} F1 {fmt(m.f1)}",
        reviewed_line=reviewed_line(summary))
