"""The pairs of benchmarks/labelled/*/webnlg.jsonl (issue #37 item 3): (gold, predicted) triples
of one WebNLG 2020 entry, drawn with a fixed seed from the real data, then labelled by hand from
GUIDELINE.md (G21-G24).

    PYTHONPATH=src python benchmarks/labelled/webnlg_pairs.py draw OUT.jsonl      # unlabelled pairs
    PYTHONPATH=src python benchmarks/labelled/webnlg_pairs.py split LABELLED.jsonl  # -> dev/, heldout/

``draw`` reads the gold file and the four submissions as benchmarks/webnlg_realdata.py does and
groups every (gold triple, predicted triple) pair of an entry by how the two relate: identical,
equal up to case/underscores/quotes (``format``), the same subject and object with another
property (``relation``), the same subject and property with another object (``object``), the same
property and object with another subject (``subject``), subject and object swapped (``swapped``).
From each group it draws ``QUOTA`` distinct pairs with ``random.Random(SEED)`` (a relation pair,
an object pair... drawn once: WebNLG repeats triple sets across texts), shuffles them with the same
generator and numbers them ``wnl-001``... ``split`` holds out ``random.Random(SEED).sample(range(n),
round(n / 3))`` (0-based) and writes the rest to dev.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from webnlg_realdata import DEFAULT_DATA, GOLD_FILE, _loose, align, read_entries, to_triples  # noqa: E402

SEED = 37
QUOTA = {"identical": 15, "format": 15, "relation": 110, "object": 45, "subject": 20, "swapped": 15}
HERE = Path(__file__).resolve().parent
SOURCES = ("WebNLG challenge 2020, text-to-RDF (semantic parsing) test set, English: gold "
           "semantic-parsing-test-data-with-refs-en.xml (github WebNLG/WebNLG-Text-to-triples @6a40950) "
           "and the primary submissions of Amazon_AI_(Shanghai), bt5, CycleGT and Baseline (github "
           "WebNLG/challenge-2020 @328b4c2); CC BY-NC-SA 4.0 (see /work/shared/realdata/SOURCES.md)")


def group(g: tuple[str, str, str], p: tuple[str, str, str]) -> str | None:
    (gs, gp, go), (ps, pp, po) = map(lambda t: tuple(map(_loose, t)), (g, p))
    if g == p:
        return "identical"
    if (gs, gp, go) == (ps, pp, po):
        return "format"
    if gs == ps and go == po:
        return "relation"
    if gs == ps and gp == pp:
        return "object"
    if gp == pp and go == po:
        return "subject"
    if gs == po and go == ps:
        return "swapped"
    return None


def draw(out: Path) -> None:
    data = DEFAULT_DATA
    gold = read_entries(data / GOLD_FILE, "mtriple")
    gold_triples, _ = to_triples([t for _, t in gold.entries])
    found: dict[str, dict[tuple, tuple]] = {k: {} for k in QUOTA}
    for path in sorted(data.glob("submissions/*_primary.xml")):
        system = path.name.removesuffix("_primary.xml")
        texts, _ = align(gold, read_entries(path, "gtriple"))
        preds, _ = to_triples(texts)
        for (eid, _), gs, ps in zip(gold.entries, gold_triples, preds, strict=False):
            for g in gs:
                for p in ps:
                    kind = group(g, p)
                    if kind is None:
                        continue
                    # one pair per difference: the relation pair, the object pair...
                    key = {"relation": (g[1], p[1]), "object": (g[1], g[2], p[2]),
                           "subject": (g[0], p[0])}.get(kind, (g, p))
                    found[kind].setdefault(key, (g, p, eid, system))
    rng = random.Random(SEED)
    picked = []
    for kind, quota in QUOTA.items():
        pool = [found[kind][k] for k in sorted(found[kind])]
        picked += [(kind, *x) for x in rng.sample(pool, min(quota, len(pool)))]
    rng.shuffle(picked)
    with out.open("w", encoding="utf-8") as f:
        for n, (kind, g, p, eid, system) in enumerate(picked, 1):
            fact = lambda i, t: {"id": i, "fact_type": "triple",  # noqa: E731
                                 **dict(zip(("subject", "property", "object"), t, strict=True))}
            f.write(json.dumps({"id": f"wnl-{n:03d}", "gold_fact": fact(f"g{n:03d}", g),
                                "predicted_fact": fact(f"p{n:03d}", p), "drawn_as": kind,
                                "source": f"{eid}, {system}"}, ensure_ascii=False) + "\n")


def split(labelled: Path) -> None:
    rows = [json.loads(line) for line in labelled.read_text(encoding="utf-8").splitlines() if line.strip()]
    n = len(rows)
    held = set(random.Random(SEED).sample(range(n), round(n / 3)))
    rule = (f"pairs numbered in drawn order wnl-001..wnl-{n:03d}; held out: indices "
            f"random.Random({SEED}).sample(range({n}), {len(held)}) (0-based), the rest dev")
    for part, keep in (("dev", lambda i: i not in held), ("heldout", lambda i: i in held)):
        mine = [r for i, r in enumerate(rows) if keep(i)]
        header = {"description": "factjudge labelled set for issue #37 item 3, kind 'webnlg': WebNLG 2020 "
                  "gold triples against a text-to-RDF system's triples of the same entry (fact_type triple: "
                  f"subject, property, object). {part.upper()} part.", "kind": "webnlg", "split": part,
                  "pairs": len(mine), "matches": sum(r["match"] for r in mine),
                  "guideline": "benchmarks/labelled/GUIDELINE.md (rules G1-G12 and G21-G24; each note cites "
                  "the rule that decided it)", "split_rule": rule,
                  "drawn_by": "benchmarks/labelled/webnlg_pairs.py draw (seed 37)",
                  "config": "none: the judge's defaults", "sources": SOURCES,
                  "licence": "CC BY-NC-SA 4.0, as the WebNLG 2020 data the triples come from"}
        with (HERE / part / "webnlg.jsonl").open("w", encoding="utf-8") as f:
            f.write(json.dumps({"_header": header}, ensure_ascii=False) + "\n")
            for r in mine:
                f.write(json.dumps({k: r[k] for k in ("id", "gold_fact", "predicted_fact", "match",
                                                      "category", "note")}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    {"draw": draw, "split": split}[sys.argv[1]](Path(sys.argv[2]))
