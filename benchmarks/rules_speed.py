"""Speed of ``run_judge`` with the rules judge on one synthetic document.

Generates realistic financial facts (deterministic seed): the predicted side restates most gold
facts in other formats ("$12.5m" vs "12.5" + "USD million", "FY23" vs "fiscal year 2023",
"Apple Inc." vs "apple"), misses some, gets some numbers wrong and adds some facts of its own.
Prints the wall time for 50 / 500 / 5000 facts per side so the growth is visible.

Run: /work/venv/bin/python benchmarks/rules_speed.py [--sizes 50 500 5000] [--seed 7]
"""
from __future__ import annotations

import argparse
import random
import time
from decimal import Decimal
from typing import Any

from factjudge import run_judge
from factjudge.judges.rules.judge import RulesJudge

FACT_TYPES = ["revenue", "net_income", "operating_income", "capex", "headcount", "eps",
              "gross_margin", "ceo"]
WORDS = ["Apple", "Global", "Nordic", "Pacific", "Quantum", "Summit", "Atlas", "Vertex", "Harbor",
         "Crescent", "Pioneer", "Liberty", "Orion", "Sterling", "Evergreen", "Falcon", "Granite",
         "Horizon", "Meridian", "Northwind", "Redwood", "Silverline", "Titan", "Union"]
INDUSTRY = ["Systems", "Energy", "Foods", "Motors", "Pharma", "Logistics", "Bank", "Telecom",
            "Mining", "Retail", "Software", "Airlines"]
SUFFIX = ["Inc.", "Corp.", "Corporation", "Ltd", "PLC", "AG", "SA", "LLC", ""]
FIRST = ["Anna", "Tim", "Maria", "John", "Wei", "Fatima", "Lars", "Priya", "Carlos", "Yuki"]
LAST = ["Cook", "Schmidt", "Rossi", "Nakamura", "Okafor", "Larsen", "Dubois", "Kim", "Novak"]
CURRENCIES = [("USD", "$"), ("EUR", "€"), ("GBP", "£")]


def company_names(rng: random.Random, n: int) -> list[str]:
    names = set()
    while len(names) < n:
        names.add(f"{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.choice(INDUSTRY)}")
    return sorted(names)


def period(rng: random.Random) -> tuple[int, int | None]:
    return rng.randint(2015, 2024), rng.choice([None, 1, 2, 3, 4])


def period_text(year: int, quarter: int | None, style: int) -> str:
    yy = year % 100
    if quarter is None:
        return [f"FY{year}", f"fiscal year {year}", f"FY{yy:02d}", f"FY {year}"][style % 4]
    return [f"Q{quarter} {year}", f"{quarter}Q{yy:02d}", f"Q{quarter}-{year}"][style % 3]


def amount_fields(rng: random.Random, millions: Decimal, code: str, symbol: str,
                  style: int) -> dict[str, Any]:
    if style == 0:
        return {"value": f"{millions:f}", "unit": f"{code} million"}
    if style == 1:
        return {"value": f"{symbol}{millions:f}m"}
    if style == 2:
        return {"value": f"{int(millions * 1_000_000):,}", "unit": code}
    return {"value": f"{code} {millions / 1000:f} billion" if millions >= 1000
            else f"{code} {millions:f} million"}


def gold_fact(rng: random.Random, i: int, companies: list[str]) -> dict[str, Any]:
    fact_type = rng.choice(FACT_TYPES)
    company = rng.choice(companies)
    year, quarter = period(rng)
    fact: dict[str, Any] = {"id": f"g{i}", "fact_type": fact_type,
                            "company": f"{company} {rng.choice(SUFFIX)}".strip(),
                            "period": period_text(year, quarter, rng.randrange(4))}
    if fact_type == "ceo":
        fact["person"] = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    elif fact_type == "headcount":
        fact["value"] = rng.randint(50, 200_000)
    elif fact_type == "gross_margin":
        fact["value"] = f"{rng.randint(50, 800) / 10}%"
    elif fact_type == "eps":
        code, symbol = rng.choice(CURRENCIES)
        fact["value"] = f"{symbol}{rng.randint(1, 2000) / 100:.2f}"
    else:
        code, symbol = rng.choice(CURRENCIES)
        millions = Decimal(rng.randint(10, 500_000)) / 10
        fact.update(amount_fields(rng, millions, code, symbol, 0))
        fact["_amount"] = (millions, code, symbol)  # dropped before judging
    return fact


def restate(rng: random.Random, gold: dict[str, Any], j: int) -> dict[str, Any]:
    """The predicted side's version of a gold fact, in other formats."""
    pred = {k: v for k, v in gold.items() if not k.startswith("_")}
    pred["id"] = f"p{j}"
    name = gold["company"].rsplit(" ", 1)
    pred["company"] = rng.choice([gold["company"], name[0], gold["company"].upper()])
    if "_amount" in gold:
        millions, code, symbol = gold["_amount"]
        pred.pop("unit", None)
        pred.update(amount_fields(rng, millions, code, symbol, rng.randrange(1, 4)))
    return pred


def wrong_number(fact: dict[str, Any]) -> None:
    if "_amount" in fact:
        millions, code, symbol = fact["_amount"]
        fact.pop("unit", None)
        fact["value"] = f"{symbol}{millions * Decimal('1.3'):f}m"
    elif "person" in fact:
        fact["person"] = "Somebody Else"
    elif isinstance(fact.get("value"), int):
        fact["value"] += 17
    else:
        fact["value"] = "99.9%"


def document(n: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    companies = company_names(rng, max(10, n // 10))
    gold = [gold_fact(rng, i, companies) for i in range(n)]
    predicted: list[dict[str, Any]] = []
    for g in gold:
        roll = rng.random()
        if roll < 0.10:  # missed
            continue
        pred = restate(rng, g, len(predicted))
        if roll < 0.20:  # wrong number
            pred = {k: v for k, v in {**g, **pred}.items()}
            wrong_number(pred)
        predicted.append({k: v for k, v in pred.items() if not k.startswith("_")})
    while len(predicted) < n:  # hallucinated facts
        extra = gold_fact(rng, 0, companies)
        extra["id"] = f"p{len(predicted)}"
        predicted.append({k: v for k, v in extra.items() if not k.startswith("_")})
    rng.shuffle(predicted)
    return [{k: v for k, v in g.items() if not k.startswith("_")} for g in gold], predicted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 500, 5000])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    config = {"tolerances": {"value": {"relative": 0.005}}}
    print(f"{'facts/side':>10} {'seconds':>8} {'judged/s':>9} {'TP gold':>8} {'FN':>6} "
          f"{'FP':>6} {'F1':>6}")
    for n in args.sizes:
        gold, predicted = document(n, args.seed)
        started = time.perf_counter()
        result = run_judge(gold, predicted, config, RulesJudge())
        seconds = time.perf_counter() - started
        m = result.metrics
        print(f"{n:>10} {seconds:>8.2f} {2 * n / seconds:>9.0f} {m.tp_gold:>8} {m.fn:>6} "
              f"{m.fp:>6} {m.f1:>6.3f}")


if __name__ == "__main__":
    main()
