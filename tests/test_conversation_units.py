"""A conversation's turns are one unit of evidence, not one each: they answer each other's
replies, so their outcomes are correlated, and counting them as independent cases made the pass
rate's interval cover 0.74-0.87 instead of 0.95 (benchmarks/conversation_units.py). Every
interval and paired test of pass rates, pass@k, fields, scores and metrics counts a conversation
once; a report without conversations is computed as before."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import numpy as np

from scoreboard.stats.methods import STATS_VERSION
from scoreboard.stats.summary import summarize
from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]


def attempt(cid: str, variant: str, ok: bool, run: int = 0) -> dict:
    return {"case_id": cid, "variant": variant, "run": run, "status": "passed" if ok else "failed",
            "grades": [], "measurements": {}}


def conversation_report(runs: int = 1):
    """Four conversations of three turns and one plain case; variant a passes the turns of
    conversations 0 and 3 and two of 2, b passes none; both pass the plain case."""
    cases = [{"id": f"c{k}/t{t}", "conversation": f"c{k}", "turn_index": t} for k in range(4) for t in range(3)]
    plan = {"cases": cases + [{"id": "plain"}], "variants": [{"name": "a"}, {"name": "b"}], "runs": runs,
            "seed": 0}
    outcomes = {0: [1, 1, 1], 1: [0, 0, 0], 2: [1, 1, 0], 3: [1, 1, 1]}
    attempts = []
    for r in range(runs):
        for k, outs in outcomes.items():
            for t, ok in enumerate(outs):
                attempts += [attempt(f"c{k}/t{t}", "a", bool(ok), r), attempt(f"c{k}/t{t}", "b", False, r)]
        attempts += [attempt("plain", "a", True, r), attempt("plain", "b", True, r)]
    return plan, attempts


def test_the_intervals_and_paired_tests_count_a_conversation_once():
    summary = summarize(*conversation_report())
    a = summary["variants"]["a"]
    assert a["cases"] == 13 and a["conversations"] == 4 and a["pass_rate"] == 9 / 13
    ci = a["pass_rate_ci"]
    assert ci["unit"] == "conversation" and ci["effective_cases"] <= 5  # 4 conversations and a case, not 13
    assert a["units"] == 5
    comp = summary["comparisons"][0]
    assert (comp["cases"], comp["a_wins"], comp["b_wins"], comp["ties"]) == (5, 3, 0, 2)
    assert comp["mean_difference"] == (1 + 0 + 2 / 3 + 1 + 0) / 5  # per unit, not per turn
    assert comp["mean_difference_ci"]["unit"] == "conversation"
    assert summary["methods"]["version"] == STATS_VERSION and "conversation is one unit" in summary["methods"]["unit"]
    # the headline counts what it compared: units (a conversation once), not 13 cases
    assert comp["headline"].endswith("better on 3 units, worse on 0, 2 ties"), comp["headline"]


def test_pass_at_k_averages_a_conversations_turns_into_one_value():
    summary = summarize(*conversation_report(runs=2))
    at2 = summary["variants"]["a"]["pass_at_k"]["2"]
    assert at2["cases"] == 5 and at2["value"] == (1 + 0 + 2 / 3 + 1 + 1) / 5


def test_a_report_without_conversations_is_computed_as_before():
    plan, attempts = conversation_report()
    plan = {**plan, "cases": [{"id": c["id"]} for c in plan["cases"]]}
    summary = summarize(plan, attempts)
    a = summary["variants"]["a"]
    assert "conversations" not in a and "units" not in a and a["pass_rate_ci"]["unit"] == "case"
    assert summary["comparisons"][0]["cases"] == 13
    assert "better on 8 cases, worse on 0, 5 ties" in summary["comparisons"][0]["headline"]
    assert summary["methods"]["version"] == STATS_VERSION and "unit" not in summary["methods"]


def test_simulation_turns_as_cases_undercover_conversations_as_units_cover():
    """The regression guard of benchmarks/conversation_units.py (ICC 0.5, p 0.5, 30 conversations
    of 2-6 turns): turns as independent cases covered about 0.77; the conversation as the unit 0.94."""
    spec = importlib.util.spec_from_file_location("conversation_units", ROOT / "benchmarks" / "conversation_units.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    turns, conversations = module.coverage(np.random.default_rng(7), 0.5, 0.5, 30, 400)
    assert turns < 0.88 and conversations >= 0.91, (turns, conversations)


def test_a_conversation_run_says_its_unit_in_every_rendering_and_verifies(tmp_path):
    cases = {"cases": [{"id": f"talk{k}", "conversation": {"topic": "t"},
                        "turns": [{"id": f"t{t}", "question": f"q{k}{t}", "graders": [{"contains": "q"}]}
                                  for t in range(3)]} for k in range(3)]}
    (tmp_path / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("name: talks\ncases: cases.json\nsubject: mock\noutput_dir: out\n"
                                         "formats: [json, md]\n", encoding="utf-8")
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    done = run_cli(["run", "suite.yaml", "--output", "r.json", "--no-progress"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "the intervals count each of the 3 conversations as one unit" in done.stdout
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    variant = next(iter(report["summary"]["variants"].values()))
    assert variant["cases"] == 9 and variant["conversations"] == 3 and variant["units"] == 3
    assert "fewer than 30 units (3 per variant, a conversation counting once)" in done.stdout
    assert "**Unit**: the intervals count each of the 3 conversations" in (tmp_path / "r.md").read_text(encoding="utf-8")
    verified = run_cli(["verify", "r.json"], tmp_path, env)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_markdown_lists_not_run_attempts_with_their_reason(tmp_path):
    """Turns after a turn that errored are not run: the Markdown says so, with the reason, as JUnit
    does (the case table alone showed 0/0)."""
    (tmp_path / "subj.py").write_text("def answer(messages):\n"
                                      "    if 'boom' in str(messages[-1]):\n"
                                      "        raise RuntimeError('the model fell over')\n"
                                      "    return 'q'\n", encoding="utf-8")
    cases = {"cases": [{"id": "talk", "conversation": {"topic": "t"},
                        "turns": [{"id": "t1", "question": "q1", "graders": [{"contains": "q"}]},
                                  {"id": "t2", "question": "boom", "graders": [{"contains": "q"}]},
                                  {"id": "t3", "question": "q3", "graders": [{"contains": "q"}]}]}]}
    (tmp_path / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("name: talks\ncases: cases.json\nsubject: python:subj:answer\n"
                                         "output_dir: out\nformats: [json, md]\n", encoding="utf-8")
    done = run_cli(["run", "suite.yaml", "--output", "r.json", "--no-progress"], tmp_path)
    assert done.returncode in (0, 1, 2), done.stderr
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    section = md.split("## Not run", 1)[1]
    assert "talk/t3" in section and "turn 't2' of this conversation failed" in section, md
    assert "1 of 1 run not run" in section


def run_three_talks_and_two_cases(folder: Path, store: bool) -> tuple[subprocess.CompletedProcess, dict]:
    """Three conversations of two turns and two plain cases (5 units), run writing only JSON."""
    cases = [{"id": f"c{k}", "conversation": {"topic": "t"},
              "turns": [{"id": f"t{t}", "question": f"q{k}{t}", "graders": [{"contains": "q"}]} for t in range(2)]}
             for k in range(3)] + [{"id": f"p{i}", "input": "q", "graders": [{"contains": "q"}]} for i in (1, 2)]
    (folder / "cases.json").write_text(json.dumps({"cases": cases}), encoding="utf-8")
    (folder / "suite.yaml").write_text("name: talks\ncases: cases.json\nsubject: mock\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "SCOREBOARD_STORE"}
    env.update(COLUMNS="200", NO_COLOR="1", **({} if store else {"SCOREBOARD_STORE": "none"}))
    done = run_cli(["run", "suite.yaml", "--format", "json", "--no-progress"], folder, env)
    assert done.returncode == 0, done.stderr
    return done, env


def test_a_run_writing_only_json_counts_its_units_from_the_summary(tmp_path):
    # with --format json no view is built and the terminal reads a plan without its cases: it
    # said "fewer than 30 units (11 per variant ...)" for 3 conversations of 2 turns and 2 cases
    done, _ = run_three_talks_and_two_cases(tmp_path, store=False)
    assert "fewer than 30 units (5 per variant, a conversation counting once)" in done.stdout, done.stdout


def test_history_counts_the_units_a_conversation_runs_intervals_count(tmp_path):
    # history said "(8/8 judged, 8 cases; small sample: fewer than 30 cases)" for 3 conversations
    # of 2 turns and 2 cases, whose interval counts 5 units
    _, env = run_three_talks_and_two_cases(tmp_path, store=True)
    shown = run_cli(["history"], tmp_path, env)
    assert shown.returncode == 0, shown.stderr
    assert "(8/8 judged, 8 cases, 5 units (a conversation counting once); small sample: fewer than 30 units)" \
        in shown.stdout, shown.stdout
