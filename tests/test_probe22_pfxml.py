"""promptfoo importer fidelity, round 9: is-xml and contains-xml converted (src/assertions/xml.ts
of promptfoo 0.121.20: saxes' well-formedness, fast-xml-parser's object for required element paths,
the scanner that finds XML inside prose). Every expected verdict below is what promptfoo's own
handleIsXml returned under Node for the same text and value; the end-to-end cases are what
`promptfoo eval` computes on the same outputs from a loopback OpenAI-shaped server (it echoes the
prompt)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from scoreboard.importers.promptfoo_runtime_xml import required_elements, xml
from tests.cli_inprocess import run_cli

I, C = "is-xml", "contains-xml"
#: (text, type, value, promptfoo's verdict)
PROMPTFOO = [
    ('<a><b>1</b></a>', I, None, True),
    ('<a><b>1</b></a>', I, 'a.b', True),
    ('<a><b>1</b></a>', I, 'a.c', False),
    ('<a><b>1</b><b>2</b></a>', I, 'a.b.1', True),
    ("<a x='1'>t</a>", I, 'a.@_x, a.#text', True),
    ('', I, None, False),
    ('Here: <a/>', I, None, False),
    ('<a/>text', I, None, False),
    ('<a/><b/>', I, None, False),
    ('\ufeff<?xml version="1.0"?><a/>', I, None, True),
    (' <?xml version="1.0"?><a/>', I, None, False),
    ('<!DOCTYPE a SYSTEM "a.dtd"><a>&foo;</a>', I, None, True),
    ('<?xml version="1.0" standalone="yes"?><!DOCTYPE a SYSTEM "a.dtd"><a>&foo;</a>', I, None, False),
    ('<!DOCTYPE a SYSTEM "a#b.dtd"><a/>', I, None, False),
    ('<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>', I, None, False),
    ('<a>&foo;</a>', I, None, False),
    ('<a><![CDATA[<not> & xml]]></a>', I, 'a.#text', False),
    ('<x:a xmlns:x="u"><x:b/></x:a>', I, 'x:a.x:b', True),
    ('<x:a/>', I, None, False),
    ('<a>x & y</a>', I, None, False),
    ('<constructor/>', I, None, False),
    ('<a><b/></a>', I, 'a.toString', True),
    ("<a>" * 102 + "</a>" * 102, I, None, False),
    ('<?xml version="1.0" encoding="UTF-16"?><a/>', I, '?xml', True),
    ('Here is XML: <root><item>1</item><item>2</item></root> done', C, 'root.item.1', True),
    ('Here is XML: <root><item>1</item><item>2</item></root> done', C, 'root.item.2', False),
    ('Prose <a>1</a> and <b>2</b> more', C, 'b', True),
    ('<a><b></a>', C, None, False),
    ('noise < 3 and <tag attr="x>y">ok</tag>', C, 'tag.@_attr', True),
    ('<a>x & y</a>', C, None, True),
    ('no xml here', C, None, False),
    ('<!-- <a/> -->', C, None, False),
    ('x <a><b/></a> <a><c/></a>', C, 'a.c', False),
    ('<r><constructor/></r>', C, None, False),
    ('<p>a<br>b</p>', C, 'p', False),
]


@pytest.mark.parametrize("text,kind,value,expected", PROMPTFOO)
def test_the_verdict_is_promptfoos(text, kind, value, expected):
    got = xml(text, False, kind, required_elements(value))
    assert got["pass"] is expected, (text, kind, value, got)
    assert xml(text, True, kind, required_elements(value))["pass"] is not expected  # not- inverts it


def test_required_elements_are_read_as_handle_is_xml_reads_them():
    assert required_elements(" a , a.b ") == ["a", "a.b"]
    assert required_elements(["a", 1, True]) == ["a", "1", "true"]
    assert required_elements({"requiredElements": ["r.x"]}) == ["r.x"]
    assert required_elements(None) is None and required_elements([]) is None and required_elements({}) is None
    assert required_elements(5) is None
    for bad in ({"x": 1}, {"requiredElements": "a"}, [None]):  # promptfoo throws: the row errors
        with pytest.raises(ValueError):
            required_elements(bad)


class _Recorder(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        body = b'<!ENTITY e "fetched">'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][-1]["content"]
        out = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": text}}],
                          "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    srv.hits = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_a_hostile_output_expands_no_entity_and_fetches_nothing(server):
    laughs = ('<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
              + "".join(f'<!ENTITY {c} "{("&" + p + ";") * 10}">' for p, c in zip("bcdefgh", "cdefghi"))
              + ']><l>&i;</l>')
    got = xml(laughs, False, I, None)
    assert got["pass"] is False and "internal subsets are not supported" in got["reason"], got
    url = f"http://127.0.0.1:{server.server_address[1]}/x.dtd"
    for text in (f'<!DOCTYPE a SYSTEM "{url}"><a>&e;</a>', f'<!DOCTYPE a PUBLIC "-//X//EN" "{url}"><a>&e;</a>'):
        assert xml(text, False, I, ["a"])["pass"] is True  # an unknown entity is kept, as promptfoo keeps it
    assert xml(f'<?xml version="1.0" standalone="yes"?><!DOCTYPE a SYSTEM "{url}"><a>&e;</a>', False, I,
               None)["pass"] is False
    assert server.hits == []  # the DTD was never asked for


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none", "OPENAI_API_KEY": "sk-test"}
    return run_cli(args, cwd, env=env)


def test_is_xml_and_contains_xml_are_graded_end_to_end(tmp_path, server):
    # promptfoo eval on these echoed outputs: a passed, b failed, c passed, d passed, e failed, f failed
    # (its value makes handleIsXml throw: the row errors). The import listed both types as not
    # converted, so every case was not assessed.
    port = server.server_address[1]
    (tmp_path / "promptfooconfig.yaml").write_text(f"""prompts: ['{{{{text}}}}']
