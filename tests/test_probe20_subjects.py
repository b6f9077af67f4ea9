"""Probe 20S: local subjects (`python`, `command`) used as a team wrapping a CLI extractor and a
Python pipeline would: `${VAR}` in a command's `env`, user code raising KeyboardInterrupt, and
threads user code leaves running at the end of a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.cli_inprocess import run_cli


def _suite(tmp_path: Path, suite: dict) -> None:
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({"name": "s", "output_dir": "out", "formats": ["json"],
                                                          **suite}))


def _cli(tmp_path: Path, suite: dict, *extra: str, env: dict | None = None):
    """`scoreboard run suite.yaml` in tmp_path, in this process (tests/cli_inprocess.py): for what
    the run says and writes, where the process itself is not the point."""
    _suite(tmp_path, suite)
    return run_cli(["run", "suite.yaml", "--no-progress", *extra], tmp_path,
                   {**os.environ, "SCOREBOARD_STORE": "none", **(env or {})})


def _run(tmp_path: Path, suite: dict, *extra: str, env: dict | None = None, timeout: float = 120):
    """`scoreboard run suite.yaml` in tmp_path: the console script, whose import path does not
    hold its working directory (`python -m` puts it first, so a json.py there would be Python's)."""
    _suite(tmp_path, suite)
    script = Path(sys.executable).parent / "scoreboard"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "scoreboard"]
    return subprocess.run([*command, "run", "suite.yaml", "--no-progress", *extra],
                          cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "SCOREBOARD_STORE": "none", **(env or {})})


def _attempts(tmp_path: Path) -> list[dict]:
    (report,) = (tmp_path / "out" / "s").glob("*.json")
    return json.loads(report.read_text(encoding="utf-8"))["attempts"]


def _cases(tmp_path: Path, n: int = 1) -> None:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "x", "expected": "x"}) + "\n"
                                                  for i in range(n)))


def test_a_var_in_a_commands_env_is_read_from_the_environment_and_kept_out_of_the_report(tmp_path):
    # `env: {API_TOKEN: "${MY_TOKEN}"}` (what the README tells a --subject to write instead of a
    # literal credential) reached the program as the literal text "${MY_TOKEN}"
    _cases(tmp_path)
    script = tmp_path / "show.sh"
    script.write_text('#!/bin/sh\nprintf "team=%s token=%s" "$TEAM" "$API_TOKEN"\n')
    script.chmod(0o755)
    subject = {"type": "command", "argv": ["./show.sh"],
               "env": {"TEAM": "${P20S_TEAM}-x", "API_TOKEN": "${P20S_TOKEN}"}}
    done = _cli(tmp_path, {"cases": "cases.jsonl", "subject": subject, "graders": ["exact"]},
                env={"P20S_TEAM": "blue", "P20S_TOKEN": "tok-0123456789abcdef"})
    assert done.returncode in (0, 2), done.stderr
    (attempt,) = _attempts(tmp_path)
    assert attempt["output"]["text"] == "team=blue-x token=***"
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert "tok-0123456789abcdef" not in path.read_text(encoding="utf-8", errors="replace"), path


def test_an_unset_var_in_a_commands_env_is_refused_before_anything_runs(tmp_path):
    _cases(tmp_path)
    (tmp_path / "show.sh").write_text("#!/bin/sh\necho hi\n")
    (tmp_path / "show.sh").chmod(0o755)
    subject = {"type": "command", "argv": ["./show.sh"], "env": {"TEAM": "${P20S_SURELY_UNSET}"}}
    environ = {k: v for k, v in os.environ.items() if k != "P20S_SURELY_UNSET"}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({"name": "s", "cases": "cases.jsonl", "subject": subject,
                                                          "graders": ["exact"], "output_dir": "out"}))
    done = run_cli(["run", "suite.yaml", "--no-progress"], tmp_path, {**environ, "SCOREBOARD_STORE": "none"})
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "P20S_SURELY_UNSET" in line and "env.TEAM" in line and "suite.yaml" in line
    assert not (tmp_path / "out").exists()


