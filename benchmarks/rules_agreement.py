"""Agreement of a judge (default: the offline rules judge) with the labelled set of
benchmarks/labelled/ (issue #22 item 4), per kind of extraction and overall, beside the issue's
targets (precision >= 0.98, recall >= 0.80 on links).

Run, from the repository root:

    PYTHONPATH=src python benchmarks/rules_agreement.py                 # dev part, rules judge
    PYTHONPATH=src python benchmarks/rules_agreement.py --builtin       # + the shipped calibration set
    PYTHONPATH=src python benchmarks/rules_agreement.py --judge hybrid --model qwen@http://host:8000/v1
    PYTHONPATH=src python benchmarks/rules_agreement.py --split heldout --heldout   # final report only

The held-out part (benchmarks/labelled/heldout/) is read only with ``--heldout`` as well: it is
for the final before/after report, never for tuning a judge (see benchmarks/labelled/README.md).
Each labels file is one kind (its name); every pair is judged by factjudge's public calibration
API (``factjudge.evaluation.calibrate``), with no config unless ``-c`` gives one.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from factjudge import load_config
from factjudge.errors import FactJudgeError
from factjudge.evaluation.calibrate import (
    CalibrationReport,
    Confusion,
    Label,
    builtin_labels_path,
    calibrate,
    load_labels,
)
from factjudge.judges.factory import JudgeSpec, build_judge

LABELLED = Path(__file__).resolve().parent / "labelled"
TARGETS = {"precision": 0.98, "recall": 0.80}
SPLITS = {"dev": ("dev",), "heldout": ("heldout",), "all": ("dev", "heldout")}


def label_files(root: Path, split: str) -> dict[str, list[Path]]:
    """kind -> its labels files of ``split`` (one file per kind and part)."""
    kinds: dict[str, list[Path]] = {}
    for part in SPLITS[split]:
        folder = root / part
        if not folder.is_dir():
            raise SystemExit(f"rules_agreement: no folder {folder}")
        for path in sorted(folder.glob("*.jsonl")):
            kinds.setdefault(path.stem, []).append(path)
    if not kinds:
        raise SystemExit(f"rules_agreement: no *.jsonl under {root} for split {split!r}")
    return kinds


def load_kinds(files: dict[str, list[Path]], by_family: bool = False
               ) -> tuple[list[Label], dict[str, Label]]:
    """All labels with ``category`` set to their kind (so the report's ``by_category`` is per
    kind; ``by_family``: to ``kind/category``, per family of a kind), and the original labels by
    id (for their own category in the disagreements)."""
    tagged: list[Label] = []
    originals: dict[str, Label] = {}
    for kind, paths in files.items():
        for path in paths:
            for label in load_labels(path):
                if label.id in originals:
                    raise SystemExit(f"rules_agreement: id {label.id!r} in two files ({path})")
                originals[label.id] = label
                tagged.append(dataclasses.replace(
                    label, category=f"{kind}/{label.category}" if by_family else kind))
    return tagged, originals


def build(args: argparse.Namespace, config: Any) -> Any:
    spec = JudgeSpec(kind=args.judge, models=tuple(args.model or ()), base_url=args.base_url,
                     api_key_env=args.api_key_env, timeout=args.timeout, cache=not args.no_cache)
    return build_judge(spec, config)


def run(labels: list[Label], args: argparse.Namespace, config: Any) -> CalibrationReport:
    return calibrate(labels, config, build(args, config), concurrency=args.concurrency)


def fmt(value: float | None) -> str:
    return "    -" if value is None else f"{value:5.3f}"


def row(name: str, c: Confusion, matches: int) -> str:
    share = matches / c.n if c.n else 0.0
    return (f"{name:<30} {c.n:>5} {share:>7.0%}  {fmt(c.precision)}  {fmt(c.recall)}  "
            f"{fmt(c.kappa)}  {c.tp:>4} {c.fp:>4} {c.fn:>4} {c.tn:>4}")


def table(title: str, report: CalibrationReport, per_kind: bool) -> list[str]:
    head = (f"{title:<30} {'pairs':>5} {'match%':>7}  {'    P'}  {'    R'}  {'kappa'}  "
            f"{'tp':>4} {'fp':>4} {'fn':>4} {'tn':>4}")
    lines = [head, "-" * len(head)]
    if per_kind:
        for kind, c in report.by_category.items():
            lines.append(row(kind, c, c.tp + c.fn))
    o = report.overall
    lines.append(row("overall" if per_kind else "builtin", o, o.tp + o.fn))
    verdicts = []
    for name, target in TARGETS.items():
        value = getattr(o, name)
        ok = value is not None and value >= target
        verdicts.append(f"{name} {fmt(value).strip()} vs target >= {target:.2f}: "
                        f"{'met' if ok else 'NOT met'}")
    lines.append("  targets: " + "; ".join(verdicts))
    if report.errors:
        lines.append(f"  {report.errors} pairs not scored (judge errors): "
                     + ", ".join(e.id for e in report.error_lines))
    return lines


def disagreements(report: CalibrationReport, originals: dict[str, Label]) -> list[str]:
    lines = []
    for d in report.disagreements:
        label = originals.get(d.id)
        category = label.category if label is not None else d.category
        note = f" ({label.note})" if label is not None and label.note else ""
        kind = "missed match" if d.label else "FALSE LINK"
        lines.append(f"- {d.id} [{category}] {kind}{note}")
        lines.append(f"    gold:      {json.dumps(d.gold_fact, ensure_ascii=False)}")
        lines.append(f"    predicted: {json.dumps(d.predicted_fact, ensure_ascii=False)}")
        if d.gold_reasoning:
            lines.append(f"    judge:     {d.gold_reasoning}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=tuple(SPLITS), default="dev",
                        help="which part of the labelled set (default dev)")
    parser.add_argument("--heldout", action="store_true",
                        help="confirm reading the held-out part (needed by --split heldout/all)")
    parser.add_argument("--builtin", action="store_true",
                        help="also run factjudge's shipped calibration set")
    parser.add_argument("--labels-dir", type=Path, default=LABELLED,
                        help="folder holding dev/ and heldout/ (default benchmarks/labelled)")
    parser.add_argument("-c", "--config", type=Path, default=None, help="judge config for every pair")
    parser.add_argument("--judge", default=None, help="rules (default), llm or hybrid")
    parser.add_argument("--model", action="append", help="model of an LLM or hybrid judge (repeatable)")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--api-key-env", default=None)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="list every disagreement with the judge's reasoning")
    parser.add_argument("--kinds", default=None,
                        help="only these kinds (comma-separated file stems, e.g. clinical,job)")
    parser.add_argument("--by-family", action="store_true",
                        help="one row per kind and labelled category instead of per kind")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if args.split in ("heldout", "all") and not args.heldout:
        parser.error(f"--split {args.split} reads the held-out part: add --heldout to confirm this "
                     "is the final report, not tuning (benchmarks/labelled/README.md)")
    try:
        config = load_config(args.config)
        files = label_files(args.labels_dir, args.split)
        if args.kinds:
            files = {k: v for k, v in files.items() if k in args.kinds.split(",")}
        labels, originals = load_kinds(files, args.by_family)
        report = run(labels, args, config)
        out: dict[str, Any] = {"split": args.split, "judge": report.judge,
                               "labelled": report.to_dict()}
        print(f"judge: {report.judge} | labelled set {args.labels_dir} split {args.split}")
        print("\n".join(table("kind", report, per_kind=True)))
        if args.verbose and report.disagreements:
            print(f"\ndisagreements ({len(report.disagreements)})")
            print("\n".join(disagreements(report, originals)))
        if args.builtin:
            builtin = load_labels(builtin_labels_path())
            breport = run(builtin, args, config)
            out["builtin"] = breport.to_dict()
            print()
            print("\n".join(table("set", breport, per_kind=False)))
            if args.verbose and breport.disagreements:
                print(f"\nbuiltin disagreements ({len(breport.disagreements)})")
                print("\n".join(disagreements(breport, {b.id: b for b in builtin})))
    except FactJudgeError as exc:
        print(f"rules_agreement: {exc}", file=sys.stderr)
        return 2
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