providers:
  - id: openai:chat:gpt-4o-mini
    config: {{apiBaseUrl: 'http://127.0.0.1:{port}/v1'}}
tests:
  - description: a
    vars: {{text: "<a><b>1</b></a>"}}
    assert: [{{type: is-xml, value: a.b}}]
  - description: b
    vars: {{text: "Here: <a/>"}}
    assert: [{{type: is-xml}}]
  - description: c
    vars: {{text: "Here is XML: <root><item>1</item><item>2</item></root> done"}}
    assert: [{{type: contains-xml, value: [root.item.1]}}]
  - description: d
    vars: {{text: plain words}}
    assert: [{{type: not-is-xml}}, {{type: not-contains-xml}}]
  - description: e
    vars: {{text: "Here is XML: <root><item>1</item></root>"}}
    assert: [{{type: contains-xml, value: {{requiredElements: [root.missing]}}}}]
  - description: f
    vars: {{text: "<a/>"}}
    assert: [{{type: is-xml, value: {{x: 1}}}}]
""")
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = (tmp_path / "out" / "conversion-report.md").read_text()
    assert "is-xml has no scoreboard equivalent" not in report and "contains-xml has no" not in report, report
    ran = _cli("run", "out/suite.yaml", "--output-dir", "out/res", cwd=tmp_path)
    assert "Traceback" not in ran.stderr, ran.stderr
    paths = list((tmp_path / "out" / "res").glob("*/*.json"))
    assert paths, ran.stdout + ran.stderr
    got = {a["case_id"]: a["status"] for a in json.loads(paths[0].read_text())["attempts"]}
    assert got == {"a": "passed", "b": "failed", "c": "passed", "d": "passed", "e": "failed", "f": "failed"}, got


class _Judge(BaseHTTPRequestHandler):
    """The subject echoes its prompt; the judge (model judge-model) records the messages it gets and
    answers with the text after REPLY= in them, as a judge following the custom prompt would."""

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        text = messages[-1]["content"]
        if body.get("model") == "judge-model":
            self.server.judged.append(messages)  # type: ignore[attr-defined]
            whole = "\n".join(m["content"] for m in messages)
            text = "Here is my grading: " + whole.split("REPLY=", 1)[1].split("\n", 1)[0] + " (done)"
        out = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": text}}],
                          "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def judge_server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    srv.judged = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


RUBRIC_CONFIG = """prompts: ['Say {{word}}']
providers:
  - id: openai:chat:gpt-4o-mini
    config: {apiBaseUrl: 'http://127.0.0.1:PORT/v1'}
defaultTest:
  options:
    provider: {id: 'openai:chat:judge-model', config: {apiBaseUrl: 'http://127.0.0.1:PORT/v1'}}
tests:
  - description: a
    vars: {word: hi, who: Ann}
    assert:
      - type: llm-rubric
        value: 'is polite REPLY={"pass": true, "score": 0.9, "reason": "fine"}'
        rubricPrompt: "Grade for {{who}} ({{missing}}):\\n<out>{{output}}</out>\\n<rubric>{{rubric}}</rubric>"
  - description: b
    vars: {word: yo}
    assert:
      - type: llm-rubric
        threshold: 0.95
        value: 'REPLY={"pass": true, "score": 0.9}'
        rubricPrompt: "Out: {{output}} Rubric: {{rubric}}"
  - description: c
    vars: {word: hey}
    options:
      rubricPrompt: '[{"role": "system", "content": "Judge {{word}} strictly"}, {"role": "user", "content": "{{output}}\\n{{rubric}}"}]'
    assert:
      - type: llm-rubric
        value: 'REPLY={"score": 0}'
  - description: d
    vars: {word: hello}
    assert:
      - type: llm-rubric
        value: 'REPLY={"pass": "no", "score": 1, "reason": "rude"}'
        rubricPrompt: "{{output}} / {{rubric}}"
