"""One scoreboard run per suite per pytest session, shared by the suite's items.

The first item of a suite to run (in any process) runs every selected case of the suite at once,
through the one pipeline, and writes the reports as `scoreboard run` does. Under pytest-xdist
the workers share a folder the controller made: the first worker to reach the suite claims it
(an exclusive lock file) and runs it; the others wait for its result file and read the report.
So no case runs twice, and the gates are checked on one run of every selected case.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from ..jsonio import loads

#: how a run stopped by SIGINT or SIGTERM gives its stop reason (engine/signals.py)
INTERRUPTED_BY = "interrupted by "
#: how often a worker waiting for another's run looks for its result
POLL_S = 0.05


def suite_key(nodeid: str) -> str:
    """A file-name-safe key for a suite collector (the same in every xdist worker)."""
    return hashlib.sha256(nodeid.encode("utf-8")).hexdigest()[:24]


def run_suite(path: Path, flags: dict, selected: list[str] | None, argv: list[str]) -> dict:
    """Run the suite's selected cases (None: every case); what the items need to know of it.
    A bad suite or a run that cannot start is an `error` entry, not an exception."""
    from ..engine.pipeline import RunOptions, run
    from ..errors import ScoreboardError
    from ..record.annotations import case_lines, outcome_annotations
    from ..suite.load import load_suite

    run_flags = {**flags, "case": selected} if selected else dict(flags)
    try:
        suite = load_suite(path, run_flags)
        outcome = run(suite, RunOptions(argv=argv, progress=False, flags=run_flags, hold_report=False))
    except ScoreboardError as exc:
        return {"error": str(exc)}
    info = {"suite": suite.name, "exit_code": outcome.exit_code,
            "paths": {fmt: str(p) for fmt, p in outcome.paths.items()}}
    outcome.case_lines = case_lines(suite)
    annotations = outcome_annotations(outcome)  # under GitHub Actions only (none elsewhere)
    if annotations:
        info["annotations"] = annotations
    run_head = outcome.head.get("run") or {}
    reason = str(run_head.get("stop_reason") or "")
    if run_head.get("status") == "stopped" and reason.startswith(INTERRUPTED_BY):
        # the run took the session's Ctrl+C (or SIGTERM) for itself (engine/signals.py): it is
        # the session's too, which must end here, not go on to the next suite
        info["interrupted"] = reason
    return info


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Coordinator:
    """Hands out each suite's run result, running it in this process at most once, and (with
    a shared folder) at most once across the processes that share the folder."""

    def __init__(self, shared_dir: str | None):
        self.shared_dir = Path(shared_dir) if shared_dir else None
        self.results: dict[str, dict] = {}
        #: the runs this process made (for the terminal summary; workers send them home)
        self.ran: list[dict] = []

    def result(self, key: str, start: Callable[[], dict], label: str | None = None) -> dict:
        """The run of suite `key` (its file: `label`): made now by `start()`, or by another
        process earlier."""
        if key in self.results:
            return self.results[key]
        try:
            info = self._run(start) if self.shared_dir is None else self._shared(key, start)
        except BaseException as exc:
            # The test that started the run shows the traceback; the suite's other tests say
            # it did not run, instead of each starting it again. BaseException: pytest's own
            # outcomes (pytest-timeout's Failed, a skip or exit called by the subject) are not
            # Exceptions, and a suite must not run once more for each of its tests.
            failed = {"error": f"the run raised {type(exc).__name__}: {exc}",
                      **({"suite_file": label} if label else {})}
            self.results[key] = failed
            self.ran.append(failed)  # the terminal summary says it did not finish
            raise
        self.results[key] = info
        return info

    def _run(self, start: Callable[[], dict]) -> dict:
        info = start()
        self.ran.append(info)
        return info

    def _shared(self, key: str, start: Callable[[], dict]) -> dict:
        lock = self.shared_dir / f"{key}.lock"
        done = self.shared_dir / f"{key}.json"
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return wait_for(lock, done)
        with os.fdopen(fd, "w") as handle:
            handle.write(str(os.getpid()))
        try:
            info = self._run(start)
        except BaseException as exc:  # the waiting workers must learn it, then it goes on up
            publish(done, {"error": f"the run stopped: {type(exc).__name__}: {exc}"})
            raise
        publish(done, info)
        return info


def publish(done: Path, info: dict) -> None:
    """Write a run's result for the other workers (whole or not at all)."""
    tmp = done.with_suffix(".tmp")
    tmp.write_text(json.dumps(info), encoding="utf-8")
    os.replace(tmp, done)


def wait_for(lock: Path, done: Path) -> dict:
    """Another worker runs the suite: wait for its result while that worker lives."""
    while True:
        if done.exists():
            return json.loads(done.read_text(encoding="utf-8"))
        try:
            text = lock.read_text(encoding="utf-8").strip()
        except OSError:
            text = ""
        if text.isdigit() and not pid_alive(int(text)) and not done.exists():
            return {"error": f"the worker running this suite (pid {text}) ended before its run finished"}
        time.sleep(POLL_S)


def read_report(info: dict) -> dict:
    """The JSON report of a run."""
    return loads(Path(info["paths"]["json"]).read_bytes())


def attempts_by_case(report: dict) -> dict[str, list[dict]]:
    """Each case's attempts, in report order (every variant, every run)."""
    out: dict[str, list[dict]] = {}
    for attempt in report.get("attempts") or []:
        out.setdefault(attempt["case_id"], []).append(attempt)
    return out
