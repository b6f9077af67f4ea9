"""`inspect`: an output graded exactly as one of Inspect AI's built-in scorers grades it.

    graders: [{inspect: {scorer: match, location: end, ignore_case: true, numeric: false}}]

`scorer` is one of match, includes, exact, f1, pattern, answer (inspect_ai 0.3.285's
scorer/_match.py, _common.py, _classification.py, _pattern.py, _answer.py, ported below with
their options and defaults); the targets are the case's `expected` (a text, or a list of texts:
Inspect's Target, which passes on any of them). `match` strips whitespace, casefolds
(ignore_case), strips punctuation at both ends and compares at the end (or begin, any, exact);
with `numeric: true` and a numeric target it compares the first (begin) or last (end) number of
the output after stripping `$ , € £ * _` and normalising to 5 significant digits, reading
unicode numerals as Inspect does (graders/inspect_unicode.py). `includes` casefolds both sides.
`exact` and `f1` normalise as SQuAD does (casefold, punctuation, articles, numbers); `f1`'s
score is the best F1 over the targets rounded to 2 places, passing at 1.0 (Inspect reports the
mean F1). `pattern` searches the output with Python's re (IGNORECASE when ignore_case; bounded in
time, bounded_regex.py) and compares the capture group(s) with the targets; `answer` is `pattern`
with Inspect's ANSWER: letter / word / line expressions.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from typing import Any

from .base import Grader, check_keys, option_error, short
from .grade import Grade, GradeContext

ANSWER_PATTERNS = {
    "letter": r"(?is)ANSWER\s*:\s*([A-Za-z])(?:[^\w]|\n|$)(?!.*ANSWER\s*:)",
    "word": r"(?is)ANSWER\s*:\s*(\S+?)(?=[.,;:!?]?\s*(?:\n|$))(?!.*ANSWER\s*:)",
    "line": r"(?i)ANSWER\s*:\s*([^\n]+)\s*\Z",
}
LOCATIONS = ("begin", "end", "any", "exact")
_OPTIONS = {"match": {"location": "end", "ignore_case": True, "numeric": False},
            "includes": {"ignore_case": True}, "exact": {}, "f1": {"stop_words": None},
            "pattern": {"pattern": None, "ignore_case": True, "match_all": False},
            "answer": {"pattern": None}}


# ---- inspect_ai/_util/text.py and scorer/_common.py ---------------------------------------------

def strip_punctuation(s: str) -> str:
    return s.strip(string.whitespace + string.punctuation)


def strip_numeric_punctuation(s: str) -> str:
    s = re.sub(r"\\([$,£,€*_])", r"\1", s)
    stripped = re.sub(r"[$,£,€,*,_]", "", s)
    return re.sub(r"\.(?=\s|$|\D)", "", stripped)


def _parse_number(s: str, *, trim_punctuation: bool = True) -> float | None:
    from .inspect_unicode import unicode_number_to_float

    cleaned = s.strip("!?:;()[]{}'\"`") if trim_punctuation else s
    for parse in (float, unicode_number_to_float):
        try:
            num = parse(cleaned)
        except ValueError:
            continue
        if math.isfinite(num):
            return num
    return None


def normalize_number(number: str, precision: int = 5, *, trim_punctuation: bool = True) -> str:
    num = _parse_number(number, trim_punctuation=trim_punctuation)
    return number if num is None else format(num, f".{precision}g")


def _first_number(words: list[str]) -> str:
    number = next((w for w in words if _parse_number(w) is not None), None)
    return normalize_number(number) if number is not None else ""


def match_str(value: str, target: str, location: str = "end", ignore_case: bool = True,
              numeric: bool = False) -> tuple[str, bool]:
    """scorer/_common.py match_str (ignore_punctuation=True, as match() calls it)."""
    v, t = value.strip(), target.strip()
    answer = v
    if ignore_case:
        v, t = v.casefold(), t.casefold()
    if numeric:
        t = strip_numeric_punctuation(t)
    if numeric and _parse_number(t) is not None:
        v = strip_numeric_punctuation(v)
        t = normalize_number(t)
        words = re.split(r"\s+", v)
        if location == "begin":
            v = _first_number(words)
        elif location == "end":
            v = _first_number(list(reversed(words)))
        elif location == "exact":
            v = normalize_number(v, trim_punctuation=False)
        else:
            for number in (normalize_number(w) for w in words if _parse_number(w) is not None):
                if number == t:
                    return number, True
            return answer, False
        return v, v == t
    v, t = strip_punctuation(v), strip_punctuation(t)
    if location == "begin":
        return answer, v.startswith(t)
    if location == "end":
        return answer, v.endswith(t)
    if location == "exact":
        return answer, v == t
    return answer, t in v


# ---- scorer/_classification.py (exact, f1) ------------------------------------------------------

def _is_finite_number(s: str) -> bool:
    try:
        return math.isfinite(float(s))
    except ValueError:
        return False


def _normalize_token(token: str) -> str:
    token = token.casefold()
    if not _is_finite_number(token):
        stripped = strip_punctuation(token)
        token = stripped if _is_finite_number(stripped) else "".join(c for c in token if c not in string.punctuation)
    if _is_finite_number(token):
        token = str(float(token))
    token = re.sub(r"\b(a|an|the)\b", " ", token, flags=re.UNICODE)
    return " ".join(token.split())


def normalize(text: str, stop_words: list[str] | None = None) -> str:
    folded = [_normalize_token(w) for w in stop_words] if stop_words is not None else []
    tokens = [t for t in (_normalize_token(tok) for tok in re.split(" |-", text)) if t not in folded]
    return " ".join(t for t in tokens if t.strip()).strip()


def max_exact_score(answer: str, targets: list[str]) -> float:
    answer_norm, best = normalize(answer), 0.0
    for target in targets:
        target_norm = normalize(target)
        if target_norm:
            best = max(best, 1.0 if target_norm == answer_norm else 0.0)
    return best


def _f1(answer_words: Counter, target_words: Counter) -> float:
    common = sum((answer_words & target_words).values())
    precision = common / float(sum(answer_words.values())) if answer_words else 1.0
    recall = common / float(sum(target_words.values())) if target_words else 1.0
    return 0.0 if precision == 0.0 and recall == 0.0 else (2 * precision * recall) / (precision + recall)


def max_f1_score(answer: str, targets: list[str], stop_words: list[str] | None = None) -> float:
    best = 0.0
    answer_words = Counter(normalize(answer, stop_words).split())
    for target in targets:
        target_words = Counter(normalize(target, stop_words).split())
        if target_words:
            best = max(best, _f1(answer_words, target_words))
    return round(best, 2)


# ---- scorer/_pattern.py -------------------------------------------------------------------------

def pattern_score(regex: Any, completion: str, targets: list[str], ignore_case: bool,
                  match_all: bool) -> tuple[bool, str | None]:
    """(correct, the answer extracted) as Inspect's pattern() scorer decides them."""
    found = regex.search(completion)
    if not found:
        return False, None
    groups = found.groups() or (found.group(0),)
    wanted = [t.lower() for t in targets] if ignore_case else list(targets)

    def hit(text: str) -> bool:
        return (text.lower() if ignore_case else text) in wanted

    texts = [g for g in groups if isinstance(g, str)]
    if match_all:
        ok = bool(texts) and all(hit(g) for g in texts)
        return ok, "".join(targets) if ok else None
    first = next((g for g in texts if hit(g)), None)
    if first is None and len(groups) == 1:
        return False, groups[0]
    return first is not None, first


