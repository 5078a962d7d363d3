"""How far two judges agree: two ``eval`` output folders scored on the same inputs.

Facts are matched by ``(doc_id, side, id)``. A fact judged in both runs (neither ``ERROR`` nor
``OUT_OF_SCOPE`` in either) counts towards

- **per-fact agreement**: the same status and the same matched ids;
- **Cohen's kappa** per side, on the status alone: TP vs FN on the gold side, TP vs FP on the
  predicted side. ``kappa = (p_o - p_e) / (1 - p_e)``, with ``p_o`` the share of facts with the
  same status and ``p_e`` the agreement expected by chance from each run's share of TP; None when
  ``p_e`` is 1 (both runs gave every fact the same status) or nothing was compared.

Facts that are ``ERROR`` or ``OUT_OF_SCOPE`` in either run are left out of both and counted;
documents and facts present in one run only are counted and named, never silently dropped.
``results.jsonl`` is read one line at a time (both runs are indexed by byte offset), and every
line is checked for what agree reads and prints: a line or a ``summary.json`` that a person or
another tool broke is a one-line InputError naming the file, the line and the field.

Pure but for reading the two folders (:func:`agree`); :func:`render_text` and
:func:`render_html` turn the result into stdout text and a self-contained HTML page (the
template ``reports/templates/agree.html.j2``).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..core.metrics import cohen_kappa
from ..errors import InputError
from ..io.jsonl import check_json_value, json_type
from ..io.runfolder import SUMMARY, LineRef, RunFolder
from ..models import DIRECTIONS, VERDICT_KEY, Direction, NegativeStatus, Status, own_fields, status_of, verdict_of
from ..reports.html import render_page
from ..reports.text import config_hash

AGREE_HTML = "agree.html"
#: The page's title (agree.html.j2): how agree knows an agree.html in its output folder for its own.
AGREE_TITLE = "factjudge agreement"
SIDES: tuple[Direction, ...] = DIRECTIONS
NEGATIVE: dict[Direction, NegativeStatus] = {"gold": "FN", "predicted": "FP"}
#: Statuses that leave a fact out of agreement and kappa.
LEFT_OUT: tuple[Status, ...] = ("ERROR", "OUT_OF_SCOPE")
#: Document ids named per "only in one run" list (all are counted).
IDS_SHOWN = 20


@dataclass
class SideStats:
    """One side's comparison (gold or predicted)."""

    compared: int = 0        # judged in both runs
    agree: int = 0           # same status and same matched ids
    same_status: int = 0
    #: (A status, B status) over the compared facts, "TP" or the side's negative status
    tp_tp: int = 0
    tp_neg: int = 0
    neg_tp: int = 0
    neg_neg: int = 0
    errors: int = 0          # left out: ERROR in either run
    out_of_scope: int = 0    # left out: OUT_OF_SCOPE in either run (and not ERROR)
    only_a: int = 0          # in a shared document, in run A only
    only_b: int = 0

    @property
    def agreement(self) -> float | None:
        return self.agree / self.compared if self.compared else None

    @property
    def kappa(self) -> float | None:
        return cohen_kappa([[self.tp_tp, self.tp_neg], [self.neg_tp, self.neg_neg]])


@dataclass
class Difference:
    """A fact whose status or matched ids differ between the runs."""

    doc_id: str
    side: Direction
    id: str
    fact_type: str
    fact: dict[str, Any]                  # its input fields (as run A saw them)
    a: dict[str, Any]                     # status, matched_ids, reasoning, description, votes
    b: dict[str, Any]
    left_out: bool                        # ERROR or OUT_OF_SCOPE in a run: not in agreement/kappa


@dataclass
class Agreement:
    dir_a: str
    dir_b: str
    judge_a: str
    judge_b: str
    documents: int = 0                    # in both runs
    docs_only_a: int = 0
    docs_only_b: int = 0
    doc_ids_only_a: list[str] = field(default_factory=list)   # the first IDS_SHOWN
    doc_ids_only_b: list[str] = field(default_factory=list)
    facts_in_docs_only_a: int = 0         # facts of the documents run A alone has
    facts_in_docs_only_b: int = 0
    inputs_differ: int = 0                # same (doc, side, id), different input fields
    sides: dict[Direction, SideStats] = field(default_factory=lambda: {s: SideStats() for s in SIDES})
    differences: list[Difference] = field(default_factory=list)   # the first max_rows
    differences_total: int = 0
    differences_left_out: int = 0
    configs_differ: bool = False

    @property
    def compared(self) -> int:
        return sum(s.compared for s in self.sides.values())

    @property
    def agreement(self) -> float | None:
        n = self.compared
        return sum(s.agree for s in self.sides.values()) / n if n else None

    def total(self, key: str) -> int:
        return sum(getattr(s, key) for s in self.sides.values())


