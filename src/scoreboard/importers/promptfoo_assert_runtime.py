"""promptfoo 0.121's deterministic assertion handlers, ported to Python for the converted suites.

`scoreboard import promptfoo` writes `promptfoo_asserts.py` beside the suite; an assertion that
has no scoreboard grader with the same numbers becomes a python grader there calling one of
these functions. Each follows its handler in promptfoo's src/assertions/*.ts line for line and
returns promptfoo's GradingResult ({pass, score, reason}); `inverse` is the `not-` prefix,
applied as that handler applies it. Only the standard library and scoreboard's JavaScript
tokeniser are used: nothing here calls a model or the network.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..templating.js import js_json_parse
from .promptfoo_runtime_base import JS_SPACE, _result, _verdict, fail, js_split_words, js_trim, text_of, utf16_len
from .promptfoo_runtime_json import (
    FINISH_REASONS,
    contains_json,
    convert_slash_comments,
    extract_json_objects,
    finish_reason,
    is_basic_refusal,
    is_refusal,
)
from .promptfoo_runtime_html import is_html
from .promptfoo_runtime_markup import contains_html, unassessed
from .promptfoo_runtime_xml import xml

#: what the converted suites call as `_pf.NAME` (promptfoo_assert_code.PYTHON_HEADER)
__all__ = ["JS_SPACE", "fail", "js_split_words", "js_trim", "text_of", "utf16_len", "FINISH_REASONS", "contains_json",
           "convert_slash_comments", "extract_json_objects", "finish_reason", "is_basic_refusal", "is_refusal",
           "js_json_parse", "deep_strict_equal", "equals", "contains", "levenshtein_distance", "levenshtein",
           "rouge_n_score", "rouge_n", "bleu_score", "gleu_score", "bleu", "gleu", "word_count", "measure",
           "contains_html", "is_html", "unassessed", "xml"]

#: JavaScript's \\s (String.prototype.trim and /\\s+/ use the same set)
# ---- equals (src/assertions/equals.ts) ---------------------------------------------------

def deep_strict_equal(a: Any, b: Any) -> bool:
    """util.isDeepStrictEqual over JSON values: numbers by value (1 and 1.0 are one JavaScript
    number), booleans never equal to numbers, key order ignored, list order kept."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(deep_strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(deep_strict_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def equals(output: Any, value: Any, inverse: bool, text: str | None = None) -> dict:
    """handleEquals: an object value (null and lists too) deep-equals JSON.parse(output) (output
    that is not JSON fails, and passes the inverse); anything else: String(value) === output.
    `text` is String(value) as the importer printed it (JavaScript's number printing)."""
    out = text_of(output)
    if value is None or isinstance(value, (dict, list)):
        try:
            passed = deep_strict_equal(value, js_json_parse(out)) != inverse
        except ValueError:
            passed = inverse
        shown = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    else:
        shown = text if text is not None else str(value)
        passed = (shown == out) != inverse
    return _verdict(passed, f'Expected output "{out}" to {"not " if inverse else ""}equal "{shown}"')


# ---- contains family (src/assertions/contains.ts) ----------------------------------------

def contains(output: Any, values: list[str], mode: str, ignore_case: bool, inverse: bool) -> dict:
    """handleContainsAny / handleContainsAll and their i- forms on an already printed list (an
    empty list: -any fails, -all passes; an empty string is in every output)."""
    out = text_of(output)
    hay = out.lower() if ignore_case else out
    found = [(v.lower() if ignore_case else v) in hay for v in values]
    if mode == "any":
        passed = any(found) != inverse
        return _verdict(passed, f'Expected output to {"not " if inverse else ""}contain one of "{", ".join(values)}"')
    missing = [v for v, ok in zip(values, found) if not ok]
    passed = (not missing) != inverse
    return _verdict(passed, f'Expected output to {"not " if inverse else ""}contain all of [{", ".join(values)}]. '
                            f'Missing: [{", ".join(missing)}]')


# ---- levenshtein (src/assertions/levenshtein.ts, fastest-levenshtein) --------------------

#: counted exactly up to this many edits (or the threshold); past it the reason says "over 10000"
LEVENSHTEIN_CAP = 10_000


