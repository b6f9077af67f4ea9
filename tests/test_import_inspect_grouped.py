"""Inspect's `grouped(accuracy(), KEY)` in Task(metrics=[...]) imported as the cases' `group_by`
(importers/inspect_grouped.py, cases/datasets_inspect.group_name): the summary's pass rate by
category is grouped()'s value per group.

The expected figures were established with inspect_ai 0.3.285's own grouped() (scorer/_metrics/
grouped.py) over the same sample scores: for ARITH below, `grouped(accuracy(), "domain")` gives
{"add": 0.5, "mul": 1.0, "all": 0.75}, `grouped(mean(), "level", all="groups",
name_template="L{group_name}")` {"L1": 1.0, "L2.0": 0.0, "LNone": 1.0, "all": 0.667}, and a sample
without the key makes it raise ValueError ("Sample q3 has no domain metadata"). CI has no Inspect,
so the values are written down here."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.test_import_inspect_more import convert as import_task
from tests.test_import_inspect_more import scoreboard

HEAD = """from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import accuracy, f1, grouped, match, mean, std, stderr
from inspect_ai.solver import generate

ARITH = [Sample(input="q1 what is 1+1?", target="2", id="q1", metadata={"domain": "add", "level": 1}),
         Sample(input="q2 what is 2+2?", target="4", id="q2", metadata={"domain": "add", "level": 2.0}),
         Sample(input="q3 what is 3*3?", target="9", id="q3", metadata={"domain": "mul", "level": None}),
         Sample(input="q4 what is 4*4?", target="16", id="q4", metadata={"domain": "mul", "level": 1})]
"""

# the model under test: q2 wrong, the others right
SUBJECT = '''
ANSWERS = {"q1": "2", "q2": "5", "q3": "9", "q4": "16"}

def reply(given):
    text = given if isinstance(given, str) else given[-1]["content"]
    return ANSWERS[text.split()[0]]
'''


def convert(tmp: Path, body: str) -> tuple[dict, str, int]:
    return import_task(tmp, body, HEAD)


def listed(report_md: str) -> str:
    return report_md.split("## Not converted")[1].split("##")[0] if "## Not converted" in report_md else ""


def by_category(tmp: Path, suite: dict) -> tuple[float, dict]:
    (tmp / "out" / "subj.py").write_text(SUBJECT, encoding="utf-8")
    suite["subject"] = {"type": "python", "function": "subj:reply", "model_free": True}
    (tmp / "out" / "suite.yaml").write_text(yaml.safe_dump(suite))
    done = scoreboard(["run", "out/suite.yaml", "--output", "report.json", "--format", "json,md"], tmp)
    assert done.returncode == 0, done.stderr
    (variant,) = json.loads((tmp / "report.json").read_text())["summary"]["variants"].values()
    return variant["pass_rate"], {k: c["pass_rate"] for k, c in variant["by_category"].items()}


def test_grouped_accuracy_is_the_pass_rate_by_category(tmp_path):
    suite, report_md, rc = convert(tmp_path, """
@task
def arith():
    return Task(dataset=ARITH, solver=[generate()], scorer=match(numeric=True),
                metrics=[grouped(accuracy(), "domain"), stderr()])
""")
    assert rc == 0, report_md  # nothing listed: grouped() and stderr() both stand converted
    assert suite["cases"]["group_by"] == "domain"
    assert "grouped(accuracy(), 'domain') (line 14): each case's category is str() of its metadata's 'domain'" \
        in report_md
    assert "its 'all' value (all='samples') is the variant's pass rate" in report_md
    assert "stands in for Inspect's stderr()" in report_md
    overall, groups = by_category(tmp_path, suite)
    assert (overall, groups) == (0.75, {"add": 0.5, "mul": 1.0})  # Inspect: add 0.5, mul 1.0, all 0.75
    markdown = (tmp_path / "report.md").read_text()
    assert "add" in markdown and "mul" in markdown


def test_group_names_are_python_str_of_the_value(tmp_path):
    # Inspect groups by str(metadata[key]): 1 -> "1", 2.0 -> "2.0", None -> "None"
    suite, report_md, rc = convert(tmp_path, """
@task
def levels():
    return Task(dataset=ARITH, scorer=match(numeric=True),
                metrics=[grouped(mean(), "level", all="groups", name_template="L{group_name}")])
""")
    assert rc == 3
    assert suite["cases"]["group_by"] == "level"
    # the mean of the groups' values is not reported: listed; the name template is a difference
    assert "task.py:14: Task(metrics=...) grouped(mean(), 'level'): all='groups' (the mean of the groups' values) " \
           "is not reported" in listed(report_md)
    assert "name_template 'L{group_name}': scoreboard names each category by its value" in report_md
    assert by_category(tmp_path, suite)[1] == {"1": 1.0, "2.0": 0.0, "None": 1.0}


def test_a_sample_without_the_key_lists_the_grouped_metric_and_the_suite_still_runs(tmp_path):
    # Inspect's grouped() raises ValueError for q3 (no 'domain'): the eval ends in an error
    suite, report_md, rc = convert(tmp_path, """
DATA = ARITH[:2] + [Sample(input="q3 what is 3*3?", target="9", id="q3", metadata={"level": 3})]

@task
def partial():
    return Task(dataset=DATA, scorer=match(numeric=True), metrics=[accuracy(), grouped(accuracy(), "domain")])
