"""`scoreboard import inspect TASKFILE.py`: Inspect AI task files converted statically (parsed,
never imported or run) and the converted suites run against a loopback provider.

Every expected request and verdict below was established by running the same task file with
inspect_ai 0.3.285 itself (`inspect_ai.eval(file, model="openai-api/mock/default")`, its
OpenAI-compatible client pointed at a loopback server giving the same replies) and with
scoreboard (import, then `scoreboard run` against that server): the messages each sent were
identical, request for request, and every sample's score was the same (120 scorer x sample
verdicts for SCORERS_TASKS, 5 for the multiple-choice file, 6 for the GSM file, 4 for
examples/inspect/tasks.py). CI has no Inspect, so the verdicts are written down here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider


def scoreboard(args, cwd):
    return run_cli(args, cwd, env=dict(os.environ, SCOREBOARD_STORE="none"))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run_suite(tmp: Path, suite: str, replies: dict, cli=None) -> tuple[dict, list]:
    """Run a converted suite against a loopback server replying by a key found in the prompt;
    each case's grades and every request sent."""
    with FakeProvider(latency_ms=0) as srv:
        def reply(req):
            text = "\n".join(m["content"] for m in req["messages"])
            return next(r for key, r in replies.items() if key in text)

        srv.set_default("chat", {"reply": reply})
        data = yaml.safe_load((tmp / suite).read_text())
        data["subject"] = {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m",
                           **({"params": data["subject"]["params"]} if "params" in data["subject"] else {})}
        (tmp / suite).write_text(yaml.safe_dump(data))
        out = suite.replace("/", "-") + ".report.json"
        done = (cli or scoreboard)(["run", suite, "--output", out], tmp)
        requests = [r["json"] for r in srv.requests]
    assert done.returncode in (0, 2, 3), done.stderr
    report = json.loads((tmp / out).read_text())
    grades: dict = {}
    for a in report["attempts"]:
        grades.setdefault(a["case_id"], []).append([(g["grader"], g["passed"], g["score"]) for g in a["grades"]])
    return grades, requests


# ---- a GSM8K-shaped task: a JSON file, FieldSpec, system message, template, numeric match -------

GSM_TASK = '''"""GSM8K-shaped."""
from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import match
from inspect_ai.solver import generate, prompt_template, system_message

SYSTEM = "You are a careful " + "math tutor."
TEMPLATE = """Solve the problem step by step. The last line of your response should be "ANSWER: $ANSWER".

{prompt}

Topic: {topic}"""


@task
def gsm(fewshot: int = 0):
    dataset = json_dataset("data/gsm.jsonl", FieldSpec(input="question", target="answer", metadata=["topic"]))
    return Task(
        dataset=dataset,
        solver=[system_message(SYSTEM), prompt_template(TEMPLATE), generate()],
        scorer=match(numeric=True),
        config=GenerateConfig(temperature=0.0, max_tokens=512),
        epochs=Epochs(2, "at_least_1"),
    )
'''
GSM_DATA = [{"question": "What is 2+2?", "answer": "4", "topic": "add"},
            {"question": "Half of 1,000?", "answer": "500", "topic": "div"},
            {"question": "What is 5*5?", "answer": "5", "topic": "mul"}]