class InspectGrader(Grader):
    """One of Inspect's built-in scorers, with its options and defaults (see the module)."""

    name = "inspect"
    needs_expected = True  # Inspect's Target (the importer writes "" for a sample without one)

    @classmethod
    def parse_options(cls, value: Any) -> dict:
        if isinstance(value, str):
            value = {"scorer": value}
        if not isinstance(value, dict) or value.get("scorer") not in _OPTIONS:
            raise option_error(cls.name, f"options are {{scorer: {'|'.join(_OPTIONS)}, ...}}, got {short(value)}")
        kind = value["scorer"]
        check_keys(cls.name, value, ("scorer", *_OPTIONS[kind]))
        out = {"scorer": kind, **_OPTIONS[kind], **{k: v for k, v in value.items() if k != "scorer"}}
        for flag in ("ignore_case", "numeric", "match_all"):
            if flag in out and not isinstance(out[flag], bool):
                raise option_error(cls.name, f"{flag!r} is true or false, got {short(out[flag])}")
        if kind == "match" and out["location"] not in LOCATIONS:
            raise option_error(cls.name, f"location is one of {', '.join(LOCATIONS)}, got {short(out['location'])}")
        if kind == "answer":
            if out["pattern"] not in ANSWER_PATTERNS:
                raise option_error(cls.name, f"answer's pattern is letter, word or line, got {short(out['pattern'])}")
        if kind == "pattern":
            if not isinstance(out["pattern"], str):
                raise option_error(cls.name, f"pattern is a regular expression, got {short(out['pattern'])}")
            try:
                re.compile(out["pattern"])
            except re.error as exc:
                raise option_error(cls.name, f"pattern {short(out['pattern'])} is not a Python regex: {exc}") from None
        stop = out.get("stop_words")
        if stop is not None and not (isinstance(stop, list) and all(isinstance(w, str) for w in stop)):
            raise option_error(cls.name, f"stop_words is a list of texts, got {short(stop)}")
        return out

    def __init__(self, value: Any = None):
        super().__init__(value)
        o = self.options
        if o["scorer"] in ("pattern", "answer"):
            from ..bounded_regex import compile_bounded

            answer = o["scorer"] == "answer"  # answer(): pattern(ANSWER_PATTERN_...) with its defaults
            self._pattern = ANSWER_PATTERNS[o["pattern"]] if answer else o["pattern"]
            self._ignore_case, self._match_all = (True, False) if answer else (o["ignore_case"], o["match_all"])
            self._regex = compile_bounded(self._pattern, re.IGNORECASE if self._ignore_case else 0)

    def grade(self, ctx: GradeContext) -> Grade:
        o = self.options
        completion = ctx.output.text or ""
        expected = "" if ctx.expected is None else ctx.expected
        targets = [str(t) for t in expected] if isinstance(expected, list) else [str(expected)]
        kind = o["scorer"]
        if kind == "f1":
            score = max_f1_score(completion, targets, o["stop_words"])
            verdict = self.ok if score == 1.0 else self.fail
            return verdict(f"F1 {score:g} (best over {len(targets)} target(s))", score=score)
        if kind == "exact":
            ok = max_exact_score(completion, targets) == 1.0
            return (self.ok if ok else self.fail)(f"normalized output {'equals' if ok else 'equals no'} target")
        if kind in ("pattern", "answer"):
            from ..bounded_regex import RegexTimeout

            try:
                ok, answer = pattern_score(self._regex, completion, targets, self._ignore_case, self._match_all)
            except RegexTimeout as exc:
                return self.unassessed(str(exc))
            if answer is None and not ok:
                return self.fail("scoring pattern not matched in output" if self._regex.search(completion) is None
                                 else "no captured group equals a target")
            return (self.ok if ok else self.fail)(f"answer {short(answer, 60)}")
        answer = ""
        for target in targets:
            if kind == "includes":
                value, t = (completion.casefold(), target.casefold()) if o["ignore_case"] else (completion, target)
                answer, ok = value, t in value
            else:
                answer, ok = match_str(completion, target, o["location"], o["ignore_case"], o["numeric"])
            if ok:
                return self.ok(f"answer {short(answer, 60)} matches {short(target, 60)}")
        return self.fail(f"answer {short(answer, 60)} matches no target ({short(targets, 80)})")
