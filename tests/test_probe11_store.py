"""The history store and the viewer under hostility, on SQLite and on a real PostgreSQL (the
tests' own server, tests/store/pg.py): a query string holding a NUL, a case id too long for a
default HTTP request line, and a PostgreSQL connection the server dropped under the viewer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli
from tests.store.conftest import postgres, store_spec
from tests.viewer.conftest import Served

FIXTURES = (postgres, store_spec)  # the PostgreSQL server and a fresh store of each kind, as tests/store/ uses them

LONG_ID = "\u65e5" * 1000  # 1,000 characters, 9,000 bytes once percent-encoded in a URL


def sb(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, **(env or {})})


def run_into(store: str, folder: Path) -> None:
    """A small run (a long CJK case id among them) recorded into `store`."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = [{"id": LONG_ID, "input": "a", "expected": "a"}, {"id": "c1", "input": "b", "expected": "x"},
             {"id": "c2", "input": "c", "expected": "c"}]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (folder / "echo.py").write_text("def answer(text):\n    return text\n")
    done = sb("run", "--cases", "cases.jsonl", "--subject", "python:echo:answer", "--no-progress", "--store", store,
              cwd=folder)
    assert done.returncode in (0, 3), done.stderr


def get(base: str, path: str) -> tuple[int, dict | bytes]:
    return answer(base + path)


def answer(request: str | urllib.request.Request) -> tuple[int, dict | bytes]:
    """(status, JSON body, or the bytes of one that is not JSON) of a request to the viewer."""
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        body = exc.read()
        try:
            return exc.code, json.loads(body)
        except ValueError:
            return exc.code, body


@pytest.fixture
def served(store_spec, tmp_path):
    run_into(store_spec, tmp_path / "proj")
    server = Served("--store", store_spec, cwd=tmp_path)
    try:
        status, runs = get(server.base, "/api/runs")
        assert status == 200, runs
        yield server, runs["runs"][0]["key"]
    finally:
        server.stop()


def test_a_nul_in_a_viewer_query_is_a_400_naming_the_parameter(served):
    """A NUL in a filter, a search, a run key or a case id: PostgreSQL refuses NUL in text, so
    each was a bare 500 ('Server got itself in trouble'); SQLite cut the LIKE pattern at the
    NUL, so a case search for "\\x00" listed every case. No stored name holds a NUL (ids and
    tags refuse control characters): it is a 400 naming the parameter."""
    server, key = served
    for path, name in [("/api/runs?search=%00", "search"), ("/api/runs?suite=a%00b", "suite"),
                       ("/api/runs?tag=%00", "tag"), ("/api/runs?variant=%00", "variant"),
                       ("/api/runs?cursor=%00", "cursor"),
                       (f"/api/runs/{key}/cases?search=%00", "search"),
                       (f"/api/runs/{key}/cases?category=%00", "category"),
                       (f"/api/runs/{key}/case?id=c1%00", "id"),
                       (f"/api/runs/{key}/case?id=c1&with=%00", "with"),
                       ("/api/runs/%00", "key"), ("/api/runs/%00/attempts", "key"),
                       ("/api/trends?suite=%00", "suite"), ("/api/compare?a=%00&b=x", "a"),
                       ("/api/reviews/export?run=%00", "run")]:
        status, body = get(server.base, path)
        assert status == 400, (path, status, body)
        assert isinstance(body, dict) and body["error"].startswith(f"{name}: "), (path, body)
    status, body = get(server.base, f"/api/runs/{key}/cases")  # the viewer still answers
    assert status == 200 and len(body["cases"]) == 3, body


