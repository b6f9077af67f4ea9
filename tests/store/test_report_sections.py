"""report_sections: a report read without its attempts (resume of a completed run must not load
a million of them), from its start and its end, whatever the cases and outputs hold."""

from __future__ import annotations

import json

from scoreboard.jsonio import dumps_line
from scoreboard.record.stream import report_chunks
from scoreboard.store import files
from scoreboard.store.files import report_sections

HEAD = {"schema": "scoreboard.report/v2", "run": {"id": "x", "status": "completed"},
        # text that looks like the markers the reader looks for, in a case and in a summary
        "plan": {"cases": [{"id": "a", "input": 'tricky ,"attempts":[ and ],"summary":{} text'}]},
        "summary": {"variants": {"v": {"attempts": 3, "lists": [[1], [2]], "k": {"a": [1], "b": 2}}}},
        "gates": [{"passed": True, "seen": [1]}], "requests": {"by_role": {}, "possibly_billed": []}}


def _write(path, n):
    attempt = {"case_id": "a", "status": "passed", "output": {"json": {"x": [1], "summary": {"y": [2]}},
                                                              "tool_calls": []}}
    lines = [dumps_line(attempt)[:-1] for _ in range(n)]
    path.write_bytes(b"".join(bytes(c) for c in report_chunks(HEAD, lines)))
    whole = json.loads(path.read_text())
    whole.pop("attempts")
    return whole


def test_sections_equal_the_report_without_its_attempts(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "_SECTION_READ", 4096)  # many windows: the reader widens its tail
    for n in (0, 1, 3000):
        path = tmp_path / f"r{n}.json"
        whole = _write(path, n)
        assert report_sections(path) == whole


def test_a_file_not_laid_out_as_a_report_is_none(tmp_path):
    odd = tmp_path / "odd.json"
    odd.write_text('{"run": {"status": "completed"}, "attempts": []}\n')  # no sections after
    assert report_sections(odd) is None
    (tmp_path / "cut.json").write_text('{"schema": "s", "run": {"status": "completed"}')
    assert report_sections(tmp_path / "cut.json") is None
