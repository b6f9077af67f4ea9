"""Outputs rendered to PNG in headless Chromium through Playwright, with deterministic settings.

Every page gets the same viewport and device scale factor, reduced motion, animations and
transitions finished before each shot, a paused page clock set to a fixed time (timers run only
when the renderer advances it), and a seeded Math.random / crypto.getRandomValues injected
before any page script. The page is served from an origin of its own (`http://output.invalid/`):
only the output's own files answer there; every other request (any host, any IP, WebSockets)
is blocked and counted, and DNS resolves nothing. The settle rule: the network goes idle (or
`network_idle_ms` passes), then the page clock runs `settle_ms`; with `moments_ms` a shot is
taken at each moment instead. Console errors, uncaught exceptions, a crash, blocked requests
and a blank page are measurements in the attempt's render record, never raised.

Playwright is imported only when a suite renders; a missing one is a one-line install hint.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .detect import PageSource, page_source
from .lifecycle import Instance
from .loading import loaded, timed_out
from .page import index_refused, served_file
from .pixels import is_blank
from .scripts import (HISTORY_SCRIPT, NAVIGATION_SCRIPT, POPUP_SCRIPT, REFUSALS, SEED_SCRIPT,
                      SIZE_SCRIPT, SMIL_SCRIPT, TEXT_SCRIPT)
from .settings import RenderSettings, full_page_clip
from .shared import SharedRenders
from .store import ShotStore

ORIGIN = "http://output.invalid/"
INSTALL_HINT = ("rendering outputs needs Playwright and a Chromium: pip install 'scoreboard[render]' "
                "(then Debian's `apt-get install chromium`, or `playwright install chromium`)")
DEFAULT_CHROMIUM = "/usr/bin/chromium"
#: how many console errors, page errors and blocked URLs a record lists (all are counted)
LISTED = 20
MAX_MESSAGE = 500
#: console messages (of any type) read from one page; past them the page floods its console, the
#: rest are not read (each one costs the driver a message: an endless printer outran the deadline)
CONSOLE_READ = 1000
#: the console_errors entry of a page that printed past CONSOLE_READ
CONSOLE_FLOOD = f"console flooded: more than {CONSOLE_READ} messages, the rest were not read"
#: how long closing a page's context may take after its render ended (real seconds)
CLOSE_S = 10
#: the most bytes one page's own files may be served, all requests together, in max_file_bytes
#: (40 references to one 15 MB file held 936 MB in this process and the run for minutes)
SERVED_FILES = 4


def chromium_path(settings: RenderSettings) -> str | None:
    """The Chromium to launch: the setting, $SCOREBOARD_CHROMIUM, Debian's, else Playwright's own."""
    chosen = settings.browser or os.environ.get("SCOREBOARD_CHROMIUM")
    if chosen:
        return chosen
    return DEFAULT_CHROMIUM if os.path.exists(DEFAULT_CHROMIUM) else None


def check_available(settings: RenderSettings) -> None:
    """Fail before a run starts when Playwright or the named Chromium is missing (install hint)."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        raise ConfigError(INSTALL_HINT, field="render")
    chosen = chromium_path(settings)
    if chosen is not None and not os.path.exists(chosen):
        raise ConfigError(f"{INSTALL_HINT}; no Chromium at {chosen}", field="render.browser")