def test_a_long_unicode_case_id_opens_in_the_viewer(served):
    """A case id of 1,000 CJK characters is 9,000 bytes in the page's request line: aiohttp's
    default limit (8,190) answered 400 'Got more than 8190 bytes', so the case could be listed
    but never opened."""
    server, key = served
    status, page = get(server.base, f"/api/runs/{key}/cases?search=" + urllib.parse.quote(LONG_ID[:50]))
    assert status == 200 and [c["case_id"] for c in page["cases"]] == [LONG_ID], page
    status, detail = get(server.base, f"/api/runs/{key}/case?id=" + urllib.parse.quote(LONG_ID, safe=""))
    assert status == 200, detail
    assert detail["case"]["id"] == LONG_ID and len(detail["attempts"]) == 1


def test_the_viewer_reconnects_when_postgresql_drops_its_connection(postgres, tmp_path):
    """The server ends the viewer's idle connection (a restart, a failover, an administrator,
    an idle timeout): every later request was a bare 500 ('the connection is closed') until the
    viewer was restarted. It connects again and answers."""
    import psycopg

    name = f"p11_{os.getpid()}_drop"
    url = postgres.create_database(name)
    run_into(url, tmp_path / "proj")
    server = Served("--store", url, cwd=tmp_path)
    try:
        assert get(server.base, "/api/runs")[0] == 200
        with psycopg.connect(postgres.url(), autocommit=True) as admin:
            ended = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                                  "AND pid <> pg_backend_pid()", (name,)).fetchall()
        assert ended and all(row[0] for row in ended)
        for _ in range(3):
            status, body = get(server.base, "/api/runs")
            assert status == 200 and len(body["runs"]) == 1, body
    finally:
        server.stop()


def test_two_imports_of_one_report_at_once_store_it_once(store_spec, tmp_path):
    """Two `store import` of the same reports at once (CI jobs back-filling one shared store):
    each read whether the report was stored before its transaction, so both wrote it, both said
    "stored", and on PostgreSQL one often failed with 'deadlock detected' (exit 2). Whether it
    is stored is now read again inside the transaction: the second says "unchanged"."""
    from scoreboard.store.history import HistoryStore

    run_into("none", tmp_path / "proj")
    report = next((tmp_path / "proj" / "eval-results").rglob("*.json"))
    first, second = HistoryStore(store_spec), HistoryStore(store_spec)
    try:
        opened = second.db.write

        def racing():  # the first import commits while the second has read "not stored" and waits to write
            assert first.store_report(report) == "stored"
            return opened()

        second.db.write = racing
        assert second.store_report(report) == "unchanged"
        assert second.db.one("SELECT COUNT(*) FROM runs")[0] == 1
    finally:
        first.close()
        second.close()


def test_concurrent_imports_of_one_folder_all_succeed(store_spec, tmp_path):
    """Four `store import` processes of the same folder at once: every one exits 0, and each
    report is said "stored" by one of them only."""
    for index in range(3):
        run_into("none", tmp_path / f"p{index}")
    folder = tmp_path / "reports"
    for index, report in enumerate(sorted(tmp_path.glob("p*/eval-results/*/*.json"))):
        (folder / str(index)).mkdir(parents=True)
        (folder / str(index) / report.name).write_bytes(report.read_bytes())
    seeded = sb("store", "import", str(folder / "0"), "--store", store_spec, cwd=tmp_path)
    assert seeded.returncode == 0, seeded.stderr
    procs = [subprocess.Popen([sys.executable, "-m", "scoreboard", "store", "import", str(folder), "--store",
                               store_spec], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [(p.wait(180), *p.communicate()) for p in procs]
    assert all(rc == 0 for rc, _, _ in outs), outs
    stored = sum(int(out.split(": ", 1)[1].split(" stored")[0]) for _, out, _ in outs)
    assert stored == 2, outs


def test_comparing_with_a_run_that_never_concluded_says_it_has_no_summary(tmp_path):
    """A run killed with kill -9 part way has no summary: comparing a finished run with it said
    "B's [summary was computed] with a statistics version it does not state: a change in the
    figures table may come from the methods", a summary and a method B never had. It says B has
    no summary (its figures unknown) and that the paired statistics count what was stored."""
    import signal
    import time

    store = str(tmp_path / "h.sqlite")
    run_into(store, tmp_path / "proj")
    (tmp_path / "proj" / "stuck.py").write_text(
        "import os, time\n"
        "def answer(text):\n"
        "    if text == 'c':\n"
        "        open(os.environ['P11_FLAG'], 'w').close()\n"
        "        while True:\n"
        "            time.sleep(0.05)\n"
        "    return text\n")
    flag = tmp_path / "stuck.flag"
    proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "--cases", "cases.jsonl", "--subject",
                             "python:stuck:answer", "--no-progress", "--store", store, "--concurrency", "1"],
                            cwd=tmp_path / "proj", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "P11_FLAG": str(flag)})
    try:
        deadline = time.monotonic() + 120
        while not flag.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert flag.exists(), "the run never reached the stuck case"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    server = Served("--store", store, cwd=tmp_path)
    try:
        _, runs = get(server.base, "/api/runs")
        done, killed = sorted(runs["runs"], key=lambda r: r["status"] != "completed")
        assert (done["status"], killed["status"]) == ("completed", "interrupted"), runs
        status, found = get(server.base, f"/api/compare?a={done['key']}&b={killed['key']}")
        assert status == 200, found
        note = found["statistics_note"]
        assert "does not state" not in note and "B has no summary" in note, note
        assert found["statistics_versions"]["b"] is None and found["statistics_versions"]["a"] is not None
    finally:
        server.stop()