def test_a_python_subject_raising_keyboardinterrupt_or_generatorexit_is_its_attempts_error(tmp_path):
    # A KeyboardInterrupt in the function ended `scoreboard run` with "interrupted" (exit 130)
    # and no report; raised in an async function it ended the user loop's thread and the run
    # waited forever; a GeneratorExit from a threaded one ended the run with a traceback.
    _cases(tmp_path, 2)
    (tmp_path / "user.py").write_text(
        "def kb(text):\n    raise KeyboardInterrupt('mine')\n\n"
        "async def akb(text):\n    raise KeyboardInterrupt('amine')\n\n"
        "async def aexit(text):\n    raise SystemExit(7)\n\n"
        "def gexit(text):\n    raise GeneratorExit('g')\n")
    variants = {"kb": {"subject": "python:user:kb"},
                "kb-thread": {"subject": {"type": "python", "function": "user:kb", "thread": True}},
                "akb": {"subject": "python:user:akb"},
                "aexit": {"subject": "python:user:aexit"},
                "gexit": {"subject": "python:user:gexit"},
                "gexit-thread": {"subject": {"type": "python", "function": "user:gexit", "thread": True}}}
    done = _run(tmp_path, {"cases": "cases.jsonl", "variants": variants, "graders": ["exact"]}, timeout=90)
    assert done.returncode == 2 and "Traceback" not in done.stderr, (done.stdout, done.stderr)
    errors = {}
    for attempt in _attempts(tmp_path):
        assert attempt["status"] == "error"
        errors.setdefault(attempt["variant"], set()).add(attempt["error"])
    assert errors == {"kb": {"KeyboardInterrupt raised by the subject: mine"},
                      "kb-thread": {"KeyboardInterrupt raised by the subject: mine"},
                      "akb": {"KeyboardInterrupt raised by the subject: amine"},
                      "aexit": {"SystemExit raised by the subject: 7"},
                      "gexit": {"GeneratorExit raised by the subject: g"},
                      "gexit-thread": {"GeneratorExit raised by the subject: g"}}


def test_threads_user_code_leaves_running_do_not_hold_up_the_end_of_the_run(tmp_path):
    # A python subject that starts a (non-daemon) poller thread and returns: the report was
    # written, then `scoreboard run` never exited, the interpreter waiting for that thread.
    _cases(tmp_path, 2)
    (tmp_path / "user.py").write_text(
        "import threading\n\n"
        "def answer(text):\n"
        "    threading.Thread(target=threading.Event().wait, name='poller').start()\n"
        "    return text\n")
    try:
        done = _run(tmp_path, {"cases": "cases.jsonl", "subject": "python:user:answer", "graders": ["exact"]},
                    timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("scoreboard run did not exit: it waited for the subject's threads") from None
    assert done.returncode == 0, done.stderr
    assert "not waiting for 2 thread(s) that user code left running (poller)" in done.stderr
    assert {a["status"] for a in _attempts(tmp_path)} == {"passed"}
    assert "json: out/s/" in done.stdout


def test_a_subject_module_named_like_one_scoreboard_uses_is_loaded_without_replacing_it(tmp_path):
    # `python:json:answer` (a json.py in the suite's folder) replaced the standard library's json
    # in sys.modules: the exact grader then raised "module 'json' has no attribute 'dumps'"; a
    # `scoreboard.py` of the user's stopped the run: "internal error: ModuleNotFoundError: No
    # module named 'scoreboard.suite'; 'scoreboard' is not a package" (exit 2).
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f'say "{i}"\n',
                                                              "expected": f'say "{i}"\n'}) + "\n" for i in range(3)))
    for name in ("json", "scoreboard"):
        (tmp_path / f"{name}.py").write_text("def answer(text):\n    return text\n")
    variants = {"json": {"subject": "python:json:answer"}, "scoreboard": {"subject": "python:scoreboard:answer"}}
    done = _run(tmp_path, {"cases": "cases.jsonl", "variants": variants, "graders": ["exact"],
                           "formats": ["json", "md", "html"]})
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert {(a["variant"], a["status"]) for a in _attempts(tmp_path)} == {("json", "passed"), ("scoreboard", "passed")}


