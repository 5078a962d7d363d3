"""Prompt token counting that never downloads anything.

tiktoken fetches its encoding files from the internet on first use, which fails (or hangs) offline.
So tiktoken is used only when it is installed *and* the encoding file is already in its local cache
(``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or the temp-dir cache it fills itself); otherwise a
conservative estimate is used. ``TokenCounter.name`` says which, and ends up in ``usage``.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from typing import Any

#: Encoding files of OpenAI's chat models: where tiktoken caches them from, and their sha256.
#: tiktoken deletes a cached file whose hash differs and downloads it again: checked here first.
_ENCODING_FILES = {
    "o200k_base": ("https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
                   "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
    "cl100k_base": ("https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
                    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
}
#: Per-message framing tokens of the chat format (role, separators), rounded up.
MESSAGE_OVERHEAD = 4
#: Tokens that prime the assistant's reply, once per request.
REPLY_PRIMING = 3
ESTIMATE_NAME = "estimate:utf8_bytes/3"
#: Generated tokens per answer with prompt format 5 per ``reasoning``, measured with
#: Qwen2.5-Coder-1.5B on llama.cpp (benchmarks/real_judge.py on the builtin calibration set; the
#: same figures in benchmarks/cost.py): the dry run's estimate of an answer's length. The fixed
#: 200 it assumed before made the estimated cost 2.5x the cost of the tokens the server reported
#: (issue #36); a budget below these bounds them.
ANSWER_TOKENS = {"full": 87, "brief": 66, "none": 23}


def answer_tokens(reasoning: str, budget: int | None) -> int:
    """The dry run's estimate of one answer's output tokens: the measured length for ``reasoning``,
    at most the budget sent (``--max-tokens``; 0 or None: none)."""
    typical = ANSWER_TOKENS.get(reasoning, ANSWER_TOKENS["full"])
    return min(typical, budget) if budget else typical


def _tiktoken_cache_dir() -> str:
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _cached_file(cache_dir: str, url: str) -> str:
    """Where tiktoken caches the file of ``url``."""
    return os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())


def _cached_encoding(model: str) -> tuple[str, Callable[[str], int]] | None:
    """A tiktoken encoder for ``model`` if it can be had without a download."""
    cache_dir = _tiktoken_cache_dir()
    # no encoding file cached, no encoder: tiktoken (~7 ms to import) is not imported for nothing
    if not cache_dir or not any(os.path.exists(_cached_file(cache_dir, url)) for url, _ in _ENCODING_FILES.values()):
        return None
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        name = tiktoken.encoding_name_for_model(model)
    except KeyError:  # not an OpenAI model: its tokenizer is unknown, the estimate is safer
        return None
    url, sha256 = _ENCODING_FILES.get(name, (None, None))
    if url is None:
        return None
    try:
        with open(_cached_file(cache_dir, url), "rb") as fh:
            intact = hashlib.sha256(fh.read()).hexdigest() == sha256
    except OSError:
        return None
    if not intact:
        return None
    try:
        enc = tiktoken.get_encoding(name)
    except Exception:  # noqa: BLE001  (a broken tiktoken install: fall back to the estimate)
        return None
    return f"tiktoken:{name}", lambda text: len(enc.encode(text, disallowed_special=()))


def estimate_tokens(text: str) -> int:
    """Over-estimate: BPE tokenizers average well over 3 UTF-8 bytes per token on JSON and prose."""
    return -(-len(text.encode("utf-8")) // 3)


class TokenCounter:
    def __init__(self, model: str = "") -> None:
        found = _cached_encoding(model) if model else None
        self.name, self._count = found or (ESTIMATE_NAME, estimate_tokens)

    def text(self, text: str) -> int:
        return self._count(text)

    def messages(self, messages: list[dict[str, Any]]) -> int:
        return sum(self._count(m.get("content") or "") + MESSAGE_OVERHEAD for m in messages) + REPLY_PRIMING
