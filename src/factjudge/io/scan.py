"""The one scan of every input, whatever its format: a *source* reads its input and yields each
document it holds (:class:`Located`: where it sits, the document) or a located :class:`Problem`;
:class:`ScannedDataset` checks what is common to every format once (duplicate doc_ids, the input
hash resume compares, the number of questions, the fact types and fields) and keeps per document
only its id, hash, question count and the key its source reads it again by.

Sources of one side's facts (a fact file: each fact with its ``doc_id``) are paired into
documents by :class:`PairedFacts`, which is itself a source. The formats themselves (which file
is read how) are in :mod:`factjudge.io.formats`."""
from __future__ import annotations

import contextlib
import hashlib
import operator
from array import array
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..core.scope import field_check, in_scope_facts
from ..errors import InputError
from ..models import DIRECTIONS, Direction, JudgeConfig
from ..util.forked import beside, second_core
from ..util.jsonutil import canonical_json
from .jsonl import coerce_id, jsonl_lines, looks_like_object


@dataclass(frozen=True)
class Problem:
    """A bad input line: reported, and skipped with ``--skip-invalid``. ``doc_id``: the document
    a bad line of a fact file belongs to, when it can be told (:class:`PairedFacts` then leaves
    that whole document out, as a bad dataset line's)."""

    file: str
    line: int
    message: str
    doc_id: str | None = None

    @property
    def skipped(self) -> str:
        """The message when the line is skipped: what else was left out with it."""
        if self.doc_id is None:
            return self.message
        return (f"{self.message} (document {self.doc_id!r} left out, both sides: a document "
                "with a fact in doubt is not scored)")

    def to_dict(self) -> dict[str, Any]:
        """Its record in summary.json's ``skipped``."""
        return {"file": self.file, "line": self.line, "error": self.skipped}


@dataclass(frozen=True)
class DocInfo:
    """What is kept in memory per document: no facts, no prompts."""

    doc_id: str
    input_sha256: str
    questions: int


@dataclass
class Document:
    doc_id: str
    gold: list[dict[str, Any]]
    predicted: list[dict[str, Any]]


#: Facts of the documents a scan holds in memory (the input's first documents): judging takes
#: them from there instead of reading and parsing them again (0.14 s of CPU for 1,000 documents
#: of 20 facts, ~5% of judging them). The cost: some 100 MB in the process, and as much again in
#: the workers that judge them (a page read is a page copied): the peak of 10,000 and 20,000
#: documents of 20 facts, process and workers, 558 -> 761 MB and 648 -> 843 MB.
HOLD_FACTS = 100_000


@dataclass
class HeldDocument(Document):
    """A document the scan kept (:data:`HOLD_FACTS`): what the scan hashed, so judging checks it
    against nothing. ``position``: its place among the scanned documents."""

    position: int = 0


class Dataset(Protocol):
    infos: list[DocInfo]
    #: The input files, for provenance.
    sources: list[str]
    fact_types: set[str]
    #: What ``scan`` noticed about the inputs as a whole (eval prints them and keeps them in
    #: summary.json): tolerances for fields no fact has, doc_ids on one side only.
    warnings: list[str]
    #: The first documents as the scan read them (:class:`HeldDocument`), by position.
    held: list[HeldDocument]

    def scan(self, config: JudgeConfig, salt: str) -> list[Problem]: ...

    def documents(self, skip: set[str] | frozenset[str] = frozenset()) -> Iterator[Document]: ...

    def read_again(self, positions: Iterable[int]) -> Iterator[Document]: ...

    def texts(self, only: Container[str] | None = None) -> Iterator[tuple[str, str | None]]: ...


def doc_hash(salt: str, doc: Document) -> str:
    """A document's input hash: what a resumed run compares (never change its material: every
    run folder would judge its documents again; tests/unit/io/test_input_hash.py pins it)."""
    material = canonical_json({"salt": salt, "doc_id": doc.doc_id, "gold_facts": doc.gold,
                               "predicted_facts": doc.predicted})
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


_FACT_TYPE = operator.itemgetter("fact_type")


