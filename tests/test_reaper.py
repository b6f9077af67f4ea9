"""Nothing scoreboard starts outlives it when it is killed with SIGKILL (no exit handler runs):
a command subject's program (an agent CLI would go on calling its model), what that program
started and moved out of its group, and a task's fixture are killed by the watcher (reaper.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux /proc")

#: a program that records its pid, starts a grandchild that leaves its process group (setsid),
#: and sleeps
CHILD = textwrap.dedent("""\
    import os, subprocess, sys, time
    open(os.environ["PIDS"], "a").write(f"{os.getpid()}\\n")
    subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); "
                      "open(os.environ['PIDS'], 'a').write(f'{os.getpid()}\\\\n'); time.sleep(120)"])
    time.sleep(120)
""")


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a parent that does not reap it has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def processes():
    """(pid, parent pid, argv bytes) of every process /proc still shows."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            yield int(entry.name), ppid, cmdline


def watchers_of(pid: int) -> list[int]:
    return [child for child, ppid, cmdline in processes() if ppid == pid and b"reaper.py" in cmdline]


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def pids_in(path: Path, n: int) -> list[int]:
    wait_for(lambda: path.exists() and len(path.read_text().split()) >= n, 60, f"{n} pids in {path}")
    return [int(p) for p in path.read_text().split()]


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


def env_with(pids: Path) -> dict:
    env = dict(os.environ, PIDS=str(pids))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


def test_kill_9_of_a_run_kills_the_subject_program_and_what_left_its_group(tmp_path):
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "x", "expected": "y"}\n')
    (tmp_path / "suite.yaml").write_text("name: reap\ncases: cases.jsonl\n"
                                         f"subject: {{type: command, argv: [{sys.executable}, child.py]}}\n"
                                         "graders: [exact]\n")
    pids = tmp_path / "pids"
    run = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.yaml", "--no-progress"],
                           cwd=tmp_path, env=env_with(pids), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = []
    try:
        started = pids_in(pids, 2)
        # The run starts its watcher as it starts the program and tells it of the program's group
        # once it is up: on a loaded machine the program and its grandchild wrote their pids first.
        # Waited for in /proc (it shows there once it runs reaper.py), then a moment for the line
        # the run writes to it as its start returns, so that the kill tests the watcher, not the race.
        wait_for(lambda: watchers_of(run.pid), 15, "the run's watcher to start")
        time.sleep(0.2)
        watchers = watchers_of(run.pid)
        assert len(watchers) == 1, "one watcher for the run"
        assert all(alive(pid) for pid in started)
        run.kill()
        run.wait(timeout=30)
        wait_for(lambda: not any(alive(pid) for pid in started + watchers), 15,
                 "the subject, its escaped grandchild and the watcher to end")
    finally:
        run.kill()
        kill_all(started)


def test_kill_9_kills_a_tracked_fixture_group_and_its_tagged_descendants(tmp_path):
    """The path a task's fixture takes (tasks/procs.track_group): its group and, through its tag,
    a daemon it started outside the group."""
    pids = tmp_path / "pids"
    driver = textwrap.dedent(f"""\
        import os, subprocess, sys, time
        from scoreboard.tasks.procs import TAG_VAR, new_tag, track_group
        tag = new_tag()
        fixture = subprocess.Popen([sys.executable, "-c", {CHILD!r}], env={{**os.environ, TAG_VAR: tag}},
                                   start_new_session=True)
        track_group(fixture.pid, tag)
        print("tracked", flush=True)
        time.sleep(120)
    """)
    owner = subprocess.Popen([sys.executable, "-c", driver], env=env_with(pids), text=True, stdout=subprocess.PIPE)
    started = []
    try:
        started = pids_in(pids, 2)
        # killed once track_group has returned (the watcher told of the group), not as soon as the
        # watcher shows in /proc: on a loaded machine the owner was killed between starting its
        # watcher and writing to it (CI, once), and the watcher, told nothing, killed nothing
        assert owner.stdout.readline() == "tracked\n"
        assert len(watchers_of(owner.pid)) == 1
        owner.kill()
        owner.wait(timeout=30)
        wait_for(lambda: not any(alive(pid) for pid in started), 15, "the fixture and its daemon to end")
    finally:
        owner.kill()
        kill_all(started)


