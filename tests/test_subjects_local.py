"""Local subjects: python (sync/async, arity, return shapes), command ({input} or stdin, exit
status, timeouts), recorded (JSON mapping, JSON list, JSONL) and mock (outputs, runs, errors)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from scoreboard.cases.case import Case
from scoreboard.errors import ConfigError, SubjectError
from scoreboard.subjects.registry import build_subject, parse_subject_spec
from scoreboard.subjects.values import Output, SubjectRequest

FIXTURES = Path(__file__).parent / "fixtures" / "core"


def call(subject, text="hi", *, skill=None, run=0, case_id="c1", timeout_s=None):
    subject.check()
    return asyncio.run(subject.run(SubjectRequest(case_id, text, skill, run, {}, timeout_s)))


def py(fn: str, **extra):
    return build_subject({"type": "python", "function": f"core_subjects:{fn}", **extra}, FIXTURES)


# ---- python ------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,expected", [
    ("none_args", "constant"),
    ("echo", "hi"),
    ("two_args", "SKILL|hi"),
    ("three_args", "hi#2"),
    ("star_args", repr(("hi", "SKILL", 2))),
    ("async_echo", "hi"),
])
def test_python_arity(fn, expected):
    result = call(py(fn), "hi", skill="SKILL", run=2)
    assert result.output.text == expected


def test_python_returns_dict_and_output():
    result = call(py("as_dict"), "x")
    assert result.output.json == {"answer": "x"}
    assert json.loads(result.output.text) == {"answer": "x"}
    assert call(py("as_output"), "x").output.text == "X"


def test_python_thread_option():
    assert call(py("echo", thread=True), "t").output.text == "t"


def test_python_none_is_error():
    with pytest.raises(SubjectError, match="None"):
        call(py("returns_none"))


def test_python_bad_specs(tmp_path):
    with pytest.raises(ConfigError) as info:
        build_subject({"type": "python", "function": "no_colon"}, FIXTURES)
    assert info.value.field == "subject.function"
    with pytest.raises(ConfigError, match="no_such"):
        py("no_such").check()
    with pytest.raises(ConfigError, match="unknown field"):
        build_subject({"type": "python", "function": "core_subjects:echo", "colour": 1}, FIXTURES)
    (tmp_path / "explodes_on_import.py").write_text("raise ValueError('nope')\n")
    with pytest.raises(ConfigError, match="ValueError"):
        build_subject("python:explodes_on_import:f", tmp_path).check()


def test_python_spec_string():
    assert parse_subject_spec("python:pkg.mod:fn") == {"type": "python", "function": "pkg.mod:fn"}


# ---- the runner turns subject failures into error attempts --------------------------------

def _run_suite(tmp_path: Path, subject: str | dict, rows: list[dict], **flags) -> list[dict]:
    from scoreboard.engine.pipeline import RunOptions, run
    from scoreboard.suite.load import load_suite

    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = json.dumps(subject) if isinstance(subject, dict) else subject
    suite = load_suite(None, {"cases": [str(cases)], "subject": spec, "output_dir": str(tmp_path / "out"),
                              "formats": ["json"], **flags})
    outcome = run(suite, RunOptions(progress=False))
    return outcome.report["attempts"]


ROWS = [{"id": "a", "input": "apple", "expected": "apple"}, {"id": "b", "input": "banana", "expected": "banana"}]


def test_python_errors_become_attempts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subj_errs.py").write_text(
        "def none(text):\n    return None\n\n"
        "def boom(text):\n    raise KeyError(text)\n\n"
        "def weird(text):\n    return object()\n")
    for fn, words in (("none", "None"), ("boom", "KeyError"), ("weird", "object")):
        attempts = _run_suite(tmp_path, f"python:subj_errs:{fn}", ROWS, name=fn)
        assert [a["status"] for a in attempts] == ["error", "error"]
        assert all(words in a["error"] for a in attempts), attempts[0]["error"]
        assert all(a["output"] is None and a["grades"] == [] for a in attempts)


def test_python_async_timeout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subj_slow.py").write_text(
        "import asyncio\n\nasync def slow(text):\n    await asyncio.sleep(5 if text == 'banana' else 0)\n"
        "    return text\n")
    attempts = _run_suite(tmp_path, "python:subj_slow:slow", ROWS, timeout_ms=150)
    assert [a["status"] for a in attempts] == ["passed", "error"]
    assert "timeout" in attempts[1]["error"]


# ---- command -----------------------------------------------------------------------------

def cmd(argv, **extra):
    return build_subject({"type": "command", "argv": argv, **extra}, FIXTURES)


def test_command_placeholder():
    code = "import sys; print('ARG:' + sys.argv[1], end='')"
    assert call(cmd([sys.executable, "-c", code, "{input}"]), "two words").output.text == "ARG:two words"


def test_command_stdin():
    code = "import sys; sys.stdout.write(sys.stdin.read().upper())"
    assert call(cmd([sys.executable, "-c", code]), "héllo\nworld").output.text == "HÉLLO\nWORLD"


def test_command_messages_on_stdin_as_json():
    code = "import sys; sys.stdout.write(sys.stdin.read())"
    msgs = [{"role": "user", "content": "q"}]
    assert json.loads(call(cmd([sys.executable, "-c", code]), msgs).output.text) == msgs


def test_command_env_and_skill_file():
    code = ("import os, sys; print(os.environ['SCOREBOARD_CASE_ID'], os.environ['SCOREBOARD_RUN'], "
            "open(os.environ['SCOREBOARD_SKILL_FILE']).read(), os.environ['EXTRA'], end='')")
    out = call(cmd([sys.executable, "-c", code], env={"EXTRA": "e"}), "x", skill="SK", run=4, case_id="k9")
    assert out.output.text == "k9 4 SK e"


def test_command_nonzero_exit():
    code = "import sys; sys.stderr.write('secret diagnostics'); sys.exit(7)"
    with pytest.raises(SubjectError) as info:
        call(cmd([sys.executable, "-c", code]))
    assert "status 7" in str(info.value)
    assert "secret" not in str(info.value)  # stderr stays out of reports unless asked for
    with pytest.raises(SubjectError, match="secret diagnostics"):
        call(cmd([sys.executable, "-c", code], keep_stderr=True))


def test_command_not_found():
    # check() (run before anything starts) names the missing program ...
    with pytest.raises(ConfigError, match="not found"):
        call(cmd(["/definitely/not/here"]))
    # ... and a program that vanishes after the check is an execution error, not a crash.
    subject = cmd(["/definitely/not/here"])
    with pytest.raises(SubjectError, match="not found"):
        asyncio.run(subject.run(SubjectRequest("c1", "hi")))


def test_command_spec_string_and_bad_specs():
    assert parse_subject_spec("command:./bin/x --flag '{input}'") == \
        {"type": "command", "argv": ["./bin/x", "--flag", "{input}"]}
    with pytest.raises(ConfigError):
        cmd([])
    with pytest.raises(ConfigError):
        cmd(["x"], env=["not", "a", "map"])


def test_command_errors_become_attempts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = "import sys; t = sys.stdin.read(); sys.stdout.write(t); sys.exit(0 if t == 'apple' else 5)"
    attempts = _run_suite(tmp_path, {"type": "command", "argv": [sys.executable, "-c", code]}, ROWS)
    assert [a["status"] for a in attempts] == ["passed", "error"]
    assert "status 5" in attempts[1]["error"]


# ---- recorded ----------------------------------------------------------------------------

def rec(tmp_path: Path, name: str, text: str):
    (tmp_path / name).write_text(text)
    return build_subject(f"recorded:{name}", tmp_path)


def test_recorded_json_mapping(tmp_path):
    subject = rec(tmp_path, "out.json", json.dumps({"c1": "one", "c2": {"k": 1}}))
    assert call(subject, case_id="c1").output.text == "one"
    assert call(subject, case_id="c2").output.json == {"k": 1}
    with pytest.raises(SubjectError, match="no recorded output"):
        call(subject, case_id="c3")


def test_recorded_jsonl_per_run(tmp_path):
    lines = [{"case_id": "c1", "run": 0, "output": "first"}, {"case_id": "c1", "run": 1, "output": "second"},
             {"id": "c2", "text": "any run", "latency_ms": 12.5, "input_tokens": 3},
             {"case_id": "c3", "error": "provider exploded"}]
    subject = rec(tmp_path, "out.jsonl", "".join(json.dumps(r) + "\n" for r in lines))
    assert call(subject, case_id="c1", run=1).output.text == "second"
    assert call(subject, case_id="c1", run=0).output.text == "first"
    with pytest.raises(SubjectError):
        call(subject, case_id="c1", run=2)
    result = call(subject, case_id="c2", run=5)
    assert result.output.text == "any run"
    assert result.measurements.latency_ms == 12.5 and result.measurements.input_tokens == 3
    assert result.measurements.output_tokens is None  # unknown, never zero
    with pytest.raises(SubjectError, match="provider exploded"):
        call(subject, case_id="c3")


def test_recorded_json_list(tmp_path):
    subject = rec(tmp_path, "out.json", json.dumps([{"case_id": "c1", "json": {"a": [1]}}]))
    assert call(subject, case_id="c1").output.json == {"a": [1]}


def test_recorded_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        build_subject("recorded:absent.jsonl", tmp_path).check()
    with pytest.raises(ConfigError) as info:
        rec(tmp_path, "bad.jsonl", '{"case_id": "a", "output": "x"}\n{"case_id": "b", "colour": 1}\n').check()
    assert info.value.field == "colour"
    with pytest.raises(ConfigError) as info:
        rec(tmp_path, "bad2.jsonl", '{"case_id": "a"}\n{oops\n').check()
    assert info.value.line == 2


def test_recorded_jsonl_with_one_record(tmp_path):
    subject = rec(tmp_path, "one.jsonl", json.dumps({"case_id": "c1", "output": "only"}) + "\n")
    assert call(subject, case_id="c1").output.text == "only"


def test_recorded_jsonl_line_separator_in_output(tmp_path):
    lines = [{"case_id": "c1", "output": "a\u2028b\x85c"}, {"case_id": "c2", "output": "d"}]
    subject = rec(tmp_path, "ls.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines))
    assert call(subject, case_id="c1").output.text == "a\u2028b\x85c"


def test_recorded_missing_case_is_error_attempt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rec.json").write_text(json.dumps({"a": "apple"}))
    attempts = _run_suite(tmp_path, "recorded:rec.json", ROWS)
    assert [a["status"] for a in attempts] == ["passed", "error"]
    assert "no recorded output" in attempts[1]["error"]


# ---- mock --------------------------------------------------------------------------------

def test_mock_echo_default_outputs_runs_errors():
    assert call(build_subject("mock", FIXTURES), "echo me").output.text == "echo me"
    assert call(build_subject("mock:fixed", FIXTURES), "x").output.text == "fixed"
    subject = build_subject({"type": "mock", "outputs": {"c1": "one", "c2": {"n": 2}},
                             "runs": {"c1": ["r0", "r1"]}, "errors": ["c3"], "default": "dflt"}, FIXTURES)
    assert call(subject, case_id="c1", run=0).output.text == "r0"
    assert call(subject, case_id="c1", run=3).output.text == "r1"  # cycles
    assert call(subject, case_id="c2").output.json == {"n": 2}
    assert call(subject, case_id="zz").output.text == "dflt"
    with pytest.raises(SubjectError, match="scripted"):
        call(subject, case_id="c3")
    result = call(subject, case_id="c2")
    assert result.measurements.cost_usd == 0.0  # a mock makes no model call: known zero


def test_mock_messages_echo_as_json():
    msgs = [{"role": "user", "content": "q"}]
    assert json.loads(call(build_subject("mock", FIXTURES), msgs).output.text) == msgs


def test_mock_bad_specs():
    with pytest.raises(ConfigError):
        build_subject({"type": "mock", "outputs": ["x"]}, FIXTURES)
    with pytest.raises(ConfigError):
        build_subject({"type": "mock", "errors": "c1"}, FIXTURES)
    with pytest.raises(ConfigError):
        build_subject({"type": "mock", "bogus": 1}, FIXTURES)


def test_unknown_subject_kind():
    with pytest.raises(ConfigError, match="unknown subject"):
        build_subject("teleport:x", FIXTURES)
    with pytest.raises(ConfigError):
        build_subject({"kind": "mock"}, FIXTURES)


def test_request_carries_no_reference(tmp_path, monkeypatch):
    """The subject sees the rendered input, the skill, the run: never `expected`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subj_peek.py").write_text(
        "SEEN = []\n\ndef peek(*args):\n    SEEN.append(args)\n    return 'x'\n")
    rows = [{"id": "a", "input": "in-a", "expected": "SECRET-REFERENCE"}]
    _run_suite(tmp_path, "python:subj_peek:peek", rows)
    import subj_peek

    assert subj_peek.SEEN == [("in-a", None, 0)]
    assert "SECRET" not in repr(subj_peek.SEEN)
    assert not isinstance(subj_peek.SEEN[0][0], Case) and not isinstance(subj_peek.SEEN[0][0], Output)


