"""How often the proof guard (judges/rules/proof.py, issue #36) would overrule a person: on every
labelled pair (benchmarks/labelled dev and held-out, and the shipped calibration set), whether the
rules prove the pair different, against the person's label. A proof on a pair labelled *match* is
a link ``hybrid`` can no longer make (a lost agreement); a proof on a *non-match* is a question it
no longer asks (and cannot get wrong). No model is asked: this bounds what the guard does to the
hybrid judge's agreement whatever the model answers.

Run from the repository root:  PYTHONPATH=src python benchmarks/proof_agreement.py
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from factjudge.core.scope import NOT_COMPARED
from factjudge.evaluation.calibrate import builtin_labels_path, load_labels
from factjudge.judges.rules.proof import pair_proof
from factjudge.models import JudgeConfig

LABELLED = Path(__file__).resolve().parent / "labelled"


def main() -> None:
    config = JudgeConfig()
    files = [*sorted((LABELLED / "dev").glob("*.jsonl")), *sorted((LABELLED / "heldout").glob("*.jsonl")),
             builtin_labels_path()]
    totals: Counter[str] = Counter()
    for path in files:
        counts: Counter[str] = Counter()
        for label in load_labels(path):
            g = label.gold_fact
            fields = [k for k in g if k not in NOT_COMPARED]
            proof = pair_proof(g, label.predicted_fact, fields, config)
            key = ("match" if label.match else "non-match") + (" proved different" if proof else "")
            counts[key] += 1
            if proof and label.match:
                print(f"  overrules a match: {path.parent.name}/{path.name} {label.id}: {proof.reasoning()}")
        totals.update(counts)
        print(f"{path.parent.name}/{path.name}: {counts['match'] + counts['match proved different']} matches "
              f"({counts['match proved different']} proved different), "
              f"{counts['non-match'] + counts['non-match proved different']} non-matches "
              f"({counts['non-match proved different']} proved different: not asked)")
    print(f"all: {totals['match proved different']} of {totals['match'] + totals['match proved different']} "
          f"labelled matches proved different; {totals['non-match proved different']} of "
          f"{totals['non-match'] + totals['non-match proved different']} non-matches settled without the model")


if __name__ == "__main__":
    main()
