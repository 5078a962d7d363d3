"""What the rules judge knows about names: the config's alias groups and the built-in families
(titles, places, company words, honorifics, given-name short forms), read from the lists shipped
in ``factjudge/data/rules/`` (their sources: ``data/rules/SOURCES.md``).

A text is rewritten into a *canonical* form (:class:`Canon`) once per field and value: each phrase
of an alias group or of the titles and company-word lists becomes the group's first value
(``CEO`` -> ``chief executive officer``, ``Pharma`` -> ``pharmaceuticals``), longest phrase first,
whole words only; and a value ending in comma-separated places (``Austin, TX``) or in a
parenthesised disambiguator (``Harcourt_(publisher)``) keeps those apart from its head, so that
:mod:`factjudge.judges.rules.variants` can let one side leave them out. Qualifier words
(:data:`QUALIFIERS`) are never part of a group: they survive rewriting and are compared.

State and country codes are read only where a place is expected, never as words inside a text
(``IN``, ``OR``, ``ME`` and ``MD`` are words or titles too): as a whole value or after a comma,
and a two-letter code only when written in capitals.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources

from ...models import JudgeConfig, RulesKnowledge
from .normalize import Text, is_unit_field, normalize_text, normalize_value, parse_unit
from .units import UNIT_FAMILIES, listed_unit

#: Words that change an office or a claim and never vanish (issue #22; guideline G5): a "former
#: CEO" is not a "CEO". ``ex`` is read as ``former``; ``co`` only before another word (co-founder).
QUALIFIERS = frozenset({
    "former", "acting", "interim", "deputy", "vice", "co", "assistant", "associate", "senior",
    "executive", "nonexecutive", "incoming", "outgoing", "elect", "designate", "emeritus",
    "honorary", "lead", "joint", "junior",
    # as needed is a qualifier of a medication order (issue #37, guideline G13): "q6h PRN" is
    # not "q6h"; the clinical list rewrites "as needed" and "when required" to it
    "prn",
    # a relation name ending in "of" or "to" (successorOf) read by the relations family: the
    # inverse of the bare noun (successor), never equal to it (issue #37 item 3, guideline G23)
    "inverse",
})
_QUALIFIER_SYNONYMS = {"ex": "former", "erstwhile": "former", "previous": "former",
                       "sr": "senior", "jr": "junior", "non": "nonexecutive"}
#: After a name these are a generation (Tom Fuller Jr.), compared by the person-name rule.
_GENERATION_WORDS = frozenset({"sr", "jr", "senior", "junior"})

#: The most words of one phrase in a group (longer phrases are never looked up).
_MAX_PHRASE = 8
#: Phrase lists (data/rules/<name>.txt) and the family switch each belongs to.
_FAMILIES = {"titles": "titles", "companies": "companies", "cities": "places",
             "abbreviations": "abbreviations", "vocabulary": "jobs"}
#: Lists read only in the fields their ``@fields`` line names (issue #37): "PO" is by mouth in a
#: route and a purchase order on an invoice; "dev" is a validation split, and a developer.
_FIELD_FAMILIES = {"clinical": "clinical", "splits": "results", "metrics": "results",
                   "documents": "documents"}
#: Country short forms read as the country inside a text when written in capitals ("US Naval
#: Academy" = "United States Naval Academy"); other codes are words too (IN, OR, ME).
_COUNTRY_SHORT = {"US": "united states", "USA": "united states", "UK": "united kingdom",
                  "UAE": "united arab emirates"}
_PAREN = re.compile(r"^(?P<head>.*?)[\s_]*\((?P<inner>[^()]*)\)[\s_]*$")


@dataclass(frozen=True, slots=True)
class Rewrite:
    canon: tuple[str, ...]
    #: ``titles: CEO = chief executive officer`` or ``alias: ...``: what the reasoning names.
    label: str


@dataclass(frozen=True, slots=True)
class Place:
    #: The canonical name, normalised (``united states``).
    key: str
    #: As the list writes it (``United States``).
    name: str
    kind: str
    #: ISO 3166-1 alpha-2 code of the country (the place's own for a country).
    country: str

    def contains(self, other: Place) -> bool:
        """Whether ``other`` lies in this place or is it (a state in its country)."""
        return self == other or (self.kind == "country" and other.country == self.country)


@dataclass(frozen=True, slots=True)
class Canon:
    """A text as the knowledge reads it."""

    #: The canonical text (rewritten phrases, places by their canonical names).
    norm: str
    #: The head of a place-qualified or disambiguated value (``austin`` of ``Austin, TX``).
    head: str
    #: The places after the head (``Texas``), empty when there are none.
    places: tuple[Place, ...] = ()
    #: A parenthesised disambiguator, normalised (``publisher``), or None.
    disambiguator: str | None = None
    #: What rewrote it (labels of groups, place lists), for the reasoning.
    used: tuple[str, ...] = ()
    #: The whole value is a place.
    place: Place | None = None

    @property
    def tokens(self) -> list[str]:
        return self.norm.split()


def qualifiers(tokens: Iterable[str]) -> tuple[str, ...]:
    """The qualifier words of a text, sorted (``co`` only before another word)."""
    words = list(tokens)
    found = []
    for i, w in enumerate(words):
        if i == len(words) - 1 and i >= 1 and w in _GENERATION_WORDS:
            continue
        q = _QUALIFIER_SYNONYMS.get(w, w)
        if q in QUALIFIERS and (q != "co" or i < len(words) - 1):
            found.append(q)
    return tuple(sorted(found))


# --------------------------------------------------------------------------- shipped lists


def _data(name: str) -> list[str]:
    text = resources.files("factjudge").joinpath(f"data/rules/{name}").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _groups(name: str) -> list[list[str]]:
    return [[v.strip() for v in line.split(" = ") if v.strip()] for line in _data(name)
            if not line.startswith("@fields")]


@functools.cache
def _list_fields(name: str) -> frozenset[str]:
    """The field-name words a list's ``@fields`` line names (empty: read everywhere)."""
    return frozenset(w for line in _data(name) if line.startswith("@fields") for w in line.split()[1:])


