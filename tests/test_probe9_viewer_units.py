"""The viewer pairs a conversation's turns as one unit, as the reports do (statistics version 7:
README "A conversation is one unit"). Real runs of a conversation suite with a python subject,
recorded by the history store (SQLite, and PostgreSQL when tests/store can start one), served by
`scoreboard view --port 0`: its comparison of two runs, and its trend's change marker, give the
figures of the report's own summary comparison and of `scoreboard compare` of the two reports
(units, wins, ties, mean difference and its interval, sign test, McNemar, headline). The viewer
paired turns as cases: 8 cases where the report says 5 units, another interval, '4 ties'."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path

from tests.cli_inprocess import run_cli
from tests.store.conftest import postgres  # noqa: F401  (the PostgreSQL server fixture, reused)
from tests.viewer.conftest import Served

SUBJECT = '''import os

def good(input):
    return "47 birds"

def bad(input):
    text = str(input)
    return "no idea" if "Tuesday" in text else "47 birds"

def answer(input):
    return good(input) if os.environ["P9_MODE"] == "good" else bad(input)
'''

#: the figures of one paired comparison that must agree wherever it is computed
FIGURES = ("cases", "a_wins", "b_wins", "ties", "discordant", "sign_test_p", "mean_difference",
           "mean_difference_ci", "mcnemar", "detectable_difference")


def write_project(folder: Path) -> None:
    """Three conversations of two turns (the second asks about Tuesday) and two plain cases:
    `bad` fails every Tuesday question, so it loses half of each conversation and one plain case."""
    (folder / "subj.py").write_text(SUBJECT)
    cases = [{"id": f"c{k}", "conversation": {"topic": f"survey {k}", "notes": "The survey counted 47 birds."},
              "turns": [{"id": "t1", "question": f"How many birds? ({k})", "graders": [{"contains": "47"}]},
                        {"id": "t2", "question": f"And on Tuesday? ({k})", "graders": [{"contains": "47"}]}]}
             for k in range(3)]
    cases += [{"id": "plain", "input": "How many birds?", "graders": [{"contains": "47"}]},
              {"id": "plain2", "input": "Tuesday count?", "graders": [{"contains": "47"}]}]
    (folder / "cases.json").write_text(json.dumps({"cases": cases}))


def sb(*args: str, cwd: Path, mode: str = "good") -> subprocess.CompletedProcess:
    env = {**os.environ, "P9_MODE": mode}
    env.pop("SCOREBOARD_STORE", None)
    return run_cli(args, cwd, env)  # in-process: no test here is about the process


def make_runs(folder: Path, store: str) -> None:
    """Run A (good) and run B (bad) of suite `conv`, one variant `answer` each, and suite `both`
    running good against bad in one report (its own summary comparison)."""
    write_project(folder)
    common = ("--cases", "cases.json", "--no-progress", "--format", "json", "--store", store)
    for mode, out, run_id in (("good", "a.json", "a"), ("bad", "b.json", "b")):
        done = sb("run", *common, "--subject", "python:subj:answer", "--name", "conv", "--output", out, cwd=folder,
                  mode=mode)
        assert done.returncode == 0, done.stderr
    done = sb("run", *common, "--subject", "python:subj:good", "--vs-subject", "python:subj:bad", "--name", "both",
              "--output", "ab.json", cwd=folder)
    assert done.returncode == 0, done.stderr


def get(base: str, path: str) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(base + path, timeout=60) as response:
        return json.loads(response.read())


def viewer_figures(folder: Path, store: str) -> tuple[dict, dict, dict]:
    """(the viewer's comparison of run A with run B, its trend of suite conv, the runs by id)."""
    served = Served("--store", store, cwd=folder)
    try:
        runs = {(r["suite"], r["run_id"]): r["key"] for r in get(served.base, "/api/runs")["runs"]}
        key_a, key_b = _key(folder, "a.json", runs), _key(folder, "b.json", runs)
        compared = get(served.base, f"/api/compare?a={key_a}&b={key_b}")
        trend = get(served.base, "/api/trends?suite=conv")
    finally:
        served.stop()
    return compared, trend, {"a": key_a, "b": key_b}


def _key(folder: Path, report: str, runs: dict) -> str:
    run_id = json.loads((folder / report).read_text())["run"]["id"]
    return runs[("conv", run_id)]


def check_store(folder: Path, store: str) -> None:
    make_runs(folder, store)
    own = json.loads((folder / "ab.json").read_text())["summary"]["comparisons"][0]
    assert (own["cases"], own["a_wins"], own["b_wins"], own["ties"]) == (5, 4, 0, 1), own["headline"]
    assert own["mean_difference_ci"]["unit"] == "conversation"
    done = sb("compare", "a.json", "b.json", "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    assert cli["unit"] == "conversation" and cli["conversations"] == 3
    (cli_pair,) = cli["comparisons"]

    compared, trend, keys = viewer_figures(folder, store)
    (pair,) = compared["comparisons"]
    for name in FIGURES:
        assert pair[name] == own[name] == cli_pair[name], name
    # the headline counts units, as the report's and `scoreboard compare`'s do
    assert pair["headline"].endswith("better on 4 units, worse on 0, 1 tie"), pair["headline"]
    assert cli_pair["headline"].endswith("better on 4 units, worse on 0, 1 tie")
    assert pair["flags"] == cli_pair["flags"]
    assert compared["unit"] == "conversation" and compared["conversations"] == 3
    assert compared["shared_cases"] == 8  # the cases matched (turns), of which the units are made
    assert (pair["a_pass_rate"], pair["b_pass_rate"]) == (1.0, 0.5)  # pass rates stay over attempts

    # the trend's marker: run B against run A, by the same paired test on the same units
    (series,) = trend["series"].values()
    change = series[1]["change"]
    assert change["previous"] == keys["a"]
    assert change["cases"] == 5 and change["unit"] == "conversation", change
    assert change["sign_test_p"] == own["sign_test_p"] and change["mcnemar_p"] == own["mcnemar"]["p"]
    assert change["mean_difference"] == -own["mean_difference"]
    assert change["headline"].endswith("better on 4 units, worse on 0, 1 tie"), change["headline"]
    assert "unit" in trend["test"] and "conversation" in trend["test"]


def test_viewer_compares_conversations_by_unit_as_the_report_does(tmp_path):
    check_store(tmp_path, str(tmp_path / ".scoreboard" / "history.sqlite"))


def test_viewer_compares_conversations_by_unit_on_postgresql(tmp_path, request):
    server = request.getfixturevalue("postgres")
    check_store(tmp_path, server.create_database(f"p9u{os.getpid()}"))


def test_a_suite_without_conversations_is_still_compared_by_case(tmp_path):
    """No conversation: the viewer counts cases and says so, as before."""
    store = str(tmp_path / "h.sqlite")
    write_project(tmp_path)
    cases = json.loads((tmp_path / "cases.json").read_text())["cases"]
    flat = [{"id": f"{c['id']}-{t['id']}", "input": t["question"], "graders": t["graders"]}
            for c in cases if "turns" in c for t in c["turns"]] + [c for c in cases if "turns" not in c]
    (tmp_path / "flat.json").write_text(json.dumps({"cases": flat}))
    for mode, out in (("good", "fa.json"), ("bad", "fb.json")):
        done = sb("run", "--cases", "flat.json", "--no-progress", "--format", "json", "--store", store, "--subject",
                  "python:subj:answer", "--name", "flat", "--output", out, cwd=tmp_path, mode=mode)
        assert done.returncode == 0, done.stderr
    served = Served("--store", store, cwd=tmp_path)
    try:
        keys = [r["key"] for r in get(served.base, "/api/runs?suite=flat")["runs"]]
        compared = get(served.base, f"/api/compare?a={keys[1]}&b={keys[0]}")
        trend = get(served.base, "/api/trends?suite=flat")
    finally:
        served.stop()
    (pair,) = compared["comparisons"]
    assert compared["unit"] == "case" and compared["conversations"] == 0
    assert pair["cases"] == 8 and "cases" in pair["headline"] and pair["mean_difference_ci"]["unit"] == "case"
    (series,) = trend["series"].values()
    assert series[1]["change"]["cases"] == 8 and series[1]["change"]["unit"] == "case"
