"""The viewer over real HTTP against the real `scoreboard view`, probed like a hostile client:
unknown ids are 404 and unreadable filters 400 (never a 500), nothing outside the app is
served, pages cover every row once, concurrent requests all get their answer, trends hold with
one and two runs, odd Unicode ids round-trip, and only loopback Host names are answered."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.store.test_store import N, make_suite

from .conftest import Served, scoreboard

ODD_IDS = ["c\u202e1-rtl", "emoji-\U0001F600\u200b", "x" * 3000, "\u96ea/..%2f", "a b?&id=c#frag"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("probe-view")
    store = str(folder / "h.sqlite")
    make_suite(folder / "hist", name="hist")
    for wrong in ({"one": {3, 5}, "two": {5}}, {"one": set(range(N)), "two": {5}}):  # run 2: `one` fails all
        make_suite(folder / "hist", name="hist", wrong=wrong)
        done = scoreboard("run", "suite.json", "--no-progress", "--store", store, cwd=folder / "hist")
        assert done.returncode in (0, 3), done.stderr
    make_suite(folder / "solo", name="solo")
    assert scoreboard("run", "suite.json", "--no-progress", "--store", store, cwd=folder / "solo").returncode in (0, 3)
    odd = folder / "odd"
    odd.mkdir()
    (odd / "cases.jsonl").write_text("".join(json.dumps({"id": c, "input": "q", "expected": "a", "grader": "exact"})
                                             + "\n" for c in ODD_IDS))
    (odd / "v.jsonl").write_text("".join(json.dumps({"case_id": c, "output": "a"}) + "\n" for c in ODD_IDS))
    (odd / "suite.json").write_text(json.dumps({"name": "odd", "cases": "cases.jsonl", "output_dir": "out",
                                                "formats": ["json"],
                                                "variants": {"v\u200d\u00e9": {"subject": "recorded:v.jsonl"}}}))
    assert scoreboard("run", "suite.json", "--no-progress", "--store", store, cwd=odd).returncode in (0, 3)
    server = Served("--store", store, cwd=folder)
    try:
        yield server
    finally:
        server.stop()


def get(served: Served, path: str, host: str | None = None) -> tuple[int, bytes]:
    """A GET of `path` exactly as written (no client normalises it)."""
    parsed = urllib.parse.urlsplit(served.base)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", parsed.netloc if host is None else host)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def data(served: Served, path: str):
    status, body = get(served, path)
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def keys(served: Served, suite: str) -> list[str]:
    """The suite's runs, oldest first."""
    return [r["key"] for r in data(served, f"/api/runs?suite={suite}")["runs"]][::-1]


def test_unknown_ids_are_404_and_unreadable_filters_400(served):
    real = keys(served, "hist")[0]
    for path in ("/api/runs/nokey", "/api/runs/nokey/cases", "/api/runs/nokey/attempts",
                 "/api/runs/nokey/cases/c01", "/api/runs/nokey/case?id=c01", f"/api/runs/{real}/case?id=nope",
                 f"/api/runs/{real}/cases/nope", "/api/compare?a=nokey&b=" + real, "/api/trends?suite=nosuch",
                 "/api/nothing"):
        status, body = get(served, path)
        assert status == 404, (path, status, body[:200])
    for path, said in (("/api/runs?status=bogus", b"status"), ("/api/runs?since=yesterday", b"since"),
                       ("/api/runs?until=2026-13-45", b"until"), ("/api/trends", b"suite"),
                       ("/api/compare?a=" + real, b"two runs"), (f"/api/runs/{real}/case", b"name a case")):
        status, body = get(served, path)
        assert status == 400 and said in body, (path, status, body[:200])
    # what a filter can read still filters
    assert len(data(served, "/api/runs?status=completed&since=2000-01-01")["runs"]) == 4
    # cursors and limits that are not numbers are errors naming the parameter (they were ignored)
    for path, said in ((f"/api/runs/{real}/cases?cursor=abc", b"cursor:"), (f"/api/runs/{real}/cases?limit=zz", b"limit:")):
        status, body = get(served, path)
        assert status == 400 and said in body, (path, status, body[:200])


def test_nothing_outside_the_app_is_served(served):
    for path in ("/static/../app.py", "/static/%2e%2e/app.py", "/static/..%2f..%2fapp.py", "/static/..%5capp.py",
                 "/static/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/../../../../etc/passwd", "/static/app.js%00.py",
                 "/static/index.html", "/static/", "//etc/passwd", "/static/app.js/"):
        status, body = get(served, path)
        assert status in (400, 404), (path, status)
        assert b"aiohttp" not in body and b"root:" not in body and b"import " not in body, path
    status, body = get(served, "/static/app.js")
    assert status == 200 and body