def field_words(name: str) -> frozenset[str]:
    """The words of a field name (``route_of_administration`` -> route, of, administration)."""
    return frozenset(w for w in re.split(r"[\W_]+", _CAMEL_HUMP.sub("_", name).casefold()) if w)


_CAMEL_HUMP = re.compile(r"(?<=[a-z])(?=[A-Z])")
#: Fields that name a product, where a listing drops the brand (issue #37, guideline G18).
_PRODUCT_FIELDS = frozenset({"product", "products", "item", "items", "model", "device", "listing"})


@functools.lru_cache(maxsize=1024)
def is_product_field(name: str) -> bool:
    return bool(field_words(name) & _PRODUCT_FIELDS)


#: A group of equivalent values and how the reasoning names a phrase read through it: None for
#: a built-in family (``titles: CFO = chief financial officer``), else the alias group's label.
_Group = tuple[list[str], str, str | None]


@functools.cache
def _family_groups(family: str) -> tuple[_Group, ...]:
    return tuple((g, family, None) for g in _groups(f"{family}.txt"))


def _rewrites(groups: Iterable[_Group]) -> dict[tuple[str, ...], Rewrite]:
    """Phrase -> the canonical wording of every group it is linked to (groups sharing a phrase
    are one: a config's ``Big Boss = CEO`` joins the built-in ``CEO = chief executive officer``).
    The canonical wording is the first value of the first group, built-in lists first."""
    parent: dict[tuple[str, ...], tuple[str, ...]] = {}
    seen: dict[tuple[str, ...], int] = {}

    def root(x: tuple[str, ...]) -> tuple[str, ...]:
        seen.setdefault(x, len(seen))
        while parent.setdefault(x, x) != x:
            parent[x] = x = parent[parent[x]]
        return x

    labels: dict[tuple[str, ...], str] = {}
    for values, family, label in groups:
        # a value is read with and without legal suffixes ("Widget Co" is "widget" in a text)
        written = [(v, tuple(normalize_text(v, ignore_company_suffixes=strip).split()))
                   for v in values for strip in (False, True)]
        phrases = [p for _, p in written if p and len(p) <= _MAX_PHRASE]
        if not phrases:
            continue
        for value, words in [(v, p) for v, p in written if p in phrases]:
            if label is not None or words not in labels:
                labels[words] = label if label is not None else f"{family}: {value} = {values[0]}"
            first, other = root(phrases[0]), root(words)
            if first != other:  # the phrase seen first stays the canonical one
                low, high = sorted((first, other), key=seen.__getitem__)
                parent[high] = low
    return {words: Rewrite(canon := root(words), labels[words] if words != canon else "")
            for words in parent}


