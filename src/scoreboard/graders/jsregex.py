"""JavaScript regular expressions (no flags, as promptfoo's `new RegExp(value)` builds them)
translated into Python `re` patterns that match exactly the same strings, or refused.

Differences handled (ECMAScript 262, Annex B web-compatibility grammar, non-unicode mode):

- `$` is the end of the input only (Python's `$` also matches before a final newline): `\\Z`;
- `.` excludes \\n, \\r, U+2028 and U+2029 (Python's excludes only \\n);
- `\\d`, `\\w`, `\\b` are ASCII (Python's are Unicode) and `\\s` is JavaScript's own set;
- `(?<name>...)` is Python's `(?P<name>...)`; `[^]` matches any character, `[]` none;
- an identity escape (`\\A`, `\\z`, `\\q`) is the letter itself, `{,5}` and a lone `{` or `}`
  are literal text, `\\cJ` is a control character;
- strings are UTF-16 code units: an astral character (an emoji) is two units, so `.` matches
  half of it. Patterns are translated with astral characters as surrogate pairs, and the text
  is converted the same way before matching (`utf16_units`).

Refused (a ValueError saying why), because Python would match differently: backreferences (a
group that did not take part matches the empty string in JavaScript and fails in Python),
`\\u{...}`, `(?` forms JavaScript does not have, possessive quantifiers (`a*+`, an error in
JavaScript), `\\D \\W \\S` inside a class, a class escape at a range end, a variable-width
lookbehind, and anything Python cannot compile.
"""

from __future__ import annotations

import re

_WS = ("\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff")
_CLASS = {"d": "0-9", "w": "A-Za-z0-9_", "s": _WS}
_OUTSIDE = {"d": "[0-9]", "D": "[^0-9]", "w": "[A-Za-z0-9_]", "W": "[^A-Za-z0-9_]",
            "s": f"[{_WS}]", "S": f"[^{_WS}]", "b": r"\b", "B": r"\B"}
_SIMPLE = {"n": r"\n", "r": r"\r", "t": r"\t", "f": r"\f", "v": r"\x0b"}
_HEX = "0123456789abcdefABCDEF"
_QUANT = re.compile(r"\{(\d+)(,(\d*))?\}")


def _units(ch: str) -> str:
    """A character as UTF-16 code units (an astral character becomes its surrogate pair)."""
    cp = ord(ch)
    if cp < 0x10000:
        return ch
    cp -= 0x10000
    return chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF))


def utf16_units(text: str) -> str:
    """The text as JavaScript sees it: one Python character per UTF-16 code unit."""
    if text.isascii() or all(ord(c) < 0x10000 for c in text):
        return text
    return "".join(_units(c) for c in text)


def _literal(ch: str) -> str:
    return "".join(re.escape(u) if u.isascii() else u for u in _units(ch))


def _escape(p: str, i: int, in_class: bool) -> tuple[str, int]:
    """The Python text for the escape starting at p[i] == '\\'; the index after it."""
    if i + 1 >= len(p):
        raise ValueError("the pattern ends with a lone backslash (a JavaScript syntax error)")
    c = p[i + 1]
    if c.isdigit() and c != "0":
        raise ValueError("backreferences match differently in Python (a group that did not take part "
                         "matches the empty string in JavaScript)")
    if c == "0":
        if i + 2 < len(p) and p[i + 2].isdigit():
            raise ValueError("legacy octal escapes are not translated")
        return r"\x00", i + 2
    if c in _SIMPLE:
        return _SIMPLE[c], i + 2
    if in_class:
        if c in _CLASS:
            return _CLASS[c], i + 2
        if c in "DWS":
            raise ValueError(f"\\{c} inside a character class is not translated")
        if c == "b":
            return r"\x08", i + 2
    elif c in _OUTSIDE:
        return _OUTSIDE[c], i + 2
    if c == "c":
        if i + 2 < len(p) and p[i + 2].isascii() and p[i + 2].isalpha():
            return f"\\x{ord(p[i + 2]) % 32:02x}", i + 3
        raise ValueError("\\c without a control letter is not translated")
    if c == "x" and len(p[i + 2:i + 4]) == 2 and all(ch in _HEX for ch in p[i + 2:i + 4]):
        return p[i:i + 4], i + 4
    if c == "u":
        if p[i + 2:i + 3] == "{":
            raise ValueError("\\u{...} needs JavaScript's u flag, which promptfoo does not set")
        if len(p[i + 2:i + 6]) == 4 and all(ch in _HEX for ch in p[i + 2:i + 6]):
            return p[i:i + 6], i + 6
    if c == "k" and not in_class:
        raise ValueError("backreferences match differently in Python (a group that did not take part "
                         "matches the empty string in JavaScript)")
    return _literal(c), i + 2  # an identity escape: the character itself