def question_count(doc: Document, config: JudgeConfig) -> int:
    """Judge questions of one document (as the pipeline counts them), for an exact progress total."""
    g, p = len(in_scope_facts(doc.gold, config)), len(in_scope_facts(doc.predicted, config))
    return (g if p else 0) + (p if g else 0)


def _duplicate(file: str, line: int, where: str, doc_id: str, seen: Mapping[str, str]) -> Problem:
    return Problem(file, line, f"{file}: {where}: duplicate doc_id {doc_id!r}, first seen at {seen[doc_id]}")


def doc_id_of(rec: Mapping[str, Any], prefix: str) -> str:
    """A record's ``doc_id`` as a string (an integer is its decimal text), or an InputError."""
    return coerce_id(rec.get("doc_id"), "doc_id", prefix)


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class Located:
    """A document as its source read it: ``where`` names its place in ``file`` (``line 3``, ``row
    3``), ``line`` is that number (for a :class:`Problem`), ``key`` what the source reads it again
    by (:meth:`DocumentSource.read_again`)."""

    file: str
    line: int
    where: str
    key: int
    doc: Document


class DocumentSource(Protocol):
    """An input of documents. ``read`` yields every document or problem, in input order (a whole
    input that cannot be read raises InputError); ``read_again`` the documents of the given keys
    (those of ``read``'s documents, in that order) when they are judged; ``warnings`` what
    ``read`` noticed about the input as a whole. ``read`` is given the config for the keys that
    say how an input is read (``columns``, ``record_type``, ``langextract_compare``)."""

    #: The inputs, for provenance and messages.
    sources: list[str]

    def read(self, config: JudgeConfig) -> Iterator[Located | Problem]: ...

    def read_again(self, keys: Iterable[int]) -> Iterator[Document]: ...

    def texts(self, keys: Iterable[int]) -> Iterator[str | None]:
        """The text of each document of ``keys`` when its input carries it (a dataset line's
        ``text``, LangExtract's, spaCy's, GLiNER's), else None: for showing facts in their source."""
        ...

    def warnings(self) -> list[str]: ...


@runtime_checkable
class SplitSource(DocumentSource, Protocol):
    """A :class:`DocumentSource` that may be read in two halves, the second in a forked child on a
    second core (a large dataset file: ~98 us a document of 20 facts, 9.5 s of 100,000 alone
    before any judging). ``halves`` gives the two readers (None: too small to pay), each yielding
    what ``read`` would of its half, the second's keys counted from 0; ``kept`` (in the child, once
    the second is read) what the source kept of it, picklable; ``join`` (here, once the first is
    read) adopts that after the first half's, returns what to add to the second's keys, and raises
    what ``read`` would have raised at the end of the whole input."""

    def halves(self, config: JudgeConfig) -> tuple[Iterator[Located | Problem],
                                                   Iterator[Located | Problem]] | None: ...

    def kept(self) -> object: ...

    def join(self, kept: object) -> int: ...


#: What the child of a split scan sends back of a document: doc_id, file, line, where, key,
#: input hash, questions, facts, and its kind (an index into the child's fact types and fields).
_Digest = tuple[str, str, int, str, int, str, int, int, int]
_Kinds = dict[tuple[frozenset[str], frozenset[str]], int]


