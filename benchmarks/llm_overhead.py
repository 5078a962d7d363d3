"""Client overhead of the LLM judge, measured as a user runs it.

For each scenario it prints, side by side:
- ``cli``: the whole ``factjudge eval`` process, start to exit (import, scan, judging, files);
- ``library``: ``evaluate_async`` in this process (no interpreter start-up), and on a line of its
  own the judging alone: wall and CPU from the start to the last answer, then what follows it
  (results, summary and reports written);
- ``bare aiohttp``: a minimal client posting the very same request bodies (the floor);
each with wall time, the ratio to the physical limit (calls x server delay / concurrency) and the
client's CPU milliseconds per call, for the default ``http`` backend and ``--backend openai-sdk``.
The server (:data:`PACED_SERVER_CODE`) answers each request exactly the delay after it arrived,
with little CPU of its own: the bare client's ratio is the floor this machine allows.

Scenarios and limits (issue 39): 100 documents x 10+10 facts (2,000 calls) at 200 ms, concurrency
32 (wall <= 1.05x ideal); 4,000 calls at 50 ms, concurrency 64 (<= 1.3x); a server that answers
at once (calls per second on one core); client CPU <= 0.7 ms per call.
Run: python benchmarks/llm_overhead.py [--quick] [--scenario paced] [--runs cli,library,bare]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from _common import ROOT, ServerProcess, report, synthetic_document, user_env

from factjudge import LLMJudge, load_config
from factjudge.core.scope import compared_fields, in_scope_facts
from factjudge.evaluation.runner import evaluate_async, input_salt
from factjudge.io.datasets import JsonlDataset
from factjudge.judges.base import JudgePass
from factjudge.judges.llm import Transport

# The server: the scripted server's answers (the candidate with the subject's number, else null)
# from a bare asyncio protocol instead of an aiohttp application (one parse per request, nothing
# logged), each answer written at exactly its
# request's arrival + the delay (loop.call_at: no task, no sleep per request). aiohttp's server
# spent ~0.3 ms of CPU a request before the delay started, so a burst of 64 requests reached
# the last one's delay late: every client's latency, the bare one's included, was above the
# delay by that queue. Answers are kept by what they depend on (built once per distinct answer).
# Its loop waits in select(), not epoll: epoll_wait takes whole milliseconds (selectors rounds a
# timeout up), so each answer came 0.51-0.66 ms after its delay on average and answers due within
# the same millisecond left together, as one burst the client then worked through: a 200 ms
# server was a 200.6 ms one, charged to every client (the bare one's floor 1.021-1.022x, the CLI's
# turnaround from an answer to its next question 2.8 ms). select() takes microseconds: 0.20 ms
# late, the floor 1.018x, that turnaround 1.8 ms. It watches at most 1,024 sockets (FD_SETSIZE);
# a scenario opens 64 at most. How late the answers came is printed with each scenario.
PACED_SERVER_CODE = r"""
import asyncio, json, selectors, sys
sys.path.insert(0, sys.argv[1])
from scripted_server import answer

delay = float(sys.argv[2])
built = {}
late = [0.0, 0.0, 0]  # the answers' lateness: sum, max, count
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

def respond(raw):
    body = json.loads(raw)
    messages = body["messages"]
    # prompt formats 4 and 5: a header line, "fact_type: ...", the field names, then "id | ..." per fact
    head, *table = messages[-1]["content"].split("\n")
    direction = "gold" if head.startswith("GOLD") else "predicted"
    subject = table[2].split(" | ")[0]
    want = ("p" if direction == "gold" else "g") + subject[1:]
    lines = messages[1]["content"].split("\n")[1:]
    match = want if any(line.split(" | ")[0] == want for line in lines) else None
    tokens = len(raw) // 4
    key = (body["model"], direction, subject, match, tokens)
    out = built.get(key)
    if out is None:
        data = json.dumps({
            "id": "chatcmpl-lean", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": answer(direction, subject, match).content}}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 20, "total_tokens": tokens + 20}}).encode()
        out = built[key] = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                            b"Content-Length: %d\r\n\r\n" % len(data)) + data
    return out

class Connection(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buffer = transport, b""

    def data_received(self, data):
        arrived = loop.time()
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:end].decode("latin-1").split("\r\n")
            length = next((int(h.split(":", 1)[1]) for h in head[1:] if h.lower().startswith("content-length:")), 0)
            if len(self.buffer) < end + 4 + length:
                return
            raw, self.buffer = self.buffer[end + 4:end + 4 + length], self.buffer[end + 4 + length:]
            method, path = head[0].split(" ")[:2]
            out = respond(raw) if method == "POST" and path.endswith("/chat/completions") else NOT_FOUND
            # the delay is a model's answer: a path the server does not have (the judge's probe of a
            # self-hosted server's /health before its first question) is refused at once, as
            # llama.cpp, vLLM or Ollama do; delayed, it put one delay before every run's first question
            if delay and out is not NOT_FOUND:
                loop.call_at(arrived + delay, self.write, out, arrived + delay)
            else:
                self.transport.write(out)

    def write(self, out, due):
        after = loop.time() - due
        late[0], late[1], late[2] = late[0] + after, max(late[1], after), late[2] + 1
        if not self.transport.is_closing():
            self.transport.write(out)

async def main():
    global loop
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Connection, "127.0.0.1", 0, backlog=1024)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()
    print(f"{late[0] / max(1, late[2]) * 1000:.3f} {late[1] * 1000:.3f} {late[2]}", flush=True)

