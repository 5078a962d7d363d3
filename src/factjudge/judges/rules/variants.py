"""Variants of one name that the rules judge accepts, each with its guard (issue #22 item 3).

Given two texts that are not equal after normalisation and the knowledge's rewriting
(:mod:`factjudge.judges.rules.knowledge`), each rule either decides (a match, or a definite
mismatch that no string similarity may overturn) or stays silent:

* **places**: a state, province or country after a comma, or a parenthesised disambiguator, may
  be absent on one side (``Berlin`` = ``Berlin, Germany``); two that disagree never match
  (``Paris, France`` vs ``Paris, Texas``; ``Mercury_(planet)`` vs ``Mercury_(element)``);
* **person names** (values written as names, 1-5 capitalised words): the same surname, and given
  names that agree: equal, an initial of the other (``J. Smith`` = ``Jane Smith``, never
  ``Robert Smith``), or a short form (``Bob`` = ``Robert``); middle names, honorifics and
  generational suffixes optional, but ``Jr.`` vs ``Sr.`` never match; the surname alone
  (``Smith``) only in a field that holds a person. A different given name with the same surname is
  a definite mismatch (``Daniel`` vs ``Danielle`` Reyes, similarity 92);
* **organisations**: generic trailing words may be absent (``Sequoia`` = ``Sequoia Capital``,
  ``Aston Villa`` = ``Aston Villa F.C.``), never distinctive ones (``Google`` vs ``Google
  Cloud``); an acronym written in capitals equals the initials of the other side's words
  (``IBM`` = ``International Business Machines``, ``P&G`` = ``Procter & Gamble``);
* **relation names** (fields such as ``relation``, ``property``, ``predicate``): the same word
  stems (``cinematography`` = ``cinematographer``, ``headquarter`` = ``headquarters``).

A looser reading (the surname alone, a dropped generic word) scores below a closer one, so another
candidate of the document that fits better wins.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .knowledge import Canon, Knowledge, honorific_words, is_product_field, nicknames

#: Score of a match by a looser reading, below the similarity threshold's default (90), so an
#: equal or merely re-spelt candidate is preferred.
LOOSE_SCORE = 85.0
VARIANT_SCORE = 95.0

#: Trailing words that name the kind of organisation, not which one (guideline G6), as written
#: after normalisation. Not "bank", "services", "cloud", "financial", "technologies": those
#: distinguish a subsidiary or a division (Toyota vs Toyota Financial Services).
GENERIC_ORG_WORDS = frozenset({
    "capital", "group", "holdings", "holding", "partners", "ventures", "motor", "motors",
    "company", "companies", "corporation", "incorporated", "limited", "fc", "afc", "cf", "sc",
    "club", "investments", "management", "associates", "enterprises", "worldwide", "platforms",
    "brands",
})
#: Leading words of a club's name that may be absent (SV Werder Bremen = Werder Bremen).
LEADING_ORG_WORDS = frozenset({"fc", "afc", "sv", "sc", "ac", "as", "cf", "cd", "vfb", "vfl", "tsv"})
_ACRONYM_STOP = frozenset({"of", "and", "the", "for", "de", "du", "des", "la", "le", "a", "an",
                           "in", "on", "at", "und", "et", "y"})
_NAME_PARTICLES = frozenset({"de", "van", "von", "der", "den", "da", "di", "du", "la", "le", "del",
                             "bin", "al", "dos", "das", "ter", "ten", "st"})
_GENERATIONS = frozenset({"jr", "junior", "sr", "senior", "2", "3", "4"})
_RELATION_FIELDS = ("relation", "property", "predicate", "relationship")
_PERSON_FIELDS = ("person", "people", "name", "ceo", "cfo", "coo", "cto", "founder", "author",
                  "director", "executive", "officer", "manager", "leader", "member", "spouse",
                  "chair", "president", "employee", "appointee", "speaker", "player", "writer",
                  "artist", "creator", "winner", "candidate", "minister", "chief", "head")
_NOT_PERSON_FIELDS = ("company", "organization", "organisation", "org", "entity", "firm", "place",
                      "city", "location", "country", "brand", "product", "event", "type", "unit")
_STEM_ENDINGS = ("ations", "ation", "ers", "er", "ors", "or", "ies", "y", "s")
_NAME_WORD = re.compile(r"[A-ZÀ-ÖØ-Þ][\w'’.-]*\.?|[a-z]{1,3}")
_SPLIT = re.compile(r"[\s_]+")


@dataclass(frozen=True, slots=True)
class Decision:
    ok: bool
    detail: str
    score: float


def is_person_field(name: str) -> bool:
    low = name.casefold()
    return any(w in low for w in _PERSON_FIELDS) and not any(w in low for w in _NOT_PERSON_FIELDS)


def is_relation_field(name: str) -> bool:
    low = name.casefold()
    return any(w in low for w in _RELATION_FIELDS)


# --------------------------------------------------------------------------- places


def _place_rule(ca: Canon, cb: Canon) -> Decision | None:
    if not (ca.places or cb.places) or ca.head != cb.head:
        return None
    for p in ca.places:
        for q in cb.places:
            if not (p.contains(q) or q.contains(p)):
                return Decision(False, f"different places ({p.name} vs {q.name})", 0.0)
    shown_a = ", ".join(p.name for p in ca.places) or "none"
    shown_b = ", ".join(p.name for p in cb.places) or "none"
    return Decision(True, f"the same place (qualifiers {shown_a} / {shown_b}: a state or country "
                          "may be absent)", VARIANT_SCORE)


def _disambiguator_rule(ca: Canon, cb: Canon) -> Decision | None:
    if ca.disambiguator is None and cb.disambiguator is None or ca.head != cb.head:
        return None
    if ca.disambiguator is not None and cb.disambiguator is not None:
        if ca.disambiguator != cb.disambiguator:
            return Decision(False, f"different disambiguators ({ca.disambiguator} vs "
                                   f"{cb.disambiguator})", 0.0)
        return None
    one = ca.disambiguator or cb.disambiguator
    return Decision(True, f"the same name; the disambiguator ({one}) is on one side only", VARIANT_SCORE)


# --------------------------------------------------------------------------- person names


@dataclass(frozen=True, slots=True)
class _Name:
    given: tuple[str, ...]
    surname: str
    generation: str | None
    dropped: tuple[str, ...]


def _read_name(raw: str, norm: str, kn: Knowledge) -> _Name | None:
    """A value written as a person's name, or None."""
    return _read_name_with(raw, norm, kn.families.honorifics)


