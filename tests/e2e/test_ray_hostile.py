"""``factjudge eval --ray-address`` seen by another user of the machine: the API key (and a base
URL, which may carry a password) reaches the workers of a cluster started elsewhere without
appearing on any process's command line (``ps``: readable by every local user) or in any file of
the cluster's session folder (Ray's logs are world-readable).

A head node of its own (``ray start --head --block`` on a free port, its own temp folder), stopped
by ending that process: ``ray stop`` would stop every Ray of the machine, the other tests' too.
"""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from evalkit import ROOT
from scripted_server import ScriptedServer, answer, describe

EXAMPLE = ROOT / "examples" / "dataset.jsonl"
EXAMPLE_CONFIG = ROOT / "examples" / "config.yaml"



def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def no_match(body):
    direction, subject, _ = describe(body)
    return answer(direction, subject, None)


def command_lines_with(secret):
    """``pid: command line`` of every process whose command line holds ``secret``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes()
        except OSError:  # gone, or not a process
            continue
        if secret.encode() in args:
            shown = args.replace(bytes(1), b" ").decode(errors="replace")[:300]
            found.append(f"{proc.name}: {shown}")
    return found


def files_with(folder, secret):
    found = []
    for path in Path(folder).rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and secret.encode() in path.read_bytes():
                found.append(str(path))
        except OSError:  # a socket, or a file removed meanwhile
            continue
    return found


class HeadNode:
    """``ray start --head --block`` in a temp folder short enough for Ray's socket paths."""

    def __init__(self):
        self.temp = tempfile.mkdtemp(prefix="fjray-", dir="/tmp")
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "OPENAI_"))}
        env["RAY_AUTH_MODE"] = "token"  # as Ray sets up a new cluster (a token in ~/.ray)
        self.proc = subprocess.Popen(
            ["ray", "start", "--head", "--block", f"--port={self.port}", "--num-cpus=1",
             "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={self.temp}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def wait(self, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "ray start --head exited"
            if list(Path(self.temp).glob("session_*/logs/raylet.out")):
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", self.port)) == 0:
                        return
            time.sleep(0.5)
        raise AssertionError("the Ray head node did not start")

    def stop(self):
        """Ctrl-C to ``ray start --block`` stops what it started (GCS, raylet, workers); what is
        left of its process group after 60 s is killed."""
        try:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: start_new_session
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)


def run_watched(head, out, env, secrets):
    """``factjudge eval --ray-address`` of the bundled example on ``head`` with ``env`` added;
    the process, its stderr and every command line seen while it ran holding one of ``secrets``
    (the key, a URL's password: a base URL without credentials is no secret, and run.json names it)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "OPENAI_"))}
    full.update(env, RAY_AUTH_MODE="token")
    cli = subprocess.Popen(
        [sys.executable, "-m", "factjudge", "eval", str(EXAMPLE), "-c", str(EXAMPLE_CONFIG), "--model", "m",
         "-o", str(out), "--ray-address", head.address],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=full)
    seen: set[str] = set()
    deadline = time.monotonic() + 600
    while cli.poll() is None and time.monotonic() < deadline:
        seen.update(line for secret in secrets for line in command_lines_with(secret))
        time.sleep(0.05)
    _, err = cli.communicate(timeout=30)
    seen.update(line for secret in secrets for line in command_lines_with(secret))
    for name in ("results.jsonl", "summary.json", "run.json"):
        text = (out / name).read_text(encoding="utf-8") if (out / name).exists() else ""
        assert not any(secret in text for secret in secrets), name
    return cli, err, sorted(seen)


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.xdist_group("ray")  # a second Ray beside the module Ray of test_ray.py: 2 cores
def test_the_api_key_reaches_cluster_workers_on_no_command_line_and_in_no_log(tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'factjudge[ray]')")
    secret = f"sk-test-SECRET{uuid.uuid4().hex}"
    password = f"pw{uuid.uuid4().hex}"
    head = HeadNode()
    try:
        head.wait()
        with ScriptedServer(responder=no_match) as server:
            cli, err, seen = run_watched(head, tmp_path / "key", {
                "OPENAI_API_KEY": secret, "OPENAI_BASE_URL": server.base_url,
                "FACTJUDGE_CACHE_DIR": str(tmp_path / "cache-key")}, [secret])
            assert cli.returncode == 0, err
            assert seen == []
            # the key did reach the workers: every request carried it
            asked = len(server.requests)
            assert asked and [h.get("Authorization") for h in server.headers] == [f"Bearer {secret}"] * asked
            summary = json.loads((tmp_path / "key" / "summary.json").read_text(encoding="utf-8"))
            assert summary["documents"] == 5 and summary["usage"]["llm_calls"] == asked

            # a base URL with credentials (a gateway's) is as secret as the key; the HTTP client
            # sends them as Basic credentials
            cli, err, seen = run_watched(head, tmp_path / "url", {
                "OPENAI_API_KEY": secret, "FACTJUDGE_CACHE_DIR": str(tmp_path / "cache-url"),
                "OPENAI_BASE_URL": f"http://user:{password}@127.0.0.1:{server.port}/v1"}, [secret, password])
            assert cli.returncode == 0, err
            assert seen == []
            basic = "Basic " + base64.b64encode(f"user:{password}".encode()).decode()
            assert [h.get("Authorization") for h in server.headers[asked:]] == [basic] * asked
        assert files_with(head.temp, secret) == [] and files_with(head.temp, password) == []
    finally:
        head.stop()
        shutil.rmtree(head.temp, ignore_errors=True)


def test_the_workers_environment_shows_no_value_in_its_repr():
    """What Ray Data shows of map_batches' constructor arguments (its plans, errors, logs)."""
    from factjudge.runners.ray_data import WorkerEnv

    env = WorkerEnv({"OPENAI_API_KEY": "sk-test-SECRET123", "OPENAI_BASE_URL": "http://u:pw-SECRET@h/v1"})
    assert repr(env) == str(env) == "WorkerEnv(OPENAI_API_KEY, OPENAI_BASE_URL: values hidden)"
    assert "SECRET" not in repr({"env": env})
