"""Agent tasks probed like a hostile user would: checks that hang, exit the interpreter or leave
processes behind, fixtures that escape their group or trickle their audit, task folders that
are links or hold a million folders, canaries hidden where a bounded scan would not look, and
agent exports read with the wrong --from."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scoreboard.errors import ConfigError
from scoreboard.tasks import canaries
from scoreboard.tasks import fixture as fixture_mod
from scoreboard.tasks.checks import CheckContext, run_checks
from scoreboard.tasks.fixture import Fixture, FixtureError
from scoreboard.tasks.load import MAX_TASK_FILES, load_task_folders
from scoreboard.tasks.spec import Canary, Check, Environment

PY = sys.executable


def alive(pid: int) -> bool:
    """A live (not zombie) process with this id."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


def gone(pid: int, within_s: float = 10.0) -> bool:
    """The process ends within `within_s`: a SIGKILL is delivered at once, but on a loaded machine
    the process may still show running for a moment before it dies."""
    import time

    deadline = time.monotonic() + within_s
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def checks_now(checks, folder: Path, tmp_path: Path) -> dict:
    root = tmp_path / "attempt"
    root.mkdir(exist_ok=True)
    files = {"output": root / "output.txt", "audit": root / "audit.json"}
    files["output"].write_text("done")
    files["audit"].write_text("null")
    ctx = CheckContext(workspace=tmp_path, fixture_url=None, mode="ordinary", output="done",
                       tool_calls=[{"name": "Bash", "args": {"command": "ls"}}], audit={"requests": []})
    got = asyncio.run(run_checks(checks, folder, ctx, files))
    return {r["name"]: (r["passed"], r["reason"]) for r in got}


def minimal_task(folder: Path, task_id: str = "t1", checks: str = '[{name: done, run: "true"}]') -> Path:
    (folder / "workspace").mkdir(parents=True)
    (folder / "checks").mkdir()
    (folder / "task.yaml").write_text(f"id: {json.dumps(task_id)}\ninstruction: do it\nchecks: {checks}\n")
    return folder


# -- checks ----------------------------------------------------------------------------------

def test_python_checks_that_exit_hang_or_are_interrupted_are_not_assessed(tmp_path):
    folder = tmp_path / "task"
    (folder / "checks").mkdir(parents=True)
    (folder / "checks" / "c.py").write_text(textwrap.dedent("""
        import os, sys, threading, time
        def ok(ctx):
            return (ctx.output == "done" and ctx.tool_calls[0]["name"] == "Bash"
                    and ctx.workspace.is_dir(), f"read {ctx.mode}")
        def leaves_a_thread(ctx):
            threading.Thread(target=time.sleep, args=(300,)).start()
            return {"passed": False, "reason": "said no"}
        def exits(ctx):
            sys.exit(3)
        def interrupted(ctx):
            raise KeyboardInterrupt
        def hard_exit(ctx):
            os._exit(0)
        def hangs(ctx):
            while True:
                time.sleep(0.05)
    """))
    names = ["ok", "leaves_a_thread", "exits", "interrupted", "hard_exit", "hangs"]
    checks = [Check(name=n, python=f"checks/c.py:{n}", timeout=1 if n == "hangs" else 60) for n in names]
    got = checks_now(checks, folder, tmp_path)
    assert got["ok"] == (True, "read ordinary")
    assert got["leaves_a_thread"] == (False, "said no")
    assert got["exits"] == (None, "the check raised SystemExit: 3")  # not the run's exit
    assert got["interrupted"][0] is None and "KeyboardInterrupt" in got["interrupted"][1]
    assert got["hard_exit"][0] is None and "without a verdict" in got["hard_exit"][1]
    assert got["hangs"] == (None, "the check timed out after 1 s")


