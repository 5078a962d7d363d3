import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scripted_server import ScriptedServer  # noqa: E402


@pytest.fixture
def server():
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def write_json(tmp_path):
    def write(name, data):
        path = tmp_path / name
        if name.endswith(".jsonl"):
            path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
        else:
            path.write_text(json.dumps(data), encoding="utf-8")
        return path
    return write


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Never touch the user's response cache from tests (subprocesses inherit this too)."""
    monkeypatch.setenv("FACTJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def dataset(tmp_path):
    """The five hand-computed documents of evalkit as a dataset file, and a config file."""
    from evalkit import CONFIG, DOCS, write_jsonl

    (tmp_path / "cfg.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    return write_jsonl(tmp_path / "data.jsonl", DOCS), tmp_path / "cfg.json"
