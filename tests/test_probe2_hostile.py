"""Probe 2: hostile case files and hostile servers behind the subjects, from the outside.

Each test here failed before the fix it names: bad input is one line naming the file, the line
or case and the field (exit 1); a bad server or program is an error of its own attempt; every
read is bounded in time and memory."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from scoreboard.cases import formats
from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parent.parent


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd=cwd)


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


# --------------------------------------------------------------------------- command subjects


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_dead(pid: int, seconds: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_nothing_a_command_started_outlives_its_attempt(tmp_path):
    # A command that answered and exited left its background children running after the run
    # (`sleep &`, and one that left the group with setsid): the README says nothing a run
    # starts outlives it. One of them also held stdout open, so the answer it had given was
    # lost to the attempt's timeout.
    from scoreboard.subjects.registry import build_subject
    from tests.subjects import req

    pids = tmp_path / "pids"
    script = tmp_path / "bg.sh"
    script.write_text("#!/bin/sh\n"
                      f"sleep 300 >/dev/null 2>&1 & echo $! >> {pids}\n"
                      f"setsid sleep 301 >/dev/null 2>&1 & echo $! >> {pids}\n"
                      f"sleep 302 & echo $! >> {pids}\n"  # holds stdout open
                      "echo answered\n")
    script.chmod(0o755)
    subject = build_subject({"type": "command", "argv": [str(script)]}, tmp_path)
    try:
        async def answer():
            try:  # the engine's deadline for an attempt, as a run would set it (a hang guard)
                return await asyncio.wait_for(subject.run(req("q")), 120)
            finally:
                await subject.aclose()

        result = asyncio.run(answer())
        assert result.output.text == "answered\n"
    finally:
        started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
        left = [pid for pid in started if not _wait_dead(pid)]
        for pid in left:
            import os
            import signal

            os.kill(pid, signal.SIGKILL)
    assert len(started) == 3
    assert left == []


# --------------------------------------------------------------------------- datasets


def test_a_dictionary_encoded_dataset_is_held_to_max_total_bytes(tmp_path):
    # A 792-byte Parquet file (one 1 MiB value, dictionary-encoded, named by 2,000 rows) passed
    # every limit: its footer and its batches hold the value once. It decoded to 2 GB of
    # cases (2.1 GB of memory for `validate`) and its run wrote 7.9 GB of reports.
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 40
    value = pa.array(["a" * (1 << 20)] * rows).dictionary_encode()
    table = pa.table({"question": value, "answer": pa.array(["x"] * rows)})
    pq.write_table(table, tmp_path / "bomb.parquet", compression="zstd")
    with pa.OSFile(str(tmp_path / "bomb.arrow"), "wb") as handle:
        with pa.ipc.new_stream(handle, table.schema) as writer:
            writer.write_table(table)
    assert (tmp_path / "bomb.parquet").stat().st_size < 64 << 10
    for name in ("bomb.parquet", "bomb.arrow"):
        (tmp_path / "suite.yaml").write_text(
            f"name: s\ncases: [{{format: hf, path: {name}, columns: {{input: question, target: answer}}}}]\n"
            "subject: mock\nlimits: {max_total_bytes: 8000000}\n")
        done = scoreboard("validate", "suite.yaml", cwd=tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr
        assert done.stderr.strip().splitlines() == [
            f"scoreboard: error: {name}:1: the rows decode to more than 8,000,000 bytes (limits.max_total_bytes)"]


# --------------------------------------------------------------------------- servers


def _against(handler, subject_spec: dict, tmp_path: Path):
    """Run one request of an HTTP subject against a raw server on 127.0.0.1 (same loop);
    the SubjectError it ends in."""
    from scoreboard.errors import SubjectError
    from scoreboard.subjects.registry import build_subject
    from tests.subjects import req

    async def main():
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        subject = build_subject({**subject_spec, "url": f"http://127.0.0.1:{port}/x"}, tmp_path)
        try:
            await asyncio.wait_for(subject.run(req("q")), 60)  # a hang guard, not a timing
        except SubjectError as exc:
            return exc
        finally:
            await subject.aclose()
            server.close()
        raise AssertionError("the request did not fail")

    return asyncio.run(main())


def test_a_server_closing_inside_its_headers_is_one_plain_line(tmp_path):
    # The error was aiohttp's repr of the half-parsed answer: "ServerDisconnectedError:
    # <RawResponseMessage(version=HttpVersion(major=1, minor=1), code=200, reason='OK',
    # headers=<CIMultiDictProxy(...)>, raw_headers=((b'Connection', ...)), should_close=True, ...)>".
    async def handler(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Secret-Header: s3cr3t\r\n")
        await writer.drain()
        writer.close()

    err = _against(handler, {"type": "http", "output_path": "text", "retries": {"attempts": 1}}, tmp_path)
    message = str(err)
    assert err.kind == "connection"
    assert "RawResponseMessage" not in message and "s3cr3t" not in message
    assert "closed the connection before its answer's headers ended (HTTP 200 begun)" in message


# --------------------------------------------------------------------------- NUL bytes


def test_a_nul_byte_in_a_case_file_is_named_with_its_column(tmp_path):
    # "invalid JSON: Invalid control character at" (the stdlib's words, its position cut off)
    # and, for a NUL after a case, "Extra data" with the hint that a case was written over
    # several lines: nothing said that the line held a NUL byte, or where.
    (tmp_path / "inside.jsonl").write_bytes(b'{"id": "a", "input": "x\x00y"}\n')
    (tmp_path / "after.jsonl").write_bytes(b'{"id": "a", "input": "x"}\x00\n')
    inside = scoreboard("validate", "inside.jsonl", cwd=tmp_path)
    after = scoreboard("validate", "after.jsonl", cwd=tmp_path)
    assert inside.returncode == after.returncode == 1
    assert inside.stderr.strip() == ("scoreboard: error: inside.jsonl:1: invalid JSON: control character U+0000 "
                                     "inside a string (write it escaped) at column 24")
    assert after.stderr.strip() == ("scoreboard: error: after.jsonl:1: invalid JSON: Extra data at column 26 "
                                    "(found control character U+0000)")


def test_a_command_killed_by_a_signal_says_so(tmp_path):
    # "command exited with status -9": asyncio's negative return code, not an exit status.
    from scoreboard.errors import SubjectError
    from scoreboard.subjects.registry import build_subject
    from tests.subjects import call, req

    script = tmp_path / "die.sh"
    script.write_text("#!/bin/sh\nkill -KILL $$\n")
    script.chmod(0o755)
    subject = build_subject({"type": "command", "argv": [str(script)]}, tmp_path)
    try:
        call(subject, req("q"))
    except SubjectError as exc:
        assert str(exc) == "command was killed by signal SIGKILL (9)"
    else:
        raise AssertionError("a killed command is an error")


def test_a_command_printing_invalid_utf8_is_answered_and_says_it_was_repaired(tmp_path):
    # Invalid UTF-8 on stdout became U+FFFD with no trace: the report showed an answer the
    # program never printed, with nothing saying it was changed (a lone surrogate from an HTTP
    # subject is marked subject_info.output_repaired).
    script = tmp_path / "bad.sh"
    script.write_text("#!/bin/sh\nprintf 'h\\377i \\303\\n'\n")
    script.chmod(0o755)
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "q", "expected": "hi"}\n')
    done = scoreboard("run", "--cases", "c.jsonl", "--subject", "command:./bad.sh", "--no-progress",
                      "--output", "r.json", cwd=tmp_path)
    assert done.returncode in (0, 3), done.stderr
    attempt, = json.loads((tmp_path / "r.json").read_text())["attempts"]
    assert attempt["output"]["text"] == "h\ufffdi \ufffd\n"
    assert attempt["subject_info"]["output_repaired"] == {"invalid_utf8": 2}