class ScannedDataset:
    """A :class:`Dataset` over any :class:`DocumentSource`: the one scan."""

    def __init__(self, source: DocumentSource) -> None:
        self.source = source
        self.sources = source.sources
        self.infos: list[DocInfo] = []
        #: Every fact_type the valid documents hold (set by ``scan``).
        self.fact_types: set[str] = set()
        self.warnings: list[str] = []
        self._keys = array("q")
        #: The first documents as the scan read them (:data:`HOLD_FACTS`), by position.
        self.held: list[HeldDocument] = []

    def scan(self, config: JudgeConfig, salt: str) -> list[Problem]:
        self.infos, self.fact_types, self._keys = [], set(), array("q")  # a re-scan starts over
        self.held, room = [], HOLD_FACTS
        problems: list[Problem] = []
        seen: dict[str, str] = {}
        names: set[str] = set()  # every field of every fact, for field_check
        source = self.source
        halves = None
        if isinstance(source, SplitSource) and second_core():  # a large input on two cores
            split: SplitSource = source
            halves = split.halves(config)
        if halves is None:
            self._take(source.read(config), salt, config, room, problems, seen, names)
        else:
            first, second = halves

            def child() -> tuple[list[_Digest | Problem], list[tuple[frozenset[str], frozenset[str]]], object]:
                digests, kinds = self._digest(second, salt, config)
                return digests, kinds, split.kept()

            with beside(child, fork=True) as other:  # an error of the first half is raised first
                room = self._take(first, salt, config, room, problems, seen, names)
            digests, kinds, kept = other.value
            self._join(digests, kinds, split.join(kept), room, problems, seen, names)
        order = {name: i for i, name in enumerate(self.sources)}
        problems.sort(key=lambda p: (order.get(p.file, len(order)), p.line))  # stable: by input, line
        self.warnings = field_check(config, names, " and ".join(self.sources)) + source.warnings()
        return problems

    def _take(self, items: Iterable[Located | Problem], salt: str, config: JudgeConfig, room: int,
              problems: list[Problem], seen: dict[str, str], names: set[str]) -> int:
        """Each document of ``items`` checked and kept; the room left for held facts."""
        for item in items:
            if isinstance(item, Problem):
                problems.append(item)
                continue
            doc = item.doc
            if doc.doc_id in seen:
                problems.append(_duplicate(item.file, item.line, item.where, doc.doc_id, seen))
                continue
            seen[doc.doc_id] = item.where
            room -= len(doc.gold) + len(doc.predicted)
            if room >= 0 and len(self.held) == len(self.infos):  # the first documents only, all of them
                self.held.append(HeldDocument(doc.doc_id, doc.gold, doc.predicted, len(self.infos)))
            self.infos.append(DocInfo(doc.doc_id, doc_hash(salt, doc), question_count(doc, config)))
            self.fact_types.update(map(_FACT_TYPE, doc.gold), map(_FACT_TYPE, doc.predicted))
            names.update(*doc.gold, *doc.predicted)  # each fact's field names
            self._keys.append(item.key)
        return room

    @staticmethod
    def _digest(items: Iterable[Located | Problem], salt: str, config: JudgeConfig
                ) -> tuple[list[_Digest | Problem], list[tuple[frozenset[str], frozenset[str]]]]:
        """What :meth:`_take` needs of each item, without its facts (the second half of a split
        scan, in the child): duplicates are for the parent to find, which has seen the first half."""
        out: list[_Digest | Problem] = []
        kinds: _Kinds = {}
        for item in items:
            if isinstance(item, Problem):
                out.append(item)
                continue
            doc = item.doc
            facts = doc.gold + doc.predicted
            kind = (frozenset(map(_FACT_TYPE, facts)), frozenset().union(*facts))
            out.append((doc.doc_id, item.file, item.line, item.where, item.key, doc_hash(salt, doc),
                        question_count(doc, config), len(facts), kinds.setdefault(kind, len(kinds))))
        return out, list(kinds)

    def _join(self, digests: list[_Digest | Problem], kinds: list[tuple[frozenset[str], frozenset[str]]],
              shift: int, room: int, problems: list[Problem], seen: dict[str, str], names: set[str]) -> None:
        """The second half's documents after the first's, as :meth:`_take` would have kept them."""
        added: set[int] = set()  # the kinds whose fact types and fields are counted
        for item in digests:
            if isinstance(item, Problem):
                problems.append(item)
                continue
            doc_id, file, line, where, key, digest, questions, facts, kind = item
            if doc_id in seen:
                problems.append(_duplicate(file, line, where, doc_id, seen))
                continue
            seen[doc_id] = where
            room -= facts
            if room >= 0 and len(self.held) == len(self.infos):  # read again: the child's are its own
                [doc] = self.source.read_again([key + shift])
                self.held.append(HeldDocument(doc_id, doc.gold, doc.predicted, len(self.infos)))
            self.infos.append(DocInfo(doc_id, digest, questions))
            if kind not in added:
                added.add(kind)
                self.fact_types.update(kinds[kind][0])
                names.update(kinds[kind][1])
            self._keys.append(key + shift)

    def documents(self, skip: set[str] | frozenset[str] = frozenset()) -> Iterator[Document]:
        """The scanned documents but those of ``skip``, in dataset order: those it holds, then the
        others read again (each checked against its scan by the caller: the input may have changed)."""
        yield from (doc for doc in self.held if doc.doc_id not in skip)
        yield from self.read_again(p for p in range(len(self.held), len(self.infos))
                                   if self.infos[p].doc_id not in skip)

    def read_again(self, positions: Iterable[int]) -> Iterator[Document]:
        """The scanned documents at ``positions`` (their places among :attr:`infos`, increasing),
        read again from the input (each checked against its scan by the caller): what a worker
        process judges (``eval --workers``) it reads itself, by the place this process sends."""
        return self.source.read_again(self._keys[p] for p in positions)

    def texts(self, only: Container[str] | None = None) -> Iterator[tuple[str, str | None]]:
        """(doc_id, its text or None) of the scanned documents (those in ``only``), in dataset
        order, read one at a time: no text is held longer than its caller holds it."""
        infos = [i for i in self.infos if only is None or i.doc_id in only]
        keys = [k for i, k in zip(self.infos, self._keys, strict=True) if only is None or i.doc_id in only]
        return zip((i.doc_id for i in infos), self.source.texts(keys), strict=True)


