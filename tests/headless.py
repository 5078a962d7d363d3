"""One headless Chromium (Debian's /usr/bin/chromium) kept running for a test module and driven over
the DevTools protocol, instead of one Chromium process per page load: a start costs ~0.5-1 s of CPU
and the browser tests load some 35 pages. A load is a new document in a kept tab (a new tab or
browser context would start a renderer, ~0.2 s of CPU each), with nothing left from the last page
(about:blank in between, its storage cleared). It returns what ``--dump-dom``, ``--screenshot`` and
``--enable-logging=stderr`` gave: the DOM after the scripts ran, the PNG of the viewport, every
console message and uncaught exception."""
from __future__ import annotations

import asyncio
import atexit
import base64
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = Path("/usr/bin/chromium")

#: The flags every launch used; --host-resolver-rules keeps the page offline (any name is unknown).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND")


def launch(profile: Path) -> tuple[subprocess.Popen[bytes], int, str]:
    """Chromium listening for the DevTools protocol on a free port of 127.0.0.1: the process, the
    port and the browser's websocket address (Chromium writes port and path to DevToolsActivePort
    once it listens). Chromium puts its singleton socket in a folder of TMPDIR it leaves behind
    when it is terminated (a suite run left 73 ``org.chromium.Chromium.*`` folders in /tmp): it is
    given a short folder of its own (a socket's path is at most 107 bytes, too few inside
    pytest's), removed when the test process ends."""
    own_tmp = tempfile.mkdtemp(prefix="fj-chromium-")
    atexit.register(shutil.rmtree, own_tmp, True)
    proc = subprocess.Popen([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                             "--remote-debugging-address=127.0.0.1", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "TMPDIR": own_tmp})
    port_file, end = profile / "DevToolsActivePort", time.monotonic() + 30
    while time.monotonic() < end:
        lines = port_file.read_text().split() if port_file.exists() else []
        if len(lines) == 2:
            return proc, int(lines[0]), f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"chromium did not start (exit {proc.wait()})")


@dataclass
class Loaded:
    dom: str
    console: list[str]
    png: bytes = field(default=b"", repr=False)


def console_line(event: dict[str, Any]) -> str | None:
    """One console message or uncaught exception as a line (an exception as Chromium logs it,
    "Uncaught ReferenceError: ..."), None for any other event."""
    method, params = event["method"], event.get("params", {})
    if method == "Runtime.exceptionThrown":
        details = params["exceptionDetails"]
        thrown = details.get("exception", {}).get("description", "")
        return f"{details.get('text', '')} {thrown} ({details.get('url', '')}:{details.get('lineNumber')})"
    if method == "Runtime.consoleAPICalled":
        args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
        return f"CONSOLE {params.get('type')}: {args}"
    if method == "Log.entryAdded":
        entry = params["entry"]
        return f"CONSOLE {entry.get('level')} ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}"
    return None


class Browser:
    """The running Chromium and one websocket to it; pages are loaded one after the other."""

    def __init__(self, tmp: Path):
        self.proc, _, address = launch(Path(tempfile.mkdtemp(dir=tmp)))
        self.loop = asyncio.new_event_loop()
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.tabs: dict[bool, str] = {}
        try:
            self.session, self.ws = self.loop.run_until_complete(self._connect(address))
        except BaseException:
            self.close()
            raise

    @staticmethod
    async def _connect(address: str) -> tuple[aiohttp.ClientSession, aiohttp.ClientWebSocketResponse]:
        session = aiohttp.ClientSession()
        return session, await session.ws_connect(address, max_msg_size=0)

    async def _send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        ident = self.next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        await self.ws.send_json(message)
        while True:
            msg = await self.ws.receive_json(timeout=60)
            if msg.get("id") == ident:
                assert "error" not in msg, (method, msg)
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    async def _wait(self, method: str, session: str) -> None:
        """Until ``session`` sends the event ``method`` (kept in :attr:`events`)."""
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event["method"] == method and event.get("sessionId") == session:
                    return
            seen = len(self.events)
            msg = await self.ws.receive_json(timeout=60)
            if "method" in msg:
                self.events.append(msg)

    async def _tab(self, virtual_time: bool) -> str:
        """The session of the kept tab for loads with (or without) a virtual-time budget: once a
        tab runs on virtual time it cannot go back to real time."""
        if virtual_time not in self.tabs:
            target = (await self._send("Target.createTarget", url="about:blank"))["targetId"]
            sid = (await self._send("Target.attachToTarget", targetId=target, flatten=True))["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                await self._send(f"{domain}.enable", sid)
            self.tabs[virtual_time] = sid
        return self.tabs[virtual_time]

    async def _navigate(self, sid: str, url: str, budget: int | None) -> None:
        if budget is None:  # --dump-dom alone: the DOM once the page's load event fired
            await self._send("Page.navigate", sid, url=url)
            await self._wait("Page.loadEventFired", sid)
        else:  # --virtual-time-budget: timers run in virtual time until ``budget`` ms have passed
            await self._send("Emulation.setVirtualTimePolicy", sid, policy="pause")
            await self._send("Page.navigate", sid, url=url)
            await self._send("Emulation.setVirtualTimePolicy", sid, policy="pauseIfNetworkFetchesPending",
                             budget=budget)
            await self._wait("Emulation.virtualTimeBudgetExpired", sid)

    async def _load(self, url: str, width: int, height: int, budget: int | None, hide_scrollbars: bool,
                    screenshot: bool) -> Loaded:
        sid = await self._tab(budget is not None)
        # about:blank first, so that a URL differing from the last one in its #fragment only is a
        # new document too (not a hashchange)
        await self._navigate(sid, "about:blank", None)
        # the viewport --window-size gave (window.innerWidth == width)
        await self._send("Emulation.setDeviceMetricsOverride", sid, width=width, height=height,
                         deviceScaleFactor=1, mobile=False)
        await self._send("Emulation.setScrollbarsHidden", sid, hidden=hide_scrollbars)
        self.events = [e for e in self.events if e.get("sessionId") != sid]
        await self._navigate(sid, url, budget)
        dom = (await self._send("Runtime.evaluate", sid, expression="document.documentElement.outerHTML",
                                returnByValue=True))["result"]["value"]
        png = base64.b64decode((await self._send("Page.captureScreenshot", sid, format="png"))["data"]) \
            if screenshot else b""
        # no storage left for the next page (a new --user-data-dir had none; file:// has no cookies)
        await self._send("Runtime.evaluate", sid, expression="localStorage.clear(); sessionStorage.clear()")
        console = [line for e in self.events if e.get("sessionId") == sid
                   for line in [console_line(e)] if line is not None]
        self.events = [e for e in self.events if e.get("sessionId") != sid]
        return Loaded(dom, console, png)

    def load(self, url: str, width: int = 800, height: int = 600, budget: int | None = None,
             hide_scrollbars: bool = False, screenshot: bool = False) -> Loaded:
        """``url`` as a new document at a ``width`` x ``height`` viewport (800x600 as headless
        Chromium's window without --window-size), after ``budget`` ms of virtual time if given."""
        return self.loop.run_until_complete(self._load(url, width, height, budget, hide_scrollbars, screenshot))

    def close(self) -> None:
        if hasattr(self, "session"):
            self.loop.run_until_complete(self.ws.close())
            self.loop.run_until_complete(self.session.close())
        self.loop.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
