"""The files of an eval output folder, typed: what one line of ``results.jsonl`` holds
(:class:`ResultLine`), ``run.json`` (:class:`RunManifest`), ``batch.json`` (:class:`BatchState`)
and what ``factjudge compare`` computes from two folders (:class:`CompareResult`).

The models describe the files; they never change their bytes: each ``model_dump(mode="json")``
gives the keys in the order the files hold them, and the writers keep their own settings (the
JSON files ``json.dumps``'s indent and ``ensure_ascii=False``; ``results.jsonl`` pydantic's compact
JSON, :func:`~factjudge.io.runfolder.result_line`).

``results.jsonl`` can hold millions of facts, so its readers (:class:`~factjudge.io.runfolder.
RunFolder`) check each line with :func:`result_line_problem` (what every reader relies on: the
ids, the fact lists and the statuses; about 6% of the time ``json.loads`` takes) and hand on the
parsed dict; :class:`ResultLine` validates a whole line (a third of the parse time again) and is
used where one line is looked up (:meth:`~factjudge.io.runfolder.RunFolder.result`).
"""
from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from ..models import CategoryCounts, JudgeResult, status_of
from ..models.base import Model


class ResultLine(JudgeResult):
    """One line of ``results.jsonl``: the document's id and input hash, then its
    :class:`~factjudge.models.JudgeResult` (dumped with the keys in file order)."""

    doc_id: str
    #: Hash of the document's facts and of everything that decides its result (config, judge,
    #: version): a resumed run reuses the line only while it is unchanged.
    input_sha256: str

    @model_serializer(mode="wrap")
    def _file_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # the file holds the run-folder keys first; a subclass's fields come last
        data = handler(self)
        first = {key: data.pop(key) for key in ("doc_id", "input_sha256") if key in data}
        return {**first, **data}

    def to_result(self) -> JudgeResult:
        """The document's result without the run-folder keys."""
        return JudgeResult.model_validate(self.model_dump(exclude={"doc_id", "input_sha256"}))


_SIDES = ("gold_facts", "predicted_facts")


def result_line_problem(line: object) -> str | None:
    """What makes a parsed line no factjudge result line (None: it is one), checked leanly: it
    runs on every line a reader reads. The checks are what the readers rely on: a ``doc_id``
    and an ``input_sha256`` (strings), fact lists whose facts have an ``id`` and a verdict with a
    ``status`` (under ``factjudge``, or beside the fact's fields as an older factjudge wrote
    it: :func:`~factjudge.models.verdict_of`), and ``metrics``."""
    if type(line) is not dict:
        return "not a JSON object"
    for key in ("doc_id", "input_sha256"):
        if not isinstance(line.get(key), str):
            return f"no {key}"
    for key in _SIDES:
        facts = line.get(key)
        if type(facts) is not list or not all(
                type(f) is dict and "id" in f and type(status_of(f)) is str for f in facts):
            return f"{key} is not a list of judged facts"
    metrics = line.get("metrics")
    if type(metrics) is not dict or type(metrics.get("errors")) is not int:
        return "no metrics"
    return None


class RunManifest(Model):
    """``run.json``: what produced a folder's results, written before the first result. A run
    resumes or reuses a folder only when its :data:`RUN_KEYS` are the same."""

    #: The version that wrote it.
    factjudge: str = ""
    #: The input files, resolved. (A key an older run.json lacks counts as differing.)
    inputs: list[str] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)
    judge: dict[str, Any] = Field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


#: What must be the same for a folder's results to be resumed or reused.
RUN_KEYS = ("inputs", "config", "judge")

BatchStep = Literal["exported", "uploaded", "creating", "submitted", "done"]


class BatchJob(Model):
    """One batch input file of ``batch.json``, from export to import (see
    :class:`~factjudge.runners.batch.BatchRunner`). Keys added on the way (``errors``,
    ``outputs``) are kept in the order they came."""

    model_config = ConfigDict(extra="allow")

    round: int = 0
    #: The input file, relative to the output folder.
    file: str
    lines: int = 0
    step: BatchStep
    input_file_id: str | None = None
    batch_id: str | None = None
    status: str | None = None
    request_counts: dict[str, Any] | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    imported: dict[str, int] | None = None


class BatchState(Model):
    """``batch.json``: the state of ``eval --batch``, saved after every step."""

    model_config = ConfigDict(extra="allow")

    version: Literal[1]
    judge: Any = None
    round: int = 0
    finished: bool = False
    jobs: list[BatchJob]

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=1, ensure_ascii=False) + "\n"


class MetricDiff(Model):
    """B minus A of one ratio, with its paired bootstrap interval (None: undefined, or not
    computed, as for a fact type's figures before their interval is known)."""

    a: float | None = None
    b: float | None = None
    diff: float | None = None
    ci95: list[float] | None = None
    excludes_zero: bool | None = None


class CompareResult(Model):
    """What ``factjudge compare A B`` computes: what it prints and the compare pages show."""

    a: str
    b: str
    documents: int
    only_a: int = 0
    only_b: int = 0
    bootstrap: dict[str, int] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    #: ``precision``, ``recall``, ``f1``, micro over the shared documents.
    metrics: dict[str, MetricDiff]
    by_fact_type: dict[str, dict[str, MetricDiff]] = Field(default_factory=dict)
    #: The changed facts listed (rows of ``changed_facts``), at most ``MAX_CHANGED``.
    changed: list[dict[str, Any]] = Field(default_factory=list)
    changed_total: int = 0
    provenance: dict[str, Any] = Field(default_factory=dict)
    #: Per run (``a``, ``b``), the categories per fact type over the shared documents
    #: (:mod:`factjudge.core.analysis`): near misses and the fields they differ in, and the rest.
    categories: dict[str, dict[str, CategoryCounts]] = Field(default_factory=dict)
    #: Per run (``a``, ``b``), the AUROC of its predictions' confidence over the shared documents
    #: (:mod:`factjudge.core.confidence`; None: that run's carry none); empty when neither does.
    auroc: dict[str, float | None] = Field(default_factory=dict)
    #: Per fact type and field path, the field-level precision, recall and F1 of A and B with the
    #: paired bootstrap interval of B-A (:mod:`factjudge.core.fields`).
    fields: dict[str, dict[str, dict[str, MetricDiff]]] = Field(default_factory=dict)
