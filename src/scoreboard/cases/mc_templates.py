"""The multiple_choice solver's prompt templates (inspect_ai solver/_multiple_choice.py, byte for
byte) and the bound on what a template may fill one question into."""

from __future__ import annotations

import re
import string

SINGLE = ("Answer the following multiple choice question. The entire content of your response should be of the "
          "following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of {letters}.\n\n{question}\n\n"
          "{choices}")
SINGLE_COT = ("Answer the following multiple choice question. The last line of your response should be of the "
              "following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of {letters}. Think step by "
              "step before answering.\n\n{question}\n\n{choices}")
MULTIPLE = ("Answer the following multiple choice question where multiple answers may be correct. The entire "
            "content of your response should be of the following format: 'ANSWER: $LETTERS' (without quotes) "
            "where LETTERS is one or more of {letters}.\n\n{question}\n\n{choices}")
MULTIPLE_COT = ("Answer the following multiple choice question where multiple answers may be correct. The last "
                "line of your response should be of the following format: 'ANSWER: $LETTERS' (without quotes) "
                "where LETTERS is one or more of {letters}. Think step by step before answering.\n\n{question}\n\n"
                "{choices}")

def default_template(multiple: bool, cot: bool) -> str:
    """The multiple_choice solver's own template: one answer or several, with chain of thought or not."""
    return (MULTIPLE_COT if cot else MULTIPLE) if multiple else (SINGLE_COT if cot else SINGLE)


#: the most characters a `template` may fill one question into: a field width (`{letters:>999999999}`)
#: or a field repeated makes text before any limit could see it
MAX_FILLED = 16 * 1024 * 1024


def filled_size(template: str, values: dict[str, str]) -> int:
    """At least how many characters `template.format(**values)` makes, found before it is made
    (the text between fields, each field's value or its width, whichever is longer)."""
    total = 0
    for literal, name, spec, conversion in string.Formatter().parse(template):
        total += len(literal)
        if name is None:
            continue
        value = values.get(re.split(r"[.\[]", name, maxsplit=1)[0], "")
        size = len(value) * (6 if conversion in ("r", "a") else 1) + (4096 if name != name.split(".")[0] else 0)
        digits = re.findall(r"\d+", spec or "")
        width = max((int(d) if len(d) <= 12 else MAX_FILLED + 1 for d in digits), default=0)
        total += max(size, width) + len(spec or "")
        if total > MAX_FILLED:
            break
    return total