def test_a_subject_package_named_like_one_scoreboard_uses_is_a_one_line_error(tmp_path):
    _cases(tmp_path)
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "__init__.py").write_text("def answer(text):\n    return text\n")
    done = _run(tmp_path, {"cases": "cases.jsonl", "subject": "python:json:answer", "graders": ["exact"]})
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "suite.yaml" in line and "subject.function" in line and "has the name of a module scoreboard uses" in line


def test_a_command_that_exits_leaving_a_child_holding_its_unread_stdin_answers_at_once(tmp_path):
    # The program printed its answer and exited without reading its (large) input; a child it
    # left behind held stdin open and never read it: scoreboard kept writing the input, the
    # attempt waited for the timeout and its answer was lost ("timeout after 30000 ms").
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "big", "input": "x" * 2_000_000,
                                                      "expected": "answer\n"}) + "\n")
    script = tmp_path / "extract.py"
    script.write_text(f"#!{sys.executable}\n"
                      "import os, sys, time\n"
                      "if os.fork() == 0:\n"
                      "    devnull = os.open(os.devnull, os.O_WRONLY)\n"
                      "    os.dup2(devnull, 1)\n"
                      "    time.sleep(120)\n"
                      "    os._exit(0)\n"
                      "print('answer', flush=True)\n")
    script.chmod(0o755)
    done = _cli(tmp_path, {"cases": "cases.jsonl", "subject": "command:./extract.py", "graders": ["exact"],
                           "timeout_ms": 30000, "limits": {"max_input_bytes": 4_000_000}})
    assert done.returncode == 0, (done.stdout, done.stderr)
    (attempt,) = _attempts(tmp_path)
    assert attempt["status"] == "passed" and attempt["output"]["text"] == "answer\n", attempt


def test_an_object_with_an_async_call_and_a_function_returning_a_coroutine_are_awaited(tmp_path):
    # An agent class's instance (`async def __call__`) and a sync wrapper returning its
    # coroutine were each "subject returned coroutine", with "coroutine ... was never awaited"
    # warnings on stderr.
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c", "input": "x", "expected": "got x"}) + "\n")
    (tmp_path / "agents.py").write_text(
        "import asyncio\n\n"
        "class Agent:\n"
        "    async def __call__(self, text, skill, run, params):\n"
        "        await asyncio.sleep(0)\n"
        "        return params['prefix'] + text\n\n"
        "agent = Agent()\n\n"
        "async def _inner(text):\n    return 'got ' + text\n\n"
        "def wrapper(text):\n    return _inner(text)\n")
    variants = {"obj": {"subject": "python:agents:agent", "params": {"prefix": "got "}},
                "obj-thread": {"subject": {"type": "python", "function": "agents:agent", "thread": True},
                               "params": {"prefix": "got "}},
                "wrap": {"subject": "python:agents:wrapper"}}
    done = _cli(tmp_path, {"cases": "cases.jsonl", "variants": variants, "graders": ["exact"]})
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "never awaited" not in done.stderr
    assert {(a["variant"], a["status"], a["output"]["text"]) for a in _attempts(tmp_path)} == {
        ("obj", "passed", "got x"), ("obj-thread", "passed", "got x"), ("wrap", "passed", "got x")}


