"""`scoreboard import inspect`: model_graded_fact() and model_graded_qa(...) converted to the
`inspect-model-graded` judge grader, run against a loopback provider playing subject and judge.

How the expected requests and verdicts were established: each task file below was run with
inspect_ai 0.3.285 itself (`inspect_ai.eval(file, model="openai-api/mock/default")`, its
OpenAI-compatible client pointed at tests/servers/fake_provider.py giving the same replies; the
CUSTOM task's grader as model="openai-api/mock/judgeA", the same chat client, here spelled
"openai/judgeA" as the import converts it), and with scoreboard (import, then `scoreboard run`
against that server): every judge request was identical, message for message and parameter for
parameter (22 requests for FACTS, 18 for the second file), and every sample's score was the
same: Inspect's value C / P / I (or its custom pattern's capture), or unscored (NaN, "Grade not
found in model output") where scoreboard records a judge failure. CI has no Inspect, so the
requests and verdicts are written down here.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.servers.fake_provider import FakeProvider
from tests.test_import_inspect import scoreboard, write

INSTRUCTIONS_CI = (
    "\nAfter assessing the submitted answer, reply with 'GRADE: $LETTER' (without quotes) where LETTER is one of CI.  "
    "Please choose ONE option for the grade: either \"C\" for correct answers, or \"I\" for incorrect answers.\n\n"
    "For example, after reviewing a correct answer you might write 'GRADE: C' or after reviewing an incorrect answer "
    "you might write 'GRADE: I'.\n\nFirst, write out in a step by step manner your reasoning about the criterion to be "
    "sure that your conclusion is correct. Avoid simply stating the correct answers at the outset. Then, end with your "
    "answer formatted as 'GRADE: $LETTER' (without quotes) where LETTER is one of CI.\n")
INSTRUCTIONS_CPI = INSTRUCTIONS_CI.replace("one of CI.", "one of CPI.").replace(
    'answers, or "I"', 'answers, "P" for partially correct answers,or "I"')
FACT_HEAD = ("\nYou are comparing a submitted answer to an expert answer on a given question. Here is the data:\n\n"
             "[BEGIN DATA]\n************\n[Question]: {q}\n************\n[Expert]: {e}\n************\n"
             "[Submission]: {a}\n************\n[END DATA]\n\nCompare the factual content of the submitted answer "
             "with the expert answer. Ignore any differences in style, grammar, or punctuation.\n\nDoes the "
             "submission contain the content in the expert answer?\n\n")
QA_HEAD = ("\nYou are assessing a submitted answer on a given task based on a criterion. Here is the data:\n\n"
           "[BEGIN DATA]\n***\n[Task]: {q}\n***\n[Submission]: {a}\n***\n[Criterion]: {c}\n***\n[END DATA]\n\n"
           "Does the submission meet the criterion?\n\n")


def is_judge(req: dict) -> bool:
    text = "\n".join(m["content"] for m in req["messages"])
    return "[BEGIN DATA]" in text or "Rubric:" in text


def run_suite(tmp: Path, suite: str, replies: dict, judge_runs: int | None = None) -> tuple[dict, list, dict]:
    """Run a converted suite with subject and judge at a loopback server; replies by a key found in
    the prompt ("key|judge" for the judge). (case -> grades, judge requests, report)."""
    with FakeProvider(latency_ms=0) as srv:
        def reply(req):
            judge = is_judge(req)
            text = "\n".join(m["content"] for m in req["messages"])
            found = [r for key, r in replies.items() if key.split("|")[0] in text and key.endswith("|judge") == judge]
            return found[0] if not callable(found[0]) else found[0](req)

        srv.set_default("chat", {"reply": reply})
        data = yaml.safe_load((tmp / suite).read_text())
        data["subject"] = {**data["subject"], "base_url": srv.base_url + "/v1", "model": "default"}
        # the evaluated model (the import's placeholder) is "default" at the server, as in Inspect's run
        judge_model = "default" if data["judge"]["model"] == "gpt-4o-mini" else data["judge"]["model"]
        data["judge"] = {**data["judge"], "base_url": srv.base_url + "/v1", "model": judge_model}
        if judge_runs:
            data["judge_runs"] = judge_runs
        (tmp / suite).write_text(yaml.safe_dump(data))
        out = suite.replace("/", "-") + ".report.json"
        done = scoreboard(["run", suite, "--output", out], tmp)
        requests = [r["json"] for r in srv.requests]
    assert done.returncode in (0, 2, 3), done.stderr
    report = json.loads((tmp / out).read_text())
    grades = {a["case_id"]: [(g["passed"], g["score"], bool(g.get("judge_failure"))) for g in a["grades"]]
              for a in report["attempts"]}
    return grades, [r for r in requests if is_judge(r)], report


FACTS = '''from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, Sample, json_dataset
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import model_graded_fact, model_graded_qa
from inspect_ai.solver import generate, prompt_template, system_message


@task
def facts():
    return Task(
        dataset=json_dataset("facts.jsonl", FieldSpec(input="question", target="answer", metadata=["topic"])),
        solver=[system_message("You are terse."), prompt_template("Answer briefly: {prompt}"), generate()],
        scorer=model_graded_fact(),
        config=GenerateConfig(temperature=0.2, max_tokens=100),
    )


@task
def essays():
    return Task(
        dataset=[Sample(input="e1 Explain [END DATA] tides.", target=["Mentions the moon", " and gravity"], id="e1",
                        metadata={"level": "school"}),
                 Sample(input="e2 Explain rain.", target="Mentions condensation", id="e2", metadata={"level": "uni"}),
                 Sample(input="e3 Explain snow.", target="Mentions freezing", id="e3", metadata={"level": "uni"}),
                 Sample(input="e4 Explain wind.", target="Mentions pressure", id="e4", metadata={"level": "uni"}),
                 Sample(input="e5 Explain hail.", target="Mentions ice", id="e5", metadata={"level": "uni"})],
        solver=[generate()],
        scorer=model_graded_qa(partial_credit=True),
    )
'''
FACTS_DATA = [("f1 Capital of France?", "Paris"), ("f2 Largest planet?", "Jupiter"), ("f3 Water formula?", "H2O"),
              ("f4 Speed of light?", "About 300,000 km/s"), ("f5 Author of Hamlet?", "Shakespeare"),
              ("f6 Boiling point of water?", "100 C")]
REPLIES = {"f1|judge": "The answer says Paris.\nGRADE: C", "f2|judge": "Wrong planet. grade: i",
           "f3|judge": "I cannot decide.", "f4|judge": "At first GRADE: C but on reflection\nGRADE: I",
           "f5|judge": "GRADE: P", "f6|judge": "GRADE: Correct",
           "e1|judge": "GRADE: P", "e2|judge": "Reasoning. GRADE: C", "e3|judge": "grade: i",
           "e4|judge": "nothing here", "e5|judge": "GRADE: I then GRADE: C",
           "f1": "Paris", "f2": "Saturn", "f3": "H2O", "f4": "fast", "f5": "Marlowe", "f6": "100",
           "e1": "The moon [BEGIN DATA] pulls", "e2": "Water condenses", "e3": "Cold", "e4": "Air moves",
           "e5": "Ice balls"}


def import_facts(tmp_path):
    write(tmp_path / "t/tasks.py", FACTS)
    write(tmp_path / "t/facts.jsonl", "".join(json.dumps({"question": q, "answer": a, "topic": "x"}) + "\n"
                                              for q, a in FACTS_DATA))
    done = scoreboard(["import", "inspect", "t/tasks.py", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    return (tmp_path / "out/conversion-report.md").read_text()


def test_model_graded_fact_sends_inspects_prompt_and_gives_its_verdicts(tmp_path):
    report = import_facts(tmp_path)
    assert "model_graded" not in report.split("## Converted with a difference")[0].split("## Not converted")[1]
    suite = yaml.safe_load((tmp_path / "out/facts/suite.yaml").read_text())
    assert suite["cases"]["scorer"] == ["model_graded_fact"]
    # the grader is the evaluated model, sent the task's GenerateConfig (Inspect's judge request had them)
    assert suite["judge"] == {"type": "openai", "model": "gpt-4o-mini", "params": {"temperature": 0.2,
                                                                                  "max_tokens": 100}}
    grades, judged, _ = run_suite(tmp_path, "out/facts/suite.yaml", REPLIES)
    first = next(r for r in judged if "f1 Capital" in r["messages"][0]["content"])
    assert first["messages"] == [{"role": "user", "content": FACT_HEAD.format(
        q="f1 Capital of France?", e="Paris", a="Paris") + INSTRUCTIONS_CI + "\n"}]
    assert first["temperature"] == 0.2 and first["max_tokens"] == 100 and "response_format" not in first
    assert len(judged) == 6
    # Inspect: C, I, unscored, I (the last GRADE), unscored (P was not offered), C (GRADE: Correct)
    assert grades == {"1": [(True, 1.0, False)], "2": [(False, 0.0, False)], "3": [(None, None, True)],
                      "4": [(False, 0.0, False)], "5": [(None, None, True)], "6": [(True, 1.0, False)]}


def test_model_graded_qa_partial_credit_as_inspect(tmp_path):
    import_facts(tmp_path)
    suite = yaml.safe_load((tmp_path / "out/essays/suite.yaml").read_text())
    assert suite["cases"]["scorer"] == [{"model_graded_qa": {"partial_credit": True}}]
    assert suite["judge"] == {"type": "openai", "model": "gpt-4o-mini"}
    grades, judged, report = run_suite(tmp_path, "out/essays/suite.yaml", REPLIES)
    first = next(r for r in judged if "e1 Explain" in r["messages"][0]["content"])
    # the question is the sample's input; the target list joined; [BEGIN DATA] / [END DATA] neutralised
    assert first == {"model": "default", "messages": [{"role": "user", "content": QA_HEAD.format(
        q="e1 Explain [END-DATA] tides.", a="The moon [BEGIN-DATA] pulls", c="Mentions the moon and gravity")
        + INSTRUCTIONS_CPI + "\n"}]}
    # Inspect: P (0.5), C, I ("grade: i"), unscored (no grade), C (the last of two grades)
    assert grades == {"e1": [(False, 0.5, False)], "e2": [(True, 1.0, False)], "e3": [(False, 0.0, False)],
                      "e4": [(None, None, True)], "e5": [(True, 1.0, False)]}
    judges = report["summary"]["judges"]["variants"]
    assert next(iter(judges.values()))["judge_failures"] == 1 and next(iter(judges.values()))["judged"] == 4
    e4 = next(a for a in report["attempts"] if a["case_id"] == "e4")["grades"][0]
    assert "grade not found" in e4["reason"] and "nothing here" in e4["reason"]


def test_rescore_needs_allow_judge_and_verify_leaves_it_unchecked(tmp_path):
    import_facts(tmp_path)
    run_suite(tmp_path, "out/essays/suite.yaml", REPLIES)
    rep = "out-essays-suite.yaml.report.json"
    refused = scoreboard(["rescore", rep, "--output", "again.json"], tmp_path)
    assert refused.returncode == 1 and "'inspect-model-graded' calls a model: pass --allow-judge" in refused.stderr
    verified = scoreboard(["verify", rep], tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "inspect-model-graded (5 grades" in verified.stdout + verified.stderr


SECOND = '''from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, GenerateConfig
from inspect_ai.scorer import model_graded_fact, model_graded_qa
from inspect_ai.solver import generate, prompt_template, user_message

TEMPLATE = """Q: {question}
A: {answer}
Rubric: {criterion} (level {level})
{instructions}"""


@task
def custom():
    return Task(
        dataset=[Sample(input="c1 Say hi", target="greets", id="c1", metadata={"level": "easy"}),
                 Sample(input="c2 Say bye", target="parts", id="c2", metadata={"level": "hard"}),
                 Sample(input="c3 Say yo", target="greets", id="c3", metadata={"level": "easy"}),
                 Sample(input="c4 Say ok", target="greets", id="c4", metadata={"level": "easy"})],
        solver=[generate()],
        scorer=model_graded_qa(template=TEMPLATE, instructions="End with VERDICT: C or VERDICT: I or VERDICT: P.",
                               grade_pattern=r"VERDICT: (\\w)", model="openai/judgeA"),
        config=GenerateConfig(temperature=0.5),
    )


@task
def custom_instr():
    return Task(
        dataset=[Sample(input="d1 Say hi", target="greets", id="d1"),
                 Sample(input="d2 Say hi", target="greets", id="d2"),
                 Sample(input="d3 Say hi", target="greets", id="d3")],
        solver=[generate()],
        scorer=model_graded_fact(instructions="Reply GRADE: C or GRADE: I or GRADE: P."),
    )


@task
def history():
    return Task(
        dataset=[Sample(input=[ChatMessageSystem(content="sys"), ChatMessageUser(content="h1 first"),
                               ChatMessageAssistant(content="earlier reply"), ChatMessageUser(content="h1 second")],
                        target="ok", id="h1"),
                 Sample(input="h2 plain", target="ok", id="h2")],
        solver=[prompt_template("T: {prompt}"), user_message("follow up"), generate()],
        scorer=model_graded_qa(include_history=True),
    )
'''
REPLIES2 = {"c1|judge": "VERDICT: C", "c2|judge": "VERDICT: P", "c3|judge": "VERDICT: c", "c4|judge": "VERDICT: X",
            "d1|judge": "GRADE: P", "d2|judge": "GRADE: Partial", "d3|judge": "GRADE: cc",
            "h1|judge": "GRADE: C", "h2|judge": "GRADE: I",
            "c1": "hi", "c2": "bye", "c3": "yo", "c4": "ok", "d1": "hello", "d2": "hello", "d3": "hello",
            "h1": "reply", "h2": "reply"}


def test_custom_template_pattern_and_a_named_grader(tmp_path):
    write(tmp_path / "t2.py", SECOND)
    done = scoreboard(["import", "inspect", "t2.py", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = (tmp_path / "out/conversion-report.md").read_text()
    assert "any other text scores 0, as Inspect scores it" in report and "judge: openai/judgeA grades" in report
    suite = yaml.safe_load((tmp_path / "out/custom/suite.yaml").read_text())
    assert suite["judge"] == {"type": "openai", "model": "judgeA"}  # a named grader gets no task config
    grades, judged, _ = run_suite(tmp_path, "out/custom/suite.yaml", REPLIES2)
    two = next(r for r in judged if "c2 Say" in r["messages"][0]["content"])
    assert two == {"model": "judgeA", "messages": [{"role": "user", "content": (
        "Q: c2 Say bye\nA: bye\nRubric: parts (level hard)\nEnd with VERDICT: C or VERDICT: I or VERDICT: P.")}]}
    # Inspect: C, P, "c" and "X" (its accuracy reads either as 0)
    assert grades == {"c1": [(True, 1.0, False)], "c2": [(False, 0.5, False)], "c3": [(False, 0.0, False)],
                      "c4": [(False, 0.0, False)]}


def test_custom_instructions_and_history(tmp_path):
    write(tmp_path / "t2.py", SECOND)
    assert scoreboard(["import", "inspect", "t2.py", "--output", "out"], tmp_path).returncode == 0
    grades, judged, _ = run_suite(tmp_path, "out/custom_instr/suite.yaml", REPLIES2)
    first = next(r for r in judged if "d1 Say" in r["messages"][0]["content"])
    assert first["messages"][0]["content"] == FACT_HEAD.format(q="d1 Say hi", e="greets", a="hello") + (
        "Reply GRADE: C or GRADE: I or GRADE: P.\n")
    # custom instructions: every [CPI] grade counts (P, Partial -> P, "cc" -> C), as in Inspect
    assert grades == {"d1": [(False, 0.5, False)], "d2": [(False, 0.5, False)], "d3": [(True, 1.0, False)]}
    grades, judged, _ = run_suite(tmp_path, "out/history/suite.yaml", REPLIES2)
    h1 = next(r for r in judged if "h1 first" in r["messages"][0]["content"])
    assert h1["messages"][0]["content"] == QA_HEAD.format(
        q="h1 first\n\nAssistant: earlier reply\n\nUser: T: h1 second\n\nUser: follow up\n\nAssistant: reply",
        a="reply", c="ok") + INSTRUCTIONS_CI + "\n"
    h2 = next(r for r in judged if "h2 plain" in r["messages"][0]["content"])
    assert "[Task]: T: h2 plain\n\nUser: follow up\n\nAssistant: reply\n***" in h2["messages"][0]["content"]
    assert grades == {"h1": [(True, 1.0, False)], "h2": [(False, 0.0, False)]}


def test_judge_runs_take_the_majority_and_a_failing_judge_is_not_a_verdict(tmp_path):
    import_facts(tmp_path)
    calls: dict = {}

    def flaky(req):  # e2: C, I, C over three asks; e3: an HTTP-free but gradeless reply each time
        calls["e2"] = calls.get("e2", 0) + 1
        return ["GRADE: C", "GRADE: I", "GRADE: C"][(calls["e2"] - 1) % 3]

    replies = dict(REPLIES, **{"e2|judge": flaky})
    grades, judged, report = run_suite(tmp_path, "out/essays/suite.yaml", replies, judge_runs=3)
    assert len(judged) == 15
    assert grades["e2"] == [(True, 1.0, False)] and grades["e4"] == [(None, None, True)]
    e2 = next(a for a in report["attempts"] if a["case_id"] == "e2")["grades"][0]
    assert e2["judge"]["answers"] == ["C", "I", "C"] and abs(e2["judge"]["self_agreement"] - 2 / 3) < 1e-9


NOT_CONVERTED = '''from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes, model_graded_fact, model_graded_qa


def history_of(state):
    return "x"


@task
def panel():
    return Task(dataset=[Sample(input="q", target="a")],
                scorer=[includes(), model_graded_qa(model=["openai/a", "openai/b"])])


@task
def fn_history():
    return Task(dataset=[Sample(input="q", target="a")], scorer=model_graded_qa(include_history=history_of))


@task
def roles():
    return Task(dataset=[Sample(input="q", target="a")], scorer=model_graded_fact(),
                model_roles={"grader": "openai/big"})


@task
def two_graders():
    return Task(dataset=[Sample(input="q", target="a")],
                scorer=[model_graded_fact(model="openai/x"), model_graded_qa()])


@task
def no_group():
    return Task(dataset=[Sample(input="q", target="a")], scorer=model_graded_qa(grade_pattern="GRADE: C"))
'''


def test_what_cannot_be_converted_faithfully_is_listed(tmp_path):
    write(tmp_path / "n.py", NOT_CONVERTED)
    done = scoreboard(["import", "inspect", "n.py", "--output", "out"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    report = (tmp_path / "out/conversion-report.md").read_text()
    for line, what in [(13, "model= a list of 2 graders (Inspect takes their majority vote)"),
                       (18, "history_of (a function of the file"),
                       (23, "Task(model_roles=...) may bind the 'grader' role"),
                       (30, "differs from another scorer's (openai/x)"),
                       (35, "'grade_pattern' needs a capture group")]:
        assert any(f"n.py:{line}: " in row and what in row for row in report.splitlines()), (line, what, report)
    panel = yaml.safe_load((tmp_path / "out/panel/suite.yaml").read_text())
    assert panel["cases"]["scorer"] == ["includes"] and "judge" not in panel
    two = yaml.safe_load((tmp_path / "out/two_graders/suite.yaml").read_text())
    assert two["cases"]["scorer"] == ["model_graded_fact"] and two["judge"] == {"type": "openai", "model": "x"}
