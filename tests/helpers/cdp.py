"""Debian's chromium, headless, driven over the Chrome DevTools Protocol.

Raw CDP over the ``websockets`` package the stack already installs (uvicorn's), not
selenium: the tests need to open a page, click, read the DOM, watch for dialogs and
take a screenshot, a few protocol calls each, and selenium would add itself, its
driver and half a dozen packages to the test install for that."""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


class Page:
    """One tab: every call waits for its answer; events seen meanwhile are kept."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.events: list[dict] = []
        self._ids = itertools.count(1)

    def call(self, method: str, **params: Any) -> dict:
        number = next(self._ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=60))
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 60) -> dict:
        for seen in self.events:
            if seen.get("method") == event:
                self.events.remove(seen)
                return seen
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("method") == event:
                return message
            self.events.append(message)

    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def click(self, selector: str) -> None:
        """Click the first element ``selector`` finds and wait for the page it opens."""
        self.events.clear()
        assert self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                             " if (!e) return false; e.click(); return true; })()"), selector
        self.wait_for("Page.loadEventFired")

    def screenshot(self, path: Path, width: int = 1200, height: int = 800) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)
        shot = self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))

    @property
    def dialogs(self) -> list[dict]:
        return [event for event in self.events if event.get("method") == "Page.javascriptDialogOpening"]


@contextmanager
def chromium(profile: Path, *extra: str):
    """A headless chromium with its own profile in ``profile`` (and ``extra`` switches), and its first tab."""
    from websockets.sync.client import connect

    arguments = [CHROMIUM, "--headless=new", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                 "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1200,800",
                 *extra, "about:blank"]
    if os.geteuid() == 0:  # chromium's sandbox refuses to run as root (a CI container)
        arguments.insert(1, "--no-sandbox")
    process = subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            assert process.poll() is None, "chromium exited at start"
            assert time.monotonic() < deadline, "chromium opened no DevTools port"
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as answer:
            tab = next(t for t in json.load(answer) if t["type"] == "page")
        with connect(tab["webSocketDebuggerUrl"], max_size=None, open_timeout=60) as socket:
            page = Page(socket)
            page.call("Page.enable")
            yield page
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the group chromium's own helpers run in
        process.wait(timeout=30)