def test_a_commands_env_value_that_is_not_text_is_refused_naming_it(tmp_path):
    # `env: {VERBOSE: true, EMPTY: , RATE: 1.50}` reached the program as "True", "None" and "1.5"
    _cases(tmp_path)
    (tmp_path / "show.sh").write_text('#!/bin/sh\nprintf "%s|%s" "$VERBOSE" "$PORT"\n')
    (tmp_path / "show.sh").chmod(0o755)
    for env, field, shown in (({"VERBOSE": True}, "VERBOSE", "a bool (true)"), ({"EMPTY": None}, "EMPTY", "an empty value"),
                              ({"RATE": 1.5}, "RATE", "a float (1.5)"), ({"L": [1]}, "L", "a list ([1])")):
        done = _cli(tmp_path, {"cases": "cases.jsonl", "graders": ["exact"],
                               "subject": {"type": "command", "argv": ["./show.sh"], "env": env}})
        assert done.returncode == 1, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert f"subject.env.{field}" in line and shown in line and "quote it" in line, line
    done = _cli(tmp_path, {"cases": "cases.jsonl", "graders": ["exact"],
                           "subject": {"type": "command", "argv": ["./show.sh"], "env": {"VERBOSE": "true", "PORT": 8080}}})
    assert done.returncode in (0, 2), done.stderr
    assert _attempts(tmp_path)[0]["output"]["text"] == "true|8080"


def test_a_python_subject_may_name_an_attribute_path_as_an_entry_point_does(tmp_path):
    # `pipeline:Extractor.run` / `pipeline:extractor.run` were "'pipeline' has no function ..."
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c", "input": "x", "expected": "x!"}) + "\n")
    (tmp_path / "pipeline.py").write_text(
        "class Extractor:\n"
        "    suffix = '!'\n"
        "    @classmethod\n"
        "    def run(cls, text):\n        return text + cls.suffix\n"
        "    def answer(self, text):\n        return text + self.suffix\n\n"
        "extractor = Extractor()\n")
    variants = {"cm": {"subject": "python:pipeline:Extractor.run"},
                "bound": {"subject": "python:pipeline:extractor.answer"}}
    done = _cli(tmp_path, {"cases": "cases.jsonl", "variants": variants, "graders": ["exact"]})
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert {(a["variant"], a["status"]) for a in _attempts(tmp_path)} == {("cm", "passed"), ("bound", "passed")}
    done = _cli(tmp_path, {"cases": "cases.jsonl", "subject": "python:pipeline:Extractor.nope", "graders": ["exact"]})
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "subject.function" in line and "pipeline.Extractor has no attribute 'nope'" in line, line


def test_numpy_values_a_python_pipeline_returns_are_the_numbers_and_lists_they_hold(tmp_path):
    # {"total": np.int64(3)} was "subject returned a value that is not JSON: Object of type int64
    # is not JSON serializable"; an np.array answer "subject returned ndarray"
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c", "input": "x", "expected": "x"}) + "\n")
    (tmp_path / "pipeline.py").write_text(
        "import numpy as np\n\n"
        "def fields(text):\n"
        "    return {'total': np.int64(3), 'rate': np.float32(0.5), 'ok': np.bool_(True), 'rows': np.arange(2)}\n\n"
        "def matrix(text):\n    return np.array([[1, 2], [3, 4]])\n\n"
        "def count(text):\n    return np.int64(7)\n\n"
        "def odd(text):\n    return {'when': object()}\n")
    variants = {name: {"subject": f"python:pipeline:{name}"} for name in ("fields", "matrix", "count", "odd")}
    done = _cli(tmp_path, {"cases": "cases.jsonl", "variants": variants, "graders": ["exact"]})
    assert done.returncode == 2, (done.stdout, done.stderr)
    got = {a["variant"]: a for a in _attempts(tmp_path)}
    assert got["fields"]["output"]["json"] == {"total": 3, "rate": 0.5, "ok": True, "rows": [0, 1]}
    assert got["matrix"]["output"]["json"] == [[1, 2], [3, 4]]
    assert got["count"]["output"]["json"] == 7 and got["count"]["output"]["text"] == "7"
    assert got["odd"]["status"] == "error" and "object is not JSON serializable" in got["odd"]["error"]
