"""`scoreboard compare` (and the viewer's compare page) compare the case score and each named
metric case by case, with the figures each report's own summary gives the same pair."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

CASES = [
    {"id": f"c{i}", "input": text, "graders": [{"contains": want, "metric": "accuracy"},
                                              {"contains": "big", "metric": "style", "weight": 2}]}
    for i, (text, want) in enumerate([("Paris is big", "Paris"), ("Rome is small", "Rome"), ("Oslo big", "Paris"),
                                      ("Lima big", "Lima"), ("Kyiv big", "Kyiv"), ("Bern is tiny", "Bern")])]
SUBJECTS = '''
import zlib
def plain(text, run=0, **kw):
    return text
def other(text, run=0, **kw):
    # a case's runs differ (a metric that is a fraction per case), decided by a stable hash
    return text.replace("big", "huge") if zlib.crc32(f"{text}{run}".encode()) % 3 else text
'''


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none", "NO_COLOR": "1"}
    return run_cli(args, cwd, env)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cmpscores")
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (root / "subj.py").write_text(SUBJECTS)
    out = {}
    for name, args in (("a", ["--subject", "python:subj:plain"]), ("b", ["--subject", "python:subj:other"]),
                       ("both", ["--subject", "python:subj:plain", "--vs-subject", "python:subj:other"])):
        done = scoreboard(["run", "--cases", "cases.jsonl", *args, "--runs", "3", "--name", name,
                           "--output-dir", "out", "--format", "json"], root)
        assert done.returncode in (0, 3), done.stderr
        (out[name],) = (root / "out" / name).glob("*.json")
    return out


def test_compare_gives_the_score_and_metric_figures_the_reports_own_summary_gives(reports, tmp_path):
    done = scoreboard(["compare", str(reports["a"]), str(reports["b"]), "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    (pair,) = json.loads(done.stdout)["comparisons"]
    own = json.loads(reports["both"].read_text())["summary"]["comparisons"][0]
    assert set(pair["metrics"]) == set(own["metrics"]) == {"accuracy", "style"}
    for got, want in [(pair["score"], own["score"]), *((pair["metrics"][k], own["metrics"][k]) for k in own["metrics"])]:
        for key in ("cases", "a_wins", "b_wins", "ties", "sign_test_p", "mean_difference", "mean_difference_ci",
                    "detectable_difference"):
            assert got[key] == want[key], key
    assert pair["metrics"]["style"]["a_wins"] > 0  # the runs of `other` said "huge" on some cases


def test_compare_text_and_html_show_the_score_and_each_metric(reports, tmp_path):
    done = scoreboard(["compare", str(reports["a"]), str(reports["b"]), "--output", "cmp.html"], tmp_path)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for name in ("score", "accuracy", "style"):
        assert f"A:plain vs B:other, {name}: difference " in text, text  # each side named by its report
    page = (tmp_path / "cmp.html").read_text()
    assert "Scores and metrics (paired, case by case)" in page
    assert "A:plain vs B:other, style: difference +" in page


def test_a_pair_without_scores_gets_no_score_block(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "x", "input": "hi", "expected": "hi"}\n')
    (tmp_path / "subj.py").write_text("def run(text, **kw):\n    return text\n")
    for name in ("p", "q"):
        assert scoreboard(["run", "--cases", "cases.jsonl", "--subject", "python:subj:run", "--name", name,
                           "--output-dir", "out", "--format", "json"], tmp_path).returncode == 0
    (a,), (b,) = (tmp_path / "out" / "p").glob("*.json"), (tmp_path / "out" / "q").glob("*.json")
    (pair,) = json.loads(scoreboard(["compare", str(a), str(b), "--json"], tmp_path).stdout)["comparisons"]
    assert "score" not in pair and "metrics" not in pair


def test_the_viewers_comparison_of_two_stored_runs_gives_the_same_score_and_metric_figures(tmp_path):
    from scoreboard.store.db import open_database
    from scoreboard.viewer.figures import compare_runs

    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (tmp_path / "subj.py").write_text(SUBJECTS)
    env = {**os.environ, "NO_COLOR": "1"}
    reports = {}
    for subject in ("plain", "other"):
        done = run_cli(["run", "--cases", "cases.jsonl", "--subject", f"python:subj:{subject}", "--runs", "3",
                        "--name", "s", "--output-dir", f"out_{subject}", "--format", "json", "--store", "h.sqlite"],
                       tmp_path, env)
        assert done.returncode in (0, 3), done.stderr
        (reports[subject],) = (tmp_path / f"out_{subject}" / "s").glob("*.json")
    cli = json.loads(scoreboard(["compare", str(reports["plain"]), str(reports["other"]), "--json"],
                                tmp_path).stdout)["comparisons"][0]
    db = open_database(str(tmp_path / "h.sqlite"))
    try:
        key_of = {Path(path).resolve(): key for key, path in db.all("SELECT key, report_path FROM runs")}
        (pair,) = compare_runs(db, key_of[reports["plain"].resolve()], key_of[reports["other"].resolve()])["comparisons"]
    finally:
        db.close()
    assert set(pair["metrics"]) == {"accuracy", "style"}
    assert not any("different suites" in f for f in pair["flags"])  # both runs are of suite "s"
    for got, want in [(pair["score"], cli["score"]), *((pair["metrics"][k], cli["metrics"][k]) for k in cli["metrics"])]:
        for key in ("cases", "a_wins", "b_wins", "ties", "sign_test_p", "mean_difference", "mean_difference_ci"):
            assert got[key] == want[key], key


def test_runs_of_different_suites_compared_say_so_and_runs_of_one_suite_do_not(reports, tmp_path):
    done = scoreboard(["compare", str(reports["a"]), str(reports["b"]), "--json"], tmp_path)
    (pair,) = json.loads(done.stdout)["comparisons"]
    assert pair["flags"][0].startswith("A and B are runs of different suites ('a', 'b')"), pair["flags"]
    text = scoreboard(["compare", str(reports["a"]), str(reports["b"])], tmp_path).stdout
    assert "⚠ A and B are runs of different suites ('a', 'b')" in text
    same = json.loads(scoreboard(["compare", str(reports["a"]), str(reports["a"]), "--json"], tmp_path).stdout)
    assert not any("different suites" in f for f in same["comparisons"][0]["flags"])