def test_a_run_whose_python_check_spins_and_exits_still_ends_with_its_report(tmp_path):
    suite_dir = tmp_path / "s"
    task = minimal_task(suite_dir / "tasks" / "t1", checks='[{name: spins, python: "checks/c.py:spin", timeout: 1}, '
                                                         '{name: quits, python: "checks/c.py:quit"}]')
    (task / "checks" / "c.py").write_text("import sys\ndef spin(ctx):\n    while True: pass\n"
                                          "def quit(ctx):\n    sys.exit(0)\n")
    (suite_dir / "suite.yaml").write_text("name: p\ncases: tasks\nvariants:\n  a:\n"
                                          "    subject: {type: command, argv: [python3, -c, 'print(1)']}\n")
    ran = subprocess.run([PY, "-m", "scoreboard", "run", "suite.yaml", "--output-dir", "out"], cwd=suite_dir,
                         check=False, capture_output=True, text=True, timeout=300)  # a guard against a hang, not a timing
    assert "completed" in ran.stdout, ran.stderr  # the run went on: neither hung nor exited with the check
    (report,) = (suite_dir / "out" / "p").glob("*.json")
    record = json.loads(report.read_text())
    assert record["run"]["status"] == "completed"
    grades = {g["grader"]: g for g in record["attempts"][0]["grades"]}
    assert grades["task-check:spins"]["passed"] is None and "timed out" in grades["task-check:spins"]["reason"]
    assert grades["task-check:quits"]["passed"] is None and "SystemExit" in grades["task-check:quits"]["reason"]


def test_a_command_check_whose_child_leaves_its_group_keeps_its_verdict_and_the_child_is_killed(tmp_path):
    folder = tmp_path / "task"
    folder.mkdir()
    leaver = ("import subprocess, sys; "
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], start_new_session=True); "
              "open('child.pid', 'w').write(str(p.pid)); print('state is right')")
    got = checks_now([Check(name="leaves", run=[PY, "-c", leaver], timeout=120)], folder, tmp_path)
    assert got["leaves"] == (True, "state is right")  # its exit decides, not a pipe its child holds
    assert gone(int((folder / "child.pid").read_text()))


def test_a_child_that_escapes_group_and_tag_does_not_hang_the_check(tmp_path):
    folder = tmp_path / "task"
    folder.mkdir()
    leaver = ("import os, subprocess, sys; env = {k: v for k, v in os.environ.items() if k != 'SCOREBOARD_PROC_TAG'}; "
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], start_new_session=True, "
              "env=env); open('child.pid', 'w').write(str(p.pid)); print('fine')")
    try:
        got = checks_now([Check(name="escapes", run=[PY, "-c", leaver], timeout=120)], folder, tmp_path)
        assert got["escapes"] == (True, "fine")
    finally:
        pid = int((folder / "child.pid").read_text())
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_check_printing_without_end_is_cut_at_its_timeout(tmp_path):
    folder = tmp_path / "task"
    folder.mkdir()
    got = checks_now([Check(name="floods", run=[PY, "-c", "import sys\nwhile True: sys.stdout.write('y' * 65536)"],
                            timeout=1)], folder, tmp_path)
    assert got["floods"] == (None, "the check timed out after 1 s")


# -- fixtures --------------------------------------------------------------------------------

def test_a_fixture_that_starts_a_daemon_outside_its_group_is_stopped_whole(tmp_path):
    (tmp_path / "fx.py").write_text(textwrap.dedent("""
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True,
                             stdout=subprocess.DEVNULL)
        open("daemon.pid", "w").write(str(p.pid))
        print("ready", flush=True)
        time.sleep(300)
    """))
    spec = Environment(command=[PY, "fx.py"], ready={"line": "^ready"})

    async def go():
        fixture = Fixture(spec, tmp_path, "ordinary", {})
        await fixture.start(dict(os.environ))
        fixture.stop()

    asyncio.run(go())
    assert gone(int((tmp_path / "daemon.pid").read_text()))


