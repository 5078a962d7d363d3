"""WebNLG 2020 text-to-RDF, real submissions: the rules judge next to exact triple matching.

The gold and the four primary submissions are scored with the rules judge, with plain exact-triple
matching and next to the official scorer's published figures; then the differences the judge
accepts are classified, with examples, doubtful links and formatting it still misses.

Run: /work/venv/bin/python benchmarks/webnlg_realdata.py [--realdata PATH] [--limit N]

Each gold entry is one document (doc_id = eid); each triple "S | P | O" one fact
``{"fact_type": "triple", "subject": S, "property": P, "object": O}``. The property is a compared
field, not the fact_type, so ``birthPlace`` can match ``birth_place`` (a fact_type must be equal).
Exact baseline: multiset equality of (s, p, o) after .strip() only. The rules judge sees the raw
strings (its own normalisation folds case, and reads underscores and punctuation as spaces), with
the default config plus ``one_to_one`` so that, like the baseline, one prediction counts once.
"""
from __future__ import annotations

import argparse
import asyncio
import html
import re
import sys
import time
import unicodedata
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rapidfuzz.distance import Levenshtein

from factjudge import JudgeConfig, RulesJudge, run_judge_async
from factjudge.core.metrics import f1_score, ratio
from factjudge.judges.rules.normalize import Period, Quantity, normalize_text, normalize_value, text_similarity

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "realdata" / "webnlg2020"
GOLD_FILE = "semantic-parsing-test-data-with-refs-en.xml"
FIELDS = ("subject", "property", "object")
CONFIG = JudgeConfig(one_to_one=True)
Triple = tuple[str, str, str]

_ENTRY = re.compile(r"<entry\b([^>]*?)(?:/>|>(.*?)</entry>)", re.S)
_TRIPLE = re.compile(r"<([mg]triple)>(.*?)</\1>", re.S)
_EID = re.compile(r'\beid\s*=\s*["\']([^"\']*)["\']')
_XML_ENTITY = re.compile(r"&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);")


@dataclass
class Parsed:
    entries: list[tuple[str | None, list[str]]]  # (eid or None, raw triple texts)
    method: str


def read_entries(path: Path, tag: str) -> Parsed:
    """Entries of a WebNLG file; a regex pass when the XML is not well-formed (raw '&')."""
    try:
        root = ET.parse(path).getroot()
        return Parsed([(e.get("eid"), [t.text or "" for t in e.iter(tag)])
                       for e in root.iter("entry")], "xml")
    except ET.ParseError as exc:
        text = path.read_text(encoding="utf-8")
        unescape = lambda s: _XML_ENTITY.sub(lambda m: html.unescape(m.group()), s)  # noqa: E731
        entries = [((m := _EID.search(attrs)) and m.group(1),
                    [unescape(t) for kind, t in _TRIPLE.findall(body or "") if kind == tag])
                   for attrs, body in _ENTRY.findall(text)]
        return Parsed(entries, f"regex (XML error: {exc})")


def split_triple(text: str) -> tuple[Triple, bool]:
    """(s, p, o) stripped, and whether the text was a well-formed 'S | P | O'."""
    parts = [p.strip() for p in text.split("|")]
    s, p, o = (parts + ["", ""])[:2] + [" | ".join(parts[2:])]
    return (s, p, o), len(parts) == 3


def facts(triples: list[Triple]) -> list[dict[str, Any]]:
    return [{"id": f"t{k}", "fact_type": "triple", **dict(zip(FIELDS, t, strict=False))}
            for k, t in enumerate(triples, 1)]


def exact_counts(gold: list[Triple], pred: list[Triple]) -> int:
    return sum((Counter(gold) & Counter(pred)).values())


def prf(tp_pred: int, n_pred: int, tp_gold: int, n_gold: int) -> tuple[float | None, ...]:
    p, r = ratio(tp_pred, n_pred), ratio(tp_gold, n_gold)
    return p, r, f1_score(p, r)


def official_scores(path: Path) -> dict[str, tuple[float, float, float]]:
    """'Exact' of the Total scores block and the 'Full triple scores' of a scorer output."""
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    nums = r"Precision: ([\d.e-]+) Recall: ([\d.e-]+)\s+F1: ([\d.e-]+)"
    out = {}
    total = text.split("Scores per tag")[0]
    if m := re.search(r"\nExact\n.*?" + nums, total, re.S):
        out["exact (elements)"] = tuple(float(x) for x in m.groups())
    if m := re.search(r"Full triple scores.*?" + nums, text, re.S):
        out["full triple"] = tuple(float(x) for x in m.groups())
    return out  # type: ignore[return-value]


