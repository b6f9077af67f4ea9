"""JavaScript values as Nunjucks 3 computes them, for templates converted from promptfoo
(importers/nunjucks.py), as plain functions the environment (environment.py) registers.

Values are JavaScript's as Python holds them: None is null, a jinja2 Undefined is undefined,
bool, int/float are numbers, str, list/tuple are arrays, dict is an object. Ported from
nunjucks/src (runtime.js, compiler.js, lib.js at 3.2.4): JavaScript truthiness, String() and
Number(), member access, and JavaScript arithmetic (js_binop, js_add) for a template that starts
with JS_MARKER: the sandbox intercepts `+ - * / // % **` and unary `-`/`+` there, and computes
them as compiler.js does (`1 + '2'` is "12"; `//` is Math.floor(a / b), `**` Math.pow); without
the marker they are Python's. Nunjucks' builtin filters, built on these, are in nunjucks.py.

Two more filters: `dump` (js_dump) is Nunjucks' (JSON.stringify(value, null, indent)), and `js`
(js_print) prints a value the way Nunjucks prints `{{ value }}` (its suppressValue, then
JavaScript's String()): true/false, null and an undefined name as the empty string, numbers as
JavaScript prints them (1.0 is "1", js_number), arrays joined by commas, objects as
"[object Object]". Templates converted from promptfoo use it (importers/nunjucks.py).

Jinja2 is imported on first use."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from .bounds import MAX_TEXT, _too_long


def js_number(x: float) -> str:
    """Number::toString (ECMA-262): 1.0 -> "1", 1e21 -> "1e+21", 1e-7 -> "1e-7"."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign, digits, exp = Decimal(repr(float(x))).normalize().as_tuple()
    ds = "".join(map(str, digits))
    k, n = len(ds), exp + len(ds)
    if k <= n <= 21:
        out = ds + "0" * (n - k)
    elif 0 < n <= 21:
        out = ds[:n] + "." + ds[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + ds
    else:
        e = n - 1
        mant = ds if k == 1 else ds[0] + "." + ds[1:]
        out = f"{mant}e{'+' if e >= 0 else '-'}{abs(e)}"
    return ("-" if sign else "") + out


def js_dump(value: Any, indent: int | None = None) -> str:
    """Nunjucks' `dump` filter: JSON.stringify(value, null, indent) (no spaces without an indent,
    non-ASCII kept, integral floats printed as integers)."""
    import json

    def plain(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
            return int(v)
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    from jinja2 import Undefined

    if isinstance(value, Undefined):
        return ""
    if isinstance(indent, str):  # JSON.stringify uses at most 10 characters of indentation
        indent = indent[:10]
    elif isinstance(indent, (int, float)) and not isinstance(indent, bool):
        indent = max(0, min(10, int(indent)))
    if indent:
        return json.dumps(plain(value), ensure_ascii=False, indent=indent)
    return json.dumps(plain(value), ensure_ascii=False, separators=(",", ":"))


def js_print(value: Any) -> str:
    """What Nunjucks outputs for `{{ value }}` (see the module): null/undefined print nothing."""
    from jinja2 import Undefined

    if value is None or isinstance(value, Undefined):
        return ""
    return _js_string(value)


def _js_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number(float(value)) if isinstance(value, float) or abs(value) >= 2 ** 53 else str(value)
    if isinstance(value, (list, tuple)):  # Array.prototype.join: null and undefined elements are empty
        return ",".join("" if v is None else _js_string(v) for v in value)
    return "[object Object]"


#: a converted template that computes (+ - * / // % **) starts with this comment: its arithmetic
#: is JavaScript's (call_binop); native templates keep Python's
JS_MARKER = "{# nunjucks: JavaScript arithmetic #}"

#: JavaScript's WhiteSpace and LineTerminator (what \s matches in a JavaScript regular expression)
_JS_WS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def _undefined():
    from jinja2 import ChainableUndefined

    return ChainableUndefined()


def _is_undef(v: Any) -> bool:
    from jinja2 import Undefined

    return isinstance(v, Undefined)


def _fail(message: str):
    from jinja2.exceptions import TemplateRuntimeError

    raise TemplateRuntimeError(message)


def js_truthy(value: Any) -> bool:
    """JavaScript's ToBoolean: undefined, null, false, 0, NaN and "" are false; [] and {} are true."""
    if value is None or _is_undef(value) or value is False:
        return False
    if isinstance(value, (int, float)):
        return not math.isnan(value) and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def js_str(value: Any) -> str:
    """JavaScript's String(value): undefined is "undefined", null "null" (js_print prints them empty)."""
    if value is None:
        return "null"
    if _is_undef(value):
        return "undefined"
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None or _is_undef(v) else js_str(v) for v in value)
    return _js_string(value)


def _primitive(value: Any) -> Any:
    """ToPrimitive: an array is its join, an object "[object Object]"."""
    if isinstance(value, (list, tuple, dict)):
        return js_str(value)
    return value


def js_to_number(value: Any) -> float | int:
    """JavaScript's ToNumber."""

    value = _primitive(value)
    if value is None or value is False:
        return 0
    if value is True:
        return 1
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        s = value.strip(_JS_WS_CHARS)
        if not s:
            return 0
        m = re.fullmatch(r"0([xob])([0-9a-f]+)", s, re.IGNORECASE)
        if m:
            try:
                return int(m.group(2), {"x": 16, "o": 8, "b": 2}[m.group(1).lower()])
            except ValueError:
                return math.nan
        if re.fullmatch(r"[+-]?Infinity", s):
            return -math.inf if s[0] == "-" else math.inf
        if re.fullmatch(r"[+-]?(\d+(?:\.\d*)?|\.\d+)([eE][+-]?\d+)?", s):
            f = float(s)
            return int(f) if f.is_integer() and abs(f) < 2 ** 53 and re.fullmatch(r"[+-]?\d+", s) else f
        return math.nan
    return math.nan


def _num(x: float) -> float | int:
    """An arithmetic result: an integral value within 2**53 stays an int (it prints the same)."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 2 ** 53:
        return int(x)
    return x


def js_add(left: Any, right: Any) -> Any:
    """JavaScript's +: text when either side is (or converts to) a string, else numbers."""
    a, b = _primitive(left), _primitive(right)
    if isinstance(a, str) or isinstance(b, str):
        sa, sb = js_str(a), js_str(b)
        if len(sa) + len(sb) > MAX_TEXT:
            raise _too_long("`+`")
        return sa + sb
    x, y = js_to_number(a), js_to_number(b)
    if isinstance(x, int) and isinstance(y, int) and not isinstance(x, bool) and not isinstance(y, bool):
        return x + y
    return _num(float(x) + float(y))


def js_binop(op: str, left: Any, right: Any) -> Any:
    """The arithmetic operators as Nunjucks compiles them (compiler.js: JavaScript's + - * / %,
    Math.floor(a / b) for //, Math.pow for **)."""
    if op == "+":
        return js_add(left, right)
    x, y = float(js_to_number(left)), float(js_to_number(right))
    if op == "-":
        return _num(x - y)
    if op == "*":
        return _num(x * y)
    if op in ("/", "//"):
        if y == 0:
            q = math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1, y)
        else:
            q = x / y
        return _num(math.floor(q) if op == "//" and math.isfinite(q) else q)
    if op == "%":
        if y == 0 or math.isinf(x) or math.isnan(x) or math.isnan(y):
            return math.nan
        return _num(x if math.isinf(y) else math.fmod(x, y))
    if op == "**":
        return _num(_js_pow(x, y))
    raise ValueError(op)


