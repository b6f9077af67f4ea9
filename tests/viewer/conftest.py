"""The viewer as a user meets it: the real `scoreboard view` command serving a real store,
and Debian's headless Chromium through Playwright (never a downloaded browser)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path


from tests.conftest import BROWSER_ARGS, CHROMIUM  # noqa: F401  (the browser the viewer's tests use)


def scoreboard(*args: str, cwd: Path, env: dict | None = None, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, check=False)


class Served:
    """`scoreboard view` started as a process; `url` is the one it printed."""

    def __init__(self, *args: str, cwd: Path, env: dict | None = None):
        self.proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "view", "--port", "0", *args], cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        line = self.proc.stdout.readline()
        match = re.search(r"(http://\S+)", line)
        if not match:
            self.proc.kill()
            raise AssertionError(f"no URL printed: {line!r} {self.proc.stderr.read()}")
        self.url = match.group(1)
        self.base = self.url.split("?")[0].rstrip("/")

    def get(self, path: str) -> tuple[int, dict]:
        """GET `path` (with its query) from the viewer: the status and the JSON answer, an error's too."""
        import http.client
        import json
        import urllib.parse

        parsed = urllib.parse.urlsplit(self.base)
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        finally:
            conn.close()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()



def wait_ready(page, timeout: float = 30_000) -> None:
    """Until the page has rendered the route in the address bar: a click on a link changes the
    hash, and the hashchange event that starts the new page's render comes a moment later, so
    `data-ready` alone can still be the previous page's."""
    shown = page.evaluate("location.hash")  # (the page's CSP forbids wait_for_function's eval)
    page.wait_for_selector(f"html[data-ready=true][data-route={json.dumps(shown)}]", timeout=timeout)


def settle(seconds: float = 0.05) -> None:
    time.sleep(seconds)
