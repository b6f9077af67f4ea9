"""`scoreboard view`: a local web app over a history store (aiohttp).

The page is static and bundled (viewer/static: one HTML shell, one script, one stylesheet;
nothing from a CDN); it asks this server for JSON a page at a time and draws what it gets. Every
figure comes from stats/ through viewer/figures.py. Security: 127.0.0.1 by default, with the
Host header checked (no DNS rebinding); any other address needs a token, checked on every
request; a strict Content-Security-Policy (no inline script or style, nothing from elsewhere);
review writes carry a per-session CSRF token; every user string is rendered by the page as text,
its control and direction characters spelt as escapes (record/templates/unseen.js, which the HTML
report inlines too).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from aiohttp import web

from ..errors import ConfigError
from ..jsonio import dumps_line
from ..judges.reviews import DIMENSIONS as REVIEW_DIMENSIONS
from ..record.schema import AttemptStatus
from ..stats.comparison import SMALL_CASES
from ..stats.methods import METHODS
from ..store.db import StoreLost
from ..store.history import HistoryStore
from ..store.queries import (
    OUTCOMES,
    RunFilter,
    attempt_page,
    case_detail,
    case_history,
    case_page,
    check_status,
    check_time,
    MAX_LIMIT,
    get_run,
    list_runs,
    run_brief,
    run_exists,
    suites,
)
from ..store.filters import check_commit, check_window
from ..store.gates import run_gates
from .figures import compare_runs
from .trend import trend
from .guards import _holds_nul, _host_ok, _same_origin
from .params import ParamError, case_sort, known_category, known_variant, page_limit, position_cursor, repeated, runs_cursor
from .reviews import ReviewError, review_from_form
from .shots import add_routes as add_shot_routes

ATTEMPT_STATUSES = get_args(AttemptStatus)
STATIC = Path(__file__).parent / "static"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
ASSETS = {"app.js": "text/javascript", "app.css": "text/css", "unseen.js": "text/javascript"}
#: the one script that spells control and direction characters, shared with the HTML report
SHARED = {"unseen.js": Path(__file__).parents[1] / "record" / "templates" / "unseen.js"}
#: the review record holds these ratings and no other (judges.reviews.Ratings): a dimension the
#: form offered beyond them made a review the store and `import reviews` refuse
DEFAULT_DIMENSIONS = REVIEW_DIMENSIONS
TOKEN_COOKIE = "scoreboard_token"


@dataclass
class Settings:
    """How the viewer serves: address, token (required off loopback), review dimensions."""

    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    dimensions: tuple[str, ...] = DEFAULT_DIMENSIONS
    reviewer: str = "reviewer"
    rubric_version: str = "v1"
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_settings(settings: Settings) -> None:
    if not 0 <= settings.port <= 65535:  # bind() would raise OverflowError: an internal error, exit 2
        raise ConfigError(f"must be a port from 0 to 65535 (0 picks a free one), got {settings.port}", field="port")
    if not is_loopback(settings.host) and not settings.token:
        raise ConfigError(f"binding {settings.host} (not loopback) needs a token: set one with --token-env VAR",
                          field="host")
    unknown = [d for d in settings.dimensions if d not in REVIEW_DIMENSIONS]
    if unknown:
        raise ConfigError(f"--dimension {unknown[0]}: a review rates only {', '.join(REVIEW_DIMENSIONS)} "
                          "(the record `import reviews` reads)", field="dimension")


def json_response(value: Any, status: int = 200) -> web.Response:
    return web.Response(body=dumps_line(value), status=status, content_type="application/json")


#: the longest request line served (the path and query of one request, percent-encoded)
REQUEST_LINE = 256 * 1024


def _error(status: int, message: str) -> web.Response:
    return json_response({"error": message}, status)


class Viewer:
    """The app's handlers over one store."""

    def __init__(self, store: HistoryStore, settings: Settings):
        self.store, self.settings = store, settings
        self.db = store.db
        # one database connection: queries take turns (SQLite and psycopg connections are not
        # shared between threads at once)
        self.lock = asyncio.Lock()

    async def call(self, fn, *args, **kwargs):
        async with self.lock:
            return await asyncio.to_thread(fn, *args, **kwargs)

    # ---- middleware: token, host, headers
    @web.middleware
    async def guard(self, request: web.Request, handler):
        s = self.settings
        if s.token is None and not _host_ok(request.host):
            return web.Response(status=421, text="unexpected Host header")
        if s.token is not None:
            given = request.query.get("token")
            if request.path == "/" and given and hmac.compare_digest(given, s.token):
                response = web.HTTPFound("/")
                response.set_cookie(TOKEN_COOKIE, s.token, httponly=True, samesite="Strict")
                raise response
            offered = request.cookies.get(TOKEN_COOKIE) or request.headers.get("Authorization", "").removeprefix(
                "Bearer ")
            if not offered or not hmac.compare_digest(offered, s.token):
                return web.Response(status=401, text="a token is required (open the URL the viewer printed)")
        if request.method not in ("GET", "HEAD") and not _same_origin(request):
            # a write from a page of another origin (CSRF): refused even holding the token
            return _error(403, "a write from another origin (the Origin or Sec-Fetch-Site header) is refused")
        nul = _holds_nul(request)
        if nul is not None:  # PostgreSQL refuses one in text (a bare 500) and SQLite cut a LIKE pattern at it
            return _error(400, f"{nul}: holds a NUL character, which no stored name or id holds")
        try:
            repeated(request.query)  # `limit=1&limit=abc`: named, not the first read and the rest dropped
            response = await handler(request)
        except web.HTTPException as exc:
            response = exc
        except ParamError as exc:  # a paging parameter it cannot read: named, never ignored
            response = _error(400, str(exc))
        except StoreLost as exc:  # the database server went away: a retry later may work (503), said
            response = _error(503, str(exc))
            response.headers["Retry-After"] = "5"
        except ConfigError as exc:  # a store that fails to be read (a damaged file): said, not a bare 500
            response = _error(500, str(exc))
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Cache-Control"] = "no-store"
        return response

    # ---- pages
    async def index(self, request: web.Request) -> web.Response:
        return web.Response(body=(STATIC / "index.html").read_bytes(), content_type="text/html", charset="utf-8")

    async def asset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in ASSETS:
            raise web.HTTPNotFound()
        return web.Response(body=SHARED.get(name, STATIC / name).read_bytes(), content_type=ASSETS[name],
                            charset="utf-8")

    # ---- data
    async def meta(self, request: web.Request) -> web.Response:
        s = self.settings
        listed = await self.call(suites, self.db)
        return json_response({"store": self.store.location, "kind": self.store.name, "csrf": s.csrf,
                              "dimensions": list(s.dimensions), "reviewer": s.reviewer,
                              "rubric_version": s.rubric_version, "suites": listed,
                              "methods": dict(METHODS),  # each interval's method in words
                              "small_sample": SMALL_CASES})  # under it, a count is said to be small

    async def runs(self, request: web.Request) -> web.Response:
        q = request.query
        f = RunFilter(**{k: (q.get(k) or None) for k in ("suite", "variant", "status", "since", "until", "tag",
                                                          "commit", "search")})
        try:  # a status or date it cannot read is an error, as in `scoreboard history`, not an empty list
            f.status = check_status(f.status, "status")
            f.since, f.until = check_time(f.since, "since"), check_time(f.until, "until")
            check_window(f.since, f.until, ("since", "until"))
            f.commit = check_commit(f.commit, "commit")
        except ConfigError as exc:
            return _error(400, f"{exc.flag}: {exc.detail}")
        limit, cursor = page_limit(q.get("limit")), runs_cursor(q.get("cursor"))  # ParamError: a 400
        page, nxt = await self.call(self._runs, f, limit, cursor)
        return json_response({"runs": page, "next": nxt, "limit": limit, "max_limit": MAX_LIMIT})

    def _runs(self, f: RunFilter, limit: int, cursor) -> tuple[list[dict], str | None]:
        """A page of runs, each with its gates (a failed one is no "completed" pass), as `history --json`."""
        page, nxt = list_runs(self.db, f, limit=limit, cursor=cursor)
        gates = run_gates(self.db, [r["key"] for r in page])
        return [{**r, "gates": gates.get(r["key"], [])} for r in page], nxt

    async def run(self, request: web.Request) -> web.Response:
        found = await self.call(get_run, self.db, request.match_info["key"])
        if found is None:
            return _error(404, "no such run")
        found["report_state"] = report_state(found)
        return json_response(found)

    async def cases(self, request: web.Request) -> web.Response:
        q = request.query
        key = request.match_info["key"]
        if q.get("outcome") and q["outcome"] not in OUTCOMES:  # a typo is an error, not every case unfiltered
            return _error(400, f"outcome: unknown outcome {q['outcome'][:80]!r} (known: {', '.join(OUTCOMES)})")
        limit, cursor = page_limit(q.get("limit")), position_cursor(q.get("cursor"))  # ParamError: a 400
        found = await self.call(self._page, key, case_page, variant=q.get("variant") or None,
                                outcome=q.get("outcome") or None, search=q.get("search") or None,
                                category=q.get("category") or None, cursor=cursor, limit=limit,
                                sort=case_sort(q.get("sort")))  # ParamError: a 400 naming `sort`
        if found is None:
            return _error(404, "no such run")
        return json_response({"cases": found[0], "next": found[1], "limit": limit, "max_limit": MAX_LIMIT})

    async def attempts(self, request: web.Request) -> web.Response:
        q = request.query
        if q.get("status") and q["status"] not in ATTEMPT_STATUSES:  # a typo is an error, not an empty page
            return _error(400, f"status: unknown attempt status {q['status'][:80]!r} (known: "
                               f"{', '.join(ATTEMPT_STATUSES)})")
        limit, cursor = page_limit(q.get("limit")), position_cursor(q.get("cursor"))  # ParamError: a 400
        found = await self.call(self._page, request.match_info["key"], attempt_page, status=q.get("status") or None,
                                cursor=cursor, limit=limit)
        if found is None:
            return _error(404, "no such run")
        return json_response({"attempts": found[0], "next": found[1], "limit": limit, "max_limit": MAX_LIMIT})

    def _page(self, key: str, query, **kwargs):
        """A page of a run's rows; None when the store holds no such run (an empty page is a run's)."""
        if not run_exists(self.db, key):
            return None
        known_variant(self.db, key, kwargs.get("variant"))
        known_category(self.db, key, kwargs.get("category"))
        return query(self.db, key, **kwargs)

    async def case(self, request: web.Request) -> web.Response:
        # /api/runs/{key}/case?id=...: the page's form, since a browser resolves a path segment
        # "." or ".." (and "%2e%2e") before it sends it, so such a case id cannot be a segment
        key, case_id = request.match_info["key"], request.match_info.get("case_id", request.query.get("id"))
        if case_id is None:
            return _error(400, "name a case: ?id=CASE_ID")
        found = await self.call(self._case, key, case_id, request.query.get("with") or None)
        if found is None:
            return _error(404, "no such case in this run")
        return json_response(found)

    def _case(self, key: str, case_id: str, other: str | None) -> dict | None:
        detail = case_detail(self.db, key, case_id)
        if detail is None:
            return None
        # (the runs' own rows only: a summary, a million entries for a million-case run, is not read)
        run = detail["run"] = run_brief(self.db, key)
        if other:
            more = case_detail(self.db, other, case_id)
            other_run = run_brief(self.db, other)
            if other_run is None:  # a run to compare with that is not there: said, not left out in silence
                raise ParamError(f"with: no run {other[:80]!r} in this store")
            if more is not None and other_run is not None:
                detail["other"] = {"run": other_run, "case": more["case"], "attempts": more["attempts"],
                                   "same_input": more["case"].get("input_hash") == detail["case"].get("input_hash")}
        hashes = {a["output_hash"] for a in detail["attempts"] if a.get("output_hash")}
        detail["reviews"] = [e for e in self.store.case_reviews(case_id) if e["output_hash"] in hashes]
        detail["history"] = case_history(self.db, run["suite"], case_id, detail["case"].get("input_hash"))
        return detail

    async def trends(self, request: web.Request) -> web.Response:
        suite = request.query.get("suite")
        if not suite:
            return _error(400, "name a suite")
        limit = page_limit(request.query.get("limit"), 60)
        before = runs_cursor(request.query.get("before"), "before")  # ParamError: a 400 naming `before`
        found = await self.call(self._trend, suite, limit, before)
        if found is None:
            return _error(404, "no such suite in this store")
        return json_response({**found, "limit": limit, "max_limit": MAX_LIMIT})

    def _trend(self, suite: str, limit: int, before: str | None = None) -> dict | None:
        if self.db.one("SELECT 1 FROM runs WHERE suite = ? LIMIT 1", (suite,)) is None:
            return None
        return trend(self.db, suite, limit, before)

    async def compare(self, request: web.Request) -> web.Response:
        a, b = request.query.get("a"), request.query.get("b")
        if not a or not b:
            return _error(400, "name two runs (a and b)")
        try:
            return json_response(await self.call(compare_runs, self.db, a, b))
        except KeyError:
            return _error(404, "no such run")

    async def add_review(self, request: web.Request) -> web.Response:
        if not hmac.compare_digest(request.headers.get("X-CSRF-Token", ""), self.settings.csrf):
            return _error(403, "missing or wrong CSRF token (reload the page)")
        if request.content_type != "application/json":
            return _error(415, "send JSON")
        if (request.content_length or 0) > 256 * 1024:
            return _error(413, "review too large")
        try:
            form = await request.json()
            entry, key = await self.call(review_from_form, self.db, form, self.settings.dimensions)
        except ReviewError as exc:  # a ValueError too: caught first, or it read "not JSON: notes: required"
            return _error(400, str(exc))
        except ValueError as exc:
            return _error(400, f"not JSON: {exc}")
        try:
            await self.call(self.store.add_reviews, [entry], key)
        except ConfigError as exc:  # a store that may only be read here
            return _error(409, exc.detail)
        return json_response({"stored": entry})

    async def export_reviews(self, request: web.Request) -> web.Response:
        run, kind = request.query.get("run") or None, request.query.get("kind") or None
        if kind is not None and kind not in ("human", "model"):
            return _error(400, f"kind: unknown reviewer kind {kind[:80]!r} (known: human, model)")
        if run is not None and not await self.call(run_exists, self.db, run):  # not an empty file for a typo
            return _error(404, "no such run")
        entries = await self.call(self.store.reviews, run=run, kind=kind)
        response = json_response({"version": "scoreboard-viewer", "entries": entries})
        response.headers["Content-Disposition"] = 'attachment; filename="reviews.json"'
        return response