# --------------------------------------------------------------------------- one side's facts


@dataclass(frozen=True)
class FactEntry:
    """One record of a fact file, checked: one fact, or several facts of one document (a format
    that writes a document's facts on one line). ``line`` is its line (or row) number, ``key``
    what its source reads it again by (a byte offset)."""

    line: int
    key: int
    doc_id: str


#: Reads facts again: ``load(keys, lines)`` gives the facts of each key, checked (a format without
#: fact ids numbers them here, the same way every time).
FactLoader = Callable[[Sequence[int], Sequence[int]], list[list[dict[str, Any]]]]


class FactSource(Protocol):
    """One side's facts, each with its ``doc_id``. ``check`` refuses an input that is no such file
    at all (before either side is read); ``read`` yields each fact's place or a problem;
    ``opened`` gives a loader of facts by key while it is open."""

    #: The file, as named in messages.
    name: str
    #: What a record is called in messages: ``line`` or ``row``.
    unit: str

    def check(self) -> None: ...

    def read(self, config: JudgeConfig) -> Iterator[FactEntry | Problem]: ...

    def opened(self) -> AbstractContextManager[FactLoader]: ...

    def source_text(self, key: int, lineno: int) -> str | None:
        """The document's text where the record at ``key`` carries it (an extractor's document
        line), else None."""
        ...


@dataclass
class _Side:
    """Where one document's facts sit in one file: keys (byte offsets) and line numbers."""

    keys: array[int] = field(default_factory=lambda: array("q"))
    lines: array[int] = field(default_factory=lambda: array("q"))


