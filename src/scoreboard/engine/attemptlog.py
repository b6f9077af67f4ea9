"""The attempt log: one JSON line per finished attempt, appended before anything else happens.

Each line goes out in a single write() on an O_APPEND descriptor, so a crash (even kill -9)
leaves only complete lines, and loses at most the attempts still in flight. `append` returns
where the line landed, so the engine can read an attempt back later instead of keeping it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from ..jsonio import dumps_line, representable
from ..redact import KNOWN

_CHUNK = 1 << 20


class AttemptLog:
    """Append-only JSONL writer that knows the offset of every line it wrote."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.size = os.fstat(self._fd).st_size

    def append(self, record: dict) -> tuple[int, int]:
        """Write one record as a line (no credential the run knows in it); returns (offset,
        length) of the line in the file."""
        try:
            data = dumps_line(record)
        except (TypeError, ValueError, UnicodeEncodeError):
            # what JSON cannot hold (a lone surrogate a grader's reason quoted) is replaced, so
            # the attempt is logged rather than the run stopped (the runner repairs outputs)
            data = dumps_line(representable(record)[0])
        if KNOWN:  # an echoed key in an error, an output or a grade's reason stops here
            data = KNOWN.scrub_bytes(data)
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        # Where the line landed, from the file itself: another process (the Ray executor's
        # ledger service) may append request records to the same log.
        self.size = os.lseek(self._fd, 0, os.SEEK_CUR)
        return self.size - len(data), len(data)

    def sync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            try:
                os.fsync(self._fd)
            finally:
                os.close(self._fd)
                self._fd = -1


def drop_torn_tail(path: str | os.PathLike) -> int:
    """Cut a torn last line (a crash mid-write) off the log before more is appended to it, so
    the next record starts on a line of its own. Returns the bytes removed."""
    path = Path(path)
    if not path.exists():
        return 0
    with open(path, "rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            step = min(_CHUNK, end)
            handle.seek(end - step)
            block = handle.read(step)
            cut = block.rfind(b"\n")
            if cut >= 0:
                end = end - step + cut + 1
                break
            end -= step
        if end != size:
            handle.truncate(end)
        return size - end


def scan_attempt_log(path: str | os.PathLike) -> Iterator[tuple[int, int, dict]]:
    """(offset, length, record) for every complete line, read in chunks (never the whole file);
    a torn final line and unparseable lines are skipped."""
    path = Path(path)
    if not path.exists():
        return
    offset = 0
    rest = b""
    with open(path, "rb") as handle:
        while True:
            block = handle.read(_CHUNK)
            if not block:
                break
            data = rest + block
            start = 0
            while True:
                end = data.find(b"\n", start)
                if end < 0:
                    break
                line = data[start:end + 1]
                if line.strip():
                    try:
                        yield offset, len(line), json.loads(line)
                    except ValueError:
                        pass
                offset += len(line)
                start = end + 1
            rest = data[start:]


def read_attempt_log(path: str | os.PathLike) -> list[dict]:
    """Every complete record of a log; a torn last line (no newline) is ignored."""
    return [record for _, _, record in scan_attempt_log(path)]