def test_a_fixture_audit_that_trickles_is_an_error_not_a_hang(tmp_path, monkeypatch):
    monkeypatch.setattr(fixture_mod, "AUDIT_TIMEOUT_S", 1.0)
    (tmp_path / "fx.py").write_text(textwrap.dedent("""
        import http.server, os, time
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                if self.path == "/health":
                    self.wfile.write(b" " * 100000)
                    return
                for _ in range(100000):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.2)
            def log_message(self, *args):
                pass
        http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
    """))
    spec = Environment(command=[PY, "fx.py"], ready={"url": "/health"}, audit="/audit")

    async def go():
        fixture = Fixture(spec, tmp_path, "ordinary", {})
        await fixture.start(dict(os.environ))
        try:
            with pytest.raises(FixtureError, match="did not answer within 1 s"):
                await fixture.audit()
        finally:
            fixture.stop()

    asyncio.run(go())


# -- task folders ----------------------------------------------------------------------------

def test_a_linked_task_folder_is_an_error_not_left_out(tmp_path):
    minimal_task(tmp_path / "tasks" / "t1")
    minimal_task(tmp_path / "elsewhere" / "t2", task_id="t2")
    (tmp_path / "tasks" / "t2").symlink_to(tmp_path / "elsewhere" / "t2")
    with pytest.raises(ConfigError) as caught:
        load_task_folders(tmp_path / "tasks")
    assert "t2/ is a symbolic link" in str(caught.value) and "tasks/t2/task.yaml" in str(caught.value)


def test_a_task_folder_of_countless_empty_folders_is_refused(tmp_path):
    task = minimal_task(tmp_path / "tasks" / "t1")
    for i in range(MAX_TASK_FILES + 1):
        (task / "workspace" / f"d{i}").mkdir()
    with pytest.raises(ConfigError, match=f"case 't1', field 'workspace/': the task folder holds more than "
                                          f"{MAX_TASK_FILES} entries"):
        load_task_folders(tmp_path / "tasks")


@pytest.mark.parametrize("task_id, words", [("a\nb", "control characters"), ("  ", "nonempty"),
                                            ("x\x1b[31m", "control characters")])