class PairedFacts:
    """Documents from two fact sources (gold, predicted), grouped by ``doc_id``: a
    :class:`DocumentSource`. The sources are indexed (two integers per fact) rather than loaded,
    so facts are read only when their document is judged. A document on one side only is still
    scored. A bad record whose document can be told (:attr:`Problem.doc_id`) leaves that whole
    document out, both sides, as a bad dataset line does: a document short of a fact is never
    scored as if it were complete; one whose document cannot be told is a warning."""

    def __init__(self, gold: FactSource, predicted: FactSource) -> None:
        self.sides: dict[Direction, FactSource] = {"gold": gold, "predicted": predicted}
        self.sources = [gold.name, predicted.name]
        self._index: dict[str, dict[Direction, _Side]] = {}
        self._order: list[str] = []
        #: The lines of bad records whose document could not be told, per side (for ``warnings``).
        self._unknown: dict[Direction, list[int]] = {}

    def read(self, config: JudgeConfig) -> Iterator[Located | Problem]:
        self._index, self._order, self._unknown = {}, [], {}
        left_out: set[str] = set()
        for src in self.sides.values():
            src.check()
        # pass 1: each fact on its own, and where each document's facts are
        for side, src in self.sides.items():
            for item in src.read(config):
                if isinstance(item, Problem):
                    if item.doc_id is None:
                        self._unknown.setdefault(side, []).append(item.line)
                    else:
                        left_out.add(item.doc_id)
                    yield item
                    continue
                places = self._index.setdefault(item.doc_id, {"gold": _Side(), "predicted": _Side()})
                places[side].keys.append(item.key)
                places[side].lines.append(item.line)
        # pass 2: one document at a time, for duplicate ids and the input hash
        with contextlib.ExitStack() as stack:
            loaders = {side: stack.enter_context(src.opened()) for side, src in self.sides.items()}
            for doc_id, sides in self._index.items():
                facts: dict[Direction, list[dict[str, Any]]] = {}
                for side, where in sides.items():
                    facts[side], problems = self._unique(doc_id, side, where, loaders[side])
                    if problems:  # a repeated id: which of its facts is meant is unknown
                        left_out.add(doc_id)
                    yield from problems
                if doc_id in left_out:  # its other problems named all the same (the same without --skip-invalid)
                    continue
                self._order.append(doc_id)
                yield Located(self.sources[0], 0, doc_id, len(self._order) - 1,
                              Document(doc_id, facts["gold"], facts["predicted"]))
        for doc_id in left_out:  # not a document of the run (warnings, texts)
            self._index.pop(doc_id, None)

    def _unique(self, doc_id: str, side: Direction, where: _Side,
                load: FactLoader) -> tuple[list[dict[str, Any]], list[Problem]]:
        """One side's facts of a document, a repeated id left out (the first one kept, as on
        every reading), and the problems (the document is then left out of the run, as a dataset
        line with a repeated id is: :meth:`read`)."""
        src, problems = self.sides[side], []
        seen: dict[str, int] = {}
        facts: list[dict[str, Any]] = []
        for record, line in zip(load(where.keys, where.lines), where.lines, strict=True):
            for fact in record:
                if fact["id"] in seen:
                    problems.append(Problem(src.name, line, (
                        f"{src.name}: {src.unit} {line} (id {fact['id']!r}): duplicate id in document "
                        f"{doc_id!r}, first seen at {src.unit} {seen[fact['id']]}"), doc_id))
                    continue
                seen[fact["id"]] = line
                facts.append(fact)
        return facts, problems

    def read_again(self, keys: Iterable[int]) -> Iterator[Document]:
        with contextlib.ExitStack() as stack:
            loaders = {side: stack.enter_context(src.opened()) for side, src in self.sides.items()}
            for key in keys:
                doc_id = self._order[key]
                where = self._index[doc_id]
                gold, pred = (self._unique(doc_id, s, where[s], loaders[s])[0] for s in DIRECTIONS)
                yield Document(doc_id, gold, pred)

    def texts(self, keys: Iterable[int]) -> Iterator[str | None]:
        """Each document's text from the predictions' file, else the gold file's (the first
        record of the document that carries one)."""
        for key in keys:
            where = self._index[self._order[key]]
            text = None
            for side in ("predicted", "gold"):
                places: _Side = where[side]
                if places.keys:
                    text = self.sides[side].source_text(places.keys[0], places.lines[0])
                    if text is not None:
                        break
            yield text

    def warnings(self) -> list[str]:
        """What :meth:`_one_side` and :meth:`_unknown_documents` say."""
        return self._unknown_documents() + self._one_side()

    def _unknown_documents(self) -> list[str]:
        """A warning when bad records were skipped whose document could not be told: some
        document may be scored short of a fact, and nothing else would say so."""
        if not self._unknown:
            return []
        units = {self.sides[side].unit for side in self._unknown}
        unit = units.pop() if len(units) == 1 else "record"
        where = "; ".join(f"{self.sides[side].name}: {self.sides[side].unit}{'s' if len(lines) > 1 else ''} "
                          f"{', '.join(map(str, lines[:5]))}{', ...' if len(lines) > 5 else ''}"
                          for side, lines in self._unknown.items())
        count = sum(map(len, self._unknown.values()))
        return [f"{count} fact {unit}(s) of unknown documents were skipped ({where}): their doc_id "
                "could not be read, so some documents may be scored without a fact; fix them and run again"]

    def _one_side(self) -> list[str]:
        """A warning when documents have gold facts only AND others predicted facts only: doc_ids
        spelled differently on the two sides (``1`` vs ``01``) never pair, and every fact then
        counts as missed or spurious without a word. One side alone is normal (a system that
        found nothing in a document, a document without gold facts)."""
        only: dict[Direction, list[str]] = {"gold": [], "predicted": []}
        for doc_id, sides in self._index.items():
            has = [s for s in DIRECTIONS if sides[s].lines]
            if len(has) == 1:
                only[has[0]].append(doc_id)
        if not (only["gold"] and only["predicted"]):
            return []
        gold, pred = (f"({', '.join(repr(i if len(i) <= 40 else i[:37] + '...') for i in ids[:2])}"
                      f"{', ...' if len(ids) > 2 else ''})" for ids in only.values())
        return [f"{len(only['gold'])} document(s) have gold facts only {gold} and "
                f"{len(only['predicted'])} predicted facts only {pred} (of {len(self._index)}): "
                "doc_ids are compared exactly, so their facts count as missed and spurious; check "
                "that both files spell the doc_ids the same way"]


