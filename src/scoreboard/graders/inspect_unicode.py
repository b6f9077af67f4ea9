"""Reading a number the way Inspect AI's `match(numeric=True)` reads one.

When float() refuses a word, Inspect's scorers (inspect_ai 0.3.285, scorer/_common.py) try
`unicode_number_to_float` (scorer/_unicode.py): unicode signs, lone numeric symbols, vulgar
fractions, superscript powers, Chinese numerals, digits of any script with locale grouping.
This is scoreboard's own reader for that behaviour, written from its specification and its
observed results, not from its code; graders/inspect_scorers.py uses it so the `inspect` grader
reads numbers exactly as Inspect does.

It was checked against Inspect's own function by scripts/check_inspect_numbers.py (run where
inspect_ai is installed): 360,039 strings (200,000 random mixes of every character class below
plus ASCII letters, spaces and punctuation; 160,000 structured numbers in 28 digit scripts and
many formats, Chinese numerals with and without units; 39 edge cases), and 540,117 more with
three other seeds and hash seeds: 0 disagreements, each the same float (NaN equal to NaN, -0.0
to 0.0) or ValueError from both. One deliberate difference: where Inspect's function lets an OverflowError
escape (a Chinese or mixed numeral of more than ~309 digits: float() of a huge integer), this
one raises ValueError, so the grader treats the word as no number instead of crashing.

How a string is read, in order:
  1. Outer whitespace goes; nothing left is a ValueError (a non-str is a TypeError).
  2. Leading signs: - − ﹣ － 负 負 flip the sign, + ＋ ﹢ 正 keep it; whitespace between them
     is skipped, so '−-+3' is 3.0.
  3. One character left that Unicode gives a numeric value ('½', 'Ⅻ', '十', '²') is that value.
  4. A trailing run of superscript digits, with one optional ⁻/⁺ before it, is a power applied
     after the sign ('-2²' is 4.0), unless nothing precedes it. Trailing whitespace and grouping
     separators after it are ignored.
  5. At most one fraction character (a numeric value strictly between 0 and 1) may follow an
     optional whole part, with only whitespace or separators after it: '2½', '十二⅓'.
  6. The whole part is read as a Chinese numeral when it has any Chinese numeral character,
     falling back to the script-neutral digit reader when that fails, and finally to rule 3.
"""

from __future__ import annotations

import unicodedata

# -- character classes --------------------------------------------------------------------

_FLIP_SIGN = frozenset("-\u2212\ufe63\uff0d负負")
_KEEP_SIGN = frozenset("+\uff0b\ufe62正")
# After e/E only the symbol signs count (not 负/正); each maps to its ASCII form.
_EXPONENT_SIGN = {"-": "-", "\u2212": "-", "\ufe63": "-", "\uff0d": "-",
                  "+": "+", "\uff0b": "+", "\ufe62": "+"}
# Grouping separators: skipped wherever they appear in a digit string.
_GROUPING = frozenset(",\uff0c\ufe50\u3001\u066c \u00a0\u202f\u2009\u2007\u2008'\u2019\u02bc\uff07")
# Arabic decimal separator and fullwidth full stop: always a decimal point.
_ALWAYS_POINT = frozenset("\u066b\uff0e")
_SUPERSCRIPT = {ch: str(n) for n, ch in enumerate("⁰¹²³⁴⁵⁶⁷⁸⁹")}
_SUPERSCRIPT_SIGN = {"⁻": "-", "⁺": "+"}

# Chinese numerals. Zeros are digits when digits stand alone ('二〇二五') but are only place
# holders between units ('一千零五'), where they leave the pending digit untouched.
_HAN_ZERO = frozenset("零〇○")
_HAN_DIGIT = dict.fromkeys(_HAN_ZERO, 0)
for _digits, _values in (("一二三四五六七八九", range(1, 10)), ("壹贰叁肆伍陆柒捌玖", range(1, 10)),
                         ("貳參陸", (2, 3, 6)), ("两兩幺", (2, 2, 1))):
    _HAN_DIGIT.update(zip(_digits, _values))
