"""``eval --batch``: the questions of a run through a provider's Batch API (OpenAI's, vLLM's
``run_batch`` by hand), half the price of live calls, answers within 24 hours.

The LLM's parts are the LLM package's: the lines of a batch file
(:mod:`~factjudge.judges.llm.batch_lines`), reading the outputs into the response cache
(:mod:`~factjudge.judges.llm.batch_import`) and the Files and Batches client
(:mod:`~factjudge.judges.llm.batch_api`). What is here is the run's side:

- :func:`export_batch` writes the questions an ``eval`` would send and whose answer is not in the
  response cache (of the documents not finished in its output folder) as batch input lines;
- :class:`BatchRunner` exports, submits, polls and imports, keeping the batch ids and their
  state in ``OUT_DIR/batch.json`` so that an interrupted run resumes polling and never submits a
  batch twice.
"""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..evaluation.pipeline import questions
from ..evaluation.runner import check_folder, run_manifest
from ..io.datasets import Dataset
from ..io.files import write_atomic
from ..io.run_models import BatchState
from ..io.runfolder import RESULTS, FolderLock, ResultStore
from ..judges.base import Judge
from ..judges.llm.backends import one_line
from ..judges.llm.batch_api import Ambiguous, BatchClient, BatchError, UnsafeId, safe_id
from ..judges.llm.batch_import import Imported, conflict_warning, import_outputs
from ..judges.llm.batch_lines import MAX_BYTES, MAX_LINES, BatchLines, LineWriter, batch_llm
from ..models import JudgeConfig
from ..util.jsonutil import canonical_json

#: Batch statuses after which nothing changes any more.
TERMINAL = ("completed", "failed", "expired", "cancelled")
#: ``--batch``'s state and files, inside the eval output folder.
STATE_FILE, BATCH_DIR = "batch.json", "batch"
#: The server's ids a ``batch.json`` job keeps.
_SAVED_IDS = {"input_file_id": "file id", "batch_id": "batch id", "output_file_id": "file id",
              "error_file_id": "file id"}



@dataclass
class Exported:
    files: list[Path]
    lines: int = 0
    #: questions of the exported documents (those in the files, those answered in the response
    #: cache, those decided without the LLM and the duplicates)
    questions: int = 0
    duplicates: int = 0
    reasked: int = 0
    documents: int = 0
    reused_documents: int = 0


def finished_documents(dataset: Dataset, config: JudgeConfig, judge: Judge, out_dir: Path,
                       overwrite: bool = False) -> frozenset[str]:
    """Documents an ``eval`` into ``out_dir`` would reuse (none with ``overwrite``); a folder
    holding another run's results is refused as ``eval`` refuses it. Changes nothing on disk."""
    if overwrite:
        return frozenset()
    check_folder(out_dir, run_manifest(dataset, config, judge))
    store = ResultStore(out_dir / RESULTS, repair=False)
    return frozenset(i.doc_id for i in dataset.infos if store.reusable(i))