loop = asyncio.SelectorEventLoop(selectors.SelectSelector())
asyncio.set_event_loop(loop)
loop.run_until_complete(main())
"""


class PacedServer(ServerProcess):
    """:data:`PACED_SERVER_CODE` in a process of its own (its CPU is not the client's). Once
    left, :attr:`late` says how late its delayed answers came: the mean and the most, in ms,
    and how many."""

    def __init__(self, delay: float) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", PACED_SERVER_CODE, str(ROOT / "tests"), str(delay)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.base_url = self.proc.stdout.readline().strip()
        self.late = (0.0, 0.0, 0)

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        said = self.proc.stdout.read().split()
        if len(said) == 3:  # else the server died: the error already raised says why
            self.late = (float(said[0]), float(said[1]), int(said[2]))


def write_dataset(path: Path, docs: int, per_side: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(docs):
            gold, pred = synthetic_document(per_side, seed=i)
            fh.write(json.dumps({"doc_id": f"d{i}", "gold_facts": gold, "predicted_facts": pred}) + "\n")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cli(data: Path, base_url: str, concurrency: int, backend: str) -> tuple[float, float, int]:
    # the environment first: user_env compiles the package in a process of its own (as pip did
    # at install), which was inside the timed region (its interpreter start and the walk over the
    # modules, in the wall time and in the children's CPU)
    env = user_env()
    with tempfile.TemporaryDirectory() as out:
        cpu0, t0 = children_cpu(), time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "factjudge", "eval", str(data), "--model", "bench",
                               "--base-url", base_url, "--concurrency", str(concurrency), "--no-cache",
                               "--backend", backend, "-q", "-o", out], capture_output=True, text=True,
                              env=env)
        wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
        assert proc.returncode == 0, proc.stderr
        summary = json.loads((Path(out) / "summary.json").read_text())
        assert summary["micro"]["f1"] == 1.0
        return wall, cpu, int(summary["usage"]["llm_calls"])


class LastAnswer:
    """A run's progress observer keeping when the last answer came (wall and CPU clocks)."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def on_start(self, to_judge: int, reused: int, questions: int) -> None: ...

    def on_document(self, doc_id: str) -> None: ...

    def on_questions(self, count: int) -> None: ...

    def on_verdict(self, direction: str, verdict: object) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()


async def run_library(data: Path, base_url: str, concurrency: int, backend: str,
                      last: LastAnswer | None = None) -> tuple[float, float, int]:
    config = load_config(None)
    judge = LLMJudge("bench", base_url=base_url, transport=Transport(backend=backend))
    dataset = JsonlDataset(data)
    dataset.scan(config, input_salt(config, judge))
    last = last or LastAnswer()
    with tempfile.TemporaryDirectory() as out:
        cpu0, t0 = time.process_time(), time.perf_counter()
        async with judge:
            run = await evaluate_async(dataset, config, judge, Path(out), concurrency=concurrency,
                                       progress=last)
        last.wall, last.cpu = last.wall - t0, last.cpu - cpu0  # from the start
        return time.perf_counter() - t0, time.process_time() - cpu0, int(run.summary.usage["llm_calls"])


async def run_bare(data: Path, base_url: str, concurrency: int) -> tuple[float, float, int]:
    """The same bodies the judge sends, posted by the thinnest possible client."""
    config = load_config(None)
    judge = LLMJudge("bench", base_url=base_url)
    bodies = []
    for line in data.read_text().splitlines():
        doc = json.loads(line)
        gold, pred = in_scope_facts(doc["gold_facts"], config), in_scope_facts(doc["predicted_facts"], config)
        fields, _ = compared_fields(gold, pred, config)
        for direction, subjects, cands in (("gold", gold, pred), ("predicted", pred, gold)):
            opened = judge.open(JudgePass(direction, cands, config, fields, doc["doc_id"]))
            # the judge's own bytes: its bodies are serialised without spaces
            bodies += [json.dumps(opened.batch_request(f).body, ensure_ascii=False,
                                  separators=(",", ":")).encode() for f in subjects]
    url = base_url + "/chat/completions"
    limiter = asyncio.Semaphore(concurrency)
    cpu0, t0 = time.process_time(), time.perf_counter()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def one(body: bytes) -> None:
            async with limiter, session.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
                json.loads(await r.read())
        await asyncio.gather(*(one(b) for b in bodies))
    return time.perf_counter() - t0, time.process_time() - cpu0, len(bodies)


def scenario(title: str, docs: int, per_side: int, delay: float, concurrency: int, target: str,
             kinds: set[str], backends: set[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, PacedServer(delay) as server:
        data = Path(tmp) / "data.jsonl"
        write_dataset(data, docs, per_side)
        rows = []
        url = server.base_url

        def figures(wall: float, cpu: float, calls: int) -> str:
            ideal = calls * delay / concurrency
            ratio = f"{wall / ideal:.3f}x ideal ({ideal:.2f} s)" if ideal else f"{calls / wall:,.0f} calls/s"
            return f"{wall:6.2f} s  {ratio}  CPU {cpu * 1000 / calls:.2f} ms/call  ({calls} calls)"

        for kind in ("cli", "library", "bare"):
            for backend in (("http",) if kind == "bare" else ("http", "openai-sdk")):
                if kind not in kinds or (kind != "bare" and backend not in backends):
                    continue
                last = LastAnswer()
                if kind == "cli":
                    wall, cpu, calls = run_cli(data, url, concurrency, backend)
                elif kind == "library":
                    wall, cpu, calls = asyncio.run(run_library(data, url, concurrency, backend, last))
                else:
                    wall, cpu, calls = asyncio.run(run_bare(data, url, concurrency))
                rows.append((f"{kind}, {backend}" if kind != "bare" else "bare aiohttp", figures(wall, cpu, calls)))
                if kind == "library":
                    rows.append(("  to the last answer", f"{figures(last.wall, last.cpu, calls)}; then "
                                 f"{wall - last.wall:.2f} s, {cpu - last.cpu:.2f} s CPU"))
    if delay:
        mean, most, count = server.late
        rows.append(("server", f"its {count:,} answers {mean:.2f} ms after their delay on average "
                               f"(at most {most:.1f} ms): part of every row's time"))
    report(f"{title}: {docs} docs x {per_side}+{per_side} facts, {delay * 1000:.0f} ms, "
           f"concurrency {concurrency} (limit {target})", rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller scenarios (a smoke run)")
    ap.add_argument("--scenario", choices=("paced", "fast", "instant"), action="append",
                    help="run only this scenario (repeatable; default: all three)")
    ap.add_argument("--runs", default="cli,library,bare", help="which of cli, library, bare to run")
    ap.add_argument("--backends", default="http,openai-sdk", help="which of http, openai-sdk to run")
    args = ap.parse_args()
    k = 4 if args.quick else 1
    kinds, backends = set(args.runs.split(",")), set(args.backends.split(","))
    chosen = set(args.scenario or ("paced", "fast", "instant"))
    if "paced" in chosen:
        scenario("paced", 100 // k, 10, 0.2, 32, "wall <= 1.05x, CPU <= 0.7 ms/call", kinds, backends)
    if "fast" in chosen:
        scenario("fast server", 200 // k, 10, 0.05, 64, "wall <= 1.3x, CPU <= 0.7 ms/call", kinds, backends)
    if "instant" in chosen:
        scenario("instant server", 200 // k, 10, 0.0, 64, "calls per second on one core", kinds, backends)


if __name__ == "__main__":
    main()
