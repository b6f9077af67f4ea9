"""Compare scoreboard's graders/inspect_unicode.py with Inspect AI's own unicode_number_to_float.

Not part of CI: it needs inspect_ai installed (the peer venv of the fidelity benchmarks):

    ~/.cache/scoreboard-peers/venv-inspect/bin/python scripts/check_inspect_numbers.py [--n 200000]

It generates random mixes of every character class the reader knows (signs, superscripts,
fraction characters, lone numeric symbols, Chinese digits, units and points, digits of many
scripts, grouping and decimal separators, e/E) plus ASCII letters, spaces and punctuation, and
structured numbers (grouped, decimal, exponent, power, fraction; 28 digit scripts; Chinese
numerals with and without units), and checks each string gives the same float (NaN equal to
NaN, -0.0 to 0.0) or ValueError from both. Exit status 1 on any disagreement. Where Inspect's
function lets OverflowError escape (a numeral of over ~309 digits) ours raises ValueError on
purpose; those are counted apart.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import random
import string
import sys
import unicodedata
from collections import Counter
from pathlib import Path

from inspect_ai.scorer._unicode import unicode_number_to_float as theirs

_PATH = Path(__file__).resolve().parents[1] / "src" / "scoreboard" / "graders" / "inspect_unicode.py"


def load(path: Path):
    """Our module by file path: no scoreboard install needed in the inspect venv."""
    spec = importlib.util.spec_from_file_location("sb_inspect_unicode", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.unicode_number_to_float

# Zero digit of each decimal script (Unicode category Nd), 25 of them picked deterministically.
_ZEROS = [cp for cp in range(0x30, 0x20000) if unicodedata.category(chr(cp)) == "Nd"
          and unicodedata.decimal(chr(cp)) == 0]
SCRIPTS = [_ZEROS[i * len(_ZEROS) // 25] for i in range(25)]
SCRIPTS[0] = 0x30
for fixed in (0x660, 0x6F0, 0x966, 0xFF10, 0x1D7CE):      # Arabic-Indic, Persian, Devanagari, ...
    if fixed not in SCRIPTS:
        SCRIPTS.append(fixed)
FRACTIONS = [chr(cp) for cp in range(0x20000)
             if 0 < (unicodedata.numeric(chr(cp), -1)) < 1]
SYMBOLS = [chr(cp) for cp in range(0x2000, 0x3300)
           if unicodedata.numeric(chr(cp), -1) >= 1 and unicodedata.digit(chr(cp), -1) < 0]
OTHER_DIGITS = [chr(cp) for cp in range(0x2000, 0x3300) if unicodedata.digit(chr(cp), -1) >= 0
                and unicodedata.decimal(chr(cp), -1) < 0]
SIGNS = list("-−﹣－+＋﹢负負正")
SUPERS = list("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺")
HAN_DIGITS = list("零〇○一二三四五六七八九壹贰貳叁參肆伍陆陸柒捌玖两兩幺")
HAN_UNITS = list("十拾百佰千仟万萬亿億兆廿卅卌点點")
GROUPING = list(",，﹐、٬ \u00a0\u202f\u2009\u2007\u2008'’ʼ＇")
POINTS = list(".,٫．")
SPACES = list(" \t\n\u3000\u2003")
CLASSES = {
    "ascii": list(string.digits), "script": None, "sign": SIGNS, "super": SUPERS,
    "fraction": FRACTIONS, "symbol": SYMBOLS, "otherdigit": OTHER_DIGITS, "han": HAN_DIGITS,
    "hanunit": HAN_UNITS, "group": GROUPING, "point": POINTS, "e": list("eE"),
    "letter": list(string.ascii_letters), "space": SPACES, "punct": list(string.punctuation),
}
WEIGHTS = {"ascii": 8, "script": 4, "sign": 3, "super": 2, "fraction": 2, "symbol": 1,
           "otherdigit": 1, "han": 4, "hanunit": 3, "group": 3, "point": 3, "e": 1,
           "letter": 1, "space": 1, "punct": 1}


def script_digit(rng: random.Random, zero: int | None = None) -> str:
    return chr((zero if zero is not None else rng.choice(SCRIPTS)) + rng.randrange(10))


def random_mix(rng: random.Random) -> str:
    names, weights = zip(*WEIGHTS.items())
    out = []
    for _ in range(rng.choice((1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 12))):
        name = rng.choices(names, weights)[0]
        out.append(script_digit(rng) if name == "script" else rng.choice(CLASSES[name]))
    return "".join(out)


def han_integer(rng: random.Random, n: int) -> str:
    """A Chinese numeral for n, with units, in a random variant of the characters."""
    digits = "零一二三四五六七八九" if rng.random() < 0.7 else "零壹贰叁肆伍陆柒捌玖"
    units = rng.choice((("", "十", "百", "千"), ("", "拾", "佰", "仟")))
    if n == 0:
        return rng.choice("零〇")

    def below_myriad(m: int) -> str:
        s, zero = "", False
        for place in (3, 2, 1, 0):
            d = m // 10**place % 10
            if d:
                if zero:
                    s += "零"
                s += (rng.choice("二两") if d == 2 and place >= 2 else digits[d]) + units[place]
                zero = False
            elif s:
                zero = True
        return s

    parts = []
    for big, name in ((10**12, "兆"), (10**8, rng.choice("亿億")), (10**4, rng.choice("万萬")), (1, "")):
        if n >= big:
            parts.append(below_myriad(n // big % 10**4 if big != 10**12 else n // big) + name)
    s = "".join(parts)
    if rng.random() < 0.3 and s.startswith("一十"):
        s = s[1:]
    return s


def structured(rng: random.Random) -> str:
    kind = rng.random()
    sign = "".join(rng.choice(SIGNS) + rng.choice(("", "", " ")) for _ in range(rng.choice((0, 0, 1, 1, 2, 3))))
    if kind < 0.25:                                  # Chinese numerals
        n = rng.choice((rng.randrange(100), rng.randrange(10**5), rng.randrange(10**13)))
        if rng.random() < 0.2:
            s = "".join(rng.choice(HAN_DIGITS[:12]) for _ in range(rng.randint(1, 6)))
        elif rng.random() < 0.15:
            s = rng.choice("廿卅卌") + rng.choice(("",) + tuple("一二三四五六七八九"))
        else:
            s = han_integer(rng, n)
        if rng.random() < 0.3:
            s += rng.choice(("点", "點", ".", "．")) + "".join(rng.choice("零一二三四五六七八九0123456789") for _ in range(rng.randint(0, 4)))
        if rng.random() < 0.1:
            s = s.replace(rng.choice(s), rng.choice("123456789"), 1)
    else:                                            # digit strings
        zero = rng.choice(SCRIPTS)
        digits = "".join(script_digit(rng, zero) for _ in range(rng.randint(1, 10)))
        if rng.random() < 0.5:
            sep = rng.choice(GROUPING + [".", ","])
            step = rng.choice((3, 3, 3, 2, 4))
            digits = sep.join(digits[max(0, i - step):i] for i in range(len(digits), 0, -step)[::-1])
        if rng.random() < 0.5:
            digits += rng.choice(POINTS) + "".join(script_digit(rng, zero) for _ in range(rng.randint(0, 5)))
        if rng.random() < 0.15:
            digits += rng.choice("eE") + rng.choice(("", "+", "-", "−", "＋")) + str(rng.randrange(400))
        s = digits
    if rng.random() < 0.15:
        s += rng.choice(("", " ")) + rng.choice(FRACTIONS)
    if rng.random() < 0.15:
        s += rng.choice(("", "", "⁻", "⁺")) + "".join(rng.choice(SUPERS[:10]) for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.1:
        s += rng.choice(GROUPING + SPACES)
    if rng.random() < 0.05:
        at = rng.randrange(len(s) + 1)
        s = s[:at] + rng.choice(string.ascii_letters + string.punctuation + "".join(SPACES)) + s[at:]
    return rng.choice(("", "", " ")) + sign + s


def edge_cases() -> list[str]:
    cases = ["", " ", "-", "+-", "²", "⁻²", "½", "½½", "-2²", "0⁻¹", "10⁻⁴⁰⁰", "9⁹⁹⁹", "2⁴⁰⁰⁰",
             "1" + "⁹" * 5000, "一点二點三", "1e5.5", ".e5", "e5", "1e", "1,234,5", "1.2.3"]
    cases += ["1" * k for k in (300, 309, 310, 400, 4300, 4301, 5000)]
    cases += ["一" + "0" * k for k in (300, 308, 309, 400, 4299, 4300, 5000)]
    cases += ["1" * 5000 + ".5一", "1" * 400 + ".5,一", "1" * 400 + "一½", "九" * 320]
    return cases


def outcome(fn, text):
    try:
        return ("ok", fn(text))
    except Exception as exc:  # noqa: BLE001 - every outcome is compared
        return ("raise", type(exc).__name__)


def same(a, b) -> bool:
    if a[0] == b[0] == "ok":
        x, y = a[1], b[1]
        return type(x) is type(y) is float and (x == y or (math.isnan(x) and math.isnan(y)))
    return a == b == ("raise", "ValueError")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200_000, help="strings of each generator")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--module", type=Path, default=_PATH, help="the reader to check")
    args = parser.parse_args()
    ours = load(args.module)
    rng = random.Random(args.seed)
    inputs = [("edge", s) for s in edge_cases()]
    inputs += [("mix", random_mix(rng)) for _ in range(args.n)]
    inputs += [("structured", structured(rng)) for _ in range(args.n * 4 // 5)]
    counts: Counter = Counter()
    bad = []
    for source, text in inputs:
        a, b = outcome(theirs, text), outcome(ours, text)
        counts[source, "float" if a[0] == "ok" else a[1]] += 1
        if same(a, b):
            continue
        if a == ("raise", "OverflowError") and b == ("raise", "ValueError"):
            counts["inspect OverflowError, ours ValueError (deliberate)"] += 1
            continue
        bad.append((source, text, a, b))
    print(f"{len(inputs)} strings ({len(SCRIPTS)} digit scripts, {len(FRACTIONS)} fraction characters)")
    for key, n in sorted(counts.items(), key=str):
        print(f"  {key}: {n}")
    print(f"disagreements: {len(bad)}")
    for source, text, a, b in bad[:40]:
        print(f"  {source} {text[:60]!r}: inspect {a} ours {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
