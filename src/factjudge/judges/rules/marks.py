"""What normalising a text leaves out that still tells two texts apart.

Two texts are compared after :func:`~.normalize.normalize_text` (case, accents, punctuation, the
words sorted for their similarity), which is right for names and wrong for four marks a value
written as text may carry (a review found each linking two different values):

* a **currency symbol** (``$2.50 per share`` vs ``€2.50 per share``: the symbols are punctuation
  to the normaliser, and the texts were equal);
* **numbers joined** by ``/``, ``:`` or ``-`` (``3/5/24`` vs ``5/3/24``, a ratio ``2:1`` vs ``1:2``,
  ``10:00-15:30``): the sorted words lose their order;
* a **month name** in English, German, French, Spanish, Italian, Dutch or Portuguese (``15. Juni
  2024`` vs ``15. Juli 2024``: one letter apart, similarity 92);
* a **time zone** written after a time (``10:00 CET`` vs ``10:00 EST``, six hours apart).

And under a decimal comma (``decimal_separator: ","``) the **numbers as the config reads them**:
the normaliser takes ``1,234`` for one thousand two hundred and thirty-four, the config for 1.234.

Each is compared only where both texts carry it, so a mark on one side alone (``$2.50`` vs
``2.50``) changes nothing. Pure: two raw texts in, the reason they differ or None out.
"""
from __future__ import annotations

import re
import unicodedata
from decimal import Decimal

from .normalize import MONTH_NAMES, format_decimal, with_decimal_point

#: Currency symbols (codes such as ``EUR`` are words, which the normaliser keeps).
_CURRENCY = re.compile(r"[$€£¥₹₩₽₺₪₫฿₴₦₱¢]")
#: Numbers joined by a slash, a colon or a dash (a date, a ratio, a time, a range).
_JOINED = re.compile(r"\d+(?:\s?[/:\-]\s?\d+)+")
_NUMBER = re.compile(r"\d+")
_POINT_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_DIGIT = re.compile(r"\d")
#: A time of day and the zone written after it.
_ZONE = re.compile(r"\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?\s*(?P<zone>[a-z]{2,5})\b")
_ZONES = frozenset({
    "utc", "gmt", "z", "cet", "cest", "eet", "eest", "wet", "west", "bst", "ist", "msk", "est", "edt",
    "cst", "cdt", "mst", "mdt", "pst", "pdt", "akst", "akdt", "hst", "ast", "adt", "nst", "ndt", "aest",
    "aedt", "acst", "acdt", "awst", "nzst", "nzdt", "jst", "kst", "hkt", "sgt", "pht", "wib", "brt",
    "art", "clt", "sast", "wat", "cat", "eat", "gst", "pkt", "npt", "ict",
})
_WORD = re.compile(r"[^\W\d_]+")
#: Any month name of :data:`~.normalize.MONTH_NAMES` as a word (a search before the words are read).
_MONTH = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, MONTH_NAMES), key=len, reverse=True)) + r")\b",
                    re.IGNORECASE)


def _prep(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _joined(text: str) -> list[str]:
    """The groups of joined numbers as written, in order, leading zeros left out (``03/05`` = ``3/5``)."""
    return sorted(_NUMBER.sub(lambda n: str(int(n.group())), m.group().replace(" ", ""))
                  for m in _JOINED.finditer(text))


def _months(words: list[str]) -> list[int]:
    return sorted(MONTH_NAMES[w] for w in words if w in MONTH_NAMES)


def _comma_numbers(text: str) -> list[str]:
    """The numbers of ``text`` read with a decimal comma (thousands dots left out)."""
    return sorted(format_decimal(Decimal(n)) for n in _POINT_NUMBER.findall(with_decimal_point(text)))


def lost_difference(a: str, b: str, decimal: str = ".") -> str | None:
    """Why two texts whose normal forms may agree say different things, or None (module docs).
    Each mark is looked for in both texts first (one search each, in C): most pairs of texts are
    names holding none, and a pair of different texts is compared once a run."""
    if not (_DIGIT.search(a) and _DIGIT.search(b)):
        return None  # every mark goes with a number: an amount, a date, a ratio, a time
    if _CURRENCY.search(a) and _CURRENCY.search(b):
        ca, cb = set(_CURRENCY.findall(_prep(a))), set(_CURRENCY.findall(_prep(b)))
        if ca != cb:
            return f"different currencies ({' '.join(sorted(ca))} vs {' '.join(sorted(cb))})"
    if _JOINED.search(a) and _JOINED.search(b) and _joined(a) != _joined(b):
        return "numbers joined in another order or way"
    if _MONTH.search(a) and _MONTH.search(b):
        ma, mb = _months(_WORD.findall(_prep(a))), _months(_WORD.findall(_prep(b)))
        if ma and mb and ma != mb:
            return "different months"
    if ":" in a and ":" in b:
        za = sorted(z for z in _ZONE.findall(_prep(a)) if z in _ZONES)
        zb = sorted(z for z in _ZONE.findall(_prep(b)) if z in _ZONES)
        if za and zb and za != zb:
            return f"different time zones ({' '.join(za)} vs {' '.join(zb)})"
    if decimal == "," and ("," in a or "," in b):
        na, nb = _comma_numbers(a), _comma_numbers(b)
        if na != nb:
            return f"numbers differ with a decimal comma ({' '.join(na)} vs {' '.join(nb)})"
    return None