_HAN_SCORE = {"廿": 20, "卅": 30, "卌": 40}             # added as they stand
_HAN_UNIT = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
_HAN_MYRIAD = {"万": 10**4, "萬": 10**4, "亿": 10**8, "億": 10**8, "兆": 10**12}
_HAN_POINT = ("点", "點")
_HAN_PLACE = frozenset(_HAN_SCORE) | frozenset(_HAN_UNIT) | frozenset(_HAN_MYRIAD)
# Any of these makes a string worth trying as a Chinese numeral (signs included).
_HAN_ANY = frozenset(_HAN_DIGIT) | _HAN_PLACE | frozenset(_HAN_POINT) | frozenset("负負正")


def _digit(ch: str) -> int | None:
    """The digit a character stands for: ASCII, any script's decimal or digit (Unicode's
    Decimal/Digit properties: '٣', '３', '²', '①'), or a Chinese digit."""
    if "0" <= ch <= "9":
        return ord(ch) - 48
    for prop in (unicodedata.decimal, unicodedata.digit):
        value = prop(ch, None)
        if value is not None:
            return value
    return _HAN_DIGIT.get(ch)


def _symbol_value(text: str) -> float | None:
    """Unicode's numeric value of a one-character string ('½' 0.5, 'Ⅻ' 12.0), else None."""
    if len(text) != 1:
        return None
    value = unicodedata.numeric(text, None)
    return None if value is None else float(value)


def _fraction_value(ch: str) -> float | None:
    value = unicodedata.numeric(ch, None)
    return float(value) if value is not None and 0.0 < value < 1.0 else None


# -- the reader -----------------------------------------------------------------------------

def unicode_number_to_float(s: str) -> float:
    """The number `s` spells, as Inspect's `unicode_number_to_float` reads it.

    Raises ValueError when `s` is no number, TypeError when it is not a str."""
    if not isinstance(s, str):
        raise TypeError("Input must be a str")
    text = s.strip()
    if not text:
        raise ValueError("Empty string")
    negative, text = _take_signs(text)
    symbol = _symbol_value(text)
    if symbol is not None:
        return -symbol if negative else symbol
    body, power = _take_power(text, s)
    value = _whole_and_fraction(body, s)
    if negative:
        value = -value
    if power is None:
        return value
    try:
        return float(value ** power)
    except ArithmeticError as exc:    # 0.0 ** -1, a result beyond float's range
        raise ValueError(f"Invalid exponent operation for {s!r}: {exc}") from exc


def _take_signs(text: str) -> tuple[bool, str]:
    """(whether the leading signs make the number negative, the text after them)."""
    negative = False
    at = 0
    while at < len(text):
        ch = text[at]
        if ch in _FLIP_SIGN:
            negative = not negative
        elif ch not in _KEEP_SIGN and not ch.isspace():
            break
        at += 1
    return negative, text[at:]


def _take_power(text: str, original: str) -> tuple[str, int | None]:
    """Split a trailing superscript power off `text`: ('3', 2) for '3²'."""
    end = len(text)
    while end and (text[end - 1].isspace() or text[end - 1] in _GROUPING):
        end -= 1
    start = end
    while start and text[start - 1] in _SUPERSCRIPT:
        start -= 1
    if start == end:
        return text, None
    sign = ""
    if start and text[start - 1] in _SUPERSCRIPT_SIGN:
        start -= 1
        sign = _SUPERSCRIPT_SIGN[text[start]]
    base = text[:start].rstrip()
    if not base:                       # '²' or '⁻²' alone: no base to raise
        return text, None
    digits = "".join(_SUPERSCRIPT[ch] for ch in text[start + len(sign):end])
    try:
        return base, int(sign + digits)
    except ValueError:                 # more digits than int() accepts
        raise ValueError(f"Invalid exponent in {original!r}") from None


def _whole_and_fraction(body: str, original: str) -> float:
    """An optional whole part followed by at most one fraction character, nothing after it
    but whitespace or grouping separators."""
    fractions = [(at, value) for at, value in enumerate(map(_fraction_value, body))
                 if value is not None]
    if not fractions:
        value = _plain_number(body)
        if value is None:
            raise ValueError(f"Could not parse number from {original!r}")
        return value
    if len(fractions) > 1:
        raise ValueError(f"Multiple fraction characters in {original!r}")
    at, fraction = fractions[0]
    if any(not (ch.isspace() or ch in _GROUPING) for ch in body[at + 1:]):
        raise ValueError(f"Unexpected characters after fraction in {original!r}")
    whole_text = body[:at].strip()
    whole = _plain_number(whole_text) if whole_text else 0.0
    if whole is None:
        raise ValueError(f"Invalid base part in {original!r}")
    return whole + fraction