def test_trends_with_one_run_and_with_two(served):
    solo = data(served, "/api/trends?suite=solo")
    assert solo["runs"] == 1 and all(len(p) == 1 and p[0]["change"] is None for p in solo["series"].values())
    hist = data(served, "/api/trends?suite=hist")
    assert hist["runs"] == 2
    one, two = hist["series"]["one"], hist["series"]["two"]
    assert [p["change"] is None for p in one] == [True, False]
    change = one[1]["change"]
    assert change["previous"] == one[0]["key"] and change["cases"] == N
    assert change["direction"] == "down" and change["significant"] and change["sign_test_p"] < 0.05
    assert two[1]["change"]["direction"] == "none" and not two[1]["change"]["significant"]
    assert one[1]["pass_rate"] == 0.0 and one[1]["cost_per_case"] is None  # no cost known: unknown, not 0
    a, b = keys(served, "hist")
    compared = data(served, f"/api/compare?a={a}&b={b}")
    (first,) = [c for c in compared["comparisons"] if c["a"] == "one"]
    assert first["transitions"]["newly_failing"]["count"] == N - 2
    assert data(served, f"/api/compare?a={a}&b={a}")["comparisons"][0]["transitions"]["newly_failing"]["count"] == 0


def test_pages_cover_every_case_and_attempt_once_in_order(served):
    key = keys(served, "hist")[0]
    seen, cursor = [], ""
    while cursor is not None:
        page = data(served, f"/api/runs/{key}/cases?limit=5&cursor={cursor}")
        seen += [c["case_id"] for c in page["cases"]]
        cursor = page["next"]
    assert seen == [f"c{i:02d}" for i in range(N)]
    attempts, cursor = [], ""
    while cursor is not None:
        page = data(served, f"/api/runs/{key}/attempts?limit=7&cursor={cursor}")
        attempts += [(a["case_id"], a["variant"], a["run"]) for a in page["attempts"]]
        cursor = page["next"]
    assert len(attempts) == len(set(attempts)) == N * 2 * 2
    assert attempts == sorted(attempts)  # report order: case, then variant, then run
    assert len(data(served, f"/api/runs/{key}/attempts?limit=100000")["attempts"]) == N * 4  # capped, not refused


def test_the_run_page_is_sent_without_per_case_maps(served):
    run = data(served, "/api/runs/" + keys(served, "hist")[0])
    block = run["summary"]["variants"]["one"]
    assert "case_stability" not in block and "flaky_cases" not in block
    assert block["pass_rate"] == pytest.approx(12 / 14) and run["summary"]["comparisons"]


def test_odd_unicode_ids_round_trip(served):
    (key,) = keys(served, "odd")
    listed = data(served, f"/api/runs/{key}/cases?limit=50")["cases"]
    assert [c["case_id"] for c in listed] == ODD_IDS
    for cid in ODD_IDS:
        case = data(served, f"/api/runs/{key}/case?id=" + urllib.parse.quote(cid, safe=""))
        assert case["case"]["id"] == cid and [a["variant"] for a in case["attempts"]] == ["v\u200d\u00e9"]


def test_concurrent_requests_each_get_their_own_answer(served):
    a, b = keys(served, "hist")
    paths = [f"/api/runs/{a}/cases?limit=3", f"/api/runs/{b}/attempts?limit=5", "/api/trends?suite=hist",
             f"/api/compare?a={a}&b={b}", f"/api/runs/{a}/case?id=c03", "/api/runs?suite=solo", "/api/runs/nokey"]
    expected = {p: get(served, p) for p in paths}
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda p: (p, get(served, p)), paths * 8))
    for path, answer in answers:
        assert answer == expected[path], path


def test_only_loopback_host_names_are_answered(served):
    port = urllib.parse.urlsplit(served.base).port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "127.0.0.2", f"[::1]:{port}"):
        assert get(served, "/api/meta", host=host)[0] == 200, host
    for host in ("attacker.example", "127.0.0.1.attacker.example", f"attacker.example:{port}", "10.0.0.1", ""):
        assert get(served, "/api/meta", host=host)[0] == 421, host
    assert served.base.startswith("http://127.0.0.1:")
    try:  # the socket listens on loopback only: another address of this machine is refused
        address = socket.gethostbyname(socket.gethostname())
    except OSError:
        return
    if address.startswith("127."):
        return
    with pytest.raises(OSError):
        socket.create_connection((address, port), timeout=5).close()