# --------------------------------------------------------------------------- reading


def judge_label(identity: object) -> str:
    """A short name of the judge of a run, from its ``summary.json``."""
    if not isinstance(identity, Mapping) or not identity:
        return "unknown judge"
    if identity.get("name") == "jury":
        names = [str(j.get("juror")) for j in identity.get("jurors") or [] if isinstance(j, Mapping)]
        return f"jury of {', '.join(names)}"
    label = str(identity.get("name", "judge"))
    if identity.get("model"):
        label += f" {identity['model']}"
    if identity.get("server"):
        label += f" at {identity['server']}"
    return label


def _differing(a: object, b: object) -> list[str]:
    """The keys whose values differ between two mappings (a non-mapping differs as a whole)."""
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        return []
    return sorted(k for k in {*a, *b} if a.get(k) != b.get(k))


def run_labels(sum_a: Mapping[str, Any], sum_b: Mapping[str, Any]) -> tuple[str, str]:
    """How agree names the two runs: the judge, and what else tells them apart. Two rules-judge
    runs with other tolerances were both "(rules)" (#24); now the judge settings that differ when
    the judges' names alone are equal, and the config's hash and differing keys when configs differ."""
    labels = [judge_label(s.get("judge")) for s in (sum_a, sum_b)]
    if labels[0] == labels[1]:
        keys = [k for k in _differing(sum_a.get("judge"), sum_b.get("judge")) if k not in ("name", "model", "server")]
        for i, s in enumerate((sum_a, sum_b)):
            judge = s.get("judge")
            values = judge if isinstance(judge, Mapping) else {}
            labels[i] += "".join(f", {k} {json.dumps(values.get(k), ensure_ascii=False)}" for k in keys)
    if sum_a.get("config") != sum_b.get("config"):
        keys = _differing(sum_a.get("config"), sum_b.get("config"))
        what = f" ({', '.join(keys)} differ)" if keys else ""
        for i, s in enumerate((sum_a, sum_b)):
            labels[i] += f", config {config_hash(s.get('config'))}{what}"
    return labels[0], labels[1]


def _summary(run: RunFolder) -> dict[str, Any]:
    """``summary.json`` of ``run``, checked for what agree prints of it (the judge's name)."""
    summary = run.summary()
    where = str(run.path / SUMMARY)
    check_json_value(summary, where)  # a lone surrogate in the judge's name would fail when printed
    judge = summary.get("judge")
    jurors = judge.get("jurors") if isinstance(judge, Mapping) else None
    if jurors is not None and not isinstance(jurors, list):
        raise InputError(f"{where}: field 'judge.jurors': must be a list of jurors, got {json_type(jurors)}")
    return summary


def _id_problem(value: object) -> str | None:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    return f"a fact id is a string or an integer, got {json_type(value)}"


def _fact_problem(fact: Mapping[str, Any], at: str) -> tuple[str, str] | None:
    """(field, problem) of the first field of a judged fact that agree cannot compare, or None.
    (``result_line_problem`` checked that it has an ``id`` and a string ``status``.)"""
    if problem := _id_problem(fact["id"]):
        return f"{at}.id", problem
    verdict = verdict_of(fact)
    if verdict is not fact:
        at = f"{at}.{VERDICT_KEY}"
    matched = verdict.get("matched_ids")
    if matched is None:
        return None
    if not isinstance(matched, list):
        return f"{at}.matched_ids", f"must be a list of fact ids, got {json_type(matched)}"
    for i, item in enumerate(matched):
        if problem := _id_problem(item):
            return f"{at}.matched_ids[{i}]", problem
    return None


