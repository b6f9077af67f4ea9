"""The history store written by a second process that follows the attempt log.

A large run's rows cost the run's own process about a tenth of its CPU (building the rows and
waiting on the database, on the event loop that also sends the requests). The attempt log
already holds every finished attempt, one line each, written before anything else happens; so
for a large run the parent starts this module as a child process and sends it the run's start
and its cases; the child writes them, opens the same store, reads the log as it grows and
writes the attempts in batches. As soon as the JSON report is written the parent sends the
report's head; the child reads the log up to the end the parent names, writes the run's end
and exits. The parent checks the child's word (its exit code): a child that failed or died
leaves the parent to store the run from its report file, as it does for a resumed run.

Protocol on the child's stdin: one JSON line {spec, key, meta (run.json's, the plan without
its cases), planned, tags, batches, log, offset}, then `batches` lines {cases: [...]} (at most
CASE_BATCH cases each: the plan is never one message), later one JSON line {end, head (without
the plan's cases), planned, paths}. End of input without the last line (the parent died): the
child writes what it has read and exits; the run stays `running` in the store until `store
import` or a `--resume` stores it again.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from ..jsonio import dumps_line, loads
from .history import HistoryStore
from .rows import planned_attempts, run_key

POLL_S = 0.05
GATHER_S = 0.01
_READ = 1 << 20
#: a run of at least this many planned attempts has its rows written by a child process; a
#: smaller one writes them itself (the child's start-up would cost more than it saves)
FOLLOW_FROM = 2000
#: the plan's cases go to the child this many to a line
CASE_BATCH = 1000
#: the child's command line
CHILD = [sys.executable, "-m", "scoreboard.store.follow"]


class FollowedHistoryStore(HistoryStore):
    """A HistoryStore whose rows, for a large run, a child process writes from the attempt log."""

    follow_from = FOLLOW_FROM

    def __init__(self, spec: str | Path, *, tags=()):
        super().__init__(spec, tags=tags)
        self.spec = str(spec)
        self._child: subprocess.Popen | None = None
        self._log: Path | None = None
        self._planned = 0
        self._opening: threading.Thread | None = None
        self._ended = False  # the child was told the run's end

    def begin_following(self, meta: dict, log: Path) -> None:
        """A run starts. A small one's row and cases are written here; a large one's by a child,
        which then writes its attempts as it follows `log`."""
        plan = meta.get("plan") or {}
        self._planned = planned_attempts(plan)
        if self._planned < self.follow_from or self.failed:
            self.begin(meta)
            return
        self._log = Path(log)
        offset = self._log.stat().st_size if self._log.exists() else 0
        try:
            self._child = subprocess.Popen(CHILD, stdin=subprocess.PIPE)
        except OSError as exc:  # no child: this process writes the rows itself
            print(f"scoreboard: warning: the history store's writer did not start ({exc}); this process "
                  "writes the rows", file=sys.stderr)
            self._child = None
            self.begin(meta)
            return
        self.key = run_key(meta["suite"], meta["run_id"], meta.get("started_at"), meta.get("uid"))  # what begin sets
        cases = plan.get("cases") or ()
        opening = {"spec": self.spec, "key": self.key, "planned": self._planned, "tags": list(self.tags),
                   "meta": {**meta, "plan": {k: v for k, v in plan.items() if k != "cases"}},
                   "batches": -(-len(cases) // CASE_BATCH), "log": str(self._log), "offset": offset}
        # Written by a thread: a pipe holds 64 KB, and the child reads only once it has started
        # (about 0.2 s), which the run need not wait for.
        self._opening = threading.Thread(target=self._send_opening, args=(opening, cases, self._child), daemon=True)
        self._opening.start()

    def attempt(self, record: dict) -> None:
        if self._child is None:
            super().attempt(record)

    def report_written(self, head: dict, json_path: Path) -> None:
        """The JSON report is complete (the attempt log is too): the child is told the end now,
        and finishes the run's rows while this process renders the other formats."""
        if self._child is not None and not self._ended:
            self._end(self._child, head, {"json": json_path})

    def _end(self, child: subprocess.Popen, head: dict, paths: dict[str, Path]) -> None:
        self._ended = True
        self._opened()
        end = self._log.stat().st_size if self._log is not None and self._log.exists() else 0
        # the head without the plan's cases (their rows are written)
        slim = {**head, "plan": {k: v for k, v in (head.get("plan") or {}).items() if k != "cases"}}
        self._send_quietly({"end": end, "head": slim, "planned": self._planned,
                            "paths": {k: str(v) for k, v in paths.items()}}, child)
        with contextlib.suppress(OSError):
            child.stdin.close()

    def finish(self, head: dict, paths: dict[str, Path]) -> None:
        child, self._child = self._child, None
        if child is None:
            super().finish(head, paths)
            return
        if not self._ended:
            self._end(child, head, paths)
        code = child.wait()
        if code == 0 or self.key is None:
            return
        # The child failed or died: the report is the record; store the run from it.
        print("scoreboard: warning: the history store's writer stopped early; storing the run from its "
              "report", file=sys.stderr)
        self.failed = None
        self._guard(lambda: self.store_report(Path(paths["json"]), source="live", replace=True))
        if self.failed:
            print(f"scoreboard: warning: the run was not fully stored in {self.location}; its report is "
                  f"the record: `scoreboard store import {paths.get('json')}` stores it again", file=sys.stderr)

    def close(self) -> None:
        if self._child is not None:  # the run never reached its end: the child keeps what it read
            if not self._ended:
                self._opened()
                with contextlib.suppress(OSError):
                    self._child.stdin.close()
            self._child.wait()
            self._child = None
        super().close()

    def _opened(self) -> None:
        if self._opening is not None:
            self._opening.join()
            self._opening = None

    @staticmethod
    def _send_opening(opening: dict, cases, child: subprocess.Popen) -> None:
        """The opening line, then the plan's cases CASE_BATCH at a time (made as they are sent)."""
        try:
            child.stdin.write(dumps_line(opening))
            for start in range(0, len(cases), CASE_BATCH):
                child.stdin.write(dumps_line({"cases": [cases[i] for i in range(start, min(start + CASE_BATCH,
                                                                                           len(cases)))]}))
            child.stdin.flush()
        except OSError:  # the child died: its exit code says so at the end
            pass

    @staticmethod
    def _send_quietly(message: dict, child: subprocess.Popen) -> None:
        try:
            child.stdin.write(dumps_line(message))
            child.stdin.flush()
        except OSError:  # the child died: its exit code says so at the end
            pass