""")
    assert rc == 3
    assert "group_by" not in suite["cases"]
    items = listed(report_md)
    assert "grouped(..., 'domain'): case q3: " in items and "has no 'domain'" in items
    assert "Inspect's grouped() raises ValueError" in items
    assert "each case's category is" not in report_md  # the conversion's note is not kept
    overall, groups = by_category(tmp_path, suite)
    assert overall == 2 / 3 and groups == {"uncategorised": 2 / 3}

    # a stderr() that only the grouped() gave a figure to stand beside is listed with it
    (tmp_path / "out").rename(tmp_path / "out1")
    suite, report_md, rc = convert(tmp_path, """
DATA = ARITH[:2] + [Sample(input="q3 what is 3*3?", target="9", id="q3", metadata={"level": 3})]

@task
def partial():
    return Task(dataset=DATA, scorer=match(numeric=True), metrics=[grouped(accuracy(), "domain"), stderr()])
""")
    assert rc == 3 and "group_by" not in suite["cases"]
    assert "; stderr() without accuracy() or mean(): not converted" in listed(report_md)
    assert "stands in for Inspect's stderr()" not in report_md


def test_what_grouped_cannot_be_is_listed_with_why(tmp_path):
    suite, report_md, rc = convert(tmp_path, """
@task
def several():
    return Task(dataset=ARITH, scorer=match(numeric=True),
                metrics=[grouped(accuracy(), "domain"), grouped(accuracy(), "level"), grouped(std(), "domain")])
""")
    assert rc == 3 and suite["cases"]["group_by"] == "domain"
    items = listed(report_md)
    assert "grouped(accuracy(), 'level'): a case has one category, and grouped() by 'domain' is the one converted" \
        in items
    assert "grouped(std(), 'domain'): only grouped(accuracy()) and grouped(mean()) of a pass/fail scorer" in items

    # a numeric scorer: its mean is not a pass rate
    (tmp_path / "out").rename(tmp_path / "out1")
    suite, report_md, rc = convert(tmp_path, """
@task
def numeric():
    return Task(dataset=ARITH, scorer=f1(), metrics=[grouped(mean(), "domain")])
""")
    assert rc == 3 and "group_by" not in suite["cases"]
    assert "scorer f1() scores other values than C and I" in listed(report_md)

    # another reducer: a sample's value is its reduced runs
    (tmp_path / "out").rename(tmp_path / "out2")
    suite, report_md, rc = convert(tmp_path, """
@task
def best_of():
    return Task(dataset=ARITH, scorer=match(), epochs=Epochs(3, "max"), metrics=[grouped(accuracy(), "domain")])
""")
    assert rc == 3 and "group_by" not in suite["cases"]
    assert "under the epochs reducer max" in listed(report_md)


def write_dataset_suite(tmp: Path, records: list[dict], **cases) -> None:
    (tmp / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    (tmp / "suite.yaml").write_text(yaml.safe_dump({
        "name": "g", "cases": {"format": "inspect", "path": "data.jsonl", **cases},
        "subject": {"type": "python", "function": "subj:reply", "model_free": True}}))
    (tmp / "subj.py").write_text(SUBJECT, encoding="utf-8")


def test_group_by_on_a_dataset_file(tmp_path):
    records = [{"id": "q1", "input": "q1 1+1", "target": "2", "metadata": {"domain": "add"}},
               {"id": "q2", "input": "q2 2+2", "target": "4", "metadata": {"domain": "add"}},
               {"id": "q3", "input": "q3 3*3", "target": "9", "metadata": {"domain": "mul"}}]
    write_dataset_suite(tmp_path, records, group_by="domain")
    done = scoreboard(["run", "suite.yaml", "--output", "r.json"], tmp_path)
    assert done.returncode == 0, done.stderr
    (variant,) = json.loads((tmp_path / "r.json").read_text())["summary"]["variants"].values()
    assert {k: (c["passed"], c["attempts"]) for k, c in variant["by_category"].items()} == {"add": (1, 2),
                                                                                            "mul": (1, 1)}
    # FieldSpec(metadata=[...]) fields are the metadata grouped() reads
    records = [{"id": "q1", "input": "q1 1+1", "target": "2", "domain": "add"},
               {"id": "q3", "input": "q3 3*3", "target": "9", "domain": "mul"}]
    write_dataset_suite(tmp_path, records, group_by="domain", fields={"metadata": ["domain"]})
    done = scoreboard(["run", "suite.yaml", "--output", "r2.json"], tmp_path)
    assert done.returncode == 0, done.stderr
    (variant,) = json.loads((tmp_path / "r2.json").read_text())["summary"]["variants"].values()
    assert sorted(variant["by_category"]) == ["add", "mul"]


def test_group_by_refuses_a_sample_without_the_key_and_a_second_category(tmp_path):
    records = [{"id": "q1", "input": "q1 1+1", "target": "2", "metadata": {"domain": "add"}},
               {"id": "q2", "input": "q2 2+2", "target": "4", "metadata": {"other": 1}}]
    write_dataset_suite(tmp_path, records, group_by="domain")
    done = scoreboard(["run", "suite.yaml", "--output", "r.json"], tmp_path)
    assert done.returncode == 1 and not (tmp_path / "r.json").exists()
    (line,) = [x for x in done.stderr.splitlines() if x.strip()]
    assert "data.jsonl:2" in line and "q2" in line and "group_by" in line, line
    assert "has no 'domain'" in line

    write_dataset_suite(tmp_path, records[:1], group_by="domain", fields={"category": "topic"})
    done = scoreboard(["run", "suite.yaml", "--output", "r.json"], tmp_path)
    assert done.returncode == 1
    assert "suite.yaml" in done.stderr and "cases.group_by" in done.stderr and "give one" in done.stderr
