"""The viewer's doors, over plain HTTP against the real `scoreboard view`: loopback only unless
a token is set, the Host header checked, a strict CSP on every answer, review writes refused
without the session's CSRF token or with values out of range."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.store.test_store import make_suite

from .conftest import Served, scoreboard


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("served")
    make_suite(folder)
    done = scoreboard("run", "suite.json", "--no-progress", cwd=folder)
    assert done.returncode in (0, 3), done.stderr
    return folder


def fetch(url: str, *, data: bytes | None = None, headers: dict | None = None) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_default_store_served_on_loopback_with_guards(project):
    # the run recorded itself in .scoreboard/history.sqlite beside the output folder
    assert (project / "out").is_dir() and (project / ".scoreboard" / "history.sqlite").is_file()
    served = Served("--store", str(project / ".scoreboard" / "history.sqlite"), cwd=project)
    try:
        assert served.base.startswith("http://127.0.0.1:")
        status, headers, body = fetch(served.base + "/")
        assert status == 200
        csp = headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
        assert b"<script src=\"/static/app.js\"" in body and b"http" not in body.split(b"<body>")[0].replace(
            b'http-equiv', b'')  # nothing loaded from elsewhere
        status, _, _ = fetch(served.base + "/api/meta", headers={"Host": "attacker.example:80"})
        assert status == 421  # a rebinding name is refused
        meta = json.loads(fetch(served.base + "/api/meta")[2])
        runs = json.loads(fetch(served.base + "/api/runs")[2])["runs"]
        key = runs[0]["key"]
        case = json.loads(fetch(f"{served.base}/api/runs/{key}/cases/c03")[2])
        output_hash = case["attempts"][0]["output_hash"]
        form = {"run": key, "case_id": "c03", "output_hash": output_hash, "reviewer_id": "ana",
                "rubric_version": "v1", "verdict": "fail", "ratings": {"correctness": 2}, "notes": "wrong"}
        post = lambda body, **h: fetch(served.base + "/api/reviews", data=json.dumps(body).encode(),
                                       headers={"Content-Type": "application/json", **h})
        assert post(form)[0] == 403  # no CSRF token
        assert post(form, **{"X-CSRF-Token": "guess"})[0] == 403
        token = {"X-CSRF-Token": meta["csrf"]}
        status, _, body = post({**form, "ratings": {"correctness": 9}}, **token)
        assert status == 400 and b"1 to 5" in body
        status, _, body = post({**form, "output_hash": "0" * 64}, **token)
        assert status == 400 and b"output_hash" in body
        status, _, body = post({**form, "ratings": {"charm": 3}}, **token)
        assert status == 400 and b"unknown dimension" in body
        assert post({**form, "notes": ""}, **token)[0] == 400
        status, _, body = post(form, **token)
        assert status == 200, body
        exported = json.loads(fetch(served.base + f"/api/reviews/export?run={key}")[2])
        assert [e["notes"] for e in exported["entries"]] == ["wrong"]
    finally:
        served.stop()


def test_other_addresses_need_a_token(project):
    store = str(project / ".scoreboard" / "history.sqlite")
    refused = scoreboard("view", "--store", store, "--host", "0.0.0.0", "--port", "0", cwd=project, timeout=60)
    assert refused.returncode == 1 and "needs a token" in refused.stderr
    short = scoreboard("view", "--store", store, "--token-env", "VIEW_TOKEN", cwd=project, env={"VIEW_TOKEN": "x"},
                       timeout=60)
    assert short.returncode == 1 and "16 or more" in short.stderr
    secret = "s3cret-token-for-the-viewer"
    served = Served("--store", store, "--token-env", "VIEW_TOKEN", cwd=project, env={"VIEW_TOKEN": secret})
    try:
        assert fetch(served.base + "/api/meta")[0] == 401
        assert fetch(served.base + "/static/app.js")[0] == 401
        assert fetch(served.base + "/api/meta", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert fetch(served.base + "/api/meta", headers={"Authorization": f"Bearer {secret}"})[0] == 200
    finally:
        served.stop()


def test_view_without_a_store_is_a_one_line_error(tmp_path):
    done = scoreboard("view", "--port", "0", cwd=tmp_path, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("scoreboard: error: ") and "no history store here yet" in done.stderr
    assert not (tmp_path / ".scoreboard").exists()  # reading never creates a store
