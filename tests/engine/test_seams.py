"""The engine's two seams: an Executor runs attempts and hands them back (in any order, from
anywhere); a Store is told of a run as it happens and lists and reads runs. The default
executor and store are real modules; another is one module more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoreboard.engine.attempt import AttemptRunner
from scoreboard.engine.executor import LocalExecutor, Work
from scoreboard.engine.executors import EXECUTORS, get_executor
from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.errors import ConfigError
from scoreboard.store.files import FileStore
from scoreboard.suite.load import load_suite

N = 12


class HoldingExecutor:
    """Runs every attempt, then hands them back in reverse: as a cluster might, out of order
    and only once they all came back."""

    name = "holding"

    async def execute(self, work: Work) -> None:
        runner = AttemptRunner(work.suite, work.state, timeout_s=work.timeout_s, ledger=work.ledger,
                               cache=work.cache, judge=work.judge)
        held = [await runner.attempt(ci, vi, r) for ci, vi, r in work.units]
        for record in reversed(held):
            work.finish(record)


class RecordingStore(FileStore):
    """A store that remembers what it was told (a history database would write it down)."""

    name = "recording"

    def __init__(self, root):
        super().__init__(root)
        self.events: list[tuple] = []

    def begin(self, meta):
        self.events.append(("begin", meta["run_id"]))

    def attempt(self, record):
        self.events.append(("attempt", record["case_id"], record["variant"], record["run"]))

    def finish(self, head, paths):
        self.events.append(("finish", head["run"]["status"], sorted(paths)))


def make_suite(folder: Path) -> Path:
    cases = [{"id": f"c{i:02d}", "input": f"q{i}", "expected": f"a{i}", "category": "odd" if i % 2 else "even"}
             for i in range(N)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    for name, wrong in (("one", {3, 5}), ("two", {5, 7, 8})):
        records = [{"case_id": f"c{i:02d}", "output": "nope" if i in wrong else f"a{i}", "latency_ms": 10 + i}
                   for i in range(N)]
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    suite = {"name": "seams", "cases": "cases.jsonl", "runs": 2, "output_dir": "out", "formats": ["json", "md"],
             "variants": {"one": {"subject": "recorded:one.jsonl"}, "two": {"subject": "recorded:two.jsonl"}}}
    (folder / "suite.json").write_text(json.dumps(suite))
    return folder / "suite.json"


def comparable(report: dict) -> dict:
    """The report without what only says when and how it ran."""
    run = {k: v for k, v in report["run"].items() if k not in ("id", "uid", "started_at", "finished_at", "executor")}
    return {**report, "run": run}


@pytest.fixture()
def holding():
    EXECUTORS["holding"] = HoldingExecutor
    yield
    EXECUTORS.pop("holding")


def test_another_executor_gives_the_same_report(tmp_path, holding, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite_path = make_suite(tmp_path)
    local = run(load_suite(suite_path), RunOptions(progress=False))
    other = run(load_suite(suite_path), RunOptions(progress=False, executor="holding"))
    assert local.report["run"]["executor"] == "local" and other.report["run"]["executor"] == "holding"
    assert comparable(other.report) == comparable(local.report)
    def markdown(outcome) -> str:  # without the run's id and its start and finish times
        text = outcome.paths["md"].read_text().replace(outcome.report["run"]["id"], "X")
        for key in ("started_at", "finished_at"):
            text = text.replace(outcome.report["run"][key], "T")
        return text

    assert markdown(other) == markdown(local)


def test_the_store_hears_of_every_attempt_and_lists_the_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite = load_suite(make_suite(tmp_path))
    store = RecordingStore(tmp_path / "out")
    outcome = run(suite, RunOptions(progress=False, store=store))
    kinds = [e[0] for e in store.events]
    assert kinds[0] == "begin" and kinds[-1] == "finish" and kinds.count("attempt") == N * 2 * 2
    assert store.events[-1] == ("finish", "completed", ["json", "md"])
    (entry,) = FileStore(tmp_path / "out").runs()
    assert (entry.run_id, entry.suite, entry.status) == (outcome.report["run"]["id"], "seams", "completed")
    assert entry.variants == ["one", "two"] and entry.report == outcome.paths["json"]
    assert FileStore(tmp_path / "out").read(entry.run_id)["summary"] == outcome.report["summary"]


def test_a_run_without_a_report_is_listed_as_incomplete(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run(load_suite(make_suite(tmp_path)), RunOptions(progress=False))
    (entry,) = FileStore(tmp_path / "out").runs()
    entry.report.unlink()
    (again,) = FileStore(tmp_path / "out").runs()
    assert again.status == "incomplete" and again.report is None
    with pytest.raises(ConfigError, match="no run"):
        FileStore(tmp_path / "out").read(entry.run_id)


def test_unknown_executor_is_a_one_line_error():
    assert isinstance(get_executor(None), LocalExecutor)
    with pytest.raises(ConfigError, match=r"unknown executor 'warp' \(known: local"):
        get_executor("warp")
