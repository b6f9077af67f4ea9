"""Probe 2: hostile case files and hostile servers behind the subjects, from the outside.

Each test here failed before the fix it names: bad input is one line naming the file, the line
or case and the field (exit 1); a bad server or program is an error of its own attempt; every
read is bounded in time and memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scoreboard.cases import formats

ROOT = Path(__file__).resolve().parent.parent


def scoreboard(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


class _Counting(str):
    """A document's text that tallies the characters every `count` call scans."""

    scanned = 0

    def count(self, sub, start=0, end=None):  # noqa: A003 - str's own name
        stop = len(self) if end is None else end
        type(self).scanned += max(0, stop - start)
        return str.count(self, sub, start, end)


def test_json_case_lines_scan_the_document_once():
    # A JSON case document of 99,000 small cases (14 MB, inside every limit) took 9 minutes to
    # validate: each case's line was counted from the start of the file (quadratic).
    parts = [json.dumps({"id": f"c{i}", "input": "x"}) for i in range(2000)]
    text = _Counting('{"cases": [\n' + ",\n".join(parts) + "\n]}\n")
    _Counting.scanned = 0
    lines = formats._json_case_lines(text)
    assert lines == list(range(2, 2002))
    assert _Counting.scanned <= len(text)
