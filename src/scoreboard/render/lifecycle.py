"""One Playwright driver and one Chromium, started together and, when a page spoils them, killed
together (visual work, issue 17).

A page can flood the driver with events no script can stop (a loop on `location.hash = ...`:
each assignment is a navigation the driver reports): the flood outlives the page's deadline,
closing its context waits behind it, and every later page timed out too. So a page that times
out (or whose context will not close) retires the browser it ran in: the driver and Chromium
are killed at once (never waited on), and the next page starts a fresh pair. Each page rendered
at once has a browser of its own, so a hostile page costs only its own attempt.
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any, Callable

from ..errors import ConfigError

#: how often the renderers' memory is measured (real seconds)
MEMORY_EVERY_S = 0.25
#: how long a browser that is let go may take to close before it is killed (real seconds)
CLOSE_S = 5


class Instance:
    """A driver and its Chromium; `retired` once a page spoiled it (no new page goes to it)."""

    def __init__(self) -> None:
        self.manager: Any = None
        self.pw: Any = None
        self.browser: Any = None
        #: Chromium's browser process: the leader of its own process group (renderers included)
        self.pid: int | None = None
        self.retired = False
        self.watch: asyncio.Task | None = None

    async def start(self, executable: str | None, args: list[str], hint: str,
                    on_memory_kill: Callable[[], None], max_memory_mb: int) -> None:
        """Start the driver and launch Chromium; ConfigError with the install hint when it cannot be."""
        try:
            from playwright.async_api import async_playwright
        except ImportError:
            raise ConfigError(hint, field="render") from None
        self.manager = async_playwright()
        self.pw = await self.manager.start()
        try:
            self.browser = await self.pw.chromium.launch(executable_path=executable, headless=True, args=args)
        except Exception as exc:  # noqa: BLE001 - any launch failure is the same hint
            await self.pw.stop()
            self.pw = None
            raise ConfigError(f"{hint}; launching Chromium failed: {str(exc).splitlines()[0]}",
                              field="render") from None
        try:
            session = await self.browser.new_browser_cdp_session()
            info = await session.send("SystemInfo.getProcessInfo")
            self.pid = next((int(p["id"]) for p in info.get("processInfo") or () if p.get("type") == "browser"),
                            None)
        except Exception:  # noqa: BLE001 - unknown: the driver is still killed on retiring
            session = None
        if session is not None and os.path.isdir("/proc/self"):
            self.watch = asyncio.ensure_future(_watch_memory(session, max_memory_mb, on_memory_kill))

    def kill(self) -> None:
        """Kill Chromium (its whole process group) and the driver now, reading nothing more from
        it: whatever it had queued is dropped, and calls in flight on it fail."""
        self.retired = True
        if self.watch is not None:
            self.watch.cancel()
        if self.pid is not None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass
        transport = getattr(getattr(self.manager, "_client", None), "_transport", None)
        proc = getattr(transport, "_proc", None)
        if transport is not None:
            transport._stopped = True  # the reader stops at its next message
        if proc is not None and proc.returncode is None:
            try:
                proc.kill()
            except (OSError, ProcessLookupError):
                pass

    async def close(self) -> None:
        """Close Chromium and the driver, bounded: past CLOSE_S both are killed."""
        if self.watch is not None:
            self.watch.cancel()
            await asyncio.gather(self.watch, return_exceptions=True)
            self.watch = None
        try:
            async with asyncio.timeout(CLOSE_S):
                if self.browser is not None and not self.retired:
                    await self.browser.close()
                if self.pw is not None:
                    await self.pw.stop()
        except Exception:  # noqa: BLE001 - a browser that will not close is killed
            self.kill()
        self.browser = self.pw = None


async def _watch_memory(session, max_memory_mb: int, on_kill: Callable[[], None]) -> None:
    """Stop any renderer process whose resident memory passes max_memory_mb: a page that
    allocates without end crashes (recorded) instead of exhausting the machine."""
    cap = max_memory_mb * 1024 * 1024
    try:
        while True:
            await asyncio.sleep(MEMORY_EVERY_S)
            info = await session.send("SystemInfo.getProcessInfo")
            for proc in info.get("processInfo") or ():
                if proc.get("type") == "renderer" and _resident(proc.get("id")) > cap:
                    try:
                        os.kill(int(proc["id"]), 9)
                        on_kill()
                    except (OSError, ValueError):
                        pass
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - the browser went away: nothing left to watch
        return


def _resident(pid) -> int:
    """Resident memory of a process in bytes (0 when it cannot be read)."""
    try:
        with open(f"/proc/{int(pid)}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, TypeError):
        return 0
