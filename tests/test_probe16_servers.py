"""Probe 16: hostile model servers, round 3. Loopback servers (127.0.0.1, port 0) behind the
HTTP subjects and the judge, answering what no provider should, driven through `scoreboard run`
on real suite files where the report is what is judged.

Each one must end as data in the report: an attempt's error or a judge failure naming what
happened, usage unknown (never 0) when it was not reported, and the run must finish."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

from tests.test_hostile_servers_2 import RawServer, answer, chat

ROOT = Path(__file__).resolve().parent.parent


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in `cwd`, in-process (a hang meets pytest's timeout instead)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCOREBOARD_STORE": "none", "SB_PROBE16_KEY": "k"}
    proc = run_cli(args, cwd, env)
    for text in (proc.stdout, proc.stderr):
        assert "Traceback" not in text and "internal error" not in text, text
    return proc


def run_suite(tmp_path: Path, suite: dict, cases: list[dict]) -> dict:
    """`scoreboard run` on `suite` (its cases written beside it): the report, which must verify."""
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = {"name": "p16", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json"],
             "timeout_ms": 60_000, **suite}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    cli(tmp_path, "run", "suite.json", "--no-progress")
    [path] = (tmp_path / "out" / "p16").glob("*.json")
    checked = cli(tmp_path, "verify", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return json.loads(path.read_text())


def provider(kind: str, url: str) -> dict:
    return {"type": kind, "model": "m", "api_key_env": "SB_PROBE16_KEY",
            "base_url": url + ("/v1" if kind == "openai" else ""), "retries": {"attempts": 1}}


# --------------------------------------------------------------------------- a judge's NaN score


def judge_tool_answer(kind: str, arguments: str) -> bytes:
    """A judge's answer as a forced tool call whose arguments are `arguments` (JSON text as the
    server wrote it: Anthropic's `input` is part of the body, OpenAI's a string in it)."""
    if kind == "anthropic":
        return (b'{"model":"j","stop_reason":"tool_use","content":[{"type":"tool_use","id":"t","name":"verdict",'
                b'"input":' + arguments.encode() + b'}],"usage":{"input_tokens":5,"output_tokens":5}}')
    call = {"id": "t", "type": "function", "function": {"name": "verdict", "arguments": arguments}}
    return json.dumps({"model": "j", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": None, "tool_calls": [call]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5}}).encode()


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("score", ["NaN", "-Infinity"])
def test_a_judge_score_that_is_no_json_number_is_a_judge_failure_not_a_fail(tmp_path, kind, score):
    """A judge's forced tool call holding `"score": NaN` (no JSON number: the stdlib reads it)
    passed the schema (NaN is neither below 0 nor above 1) and the attempt was graded a FAIL,
    'judge score nan, verdict true', its score null in the report: the judge's broken answer
    blamed on the subject. The same NaN in the judge's text was already unusable; in a tool
    call it now is too: one retry, then a judge failure (not assessed), both requests counted."""
    seen = []

    async def handler(path, body, writer):
        if path.startswith("/subject"):
            writer.write(answer(json.dumps(chat(usage={"prompt_tokens": 3, "completion_tokens": 2})).encode()))
        else:
            seen.append(body)
            writer.write(answer(judge_tool_answer(kind, '{"verdict":true,"score":%s,"explanation":"ok"}' % score)))

    with RawServer(handler) as srv:
        report = run_suite(tmp_path, {
            "subject": provider("openai", srv.url + "/subject"),
            "judge": provider(kind, srv.url + "/judge"),
            "graders": [{"llm-judge": {"rubric": "says hi", "threshold": 0.5}}]},
            [{"id": "c0", "input": "q0", "expected": "hi"}])
    [attempt] = report["attempts"]
    [grade] = attempt["grades"]
    assert (grade["passed"], grade["score"], grade.get("judge_failure")) == (None, None, True), grade
    assert "no JSON number" in grade["reason"], grade["reason"]
    assert attempt["status"] == "unassessed"
    assert len(seen) == 2 and grade["judge"]["usage"]["requests"] == 2  # one retry, counted


# --------------------------------------------------------------------------- Retry-After garbage


@pytest.mark.parametrize("header", ["Retry-After: inf", "Retry-After: Infinity", "Retry-After: 1e400",
                                    "retry-after-ms: inf", "Retry-After: NaN", "Retry-After: -5"])
def test_a_retry_after_that_is_no_number_of_seconds_is_ignored_not_waited_forever(tmp_path, header):
    """Retry-After is a whole number of seconds or an HTTP date. `inf` (or `1e400`, read as
    infinity) was taken as an endless wait: the 429 read 'next retry in inf s would pass the
    attempt's timeout' and stopped the whole run, no later case sent. A value that is no number
    of seconds is now ignored as other garbage is: the retry waits its usual backoff."""
    seen = []

    async def handler(path, body, writer):
        seen.append(body)
        if len(seen) == 1:
            writer.write(answer(b'{"error":{"message":"slow down"}}', "429 Too Many Requests", (header,)))
        else:
            writer.write(answer(json.dumps(chat(usage={"prompt_tokens": 3, "completion_tokens": 2})).encode()))

    with RawServer(handler) as srv:
        subject = {**provider("openai", srv.url), "retries": {"attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}}
        report = run_suite(tmp_path, {"subject": subject, "concurrency": 1},
                           [{"id": f"c{i}", "input": f"q{i}", "expected": "hi"} for i in range(3)])
    assert report["run"]["status"] == "completed", report["run"]["stop_reason"]
    assert [a.get("error") for a in report["attempts"]] == [None] * 3
    assert [a["measurements"]["requests"] for a in report["attempts"]] == [2, 1, 1]


# --------------------------------------------------------------------------- a long last event


def test_a_stream_whose_last_event_is_long_and_comes_in_two_pieces_is_answered():
    """A stream's last event was looked for in the last 4 KiB before each new chunk only: an
    Anthropic `message_stop` longer than that (a gateway adding its metrics to it) whose line
    came in two pieces was never seen to end, and a server holding the connection open after it
    had the attempt wait out its whole timeout, the answer lost. It is now looked for from the
    start of the line the new chunk continues."""
    import asyncio

    from scoreboard.errors import SubjectError
    from tests.subjects import make, req
    from tests.test_hostile_servers_2 import ANTHROPIC_STREAM
    from tests.test_probe4_subjects import At

    stop = b'data: {"type":"message_stop","gateway-metrics":"' + b"m" * 10_000 + b'"}\n\n'

    async def handler(path, body, writer):
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        for piece in (*ANTHROPIC_STREAM[:-1], b"event: message_stop\n" + stop[:8_000], stop[8_000:]):
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
            await asyncio.sleep(0.05)  # each piece its own read
        await asyncio.sleep(60)  # held open after the last event

    with RawServer(handler) as srv:
        subject = make("anthropic", At(srv), stream=True, retries={"attempts": 1})

        async def main():
            try:
                async with asyncio.timeout(20):  # a bound on the test: reaching it is the bug
                    return await subject.run(req(timeout_s=20))
            finally:
                await subject.aclose()

        try:
            result = asyncio.run(main())
        except (SubjectError, TimeoutError) as err:
            raise AssertionError(f"the answer was lost: {err!r}") from None
    assert result.output.text == "hi"
    assert (result.measurements.input_tokens, result.measurements.output_tokens) == (3, 2)


# --------------------------------------------------------------------------- a final 1xx status


@pytest.mark.parametrize("kind", ["openai", "anthropic", "http"])
def test_a_switching_protocols_answer_is_named_as_that_status(kind):
    """A proxy that answers `101 Switching Protocols` (an upgrade to a WebSocket) gave an answer
    read as a 2xx with an empty body: 'response is not valid JSON (...; 0 bytes)', the status
    that said what happened nowhere. A final status below 200 is now that status's error."""
    import asyncio

    from scoreboard.errors import SubjectError
    from tests.subjects import make, req
    from tests.test_probe4_subjects import At

    async def handler(path, body, writer):
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x02hi")
        await writer.drain()
        await asyncio.sleep(30)

    with RawServer(handler) as srv:
        subject = make(kind, At(srv), retries={"attempts": 1})

        async def main():
            try:
                async with asyncio.timeout(20):
                    return await subject.run(req(timeout_s=20))
            finally:
                await subject.aclose()

        with pytest.raises(SubjectError) as caught:
            asyncio.run(main())
    err = caught.value
    assert str(err).startswith(f"{kind}: HTTP 101: "), str(err)
    assert err.kind == "invalid-response" and err.measurements.requests == 1
    assert (err.measurements.input_tokens, err.measurements.output_tokens) == (None, None)


