"""``results.jsonl``: one line per finished document, appended as documents finish (so a killed
run keeps them), indexed by ``doc_id`` for resuming, rewritten in dataset order at the end."""
from __future__ import annotations

import codecs
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from ..core.aggregate import doc_stats
from ..errors import InputError
from ..models import OUTPUT_FIELDS, JudgeResult
from ..util.jsonutil import canonical_json
from .datasets import DocInfo, _read_at
from .jsonl import jsonl_lines

RESULTS = "results.jsonl"


def _created(summary: Path) -> str | None:
    try:
        value = json.loads(summary.read_text(encoding="utf-8")).get("provenance", {}).get("created")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None

class ResultStore:
    """``results.jsonl``, append-only while running; indexed by doc_id for resuming."""

    def __init__(self, path: Path, repair: bool = True) -> None:
        self.path = path
        #: doc_id -> (input hash, byte offset, ERROR facts) of its latest complete line
        self.index: dict[str, tuple[str, int, int]] = {}
        #: When the finished run in this folder made its results (its summary's provenance), if any.
        self.created: str | None = _created(path.parent / "summary.json")
        if path.exists():
            self._load(repair)

    def _load(self, repair: bool) -> None:
        end = 0
        with self.path.open("rb") as fh:
            offset = 0
            for lineno, raw in enumerate(fh, start=1):
                if not raw.endswith(b"\n"):
                    break  # cut off by a kill: dropped below
                try:
                    rec = json.loads(raw.removeprefix(codecs.BOM_UTF8))
                    self.index[rec["doc_id"]] = (rec["input_sha256"], offset,
                                                 int(rec["metrics"]["errors"]))
                except (ValueError, KeyError, TypeError):
                    # not written by factjudge: never overwrite someone else's file
                    raise InputError(f"{self.path}: line {lineno} is not a factjudge "
                                     "result line; choose another output folder") from None
                offset += len(raw)
                end = offset
        if repair and end != self.path.stat().st_size:
            os.truncate(self.path, end)

    def lines(self) -> Iterator[dict[str, Any]]:
        """Every line of the file, parsed, in file order."""
        with self.path.open("rb") as fh:
            for raw in fh:
                yield json.loads(raw)

    def reusable(self, info: DocInfo) -> bool:
        hit = self.index.get(info.doc_id)
        return hit is not None and hit[0] == info.input_sha256 and hit[2] == 0

    def append(self, fh: IO[bytes], doc_id: str, input_sha256: str, result: JudgeResult) -> None:
        line = {"doc_id": doc_id, "input_sha256": input_sha256, **result.to_dict()}
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
        offset = fh.tell()
        fh.write(data)
        fh.flush()  # a killed process keeps every finished line
        self.index[doc_id] = (input_sha256, offset, result.metrics.errors)

    def rewrite(self, order: Sequence[DocInfo]) -> Iterator[dict[str, Any]]:
        """Rewrite the file atomically in dataset order, yielding each line parsed."""
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            os.chmod(tmp, self.path.stat().st_mode)  # mkstemp's 0600 would surprise readers
            with os.fdopen(fd, "wb") as out, self.path.open("rb") as src:
                for info in order:
                    sha, offset, _ = self.index[info.doc_id]
                    assert sha == info.input_sha256, info.doc_id
                    raw = _read_at(src, offset)
                    out.write(raw)
                    yield json.loads(raw)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise



def read_eval_dir(out_dir: Path) -> dict[str, tuple[tuple[int, int, int, int], str]]:
    """doc_id -> (bootstrap key, hash of its gold facts) from a finished eval folder."""
    if not (out_dir / "summary.json").is_file():
        raise InputError(f"{out_dir}: not a finished eval output folder (no summary.json)")
    docs: dict[str, tuple[tuple[int, int, int, int], str]] = {}
    path = out_dir / RESULTS
    for lineno, _, raw in jsonl_lines(path):
        try:
            line = json.loads(raw)
            gold = [{k: v for k, v in f.items() if k not in OUTPUT_FIELDS} for f in line["gold_facts"]]
            digest = hashlib.sha256(canonical_json(gold).encode("utf-8")).hexdigest()
            docs[line["doc_id"]] = (doc_stats(line).key, digest)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise InputError(f"{path}: line {lineno}: not a factjudge result line") from None
    return docs