def _plain_number(text: str) -> float | None:
    """A number without sign, power or fraction character; None when `text` is none."""
    text = text.strip()
    if not text:
        return None
    if any(ch in _HAN_ANY for ch in text):
        value = _chinese_number(text)
        if value is not None:
            return value
    value = _digit_string(text)
    if value is not None:
        return value
    return _symbol_value(text)


def _chinese_number(text: str) -> float | None:
    """'一千二百三十四点五', '二〇二五', '廿三', '3万'. The integer part uses place units when it has
    any, else it is a digit string; the fraction after the first 点/點 (else ．, else '.') is
    digits only, each worth a tenth of the one before, summed left to right."""
    integer_text, fraction_text = text, ""
    for point in (*_HAN_POINT, "．", "."):
        if point in text:
            integer_text, _, fraction_text = text.partition(point)
            break
    if any(ch in _HAN_PLACE for ch in integer_text):
        integer = _chinese_integer(integer_text)
        if integer is None:
            return None
    else:
        digits = []
        for ch in integer_text:
            if ch.isspace():
                continue
            digit = _digit(ch)
            if digit is None:
                return None
            digits.append(str(digit))
        # int() refuses a digit string over Python's limit (4300): ValueError, as Inspect's does.
        integer = int("".join(digits)) if digits else 0
    fraction, weight = 0.0, 0.1
    for ch in fraction_text:
        if ch.isspace():
            continue
        digit = _digit(ch)
        if digit is None:
            return None
        fraction += digit * weight
        weight /= 10.0
    try:
        return float(integer) + fraction
    except OverflowError:              # Inspect lets this escape; the grader wants ValueError
        raise ValueError(f"Number too large: {text[:40]!r}") from None


def _chinese_integer(text: str) -> int | None:
    """Place-unit numerals. A digit waits for the unit after it (a unit alone counts once:
    '十二' is 12); 万/亿/兆 multiply everything since the previous one of them and bank it;
    廿/卅/卌 add 20/30/40 directly; a later digit replaces a pending one."""
    banked = group = pending = 0
    for ch in text:
        if ch.isspace() or ch in _HAN_ZERO:
            continue
        if ch in _HAN_SCORE:
            group += _HAN_SCORE[ch]
        elif ch in _HAN_UNIT:
            group += (pending or 1) * _HAN_UNIT[ch]
            pending = 0
        elif ch in _HAN_MYRIAD:
            banked += (group + pending) * _HAN_MYRIAD[ch]
            group = pending = 0
        else:
            digit = _digit(ch)
            if digit is None:
                return None
            pending = digit
    return banked + group + pending


def _digit_string(text: str) -> float | None:
    """Digits of any script with grouping separators, one decimal point and an e/E exponent.

    Which of '.' and ',' is the decimal point: the later one when both occur; '.' when only dots
    occur; ',' when only commas occur and 1 to 3 digits follow the last comma ('1,5', '1,25');
    otherwise commas group ('1,234', '1,2345'). The other one is a grouping separator."""
    point = None
    last_dot, last_comma = text.rfind("."), text.rfind(",")
    if last_dot >= 0:
        point = "." if last_dot > last_comma else ","
    elif last_comma >= 0:
        after = sum(_digit(ch) is not None for ch in text[last_comma + 1:])
        point = "," if 1 <= after <= 3 else None
    plain: list[str] = []           # ASCII spelling handed to float()
    has_point = has_exponent = has_digit = False
    at = 0
    while at < len(text):
        ch = text[at]
        at += 1
        if ch in "eE" and not has_exponent:
            if not plain:
                return None
            has_exponent = True
            plain.append("e")
            if at < len(text) and text[at] in _EXPONENT_SIGN:
                plain.append(_EXPONENT_SIGN[text[at]])
                at += 1
        elif ch == point or ch in _ALWAYS_POINT:
            if has_point:
                return None
            has_point = True
            plain.append(".")
        elif ch in _GROUPING or ch.isspace() or (ch == "." and point == ","):
            continue
        else:
            digit = _digit(ch)
            if digit is None:
                return None
            has_digit = True
            plain.append(str(digit))
    if not has_digit:
        return None
    try:
        return float("".join(plain))
    except ValueError:                 # '1e', '.e5', '1e5.5'
        return None