def _js_pow(x: float, y: float) -> float:
    if math.isnan(y) or (abs(x) == 1 and math.isinf(y)):
        return math.nan
    try:
        return math.pow(x, y)
    except OverflowError:
        return math.inf if x > 0 or y % 2 == 0 else -math.inf
    except ValueError:  # 0 ** -1, negative ** fraction
        return math.inf if x == 0 else math.nan


def _js_lt(a: Any, b: Any) -> bool:
    """JavaScript's a < b (the abstract relational comparison)."""
    a, b = _primitive(a), _primitive(b)
    if isinstance(a, str) and isinstance(b, str):
        return _utf16(a) < _utf16(b)
    x, y = js_to_number(a), js_to_number(b)
    return x < y  # NaN compares false


def _utf16(s: str) -> bytes:
    """A key that orders strings as JavaScript does (by UTF-16 code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def _js_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _is_index(k: str) -> bool:
    return k.isdigit() and k.isascii() and (k == "0" or k[0] != "0") and int(k) < 2 ** 32 - 1


def js_keys(obj: dict) -> list:
    """An object's keys in JavaScript's order: integer-like keys ascending, then the others as
    inserted (Object.keys, for-in, JSON.stringify)."""
    keys = [k if isinstance(k, str) else js_str(k) for k in obj]
    index = sorted((k for k in keys if _is_index(k)), key=int)
    return index + [k for k in keys if not _is_index(k)]


def _js_items(obj: dict) -> list:
    lookup = {(k if isinstance(k, str) else js_str(k)): v for k, v in obj.items()}
    return [(k, lookup[k]) for k in js_keys(obj)]


def js_member(obj: Any, key: Any) -> Any:
    """runtime.memberLookup without methods: obj[key], undefined when absent."""
    if obj is None or _is_undef(obj):
        return _undefined()
    if isinstance(obj, (list, tuple, str)):
        if isinstance(key, (int, float)) and not isinstance(key, bool) and float(key).is_integer() or isinstance(key, str) and _is_index(key):
            i = int(key)
        else:
            return _js_len(obj) if key == "length" and isinstance(obj, str) else \
                (len(obj) if key == "length" else _undefined())
        return obj[i] if 0 <= i < len(obj) else _undefined()
    if isinstance(obj, dict):
        k = key if isinstance(key, str) else js_str(key)
        for kk, v in obj.items():
            if (kk if isinstance(kk, str) else js_str(kk)) == k:
                return v
        return _undefined()
    return _undefined()


_JS_WS_CHARS = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
               "\u2028\u2029\u202f\u205f\u3000\ufeff"


def js_trim(s: str) -> str:
    """String.prototype.trim (Python's strip also removes \\x1c-\\x1f and \\x85, and keeps U+FEFF)."""
    return s.strip(_JS_WS_CHARS)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def js_json_parse(text: str) -> Any:
    """JSON.parse: NaN and Infinity are not JSON (Python's json accepts them)."""
    return json.loads(text, parse_constant=_no_constant)


#: promptfoo's ANSI_ESCAPE (src/providers/scriptCompletion.ts stripText, src/prompts/processors/executable.ts):
#: its exec provider and exec prompts strip these from what a program prints
ANSI_ESCAPE = re.compile(r"\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])")