def test_the_watcher_exits_when_its_owner_ends(tmp_path):
    """The watcher lives as long as scoreboard: a normal end closes the pipe and it exits."""
    driver = textwrap.dedent("""\
        import subprocess, sys
        from scoreboard.reaper import unwatch, watch
        done = subprocess.Popen(["true"], start_new_session=True)
        watch(done.pid)
        done.wait()
        unwatch(done.pid)
        print("ready", flush=True)
        sys.stdin.read()  # until the test closes it
    """)
    owner = subprocess.Popen([sys.executable, "-c", driver], env=env_with(tmp_path / "pids"), text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert owner.stdout.readline() == "ready\n"
        wait_for(lambda: watchers_of(owner.pid), 10, "the watcher")
        watchers = watchers_of(owner.pid)
        assert len(watchers) == 1
        owner.stdin.close()
        assert owner.wait(timeout=30) == 0
        wait_for(lambda: not alive(watchers[0]), 10, "the watcher to exit after its owner")
    finally:
        owner.kill()


def test_a_watcher_that_was_killed_is_replaced_by_one_told_everything_still_listed(tmp_path):
    """Someone kills the watcher (the OOM killer, a `pkill python`): the next group scoreboard
    starts brings up a new watcher, which is told the groups listed before as well, so a kill -9
    of scoreboard afterwards still ends both."""
    driver = textwrap.dedent("""\
        import subprocess, sys, time
        from scoreboard.reaper import unwatch, watch
        def group():
            proc = subprocess.Popen(["sleep", "120"], start_new_session=True)
            watch(proc.pid)
            return proc
        first, gone = group(), group()
        gone.kill(); gone.wait(); unwatch(gone.pid)
        print(first.pid, flush=True)
        sys.stdin.readline()  # the test has killed the watcher
        print(group().pid, flush=True)
        time.sleep(120)
    """)
    owner = subprocess.Popen([sys.executable, "-c", driver], env=env_with(tmp_path / "pids"), text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    started = []
    try:
        started.append(int(owner.stdout.readline()))
        wait_for(lambda: watchers_of(owner.pid), 10, "the first watcher")
        (first_watcher,) = watchers_of(owner.pid)
        os.kill(first_watcher, signal.SIGKILL)
        wait_for(lambda: not alive(first_watcher), 10, "the first watcher to end")
        owner.stdin.write("go\n")
        owner.stdin.flush()
        started.append(int(owner.stdout.readline()))
        wait_for(lambda: watchers_of(owner.pid), 10, "the second watcher")
        assert len(watchers_of(owner.pid)) == 1
        assert all(alive(pid) for pid in started)
        owner.kill()
        owner.wait(timeout=30)
        wait_for(lambda: not any(alive(pid) for pid in started), 15,
                 "the group listed before the watcher was killed, and the one after, to end")
    finally:
        owner.kill()
        kill_all(started)


def test_a_sweep_right_after_a_start_finds_the_program_and_waits_on_none_that_is_settled():
    """Popen returns once the child's exec has begun, when its new environment may not be set up
    yet (/proc shows it empty for that moment): the sweep waits for such a process, never for a
    zombie, a process with arguments, or one whose environment is empty on purpose."""
    import secrets

    from scoreboard import reaper

    for _ in range(30):
        tag = secrets.token_hex(6)
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                                env={**os.environ, "SB_TEST_TAG": tag}, start_new_session=True)
        try:
            assert reaper.sweep(tag, var="SB_TEST_TAG") >= 1  # (a dying one may be signalled again)
        finally:
            proc.kill()
            proc.wait()
    zombie = subprocess.Popen(["true"])
    bare = subprocess.Popen(["sleep", "30"], env={})  # an empty environment, on purpose
    try:
        wait_for(lambda: open(f"/proc/{zombie.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z", 10,
                 "the child to end (a zombie until waited for)")
        wait_for(lambda: open(f"/proc/{bare.pid}/cmdline", "rb").read().startswith(b"sleep"), 10, "sleep to start")
        assert not reaper._mid_exec(str(zombie.pid)) and not reaper._mid_exec(str(bare.pid))
        assert not reaper._mid_exec(str(os.getpid()))
        started = time.monotonic()
        assert reaper.sweep("no-such-tag") == 0
        assert time.monotonic() - started < 0.5  # nothing settled was waited for
    finally:
        bare.kill()
        bare.wait()
        zombie.wait()
