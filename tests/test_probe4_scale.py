"""Probes of scale-out and stores from the outside: hostile reports imported over a stored run
(on SQLite and on a PostgreSQL the tests start on loopback), the same run imported twice,
provider batches answered badly, and the Ray executor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoreboard.cli.main import main as cli
from scoreboard.store.history import HistoryStore

from .store.conftest import postgres, store_spec  # noqa: F401 - fixtures: both backends
from .store.test_store import make_suite, run_into


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    """A run's report (recorded subjects, no store)."""
    folder = tmp_path_factory.mktemp("scale")
    _, report = run_into("none", make_suite(folder))
    return Path(report)


def sb(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def stored_counts(spec: str) -> tuple:
    store = HistoryStore(spec)
    try:
        return (store.db.one("SELECT status, attempts FROM runs")
                + store.db.one("SELECT COUNT(*) FROM attempts"))
    finally:
        store.close()


def _last_output_text(r: dict) -> None:
    r["attempts"][-1]["output"]["text"] = "half an emoji \ud83d"


def _last_output_hash(r: dict) -> None:
    r["attempts"][-1]["output_hash"] = "ab\ud800cd"


def _first_input_hash_nul(r: dict) -> None:
    r["attempts"][0]["input_hash"] = "ab\x00cd"


def _case_hash_nul(r: dict) -> None:
    r["plan"]["cases"][0]["input_hash"] = "ab\x00cd"


def _finished_at_nul(r: dict) -> None:
    r["run"]["finished_at"] = "2026-12-01T00:00:00Z\x00"


def _grade_reason_nan(r: dict) -> None:
    r["attempts"][-1]["grades"][0]["score"] = float("nan")
    r["attempts"][-1]["measurements"]["input_tokens"] = 10**30  # an integer no 64-bit encoder takes


@pytest.mark.parametrize("mutate, field", [
    (_last_output_text, "attempts[{last}].output.text"),
    (_last_output_hash, "attempts[{last}].output_hash"),
    (_first_input_hash_nul, "attempts[0].input_hash"),
    (_case_hash_nul, "plan.cases[0].input_hash"),
    (_finished_at_nul, "run.finished_at"),
    (_grade_reason_nan, "attempts[{last}].grades[0].score"),
])
def test_a_hostile_report_never_replaces_the_stored_copy(store_spec, report_file, tmp_path, capsys,  # noqa: F811
                                                         mutate, field):
    """A report of a stored run, edited to hold what no report scoreboard writes holds (a lone
    surrogate in an output or a hash, a NUL byte in a hash or a time, NaN): `store import`
    refuses it in one line naming the file and the field, exit 1, and the stored copy stays
    whole. Before, the old rows were deleted first and the write then failed on the last
    attempts (a UnicodeEncodeError, PostgreSQL's NUL refusal): exit 2, the run left
    `incomplete` with 0 attempts."""
    code, _, err = sb(capsys, "store", "import", str(report_file), "--store", store_spec)
    assert code == 0, err
    before = stored_counts(store_spec)
    hostile = json.loads(report_file.read_text())
    assert before[1] == before[2] == len(hostile["attempts"])
    field = field.format(last=len(hostile["attempts"]) - 1)
    mutate(hostile)
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(hostile))
    code, _, err = sb(capsys, "store", "import", str(bad), "--store", store_spec)
    assert code == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and str(bad) in lines[0] and field in lines[0], err
    assert "Error:" not in err and "Traceback" not in err
    assert stored_counts(store_spec) == before
