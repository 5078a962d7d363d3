"""Find a fact's value in its document's text after the rules judge's text normalisation
(:func:`~.normalize.normalize_text`: case, accents, punctuation, thousands commas, ``&``...), so
``"Maria Lopez"`` is found in ``"... MARÍA LÓPEZ, 54, ..."`` and ``"1,200"`` in ``"1200 units"``.

The text is cut at whitespace into chunks; each chunk is normalised (once per distinct chunk)
into words, each word keeping its chunk's place with the punctuation around it trimmed. A value
is found where its normalised words follow each other in the text's words. Bounded and
deterministic: only the first :data:`MAX_CHARS` characters are searched, every value in one
pass over the places its first word occurs, the places in text order."""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ...core.grounding import Finder
from .normalize import normalize_text, with_decimal_point

#: The text searched, at most (a longer document is searched in its beginning).
MAX_CHARS = 1_000_000
#: A value of more words than this is not searched (a paragraph is no fact's value).
MAX_WORDS = 64
_CHUNK = re.compile(r"\S+")
#: Punctuation around a chunk, left out of its mark ("(aspirin)," marks "aspirin"; "$3.5m" keeps its "$").
_EDGE = re.compile("^[(\\[{\"'\u201c\u2018\u00ab]+|[)\\]}\"'\u201d\u2019\u00bb,.;:!?]+$")


class TextIndex:
    """The words of one text, each with the span of the chunk it came from."""

    def __init__(self, text: str, *, ignore_company_suffixes: bool = False, decimal_separator: str = ".") -> None:
        self.ignore_company_suffixes = ignore_company_suffixes
        self.comma = decimal_separator == ","
        self.words: list[str] = []
        self.places: list[tuple[int, int]] = []
        self._where: dict[str, list[int]] = {}
        cache: dict[str, list[str]] = {}
        for m in _CHUNK.finditer(text, 0, min(len(text), MAX_CHARS)):
            chunk = m.group()
            words = cache.get(chunk)
            if words is None:
                words = cache[chunk] = normalize_text(self._read(chunk)).split()
            if not words:
                continue
            start, end = m.start(), m.end()
            inner = _EDGE.sub("", chunk)  # "(aspirin)," highlights "aspirin"
            if inner:
                start += chunk.index(inner)
                end = start + len(inner)
            for w in words:
                self._where.setdefault(w, []).append(len(self.words))
                self.words.append(w)
                self.places.append((start, end))

    def find(self, value: str) -> Sequence[tuple[int, int]]:
        """The spans where ``value``'s normalised words follow each other in the text."""
        want = normalize_text(self._read(value), ignore_company_suffixes=self.ignore_company_suffixes).split()
        if not want or len(want) > MAX_WORDS:
            return []
        out: list[tuple[int, int]] = []
        n = len(want)
        for i in self._where.get(want[0], ()):
            if self.words[i:i + n] == want:
                span = (self.places[i][0], self.places[i + n - 1][1])
                if not out or out[-1] != span:
                    out.append(span)
        return out


    def _read(self, text: str) -> str:
        """``text`` as the config's decimal separator reads it (a value 1234.5 is in "1.234,5")."""
        return with_decimal_point(text) if self.comma else text


def finder(ignore_company_suffixes: bool = False, decimal_separator: str = ".") -> Callable[[str], Finder]:
    """A :data:`~factjudge.core.grounding.Finder` factory: text -> its :meth:`TextIndex.find`
    (``decimal_separator``: the config's, how the text's figures are written)."""
    return lambda text: TextIndex(text, ignore_company_suffixes=ignore_company_suffixes,
                                  decimal_separator=decimal_separator).find
