"""Two Inspect AI tasks in the shapes of inspect_evals' ARC and GSM8K, with local files.

    scoreboard import inspect examples/inspect/tasks.py --output inspect-tasks

reads this file without running it (nothing here is imported or executed) and writes
inspect-tasks/arc/suite.yaml and inspect-tasks/arithmetic/suite.yaml.
"""

from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, csv_dataset, json_dataset
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import choice, match
from inspect_ai.solver import generate, multiple_choice, prompt_template, system_message

SYSTEM = "You are a careful science teacher."
MATH_TEMPLATE = """Solve the following problem. Put your final answer on its own line as "ANSWER: $ANSWER".

{prompt}"""


@task
def arc():
    return Task(
        dataset=json_dataset("arc.jsonl"),
        solver=[system_message(SYSTEM), multiple_choice()],
        scorer=choice(),
        config=GenerateConfig(temperature=0.0),
    )


@task
def arithmetic():
    dataset = csv_dataset("arithmetic.csv", FieldSpec(input="question", target="answer", id="qid"))
    return Task(
        dataset=dataset,
        solver=[prompt_template(MATH_TEMPLATE), generate()],
        scorer=match(numeric=True),
    )