def levenshtein_distance(a: str, b: str, cap: int | None = None) -> int:
    """fastest-levenshtein's distance: over UTF-16 code units, as JavaScript strings are.
    With `cap`, a distance past it is cap + 1 (counting it costs time in proportion to it)."""
    x = a.encode("utf-16-le")
    y = b.encode("utf-16-le")
    s = [int.from_bytes(x[i:i + 2], "little") for i in range(0, len(x), 2)]
    t = [int.from_bytes(y[i:i + 2], "little") for i in range(0, len(y), 2)]
    try:
        from rapidfuzz.distance import Levenshtein
    except ImportError:  # pragma: no cover - without the overlap extra: the plain loop below
        Levenshtein = None
    if Levenshtein is not None:  # the same distance; the loop below took minutes on a 1 MB output
        return Levenshtein.distance(s, t, score_cutoff=cap)
    if len(s) < len(t):
        s, t = t, s
    previous = list(range(len(t) + 1))
    for i, cs in enumerate(s, 1):
        current = [i]
        for j, ct in enumerate(t, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (cs != ct)))
        previous = current
    return previous[-1] if cap is None else min(previous[-1], cap + 1)


def levenshtein(output: Any, value: str, threshold: float | None, inverse: bool) -> dict:
    """handleLevenshtein: distance <= (threshold ?? 5), inverted by not-."""
    bound = 5 if threshold is None else threshold
    cap = max(math.floor(bound), LEVENSHTEIN_CAP) if math.isfinite(bound) else None
    distance = levenshtein_distance(text_of(output), value, cap)
    passed = (distance <= bound) != inverse
    said = f"over {cap}" if cap is not None and distance > cap else str(distance)
    return _verdict(passed, f"Levenshtein distance {said} is {'less than or equal to' if inverse else 'greater than'} "
                            f"threshold {_num(bound)}")


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# ---- rouge-n (src/assertions/rouge.ts) ---------------------------------------------------

def rouge_n_score(candidate: str, reference: str, n: int = 1) -> float:
    """rougeNScore: js-rouge's treebank tokens, clipped n-gram overlap (min of the counts), F1."""
    from ..graders.jsrouge import treebank_tokenize

    cand = treebank_tokenize(candidate)
    ref = treebank_tokenize(reference)
    if len(cand) < n or len(ref) < n:
        return 0.0
    cand_grams = [" ".join(cand[i:i + n]) for i in range(len(cand) - n + 1)]
    ref_grams = [" ".join(ref[i:i + n]) for i in range(len(ref) - n + 1)]
    ref_counts = _counts(ref_grams)
    overlap = sum(min(c, ref_counts.get(g, 0)) for g, c in _counts(cand_grams).items())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(cand_grams), overlap / len(ref_grams)
    return (2 * precision * recall) / (recall + precision)  # js-rouge fMeasure, beta 1


def _counts(grams: list) -> dict:
    counts: dict = {}
    for g in grams:
        counts[g] = counts.get(g, 0) + 1
    return counts


def rouge_n(output: Any, value: str, threshold: float | None, inverse: bool) -> dict:
    """handleRougeScore: both sides lowercased; pass = (score >= (threshold ?? 0.75)) != inverse,
    the score 1 - score under not-."""
    score = rouge_n_score(text_of(output).lower(), value.lower())
    bound = 0.75 if threshold is None else threshold
    word = "greater than or equal to" if score >= bound else "less than"
    return _result((score >= bound) != inverse, 1 - score if inverse else score,
                   f"ROUGE-N score {score:.2f} is {word} threshold {_num(bound)}")


# ---- bleu (src/assertions/bleu.ts) and gleu (src/assertions/gleu.ts) ---------------------

def _grams(words: list[str], n: int) -> list[str]:
    if n <= 0 or n > len(words):
        return []
    return [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]


def bleu_score(candidate: str, references: list[str]) -> float:
    """calculateBleuScore: lowercased whitespace tokens, clipped precision of the n-gram orders
    1..4 the candidate has (best reference per order), zero precisions as 1e-7, weights 1/4
    renormalised over those orders, brevity penalty exp(1 - r/c) against the closest reference
    length (the shorter on a tie); a blank candidate scores 0."""
    if not references:
        raise ValueError("Invalid inputs")
    if js_trim(candidate) == "":
        return 0.0
    cand = js_split_words(js_trim(candidate.lower()))
    refs = [js_split_words(js_trim(r.lower())) for r in references]
    closest = len(refs[0])
    for words in refs[1:]:
        cur, prev = abs(len(words) - len(cand)), abs(closest - len(cand))
        if cur < prev or (cur == prev and len(words) < closest):
            closest = len(words)
    usable = []
    for n in range(1, 5):
        grams = _grams(cand, n)
        if not grams:
            continue
        counts = _counts(grams)
        best = 0
        for words in refs:
            ref_counts = _counts(_grams(words, n))
            best = max(best, sum(min(c, ref_counts.get(g, 0)) for g, c in counts.items()))
        usable.append(best / len(grams))
    bp = 1.0 if len(cand) > closest else math.exp(1 - closest / len(cand))
    if not usable:
        return 0.0
    weighted = sum((0.25 / (0.25 * len(usable))) * math.log(p if p != 0 else 1e-7) for p in usable)
    return bp * math.exp(weighted)


