"""`scoreboard import inspect`: Task(metrics=[...]) with Inspect's built-in metrics (importers/
inspect_metrics.py): accuracy()/mean() become each converted scorer's metric, stderr() a note that
scoreboard's interval stands in, and what scoreboard does not compute is listed, never dropped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from tests.cli_inprocess import run_cli

HEAD = """from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import accuracy, bootstrap_stderr, f1, grouped, match, mean, std, stderr, var
from inspect_ai.solver import generate

DATA = [Sample(input="q1 what is 1+1?", target="2", id="q1"),
        Sample(input="q2 what is 2+2?", target="4", id="q2"),
        Sample(input="q3 what is 3+3?", target="6", id="q3"),
        Sample(input="q4 the capital of France?", target="the city of Paris", id="q4")]
"""

# the model under test: right on q1, q2; wrong on q3; half of q4's words
SUBJECT = '''
ANSWERS = {"q1": "2", "q2": "4", "q3": "7", "q4": "Paris"}

def reply(given):
    text = given if isinstance(given, str) else given[-1]["content"]
    return ANSWERS[text.split()[0]]
'''


def scoreboard(args, cwd):
    return run_cli(args, cwd, env=dict(os.environ, SCOREBOARD_STORE="none"))


def convert(tmp: Path, body: str, head: str = HEAD) -> tuple[dict, str, int]:
    """Import task.py (`head` + `body`) into tmp/out: the suite, the conversion report, the exit code."""
    (tmp / "task.py").write_text(head + body, encoding="utf-8")
    done = scoreboard(["import", "inspect", "task.py", "--output", "out"], tmp)
    assert done.returncode in (0, 3), done.stderr
    suite = yaml.safe_load((tmp / "out" / "suite.yaml").read_text())
    return suite, (tmp / "out" / "conversion-report.md").read_text(), done.returncode


def run(tmp: Path, suite: dict) -> dict:
    (tmp / "out" / "subj.py").write_text(SUBJECT, encoding="utf-8")
    suite["subject"] = {"type": "python", "function": "subj:reply", "model_free": True}
    (tmp / "out" / "suite.yaml").write_text(yaml.safe_dump(suite))
    done = scoreboard(["run", "out/suite.yaml", "--output", "report.json"], tmp)
    assert done.returncode in (0, 3), done.stderr
    return json.loads((tmp / "report.json").read_text())


def metric_of(report: dict, name: str) -> float | None:
    """The variant's value of the metric NAME (each case's runs averaged, then the cases)."""
    (variant,) = report["summary"]["variants"].values()
    return variant["metrics"][name]["value"]


def test_accuracy_and_stderr_become_the_scorers_metric_and_a_note(tmp_path):
    suite, report_md, rc = convert(tmp_path, """
@task
def arith():
    return Task(dataset=DATA, solver=[generate()], scorer=match(numeric=True),
                metrics=[accuracy(), stderr()])
""")
    assert rc == 0, report_md  # nothing listed: both metrics converted
    assert suite["cases"]["scorer"] == [{"match": {"numeric": True}, "metric": "accuracy"}]
    assert "Inspect's stderr()" in report_md and "metric 'accuracy'" in report_md
    report = run(tmp_path, suite)
    # Inspect's accuracy: q1, q2 correct (C = 1), q3 and q4 incorrect (I = 0)
    assert metric_of(report, "accuracy") == 0.5


def test_mean_of_f1_is_the_mean_f1_inspect_reports(tmp_path):
    suite, report_md, rc = convert(tmp_path, """
@task
def squad_like():
    return Task(dataset=DATA, solver=generate(), scorer=f1(), metrics=[mean(), bootstrap_stderr()])
""")
    assert rc == 0, report_md
    assert suite["cases"]["scorer"] == [{"f1": None, "metric": "mean"}]
    assert "Inspect's bootstrap_stderr()" in report_md
    report = run(tmp_path, suite)
    # F1 per sample: 1, 1, 0 ("7" vs "6") and q4's "paris" against "city of paris" (the article
    # dropped): precision 1, recall 1/3, F1 0.5
    assert abs(metric_of(report, "mean") - (1 + 1 + 0 + 0.5) / 4) < 1e-9


def test_what_scoreboard_does_not_compute_is_listed_with_its_line(tmp_path):
    suite, report_md, rc = convert(tmp_path, """
@task
def mixed():
    return Task(dataset=DATA, scorer=match(),
                metrics=[accuracy(), std(), var(), stderr(cluster="passage"), grouped(accuracy(), "domain")])
""")
    assert rc == 3
    assert suite["cases"]["scorer"] == [{"match": None, "metric": "accuracy"}]
    listed = report_md.split("## Not converted")[1].split("##")[0]
    assert "task.py:14: Task(metrics=...) std(): the scores' standard deviation" in listed
    assert "var(): the scores' variance" in listed
    assert "stderr(cluster='passage'): a standard error clustered" in listed
    # one item for the Task's metrics, each metric with why; the grouped() is an item of its own:
    # no sample has a 'domain', on which Inspect's grouped() raises (tests/test_import_inspect_grouped.py)
    assert listed.count("task.py:") == 2
    assert "grouped(..., 'domain'): case q1: " in listed and "Inspect's grouped() raises ValueError" in listed


def test_mean_of_c_i_values_is_their_accuracy_under_the_mean_reducer(tmp_path):
    # Inspect's default reducer (mean_score) turns C/I into 1.0/0.0 before mean() reads them
    suite, report_md, rc = convert(tmp_path, """
