"""ROUGE-N as promptfoo computes it: js-rouge 3.2.0's `n()` (promptfoo pins `js-rouge ^3.2.0`;
src/assertions/rouge.ts calls `rouge.n(output, value, {})`).

js-rouge tokenises with its Penn Treebank port (`treeBankTokenize`, src/utils.ts), makes n-grams
of the token list, and scores the *set* intersection: `match` is the distinct candidate n-grams
that occur among the reference's; precision = |match| / (candidate n-grams, duplicates counted),
recall = |match| / (reference n-grams), and the result is the F1 (`fMeasure`, beta 1). Case
sensitive. The regular expressions below are js-rouge's, written for Python's `re` with
JavaScript's meaning kept (`$` is the end of the text, `\\s` JavaScript's whitespace set, `\\b`
ASCII).
"""

from __future__ import annotations

import re

_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
# constants.ts TREEBANK_CONTRACTIONS: each replaced once (no g flag), case-insensitive
_CONTRACTIONS = [re.compile(p, re.IGNORECASE | re.ASCII) for p in (
    r"\b(can)(not)\b", r"\b(d)('ye)\b", r"\b(gim)(me)\b", r"\b(gon)(na)\b", r"\b(got)(ta)\b",
    r"\b(lem)(me)\b", r"\b(more)('n)\b", r"\b(wan)(na) ", r" ('t)(is)\b", r" ('t)(was)\b")]
_STEPS_1 = [
    (re.compile(r'\A"'), " `` ", 1),
    (re.compile(r'([ (\[{<])"'), r"\1 `` ", 0),
    (re.compile(r"\.\.\.*"), " ... ", 0),
    (re.compile(r"[;@#$%&]"), r" \g<0> ", 0),
    (re.compile(r"([^.])(\.)([\])}>\"']*)[" + _JS_SPACE + r"]*\Z"), r"\1 \2\3 ", 0),
    (re.compile(r"[,?!]"), r" \g<0> ", 0),
    (re.compile(r"[\]\[(){}<>]"), r" \g<0> ", 0),
    (re.compile(r"---*"), " -- ", 0),
]
_STEPS_2 = [
    (re.compile(r'"'), " '' "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"'([sSmMdD]) "), r" '\1 "),
    (re.compile(r"('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r" \1 "),
]


def treebank_tokenize(text: str) -> list[str]:
    """js-rouge's treeBankTokenize (3.2.0), step for step."""
    if not text:
        return []
    parse = text
    for pattern, repl, count in _STEPS_1:
        parse = pattern.sub(repl, parse, count=count)
    parse = f" {parse} "
    for pattern, repl in _STEPS_2:
        parse = pattern.sub(repl, parse)
    for pattern in _CONTRACTIONS:
        parse = pattern.sub(r" \1 \2 ", parse, count=1)
    parse = re.sub(r" {2,}", " ", parse)
    parse = re.sub(r"\A | \Z", "", parse)  # /^ | $/g: one leading and one trailing space
    return parse.split(" ")


def ngrams(tokens: list[str], n: int) -> list[str]:
    """js-rouge's nGram without padding (throws as it does when there are fewer tokens than n)."""
    if n < 1:
        raise ValueError("ngram size cannot be smaller than 1")
    if len(tokens) < n:
        raise ValueError("ngram size cannot be larger than the number of tokens available")
    return [" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def rouge_n(candidate: str, reference: str, n: int = 1) -> float:
    """js-rouge's `n(cand, ref)`: the F1 of distinct matched n-grams (see the module)."""
    if not candidate:
        raise ValueError("Candidate cannot be an empty string")
    if not reference:
        raise ValueError("Reference cannot be an empty string")
    cand = ngrams(treebank_tokenize(candidate), n)
    ref = ngrams(treebank_tokenize(reference), n)
    ref_set = set(ref)
    match = [g for g in dict.fromkeys(cand) if g in ref_set]
    if not match:
        return 0.0
    precision = len(match) / len(cand)
    recall = len(match) / len(ref)
    return (2 * precision * recall) / (precision + recall)
