"""review.html in a real headless Chromium driven over the DevTools protocol: a person reviews
facts with clicks and keys, corrects a gold value, reloads (the verdicts stay), exports, and the
file is the expected lines; a hostile value stays text. Then ``review apply`` takes that file."""
import asyncio
import json
import tempfile
import time
from pathlib import Path

import aiohttp
import pytest
from evalkit import REVIEW_DOCS, REVIEW_VERDICTS, export_lines, fact, read_lines, review_data, run_cli, write_jsonl
from headless import CHROMIUM, launch

HOSTILE = '</script><img src=x onerror="document.title=1"><b>bold</b> & "quotes"'

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser"), pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run installs it)")]


class Page:
    """One Chromium tab over the DevTools protocol (the commands this test needs)."""

    def __init__(self, ws):
        self.ws, self.next_id = ws, 0

    async def send(self, method, **params):
        self.next_id += 1
        ident = self.next_id
        await self.ws.send_json({"id": ident, "method": method, "params": params})
        while True:
            msg = await self.ws.receive_json(timeout=30)
            if msg.get("id") == ident:
                assert "error" not in msg, msg
                return msg.get("result", {})

    async def js(self, expression):
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    async def wait(self, expression, timeout=20.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if await self.js(expression):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"timed out waiting for {expression}")

    async def open(self, url=None):
        """Navigate to ``url`` (None: reload the page) and wait until the new document has drawn its
        queue. The document being left is marked first: right after the command it may still be the
        one in place, complete and drawn, and a reload followed by a navigation once raced that way
        (the queue read from a page half replaced)."""
        await self.js("window.__left = true")
        if url is None:
            await self.send("Page.reload")
        else:
            await self.send("Page.navigate", url=url)
        await self.wait("!window.__left && document.readyState === 'complete'"
                        " && !!document.getElementById('progress')?.dataset.reviewed")

    async def key(self, key, code=None, vk=None):
        text = key if len(key) == 1 else ""
        for kind in ("keyDown", "keyUp"):
            await self.send("Input.dispatchKeyEvent", type=kind, key=key, code=code or f"Key{key.upper()}",
                            text=text if kind == "keyDown" else "", windowsVirtualKeyCode=vk or ord(key.upper()))

    async def click(self, index, act):
        await self.js(f"document.querySelectorAll('#queue > li')[{index}]"
                      f".querySelector('button[data-act=\"{act}\"]').click()")


async def drive(port, url, downloads, keys_of):
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{port}/json/list") as resp:
            target = next(t for t in await resp.json() if t["type"] == "page")
        async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            page = Page(ws)
            await page.send("Page.enable")
            # the page behaves as focused though no window has the focus: a field focused by script
            # takes the keys (CI once pressed Enter on the page's body instead, saving no correction)
            await page.send("Emulation.setFocusEmulationEnabled", enabled=True)
            await page.send("Page.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
            await page.open(url)
            index = {k: i for i, k in enumerate(keys_of)}
            first, second, omission, link_a, link_b = (index[k] for k in REVIEW_VERDICTS)
            # the queue's order: near misses (the hostile document's too, at 2), the omission, links
            assert (first, second, omission, link_a, link_b) == (0, 1, 3, 4, 5)
            # correct a gold value with the mouse, then the verdicts with keys
            await page.click(first, "edit")
            await page.js("var i = document.querySelector('#queue > li.current input[data-field=\"value\"]');"
                          "i.value = '201'; i.focus();")
            assert await page.js("document.activeElement.dataset.field") == "value"
            await page.key("Enter", code="Enter", vk=13)  # saves the correction
            await page.key("w")  # wrong -> next
            await page.key("r")  # right -> next
            await page.key("j")  # the hostile document's miss left alone
            await page.key("o")  # omission -> next
            await page.key("k")  # back to the omission ...
            current = await page.js("Array.from(document.querySelectorAll('#queue > li')).findIndex("
                                    "function (li) { return li.classList.contains('current'); })")
            assert current == omission
            await page.key("ArrowDown", code="ArrowDown", vk=40)  # ... and forward
            await page.key("r")
            await page.click(link_b, "wrong")
            progress = await page.js("document.getElementById('progress').textContent")
            # a reload keeps every verdict and the correction. Chromium hands a page's localStorage
            # writes to its browser process asynchronously: a reload right after the last click
            # found the storage empty under load (1 run in ~12; the page had saved it), so the
            # page is reloaded until the state arrives, for at most 10 s: a person never reloads
            # within milliseconds of a click
            end = time.monotonic() + 10
            while True:
                await page.open()
                after = await page.js("document.getElementById('progress').textContent")
                if after == progress or time.monotonic() > end:
                    break
                await asyncio.sleep(0.1)
            corrected = await page.js("document.querySelectorAll('#queue > li')[0].querySelector('.fixed').textContent")
            hostile = await page.js(
                "[document.title, document.querySelectorAll('#queue img').length + Array.from("
                "document.querySelectorAll('#queue b')).filter(function (b) { return b.textContent === 'bold'; })"
                ".length, document.getElementById('queue').textContent.indexOf(" + json.dumps(HOSTILE) + ")]")
            await page.js("document.getElementById('export').click()")
            end = time.monotonic() + 20
            while not (downloads / "review.jsonl").exists() and time.monotonic() < end:
                await asyncio.sleep(0.1)
            return progress, after, corrected, hostile


def test_review_with_clicks_and_keys_reload_and_export(tmp_path):
    docs = [*REVIEW_DOCS, {"doc_id": "hostile <doc>", "gold_facts": [fact("h1", "ceo", name=HOSTILE)],
                           "predicted_facts": [fact("h2", "ceo", name="Nobody")]}]
    data = write_jsonl(tmp_path / "data.jsonl", docs)
    out = tmp_path / "out"
    assert run_cli("eval", data, "-o", out).returncode == 0
    embedded = review_data(out)
    keys_of = [(i["doc_id"], i["kind"], i["gold"] and i["gold"]["id"], i["predicted"] and i["predicted"]["id"])
               for i in embedded["items"]]
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    proc, port, _ = launch(Path(tempfile.mkdtemp(dir=tmp_path)))
    try:
        progress, after, corrected, hostile = asyncio.run(
            drive(port, (out / "review.html").as_uri(), downloads, keys_of))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    total = len(embedded["items"])
    assert progress == after == f"reviewed 5 of {total}: right 2, wrong 2, omission 1; gold corrections 1"
    assert corrected == ' (corrected; was 200)'
    title, injected, at = hostile
    assert title == "factjudge review" and injected == 0 and at >= 0  # shown as text, nothing run
    exported = read_lines(downloads / "review.jsonl")
    assert exported == export_lines(embedded, REVIEW_VERDICTS)
    # and the CLI takes it as it came out of the browser
    proc = run_cli("review", "apply", out, downloads / "review.jsonl", "-o", tmp_path / "corrected.jsonl")
    assert proc.returncode == 0, proc.stderr
    assert "on 5 reviewed facts" in proc.stdout
