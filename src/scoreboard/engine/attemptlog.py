"""The attempt log: one JSON line per finished attempt, appended before anything else happens.

Each line goes out in a single write() on an O_APPEND descriptor, so a crash (even kill -9)
leaves only complete lines, and loses at most the attempts still in flight.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..jsonio import dumps_line


class AttemptLog:
    """Append-only JSONL writer."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def append(self, record: dict) -> None:
        view = memoryview(dumps_line(record))
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def sync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            try:
                os.fsync(self._fd)
            finally:
                os.close(self._fd)
                self._fd = -1


def read_attempt_log(path: str | os.PathLike) -> list[dict]:
    """Every complete record of a log; a torn last line (no newline) is ignored."""
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    records = []
    for raw in data.split(b"\n")[:-1] if not data.endswith(b"\n") else data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            records.append(json.loads(raw))
        except ValueError:
            continue  # a torn final line from a crash mid-write
    return records