def gleu_score(candidate: str, references: list[str]) -> float:
    """calculateGleuScore: lowercased whitespace tokens with trailing periods cut; identical
    token lists score 1; else min(precision, recall) of clipped 1..4-gram matches summed over
    the orders; the best reference."""
    if not candidate or not references:
        raise ValueError("Invalid inputs")

    def words(text: str) -> list[str]:
        return [re.sub(r"\.+\Z", "", w) for w in js_split_words(js_trim(text.lower()))]

    cand = words(candidate)
    scores = []
    for reference in references:
        ref = words(reference)
        if cand == ref:
            scores.append(1.0)
            continue
        match = cand_total = ref_total = 0
        for n in range(1, 5):
            cg, rg = _grams(cand, n), _grams(ref, n)
            ref_counts = _counts(rg)
            match += sum(min(c, ref_counts.get(g, 0)) for g, c in _counts(cg).items())
            cand_total += len(cg)
            ref_total += len(rg)
        scores.append(0.0 if cand_total == 0 or ref_total == 0 else min(match / cand_total, match / ref_total))
    return max(scores)


def _overlap(kind: str, fn, output: Any, value: Any, threshold: float | None, inverse: bool) -> dict:
    refs = value if isinstance(value, list) else [value]
    try:
        score = fn(text_of(output), refs)
    except ValueError as exc:  # promptfoo's handler throws: the row is an error
        return fail(f"Error: {exc}")
    bound = 0.5 if threshold is None else threshold
    passed = (score >= bound) != inverse
    return _result(passed, 1 - score if inverse else score, "Assertion passed" if passed else
                   f"{kind} score {score:.4f} is {'greater' if inverse else 'less'} than threshold {_num(bound)}")


def bleu(output: Any, value: Any, threshold: float | None, inverse: bool) -> dict:
    """handleBleuScore: pass = (score >= (threshold ?? 0.5)) != inverse, score 1 - score under not-."""
    return _overlap("BLEU", bleu_score, output, value, threshold, inverse)


def gleu(output: Any, value: Any, threshold: float | None, inverse: bool) -> dict:
    """handleGleuScore: as bleu with GLEU's score."""
    return _overlap("GLEU", gleu_score, output, value, threshold, inverse)


# ---- word-count (src/assertions/wordCount.ts) --------------------------------------------

def word_count(output: Any, value: Any, inverse: bool) -> dict:
    """handleWordCount: words are text.trim().split(/\\s+/) without empties; a number (or a
    numeric text) must equal the count, {min, max} bound it (either may be left out)."""
    text = js_trim(text_of(output))
    count = len([w for w in js_split_words(text) if w])
    if isinstance(value, dict):
        low, high = value.get("min"), value.get("max")
        if low is not None and high is not None:
            base = low <= count <= high
            why = (f"Expected word count to not be between {low} and {high}, but got {count}" if inverse
                   else f"Word count {count} is not between {low} and {high}")
        elif low is None:
            base = count <= high
            why = (f"Expected word count to be greater than {high}, but got {count}" if inverse
                   else f"Word count {count} is greater than maximum {high}")
        else:
            base = count >= low
            why = (f"Expected word count to be less than {low}, but got {count}" if inverse
                   else f"Word count {count} is less than minimum {low}")
    else:
        base = count == value
        why = (f"Expected word count to not equal {_num(value)}, but got {count}" if inverse
               else f"Word count {count} does not equal expected {_num(value)}")
    return _verdict(base != inverse, why)


# ---- latency, cost (src/assertions/latency.ts, cost.ts) -----------------------------------

def measure(measurements: Any, key: str, threshold: float, inverse: bool) -> dict:
    """`value <= threshold` (not- inverts) for a threshold scoreboard's max-latency-ms / max-cost
    refuse (0 ms, a negative cost); a value the subject did not report is unknown (promptfoo's
    handler throws), never a pass."""
    value = (measurements or {}).get(key)
    label = "Latency" if key == "latency_ms" else "Cost"
    if value is None:
        return {"pass": None, "reason": f"{label} unknown (the subject reported none)"}
    passed = (value <= threshold) != inverse
    return _verdict(passed, f"{label} {value:g} is {'less than or equal to' if inverse else 'greater than'} "
                            f"threshold {threshold:g}")
