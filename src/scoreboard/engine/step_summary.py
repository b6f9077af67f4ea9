"""Appending to GitHub's step summary ($GITHUB_STEP_SUMMARY) within its size limit.

GitHub refuses a step summary over 1 MiB and then shows none of it, so a big suite's report (or
a second suite in the same step) would leave the job with no summary at all. What a run appends
is cut at a line's end, with a note naming the whole report, so the summary stays under LIMIT.
"""

from __future__ import annotations

import os
import sys

try:
    import fcntl
except ImportError:  # Windows: no advisory lock
    fcntl = None

#: what a step summary is kept under (GitHub's limit is 1 MiB; this leaves it a margin)
LIMIT = 1_000_000


def cut_note(whole: str) -> str:
    """The line that ends a report cut short: where the whole report is."""
    return (f"\n> ⚠️ The report is cut short here: GitHub shows at most 1 MiB of a step summary. "
            f"The whole report is {whole} (in the uploaded artifact, where the workflow uploads it).\n")


def fitted(text: str, room: int, whole: str) -> bytes:
    """`text` as UTF-8, whole when it fits in `room` bytes, else cut at a line's end with the
    note; empty when not even the note fits."""
    data = text.encode("utf-8")
    if len(data) <= room:
        return data
    note = cut_note(whole).encode("utf-8")
    if len(note) > room:
        return b""
    kept = data[:room - len(note)]
    return kept[:kept.rfind(b"\n") + 1] + note


def append(text: str, whole: str) -> None:
    """Append `text` (a run's Markdown report; `whole` names its file) to $GITHUB_STEP_SUMMARY,
    cut to keep the summary under LIMIT. The file is created owner-only when it is not there;
    it is locked while its size is read and the text added, since the suites of one pytest
    session under xdist finish in several processes at once."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    try:
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "ab", buffering=0) as handle:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)  # released when the file closes
            start = os.fstat(fd).st_size
            data = memoryview(fitted(text, LIMIT - start, whole))
            if not data:
                print(f"scoreboard: warning: GITHUB_STEP_SUMMARY already holds {start} bytes: the report is not "
                      f"added (GitHub shows at most 1 MiB of a step summary); the whole report is {whole}",
                      file=sys.stderr)
            while data:
                data = data[handle.write(data):]
    except OSError as exc:
        print(f"scoreboard: warning: cannot append to GITHUB_STEP_SUMMARY: {exc}", file=sys.stderr)
