"""`inspect-model-graded`: Inspect AI's model_graded_qa / model_graded_fact, exactly.

    graders: [{inspect-model-graded: {scorer: model_graded_fact, partial_credit: true}}]

A port of inspect_ai 0.3.285's scorer/_model.py (`scoreboard import inspect` writes it). The
judge (the suite's `judge:`) is sent one user message and nothing else (no system message, no
schema): the grading template (`template`, else Inspect's DEFAULT_MODEL_GRADED_QA_TEMPLATE or,
for model_graded_fact, its DEFAULT_MODEL_GRADED_FACT_TEMPLATE) filled by str.format with
`question` (the sample's input text: the `question` option the import writes per case, else the
case's input, its last user message; with `include_history: true` the conversation as Inspect's
chat_history writes it, the answer last), `answer` (the output), `criterion` (the target: a
list's items joined), `instructions` (given, else Inspect's default_instructions(partial_credit))
and the case's metadata; `[BEGIN DATA]` / `[END DATA]` in the data are neutralised as Inspect
does. The reply is free text, searched with the grade pattern as Inspect searches it: with the
default instructions and pattern, the last `GRADE: <word>` (C/I, with partial_credit also P, or
Correct / Incorrect / Partial); with custom instructions, the last `GRADE: [CPI]`; a custom
`grade_pattern`'s first group is the value, read as Inspect's accuracy reads it (C 1, P 0.5,
I 0, yes/true 1, no/false 0, a number; any other text 0, as Inspect scores it). C passes; P
scores 0.5 and fails. No grade in the reply (Inspect: unscored, "Grade not found in model
output") is a judge failure, not assessed, never a pass or fail.
"""

from __future__ import annotations

import math
import re
import string
from typing import Any

from ..graders.base import option_error, short
from ..graders.grade import Grade, GradeContext
from .graders import _JudgeGrader

DEFAULT_MODEL_GRADED_QA_TEMPLATE = """
You are assessing a submitted answer on a given task based on a criterion. Here is the data:

[BEGIN DATA]
***
[Task]: {question}
***
[Submission]: {answer}
***
[Criterion]: {criterion}
***
[END DATA]

Does the submission meet the criterion?

{instructions}
"""

DEFAULT_MODEL_GRADED_FACT_TEMPLATE = """
You are comparing a submitted answer to an expert answer on a given question. Here is the data:

[BEGIN DATA]
************
[Question]: {question}
************
[Expert]: {criterion}
************
[Submission]: {answer}
************
[END DATA]

Compare the factual content of the submitted answer with the expert answer. Ignore any differences in style, \
grammar, or punctuation.

Does the submission contain the content in the expert answer?

{instructions}
"""

TEMPLATES = {"model_graded_qa": DEFAULT_MODEL_GRADED_QA_TEMPLATE,
             "model_graded_fact": DEFAULT_MODEL_GRADED_FACT_TEMPLATE}


def default_instructions(partial_credit: bool) -> str:
    letter = "P" if partial_credit else ""
    partial = '"P" for partially correct answers,' if partial_credit else ""
    return f"""
After assessing the submitted answer, reply with 'GRADE: $LETTER' (without quotes) where LETTER is one of \
C{letter}I.  Please choose ONE option for the grade: either "C" for correct answers, {partial}or "I" for incorrect \
answers.

For example, after reviewing a correct answer you might write 'GRADE: C' or after reviewing an incorrect answer \
you might write 'GRADE: I'.

First, write out in a step by step manner your reasoning about the criterion to be sure that your conclusion is \
correct. Avoid simply stating the correct answers at the outset. Then, end with your answer formatted as 'GRADE: \
$LETTER' (without quotes) where LETTER is one of C{letter}I.
"""


