"""`scoreboard import inspect`: a task function's `if`/`else`, conditional expressions, `and`/`or`/`not`,
comparisons and plain assignments are read as Python runs them with the parameters' values (their
defaults, or `-T NAME=VALUE` as Inspect's -T gives them), never by running the file; a condition that
cannot be decided is listed with its file, line and text, and what its branches bind is not guessed.

Each converted suite is run against a loopback fake model server answering by which branch's prompt
it was sent: the grades are those Inspect's eval of the same task gives (the branch Python takes with
those values, then `match`: the answer "Paris" matches the target "Paris", "London" does not)."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from tests.cli_inprocess import run_cli
from tests.test_import_inspect import run_suite as _run_suite
from tests.test_import_inspect import write


def scoreboard(args, cwd):
    """`python -m scoreboard ARGS` (SCOREBOARD_STORE=none) in this process: these tests are about
    what the import converts and how the suite grades, not about the process."""
    return run_cli(args, cwd, dict(os.environ, SCOREBOARD_STORE="none"))


def run_suite(tmp: Path, suite: str, replies: dict) -> tuple[dict, list]:
    """tests/test_import_inspect.py's run_suite with the run in-process."""
    return _run_suite(tmp, suite, replies, cli=scoreboard)

HEAD = '''from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import match
from inspect_ai.solver import generate, system_message, chain_of_thought

SAMPLES = [Sample(input="Capital of France?", target="Paris", id="fr")]
'''

#: the fake model answers "Paris" when the prompt holds BRANCH-A, else "London"
REPLIES = {"BRANCH-A": "Paris", "": "London"}


def convert(tmp: Path, body: str, *task_args: str, out: str = "out"):
    write(tmp / "t.py", HEAD + body)
    args = [a for t in task_args for a in ("-T", t)]
    done = scoreboard(["import", "inspect", "t.py", "--output", out, *args], tmp)
    suite = yaml.safe_load((tmp / out / "suite.yaml").read_text()) if (tmp / out / "suite.yaml").is_file() else None
    return done, suite


def passed(tmp: Path, out: str = "out") -> bool:
    grades, _ = run_suite(tmp, f"{out}/suite.yaml", REPLIES)
    return grades["fr"][0][0][1]


IF_ELSE = '''
@task
def t(task_type: str = "intersentence"):
    if task_type == "intersentence":
        instructions = "BRANCH-A: answer with the city."
    else:
        instructions = "BRANCH-B: answer with another city."
    return Task(dataset=SAMPLES, solver=[system_message(instructions), generate()], scorer=match())
'''