@functools.lru_cache(maxsize=65536)  # each value is read for every candidate it meets
def _read_name_with(raw: str, norm: str, drop_honorifics: bool) -> _Name | None:
    words = [w for w in _SPLIT.split(raw.strip()) if w and w not in ("&",)]
    if not 1 <= len(words) <= 6 or not all(_NAME_WORD.fullmatch(w) for w in words):
        return None
    if not any(w[0].isupper() for w in words):
        return None
    tokens = norm.split()
    honorifics, suffixes = honorific_words()
    dropped: list[str] = []
    if drop_honorifics:
        while tokens and tokens[0] in honorifics and len(tokens) > 1:
            dropped.append(tokens.pop(0))
    generation = None
    while len(tokens) > 1 and tokens[-1] in suffixes and (drop_honorifics or tokens[-1] in _GENERATIONS):
        word = tokens.pop()
        if word in _GENERATIONS:
            generation = {"junior": "jr", "senior": "sr"}.get(word, word)
        else:
            dropped.append(word)
    if not tokens or len(tokens) > 5 or not all(t.isalpha() for t in tokens):
        return None
    given = tuple(t for t in tokens[:-1] if t not in _NAME_PARTICLES)
    return _Name(given, tokens[-1], generation, tuple(dropped))


def _given_agree(x: str, y: str) -> str | None:
    """How two given names agree, or None."""
    if x == y:
        return "same"
    if (len(x) == 1 or len(y) == 1) and x[0] == y[0]:
        return f"initial {min(x, y, key=len).upper()}. = {max(x, y, key=len).capitalize()}"
    nick = nicknames()
    if x in nick and nick.get(x) == nick.get(y):
        return f"short form {x.capitalize()} = {y.capitalize()}"
    return None