@dataclass(frozen=True, slots=True)
class _Places:
    #: Names and dotted or long abbreviations, normalised: read wherever a place is expected.
    names: dict[str, Place]
    #: The same, states and provinces first: after a comma "Georgia" is the US state.
    tail_names: dict[str, Place]
    #: Dotted abbreviations (``Calif.``, ``Wash.``, ``N.Y.``), normalised: read only as written
    #: with their dot or after a comma ("Miss", "Mass" and "La" are words too).
    dotted: dict[str, Place]
    #: Codes (``TX``, ``USA``), as written: read only in capitals.
    codes: dict[str, Place]
    #: Codes shared by a state or province and a country (``CA``, ``DE``, ``IN``): a whole value
    #: that is one of them is no place (after a comma it is the state).
    ambiguous: frozenset[str]


@functools.lru_cache(maxsize=1)
def _places() -> _Places:
    names: dict[str, Place] = {}
    tail_names: dict[str, Place] = {}
    dotted: dict[str, Place] = {}
    codes: dict[str, Place] = {}
    by_code: dict[str, set[str]] = {}
    for line in _data("places.tsv"):
        kind, country, group = line.split("\t")
        values = [v.strip() for v in group.split(" = ")]
        place = Place(key=normalize_text(values[0]), name=values[0], kind=kind, country=country)
        for value in values:
            if value.isupper() and value.isalpha():  # a code: TX, USA, ON
                if kind != "country" or value not in codes:  # a state's code wins after a comma
                    codes[value] = place
                by_code.setdefault(value, set()).add(kind)
            elif "." in value:
                dotted.setdefault(normalize_text(value), place)
            else:
                names.setdefault(normalize_text(value), place)
                if kind != "country" or normalize_text(value) not in tail_names:
                    tail_names[normalize_text(value)] = place
    ambiguous = frozenset(c for c, kinds in by_code.items() if len(kinds) > 1)
    return _Places(names, tail_names, dotted, codes, ambiguous)


#: A US state with its formal prefix (guideline G27): ``State of Delaware`` is Delaware; only a
#: state's own name may follow (``State of Delaware County`` is no state).
_STATE_OF = re.compile(r"^(?:the\s+)?(?:state|commonwealth)\s+of\s+(?P<name>.+)$", re.IGNORECASE)


def _place(raw: str, whole: bool) -> Place | None:
    """The place ``raw`` names, or None; ``whole``: the value is nothing but this."""
    places = _places()
    written = raw.strip().replace("_", " ")
    if whole and (formal := _STATE_OF.match(written)):
        state = places.tail_names.get(normalize_text(formal["name"]))
        if state is not None and state.kind == "state":
            return state
    if written.isupper() and written.replace(".", "").isalpha() and "." not in written:
        if whole and written in places.ambiguous:
            return None
        if written in places.codes:
            return places.codes[written]
    norm = normalize_text(written)
    found = places.names.get(norm) if whole else places.tail_names.get(norm)
    if found is None and ("." in written or not whole):
        found = places.dotted.get(norm)
    return found


@functools.lru_cache(maxsize=1)
def nicknames() -> dict[str, str]:
    """Given name (normalised) -> its full form; a full form maps to itself."""
    table: dict[str, str] = {}
    for group in _groups("nicknames.txt"):
        for value in group:
            table.setdefault(value, group[0])
    return table


@functools.lru_cache(maxsize=1)
def honorific_words() -> tuple[frozenset[str], frozenset[str]]:
    """(honorifics, suffixes) as written after normalisation."""
    pairs = [line.split("\t") for line in _data("honorifics.txt")]
    return (frozenset(w for k, w in pairs if k == "honorific"),
            frozenset(w for k, w in pairs if k == "suffix"))


# --------------------------------------------------------------------------- the knowledge