def test_if_else_on_a_parameter_default_takes_pythons_branch_and_t_picks_the_other(tmp_path):
    done, suite = convert(tmp_path, IF_ELSE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert suite["cases"]["solver"] == [{"system_message": "BRANCH-A: answer with the city."}, "generate"]
    assert "line 11: `if task_type == 'intersentence':` is True" in done.stdout
    assert passed(tmp_path)  # Inspect: the system message of the if branch, "Paris" matches: C
    done, suite = convert(tmp_path, IF_ELSE, "task-type=intrasentence", out="out2")  # a dash is an underscore
    assert done.returncode == 0, done.stdout + done.stderr
    assert "parameter task_type of t() is 'intrasentence' (-T task_type=" in done.stdout
    assert suite["cases"]["solver"][0] == {"system_message": "BRANCH-B: answer with another city."}
    assert not passed(tmp_path, "out2")  # the else branch: "London": I


NONE_OR = '''
@task
def t(solver=None, grader_model=None, cot: bool = False):
    if grader_model is None:
        prompt = "BRANCH-A plain"
    elif grader_model is not None and cot:
        prompt = "BRANCH-B"
    else:
        prompt = "BRANCH-C"
    return Task(dataset=SAMPLES,
                solver=solver or [system_message(prompt), generate()],
                scorer=match(),
                config=GenerateConfig(max_tokens=5 if not cot else 512))
'''


def test_is_none_elif_or_and_a_conditional_expression_follow_python(tmp_path):
    done, suite = convert(tmp_path, NONE_OR)
    assert done.returncode == 0, done.stdout + done.stderr
    assert suite["cases"]["solver"] == [{"system_message": "BRANCH-A plain"}, "generate"]  # None or [...]: the list
    assert suite["subject"]["params"] == {"max_tokens": 5}  # `5 if not cot else 512`, cot False
    grades, requests = run_suite(tmp_path, "out/suite.yaml", REPLIES)
    assert grades["fr"][0][0][1] is True and requests[0]["max_tokens"] == 5
    # -T as Inspect reads it: YAML (`true`), so the elif is taken and max_tokens is 512
    done, suite = convert(tmp_path, NONE_OR, "grader_model=openai/gpt-4o", "cot=true", out="out2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert suite["cases"]["solver"][0] == {"system_message": "BRANCH-B"}
    assert suite["subject"]["params"] == {"max_tokens": 512}
    grades, requests = run_suite(tmp_path, "out2/suite.yaml", REPLIES)
    assert grades["fr"][0][0][1] is False and requests[0]["max_tokens"] == 512


RETURNS = '''
@task
def t(split: str = "test", fewshot: int = 0, subjects=[]):
    solver = [generate()]
    if split in ("test", "dev") and not fewshot and len(subjects) == 0:
        solver.insert(0, system_message("BRANCH-A"))
        return Task(dataset=SAMPLES, solver=solver, scorer=match())
    solver.append(chain_of_thought())
    return Task(dataset=SAMPLES, solver=[system_message("BRANCH-B"), generate()], scorer=match())
'''


def test_in_and_not_len_and_a_return_in_a_branch(tmp_path):
    done, suite = convert(tmp_path, RETURNS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert suite["cases"]["solver"] == [{"system_message": "BRANCH-A"}, "generate"]  # insert(0, ...) applied
    assert passed(tmp_path)
    # a text with commas is a list, as Inspect's -T splits it: len(subjects) == 2, the second return
    done, suite = convert(tmp_path, RETURNS, "subjects=math,law", out="out2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert suite["cases"]["solver"] == [{"system_message": "BRANCH-B"}, "generate"]
    assert not passed(tmp_path, "out2")


UNDECIDED = '''
import os

@task
def t(level: int = 1):
    solver = [system_message("BRANCH-A"), generate()]
    if os.environ.get("HARD"):
        solver.insert(0, system_message("be terse"))
    return Task(dataset=SAMPLES, solver=solver, scorer=match())
'''


def test_an_undecided_condition_is_listed_and_what_it_changes_is_not_guessed(tmp_path):
    # before: the `if` was listed but its solver.insert(...) ignored, and the suite written with the
    # solver as if the branch never ran (a guess at Inspect's prompt)
    done, suite = convert(tmp_path, UNDECIDED)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "t.py:14: `if os.environ.get('HARD'):` is not decided without running code" in done.stdout, done.stdout
    assert "solver is bound or changed in the `if os.environ.get('HARD'):` at line 14" in done.stdout
    assert "cases" not in suite or "BRANCH-A" not in str(suite["cases"].get("solver"))


def test_a_top_level_list_change_not_read_is_not_guessed_either(tmp_path):
    body = '''
@task
def t():
    solver = [system_message("BRANCH-A"), generate()]
    solver.sort(key=len)
    return Task(dataset=SAMPLES, solver=solver, scorer=match())
'''
    done, suite = convert(tmp_path, body)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "t.py:12: a statement in t() is not run (Expr" in done.stdout
    assert "solver is bound or changed by code (line 12)" in done.stdout


def test_what_python_would_refuse_or_not_run_is_unknown_never_a_guess(tmp_path):
    body = '''
@task
def t(n: int = 1, mode: str = "a"):
    if n in "12":
        prompt = "BRANCH-A"
    if mode == "b":
        late = "BRANCH-A"
    return Task(dataset=SAMPLES, solver=[system_message(late), generate()], scorer=match())
'''
    done, _ = convert(tmp_path, body)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "t.py:11: `if n in '12':` is not decided without running code (`n in '12'`: Python raises TypeError" \
        in done.stdout, done.stdout
    assert "late is read before it is bound (Python raises)" in done.stdout, done.stdout  # the branch not taken


def test_a_condition_is_never_run(tmp_path):
    body = '''
@task
def t():
    if open("RAN", "w") or len(open("RAN2", "w").name) > 0:
        p = "BRANCH-A"
    else:
        p = "x"
    return Task(dataset=SAMPLES, solver=[system_message(p), generate()], scorer=match())
'''
    done, _ = convert(tmp_path, body)
    assert done.returncode == 3 and "is not decided without running code" in done.stdout, done.stdout
    assert not (tmp_path / "RAN").exists() and not (tmp_path / "RAN2").exists()


def test_task_args_are_read_as_inspect_reads_them_and_bad_ones_are_one_line_errors(tmp_path):
    for args, expect in [(["cot"], "field '-T': 'cot' is not NAME=VALUE"),
                         (["nope=1"], "-T nope=...: no task imported has a parameter nope"),
                         (["cot=[1"], "'cot=[1': VALUE is not YAML"),
                         (["cot=2024-01-01"], "VALUE is a YAML date")]:
        write(tmp_path / "t.py", HEAD + NONE_OR)
        done = scoreboard(["import", "inspect", "t.py", "--output", "bad", *[x for a in args for x in ("-T", a)]],
                          tmp_path)
        assert done.returncode == 1 and expect in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "bad").exists()
    # `--task-arg` is -T's long name; a quoted YAML text stays a text
    done = scoreboard(["import", "inspect", "t.py", "--output", "ok", "--task-arg", "grader_model='1'"], tmp_path)
    assert done.returncode == 0 and "parameter grader_model of t() is '1'" in done.stdout, done.stdout + done.stderr


def test_a_return_of_a_function_defined_in_the_task_function_is_not_the_tasks(tmp_path):
    # inspect_evals truthfulqa.py: a record_to_sample defined in the task function, then an `if`
    body = '''
@task
def t(target: str = "mc1"):
    def record_to_sample(record):
        return Sample(input=record["question"], target="x")

    if target == "mc1":
        prompt = "BRANCH-A"
    else:
        prompt = "BRANCH-B"
    return Task(dataset=SAMPLES, solver=[system_message(prompt), generate()], scorer=match())
'''
    done, suite = convert(tmp_path, body)
    # a def in the task function is read (a call of it is, tests/test_probe15_inspect.py): not listed
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FunctionDef" not in done.stdout and "the task is not converted" not in done.stdout, done.stdout
    assert suite["cases"]["solver"][0] == {"system_message": "BRANCH-A"}
    assert passed(tmp_path)


def test_tuples_and_lists_compare_as_python_compares_them(tmp_path):
    # inspect_evals worldsense.py / apps: `x if isinstance(x, list) else [x]`, then len(x); a tuple is not a list
    body = '''
PAIR = ("a", "b")

@task
def t(names=[], reducers=("mean",)):
    names = names if isinstance(names, list) else [names]
    if len(names) > 0 or isinstance(reducers, list) or PAIR == ["a", "b"] or PAIR + ("c",) != ("a", "b", "c"):
        prompt = "BRANCH-B"
    else:
        prompt = "BRANCH-A"
    return Task(dataset=SAMPLES, solver=[system_message(prompt), generate()], scorer=match())
'''
    done, suite = convert(tmp_path, body)
    assert done.returncode == 0, done.stdout + done.stderr
    assert suite["cases"]["solver"][0] == {"system_message": "BRANCH-A"}
    assert passed(tmp_path)
    done, suite = convert(tmp_path, body, "names=Infer.normal", out="out2")  # a text: [text], len 1
    assert suite["cases"]["solver"][0] == {"system_message": "BRANCH-B"}
    assert not passed(tmp_path, "out2")


def test_a_long_elif_chain_is_read_without_recursion_and_noted_once(tmp_path):
    # a hostile (or generated) file: 1,500 elifs were a RecursionError ("internal error"), one frame each
    arms = "".join(f'    elif k == {i}:\n        prompt = "BRANCH-{"A" if i == 1499 else "B"}"\n' for i in range(1, 1500))
    body = ("\n@task\ndef t(k: int = 1499):\n    if k == 0:\n        prompt = 'x'\n" + arms +
            "    return Task(dataset=SAMPLES, solver=[system_message(prompt), generate()], scorer=match())\n")
    done, suite = convert(tmp_path, body)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert suite["cases"]["solver"][0] == {"system_message": "BRANCH-A"}
    assert done.stdout.count("(with the parameters' values)") == 1 and "`elif k == 1499:` is True" in done.stdout
    assert passed(tmp_path)


def test_reassignments_cannot_grow_a_value_without_bound(tmp_path):
    # reassignment is read in order since bcbe0dc: `x = [x, x]` 80 times (2**80 items written out) hung
    # the import, `x = [x]` 3,000 times and `x.append(x)` were a RecursionError; -T `&a [*a]` (YAML) too
    body = ("\n@task\ndef t():\n    x = [1]\n" + "    x = [x, x]\n" * 80 + "    y = 1\n" + "    y = [y]\n" * 3000 +
            "    s = [generate()]\n    s.append(s)\n    if x == 1 or y == 1 or s == 1:\n        pass\n"
            "    return Task(dataset=SAMPLES, solver=[system_message('BRANCH-A'), generate()], scorer=match())\n")
    done, suite = convert(tmp_path, body)
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr
    assert "`if x == 1 or y == 1 or s == 1:` is not decided without running code" in done.stdout
    assert "t.py:3094: a statement in t() is not run" in done.stdout  # s.append(s): not done
    assert suite["cases"]["solver"][0] == {"system_message": "BRANCH-A"}
    write(tmp_path / "u.py", HEAD + NONE_OR)
    done = scoreboard(["import", "inspect", "u.py", "--output", "bad", "-T", "cot=&a [*a]"], tmp_path)
    assert done.returncode == 1 and "VALUE holds itself" in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_module_constant_is_read_in_the_module_not_in_the_task_function(tmp_path):
    # PROMPT's SUFFIX is the module's (Python reads a module constant in the module); it was read
    # with the task function's local SUFFIX
    body = '''
SUFFIX = "BRANCH-A"
PROMPT = "Answer. " + SUFFIX

@task
def t():
    SUFFIX = "BRANCH-B"
    return Task(dataset=SAMPLES, solver=[system_message(PROMPT), user_message(SUFFIX), generate()], scorer=match())
'''
    done, suite = convert(tmp_path, body.replace("@task", "from inspect_ai.solver import user_message\n\n@task"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert suite["cases"]["solver"][:2] == [{"system_message": "Answer. BRANCH-A"}, {"user_message": "BRANCH-B"}]
    assert passed(tmp_path)


def test_an_if_in_the_helper_that_builds_the_task_reads_the_arguments_bound(tmp_path):
    # inspect_evals arc.py's shape: each @task returns a helper's Task; the helper branches on its argument
    body = '''
def build(level, extra=[]):
    solver = []
    if level <= 1 and not extra:
        solver.extend([system_message("BRANCH-A"), generate()])
    else:
        solver.extend([system_message("BRANCH-B"), generate()])
    return Task(dataset=SAMPLES, solver=solver, scorer=match())

@task
def easy(level: int = 1):
    return build(level)

@task
def hard():
    return build(2)
'''
    write(tmp_path / "t.py", HEAD + body)
    done = scoreboard(["import", "inspect", "t.py", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "task easy: line 11: `if level <= 1 and (not extra):` is True" in done.stdout, done.stdout
    assert "task hard: line 11: `if level <= 1 and (not extra):` is False" in done.stdout, done.stdout
    assert passed(tmp_path, "out/easy") and not passed(tmp_path, "out/hard")
    done = scoreboard(["import", "inspect", "t.py", "--output", "out2", "--task", "easy", "-T", "level=3"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not passed(tmp_path, "out2")