_SPACING = r"[\s\u200b\u200c\u200d\u200e\u200f\u2060\u2063\ufeff]*"
DEFAULT_GRADE_PATTERN = rf"(?is).*(?<!\w)GRADE(?!\w){_SPACING}:{_SPACING}([CPI])"
PERMISSIVE_GRADE_PATTERN = rf"(?is).*(?<!\w)GRADE(?!\w){_SPACING}:{_SPACING}(\w*)"
WORDS = {"c": "C", "correct": "C", "i": "I", "incorrect": "I", "p": "P", "partial": "P"}
RESERVED = ("question", "answer", "criterion", "instructions")
_DELIMITER = re.compile(r"\[(BEGIN|END) DATA\]", re.IGNORECASE)
#: the most characters a filled template may hold (a field's width can make text before any limit sees it)
MAX_PROMPT = 16 * 1024 * 1024


def neutralize(value: Any) -> Any:
    """Inspect's neutralize_structural_delimiters, on text and the texts inside lists and dicts."""
    if isinstance(value, str):
        return _DELIMITER.sub(lambda m: m.group(0).replace(" ", "-"), value)
    if isinstance(value, dict):
        return {k: neutralize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [neutralize(v) for v in value]
    return value


def value_to_float(value: str) -> float:
    """inspect_ai scorer/_metric.py value_to_float for a captured text."""
    if value == "C":
        return 1.0
    if value == "P":
        return 0.5
    if value in ("I", "N"):
        return 0.0
    low = value.lower()
    if low in ("yes", "true"):
        return 1.0
    if low in ("no", "false"):
        return 0.0
    try:
        number = float(low)
    except ValueError:
        return 0.0  # Inspect: "Unable to convert value to float", scored 0
    return number if math.isfinite(number) else 0.0


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def _content(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return "" if content is None else str(content)


def chat_history(messages: list[dict], output: str) -> str:
    """inspect_ai scorer/_model.py chat_history: the messages but system ones, through the
    answer; the first message's text, then `User: ...` / `Assistant: ...`."""
    shown = [m for m in messages if m.get("role") != "system"] + [{"role": "assistant", "content": output}]
    history = [_content(shown[0])]
    for m in shown[1:]:
        if m.get("role") == "user":
            history.append(f"User: {_content(m)}")
        elif m.get("role") == "assistant":
            history.append("Assistant: " + _content(m))
        elif m.get("role") == "tool":
            history.append(f"Tool ({m.get('name') or m.get('function') or ''}): {_content(m)}")
    return "\n\n".join(history)


class InspectModelGradedGrader(_JudgeGrader):
    """Inspect's model_graded_qa / model_graded_fact: a free-text judge and its GRADE."""

    name = "inspect-model-graded"
    allowed = ("scorer", "template", "instructions", "grade_pattern", "partial_credit", "include_history",
               "question")

    @classmethod
    def parse_options(cls, value: Any) -> dict:
        if not isinstance(value, dict):
            raise option_error(cls.name, f"options are a mapping with 'scorer', got {short(value)}")
        from ..graders.base import check_keys

        check_keys(cls.name, value, cls.allowed)
        out = dict(value)
        if out.get("scorer") not in TEMPLATES:
            raise option_error(cls.name, f"'scorer' is model_graded_qa or model_graded_fact, got "
                                         f"{short(out.get('scorer'))}")
        for key in ("template", "instructions", "question"):
            if key in out and not isinstance(out[key], str):
                raise option_error(cls.name, f"{key!r} is a text, got {short(out[key])}")
        for key in ("partial_credit", "include_history"):
            if not isinstance(out.setdefault(key, False), bool):
                raise option_error(cls.name, f"{key!r} is true or false, got {short(out[key])}")
        template = out.get("template") or TEMPLATES[out["scorer"]]
        try:
            fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
        except ValueError as exc:
            raise option_error(cls.name, f"the template is not a str.format template: {exc}") from None
        odd = next((f for f in fields if not f or not re.fullmatch(r"\w+(\[\w+\])*", f)), None)
        if odd is not None:
            raise option_error(cls.name, f"the template's field {{{odd}}} is not converted (names and [key] only)")
        pattern = out.get("grade_pattern")
        if pattern is not None:
            if not isinstance(pattern, str):
                raise option_error(cls.name, f"'grade_pattern' is a regular expression, got {short(pattern)}")
            try:
                groups = re.compile(pattern).groups
            except re.error as exc:
                raise option_error(cls.name, f"'grade_pattern' is not a Python regular expression: {exc}") from None
            if groups < 1:
                raise option_error(cls.name, "'grade_pattern' needs a capture group: its first group is the grade")
        return out

    def prompt(self, ctx: GradeContext) -> str:
        o = self.options
        answer = ctx.output.text if ctx.output.text is not None else _text(ctx.output.json)
        if ctx.render is not None and ctx.output.text is not None:  # a rendered folder: its index.html, never its path
            answer = ctx.render.judged_source(answer)
        case_input = ctx.input  # a conversation turn: the messages it was sent
        if o["include_history"]:
            messages = case_input if isinstance(case_input, list) else [{"role": "user", "content": _text(case_input)}]
            question = chat_history(messages, answer)
        elif "question" in o:
            question = o["question"]
        elif isinstance(case_input, list):
            question = next((_content(m) for m in reversed(case_input) if m.get("role") == "user"), "")
        else:
            question = _text(case_input)
        metadata = {k: v for k, v in (ctx.case.metadata or {}).items() if k not in RESERVED}
        values = {**neutralize(metadata), "question": neutralize(question), "answer": neutralize(answer),
                  "criterion": neutralize(_text(ctx.expected)),
                  "instructions": o.get("instructions") or default_instructions(o["partial_credit"])}
        template = o.get("template") or TEMPLATES[o["scorer"]]
        from ..cases.mc_templates import filled_size

        if filled_size(template, {k: str(v) for k, v in values.items()}) > MAX_PROMPT:
            raise ValueError(f"the filled template would be larger than {MAX_PROMPT:,} characters (a field's "
                             "width, or a field repeated)")
        return template.format(**values)

    def parse(self, text: str) -> tuple[Any, str | None]:
        o = self.options
        custom = o.get("grade_pattern")
        validate = custom is None and not o.get("instructions")
        why = f"grade not found in the judge's reply (Inspect: unscored): {short(text, 200)}"
        if custom is not None:
            from ..bounded_regex import RegexTimeout, compile_bounded

            try:
                match = compile_bounded(custom).search(text)
            except RegexTimeout as exc:
                return None, str(exc)
            if match is None or match.group(1) is None:
                return None, why
            return match.group(1), None
        match = re.search(PERMISSIVE_GRADE_PATTERN if validate else DEFAULT_GRADE_PATTERN, text)
        if match is None:
            return None, why
        value = match.group(1)
        normalized = value.strip().lower()
        value = WORDS.get(normalized) or (value.strip().upper() if len(value.strip()) == 1 else None)
        offered = ("C", "P", "I") if o["partial_credit"] else ("C", "I")
        if value is None or (validate and value not in offered):
            return None, why
        return value, None

    async def judged(self, ctx: GradeContext) -> Grade:
        from .graders import _judge_extra

        try:
            prompt = self.prompt(ctx)
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
            return self.unassessed(f"the grading template did not fill for this case: {type(exc).__name__}: {exc} "
                                   "(Inspect: the sample errors)")
        judgment = await ctx.judge.ask_text(prompt, parse=self.parse)
        extra = _judge_extra(judgment)
        if judgment.value is None:
            return Grade(self.name, None, None, "judge split evenly across its runs: no majority", None, extra)
        value = judgment.value
        score = value_to_float(value)
        extra["grade"] = value
        said = judgment.explanations[0] if judgment.explanations else ""
        shown = value if len(value) <= 40 else value[:40] + "..."
        if not 0 <= score <= 1:
            return Grade(self.name, None, None, f"GRADE {shown}: Inspect scores it {score:g}, outside 0-1 (not "
                                                f"assessed): {short(said, 300)}", None, extra)
        known = value in ("C", "P", "I")
        reason = f"GRADE {shown} (score {score:g}" + ("" if known else ", as Inspect's accuracy reads it") \
            + f"): {short(said, 300)}"
        return Grade(self.name, score == 1.0, score, reason, None, extra)