@dataclass
class Knowledge:
    """The alias groups and families of one config, and a cache of the texts read with them."""

    families: RulesKnowledge
    everywhere: dict[tuple[str, ...], Rewrite]
    per_field: dict[str, dict[tuple[str, ...], Rewrite]]
    #: The config's ignore_company_suffixes: how the head of a qualified value is normalised.
    strip_suffixes: bool = True
    _cache: dict[tuple[str | None, str], Canon] = field(default_factory=dict)
    #: What other modules work out once per field and value (variants: index keys).
    memo: dict[tuple[str, str, str], frozenset[tuple[str, ...]]] = field(default_factory=dict)
    #: Lists read only in some fields (``clinical``: route, frequency...): their field words and
    #: the groups, and the tables built from them, once per field name.
    by_field: tuple[tuple[frozenset[str], tuple[_Group, ...]], ...] = ()
    groups: tuple[_Group, ...] = ()
    field_aliases: dict[str, tuple[_Group, ...]] = field(default_factory=dict)
    _tables: dict[str, tuple[str | None, dict[tuple[str, ...], Rewrite]]] = field(default_factory=dict)

    def _keyed_table(self, name: str) -> tuple[str | None, dict[tuple[str, ...], Rewrite]]:
        """The table a field is read with and a key naming it (None: the common one)."""
        found = self._tables.get(name)
        if found is None:
            words = field_words(name) if self.by_field else frozenset()
            extra = [g for fields, groups in self.by_field if fields & words for g in groups]
            if not extra:
                found = (name, self.per_field[name]) if name in self.per_field else (None, self.everywhere)
            else:
                own = [g for g in self.groups if g[1] != "alias"] + extra + [
                    g for g in self.groups if g[1] == "alias"] + list(self.field_aliases.get(name, ()))
                found = (name, _rewrites(own))
            self._tables[name] = found
        return found

    def table(self, name: str) -> dict[tuple[str, ...], Rewrite]:
        return self._keyed_table(name)[1]

    def canon(self, name: str, raw: str, norm: str) -> Canon:
        relation = self.families.relations and is_relation_field(name)
        table_key = self._keyed_table(name)[0]
        key = (f"{_RELATION_KEY}{table_key or ''}" if relation else table_key, raw)
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) > 200_000:  # a bound for huge documents; entries are cheap
                self._cache.clear()
                self.memo.clear()
            if relation:  # read as a relation name, then with the aliases and lists as before
                rel = relation_canon(raw)
                text, used = rewrite(self.table(name), rel.norm)
                found = self._cache[key] = Canon(norm=text, head=text, used=(*rel.used, *used))
                return found
            # a route or frequency is no place ("SL" is sublingual, not Sierra Leone)
            places = self.families.places and self.table(name) is self.everywhere or name in self.per_field
            found = self._cache[key] = self._read(self.table(name), raw, norm, places)
        return found

    def _read(self, table: dict[tuple[str, ...], Rewrite], raw: str, norm: str,
              places: bool = True) -> Canon:
        if self.families.places and places:
            if (whole := _place(raw, whole=True)) is not None:
                return Canon(norm=whole.key, head=whole.key, place=whole,
                             used=(f"places: {whole.name}",) if whole.key != norm else ())
            qualified = _qualified(table, raw, self.strip_suffixes)
            if qualified is not None:
                return qualified
        paren = _PAREN.match(raw)
        if paren and paren["head"].strip():
            head, used = rewrite(table, normalize_text(paren["head"], ignore_company_suffixes=self.strip_suffixes))
            inner = normalize_text(paren["inner"])
            if self.families.abbreviations and inner and rewrite(table, inner)[0] == head != inner:
                # "value-added tax (VAT)": the expansion with its own abbreviation (guideline G17)
                return Canon(norm=head, head=head, used=(*used, f"abbreviations: ({paren['inner']})"))
            return Canon(norm=f"{head} {inner}".strip(), head=head, disambiguator=inner, used=used)
        if self.families.units and any(c.isdigit() for c in norm):
            norm = _GLUED_UNIT.sub(_unglue, norm)
        text, used = rewrite(table, _countries_in(raw, norm) if self.families.places else norm)
        if self.families.bounds and (bound := _bound(text)) != text:
            text, used = bound, (*used, "bounds: the same bound in other words")
        return Canon(norm=text, head=text, used=used)


#: Writings of one bound next to a number (issue #37, guideline G20), as normalised texts: the
#: lower bounds read as "at least N", the upper ones as "at most N". Over, more than, under and
#: less than are other bounds (strict) and stay as written.
_LOWER = [re.compile(p) for p in (
    r"\b(?P<n>\d+(?:\.\d+)?) plus\b", r"\b(?:a )?minimum (?:of )?(?P<n>\d+(?:\.\d+)?)\b",
    r"\bmin (?P<n>\d+(?:\.\d+)?)\b", r"\b(?P<n>\d+(?:\.\d+)?) or more\b",
    r"\bno (?:less|fewer) than (?P<n>\d+(?:\.\d+)?)\b")]