class LogFollower:
    """Reads complete lines appended to a log from an offset on; feeds attempt records to a store."""

    def __init__(self, store: HistoryStore, log: Path, offset: int):
        self.store, self.log, self.offset = store, log, offset
        self._tail = b""

    def read(self, end: int | None = None) -> int:
        """Feed every complete line now in the log (up to `end`); returns the bytes read."""
        read = 0
        try:
            handle = open(self.log, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            return 0
        with handle:
            handle.seek(self.offset)
            while end is None or self.offset < end:
                want = _READ if end is None else min(_READ, end - self.offset)
                block = handle.read(want)
                if not block:
                    break
                self.offset += len(block)
                read += len(block)
                data = self._tail + block
                cut = data.rfind(b"\n")
                if cut < 0:
                    self._tail = data
                    continue
                self._tail = data[cut + 1:]
                for line in data[:cut].split(b"\n"):
                    self._line(line)
        return read

    def _line(self, line: bytes) -> None:
        # Two lines in three are the ledger's request records, which the log writes (compact,
        # keys in order) as {"kind":...: passed over unparsed.
        if not line.strip() or line.startswith(b'{"kind":'):
            return
        record = loads(line)
        # Request and batch records (the ledger's) share the log; attempts have no `kind`.
        if isinstance(record, dict) and "kind" not in record and "case_id" in record and "status" in record:
            self.store.attempt(record)


def _cases(line: bytes) -> list[dict]:
    if not line:
        raise EOFError("the run's process ended before it sent the plan's cases")
    return loads(line)["cases"]


def serve(stdin=None) -> int:
    """The child's work (see the module docstring); 0 when the run's end was written."""
    stdin = stdin or sys.stdin.buffer
    first = stdin.readline()
    if not first:
        return 1
    opening = loads(first)
    store = HistoryStore(opening["spec"], tags=opening.get("tags") or ())
    try:
        batches = (_cases(stdin.readline()) for _ in range(int(opening["batches"])))
        store.begin_streamed(opening["meta"], batches, int(opening["planned"]))
        if store.failed or store.key != opening["key"]:
            return 1  # the parent stores the run from its report
        follower = LogFollower(store, Path(opening["log"]), int(opening["offset"]))
        commands: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: commands.put(stdin.readline()), daemon=True).start()
        while True:
            try:
                # After a read, a short pause lets lines gather (one read and one batch of
                # rows for many attempts, not a busy loop over each few).
                command = commands.get(timeout=POLL_S if not follower.read() else GATHER_S)
            except queue.Empty:
                continue
            if not command:  # the parent is gone: keep what was read
                follower.read()
                store._guard(store._flush)
                return 1
            end = loads(command)
            follower.read(int(end["end"]))
            paths = {k: Path(v) for k, v in end["paths"].items()}
            if store.key is not None and not store.failed:
                store._guard(store._finish, end["head"], paths, int(end["planned"]))
            return 1 if store.failed else 0
    finally:
        store.close()


#: the child's niceness: it writes behind the run, so the run's own process (and, on a shared
#: machine, the model server) come first for the CPU; it catches up while the reports render
NICE = 10


def main() -> int:
    # Ctrl+C reaches the whole process group: the parent stops its run and sends the end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):  # not on every platform
        os.nice(NICE)
    try:
        return serve()
    except KeyboardInterrupt:  # the parent's Ctrl+C reaches the whole process group
        return 1
    except Exception as exc:  # noqa: BLE001 - the parent stores the run from its report instead
        print(f"scoreboard: warning: the history store's writer failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