_Parsed = TypeVar("_Parsed")


@dataclass
class LinePart:
    """A part of a JSON-lines file read on its own (one of two halves read on two cores): from the
    line at byte ``start`` (numbered ``first_line``) to the one at ``stop`` (None: the end), and
    what :func:`json_lines` counted there for :func:`not_json_lines`, which is then the caller's
    to call over every part (:meth:`LinePart.check`)."""

    start: int = 0
    stop: int | None = None
    first_line: int = 1
    bad: int = 0
    first: str | None = None
    objects: int = 0

    @staticmethod
    def check(name: str, parts: Sequence[LinePart]) -> None:
        """:func:`not_json_lines` of the whole file read in ``parts`` (in file order)."""
        first = next((p.first for p in parts if p.first is not None), None)
        not_json_lines(name, sum(p.bad for p in parts), first, sum(p.objects for p in parts))


def json_lines(path: Path, name: str, parse: Callable[[bytes, int], _Parsed],
               is_object: Callable[[bytes], bool] = looks_like_object, part: LinePart | None = None,
               doc_of: Callable[[bytes], str | None] | None = None
               ) -> Iterator[tuple[int, int, _Parsed] | Problem]:
    """Each line of a JSON-lines file as ``(line, offset, parse(raw, line))``, or the located
    :class:`Problem` of a line ``parse`` refuses; a file none of whose lines even looks like a JSON
    object (``is_object``) ends in one error (:func:`not_json_lines`). The loop of every JSON-lines
    format. ``part``: only its lines, its counts kept there (no error at the end). ``doc_of``: the
    doc_id a refused line names, if any (a fact file's: :attr:`Problem.doc_id`)."""
    bad, first, objects = 0, None, 0
    lines = jsonl_lines(path) if part is None else jsonl_lines(path, part.start, part.stop, part.first_line)
    for lineno, offset, raw in lines:
        objects += is_object(raw)
        try:
            parsed = parse(raw, lineno)
        except InputError as exc:
            bad, first = bad + 1, first or str(exc)
            yield Problem(name, lineno, str(exc), None if doc_of is None else doc_of(raw))
            continue
        yield lineno, offset, parsed
    if part is None:
        not_json_lines(name, bad, first, objects)
    else:
        part.bad, part.first, part.objects = bad, first, objects


def not_json_lines(name: str, bad: int, first: str | None, objects: int) -> None:
    """A file none of whose lines is a JSON object is not JSON lines at all (a spreadsheet or
    another file given by mistake): one error, no ``--skip-invalid`` hint, as skipping every line
    would score nothing on that side with exit 0. ``bad``: its problems, ``first`` the first's
    message."""
    if bad and first is not None and not objects:
        raise InputError(f"{name}: not a JSON-lines file: none of its {bad} line(s) is a JSON "
                         f"object ({first.removeprefix(f'{name}: ')})")


__all__ = ["Dataset", "DocInfo", "DocumentSource", "Document", "FactEntry", "FactLoader", "FactSource",
           "LinePart", "Located", "PairedFacts", "SplitSource", "Problem", "ScannedDataset", "doc_hash", "doc_id_of",
           "not_json_lines", "question_count"]
