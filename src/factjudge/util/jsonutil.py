"""Deterministic JSON, for hashes, cache keys and prompts."""
from __future__ import annotations

import json


def canonical_json(value: object) -> str:
    """Deterministic JSON: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