_LOWER_AFTER = re.compile(r"\b(?P<n>\d+(?:\.\d+)?) (?P<unit>[a-z]+) (?:minimum|min|or more)$")
_UPPER = [re.compile(p) for p in (
    r"\bup to (?P<n>\d+(?:\.\d+)?)\b", r"\b(?:a )?maximum (?:of )?(?P<n>\d+(?:\.\d+)?)\b",
    r"\bmax (?P<n>\d+(?:\.\d+)?)\b", r"\bno more than (?P<n>\d+(?:\.\d+)?)\b")]
_UPPER_AFTER = re.compile(r"\b(?P<n>\d+(?:\.\d+)?) (?P<unit>[a-z]+) (?:maximum|max|or less|or fewer)$")


#: A number glued to a word in a text ("cloud backup 2tb"): apart when the word is a listed unit.
_GLUED_UNIT = re.compile(r"\b(\d+(?:\.\d+)?)([a-z]+)\b")


def _unglue(m: re.Match[str]) -> str:
    return f"{m[1]} {m[2]}" if listed_unit(m[2], UNIT_FAMILIES) is not None else m[0]


def text_units(tokens: Iterable[str]) -> frozenset[str]:
    """The listed units (data sizes, Hz, durations...) among a text's words, by name."""
    return frozenset(u.name for t in tokens if (u := listed_unit(t, UNIT_FAMILIES)) is not None)


def _bound(text: str) -> str:
    """``text`` with each bound notation written the one way (``5 plus years`` -> ``at least 5
    years``); a bare number stays bare."""
    if not any(c.isdigit() for c in text):
        return text
    text = _LOWER_AFTER.sub(r"at least \g<n> \g<unit>", text)
    text = _UPPER_AFTER.sub(r"at most \g<n> \g<unit>", text)
    for pattern in _LOWER:
        text = pattern.sub(r"at least \g<n>", text)
    for pattern in _UPPER:
        text = pattern.sub(r"at most \g<n>", text)
    return text.replace("at least at least", "at least").replace("at most at most", "at most")


def _qualified(table: dict[tuple[str, ...], Rewrite], raw: str, strip: bool) -> Canon | None:
    """``Austin, TX`` -> head ``austin``, places (Texas,); None unless every part after the first
    comma is a place."""
    parts = raw.replace("_", " ").split(",")
    if len(parts) < 2 or not parts[0].strip():
        return None
    places = [_place(p, whole=False) for p in parts[1:]]
    if any(p is None for p in places):
        return None
    found = tuple(p for p in places if p is not None)
    head, used = rewrite(table, normalize_text(parts[0], ignore_company_suffixes=strip))
    written = [normalize_text(p) for p in parts[1:]]
    used += tuple(f"places: {p.name}" for p, w in zip(found, written, strict=True) if p.key != w)
    return Canon(norm=" ".join([head, *(p.key for p in found)]), head=head, places=found, used=used)


def _countries_in(raw: str, norm: str) -> str:
    capitals = {w for w in re.split(r"[\W_]+", raw) if w in _COUNTRY_SHORT}
    if not capitals:
        return norm
    return " ".join(_COUNTRY_SHORT[w.upper()] if w.upper() in capitals else w for w in norm.split())


def rewrite(table: dict[tuple[str, ...], Rewrite], norm: str) -> tuple[str, tuple[str, ...]]:
    """``norm`` with each phrase of ``table`` replaced by its canonical wording, longest first."""
    words = [_QUALIFIER_SYNONYMS.get(w, w) if w == "ex" else w for w in norm.split()]
    if not table:
        return " ".join(words), ()
    out: list[str] = []
    used: list[str] = []
    i = 0
    while i < len(words):
        for n in range(min(_MAX_PHRASE, len(words) - i), 0, -1):
            hit = table.get(tuple(words[i:i + n]))
            if hit is not None:
                out.extend(hit.canon)
                if hit.label and hit.label not in used:
                    used.append(hit.label)
                i += n
                break
        else:
            out.append(words[i])
            i += 1
    return " ".join(out), tuple(used)


