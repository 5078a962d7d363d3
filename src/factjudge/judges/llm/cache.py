"""On-disk cache of validated judge answers (SQLite from the standard library).

Keys hash everything that could change an answer: judge kind, model, the whole base URL (path and
query too: a gateway may route by them; credentials removed), the exact messages, the response
schema, sampling parameters and the prompt-format version. What is stored holds no credential:
the judge redacts an answer that echoes one before storing it. Each answer is
committed as soon as it is validated, so a killed run resumes by asking only what is missing.
WAL mode and a busy timeout let several processes share one cache file safely.
"""
from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3


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


class ResponseCache:
    """A key -> JSON answer store; safe for concurrent writers in several processes.

    Writes are batched: a commit per answer costs more than the answer's whole client-side
    handling at hundreds of answers per second. Pending answers are committed once ``batch`` of
    them wait or the oldest has waited ``max_delay`` seconds (checked at each ``put``), and on
    ``flush()`` / ``close()``; a killed process loses at most those."""

    def __init__(self, directory: str | Path | None = None, *, batch: int = 64,
                 max_delay: float = 0.5) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "answers.sqlite3"
        self.batch, self.max_delay = batch, max_delay
        self._pending: dict[str, str] = {}
        self._oldest = 0.0
        self._lock = threading.Lock()
        self._local = threading.local()
        atexit.register(self.flush)  # a script that never calls close() keeps its answers
        with self._conn() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT NOT NULL)")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # sqlite3 (~1.5 ms to import) only once a cache is opened: a --no-cache LLM run loads
            # this module with its judge all the same
            import sqlite3

            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer, or None; a corrupt row (a killed writer, a hand edit, another
        program's data) is a miss too, so the question is asked again and ``put`` overwrites it."""
        with self._lock:
            text = self._pending.get(key)
        if text is None:
            row = self._conn().execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            text = row[0]
        try:
            answer = json.loads(text)
        except (TypeError, ValueError, RecursionError):
            return None
        if not isinstance(answer, dict) or not isinstance(answer.get("content"), str):
            return None
        return answer

    def put(self, key: str, answer: dict[str, Any]) -> None:
        with self._lock:
            if not self._pending:
                self._oldest = time.monotonic()
            self._pending[key] = json.dumps(answer, ensure_ascii=False)
            due = len(self._pending) >= self.batch or time.monotonic() - self._oldest >= self.max_delay
        if due:
            self.flush()

    def flush(self) -> None:
        """Commit the pending answers (one transaction)."""
        with self._lock:
            rows, self._pending = list(self._pending.items()), {}
        if rows:
            conn = self._conn()
            with conn:  # one transaction
                conn.execute("BEGIN")
                conn.executemany("INSERT OR REPLACE INTO answers (key, answer) VALUES (?, ?)", rows)

    def __len__(self) -> int:
        self.flush()
        return int(self._conn().execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        self.flush()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