def _person_rule(a_raw: str, a_norm: str, b_raw: str, b_norm: str, field_name: str,
                 kn: Knowledge) -> Decision | None:
    na, nb = _read_name(a_raw, a_norm, kn), _read_name(b_raw, b_norm, kn)
    if na is None or nb is None or na.surname != nb.surname:
        return None
    if na.generation and nb.generation and na.generation != nb.generation:
        return Decision(False, f"different generations ({na.generation} vs {nb.generation})", 0.0)
    notes = []
    if not na.given or not nb.given:
        if na.given or nb.given:
            if not is_person_field(field_name):
                return None
            notes.append("the surname alone, nothing contradicts it")
    else:
        how = _given_agree(na.given[0], nb.given[0]) if kn.families.names else (
            "same" if na.given[0] == nb.given[0] else None)
        if how is None:
            if not is_person_field(field_name) and len(na.given) != len(nb.given):
                return None  # "SV Werder Bremen" is no person: no definite answer
            return Decision(False, f"different given names ({na.given[0].capitalize()} vs "
                                   f"{nb.given[0].capitalize()})", 0.0)
        if how != "same":
            notes.append(how)
        middle_a, middle_b = na.given[1:], nb.given[1:]
        if middle_a and middle_b and _given_agree(middle_a[0], middle_b[0]) is None:
            return Decision(False, f"different middle names ({middle_a[0]} vs {middle_b[0]})", 0.0)
        if len(middle_a) != len(middle_b):
            notes.append("a middle name on one side only")
    if bool(na.generation) != bool(nb.generation):
        if not is_person_field(field_name) and (na.generation or nb.generation) in ("2", "3", "4"):
            return None  # "Werder Bremen II" is the reserve team, not a generation
        notes.append("a generational suffix on one side only")
    if na.dropped or nb.dropped:
        notes.append(f"{', '.join((*na.dropped, *nb.dropped))} on one side only")
    if not notes:
        return None
    loose = notes[0].startswith("the surname alone")
    return Decision(True, "the same person: " + "; ".join(notes), LOOSE_SCORE if loose else VARIANT_SCORE)


# --------------------------------------------------------------------------- organisations


def _org_rule(ca: Canon, cb: Canon, field_name: str) -> Decision | None:
    if is_person_field(field_name):
        return None
    short, long_ = sorted((ca.tokens, cb.tokens), key=len)
    if not short or len(short) == len(long_):
        return None
    n = len(short)
    if long_[:n] == short and all(w in GENERIC_ORG_WORDS for w in long_[n:]) and any(
            w not in GENERIC_ORG_WORDS for w in short):
        extra = " ".join(long_[n:])
    elif long_[-n:] == short and all(w in LEADING_ORG_WORDS for w in long_[:-n]):
        extra = " ".join(long_[:-n])
    else:
        return None
    return Decision(True, f"the same organisation; the generic word(s) '{extra}' on one side only",
                    LOOSE_SCORE)


def _acronym_rule(a_raw: str, cb: Canon, b_raw: str, ca: Canon) -> Decision | None:
    for raw, other in ((a_raw, cb), (b_raw, ca)):
        written = raw.strip()
        if " " in written or "_" in written or not 2 <= len(written) <= 8:
            continue
        letters = "".join(ch for ch in written if ch.isupper())
        if len(letters) < 2 or not all(ch.isalpha() or ch in "&." for ch in written):
            continue
        words = [w for w in other.tokens if w not in _ACRONYM_STOP]
        if len(words) == len(letters) and "".join(w[0] for w in words) == letters.casefold():
            return Decision(True, f"acronym {written} = the initials of {other.norm!r}", VARIANT_SCORE)
    return None


# --------------------------------------------------------------------------- relations


def stem(word: str) -> str:
    """A crude suffix stem, enough for relation names (cinematography / cinematographer)."""
    for ending in _STEM_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            return word[: -len(ending)]
    return word


#: Words of a relation name that add nothing to it (DBpedia's leaderName = leader,
#: populationTotal = population, placeOfBirth = birthPlace).
_RELATION_FILLER = frozenset({"of", "the", "name", "total", "a", "an"})


def relation_stems(tokens: list[str]) -> str:
    return " ".join(sorted(stem(w) for w in tokens if w not in _RELATION_FILLER))