def test_a_task_id_that_would_forge_report_lines_is_one_error_line_and_exit_1(tmp_path, task_id, words):
    minimal_task(tmp_path / "tasks" / "t1", task_id=task_id)
    (tmp_path / "suite.yaml").write_text("name: p\ncases: tasks\nvariants:\n  a: {subject: {type: command, "
                                         "argv: [python3, -c, 'print(1)']}}\n")
    ran = subprocess.run([PY, "-m", "scoreboard", "run", "suite.yaml", "--output-dir", "out"], cwd=tmp_path,
                         check=False, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1
    (line,) = ran.stderr.strip().splitlines()
    assert "task.yaml" in line and "field 'id'" in line and words in line
    assert not (tmp_path / "out").exists()


def test_unicode_task_ids_and_folder_names_run(tmp_path):
    minimal_task(tmp_path / "tasks" / "café ☃", task_id="café/☃ 1")
    (case,) = load_task_folders(tmp_path / "tasks")
    assert case.id == "café/☃ 1"


# -- canaries --------------------------------------------------------------------------------

def plant_one(tmp_path: Path) -> tuple[dict, dict]:
    spec = [Canary(name="note", file="notes/p.md")]
    values = canaries.new_values(spec)
    canaries.plant(spec, values, tmp_path)
    return values, canaries.snapshot(tmp_path)


def test_a_canary_appended_past_the_first_megabyte_of_a_file_is_found(tmp_path):
    (tmp_path / "big.txt").write_bytes(b"x" * (3 << 20))
    values, before = plant_one(tmp_path)
    with open(tmp_path / "big.txt", "ab") as handle:
        handle.write(values["note"].encode())
    written = canaries.written_files(tmp_path, before, ["scratch/**"], [])
    assert ("workspace/big.txt", tmp_path / "big.txt") in written
    hits = canaries.scan(values, output=None, tool_calls=[], audit=None, files=written)
    assert {"canary": "note", "where": "file:workspace/big.txt"} in hits


def test_a_canary_straddling_two_read_chunks_is_found(tmp_path):
    values, before = plant_one(tmp_path)
    value = values["note"].encode()
    (tmp_path / "leak.bin").write_bytes(b"y" * ((1 << 20) - 5) + value)
    hits = canaries.scan(values, output=None, tool_calls=[], audit=None,
                         files=canaries.written_files(tmp_path, before, ["scratch/**"], []))
    assert {"canary": "note", "where": "file:workspace/leak.bin"} in hits


def test_a_canary_behind_thousands_of_decoy_files_is_found(tmp_path):
    values, before = plant_one(tmp_path)
    (tmp_path / "a").mkdir()
    for i in range(2500):
        (tmp_path / "a" / f"{i:05}").write_text("x")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.txt").write_text(values["note"])
    written = canaries.written_files(tmp_path, before, ["scratch/**"], [])
    hits = canaries.scan(values, output=None, tool_calls=[], audit=None, files=written)
    assert {"canary": "note", "where": "file:workspace/b/z.txt"} in hits


def test_what_the_canary_scan_could_not_look_at_is_said(tmp_path, monkeypatch):
    values, before = plant_one(tmp_path)
    monkeypatch.setattr(canaries, "SCAN_MAX_FILES", 5)
    for i in range(10):
        (tmp_path / f"f{i}.txt").write_text("x")
    skipped: list[str] = []
    canaries.written_files(tmp_path, before, ["scratch/**"], [], skipped)
    assert skipped and "not looked at" in skipped[0]
    monkeypatch.setattr(canaries, "SCAN_MAX_BYTES", 4)
    skipped = []
    canaries.scan(values, output=None, tool_calls=[], audit=None, files=[("workspace/f0.txt", tmp_path / "notes" / "p.md")],
                  skipped=skipped)
    assert skipped and "not read" in skipped[0]


# -- agent exports ---------------------------------------------------------------------------

def test_codex_tokens_are_unknown_when_any_turn_did_not_count_them():
    from scoreboard.agents.exports import parse_codex

    events = [{"type": "turn.started"}, {"type": "turn.completed", "usage": {}},
              {"type": "turn.started"}, {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 2}},
              {"type": "item.completed", "item": {"id": "1", "type": "agent_message", "text": "hi"}}]
    run = parse_codex(events, "r")
    assert run.status == "completed" and run.input_tokens is None and run.output_tokens is None
    counted = parse_codex([events[0], events[3], events[3], events[4]], "r")
    assert (counted.input_tokens, counted.output_tokens) == (10, 4)
    half = parse_codex([events[3], {"type": "turn.completed", "usage": {"input_tokens": 1}}], "r")
    assert (half.input_tokens, half.output_tokens) == (6, None)


@pytest.mark.parametrize("canaries_yaml, words", [
    ("[{name: c, file: readme.md/key}]", "'readme.md/key' lies under the workspace file 'readme.md'"),
    ("[{name: c, file: docs}]", "'docs' is a folder of the workspace"),
    ("[{name: c, file: k.txt}, {name: d, file: ./k.txt}]", "'./k.txt' is also the file of canary 'c'"),
])
def test_a_canary_that_cannot_be_planted_is_a_load_error_not_an_error_per_attempt(tmp_path, canaries_yaml, words):
    task = minimal_task(tmp_path / "tasks" / "t1")
    (task / "workspace" / "readme.md").write_text("hi")
    (task / "workspace" / "docs").mkdir()
    (task / "workspace" / "docs" / "a.md").write_text("a")
    (task / "task.yaml").write_text((task / "task.yaml").read_text() + f"canaries: {canaries_yaml}\n")
    with pytest.raises(ConfigError) as caught:
        load_task_folders(tmp_path / "tasks")
    assert words in str(caught.value) and "canaries." in str(caught.value)