def _printable(where: str, placed: Mapping[str, Any]) -> None:
    """check_json_value on a value agree prints (a lone surrogate cannot be printed, nesting
    past 100 levels is refused as in any input). ``placed`` puts the value where it sits in its
    line, so that the message names the field: ``{"gold_facts": {2: fact}}``. Only what is
    printed is walked: walking every line doubled agree's time (2,000 documents of 20 facts)."""
    check_json_value(placed, where)


def _line(run: RunFolder, fh: IO[bytes], ref: LineRef) -> tuple[dict[str, Any], str]:
    """The result line at ``ref`` (``fh``: the run's results.jsonl, binary), with the types of
    what agree compares checked, and where it is (file and line) for the later checks."""
    line = run.line_at(fh, ref)
    where = f"{run.results}: line {ref.lineno}"
    _printable(where, {"doc_id": line["doc_id"]})
    for side in SIDES:
        for i, fact in enumerate(line[f"{side}_facts"]):
            bad = _fact_problem(fact, f"{side}_facts[{i}]")
            if bad is not None:
                raise InputError(f"{where}: field '{bad[0]}': {bad[1]}")
    return line, where


def _facts(line: Mapping[str, Any], side: Direction) -> dict[str, tuple[int, dict[str, Any]]]:
    """fact id -> (its place in the side's list, the fact)."""
    return {str(f["id"]): (i, f) for i, f in enumerate(line[f"{side}_facts"])}


def _count_facts(line: Mapping[str, Any]) -> int:
    return sum(len(line[f"{side}_facts"]) for side in SIDES)


def _shown(fact: Mapping[str, Any]) -> dict[str, Any]:
    """The fact as judged, without the verdict (either layout: runs of two versions compare)."""
    return own_fields(fact)


def _outcome(fact: Mapping[str, Any]) -> dict[str, Any]:
    verdict = verdict_of(fact)
    out = {"status": verdict.get("status"), "matched_ids": [str(i) for i in verdict.get("matched_ids") or []],
           "reasoning": verdict.get("reasoning") or "", "description": verdict.get("description") or ""}
    if isinstance(verdict.get("votes"), dict):
        out["votes"] = verdict["votes"]
    return out


# --------------------------------------------------------------------------- comparing


def agree(dir_a: Path, dir_b: Path, max_rows: int = 1000) -> Agreement:
    """Compare two finished ``eval`` output folders fact by fact. Raises InputError (one line)
    for a folder that is not one, a bad line, or no document in common."""
    run_a, run_b = RunFolder(dir_a).require(), RunFolder(dir_b).require()
    sum_a, sum_b = _summary(run_a), _summary(run_b)
    result = Agreement(str(dir_a), str(dir_b), *run_labels(sum_a, sum_b),
                       configs_differ=sum_a.get("config") != sum_b.get("config"))
    index_a, index_b = run_a.index(finished=True), run_b.index(finished=True)
    seen_b: set[str] = set()
    with run_a.results.open("rb") as fh_a, run_b.results.open("rb") as fh_b:
        for doc_id, ref_a in index_a.items():  # in file order: the line numbers name a bad line
            line_a = _line(run_a, fh_a, ref_a)
            hit = index_b.get(doc_id)
            if hit is None:
                result.docs_only_a += 1
                result.facts_in_docs_only_a += _count_facts(line_a[0])
                if len(result.doc_ids_only_a) < IDS_SHOWN:
                    result.doc_ids_only_a.append(doc_id)
                continue
            seen_b.add(doc_id)
            line_b = _line(run_b, fh_b, hit)
            result.documents += 1
            _compare_document(result, doc_id, line_a, line_b, max_rows)
        for doc_id, ref in index_b.items():
            if doc_id not in seen_b:
                result.docs_only_b += 1
                result.facts_in_docs_only_b += _count_facts(_line(run_b, fh_b, ref)[0])
                if len(result.doc_ids_only_b) < IDS_SHOWN:
                    result.doc_ids_only_b.append(doc_id)
    if not result.documents:
        raise InputError(f"{dir_a} and {dir_b} have no document in common")
    return result


