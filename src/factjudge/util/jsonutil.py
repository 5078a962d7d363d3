"""Deterministic JSON, for hashes, cache keys and prompts; the parser of factjudge's own JSON lines."""
from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json

#: ``json.dumps`` with any setting builds a new encoder each call (a third of its time on a
#: 2-KB document); an encoder keeps no state between calls, so one serves every call.
_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def canonical_json(value: object) -> str:
    """Deterministic JSON: sorted keys, no spaces, UTF-8 kept as is."""
    return _CANONICAL.encode(value)


def parse_written(raw: bytes | str) -> Any:
    """JSON that factjudge wrote (a line of ``results.jsonl``), parsed by pydantic-core's parser:
    47 us a 19 KB line of a 20-fact document against json's 71 us, the same values. What it
    refuses and json reads (an array or object nested over 200 deep, a lone surrogate escape) is
    read by json, so nothing json parsed fails; json's error is the one raised."""
    try:
        return from_json(raw)
    except ValueError:
        return json.loads(raw)
