"""An OpenAI-compatible model that declines (structured outputs: `message.refusal`, content
null; streamed as `delta.refusal`) answered with its words: they are the output's text, with
status "refusal". Before, the text was null and a judge said only "no output text to parse"."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.suite.load import load_suite

REFUSAL = "I'm sorry, I can't help with that."


class Declining(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - the http.server name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("stream"):
            events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": None, "refusal": ""}}]},
                      {"choices": [{"index": 0, "delta": {"refusal": REFUSAL[:10]}}]},
                      {"choices": [{"index": 0, "delta": {"refusal": REFUSAL[10:]}}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
            data = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"
            kind = "text/event-stream"
        else:
            data = json.dumps({"model": "m", "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": None, "refusal": REFUSAL}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 9}}).encode()
            kind = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("stream", [False, True])
def test_a_refusal_is_the_answer_with_status_refusal(tmp_path, monkeypatch, stream):
    monkeypatch.setenv("K", "dummy")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Declining)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": "do it", "expected": "sorry",
                                                          "grader": "contains"}) + "\n")
        (tmp_path / "suite.json").write_text(json.dumps({
            "name": "r", "cases": "cases.jsonl", "output_dir": "out",
            "subject": {"type": "openai", "base_url": f"http://127.0.0.1:{server.server_port}/v1", "model": "m",
                        "api_key_env": "K", "stream": stream}}))
        report = run(load_suite(tmp_path / "suite.json"), RunOptions(formats=["json"], progress=False)).report
    finally:
        server.shutdown()
    (attempt,) = report["attempts"]
    assert attempt["output"]["text"] == REFUSAL, attempt
    assert attempt["output"]["status"] == "refusal"
    assert attempt["status"] == "passed"  # graded on its words