def export_batch(dataset: Dataset, config: JudgeConfig, judge: Judge, out_dir: Path, path: Path, *,
                 overwrite: bool = False, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Exported:
    """Write the questions of the documents not finished in ``out_dir`` whose answer is not in the
    response cache to ``path`` (``path.2``... beyond the limits), one OpenAI batch input line each,
    and record what importing their answers needs. ``dataset`` must be scanned. Changes nothing
    in ``out_dir``."""
    llm = batch_llm(judge)
    assert llm.cache is not None
    reused = finished_documents(dataset, config, judge, out_dir, overwrite)
    result = Exported([], reused_documents=len(reused),
                      questions=sum(i.questions for i in dataset.infos if i.doc_id not in reused),
                      documents=len(dataset.infos) - len(reused))
    lines = LineWriter(llm.cache, path, max_lines, max_bytes)
    try:
        for doc in dataset.documents(skip=reused):
            # the questions as the pipeline asks them; a direction without candidates asks none
            for asked, subjects in questions(doc.gold, doc.predicted, config, doc.doc_id):
                if subjects:
                    opened = judge.open(asked)
                    assert isinstance(opened, BatchLines)  # a Batchable judge's directions are
                    lines.add(opened, subjects)
        result.files = lines.finish()
    except BaseException:
        lines.abort()
        raise
    result.lines, result.duplicates, result.reasked = lines.lines, lines.duplicates, lines.reasked
    return result


# --------------------------------------------------------------------------- --batch


def _elapsed(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class BatchRunner:
    """``eval --batch``: export, upload, create the batch, poll, download, import; again for the
    questions still unanswered (invalid answers, failed or expired requests), up to
    ``answer_retries + 1`` rounds. The live path then finishes the run from the cache.

    ``OUT_DIR/batch.json`` holds the state: per batch input file a job whose ``step`` goes
    ``exported`` -> ``uploaded`` (``input_file_id``) -> ``creating`` -> ``submitted``
    (``batch_id``) -> ``done`` (output and error files imported), saved after every step. A run
    started again carries on from the saved step: it never uploads a file twice once its id is
    saved, and a batch whose creation was cut off is looked up by its input file before anything
    is created, so no batch is submitted twice."""

    def __init__(self, dataset: Dataset, config: JudgeConfig, judge: Judge, out_dir: Path, *,
                 poll_interval: float = 30.0, overwrite: bool = False,
                 notify: Callable[[str], None] = lambda _: None,
                 client: BatchClient | None = None, max_lines: int = MAX_LINES,
                 max_bytes: int = MAX_BYTES) -> None:
        self.dataset, self.config, self.judge, self.out_dir = dataset, config, judge, out_dir
        self.llm = batch_llm(judge, "--batch")
        self.poll_interval, self.notify, self.overwrite = poll_interval, notify, overwrite
        self.client = client or BatchClient(self.llm.endpoint)
        self.max_lines, self.max_bytes = max_lines, max_bytes
        self.state_path = out_dir / STATE_FILE
        self.max_rounds = self.llm.answer_retries + 1
        self.state: dict[str, Any] = {}

    # ---- state

    def _load(self) -> dict[str, Any]:
        identity = self.judge.identity()
        fresh = {"version": 1, "judge": identity, "round": 0, "finished": False, "jobs": []}
        if not self.state_path.exists():
            return fresh
        try:
            state: dict[str, Any] = json.loads(self.state_path.read_text(encoding="utf-8"))
            BatchState.model_validate(state)  # the runner goes on with the dict: its bytes stay
        except (ValueError, OSError):  # a ValidationError is a ValueError
            raise InputError(f"{self.state_path}: not a factjudge batch state file; remove it "
                             "(check the provider's dashboard for batches it may list)") from None
        for job in state["jobs"]:  # ids a hand-edited file holds are checked as a server's are
            for key, kind in _SAVED_IDS.items():
                if job.get(key) is not None:
                    safe_id(job[key], kind, f"{self.state_path}: {key}")
        open_jobs = [j for j in state["jobs"] if j.get("step") != "done"]
        if open_jobs and state.get("judge") != identity:
            ids = ", ".join(j.get("batch_id") or j["file"] for j in open_jobs)
            raise InputError(f"{self.state_path}: unfinished batches ({ids}) of another judge "
                             f"({canonical_json(state.get('judge'))}): run that command again to "
                             "finish them, or remove the file (they may still run and be billed)")
        if state.get("finished") or state.get("judge") != identity:
            # an earlier run is complete: this one starts its own rounds (history kept)
            state.update(judge=identity, round=0, finished=False)
        return state

    def _save(self) -> None:
        write_atomic(self.state_path, json.dumps(self.state, indent=1, ensure_ascii=False) + "\n")

    # ---- the rounds

    async def run(self) -> Imported:
        """Every round's import counts summed; raises BatchError when a batch failed or was
        cancelled, or when every request of a round failed."""
        # a folder holding another run's results is refused before anything is written there
        finished_documents(self.dataset, self.config, self.judge, self.out_dir, self.overwrite)
        # held for the batch phase only: the live run that finishes it takes the lock itself
        with FolderLock(self.out_dir):
            return await self._rounds()

    async def _rounds(self) -> Imported:
        self.state = self._load()
        total = Imported()
        async with self.client:
            while True:
                total.add(await self._finish_open_jobs())
                if self.state["round"] >= self.max_rounds:
                    self.notify(f"factjudge: {self.state['round']} batch round(s) done (the most "
                                "--batch makes); any question still unanswered is asked live")
                    break
                r = self.state["round"] + 1
                (self.out_dir / BATCH_DIR).mkdir(exist_ok=True)
                # numbered by job, so no file of an earlier round or run is overwritten
                base = self.out_dir / BATCH_DIR / f"input-{len(self.state['jobs']) + 1:03d}-round{r}.jsonl"
                exported = export_batch(self.dataset, self.config, self.judge, self.out_dir, base,
                                        overwrite=self.overwrite, max_lines=self.max_lines,
                                        max_bytes=self.max_bytes)
                if not exported.lines:
                    for path in exported.files:
                        path.unlink(missing_ok=True)
                    break
                self.state["round"] = r
                for path in exported.files:
                    with path.open("rb") as fh:
                        lines = sum(1 for _ in fh)
                    self.state["jobs"].append({
                        "round": r, "file": str(path.relative_to(self.out_dir)), "lines": lines,
                        "step": "exported", "input_file_id": None, "batch_id": None, "status": None,
                        "request_counts": None, "output_file_id": None, "error_file_id": None,
                        "imported": None})
                self._save()
                self.notify(f"factjudge: batch round {r}: {exported.lines} question(s) in "
                            f"{len(exported.files)} file(s)"
                            + (f" ({exported.reasked} asked again after an invalid answer)"
                               if exported.reasked else "")
                            + f"; submitting to {self.llm.endpoint.host}")
        self.state["finished"] = True
        self._save()
        return total

    async def _finish_open_jobs(self) -> Imported:
        jobs = [j for j in self.state["jobs"] if j["step"] != "done"]
        for job in jobs:
            await self._submit(job)
        result = Imported()
        if jobs:
            result = await self._poll(jobs)
            self._check_round(jobs, result)
        return result

    async def _submit(self, job: dict[str, Any]) -> None:
        path = self.out_dir / job["file"]
        if job["step"] == "exported":
            if not path.is_file():  # removed by hand before upload: its questions go to the next round
                job.update(step="done", status="not submitted (input file missing)")
                self._save()
                return
            job["input_file_id"] = await self.client.upload(path)
            job["step"] = "uploaded"
            self._save()
        if job["step"] == "creating":  # cut off while creating: did the server get it?
            found = await self.client.find(job["input_file_id"])
            if found is not None:
                self._submitted(job, found)
                return
            job["step"] = "uploaded"
        if job["step"] == "uploaded":
            job["step"] = "creating"
            self._save()
            try:
                batch = await self.client.create(job["input_file_id"])
            except Ambiguous as exc:
                found = await self.client.find(job["input_file_id"])
                if found is None:
                    raise BatchError(f"creating the batch for {job['file']}: {exc}; run the same "
                                     "command again (it checks whether the batch exists first)") from None
                batch = found
            self._submitted(job, batch)

    def _submitted(self, job: dict[str, Any], batch: dict[str, Any]) -> None:
        job.update(step="submitted", batch_id=batch["id"], status=batch["status"])
        self._save()
        self.notify(f"factjudge: submitted batch {batch['id']} ({job['lines']} request(s), "
                    f"{job['file']})")

    async def _poll(self, jobs: list[dict[str, Any]]) -> Imported:
        result = Imported()
        waiting = [j for j in jobs if j["step"] == "submitted"]
        started = time.monotonic()
        shown, shown_at = "", 0.0
        while waiting:
            for job in list(waiting):
                try:
                    batch = await self.client.retrieve(job["batch_id"])
                except UnsafeId:
                    raise
                except BatchError as exc:
                    raise BatchError(f"{exc}; the batch goes on: run the same command again to "
                                     "resume polling") from None
                job.update(status=batch["status"], request_counts=batch.get("request_counts"))
                if batch["status"] in TERMINAL:
                    job.update(output_file_id=batch.get("output_file_id"),
                               error_file_id=batch.get("error_file_id"),
                               errors=_batch_errors(batch, self.llm.redact))
                    result.add(await self._collect(job))
                    waiting.remove(job)
            self._save()
            if waiting:
                text = "; ".join(_job_progress(j) for j in jobs)
                now = time.monotonic()
                if text != shown or now - shown_at >= 300:
                    self.notify(f"factjudge: batch round {self.state['round']}: {text} | "
                                f"{_elapsed(now - started)}")
                    shown, shown_at = text, now
                await asyncio.sleep(self.poll_interval)
        return result

    async def _collect(self, job: dict[str, Any]) -> Imported:
        """Download the finished batch's output and error files and import them."""
        files = []
        for key, suffix in (("output_file_id", "output"), ("error_file_id", "errors")):
            if job.get(key):
                dest = self.out_dir / BATCH_DIR / f"{job['batch_id']}.{suffix}.jsonl"
                await self.client.download(job[key], dest, lines=job["lines"])
                files.append(dest)
        assert self.llm.cache is not None
        result = import_outputs(files, self.llm.cache, redact=self.llm.redact)
        job.update(step="done", imported=result.counts(),
                   outputs=[str(f.relative_to(self.out_dir)) for f in files])
        self._save()
        c = result.counts()
        self.notify(f"factjudge: batch {job['batch_id']} {job['status']}: {c['stored']} answer(s) "
                    f"stored, {c['already_present']} already present, "
                    + (f"{c['conflicts']} conflicting, " if result.conflicts else "")
                    + f"{c['invalid']} invalid, {c['errors']} failed request(s)"
                    + (f", {c['unknown']} unknown custom_id(s)" if c["unknown"] else ""))
        if result.conflicts:
            self.notify(f"factjudge: warning: {conflict_warning(result.conflicts)}")
        for label, reason in (result.invalid[:3] + result.errors[:3]):
            self.notify(f"factjudge:   {label}: {reason}")
        return result

    def _check_round(self, jobs: list[dict[str, Any]], result: Imported) -> None:
        """A failed or cancelled batch, or a round where every request failed, stops the batch
        phase: asking the same again would fail the same way."""
        stop = ""
        for job in jobs:
            if job.get("status") == "failed":
                stop = (f"batch {job['batch_id']} failed: {job.get('errors') or 'no reason given'}; "
                        "run the same command again to submit a new batch, or drop --batch to ask live")
            elif job.get("status") == "cancelled":
                stop = (f"batch {job['batch_id']} was cancelled (its answers were imported); run the "
                        "same command again to carry on")
        if not stop and result.errors and not (result.stored or result.invalid or result.already_present
                                               or result.conflicts) \
                and all(j.get("status") == "completed" for j in jobs):
            stop = (f"every request of batch round {self.state['round']} failed (first: "
                    f"{result.errors[0][1]}); fix the cause and run the same command again, or drop "
                    "--batch to ask live")
        if stop:
            self.state["finished"] = True
            self._save()
            raise BatchError(stop)


def _batch_errors(batch: dict[str, Any], redact: Callable[[str], str]) -> str:
    """The first of a failed batch's errors as one line, the credentials in use hidden (the server
    may quote them: the line is shown and kept in batch.json), redacted before it is cut."""
    errors = batch.get("errors")
    data = errors.get("data") if isinstance(errors, dict) else None
    if not isinstance(data, list) or not data:
        return ""
    first = data[0] if isinstance(data[0], dict) else {}
    line = f" (line {first['line']})" if first.get("line") else ""
    more = f" and {len(data) - 1} more" if len(data) > 1 else ""
    return one_line(redact(f"{first.get('code') or 'error'}: {first.get('message') or ''}{line}{more}"))


def _job_progress(job: dict[str, Any]) -> str:
    """``batch_1 in_progress 40/100, 2 failed``: the server's counts as the client kept them
    (:func:`~factjudge.judges.llm.batch_api.BatchClient.retrieve`); one it did not give, or gave
    as no count, is shown ``?`` (the total is the job's own number of lines then)."""
    counts = job.get("request_counts") or {}
    completed, failed = counts.get("completed"), counts.get("failed")
    done = "?" if completed is None else completed + (failed or 0)
    total = counts.get("total") or job["lines"]
    shown_failed = f", {failed} failed" if failed else ""
    return f"{job['batch_id']} {job['status']} {done}/{total}{shown_failed}"