def test_concurrency_bound_and_run_index(tmp_path, monkeypatch):
    """--concurrency N: at most N attempts in flight (and N reached); each run gets its index."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subj_conc.py").write_text(
        "import asyncio\n\nNOW = 0\nPEAK = 0\nSEEN = []\n\n"
        "async def track(text, skill, run):\n"
        "    global NOW, PEAK\n"
        "    NOW += 1\n    PEAK = max(PEAK, NOW)\n"
        "    await asyncio.sleep(0.005)\n"
        "    NOW -= 1\n    SEEN.append((text, run))\n    return text\n")
    rows = [{"id": f"c{i}", "input": f"c{i}", "expected": f"c{i}"} for i in range(12)]
    attempts = _run_suite(tmp_path, "python:subj_conc:track", rows, concurrency=3, runs=2)
    import subj_conc

    assert subj_conc.PEAK == 3
    assert sorted(subj_conc.SEEN) == sorted((f"c{i}", r) for i in range(12) for r in range(2))
    assert [(a["case_id"], a["run"]) for a in attempts] == [(f"c{i}", r) for i in range(12) for r in range(2)]
    assert all(a["status"] == "passed" for a in attempts)


def test_subject_mutating_messages_does_not_leak(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subj_mut.py").write_text(
        "def grow(messages):\n"
        "    messages.append({'role': 'assistant', 'content': 'x'})\n"
        "    return str(len(messages))\n")
    rows = [{"id": "m", "input": [{"role": "user", "content": "hi"}], "expected": "2"}]
    from scoreboard.engine.pipeline import RunOptions, run
    from scoreboard.suite.load import load_suite

    (tmp_path / "cases.jsonl").write_text(json.dumps(rows[0]) + "\n")
    suite = load_suite(None, {"cases": ["cases.jsonl"], "subject": "python:subj_mut:grow", "runs": 3,
                              "output_dir": "out", "formats": ["json"]})
    report = run(suite, RunOptions(progress=False)).report
    assert [a["output"]["text"] for a in report["attempts"]] == ["2", "2", "2"]
    assert report["plan"]["cases"][0]["input"] == rows[0]["input"]


def test_a_threaded_python_subject_that_never_returns_is_cut_and_the_run_still_exits(tmp_path):
    # `thread: true` used the loop's default executor: the attempt timed out, but asyncio.run's
    # shutdown (and the interpreter's exit) waited for that thread forever, so the command hung
    # after writing its report. Now the function runs in a daemon thread of its own.
    import subprocess

    import yaml

    (tmp_path / "cases.jsonl").write_text('{"id": "q", "input": "x", "expected": "x"}\n')
    (tmp_path / "subj.py").write_text("import threading\n\n\ndef hang(text):\n    threading.Event().wait()\n")
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({
        "name": "hang", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json"], "timeout_ms": 500,
        "subject": {"type": "python", "function": "subj:hang", "thread": True}, "graders": ["exact"]}))
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.yaml", "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    (report_path,) = (tmp_path / "out" / "hang").glob("*.json")
    (attempt,) = json.loads(report_path.read_text(encoding="utf-8"))["attempts"]
    assert attempt["status"] == "error" and "timeout" in attempt["error"]


def test_user_code_that_calls_sys_exit_is_an_error_in_the_report(tmp_path):
    # sys.exit() in a python subject ended `scoreboard run` with the subject's exit code (3, as
    # if a gate had failed) and no report; a grader's or a scoring function's sys.exit(4) ended
    # it with exit 4 ("waiting on batches"). Each is now that attempt's error. (Other
    # BaseExceptions still stop the run: pytest-timeout's must cut it, tests/test_probe_pytest_action.py.)
    # In-process (run_cli): what the command exits with and writes, not the process, is the point.
    import yaml

    from tests.cli_inprocess import run_cli

    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                  + "\n" for i in range(3)))
    (tmp_path / "user.py").write_text(
        "import sys\n\n"
        "def bye(text):\n    sys.exit(3)\n\n"
        "def threaded(text):\n    sys.exit(5)\n\ndef echo(text):\n    return text\n\n"
        "def grader(output):\n    sys.exit(4)\n\ndef scoring(named, context):\n    sys.exit(6)\n")
    variants = {"bye": {"subject": "python:user:bye"},
                "threaded": {"subject": {"type": "python", "function": "user:threaded", "thread": True}}}
    suites = {"subjects": {"name": "s", "cases": "cases.jsonl", "variants": variants, "graders": ["exact"]},
              "grader": {"name": "g", "cases": "cases.jsonl", "subject": "python:user:echo",
                         "graders": [{"python": {"file": "user.py", "function": "grader"}}]},
              "scoring": {"name": "sc", "cases": "cases.jsonl", "subject": "python:user:echo",
                          "graders": [{"exact": None, "metric": "m"}],
                          "defaults": {"scoring": "python-file:user.py:scoring"}}}
    errors = {}
    for name, suite in suites.items():
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump({**suite, "output_dir": f"out-{name}",
                                                               "formats": ["json"]}))
        done = run_cli(["run", f"{name}.yaml", "--no-progress"], tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (name, done.stdout, done.stderr)
        (report,) = (tmp_path / f"out-{name}").glob("*/*.json")
        attempts = json.loads(report.read_text(encoding="utf-8"))["attempts"]
        assert len(attempts) == (6 if name == "subjects" else 3) and {a["status"] for a in attempts} == {"error"}
        errors.update({(name, a["variant"]): a["error"] for a in attempts})
    assert errors[("subjects", "bye")] == "SystemExit raised by the subject: 3"
    assert errors[("subjects", "threaded")] == "SystemExit raised by the subject: 5"
    assert "grader 'python' raised SystemExit: 4" in errors[("grader", "echo")]
    assert errors[("scoring", "echo")] == "scoring function raised SystemExit: 6"
    # a module-level sys.exit() (a script without a __main__ guard) is a load error, not an exit
    (tmp_path / "script.py").write_text("import sys\n\ndef echo(text):\n    return text\n\nsys.exit(7)\n")
    done = run_cli(["run", "--cases", "cases.jsonl", "--subject", "python:script:echo", "--no-progress",
                    "--output-dir", "never"], tmp_path)
    assert done.returncode == 1 and "raised SystemExit: 7" in done.stderr and not (tmp_path / "never").exists()
