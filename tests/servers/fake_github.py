"""A loopback fake of the GitHub REST API's issue comments, for the GitHub Action's tests.

    with FakeGitHub(token="ghs_x") as gh:
        ... GITHUB_API_URL=gh.url ...
        gh.comments  # {id: {"body": ..., "number": ...}}
        gh.requests  # [(method, path, headers, body)]

Routes: GET /repos/OWNER/NAME/issues/N/comments?per_page=&page= (paged), POST the same path,
PATCH /repos/OWNER/NAME/issues/comments/ID. A wrong token gets 401; `fail_with = 403` answers
every request with that status (a fork's read-only token). Only ever binds 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self
from urllib.parse import parse_qs, urlparse


#: who the token comments as (GITHUB_TOKEN in Actions), and a person
BOT = {"login": "github-actions[bot]", "type": "Bot"}
HUMAN = {"login": "octocat", "type": "User"}


class FakeGitHub:
    def __init__(self, token: str, repo: str = "octo/app"):
        self.token, self.repo = token, repo
        self.comments: dict[int, dict] = {}
        self.requests: list[tuple[str, str, dict, dict | None]] = []
        self.fail_with: int | None = None
        self._next = 1000
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _answer(self, status: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                with fake._lock:
                    fake.requests.append((method, self.path, dict(self.headers), body))
                if fake.fail_with:
                    return self._answer(fake.fail_with, {"message": "Resource not accessible by integration"})
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    return self._answer(401, {"message": "Bad credentials"})
                status, answer = fake.route(method, urlparse(self.path), body)
                self._answer(status, answer)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PATCH(self):
                self._handle("PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def route(self, method: str, url, body):
        base = f"/repos/{self.repo}"
        listing = re.fullmatch(rf"{base}/issues/(\d+)/comments", url.path)
        one = re.fullmatch(rf"{base}/issues/comments/(\d+)", url.path)
        with self._lock:
            if listing and method == "GET":
                query = parse_qs(url.query)
                per_page, page = int(query.get("per_page", ["30"])[0]), int(query.get("page", ["1"])[0])
                mine = [{"id": cid, **c} for cid, c in sorted(self.comments.items())
                        if c["number"] == int(listing[1])]
                return 200, mine[(page - 1) * per_page:page * per_page]
            if listing and method == "POST":
                self._next += 1
                self.comments[self._next] = {"number": int(listing[1]), "body": body["body"], "user": BOT}
                return 201, {"id": self._next, **self.comments[self._next]}
            if one and method == "PATCH" and int(one[1]) in self.comments:
                if self.comments[int(one[1])]["user"] != BOT:  # the token edits its own comments only
                    return 403, {"message": "Resource not accessible by integration"}
                self.comments[int(one[1])]["body"] = body["body"]
                return 200, {"id": int(one[1]), **self.comments[int(one[1])]}
        return 404, {"message": "Not Found"}

    def add_comment(self, number: int, body: str, user: dict | None = None) -> int:
        """A comment someone else wrote (the token may not edit it); `user=BOT` for the action's."""
        with self._lock:
            self._next += 1
            self.comments[self._next] = {"number": number, "body": body, "user": user or HUMAN}
            return self._next

    def __enter__(self) -> Self:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