def test_gsm_shape_converts_and_sends_what_inspect_sends(tmp_path):
    write(tmp_path / "task/gsm.py", GSM_TASK)
    write(tmp_path / "task/data/gsm.jsonl", "".join(json.dumps(r) + "\n" for r in GSM_DATA))
    done = scoreboard(["import", "inspect", "task/gsm.py", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    suite = yaml.safe_load((tmp_path / "out/suite.yaml").read_text())
    assert suite["runs"] == 2 and suite["reducers"] == [{"kind": "at_least", "k": 1}]
    assert suite["subject"]["params"] == {"temperature": 0.0, "max_tokens": 512}
    assert suite["cases"]["path"] == "data/gsm.jsonl" and (tmp_path / "out/data/gsm.jsonl").is_file()
    report = (tmp_path / "out/conversion-report.md").read_text()
    assert "nothing: everything converted" in report and "parameter fewshot" in report
    grades, requests = run_suite(tmp_path, "out/suite.yaml", {
        "2+2": "Thinking...\nANSWER: $4.00", "Half of": "It is 5,00 maybe\nANSWER: 500", "5*5": "25"})
    assert requests[0]["messages"] == [
        {"role": "system", "content": "You are a careful math tutor."},
        {"role": "user", "content": 'Solve the problem step by step. The last line of your response should be '
                                    '"ANSWER: $ANSWER".\n\nWhat is 2+2?\n\nTopic: add'}]
    assert requests[0]["temperature"] == 0.0 and requests[0]["max_tokens"] == 512
    assert len(requests) == 6  # epochs=2
    # Inspect: C, C, I (25 is not 5: the last number is compared whole)
    assert {cid: [g[0][1] for g in runs] for cid, runs in grades.items()} == {
        "1": [True, True], "2": [True, True], "3": [False, False]}


# ---- every converted scorer, against Inspect's verdicts -----------------------------------------

SCORERS_TASKS = '''from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import answer, exact, f1, includes, match, pattern
from inspect_ai.solver import chain_of_thought, generate, prompt_template, system_message, user_message

SAMPLES = [
    Sample(input="q1 capital of France?", target="Paris", id="q1", metadata={"subject": "geo"}),
    Sample(input="q2 capital of Italy?", target=["Rome", "Roma"], id="q2", metadata={"subject": "geo"}),
    Sample(input="q3 how many?", target="1,000", id="q3", metadata={"subject": "math"}),
    Sample(input="q4 half of five?", target="2.5", id="q4"),
    Sample(input="q5 last digit?", target="5", id="q5"),
    Sample(input="q6 pick?", target="B", id="q6"),
    Sample(input="q7 yes or no?", target="yes", id="q7"),
    Sample(input="q8 the phrase?", target="the quick brown fox", id="q8"),
]
DATA = MemoryDataset(SAMPLES)
PROMPT = "Subject: {subject}\\n{prompt}\\nUnknown: {missing}"

@task
def m_end():
    return Task(dataset=DATA, solver=[system_message("Be brief about {subject}."), prompt_template(PROMPT),
                                      generate()], scorer=match())

@task
def m_begin():
    return Task(dataset=DATA, solver=[chain_of_thought(), user_message("Answer now."), generate()],
                scorer=match("begin"))

@task
def m_any():
    return Task(dataset=DATA, scorer=match(location="any", ignore_case=False))

@task
def m_exact():
    return Task(dataset=DATA, scorer=match(location="exact"))

@task
def m_num():
    return Task(dataset=DATA, scorer=match(numeric=True))

@task
def m_num_begin():
    return Task(dataset=DATA, scorer=match("begin", numeric=True))

@task
def inc():
    return Task(dataset=DATA, scorer=includes())

@task
def inc_case():
    return Task(dataset=DATA, scorer=includes(ignore_case=False))

@task
def ex():
    return Task(dataset=DATA, scorer=exact())

@task
def f1s():
    return Task(dataset=DATA, scorer=f1())

@task
def pat():
    return Task(dataset=DATA, scorer=pattern(r"FINAL: (\\w+)"))

@task
def pat_all():
    return Task(dataset=DATA, scorer=pattern(r"(\\w+) AND (\\w+)", match_all=True))

@task
def ans_letter():
    return Task(dataset=DATA, scorer=answer("letter"))

@task
def ans_word():
    return Task(dataset=DATA, scorer=answer("word"))

@task
def ans_line():
    return Task(dataset=DATA, scorer=answer("line"))
'''
REPLIES = {"q1": "Well... The answer is paris.", "q2": "ROMA! FINAL: rome AND Roma",
           "q3": "$1,000.00 total\nANSWER: 1000", "q4": "2½ is it, FINAL: 2.5", "q5": "25",
           "q6": "I think (B).\nANSWER: B", "q7": "ANSWER: Yes.\n", "q8": "The quick-brown fox!"}
#: Inspect's verdict on q1..q8 for each task (1: C, 0: I), and f1's scores
INSPECT_VERDICTS = {
    "ans_letter": "00000100", "ans_line": "00000100", "ans_word": "00000110", "ex": "00000001",
    "inc": "11111110", "inc_case": "01111100", "m_any": "01111100", "m_begin": "01100000",
    "m_end": "11011110", "m_exact": "00000000", "m_num": "11110110", "m_num_begin": "01110000",
    "pat": "01000000", "pat_all": "01000000",
}
INSPECT_F1 = [0.4, 0.33, 0.4, 0.33, 0.0, 0.33, 0.67, 1.0]


def test_each_scorer_grades_as_inspect_does(tmp_path):
    """Each task's cases graded on the crafted outputs without a server: the cases exactly as the
    suite loads them, their graders built from the suite; one task also runs end to end."""
    from scoreboard.cases.case import Case
    from scoreboard.cases.datasets import load_dataset_records
    from scoreboard.graders.grade import GradeContext
    from scoreboard.graders.registry import build_grader
    from scoreboard.subjects.values import Measurements, Output

    write(tmp_path / "tasks.py", SCORERS_TASKS)
    done = scoreboard(["import", "inspect", "tasks.py", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    names = sorted(p.parent.name for p in (tmp_path / "out").glob("*/suite.yaml"))
    assert names == sorted([*INSPECT_VERDICTS, "f1s"])
    for name in names:
        suite = yaml.safe_load((tmp_path / "out" / name / "suite.yaml").read_text())
        records = load_dataset_records(suite["cases"], tmp_path / "out" / name, tmp_path / "out" / name,
                                       16 * 1024 * 1024, None)
        verdicts, scores = "", []
        for rec in records:
            case = Case(id=rec["id"], input=rec["input"], expected=rec["expected"])
            (grade,) = [build_grader(g).grade(GradeContext(case, Output(text=REPLIES[rec["id"]]), Measurements()))
                        for g in rec["graders"]]
            verdicts += "1" if grade.passed else "0"
            scores.append(grade.score)
        if name == "f1s":
            assert scores == INSPECT_F1
        else:
            assert verdicts == INSPECT_VERDICTS[name], name
    grades, requests = run_suite(tmp_path, "out/m_end/suite.yaml", REPLIES)
    assert "".join("1" if grades[f"q{i}"][0][0][1] else "0" for i in range(1, 9)) == INSPECT_VERDICTS["m_end"]
    by_q = {r["messages"][-1]["content"].split("\n")[1][:2]: r["messages"] for r in requests}
    # metadata fills {subject}; an unknown name ({missing}, and {subject} with no metadata) stays
    assert by_q["q1"] == [{"role": "system", "content": "Be brief about geo."},
                          {"role": "user", "content": "Subject: geo\nq1 capital of France?\nUnknown: {missing}"}]
    assert by_q["q4"][0] == {"role": "system", "content": "Be brief about {subject}."}


# ---- ARC / MMLU shapes: multiple choice ---------------------------------------------------------

MC_TASKS = '''from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, csv_dataset, json_dataset
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice, system_message

@task
def arc():
    return Task(
        dataset=json_dataset("data/arc.jsonl", shuffle_choices=7),
        solver=[system_message("You are a science teacher."), multiple_choice()],
        scorer=choice(),
    )

@task(name="mmlu_cot")
def mmlu():
    return Task(
        csv_dataset("data/mmlu.csv", FieldSpec(input="question", target="answer", choices="options", id="qid")),
        solver=multiple_choice(cot=True),
        scorer=choice(),
    )
'''
ARC = [{"input": "a1 Which is a gas?", "choices": ["Iron", "Oxygen", "Wood", "Salt"], "target": "B", "id": "a1"},
       {"input": "a2 Which is liquid?", "choices": ["Water", "Rock", "Sand"], "target": "A", "id": "a2"},
       {"input": "a3 Which is a star?", "choices": ["Moon", "Sun", "Mars", "Earth"], "target": "B", "id": "a3"}]


def test_multiple_choice_tasks_render_and_score_as_inspect(tmp_path):
    write(tmp_path / "mc.py", MC_TASKS)
    write(tmp_path / "data/arc.jsonl", "".join(json.dumps(r) + "\n" for r in ARC))
    write(tmp_path / "data/mmlu.csv", 'qid,question,options,answer\nm1,m1 2+3?,"4,5,6",B\n'
                                      'm2,m2 capital of Peru?,"Lima,Quito",A\n')
    done = scoreboard(["import", "inspect", "mc.py", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out/mmlu_cot/suite.yaml").is_file()
    replies = {"a1": "Oxygen is a gas.\nANSWER: B", "a2": "ANSWER: **A**", "a3": "ANSWER: D",
               "m1": "Step by step... ANSWER: B", "m2": "Hmm\nANSWER: (A)"}
    grades, requests = run_suite(tmp_path, "out/arc/suite.yaml", replies)
    # Inspect: a1 C, a2 I (shuffle_choices=7 moved Water away from A), a3 I
    assert {c: g[0][0][1] for c, g in grades.items()} == {"a1": True, "a2": False, "a3": False}
    first = next(r["messages"] for r in requests if "a1 Which" in r["messages"][-1]["content"])
    assert first[0] == {"role": "system", "content": "You are a science teacher."}
    assert first[1]["content"].startswith(
        "Answer the following multiple choice question. The entire content of your response should be of the "
        "following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of A,B,C,D.\n\na1 Which is a gas?"
        "\n\n")
    grades, requests = run_suite(tmp_path, "out/mmlu_cot/suite.yaml", replies)
    assert {c: g[0][0][1] for c, g in grades.items()} == {"m1": True, "m2": True}
    assert "Think step by step before answering.\n\nm1 2+3?\n\nA) 4\nB) 5\nC) 6" in requests[0]["messages"][-1][
        "content"] or "Think step by step before answering.\n\nm1 2+3?\n\nA) 4\nB) 5\nC) 6" in requests[1][
        "messages"][-1]["content"]


# ---- what is not converted is listed, FILE:LINE each ---------------------------------------------

PARTIAL = '''from inspect_ai import Task, task
from inspect_ai.dataset import Sample, hf_dataset, json_dataset
from inspect_ai.scorer import includes, model_graded_qa
from inspect_ai.solver import generate, self_critique, system_message

def record_to_sample(record):
    return Sample(input=record["q"], target=record["a"])

NAME = "x"

@task
def hub():
    return Task(dataset=hf_dataset("openai/gsm8k", split="test"), scorer=includes())

@task
def mapped():
    return Task(dataset=json_dataset("d.jsonl", record_to_sample), scorer=includes())

@task
def partial():
    return Task(
        dataset=[Sample(input="hi", target="hello"), Sample(input=f"hi {NAME.title()}", target="x")],
        solver=[system_message(f"Be {NAME}"), generate(), self_critique()],
        scorer=[includes(), model_graded_qa(model=["openai/a", "openai/b"])],
    )
'''


def test_items_not_converted_are_listed_with_file_and_line(tmp_path):
    write(tmp_path / "t.py", PARTIAL)
    write(tmp_path / "d.jsonl", '{"q": "a", "a": "b"}\n')
    done = scoreboard(["import", "inspect", "t.py", "--output", "out"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    report = (tmp_path / "out/conversion-report.md").read_text()
    for line, what in [(13, "hf_dataset('openai/gsm8k', split='test') is not converted"),
                       (22, "an f-string with a computed part"), (23, "self_critique(...) after generate()"),
                       (24, "model_graded_qa(...): model= a list of 2 graders (Inspect takes their majority vote): "
                            "not converted")]:
        assert any(f"t.py:{line}: " in row and what in row for row in report.splitlines()), (line, what, report)
    # what converts is written: the partial task's first sample, its f-string system message is a
    # constant's value here
    partial = yaml.safe_load((tmp_path / "out/partial/suite.yaml").read_text())
    assert partial["cases"]["solver"] == [{"system_message": "Be x"}, "generate"]
    assert (tmp_path / "out/partial/samples.jsonl").read_text() == '{"input": "hi", "target": "hello"}\n'
    assert not (tmp_path / "out/hub/suite.yaml").read_text().count("cases:")
    # the record_to_sample is translated (not run) over the file's records
    assert (tmp_path / "out/mapped/samples.jsonl").read_text() == '{"input": "a", "target": "b"}\n'


def test_task_flag_picks_one_task(tmp_path):
    write(tmp_path / "mc.py", MC_TASKS)
    write(tmp_path / "data/arc.jsonl", "".join(json.dumps(r) + "\n" for r in ARC))
    done = scoreboard(["import", "inspect", "mc.py", "--task", "arc", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out/suite.yaml").is_file() and not (tmp_path / "out/arc").exists()
    bad = scoreboard(["import", "inspect", "mc.py", "--task", "nope", "--output", "out2"], tmp_path)
    assert bad.returncode == 1 and "no task 'nope' (the file's tasks: arc, mmlu_cot)" in bad.stderr
    assert not (tmp_path / "out2").exists()


# ---- hostile input -------------------------------------------------------------------------------

HARM = '''import os
import subprocess
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match

open(os.path.join(os.path.dirname(__file__), "MODULE_RAN"), "w").write("x")
os.system("touch SYSTEM_RAN")
__import__("pathlib").Path("IMPORT_RAN").touch()

class Meta(type):
    def __new__(mcs, *a):
        open("CLASS_RAN", "w")
        return super().__new__(mcs, *a)

@task(name="evil")
def evil(x=open("DEFAULT_RAN", "w")):
    subprocess.run(["touch", "BODY_RAN"])
    return Task(dataset=[Sample(input="hi", target="hello")], scorer=match())
'''


def test_the_task_file_is_never_executed(tmp_path):
    write(tmp_path / "evil.py", HARM)
    done = scoreboard(["import", "inspect", "evil.py", "--output", "out"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    for marker in ("MODULE_RAN", "SYSTEM_RAN", "IMPORT_RAN", "CLASS_RAN", "DEFAULT_RAN", "BODY_RAN"):
        assert not (tmp_path / marker).exists() and not (tmp_path / "out" / marker).exists(), marker
    report = (tmp_path / "out/conversion-report.md").read_text()
    assert "evil.py:18: a statement in evil() is not run" in report  # the body's call, listed
    assert (tmp_path / "out/samples.jsonl").is_file()


@pytest.mark.parametrize("body, where", [
    ('json_dataset("../secret.jsonl")', "field 'dataset.json_file'"),
    ('json_dataset("/etc/passwd")', "field 'dataset.json_file'"),
    ('csv_dataset("link.csv")', "field 'dataset.csv_file'"),
])
def test_a_dataset_path_leaving_the_folder_is_refused(tmp_path, body, where):
    write(tmp_path / "secret.jsonl", '{"input": "s", "target": "t"}\n')
    (tmp_path / "task").mkdir()
    (tmp_path / "task/link.csv").symlink_to(tmp_path / "secret.jsonl")
    write(tmp_path / "task/t.py", "from inspect_ai import Task, task\nfrom inspect_ai.dataset import csv_dataset, "
                                  f"json_dataset\n\n@task\ndef t():\n    return Task(dataset={body})\n")
    done = scoreboard(["import", "inspect", "task/t.py", "--output", "out"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    error = done.stderr.strip()
    assert len(error.splitlines()) == 1 and "task/t.py:6" in error and where in error, error
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("source, expect", [
    ("from inspect_ai import task\n\n@task\ndef t(:\n    pass\n", "t.py:4, field 'syntax': not valid Python"),
    ("def t():\n    return 1\n", "no @task function in the file"),
    ("from inspect_ai import Task, task\nA = 'x' * 1\nB = 'ab'\n" + "".join(f"B{i} = B{i - 1 if i else ''} + "
                                                                                 f"B{i - 1 if i else ''}\n"
                                                                                 for i in range(40))
     + "@task\ndef t():\n    return Task(dataset=[], solver=[], scorer=[], name=B39)\n", "larger than"),
    ("x = " + "[" * 200_000 + "]" * 200_000 + "\n", "field 'syntax'"),
])
def test_invalid_task_files_are_one_line_errors(tmp_path, source, expect):
    write(tmp_path / "t.py", source)
    done = scoreboard(["import", "inspect", "t.py", "--output", "out"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and expect in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_a_huge_dataset_file_is_refused_not_read(tmp_path):
    with open(tmp_path / "big.jsonl", "wb") as handle:
        handle.truncate(17 * 1024 * 1024)
    write(tmp_path / "t.py", "from inspect_ai import Task, task\nfrom inspect_ai.dataset import json_dataset\n\n"
                             "@task\ndef t():\n    return Task(dataset=json_dataset('big.jsonl'))\n")
    done = scoreboard(["import", "inspect", "t.py", "--output", "out"], tmp_path)
    assert done.returncode == 1 and "t.py:6" in done.stderr and "max_file_bytes" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_inspect_grader_pattern_is_bounded_and_numbers_read_as_inspect():
    from scoreboard.cases.case import Case
    from scoreboard.graders.grade import GradeContext
    from scoreboard.graders.registry import build_grader
    from scoreboard.subjects.values import Measurements, Output

    def grade(spec, output, expected):
        return build_grader({"inspect": spec}).grade(GradeContext(Case(id="c", input="x", expected=expected),
                                                                  Output(text=output), Measurements()))

    slow = grade({"scorer": "pattern", "pattern": r"^(a|aa)+$"}, "a" * 60 + "b", "a")
    assert slow.passed is None and "not assessed" in slow.reason  # catastrophic backtracking stops
    # inspect_ai's match_str: "十二" and fullwidth digits are 12; "<42" is a bound, not 42
    assert grade({"scorer": "match", "numeric": True}, "the answer is 十二", "12").passed is True
    assert grade({"scorer": "match", "numeric": True}, "ANSWER: １２", "12").passed is True
    assert grade({"scorer": "match", "numeric": True}, "about <42", "42").passed is False


# ---- chat input, format_template's rules, module import forms -------------------------------------

CHAT_TASK = '''import inspect_ai
import inspect_ai.solver as sv
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ChatMessageAssistant
from inspect_ai.scorer import includes, match

S = [
    Sample(input=[ChatMessageSystem(content="Orig system."), ChatMessageUser(content="c1 first"),
                  ChatMessageAssistant(content="ok"), ChatMessageUser(content="c1 second {n}")],
           target="yes", id="c1", metadata={"n": 3, "prompt": "META", "items": ["x", "y"]}),
    Sample(input="c2 plain {n}", target=["no", "nope"], id="c2", metadata={"n": 7.5, "items": ["p"]}),
    Sample(input="c3 none", target="maybe", id="c3"),
]
TPL = "P={prompt} n={n:>4} first={items[0]} lit={{x}} style={style}"

@task
def chat():
    return Task(dataset=MemoryDataset(S),
                solver=sv.chain(sv.system_message("Second system {n}"), sv.prompt_template(TPL, style="terse"),
                                sv.user_message("Then {items}"), sv.generate()),
                scorer=[includes(), match("any")])

@inspect_ai.task
def dotted():
    return Task(dataset=S, solver=sv.generate(), scorer=includes())
'''


def test_chat_samples_and_templates_follow_inspect(tmp_path):
    write(tmp_path / "t.py", CHAT_TASK)
    done = scoreboard(["import", "inspect", "t.py", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = (tmp_path / "out/conversion-report.md").read_text()
    assert "task dotted: dotted() (line 25): Inspect's `inspect eval FILE` (and FILE@dotted) does not find it" in report
    grades, requests = run_suite(tmp_path, "out/chat/suite.yaml", {"c1": "YES indeed", "c2": "Nope.",
                                                                   "c3": "maybe?"})
    # Inspect: includes C and match("any") C on all three
    assert all(g[0] == [("inspect", True, 1.0), ("inspect", True, 1.0)] for g in grades.values())
    sent = {next(k for k in ("c1", "c2", "c3") if any(k in m["content"] for m in r["messages"])): r["messages"]
            for r in requests}
    # the messages Inspect sent, request for request
    assert sent["c1"] == [
        {"role": "system", "content": "Orig system."}, {"role": "system", "content": "Second system 3"},
        {"role": "user", "content": "c1 first"}, {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "P=c1 second {n} n=   3 first=x lit={x} style=terse"},
        {"role": "user", "content": "Then ['x', 'y']"}]
    assert sent["c2"] == [
        {"role": "system", "content": "Second system 7.5"},
        {"role": "user", "content": "P=c2 plain {n} n= 7.5 first=p lit={x} style=terse"},
        {"role": "user", "content": "Then ['p']"}]
    assert sent["c3"] == [
        {"role": "system", "content": "Second system {n}"},
        {"role": "user", "content": "P=c3 none n= {n} first={items[0]} lit={x} style=terse"},
        {"role": "user", "content": "Then {items}"}]


def test_a_template_naming_a_file_is_its_text_and_module_datasets_resolve(tmp_path):
    write(tmp_path / "d.tsv", "input\ttarget\nhello\tworld\n")
    write(tmp_path / "prompt.txt", "Q: {prompt}\nA:")
    write(tmp_path / "t.py", "from inspect_ai import Task, task\nfrom inspect_ai.dataset import file_dataset\n"
                             "from inspect_ai.scorer import includes\n"
                             "from inspect_ai.solver import generate, prompt_template\n\n"
                             "DATASET = file_dataset('d.tsv')\n\n@task\ndef tsv():\n    return Task(dataset=DATASET, "
                             "solver=[prompt_template('prompt.txt'), generate()], scorer=includes())\n")
    done = scoreboard(["import", "inspect", "t.py", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    grades, requests = run_suite(tmp_path, "out/suite.yaml", {"hello": "the World"})
    assert requests[0]["messages"] == [{"role": "user", "content": "Q: hello\nA:"}]
    assert grades["1"][0] == [("inspect", True, 1.0)]


def test_an_unseeded_shuffle_is_listed_not_refused(tmp_path):
    """Inspect shuffles in another order on every run without a seed; the reader refuses an
    unseeded shuffle, so the import used to stop with exit 1 on a valid task file."""
    write(tmp_path / "s.jsonl", '{"input": "a", "target": "b"}\n{"input": "c", "target": "d"}\n')
    write(tmp_path / "t.py", "from inspect_ai import Task, task\nfrom inspect_ai.dataset import json_dataset\n\n"
                             "@task\ndef sh():\n    return Task(dataset=json_dataset('s.jsonl', shuffle=True))\n")
    done = scoreboard(["import", "inspect", "t.py", "--output", "out"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "t.py:6: dataset shuffle=True without a seed" in (tmp_path / "out/conversion-report.md").read_text()
    assert "shuffle" not in yaml.safe_load((tmp_path / "out/suite.yaml").read_text())["cases"]


def test_a_solver_that_never_generates_is_listed(tmp_path):
    write(tmp_path / "t.py", "from inspect_ai import Task, task\nfrom inspect_ai.dataset import Sample\n"
                             "from inspect_ai.solver import system_message\n\n@task\ndef t():\n"
                             "    return Task(dataset=[Sample(input='a', target='b')], solver=[system_message('s')])\n")
    done = scoreboard(["import", "inspect", "t.py", "--output", "out"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "t.py:7: the solver never generates" in (tmp_path / "out/conversion-report.md").read_text()
