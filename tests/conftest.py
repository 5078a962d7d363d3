import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import realserver  # noqa: E402
from hypo import THOROUGH  # noqa: E402
from hypothesis import settings  # noqa: E402
from scripted_server import ScriptedServer  # noqa: E402

# `pytest --hypothesis-profile thorough`: every property test runs the examples written at it
# (tests/hypo.py), four times the default run's; registered here, before hypothesis loads it
settings.register_profile(THOROUGH)


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


# --------------------------------------------------------------------------- a real llama.cpp server
# tests/realserver.py: xllamacpp's server with SmolLM2-135M or Qwen2.5-Coder-1.5B; each fixture skips
# with the reason when what it needs is not installed (.ci/run installs all of it).


@pytest.fixture(scope="session")
def real_servers(tmp_path_factory):
    """The session's llama.cpp servers, one running at a time; ``.get(model, n_parallel)``."""
    reason = realserver.server_missing()
    if reason:
        pytest.skip(reason)
    pool = realserver.ServerPool(tmp_path_factory.mktemp("real_servers"), realserver.threads())
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def smollm_gguf():
    path = realserver.smollm_gguf()
    if isinstance(path, str):
        pytest.skip(path)
    return path


@pytest.fixture(scope="session")
def qwen_gguf():
    """Qwen's GGUF, joined from its 22 parts into the models cache once (16 s on 2 loaded cores)
    and checked by sha256 once (2-5 s), then by the size and mtime the hash was computed at."""
    parts = realserver.qwen_parts()
    if isinstance(parts, str):
        pytest.skip(parts)
    return realserver.assemble_qwen(parts, realserver.cache_dir())


# --------------------------------------------------------------------------- one local Ray
# Every test that needs a Ray is marked ``ray`` and ``xdist_group("ray")``, so they share one worker
# and this one Ray (started in 5-10 s on 2 loaded cores; three modules each started their own).


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray (2 CPUs, so 2 workers) for the worker's session: the ``ray`` module."""
    ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'factjudge[ray]')")
    import logging
    import time

    from factjudge.runners.ray_data import quiet_ray

    # CI runs the Ray tests beside the Qwen server on 2 cores: a starved raylet must not be declared
    # dead (Ray's default gives up after 5 health checks missed 10 s each, and the driver, this
    # pytest worker, exits with its raylet)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
             _system_config={"health_check_timeout_ms": 60_000, "health_check_failure_threshold": 20})
    quiet_ray()
    yield ray
    # a run stopped by an error leaves Ray Data killing its actor pool, and shutting the driver down
    # meanwhile is a race inside Ray: wait until the last test's actors are gone
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if ray.available_resources().get("CPU", 0) >= ray.cluster_resources().get("CPU", 0):
            break
        time.sleep(0.5)
    ray.shutdown()