# --------------------------------------------------------------------------- relation names

#: The cache key of a relation field's texts (read the one way in every relation field).
_RELATION_KEY = "@relation"
#: The words of a relation name as written: camelCase humps, an acronym before a hump
#: (``ICAOLocationIdentifier``), digits; brackets, quotes, slashes and underscores are spaces.
_RELATION_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+[a-z]*")
#: Leading auxiliaries of a relation written as a phrase: tense is no part of the relation
#: ("wasBornIn" = "bornIn", "isPartOf" = "partOf"; guideline G22). Dropped only before more words.
_AUXILIARIES = frozenset({"is", "was", "are", "were", "has", "have", "had", "been", "be"})
#: A unit written into a relation's name ("elevationAboveTheSeaLevel_(in_metres)"): the value
#: carries the quantity, so the relation is the same (G22); the values are still compared.
_NAME_UNITS = frozenset({"metres", "meters", "metre", "meter", "m", "feet", "foot", "ft", "km",
                         "kilometres", "kilometers", "minutes", "min", "seconds", "kg", "kilograms",
                         "days", "years", "inhabitants", "square", "per"})
#: Agent nouns a participle with "by" is read as ("distributed by" = "distributor"): the two
#: name the same role in the same direction (A distributor B: B distributes A = A distributed by
#: B); an active verb ("owns") is the inverse and is never read so.
_IRREGULAR_PARTICIPLES = {"written": "writ", "made": "mak", "led": "lead", "built": "build",
                          "run": "runn", "held": "hold", "sung": "sing"}


@functools.lru_cache(maxsize=1024)  # asked for every text compared
def is_relation_field(name: str) -> bool:
    """Whether a field holds a relation name (the ``@fields`` line of relations.txt)."""
    return bool(field_words(name) & _list_fields("relations.txt"))


def relation_words(raw: str) -> tuple[str, ...]:
    """The words of a relation name, lower case (``IMDbNumber`` -> imdb number)."""
    pieces = _RELATION_WORD.findall(raw)
    return tuple(p.casefold() for p in pieces)


@functools.cache
def _relation_table() -> dict[tuple[str, ...], tuple[str, ...]]:
    """Phrase of relations.txt -> its line's first phrase."""
    table: dict[tuple[str, ...], tuple[str, ...]] = {}
    for group in _groups("relations.txt"):
        for value in group:
            table.setdefault(tuple(value.split()), tuple(group[0].split()))
    return table


def _agent(words: tuple[str, ...]) -> tuple[str, ...]:
    """``music composed by`` and ``music composer`` -> ``music composer``; others unchanged."""
    *rest, last = words
    if last == "by" and rest:
        verb = rest.pop()
        stem = _IRREGULAR_PARTICIPLES.get(verb) or (verb[:-2] if verb.endswith("ed") and len(verb) > 4 else None)
        return (*rest, f"{stem}er") if stem else words
    if len(last) >= 6 and last.endswith(("er", "or")):
        return (*rest, f"{last[:-2]}er")
    return words


@functools.lru_cache(maxsize=65536)
def relation_canon(raw: str) -> Canon:
    """A relation name as the relations family reads it (guideline G22): its words, without
    leading auxiliaries or a unit written into it, a listed phrase as its relation's first one,
    and a participle with "by" as its agent noun."""
    words = relation_words(raw)
    if not words:  # no letter or digit ("-", "??"): a text like any other
        norm = normalize_text(raw)
        return Canon(norm=norm, head=norm)
    plain = " ".join(words)
    while len(words) > 1 and words[0] in _AUXILIARIES:
        words = words[1:]
    if "in" in words[1:-1]:  # "... in square kilometres": the unit the value is given in
        cut = len(words) - 1 - words[::-1].index("in")
        if all(w in _NAME_UNITS for w in words[cut + 1:]):
            words = words[:cut]
    table = _relation_table()
    listed = table.get(words)
    if listed is not None:
        words = listed
    elif len(words) > 1 and words[-1] in ("of", "to"):
        # "A successorOf B" (A is B's successor) is the inverse of "A successor B" (B is A's):
        # the preposition is kept as the qualifier word "inverse", never dropped (G23)
        words = (*_agent(words[:-1]), "inverse")
    else:
        words = _agent(words)
    norm = " ".join(words)
    used = (f"relations: {raw.strip()} = {norm}",) if norm != plain else ()
    return Canon(norm=norm, head=norm, used=used)