def _class(p: str, i: int) -> tuple[str, int]:
    """The Python text for the class starting at p[i] == '['; the index after it."""
    j = i + 1
    negated = p[j:j + 1] == "^"
    if negated:
        j += 1
    if p[j:j + 1] == "]":
        return ("(?s:.)" if negated else "(?!)"), j + 1
    parts: list[str] = []
    kinds: list[str] = []  # "char", "set" (a class escape) or "-"
    while j < len(p) and p[j] != "]":
        ch = p[j]
        if ch == "\\":
            text, j = _escape(p, j, True)
            kinds.append("set" if p[j - 1] in "dws" and text in _CLASS.values() else "char")
            parts.append(text)
            continue
        if ch == "-" and parts and j + 1 < len(p) and p[j + 1] != "]":
            parts.append("-")
            kinds.append("-")
        else:
            parts.append(re.escape(ch) if ch.isascii() else "".join(_units(ch)))
            kinds.append("char")
        j += 1
    if j >= len(p):
        raise ValueError("an unterminated character class (a JavaScript syntax error)")
    for k, kind in enumerate(kinds):
        if kind == "-" and ((k > 0 and kinds[k - 1] == "set") or (k + 1 < len(kinds) and kinds[k + 1] == "set")):
            raise ValueError("a class escape at the end of a range (JavaScript reads '-' literally there) "
                             "is not translated")
    return "[" + ("^" if negated else "") + "".join(parts) + "]", j + 1


def translate(pattern: str) -> str:
    """The Python pattern that matches exactly what `new RegExp(pattern)` matches (on text
    passed through `utf16_units`); ValueError naming what cannot be translated."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        quant = _QUANT.match(pattern, i) if ch == "{" else None
        if ch == "\\":
            text, i = _escape(pattern, i, False)
            out.append(text)
        elif ch == "[":
            text, i = _class(pattern, i)
            out.append(text)
        elif ch == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
            i += 1
        elif ch == "$":
            out.append(r"\Z")
            i += 1
        elif ch == "(":
            rest = pattern[i + 1:i + 4]
            if not rest.startswith("?") or rest[:2] in ("?:", "?=", "?!") or rest[:3] in ("?<=", "?<!"):
                out.append("(")
                i += 1
            elif rest.startswith("?<"):
                out.append("(?P<")  # a named group; the name follows as written
                i += 3
            else:
                raise ValueError(f"'(?{rest[1:2]}' is not JavaScript regex syntax")
        elif ch in "*+?" or quant:
            out.append(quant.group(0) if quant else ch)
            i = quant.end() if quant else i + 1
            if pattern[i:i + 1] == "?":  # lazy
                out.append("?")
                i += 1
            if pattern[i:i + 1] == "+":
                raise ValueError("a quantifier followed by '+' is a JavaScript syntax error (possessive in Python)")
        elif ch == "{":
            out.append(r"\{")
            i += 1
        elif ch in "}]":
            out.append("\\" + ch)
            i += 1
        elif ch in "^|)":
            out.append(ch)
            i += 1
        else:
            out.append(_literal(ch))
            i += 1
    text = "(?a)" + "".join(out)  # (?a): \b and \B by ASCII word characters, as JavaScript's
    try:
        re.compile(text)
    except re.error as exc:
        raise ValueError(f"not translatable to Python: {exc}") from None
    return text
