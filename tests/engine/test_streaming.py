"""Memory flat in the number of attempts: offline runs of N and 4N cases (two variants each: 20,000
and 80,000 attempts) peak within a bound of each other and the larger one inside issue 10's aim
(100,000 attempts <= 250 MB); keeping each attempt's log record alone (about 1 KB) added about
200 MB between them, and the engine that kept every attempt needed about 8 KB per attempt. Each
run's peak RSS is read by the run's own process (VmHWM), and the larger run's report is whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CASES = 10_000
#: peak RSS of the 4N run, bytes: issue 10's aim for 100,000 attempts (this run has 80,000)
CEILING_RSS = 250 * 1024 * 1024
#: peak RSS of the 4N run over the N run's: measured 65 MB at most (noise of 100-165 MB peaks)
#: when flat, 204 MB when only the log records were kept
GROWTH = 120 * 1024 * 1024
#: address space either run may use, a backstop
CEILING = 1200 * 1024 * 1024

SUBJECT = textwrap.dedent('''
    def good(text):
        n = int(text.split()[1])
        return {"id": n, "label": "even" if n % 2 == 0 else "odd"}

    def sloppy(text):
        n = int(text.split()[1])
        return {"id": n, "label": "even" if n % 3 else "odd"}
''')

SUITE = textwrap.dedent('''
    name: stream
    cases: cases.jsonl
    concurrency: 8
    formats: [json, md]
    graders:
      - json-fields: {fields: [id, label]}
    variants:
      good: {subject: "python:stream_subject:good"}
      sloppy: {subject: "python:stream_subject:sloppy"}
''')

RUN = textwrap.dedent('''
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({ceiling}, {ceiling}))
    from scoreboard.cli import main
    code = main(["run", "suite.yaml", "--no-progress", "--output-dir", "out"])
    # this process's own peak (VmHWM is per address space, new at exec); wait4's ru_maxrss starts
    # from the forking parent's RSS, which a pytest worker's can exceed
    with open("/proc/self/status") as status, open("peak_kb.txt", "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
    sys.exit(code)
''')


def tail_json(path: Path, key: str) -> dict:
    """The report's `key` section, decoded from the end of the file (the attempts before it are
    never loaded here either)."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - (8 << 20)))
        tail = handle.read().decode("utf-8", errors="replace")
    at = tail.rfind(f'],"{key}":')
    assert at >= 0, f"no {key} section at the end of the report"
    value, _ = json.JSONDecoder().raw_decode(tail, at + len(f'],"{key}":'))
    return value


def run_cases(path: Path, cases: int) -> int:
    """Run the suite on `cases` cases in its own process; its peak RSS in bytes, as the process
    itself reads it at its end (VmHWM): not RUSAGE_CHILDREN, the largest child this worker ever
    reaped, nor wait4's, which counts from the worker's own RSS at the fork."""
    path.mkdir()
    (path / "stream_subject.py").write_text(SUBJECT)
    (path / "suite.yaml").write_text(SUITE)
    with open(path / "cases.jsonl", "w") as handle:
        for i in range(cases):
            expected = {"id": i, "label": "even" if i % 2 == 0 else "odd"}
            handle.write(json.dumps({"id": f"c{i:06d}", "input": f"item {i}", "expected": expected}) + "\n")
    # Predictable address space: one BLAS thread and few malloc arenas.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2",
           "PYTHONPATH": str(path), "SCOREBOARD_STORE": "none"}
    with open(path / "stderr.txt", "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", RUN.format(ceiling=CEILING)], cwd=path, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if proc.returncode is None and proc.poll() is None:
                proc.kill()
                proc.wait()
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, (path / "stderr.txt").read_text(errors="replace")[-2000:]
    del usage
    return int((path / "peak_kb.txt").read_text()) * 1024


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_memory_stays_flat_in_the_number_of_attempts(tmp_path):
    small = run_cases(tmp_path / "n", CASES)
    large = run_cases(tmp_path / "4n", 4 * CASES)
    assert large <= CEILING_RSS, f"{large >> 20} MB at {8 * CASES} attempts"
    assert large - small < GROWTH, f"{small >> 20} MB at {2 * CASES} attempts, {large >> 20} MB at {8 * CASES}"
    (report,) = (tmp_path / "4n" / "out" / "stream").glob("*.json")
    (log,) = (tmp_path / "4n" / "out" / "stream").glob("*/attempts.jsonl")
    summary = tail_json(report, "summary")
    assert {name: v["attempts"] for name, v in summary["variants"].items()} == {"good": 4 * CASES, "sloppy": 4 * CASES}
    assert summary["variants"]["good"]["passed"] == 4 * CASES
    with open(log, "rb") as handle:
        assert sum(1 for _ in handle) == 8 * CASES
    # The Markdown rendering was made from the same run without holding its attempts.
    md = report.with_suffix(".md").read_text(encoding="utf-8")
    assert "sloppy" in md and "good" in md


def test_the_markdown_report_is_written_in_pieces_and_reads_the_same(tmp_path, monkeypatch):
    # Markdown's per-case tables run to millions of characters at 100,000 cases: the report is
    # made and written a piece at a time (record/markdown.markdown_chunks), and the file holds
    # exactly what render_markdown gives, whatever the piece size.
    from scoreboard.cli import main
    from scoreboard.record import markdown
    from scoreboard.record.view import view_of

    (tmp_path / "stream_subject.py").write_text(SUBJECT)
    (tmp_path / "suite.yaml").write_text(SUITE.replace("concurrency: 8", "concurrency: 8\nruns: 2"))
    with open(tmp_path / "cases.jsonl", "w") as handle:
        for i in range(400):
            handle.write(json.dumps({"id": f"c{i:04d}", "input": f"item {i}",
                                     "expected": {"id": i, "label": "even" if i % 2 == 0 else "odd"}}) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(markdown, "CHUNK_CHARS", 512)
    written = []
    real = markdown.markdown_chunks

    def counted(view, **kw):
        for piece in real(view, **kw):
            written.append(piece)
            yield piece

    monkeypatch.setattr(markdown, "markdown_chunks", counted)
    assert main(["run", "suite.yaml", "--no-progress", "--output-dir", "out"]) == 0
    (report_path,) = (tmp_path / "out" / "stream").glob("*.json")
    text = report_path.with_suffix(".md").read_text(encoding="utf-8")
    assert len(written) > 20 and "".join(written) == text  # written as it was made
    assert "| c0399 |" in text and "## Per-document results" in text and "## Failures" in text
    view = view_of(json.loads(report_path.read_text(encoding="utf-8")))
    for size in (1, 77, 1 << 16):
        monkeypatch.setattr(markdown, "CHUNK_CHARS", size)
        assert "".join(real(view)) == text
    assert text.endswith("\n") and not text.endswith("\n\n") and text == text.rstrip() + "\n"