def report_state(run: dict) -> str | None:
    """Whether the report the store names is still where it was written: "present", "missing" or
    "changed" (not the size stored); None where this cannot be told here (no report, or a run
    recorded on another machine)."""
    from ..store.liveness import this_host

    path, host = run.get("report_path"), run.get("host")
    if not path or not isinstance(path, str) or (host and host != this_host()):
        return None
    try:
        size = Path(path).stat().st_size
    except (OSError, ValueError):  # ValueError: a NUL in a hand-edited row's path, which no file has
        return "missing"
    return "changed" if run.get("report_bytes") not in (None, size) else "present"


def make_app(store: HistoryStore, settings: Settings) -> web.Application:
    """The aiohttp application over a store."""
    check_settings(settings)
    viewer = Viewer(store, settings)
    app = web.Application(middlewares=[viewer.guard], client_max_size=512 * 1024)
    app.router.add_get("/", viewer.index)
    app.router.add_get("/static/{name}", viewer.asset)
    app.router.add_get("/api/meta", viewer.meta)
    app.router.add_get("/api/runs", viewer.runs)
    app.router.add_get("/api/runs/{key}", viewer.run)
    app.router.add_get("/api/runs/{key}/cases", viewer.cases)
    app.router.add_get("/api/runs/{key}/attempts", viewer.attempts)
    app.router.add_get("/api/runs/{key}/cases/{case_id}", viewer.case)
    app.router.add_get("/api/runs/{key}/case", viewer.case)
    add_shot_routes(app, viewer)  # a visual run's screenshots (viewer/shots.py)
    app.router.add_get("/api/trends", viewer.trends)
    app.router.add_get("/api/compare", viewer.compare)
    app.router.add_post("/api/reviews", viewer.add_review)
    app.router.add_get("/api/reviews/export", viewer.export_reviews)
    app["viewer"] = viewer
    return app


async def serve(store: HistoryStore, settings: Settings, ready=None) -> None:
    """Serve until cancelled; `ready(url)` is called once the socket listens."""
    # a request line up to REQUEST_LINE bytes: a case id of 1,000 CJK characters is 9,000 bytes
    # percent-encoded, past aiohttp's default 8,190 (a 400 before the app saw it)
    runner = web.AppRunner(make_app(store, settings), access_log=None, max_line_size=REQUEST_LINE)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    await site.start()
    port = runner.addresses[0][1]  # the port the OS chose when asked for 0
    shown = f"[{settings.host}]" if ":" in settings.host else settings.host
    url = f"http://{shown}:{port}/"
    if settings.token:
        url += "?token=" + settings.token
    if ready is not None:
        ready(url)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