def _relation_rule(ca: Canon, cb: Canon, field_name: str) -> Decision | None:
    if not is_relation_field(field_name):
        return None
    sa, sb = relation_stems(ca.tokens), relation_stems(cb.tokens)
    if sa != sb or not sa:
        return None
    return Decision(True, f"the same relation (word stems '{sa}')", VARIANT_SCORE)


def _filed(raw: str, norm: str, canon: Canon, kn: Knowledge, field_name: str) -> frozenset[tuple[str, ...]]:
    key = (field_name, raw, norm)
    found = kn.memo.get(key)
    if found is None:
        found = kn.memo[key] = frozenset(keys(raw, norm, canon, kn, field_name))
    return found


def decide(a_raw: str, a_norm: str, ca: Canon, b_raw: str, b_norm: str, cb: Canon,
           field_name: str, kn: Knowledge) -> Decision | None:
    """A match or a definite mismatch by one of the rules (module docs), or None. Every rule
    needs the two texts to share an index key (:func:`keys`): without one, none is asked."""
    if _filed(a_raw, a_norm, ca, kn, field_name).isdisjoint(_filed(b_raw, b_norm, cb, kn, field_name)):
        return None
    rules = [
        _place_rule(ca, cb) if kn.families.places else None,
        _disambiguator_rule(ca, cb),
        _person_rule(a_raw, a_norm, b_raw, b_norm, field_name, kn),
        _org_rule(ca, cb, field_name) if kn.families.companies else None,
        _acronym_rule(a_raw, cb, b_raw, ca) if kn.families.companies else None,
        _relation_rule(ca, cb, field_name),
    ]
    decided = [r for r in rules if r is not None]
    matches = [r for r in decided if r.ok]
    refusals = [r for r in decided if not r.ok]
    if refusals:  # a definite difference wins over any looser reading
        return refusals[0]
    return max(matches, key=lambda r: r.score) if matches else None


def _core(tokens: list[str]) -> str:
    """An organisation's name without leading club words and trailing generic words: two names
    the organisation rule matches have the same core."""
    start = 0
    while start < len(tokens) - 1 and tokens[start] in LEADING_ORG_WORDS:
        start += 1
    end = len(tokens)
    while end > start + 1 and tokens[end - 1] in GENERIC_ORG_WORDS:
        end -= 1
    return " ".join(tokens[start:end])


def _given_initial(name: _Name) -> str:
    return nicknames().get(name.given[0], name.given[0])[0] if name.given else ""


def keys(raw: str, norm: str, canon: Canon, kn: Knowledge, field_name: str,
         query: bool = False) -> tuple[tuple[str, ...], ...]:
    """Index keys of a text (``query``: the keys it looks up): two texts that a rule above may
    match share one -- the head of a place or a disambiguated name, the core of an organisation's
    name, a surname and the initial of the given name (its full form's: Bob files under R),
    initials, word stems. Narrow on purpose: a key shared by most texts (a first word) would
    make the judge compare every candidate."""
    tokens = canon.tokens
    found: list[tuple[str, ...]] = [("head", canon.head)]
    heads = canon.head.split()
    if kn.families.products and len(heads) >= 3 and heads[0].isalpha() and is_product_field(field_name):
        found.append(("head", " ".join(heads[1:])))  # without its brand (compare._brand_dropped)
    if tokens:
        found.append(("core", _core(tokens)))
        content = [w for w in tokens if w not in _ACRONYM_STOP]
        if len(content) >= 2:
            found.append(("initials", "".join(w[0] for w in content)))
        if is_relation_field(field_name):
            found.append(("stems", relation_stems(tokens)))
    written = raw.strip()
    letters = "".join(ch for ch in written if ch.isupper())
    if len(letters) >= 2 and " " not in written and "_" not in written:
        found.append(("initials", letters.casefold()))
    name = _read_name(raw, norm, kn)
    if name is not None:
        found += _name_keys(name, query)
    return tuple(found)


def _name_keys(name: _Name, query: bool) -> list[tuple[str, ...]]:
    """A name files under its surname and initial, and under its surname alone; a query for a
    bare surname looks up every name of that surname, a query with a given name that name's
    initial and the bare surname."""
    if not query:
        return [("surname", name.surname, _given_initial(name)), ("surname", name.surname)]
    if not name.given:
        return [("surname", name.surname)]
    return [("surname", name.surname, _given_initial(name)), ("surname", name.surname, "")]