def _compare_document(result: Agreement, doc_id: str, line_a: tuple[dict[str, Any], str],
                      line_b: tuple[dict[str, Any], str], max_rows: int) -> None:
    """Count one shared document's facts; ``line_a``, ``line_b``: (line, where it is)."""
    for side in SIDES:
        stats = result.sides[side]
        facts_a, facts_b = _facts(line_a[0], side), _facts(line_b[0], side)
        stats.only_a += sum(1 for i in facts_a if i not in facts_b)
        stats.only_b += sum(1 for i in facts_b if i not in facts_a)
        for fact_id, (i, fa) in facts_a.items():
            hit = facts_b.get(fact_id)
            if hit is None:
                continue
            j, fb = hit
            if _shown(fa) != _shown(fb):
                result.inputs_differ += 1
            sa, sb = status_of(fa), status_of(fb)
            ma = sorted(str(m) for m in verdict_of(fa).get("matched_ids") or [])
            mb = sorted(str(m) for m in verdict_of(fb).get("matched_ids") or [])
            same = sa == sb and ma == mb
            left_out = sa in LEFT_OUT or sb in LEFT_OUT
            _count(stats, sa, sb, same)
            if same:
                continue
            result.differences_total += 1
            result.differences_left_out += left_out
            if len(result.differences) < max_rows:
                key = f"{side}_facts"
                _printable(line_a[1], {key: {i: fa}})
                _printable(line_b[1], {key: {j: fb}})
                result.differences.append(Difference(
                    doc_id, side, fact_id, str(fa.get("fact_type", "")), _shown(fa),
                    _outcome(fa), _outcome(fb), left_out))


def _count(stats: SideStats, sa: object, sb: object, same: bool) -> None:
    """Count a fact judged in both runs (statuses ``sa``, ``sb``) on its side."""
    if sa == "ERROR" or sb == "ERROR":
        stats.errors += 1
    elif sa in LEFT_OUT or sb in LEFT_OUT:
        stats.out_of_scope += 1
    else:
        stats.compared += 1
        pos_a, pos_b = sa == "TP", sb == "TP"
        if pos_a and pos_b:
            stats.tp_tp += 1
        elif pos_a:
            stats.tp_neg += 1
        elif pos_b:
            stats.neg_tp += 1
        else:
            stats.neg_neg += 1
        stats.same_status += sa == sb
        stats.agree += same


# --------------------------------------------------------------------------- text


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _id_list(ids: list[str], total: int) -> str:
    more = f", ... {total - len(ids)} more" if total > len(ids) else ""
    return f"{', '.join(ids)}{more}"


def _ids(ids: list[str], total: int) -> str:
    return f" ({_id_list(ids, total)})" if ids else ""


def _verdict_text(o: Mapping[str, Any]) -> str:
    matched = f" [{', '.join(o['matched_ids'])}]" if o["matched_ids"] else ""
    return f"{o['status']}{matched}"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def headline(ag: Agreement) -> list[str]:
    """The figures, as lines of text (documents, facts, the per-side table)."""
    lines = [f"A: {ag.dir_a} ({ag.judge_a})", f"B: {ag.dir_b} ({ag.judge_b})",
             f"documents: {ag.documents} in both; {ag.docs_only_a} only in A"
             f"{_ids(ag.doc_ids_only_a, ag.docs_only_a)}, {ag.docs_only_b} only in B"
             f"{_ids(ag.doc_ids_only_b, ag.docs_only_b)}"]
    in_both = ag.compared + ag.total("errors") + ag.total("out_of_scope")
    lines.append(
        f"facts: {in_both} in both runs; in shared documents {ag.total('only_a')} only in A and "
        f"{ag.total('only_b')} only in B; in documents of one run {ag.facts_in_docs_only_a} in A and "
        f"{ag.facts_in_docs_only_b} in B; left out of agreement and kappa: {ag.total('errors')} "
        f"ERROR, {ag.total('out_of_scope')} OUT_OF_SCOPE (in either run)")
    lines.append(f"{'side':<10} {'compared':>8} {'agree':>6} {'agreement':>9} {'same status':>11} "
                 f"{'kappa':>6}  {'TP/TP':>6} {'TP/neg':>6} {'neg/TP':>6} {'neg/neg':>7}")
    for side in SIDES:
        s = ag.sides[side]
        lines.append(f"{side:<10} {s.compared:>8} {s.agree:>6} {_num(s.agreement):>9} "
                     f"{s.same_status:>11} {_num(s.kappa):>6}  {s.tp_tp:>6} {s.tp_neg:>6} "
                     f"{s.neg_tp:>6} {s.neg_neg:>7}")
    lines.append(f"{'all':<10} {ag.compared:>8} {ag.total('agree'):>6} {_num(ag.agreement):>9} "
                 f"{ag.total('same_status'):>11}")
    lines.append("agree: same status and same matched ids; kappa on the status (gold TP vs FN, "
                 "predicted TP vs FP); A/B columns: neg is FN (gold) or FP (predicted)")
    return lines