@task
def c_i():
    return Task(dataset=DATA, scorer=match(numeric=True), metrics=[mean(), stderr()])
""")
    assert rc == 0, report_md
    assert suite["cases"]["scorer"] == [{"match": {"numeric": True}, "metric": "mean"}]
    assert metric_of(run(tmp_path, suite), "mean") == 0.5


def test_mean_of_c_i_values_under_max_is_listed_as_inspect_raises(tmp_path):
    # the max reducer keeps "C", and Inspect's mean() reads Score.as_float(): float("C") raises
    suite, report_md, rc = convert(tmp_path, """
from inspect_ai import Epochs

@task
def c_i_max():
    return Task(dataset=DATA, scorer=match(), epochs=Epochs(2, "max"), metrics=[mean()])
""")
    assert rc == 3
    assert suite["cases"]["scorer"] == ["match"]
    assert "mean() of scorer match()'s values (C/I) reduced by max" in report_md


def test_several_scorers_each_report_the_metric_under_its_own_name(tmp_path):
    suite, report_md, rc = convert(tmp_path, """
@task
def two():
    return Task(dataset=DATA, scorer=[match(numeric=True), f1(), match()], metrics=[accuracy()])
""")
    assert suite["cases"]["scorer"] == [{"match": {"numeric": True}, "metric": "match_accuracy"},
                                        {"f1": None, "metric": "f1_accuracy"},
                                        {"match": None, "metric": "match_2_accuracy"}]
    report = run(tmp_path, suite)
    assert metric_of(report, "match_accuracy") == 0.5
    assert abs(metric_of(report, "f1_accuracy") - (1 + 1 + 0 + 0.5) / 4) < 1e-9


def test_metrics_with_no_converted_scorer_or_not_a_list_are_listed(tmp_path):
    _, report_md, rc = convert(tmp_path, """
from mine import my_scorer

@task
def custom():
    return Task(dataset=DATA, scorer=my_scorer(), metrics=[accuracy(), stderr()])
""")
    assert rc == 3 and "accuracy(): no scorer was converted to report it on" in report_md
    (tmp_path / "dict").mkdir()
    _, report_md, rc = convert(tmp_path / "dict", """
@task
def per_scorer():
    return Task(dataset=DATA, scorer=match(), metrics={"match": [accuracy()]})
""")
    assert rc == 3 and "(a list of metrics is)" in report_md


def test_a_scorer_items_metric_must_be_a_name(tmp_path):
    (tmp_path / "samples.jsonl").write_text('{"input": "q1", "target": "2", "id": "q1"}\n')
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({
        "name": "s", "subject": {"type": "mock"},
        "cases": {"format": "inspect", "path": "samples.jsonl", "solver": ["generate"],
                  "scorer": [{"match": None, "metric": 3}]}}))
    done = scoreboard(["run", "suite.yaml", "--output", "r.json"], tmp_path)
    assert done.returncode == 1
    assert "scorer.0.metric" in done.stderr and "metric is a metric's name" in done.stderr


def test_accuracy_under_a_max_reducer_names_the_reducer_figure(tmp_path):
    suite, report_md, rc = convert(tmp_path, """
from inspect_ai import Epochs

@task
def acc_max():
    return Task(dataset=DATA, scorer=match(numeric=True), epochs=Epochs(2, "max"), metrics=[accuracy()])
""")
    assert rc == 0, report_md
    assert suite["cases"]["scorer"] == [{"match": {"numeric": True}, "metric": "accuracy"}]
    assert suite["reducers"] == ["max"] and suite["runs"] == 2
    assert "under epochs reducer(s) max" in report_md and "reducer:NAME" in report_md
    report = run(tmp_path, suite)
    (variant,) = report["summary"]["variants"].values()
    assert variant["metrics"]["accuracy"]["value"] == 0.5  # the subject answers alike each run


def test_multiple_choice_accuracy_is_the_choice_graders_metric(tmp_path):
    (tmp_path / "task.py").write_text('''from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import accuracy, choice, stderr
from inspect_ai.solver import multiple_choice

@task
def mc():
    return Task(dataset=[Sample(input="q1 Pick", choices=["x", "y"], target="B", id="1"),
                         Sample(input="q2 Pick again", choices=["x", "y"], target="A", id="2")],
                solver=multiple_choice(), scorer=choice(), metrics=[accuracy(), stderr()])
''')
    done = scoreboard(["import", "inspect", "task.py", "--output", "out"], tmp_path)
    assert done.returncode in (0, 3), done.stderr
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert suite["cases"]["scorer"] == [{"choice": None, "metric": "accuracy"}]
    # a subject that always answers B
    (tmp_path / "out" / "subj.py").write_text("def reply(given):\n    return 'ANSWER: B'\n")
    suite["subject"] = {"type": "python", "function": "subj:reply", "model_free": True}
    (tmp_path / "out" / "suite.yaml").write_text(yaml.safe_dump(suite))
    done = scoreboard(["run", "out/suite.yaml", "--output", "report.json"], tmp_path)
    assert done.returncode in (0, 3), done.stderr
    # B is right on the first sample, wrong on the second
    assert metric_of(json.loads((tmp_path / "report.json").read_text()), "accuracy") == 0.5
