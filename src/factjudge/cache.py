"""On-disk cache of validated judge answers (SQLite from the standard library).

Keys hash everything that could change an answer: judge kind, model, base-URL host, the exact
messages, the response schema, sampling parameters and the prompt-format version. Each answer is
committed as soon as it is validated, so a killed run resumes by asking only what is missing.
WAL mode and a busy timeout let several processes share one cache file safely.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from .prompts import PROMPT_FORMAT_VERSION, canonical_json


def default_cache_dir() -> Path:
    """``$FACTJUDGE_CACHE_DIR``, else the platform's user cache directory."""
    if os.environ.get("FACTJUDGE_CACHE_DIR"):
        return Path(os.environ["FACTJUDGE_CACHE_DIR"])
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "factjudge"


def server_host(base_url: str | None) -> str:
    """host[:port] of an OpenAI-compatible server, without any credentials in the URL."""
    if not base_url:
        return "api.openai.com"
    url = urlparse(base_url)
    return f"{url.hostname}:{url.port}" if url.port else str(url.hostname)


def cache_key(*, judge: str, model: str, base_url: str | None, messages: list[dict[str, Any]],
              response_format: dict[str, Any], sampling: dict[str, Any]) -> str:
    host = server_host(base_url)
    material = canonical_json({
        "v": PROMPT_FORMAT_VERSION, "judge": judge, "model": model, "host": host,
        "messages": messages, "response_format": response_format, "sampling": sampling,
    })
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class ResponseCache:
    """A key -> JSON answer store; safe for concurrent writers in several processes."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "answers.sqlite3"
        self._local = threading.local()
        with self._conn() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT NOT NULL)")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer, or None; a corrupt row (a killed writer, a hand edit, another
        program's data) is a miss too, so the question is asked again and ``put`` overwrites it."""
        row = self._conn().execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            answer = json.loads(row[0])
        except (TypeError, ValueError, RecursionError):
            return None
        if not isinstance(answer, dict) or not isinstance(answer.get("content"), str):
            return None
        return answer

    def put(self, key: str, answer: dict[str, Any]) -> None:
        self._conn().execute("INSERT OR REPLACE INTO answers (key, answer) VALUES (?, ?)",
                             (key, json.dumps(answer, ensure_ascii=False)))

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