# --------------------------------------------------------------------------- a dripping error body


def test_an_error_body_sent_a_byte_at_a_time_is_its_status_not_a_timeout():
    """An error body is read up to 64 KiB, and one the server stops sending for 2 s is taken as
    far as it came. One that comes a byte every 0.5 s never paused that long: it was read until
    the attempt's deadline, and the 503 that a retry would have got past was a timeout, the run's
    answer lost. An error body now has a few seconds in all: the status is the try's error and
    the retry is made."""
    import asyncio

    from tests.subjects import make, req
    from tests.test_probe4_subjects import At

    tries = []

    async def handler(path, body, writer):
        tries.append(body)
        if len(tries) == 1:
            words = b'{"error":{"message":"overloaded, try again"}}' + b" " * 200
            writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(words))
            for byte in words:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.5)
        else:
            writer.write(answer(json.dumps(chat(usage={"prompt_tokens": 3, "completion_tokens": 2})).encode()))

    with RawServer(handler) as srv:
        subject = make("openai", At(srv), retries={"attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02})

        async def main():
            try:
                return await asyncio.wait_for(subject.run(req(timeout_s=60)), 60)
            finally:
                await subject.aclose()

        result = asyncio.run(main())
    assert result.output.text == "hi" and len(tries) == 2
    assert result.measurements.requests == 2 and result.extra["retries"] == 1
    # a failed try's usage is unknown, so the attempt's is: never this answer's alone
    assert (result.measurements.input_tokens, result.measurements.output_tokens) == (None, None)


# --------------------------------------------------------------------------- an embeddings server


def embeddings_handler(redirect: str | None = None):
    """An OpenAI-compatible server: /subject answers 'hi'; /embed/v1/embeddings answers 3,072
    dimensions a text (text-embedding-3-large's), in pieces as a real server's body comes."""
    import asyncio

    async def handler(path, body, writer):
        if path.startswith("/subject"):
            writer.write(answer(json.dumps(chat()).encode()))
            return
        if redirect:
            writer.write(answer(b"", "307 Temporary Redirect", (f"Location: {redirect}/v1/embeddings",)))
            return
        texts = json.loads(body)["input"]
        data = json.dumps({"data": [{"index": i, "embedding": [0.0123456789] * 3072}
                                    for i in range(len(texts))]}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data))
        for at in range(0, len(data), 1 << 14):
            writer.write(data[at:at + (1 << 14)])
            await writer.drain()
            await asyncio.sleep(0.005)

    return handler


def similar_suite(url: str) -> dict:
    return {"subject": provider("openai", url + "/subject"),
            "graders": [{"similar": {"embedder": {"type": "openai", "base_url": url + "/embed/v1", "model": "e"}}}]}


def test_an_embeddings_answer_longer_than_one_read_is_read_whole(tmp_path):
    """The `similar` grader's OpenAI embedder read its answer with one `content.read(16 MiB)`,
    which returns what has come so far, not the body: an answer in more than one piece (two
    texts of 3,072 dimensions are 150 KB) was cut, and every grade was an error, 'Expecting ','
    delimiter: line 1 column 65537'. The body is now read to its end (still at most 16 MiB)."""
    with RawServer(embeddings_handler()) as srv:
        report = run_suite(tmp_path, similar_suite(srv.url), [{"id": "c0", "input": "q0", "expected": "hi"}])
    [grade] = report["attempts"][0]["grades"]
    assert grade["passed"] is True and grade["score"] == pytest.approx(1.0), grade


def test_an_embeddings_server_that_redirects_is_not_followed(tmp_path):
    """The embedder followed redirects, to any host: the run's outputs went wherever the server
    pointed (here another loopback server, standing for another host). As for subjects and
    judges, a redirect is now not followed, and the grade is not assessed, saying so."""
    elsewhere = []

    async def other_host(path, body, writer):
        elsewhere.append(body)
        writer.write(answer(b'{"data": []}'))

    with RawServer(other_host) as other, RawServer(embeddings_handler(redirect=other.url)) as srv:
        report = run_suite(tmp_path, similar_suite(srv.url), [{"id": "c0", "input": "q0", "expected": "hi"}])
    assert elsewhere == []
    [grade] = report["attempts"][0]["grades"]
    assert grade["passed"] is None, grade
    assert "HTTP 307" in grade["reason"] and "not followed" in grade["reason"], grade["reason"]


@pytest.mark.parametrize("value", ["NaN", "1e999", "-Infinity", '"0.5"', "true"])
def test_an_embedding_that_holds_no_number_leaves_the_grade_not_assessed(tmp_path, value):
    """An embedding holding NaN or 1e999 (read as infinity) gave 'similarity nan < threshold
    0.75': a FAIL with score 0.0, an unknown read as the worst similarity. A string or a bool
    was read as a number ("0.5" as 0.5, true as 1.0). Each is now no embedding: the grade is
    not assessed, saying so."""
    async def handler(path, body, writer):
        if path.startswith("/subject"):
            writer.write(answer(json.dumps(chat()).encode()))
            return
        vectors = [b'{"index":%d,"embedding":[%s,1.0]}' % (i, value.encode()) for i in range(len(json.loads(body)["input"]))]
        writer.write(answer(b'{"data":[' + b",".join(vectors) + b"]}"))

    with RawServer(handler) as srv:
        report = run_suite(tmp_path, similar_suite(srv.url), [{"id": "c0", "input": "q0", "expected": "hi"}])
    [grade] = report["attempts"][0]["grades"]
    assert (grade["passed"], grade["score"]) == (None, None), grade
    assert "not a list of finite numbers" in grade["reason"], grade["reason"]
