"""Numeric settings' ranges, checked in one way wherever a number comes in (an option, a spec,
a constructor argument): finite, of the right kind, inside the range, said in one line."""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

#: The largest count read from a file or a server that is taken as a count: every count meets
#: floats (ratios, intervals, prices), and 2**53 is the last integer a float holds exactly (a
#: count of 10**400 ended a finished run in an OverflowError traceback).
COUNT_MAX = 2**53


@dataclass(frozen=True)
class Bound:
    """``low`` (excluded when ``above``) to ``high``; ``whole`` for an int."""

    low: float
    high: float
    above: bool = False
    whole: bool = False

    def problem(self, value: object) -> str | None:
        """Why ``value`` is out of this range (NaN and infinities are), or None."""
        if isinstance(value, (int,) if self.whole else (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # an int beyond any float
                number = math.inf
            if (number > self.low if self.above else number >= self.low) and number <= self.high:
                return None  # NaN fails both comparisons
        return f"must be {self.describe()}, got {_shown(value)}"

    def describe(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        low = f"above {_number(self.low)} and at most" if self.above else f"from {_number(self.low)} to"
        return f"{kind} {low} {_number(self.high)}"


def _number(x: float) -> str:
    return str(int(x)) if x == int(x) else f"{x:g}"


def _shown(value: object) -> str:
    """The value as given, cut short (a 5,000-digit int cannot even be printed whole)."""
    try:
        text = repr(value)
    except ValueError:
        return "a number with too many digits"
    return text if len(text) <= 40 else text[:37] + "..."


def numbers_problem(numbers: Iterable[tuple[str, Bound, object]]) -> str | None:
    """``NAME must be ...`` for the first of (name, range, value) out of its range, None when all
    are in (a value of None is an unset optional setting)."""
    for name, bound, value in numbers:
        problem = None if value is None else bound.problem(value)
        if problem:
            return f"{name} {problem}"
    return None