"""


def test_a_custom_rubric_prompt_is_the_judges_prompt_and_its_reply_is_read_as_promptfoo_reads_it(
        tmp_path, judge_server):
    # promptfoo eval of this config against the same server: a passed (a JSON object inside prose),
    # b failed (0.9 < threshold 0.95), c passed (no "pass": true by default; score 0, no threshold),
    # d failed ("no" is not true/yes/pass/y). The import left every case not assessed.
    port = str(judge_server.server_address[1])
    (tmp_path / "promptfooconfig.yaml").write_text(RUBRIC_CONFIG.replace("PORT", port))
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode in (0, 3), done.stdout + done.stderr
    report = (tmp_path / "out" / "conversion-report.md").read_text()
    assert "assert.0 (llm-rubric)" not in report, report
    ran = _cli("run", "out/suite.yaml", "--output-dir", "out/res", cwd=tmp_path)
    assert "Traceback" not in ran.stderr, ran.stderr
    paths = list((tmp_path / "out" / "res").glob("*/*.json"))
    assert paths, ran.stdout + ran.stderr
    got = {a["case_id"]: a["status"] for a in json.loads(paths[0].read_text())["attempts"]}
    assert got == {"a": "passed", "b": "failed", "c": "passed", "d": "failed"}, got
    judged = {json.dumps(m) for m in judge_server.judged}
    assert json.dumps([{"role": "user", "content": 'Grade for Ann ():\n<out>Say hi</out>\n<rubric>is polite '
                        'REPLY={"pass": true, "score": 0.9, "reason": "fine"}</rubric>'}]) in judged, judged
    assert json.dumps([{"role": "system", "content": "Judge hey strictly"},
                       {"role": "user", "content": 'Say hey\nREPLY={"score": 0}'}]) in judged, judged
    assert json.dumps([{"role": "user", "content": 'Out: Say yo Rubric: REPLY={"pass": true, "score": 0.9}'}]) \
        in judged, judged
    assert json.dumps([{"role": "user", "content": 'Say hello / REPLY={"pass": "no", "score": 1, "reason": "rude"}'}]) \
        in judged, judged
    assert len(judged) == 4  # what promptfoo 0.121.20 sent this server for the same config, message for message


def test_a_reply_is_read_as_run_json_grading_prompt_reads_it():
    from scoreboard.graders.registry import build_grader
    from scoreboard.judges.reply_keys import read

    for bad in ({"reply": {"pass": "p"}}, {"prompt": "x {{ output }}", "reply": {"verdict": "v"}}):
        with pytest.raises(Exception) as exc:  # the suite is refused when it loads, naming the option
            build_grader({"llm-judge": bad})
        assert "reply" in str(exc.value) and "\n" not in str(exc.value), exc.value

    keys = {"pass": "pass", "score": "score", "reason": "reason"}
    assert read('ok {"pass": "Yes", "score": "0.7"} then {"pass": false}', keys)[0] == \
        {"pass": True, "score": 0.7, "reason": None}
    assert read('{"pass": "nope"}', keys)[0] == {"pass": False, "score": 0.0, "reason": None}
    assert read('{score: 0.4, reason: meh}', keys)[0] == {"pass": True, "score": 0.4, "reason": "meh"}  # js-yaml
    assert read("PASS", keys)[0] is None  # no JSON object: the ask failed, never a pass
    assert read('{"ok": 0}', {"pass": "ok", "score": "s", "reason": "r"})[0] == \
        {"pass": False, "score": 0.0, "reason": None}


def test_a_custom_rubric_prompt_that_cannot_be_faithful_leaves_the_case_not_assessed(tmp_path):
    # a prompt read from a file, or printing a var that is not a text (promptfoo prints it as JSON):
    # listed, and the case is not assessed, never decided by its `contains` alone
    (tmp_path / "promptfooconfig.yaml").write_text("""prompts: ['Say {{word}}']
providers: [echo]
tests:
  - vars: {word: hi, n: {a: 1}}
    assert:
      - {type: llm-rubric, value: ok, rubricPrompt: 'file://grade.txt'}
      - {type: llm-rubric, value: ok, rubricPrompt: 'Grade {{output}} with {{n}}'}
      - {type: contains, value: hi}
""")
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    for spot in ("tests.0.assert.0 (llm-rubric)", "tests.0.assert.1 (llm-rubric)"):
        assert "the case is not assessed" in done.stdout.split(spot)[1].split("\n")[0], done.stdout
    case = json.loads((tmp_path / "out" / "cases.jsonl").read_text().splitlines()[0])
    assert [next(iter(g)) for g in case["graders"]] == ["python", "python", "contains"], case["graders"]