def warnings(ag: Agreement) -> list[str]:
    out = []
    if ag.inputs_differ:
        out.append(f"the input fields of {ag.inputs_differ} fact(s) differ between the runs: they "
                   "were not scored on the same inputs")
    if ag.configs_differ:
        out.append("the two runs used different judge configs (scope, fields, tolerances...)")
    return out


def render_text(ag: Agreement) -> str:
    lines = headline(ag)
    shown = len(ag.differences)
    more = f"; the first {shown} shown" if shown < ag.differences_total else ""
    lines.append(f"differing facts: {ag.differences_total} (status or matched ids; "
                 f"{ag.differences_left_out} of them ERROR or OUT_OF_SCOPE in a run){more}")
    for d in ag.differences:
        lines.append(f"{d.doc_id} {d.side} {d.id} ({d.fact_type}): A {_verdict_text(d.a)} | "
                     f"B {_verdict_text(d.b)}")
        for run, o in (("A", d.a), ("B", d.b)):
            if o["reasoning"]:
                lines.append(f"  {run} reasoning: {_one_line(o['reasoning'])}")
            if o["description"]:
                lines.append(f"  {run} note: {_one_line(o['description'])}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- HTML

SIDES_HEADER = ["side", "compared", "agree", "agreement", "same status", "Cohen's kappa", "TP/TP", "TP/neg",
                "neg/TP", "neg/neg", "ERROR (left out)", "OUT_OF_SCOPE (left out)", "only in A", "only in B"]


def _side_rows(ag: Agreement) -> list[list[str]]:
    """The per-side table of agree.html, then the "all" row."""
    rows = [[side, str(s.compared), str(s.agree), _num(s.agreement), str(s.same_status), _num(s.kappa),
             str(s.tp_tp), str(s.tp_neg), str(s.neg_tp), str(s.neg_neg), str(s.errors), str(s.out_of_scope),
             str(s.only_a), str(s.only_b)] for side, s in ag.sides.items()]
    rows.append(["all", str(ag.compared), str(ag.total("agree")), _num(ag.agreement),
                 str(ag.total("same_status")), "", "", "", "", "", str(ag.total("errors")),
                 str(ag.total("out_of_scope")), str(ag.total("only_a")), str(ag.total("only_b"))])
    return rows


def _only_in(ag: Agreement) -> list[dict[str, Any]]:
    """Documents of one run only, per run: how many, their facts, the ids named."""
    return [{"run": run, "documents": n, "facts": facts, "ids": _id_list(ids, n) if ids else ""}
            for run, n, facts, ids in (("A", ag.docs_only_a, ag.facts_in_docs_only_a, ag.doc_ids_only_a),
                                       ("B", ag.docs_only_b, ag.facts_in_docs_only_b, ag.doc_ids_only_b))]


def render_html(ag: Agreement) -> str:
    """agree.html from the template ``agree.html.j2``: a self-contained page (its one script
    filters the differing facts; no external resource); the template's autoescape escapes every
    value."""
    shown = len(ag.differences)
    note = (f" The table holds the first {shown:,} of {ag.differences_total:,}."
            if shown < ag.differences_total else "")
    fields = [{k: v for k, v in d.fact.items() if k not in ("id", "fact_type")} for d in ag.differences]
    return render_page("agree.html.j2", ag=ag, only=_only_in(ag), warnings=warnings(ag),
                       sides_header=SIDES_HEADER, sides=_side_rows(ag), note=note,
                       differences=list(zip(ag.differences, fields, strict=True)),
                       types=sorted({d.fact_type for d in ag.differences}),
                       docs=list(dict.fromkeys(d.doc_id for d in ag.differences)))