def launch_args() -> list[str]:
    args = ["--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--mute-audio", "--hide-scrollbars",
            "--force-color-profile=srgb", "--disable-extensions",
            # WebRTC sends no UDP (a STUN server on 127.0.0.1 got packets with the --force- form)
            "--webrtc-ip-handling-policy=disable_non_proxied_udp",
            # No name resolves: nothing a page names can be looked up, let alone reached.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            # A secure context, as a page opened from a file or served over https is: on a plain
            # http origin crypto.randomUUID, crypto.subtle and the like do not exist, and a page
            # that calls them broke (an uncaught exception, its content never drawn).
            f"--unsafely-treat-insecure-origin-as-secure={ORIGIN.rstrip('/')}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses its sandbox as root
    return args


class Renderer:
    """A browser per page rendered at once (`concurrency`), each started when first needed and
    started afresh after a page spoiled it (lifecycle.py): a page never shares its browser, so a
    hostile one costs only its own attempt. `render(text)` returns the attempt's render record."""

    def __init__(self, settings: RenderSettings, store: ShotStore, roots: tuple = ()):
        self.settings, self.store = settings, store
        #: the folders a folder output must lie in to be served (the suite's root); none: no
        #: folder output is rendered
        self.roots = tuple(Path(os.path.realpath(r)) for r in roots)
        #: the browsers not in use (None: one to start when needed)
        self._free: list[Instance | None] = [None] * settings.concurrency
        self._live: set[Instance] = set()  # every browser started and not yet closed or killed
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._lock = asyncio.Lock()
        #: renderer processes stopped for using more than max_memory_mb
        self.memory_kills = 0
        #: browsers killed because a page timed out or would not close in them
        self.restarts = 0
        self.pages = SharedRenders()

    async def start(self) -> None:
        """Launch one browser now (the run checks it can before its first attempt); ConfigError
        with the install hint when it cannot be."""
        async with self._lock:
            if not any(self._free):
                self._free[0] = await self._launch()

    async def _launch(self) -> Instance:
        instance = Instance()
        await instance.start(chromium_path(self.settings), launch_args(), INSTALL_HINT,
                             self._memory_kill, self.settings.max_memory_mb)
        self._live.add(instance)
        return instance

    def _memory_kill(self) -> None:
        self.memory_kills += 1

    async def aclose(self) -> None:
        """Close every browser, those still rendering included (a cancelled run)."""
        live, self._live = self._live, set()
        self._free = [None] * self.settings.concurrency
        for instance in live:
            await instance.close()

    async def render(self, text: str | None) -> dict:
        """The render record of one output (shots stored by hash); failures are recorded."""
        settings = self.settings
        # off the event loop: Markdown is converted in Python (bounded by MAX_MARKDOWN_CHARS)
        source, why = await asyncio.to_thread(page_source, text, settings.kinds, self.roots)
        record = _empty(source, settings, why)
        if source is None:
            return record
        if source.html is not None:
            size = len(source.html.encode("utf-8", "surrogatepass"))
            if size > settings.max_file_bytes:
                record["error"] = (f"the page is {size} bytes, over render.max_file_bytes "
                                   f"({settings.max_file_bytes}): not rendered")
                return record
        if source.folder is None:  # a page from the text alone: rendered once a run (shared.py)
            return await self.pages.once(source, record, self._in_browser)
        # its index.html refused: not rendered (never our 404 page shot)
        record["error"] = await asyncio.to_thread(index_refused, source.folder, settings.max_file_bytes)
        return record if record["error"] else await self._in_browser(source, record)

    async def _in_browser(self, source: PageSource, record: dict) -> dict:
        async with self._slots:  # a browser of its own: a free one, else one launched for it
            instance = next((i for i in self._free if i is not None), None)
            self._free.remove(instance)  # (a slot per permit: there is always one to take)
            try:
                if instance is None:
                    instance = await self._launch()
                if await self._attempt(instance, source, record):
                    self.restarts += 1  # spoiled: killed now, never waited on; the next page starts afresh
                    instance.kill()
                    self._live.discard(instance)
            finally:
                self._free.append(None if instance is None or instance.retired else instance)
        return record

    async def _attempt(self, instance: Instance, source: PageSource, record: dict) -> bool:
        """Render once in `instance`; True when the page spoiled it (timed out, or its context
        would not close): the caller kills that browser."""
        settings = self.settings
        kills = self.memory_kills
        # What the page's own origin has served; once the render ends it serves nothing more.
        served = {"bytes": 0, "open": True, "refused": 0, "documents": 0}
        spoiled = False
        try:
            async with asyncio.timeout(settings.timeout_ms / 1000):
                spoiled = not await self._shoot(instance.browser, source, record, served)
        except TimeoutError:
            record["error"] = timed_out(settings.timeout_ms, served["documents"])
            spoiled = True
        except Exception as exc:  # noqa: BLE001 - a page that breaks the browser is a measurement too
            record["error"] = f"render failed: {type(exc).__name__}: {str(exc).splitlines()[0][:MAX_MESSAGE]}"
        finally:
            served["open"] = False
        if served["refused"] and not record["error"]:
            record["error"] = (f"the page asked for more than {SERVED_FILES * settings.max_file_bytes} bytes of "
                               f"its own files ({SERVED_FILES} x render.max_file_bytes): {served['refused']} "
                               "request(s) refused")
        if record["crashed"] and self.memory_kills > kills:
            record["error"] = (f"the page used more than render.max_memory_mb ({settings.max_memory_mb} MB) "
                               f"of memory: its renderer was stopped")
        return spoiled

    async def _shoot(self, browser, source: PageSource, record: dict, served: dict) -> bool:
        """Render the page in a context of its own; False when that context would not close."""
        s = self.settings
        context = await browser.new_context(
            viewport={"width": s.width, "height": s.height}, device_scale_factor=s.device_scale_factor,
            reduced_motion="reduce", color_scheme="light", locale="en-US", timezone_id="UTC",
            service_workers="block", accept_downloads=False)
        try:
            await context.add_init_script(SEED_SCRIPT % s.seed)
            await context.add_init_script(HISTORY_SCRIPT)
            for script in (POPUP_SCRIPT, NAVIGATION_SCRIPT):
                await context.add_init_script(script)
            start = s.start_time()
            # Paused at the start alone: an install before it ran the page clock for the real ms between
            # the calls (performance.now() and the frames drawn by each moment changed render to render)
            await context.clock.pause_at(start)
            await context.route("**/*", lambda route: self._answer(route, source, record, served))
            if hasattr(context, "route_web_socket"):
                await context.route_web_socket("**/*", lambda ws: self._block_socket(ws, record))
            page = await context.new_page()
            read = [0]

            def console(msg) -> None:
                read[0] += 1
                if read[0] > CONSOLE_READ:  # stop reading a page that prints without end
                    page.remove_listener("console", console)
                    listed = record["console_errors"]
                    listed[min(len(listed), LISTED - 1):] = [CONSOLE_FLOOD]  # always said, even when full
                    return
                _console(msg, record)

            page.on("console", console)
            page.on("pageerror", lambda exc: _listed(record, "page_errors", str(exc)))
            page.on("crash", lambda _page: record.__setitem__("crashed", True))
            # a download is refused (accept_downloads off): counted and listed, never silent
            page.on("download", lambda d: _refused(record, "download " + d.url[:300]))
            # Commit, then the document's own load event: a page that navigates away while loading
            # (to a blocked address, answered 204 so the page stays) left Playwright's load wait
            # hanging on a navigation that never ends.
            await page.goto(ORIGIN + "index.html", wait_until="commit")
            await loaded(page)
            try:
                await page.wait_for_load_state("networkidle", timeout=s.network_idle_ms or 1)
                record["network_idle"] = True
            except Exception:  # noqa: BLE001 - a page that keeps fetching is shot anyway, and says so
                record["network_idle"] = False
            now = 0
            for moment in s.moments():
                if moment > now:
                    await page.clock.run_for(moment - now)
                    now = moment
                await self._keep(page, record, moment, full_page=False)
            if s.full_page:
                await self._keep(page, record, now, full_page=True)
            text = await page.evaluate(TEXT_SCRIPT)
            text = text if isinstance(text, str) else ""
            record["text"] = text[:s.max_text_chars]
            record["text_truncated"] = len(text) > s.max_text_chars
        except BaseException:  # its deadline passed (or it broke): the caller decides; nothing waited on here
            closing = asyncio.ensure_future(context.close())  # (a flooded driver would hold the close)
            closing.add_done_callback(_quiet)
            raise
        try:  # bounded: a context that will not close spoils its browser (the caller kills it)
            await asyncio.wait_for(context.close(), CLOSE_S)
        except Exception:  # noqa: BLE001
            return False
        return True

    async def _keep(self, page, record: dict, moment: int, *, full_page: bool) -> None:
        clip = full_page_clip(await page.evaluate(SIZE_SCRIPT), self.settings.device_scale_factor) \
            if full_page else None
        await page.evaluate(SMIL_SCRIPT, moment / 1000)
        png = await page.screenshot(type="png", full_page=full_page, animations="disabled", caret="hide", clip=clip)
        digest, path = self.store.put(png)
        record["shots"].append({"moment_ms": moment, "full_page": full_page, "sha256": digest, "path": path,
                                "bytes": len(png)})
        if not full_page:
            record["blank"] = is_blank(png)  # the last viewport shot decides

    async def _answer(self, route, source: PageSource, record: dict, served: dict) -> None:
        url = route.request.url
        if not served["open"]:  # the render is over (its deadline passed): nothing more is served
            await route.abort("blockedbyclient")
            return
        if not url.startswith(ORIGIN):
            record["blocked_requests"] += 1
            _listed(record, "blocked", url[:300])
            if route.request.is_navigation_request():
                # 204 No Content: the frame keeps the output's page (an abort would put Chromium's
                # "is blocked" error page in the screenshot instead)
                await route.fulfill(status=204, body=b"")
            else:
                await route.abort("blockedbyclient")
            return
        path = url[len(ORIGIN):].split("?", 1)[0].split("#", 1)[0]
        if route.request.is_navigation_request() and route.request.frame.parent_frame is None:
            served["documents"] += 1  # the page's own document, and each one it moves to
        left = SERVED_FILES * self.settings.max_file_bytes - served["bytes"]
        from ..safefile import FileRefused

        try:
            body, ctype = served_file(source, path, self.settings.max_file_bytes) if left > 0 else (b"", "")
        except FileRefused as exc:  # one of its files the renderer will not serve: counted, and why
            record["blocked_requests"] += 1
            _listed(record, "blocked", f"{url[:300]} ({exc.reason.split(' (give --root')[0]})")
            await route.abort("blockedbyclient")
            return
        if body is None:
            await route.fulfill(status=404, body=b"not found", content_type="text/plain")
        elif left <= 0 or len(body) > left:
            body = None  # not held while the refusal is sent (40 of them held 15 MB each)
            served["refused"] += 1
            await route.abort("blockedbyclient")
        else:
            served["bytes"] += len(body)
            await route.fulfill(status=200, body=body, content_type=ctype)

    async def _block_socket(self, ws, record: dict) -> None:
        record["blocked_requests"] += 1
        _listed(record, "blocked", ws.url[:300])
        await ws.close(code=1008, reason="blocked by the renderer")


def _empty(source: PageSource | None, settings: RenderSettings, why: str | None) -> dict[str, Any]:
    """A render record before anything was measured."""
    return {"kind": source.kind if source else None, "settings": settings.fingerprint(),
            "shots": [], "console_errors": [], "page_errors": [], "crashed": False,
            "blocked_requests": 0, "blocked": [], "blank": None, "network_idle": None,
            "text": None, "text_truncated": False, "error": why}


def _quiet(task: asyncio.Future) -> None:
    """Read a background close's outcome, so that asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


def _refused(record: dict, text: str) -> None:
    record["blocked_requests"] += 1
    _listed(record, "blocked", text)


def _listed(record: dict, key: str, text: str) -> None:
    if len(record[key]) < LISTED:
        record[key].append(text[:MAX_MESSAGE])


def _console(msg, record: dict) -> None:
    if msg.type != "error":
        return
    text = msg.text
    if "ERR_BLOCKED_BY_CLIENT" in text:
        return  # a request the renderer blocked: counted under blocked_requests
    for said, listed in REFUSALS:  # a local load, popup or navigation refused (scripts.py): counted
        if text.startswith(said):
            record["blocked_requests"] += 1
            _listed(record, "blocked", listed + text[len(said):][:300])
            return
    _listed(record, "console_errors", text)


def settings_from(value: Any) -> RenderSettings:
    """RenderSettings from a suite's `render:` value (true = the defaults)."""
    if value is True or value is None:
        return RenderSettings()
    if isinstance(value, RenderSettings):
        return value
    return RenderSettings.model_validate(value)


def store_for(run_folder: Path) -> ShotStore:
    """The screenshot store of a run folder (`<run>/screenshots`, named from beside the report)."""
    from .store import SUBDIR

    return ShotStore(Path(run_folder) / SUBDIR, f"{Path(run_folder).name}/{SUBDIR}")


__all__ = ["RenderSettings", "Renderer", "ShotStore", "chromium_path", "settings_from", "store_for"]
