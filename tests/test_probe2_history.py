"""Probes of the history store, `store`, `history` and `verify` from the outside: hostile and
ambiguous reports, damaged stores, runs that share a run id, and the flags' bounds."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from scoreboard.cli.main import main as cli

from .store.test_store import make_suite, run_into


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A suite run once into a SQLite store: (folder, store path, report path)."""
    folder = tmp_path_factory.mktemp("hist")
    suite = make_suite(folder)
    store = str(folder / "history.sqlite")
    _, report = run_into(store, suite)
    return folder, store, Path(report)


def sb(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def with_duplicate(report: Path, target: Path) -> Path:
    """The report with the first attempt's status written twice (the second one wins in most
    readers, the first in others)."""
    text = report.read_text()
    twice = text.replace('"status":"passed"', '"status":"failed","status":"passed"', 1)
    assert twice != text
    target.write_text(twice)
    return target


def test_store_import_refuses_a_report_holding_a_key_twice(stored, tmp_path, capsys):
    _, _, report = stored
    bad = with_duplicate(report, tmp_path / "dup.json")
    store = str(tmp_path / "s.sqlite")
    code, out, err = sb(capsys, "store", "import", str(bad), "--store", store)
    assert code == 1 and "0 stored" in out
    assert "field 'attempts[0].status': report holds the key 'status' twice" in err
    assert json.loads(sb(capsys, "store", "info", "--store", store, "--json")[1])["runs"] == 0


def test_store_import_refuses_a_duplicate_key_in_a_streamed_report(stored, tmp_path, monkeypatch):
    import scoreboard.store.reportfile as reportfile
    from scoreboard.errors import ConfigError

    _, _, report = stored
    monkeypatch.setattr(reportfile, "WHOLE_BYTES", 0)  # read as a large report is: streamed
    assert len(list(reportfile.ReportFile(report).attempts())) > 0
    text = report.read_text()
    bad = tmp_path / "dup.json"
    bad.write_text(text.replace('"passed":', '"passed":0,"passed":', 1))
    with pytest.raises(ConfigError, match=r"field 'attempts\[0\]\.grades\[0\]\.passed': report holds the key 'passed'"):
        reportfile.ReportFile(bad)
    with_duplicate(report, bad)
    with pytest.raises(ConfigError, match=r"attempts\[0\]\.status"):
        reportfile.ReportFile(bad)


def test_store_verify_refuses_what_verify_refuses(stored, tmp_path, capsys):
    _, store, report = stored
    bad = with_duplicate(report, tmp_path / "dup.json")
    code, out, err = sb(capsys, "verify", str(bad))
    assert code == 1 and "twice" in err
    code, out, err = sb(capsys, "store", "verify", str(bad), "--store", store)
    assert code == 1 and "verifies" not in out and "report holds the key 'status' twice" in err


def test_store_import_names_a_fifo_for_what_it_is(tmp_path, capsys):
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    code, out, err = sb(capsys, "store", "import", str(fifo), "--store", str(tmp_path / "s.sqlite"))
    assert code == 1 and "FIFO" in err and "no such file" not in err


def test_a_run_id_shared_by_runs_of_one_suite_names_their_keys(stored, tmp_path, capsys):
    folder, _, report = stored
    store = str(tmp_path / "s.sqlite")
    data = json.loads(report.read_text())
    keys = []
    for uid in ("aaaa", "bbbb"):  # a CI matrix: one suite, one second, two output folders
        data["run"]["uid"] = uid
        path = tmp_path / f"{uid}.json"
        path.write_text(json.dumps(data))
        assert sb(capsys, "store", "import", str(path), "--store", store)[0] == 0
    keys = [r["key"] for r in json.loads(sb(capsys, "history", "--json", "--store", store)[1])["runs"]]
    run_id = data["run"]["id"]
    for name in (run_id, f"hist/{run_id}"):
        code, _, err = sb(capsys, "store", "tag", name, "x", "--store", store)
        assert code == 1 and "several suites" not in err
        assert "names 2 runs of suite 'hist'" in err and all(k in err for k in keys)
    assert sb(capsys, "store", "tag", keys[0], "x", "--store", store)[0] == 0


@pytest.mark.parametrize("limit", ["0", "-5", "501"])
def test_history_limit_out_of_range_is_an_error(stored, capsys, limit):
    _, store, _ = stored
    code, out, err = sb(capsys, "history", "--store", store, "--limit", limit)
    assert code == 1 and out == "" and "flag --limit: must be from 1 to 500" in err


def test_history_at_the_largest_limit_does_not_suggest_the_same_limit(tmp_path, capsys, monkeypatch):
    import scoreboard.store.queries as queries

    store = str(tmp_path / "s.sqlite")
    folder = tmp_path / "suite"
    suite = make_suite(folder, runs=1)
    for _ in range(2):
        run_into(store, suite)
    monkeypatch.setattr(queries, "MAX_LIMIT", 1)
    code, out, _ = sb(capsys, "history", "--store", store, "--limit", "1")
    assert code == 0 and "--limit 1)" not in out and "narrow them with --since" in out


def test_a_damaged_row_is_a_one_line_error_not_a_crash(stored, tmp_path, capsys):
    _, store, _ = stored
    copy = tmp_path / "damaged.sqlite"
    copy.write_bytes(Path(store).read_bytes())
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE runs SET variants = '{{{'")
    code, out, err = sb(capsys, "history", "--store", str(copy))
    assert code == 1 and "internal error" not in err
    assert err.count("\n") == 1 and "the store holds a value that is not valid JSON" in err


def test_history_shows_no_number_a_damaged_column_does_not_hold(stored, tmp_path, capsys):
    _, store, _ = stored
    copy = tmp_path / "damaged.sqlite"
    copy.write_bytes(Path(store).read_bytes())
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE variants SET pass_rate = 'abc', ci_low = 'x'")
    code, out, err = sb(capsys, "history", "--store", str(copy))
    assert code == 0 and "internal error" not in err
    assert "one: pass rate n/a" in out



def test_a_case_named_gates_is_named_where_it_is_written(tmp_path):
    import subprocess
    import sys

    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "x", "expected": "x"}\n'
                                          '{"id": "gates", "input": "y", "expected": "y"}\n')
    (tmp_path / "suite.yaml").write_text("name: g\ncases: cases.jsonl\ngraders: [exact]\nvariants:\n"
                                         "  v: {subject: 'recorded:out.jsonl'}\n")
    (tmp_path / "out.jsonl").write_text('{"case_id": "a", "output": "x"}\n{"case_id": "gates", "output": "y"}\n')
    (tmp_path / "test_evals.py").write_text("import scoreboard.testing\nsuite = scoreboard.testing.suite('suite.yaml')\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_evals.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stdout
    assert "cases.jsonl:2, case 'gates': a case is named 'gates'" in done.stdout


def test_history_lines_give_the_interval_method_counts_and_a_small_sample_in_words(stored, capsys):
    _, store, _ = stored
    code, out, _ = sb(capsys, "history", "--store", store)
    lines = [line for line in out.splitlines() if "one: pass rate" in line]
    assert code == 0 and lines
    line = lines[0]
    assert ", wilson-effective-n]" in line and "judged" in line
    assert "small sample: fewer than 30 cases" in line  # the suite has fewer than 30 cases
    listed = json.loads(sb(capsys, "history", "--store", store, "--json")[1])["runs"][0]
    assert listed["cases"] > 0 and f"{listed['cases']} cases" in line


@pytest.mark.parametrize(("change", "named"), [
    ("UPDATE variants SET pass_rate = 0.99 WHERE name = 'one'", "variants['one']: stored figures differ"),
    ("UPDATE variants SET passed = 999 WHERE name = 'one'", "variants['one']: stored figures differ"),
    ("UPDATE case_results SET hits = 0, passed = 0 WHERE case_id = 'c00'", "case_results['one', 'c00']"),
    ("UPDATE field_results SET hits = 0 WHERE case_id = 'c01'", "field_results['one', "),
    ("UPDATE grades SET passed = 0 WHERE case_id = 'c02' AND run = 0", "attempts['c02', 'one', run 0].grades[0]"),
    ("UPDATE attempts SET status = 'failed' WHERE case_id = 'c02' AND run = 0 AND variant = 'two'",
     "attempts['c02', 'two', run 0].status: stored 'failed', the report's is 'passed'"),
    ("UPDATE runs SET status = 'stopped'", "run.status: stored 'stopped', the report's is 'completed'"),
    ("DELETE FROM case_results WHERE case_id = 'c03' AND variant = 'two'", "case_results['two', 'c03']: not stored"),
])
def test_store_verify_checks_the_rows_history_and_the_viewer_read(stored, tmp_path, capsys, change, named):
    _, store, report = stored
    assert sb(capsys, "store", "verify", str(report), "--store", store)[0] == 0
    copy = tmp_path / "changed.sqlite"
    copy.write_bytes(Path(store).read_bytes())
    with sqlite3.connect(copy) as conn:
        conn.execute(change)
    code, out, _ = sb(capsys, "store", "verify", str(report), "--store", str(copy))
    assert code == 1 and "matches" not in out.splitlines()[0] and named in out


def test_store_verify_counts_every_mismatch_past_those_it_lists(stored, tmp_path, capsys):
    _, store, report = stored
    copy = tmp_path / "changed.sqlite"
    copy.write_bytes(Path(store).read_bytes())
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE case_results SET hits = hits + 1")
        cells = conn.execute("SELECT COUNT(*) FROM case_results").fetchone()[0]
    assert cells > 21
    code, out, _ = sb(capsys, "store", "verify", str(report), "--store", str(copy))
    assert code == 1 and f": {cells} mismatch(es)" in out.splitlines()[0]
    assert f"… and {cells - 20} more" in out
    check = json.loads(sb(capsys, "store", "verify", str(report), "--store", str(copy), "--json")[1])
    assert check["mismatch_count"] == cells


def test_compare_says_ties_by_construction_only_when_the_outcomes_are_the_same(stored, tmp_path, capsys):
    _, _, report = stored
    data = json.loads(report.read_text())
    for a in data["attempts"]:  # the same run id and uid, other outcomes (an edited copy)
        a.update(status="error", grades=[], error="boom")
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    code, out, _ = sb(capsys, "compare", str(report), str(other))
    assert code == 0 and "better on" in out and "by construction" not in out
    code, out, _ = sb(capsys, "compare", str(report), str(report))
    assert code == 0 and "by construction" in out


def test_the_action_names_a_run_left_waiting_on_batches(stored, tmp_path, monkeypatch):
    from types import SimpleNamespace

    from scoreboard.cli.github_action import outputs, write_outputs
    from scoreboard.cli.github_comment import comment_body

    _, _, report = stored
    head = {k: v for k, v in json.loads(report.read_text()).items() if k != "attempts"}
    outcome = SimpleNamespace(paths={"json": report}, head=head, exit_code=4)
    values = outputs(outcome, "skipped")
    assert values["verdict"] == "waiting" and values["exit-code"] == "4"
    target = tmp_path / "out.txt"
    monkeypatch.setenv("GITHUB_OUTPUT", str(target))
    write_outputs(values)
    assert "verdict=waiting\n" in target.read_text()
    assert "waiting on provider batches" in comment_body(head, 4, None, "").splitlines()[1]


def test_a_store_locked_past_every_wait_is_a_one_line_error(stored, tmp_path, capsys, monkeypatch):
    import scoreboard.store.db as db

    _, store, _ = stored
    copy = tmp_path / "locked.sqlite"
    copy.write_bytes(Path(store).read_bytes())
    monkeypatch.setattr(db, "BUSY_TIMEOUT_S", 0.1)
    monkeypatch.setattr(db, "RETRIES", 2)
    key = json.loads(sb(capsys, "history", "--store", str(copy), "--json")[1])["runs"][0]["key"]
    holder = sqlite3.connect(copy, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # a stuck writer
        code, out, err = sb(capsys, "store", "tag", key, "x", "--store", str(copy))
    finally:
        holder.close()
    assert code == 1 and "internal error" not in err and err.count("\n") == 1
    assert "the store is locked by another process" in err


@pytest.mark.parametrize(("status", "verdict"), [
    ("passed", "passed"), ("not-graded", "unassessed"), ("unassessed", "unassessed"), ("waiting", "failed"),
    ("not-run", "failed"), ("a-status-from-a-later-version", "failed"),
])
def test_a_case_test_passes_only_when_every_attempt_passed(status, verdict):
    from scoreboard.testing.messages import case_verdict

    attempts = [{"case_id": "c", "variant": "v", "run": 0, "status": "passed", "output": {"text": "x"}},
                {"case_id": "c", "variant": "v", "run": 1, "status": status, "output": None, "grades": []}]
    found, message = case_verdict("c", attempts)
    assert found == verdict
    if status == "not-graded":
        assert "not graded (the case has no grader)" in message


def test_the_pytest_summary_line_counts_the_attempts_its_rate_is_over():
    from scoreboard.testing.messages import summary_lines

    block = {"pass_rate": 1.0, "passed": 1, "failed": 0, "errors": 0, "attempts": 2}
    report = {"summary": {"variants": {"v": block}}, "gates": []}
    (line,) = summary_lines({"suite": "s", "exit_code": 0, "paths": {}}, report)
    assert "v 100.0% (1/1 judged of 2 attempts)" in line
    block.update(failed=1, pass_rate=0.5)
    assert "v 50.0% (1/2 attempts)" in summary_lines({"suite": "s", "exit_code": 0, "paths": {}}, report)[0]


def test_reading_a_store_that_is_not_a_file_names_what_it_is(tmp_path, capsys):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    code, _, err = sb(capsys, "history", "--store", str(folder))
    assert code == 1 and "the store is a directory" in err and "no history store here yet" not in err
    fifo = tmp_path / "fifo.sqlite"
    os.mkfifo(fifo)
    code, _, err = sb(capsys, "store", "info", "--store", str(fifo))
    assert code == 1 and "FIFO" in err
    code, _, err = sb(capsys, "store", "info", "--store", str(tmp_path / "absent.sqlite"))
    assert code == 1 and "no history store here yet" in err and not (tmp_path / "absent.sqlite").exists()
