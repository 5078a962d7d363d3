"""The base of every pydantic model of factjudge."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """A pydantic model whose validator and serializer are built on its first use, not when its
    module is imported: a run uses a few of the ~40 models its imports declare (a rules ``eval``'s
    parent: 14, ``judge``: fewer), and building them all at import cost ~80 ms of every process's
    start (``import factjudge.cli.eval_cmd``: 255 -> 175 ms CPU)."""

    model_config = ConfigDict(defer_build=True)