# --------------------------------------------------------------------------- difference kinds

def _loose(s: str) -> str:
    """Case, underscores, whitespace and double quotes folded: a formatting-only key."""
    return " ".join(s.casefold().replace("_", " ").replace('"', "").split())


def _no_accents(s: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", s) if not unicodedata.combining(ch))


def _ascii(s: str) -> str:
    """The judge's text normalisation (with its company-suffix rule), accents removed."""
    return _no_accents(normalize_text(s, ignore_company_suffixes=CONFIG.ignore_company_suffixes))


_LADDER: list[tuple[str, Callable[[str], str]]] = [
    ("case", str.casefold),
    ("underscores/spaces", lambda s: " ".join(s.casefold().replace("_", " ").split())),
    ("quotes", _loose),
    ("accents", lambda s: _no_accents(_loose(s))),
    ("punctuation", lambda s: _no_accents(normalize_text(s))),
    ("leading 'the'/company suffix", _ascii),
    ("camelCase/joined words", lambda s: _ascii(s).replace(" ", "")),
    ("word order", lambda s: " ".join(sorted(_ascii(s).split()))),
]
TYPO, FUZZY = "fuzzy: typo/inflection (<= 2 edits)", "fuzzy: other (similarity >= threshold)"
#: Every kind, from the strictest to the most lenient.
_NOT_TEXT = {Quantity: "number", Period: "date"}
KINDS = ["number formatting", "date formatting", *(name for name, _ in _LADDER), TYPO, FUZZY]


def field_kind(a: str, b: str) -> str | None:
    """The first kind of difference that explains two raw values (None: equal)."""
    if a == b:
        return None
    na, nb = normalize_value(a), normalize_value(b)  # the judge compares these as values
    if isinstance(na, Quantity) and isinstance(nb, Quantity) and na.value == nb.value:
        return "number formatting"
    if isinstance(na, Period) and isinstance(nb, Period) and na.key == nb.key:
        return "date formatting"
    for name, fold in _LADDER:
        if fold(a) == fold(b):
            return name
    squeeze = lambda s: _ascii(s).replace(" ", "")  # noqa: E731
    return TYPO if Levenshtein.distance(squeeze(a), squeeze(b)) <= 2 else FUZZY


def similarity(a: str, b: str) -> float:
    return text_similarity(a, b, ignore_company_suffixes=CONFIG.ignore_company_suffixes)


def doubtful(kinds: dict[str, str]) -> str | None:
    """Why a link may be wrong: a property that differs beyond formatting, or fuzzy words."""
    if kinds.get("property") in (TYPO, FUZZY):
        return "property differs beyond formatting"
    return next((f"{n} differs in words" for n in FIELDS if kinds.get(n) == FUZZY), None)


# --------------------------------------------------------------------------- scoring

@dataclass
class SystemRun:
    name: str
    docs: int
    gold: int
    pred: int
    exact: tuple[float | None, ...]
    exact_s: float
    rules: tuple[float | None, ...]
    rules_s: float
    official: dict[str, tuple[float, float, float]]
    links: list[tuple[Triple, Triple]]  # (gold, predicted) linked by the rules judge
    missed: list[tuple[Triple, Triple]]  # FN/FP pairs equal up to case/underscores/quotes
    exact_unlinked: int  # exactly equal pairs the judge did not link


def align(gold: Parsed, sub: Parsed) -> tuple[list[list[str]], str]:
    """Each gold entry's predicted triple texts: by eid when the submission has them all."""
    if all(eid for eid, _ in sub.entries):
        by_eid = dict(sub.entries)
        missing = sum(eid not in by_eid for eid, _ in gold.entries)
        return [by_eid.get(eid, []) for eid, _ in gold.entries], f"by eid ({missing} missing)"
    n, m = len(gold.entries), len(sub.entries)
    return ([t for _, t in sub.entries[:n]] + [[]] * max(0, n - m),
            f"by order (no eids; {m} entries for {n} gold)")


async def score_system(name: str, gold: list[tuple[str, list[Triple]]],
                       preds: list[list[Triple]],
                       official: dict[str, tuple[float, float, float]]) -> SystemRun:
    started = time.perf_counter()
    tp = sum(exact_counts(g, p) for (_, g), p in zip(gold, preds, strict=False))
    n_gold, n_pred = sum(len(g) for _, g in gold), sum(len(p) for p in preds)
    exact_s = time.perf_counter() - started
    judge, limiter = RulesJudge(), asyncio.Semaphore(8)
    counts: Counter[str] = Counter()
    links: list[tuple[Triple, Triple]] = []
    missed: list[tuple[Triple, Triple]] = []
    started = time.perf_counter()
    for (eid, g), p in zip(gold, preds, strict=False):  # sequential: the judge is CPU-bound
        res = await run_judge_async(facts(g), facts(p), CONFIG, judge, limiter=limiter, doc_id=eid)
        m = res.metrics
        counts.update(tp_gold=m.tp_gold, fn=m.fn, tp_pred=m.tp_predicted, fp=m.fp, err=m.errors)
        by_id = dict(zip((f["id"] for f in res.predicted_facts), p, strict=False))
        doc_links = [(t, by_id[i])
                for f, t in zip(res.gold_facts, g, strict=False) for i in f["factjudge"]["matched_ids"]]
        links += doc_links
        counts["exact_unlinked"] += exact_counts(g, p) - sum(a == b for a, b in doc_links)
        fps = {tuple(map(_loose, t)): t for f, t in zip(res.predicted_facts, p, strict=False)
               if f["factjudge"]["status"] == "FP"}
        missed += [(t, fps[k]) for f, t in zip(res.gold_facts, g, strict=False)
                   if f["factjudge"]["status"] == "FN" and (k := tuple(map(_loose, t))) in fps]
    rules_s = time.perf_counter() - started
    assert counts["err"] == 0, "the rules judge never errs"
    rules = prf(counts["tp_pred"], counts["tp_pred"] + counts["fp"],
                counts["tp_gold"], counts["tp_gold"] + counts["fn"])
    return SystemRun(name, len(gold), n_gold, n_pred, prf(tp, n_pred, tp, n_gold), exact_s,
                     rules, rules_s, official, links, missed, counts["exact_unlinked"])


# --------------------------------------------------------------------------- output

def fmt(prf_: tuple[float | None, ...]) -> str:
    return "/".join("  -  " if x is None else f"{x:.3f}" for x in prf_)


def show(g: Triple, p: Triple, indent: str = "         ") -> None:
    print(f"{indent}gold {' | '.join(g)}\n{indent}pred {' | '.join(p)}")


def distinct(pairs: list[tuple[Triple, Triple]], n: int) -> list[tuple[Triple, Triple]]:
    """The first n pairs with distinct differences (WebNLG repeats triple sets across texts)."""
    seen: dict[Any, tuple[Triple, Triple]] = {}
    for g, p in pairs:
        seen.setdefault(tuple((a, b) for a, b in zip(g, p, strict=False) if a != b), (g, p))
    return list(seen.values())[:n]


def report_differences(run: SystemRun, examples: int = 3) -> None:
    by_kind: dict[str, list[tuple[Triple, Triple]]] = defaultdict(list)
    fields: dict[str, Counter[str]] = defaultdict(Counter)
    odd: dict[str, list[tuple[Triple, Triple]]] = defaultdict(list)
    for g, p in run.links:
        kinds = {n: k for n, a, b in zip(FIELDS, g, p, strict=False) if (k := field_kind(a, b))}
        if not kinds:
            continue
        kind = max(kinds.values(), key=KINDS.index)  # the most lenient field's
        by_kind[kind].append((g, p))
        fields[kind].update(n for n, k in kinds.items() if k == kind)
        if why := doubtful(kinds):
            odd[why].append((g, p))
    total = sum(len(v) for v in by_kind.values())
    print(f"\n-- {run.name}: {len(run.links)} links, {total} not exactly equal (by the most "
          f"lenient field's kind); exactly equal pairs left unlinked: {run.exact_unlinked}")
    for kind, items in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
        where = ", ".join(f"{n} {c}" for n, c in fields[kind].most_common())
        print(f"  {len(items):5d}  {kind}  [{where}]")
        for g, p in distinct(items, examples):
            show(g, p)
    n_odd = sum(len(v) for v in odd.values())
    print(f"  doubtful links (heuristic: fuzzy property, or fuzzy subject/object beyond a "
          f"<= 2-edit typo): {n_odd} of {total}")
    for why, items in sorted(odd.items(), key=lambda kv: -len(kv[1])):
        print(f"    {len(items):4d}  {why}")
        for g, p in distinct(items, 2 * examples):
            sims = ", ".join(f"{n} {similarity(a, b):.0f}" for n, a, b in zip(FIELDS, g, p, strict=False)
                             if a != b)
            show(g, p, "           ")
            print(f"           (similarity: {sims})")
    form = lambda s: _NOT_TEXT.get(type(normalize_value(s)), "text")  # noqa: E731
    why_missed = Counter("; ".join(f"{n}: {form(a)} vs {form(b)}" for n, a, b in zip(FIELDS, g, p, strict=False)
                                   if a != b) for g, p in run.missed)
    print(" ".join([f"  missed (FN/FP pairs equal up to case/underscores/quotes): {len(run.missed)}",
                    *(f"[{k}: {c}]" for k, c in why_missed.most_common())]))
    for g, p in distinct(run.missed, examples):
        show(g, p)


def to_triples(entries: list[list[str]]) -> tuple[list[list[Triple]], int]:
    """Split every entry's triple texts; also how many were not 'S | P | O'."""
    split = [[split_triple(t) for t in texts] for texts in entries]
    return [[t for t, _ in e] for e in split], sum(not ok for e in split for _, ok in e)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realdata", type=Path, default=DEFAULT_DATA,
                        help=f"the webnlg2020 folder (default {DEFAULT_DATA})")
    parser.add_argument("--limit", type=int, default=None, help="only the first N gold entries")
    args = parser.parse_args()
    gold_path = args.realdata / GOLD_FILE
    subs = sorted(args.realdata.glob("submissions/*_primary.xml"))
    if not gold_path.exists() or not subs:
        print(f"webnlg_realdata: no WebNLG 2020 data at {args.realdata} (need {GOLD_FILE} and "
              "submissions/*_primary.xml; see ../shared/realdata/SOURCES.md)", file=sys.stderr)
        return 2

    print("== Reading")
    gold_parsed = read_entries(gold_path, "mtriple")
    gold_parsed.entries = gold_parsed.entries[: args.limit]
    gold_triples, bad = to_triples([t for _, t in gold_parsed.entries])
    eids = [eid or f"#{i}" for i, (eid, _) in enumerate(gold_parsed.entries)]
    gold = list(zip(eids, gold_triples, strict=False))
    print(f"  gold: {len(gold)} entries, {sum(len(t) for _, t in gold)} triples "
          f"[{gold_parsed.method}]; {bad} not 'S | P | O'")
    runs = []
    for path in subs:
        name = path.name.removesuffix("_primary.xml")
        parsed = read_entries(path, "gtriple")
        texts, how = align(gold_parsed, parsed)
        preds, bad = to_triples(texts)
        print(f"  {name}: {len(parsed.entries)} entries, {sum(len(t) for _, t in parsed.entries)} "
              f"triples [{parsed.method}]; aligned {how}; {bad} not 'S | P | O'")
        official = official_scores(args.realdata / "official_scorer_outputs" / f"out_{name}.txt")
        runs.append(asyncio.run(score_system(name, gold, preds, official)))

    print("\n== Micro P/R/F1 over documents (each P/R/F1; s = seconds)")
    print(f"  {'system':<21} {'docs':>5} {'gold':>5} {'pred':>5}  {'exact triple':<17} {'s':>5}  "
          f"{'rules judge':<17} {'s':>5}  {'official Exact*':<17} official full**")
    for r in runs:
        off = [fmt(r.official[k]) if k in r.official else "n/a".center(17)
               for k in ("exact (elements)", "full triple")]
        print(f"  {r.name:<21} {r.docs:>5} {r.gold:>5} {r.pred:>5}  {fmt(r.exact)} "
              f"{r.exact_s:5.2f}  {fmt(r.rules)} {r.rules_s:5.2f}  {off[0]} {off[1]}")
    print("  * official scorer 'Total scores / Exact': S, P and O matched as separate elements\n"
          "    (lowercased, camelCase split, '_' -> ' '), P/R averaged over entries.\n"
          "  ** its 'Full triple scores': lowercased whole triples, sklearn macro average over\n"
          "    distinct triples as classes. Both as published, over all 2155 entries.")
    print("\n== What the rules judge accepts that exact matching does not")
    for run in runs:
        report_differences(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