def test_a_store_that_refuses_the_connection_is_one_plain_line(tmp_path):
    """libpq's message spans two lines ('Connection refused' newline, tab, 'Is the server
    running...'): the error line showed a literal backslash-n and a raw tab inside it."""
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'scoreboard[postgres]'")
    import socket

    with socket.socket() as holder:  # a loopback port nothing listens on (bound, never listening)
        holder.bind(("127.0.0.1", 0))
        url = f"postgresql://ana@127.0.0.1:{holder.getsockname()[1]}/h?connect_timeout=5"
        done = sb("history", "--store", url, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "\t" not in line and "\\n" not in line, repr(line)
    assert "cannot connect to the store" in line and "Connection refused Is the server running" in line, line


def post(base: str, path: str, body: dict, csrf: str) -> tuple[int, dict | bytes]:
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "X-CSRF-Token": csrf})
    return answer(request)


def test_a_review_naming_a_control_character_is_refused_naming_the_field(served):
    """A review whose reviewer, rubric version, run, case or output hash holds a NUL was a bare
    500 on PostgreSQL; an escape sequence in the reviewer's name was stored (and exported, to be
    printed later by `import reviews`). Names refuse control characters, notes a NUL (400)."""
    server, key = served
    _, meta = get(server.base, "/api/meta")
    _, detail = get(server.base, f"/api/runs/{key}/case?id=c1")
    form = {"run": key, "case_id": "c1", "output_hash": detail["attempts"][0]["output_hash"], "verdict": "fail",
            "notes": "line one\nline two", "ratings": {}, "reviewer_id": "ana", "rubric_version": "v1"}
    for name, value in [("reviewer_id", "ana\x00"), ("rubric_version", "v\x001"), ("case_id", "c1\x00"),
                        ("run", key + "\x00"), ("output_hash", "ab\x00"), ("reviewer_id", "ana\x1b[2J"),
                        ("notes", "a\x00b")]:
        status, body = post(server.base, "/api/reviews", {**form, name: value}, meta["csrf"])
        assert status == 400, (name, value, status, body)
        assert isinstance(body, dict) and body["error"].startswith(f"{name}: "), (name, body)
    status, body = post(server.base, "/api/reviews", form, meta["csrf"])  # a note's line break is fine
    assert status == 200 and body["stored"]["notes"] == "line one\nline two", body
    _, exported = get(server.base, "/api/reviews/export")
    assert [e["reviewer_id"] for e in exported["entries"]] == ["ana"], exported
