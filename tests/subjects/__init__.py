"""Helpers for the HTTP subject tests: every subject here talks to a loopback FakeProvider."""

from __future__ import annotations

import asyncio
from pathlib import Path

from scoreboard.errors import SubjectError
from scoreboard.subjects.registry import build_subject
from scoreboard.subjects.values import SubjectRequest

#: small backoff so retry tests stay fast
FAST_RETRIES = {"attempts": 3, "base_delay_s": 0.01, "max_delay_s": 0.05}
KEY_ENV = "SB_TEST_API_KEY"


def make(kind: str, srv=None, **options):
    """A subject of `kind` pointed at `srv` (openai: /v1, anthropic: root, http: /generic)."""
    spec: dict = {"type": kind, "retries": dict(FAST_RETRIES)}
    if kind in ("openai", "anthropic"):
        spec["model"] = "fake-model"
        spec["api_key_env"] = KEY_ENV
        if srv is not None:
            spec["base_url"] = srv.base_url + ("/v1" if kind == "openai" else "")
    elif kind == "http":
        spec["output_path"] = "output.text"
        if srv is not None:
            spec["url"] = srv.base_url + "/generic"
    spec.update(options)
    return build_subject(spec, Path("."))


def req(input="What is 2+3?", skill=None, **kw) -> SubjectRequest:
    return SubjectRequest(kw.pop("case_id", "c1"), input, skill, **kw)


def call(subject, request: SubjectRequest | None = None):
    """Run one request on a fresh loop and close the subject."""

    async def main():
        try:
            return await subject.run(request or req())
        finally:
            await subject.aclose()

    return asyncio.run(main())


def call_error(subject, request: SubjectRequest | None = None, exc_type=SubjectError):
    """Run one request that must fail; return the exception."""
    try:
        call(subject, request)
    except exc_type as exc:
        return exc
    raise AssertionError(f"expected {exc_type.__name__}")


class ListLog:
    """An attempt-log stand-in for a Ledger: keeps the records in memory."""

    def __init__(self):
        self.records: list[dict] = []

    def append(self, record: dict) -> None:
        self.records.append(record)