def build_knowledge(config: JudgeConfig) -> Knowledge:
    """The knowledge a config asks for (its aliases join the built-in groups they share a
    phrase with)."""
    families = config.rules_knowledge
    base: list[_Group] = [g for name, family in _FAMILIES.items() if getattr(families, family)
                          for g in _family_groups(name)]
    by_field = tuple((_list_fields(f"{name}.txt"), _family_groups(name))
                     for name, family in _FIELD_FAMILIES.items() if getattr(families, family))
    aliases: list[_Group] = [(g.values, "alias", f"alias '{g.label()}'") for g in config.aliases
                             if g.fields is None]
    everywhere = _rewrites([*base, *aliases])
    per_field: dict[str, dict[tuple[str, ...], Rewrite]] = {}
    field_aliases: dict[str, tuple[_Group, ...]] = {}
    for name in {n for g in config.aliases for n in g.fields or ()}:
        own: list[_Group] = [(g.values, "alias", f"alias '{g.label()}'") for g in config.aliases
                             if name in (g.fields or ())]
        field_aliases[name] = tuple(own)
        per_field[name] = _rewrites([*base, *aliases, *own])
    return Knowledge(families=families, everywhere=everywhere, per_field=per_field,
                     strip_suffixes=config.ignore_company_suffixes, by_field=by_field,
                     groups=(*base, *aliases), field_aliases=field_aliases)


#: Knowledge already built, by what it is built from: a run of many small documents builds
#: one (building it per document made WebNLG's 2,155 documents 4x slower).
_BUILT: dict[str, Knowledge] = {}


#: The key of each config object met last (id -> (config, key)): a run asks for every document
#: with the same config, and serialising 40 KB of alias groups per document made a run 8x slower.
_KEYS: dict[int, tuple[JudgeConfig, str]] = {}


def _key_of(config: JudgeConfig) -> str:
    found = _KEYS.get(id(config))
    if found is not None and found[0] is config:  # the config is held, so its id is not reused
        return found[1]
    key = json.dumps([[g.model_dump() for g in config.aliases], config.rules_knowledge.model_dump(),
                      config.ignore_company_suffixes], sort_keys=True)
    if len(_KEYS) >= 8:
        _KEYS.clear()
    _KEYS[id(config)] = (config, key)
    return key


def knowledge_for(config: JudgeConfig) -> Knowledge:
    """:func:`build_knowledge`, once per alias groups and families (a config is read as it was
    when first met: a run's config does not change while it runs)."""
    key = _key_of(config)
    found = _BUILT.get(key)
    if found is None:
        if len(_BUILT) >= 8:
            _BUILT.clear()
        found = _BUILT[key] = build_knowledge(config)
    return found


def alias_check(config: JudgeConfig) -> list[str]:
    """Warnings for alias groups the rules judge cannot apply, which would otherwise be ignored
    silently. Groups rewrite texts only: a value read as a number, an amount of money, a
    percentage or a date is compared by value (and ``tolerances``), and a currency or unit field
    (``currency``, ``unit``, ``*_unit``...) is read as a unit (``US$`` = ``USD`` already)."""
    out = []
    for group in config.aliases:
        name = f"alias group '{group.label()}'"
        numbers = [v for v in group.values if not isinstance(normalize_value(v), Text)]
        if numbers:
            out.append(f"{name}: the rules judge reads {', '.join(map(repr, numbers))} as a number, an "
                       "amount, a percentage or a date, compared by value (set 'tolerances' to allow a "
                       "difference), never rewritten by an alias: the group does not apply to "
                       f"{'it' if len(numbers) == 1 else 'them'}")
        unit_fields = [f for f in group.fields or () if is_unit_field(f)]
        currencies = {parse_unit(v).currency for v in group.values}
        if unit_fields:
            out.append(f"{name}: {', '.join(map(repr, unit_fields))} is a currency or unit field, read "
                       "as a unit, never rewritten by an alias: the group is ignored there")
        elif group.fields is None and currencies != {None} and len(currencies) > 1:
            out.append(f"{name}: the rules judge reads currency and unit fields ('currency', 'unit', "
                       "'*_unit'...) as units, never rewritten by an alias: the group is ignored there")
    return out
