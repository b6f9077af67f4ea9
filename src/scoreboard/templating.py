"""The one sandboxed Jinja2 environment, shared by prompt templates (suite/templates.py) and
judge prompts (judges/scaled.py): ImmutableSandboxedEnvironment with StrictUndefined (an
undefined name is an error, never an empty string; a suite may ask for Nunjucks' rule instead,
`template_undefined: empty`), no autoescaping, and `*` / `**` bounded so a
template cannot build gigabytes. Jinja2 is imported on first use.

Two filters are added: `dump` is Nunjucks' (JSON.stringify(value, null, indent)), and `js` prints a value the way Nunjucks prints `{{ value }}` (its
suppressValue, then JavaScript's String()): true/false, null and an undefined name as the empty
string, numbers as JavaScript prints them (1.0 is "1"), arrays joined by commas, objects as
"[object Object]". Templates converted from promptfoo use it (importers/nunjucks.py)."""

from __future__ import annotations

import math
import operator
from decimal import Decimal
from typing import Any

#: the most characters one `*` may build inside a template (a 1 MB input bound applies after)
_MAX_REPEAT = 1_000_000


def _environment(undefined: str = "error"):
    from jinja2 import ChainableUndefined, StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

    class _Bounded(ImmutableSandboxedEnvironment):
        """The sandbox, with `*` and `**` bounded so a template cannot build gigabytes."""

        intercepted_binops = frozenset(["*", "**"])

        def call_binop(self, context, operator_name, left, right):
            if operator_name == "**":
                if isinstance(right, (int, float)) and abs(right) > 1000:
                    raise SecurityError("exponent too large in a template")
                return operator.pow(left, right)
            if isinstance(left, (str, list)) and isinstance(right, int) and len(left) * right > _MAX_REPEAT \
                    or isinstance(right, (str, list)) and isinstance(left, int) and len(right) * left > _MAX_REPEAT:
                raise SecurityError(f"a template may not repeat text beyond {_MAX_REPEAT} characters")
            return operator.mul(left, right)

    # "empty": Nunjucks' rule (promptfoo's templates): an undefined name, and any attribute or item
    # of one, is undefined: it prints nothing, is false, iterates as empty
    env = _Bounded(undefined=StrictUndefined if undefined == "error" else ChainableUndefined, autoescape=False,
                   keep_trailing_newline=True)
    env.filters["js"] = js_print
    env.filters["dump"] = js_dump
    return env


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


_ENVS: dict[str, Any] = {}
#: what an undefined name does in a template: "error" (scoreboard's rule) or "empty" (Nunjucks')
UNDEFINED_MODES = ("error", "empty")


def environment(undefined: str = "error"):
    """The sandboxed Jinja2 environment (made on first use: Jinja2 loads only when used); with
    undefined="empty" an undefined name or any attribute of one prints nothing (Nunjucks' rule)."""
    env = _ENVS.get(undefined)
    if env is None:
        if undefined not in UNDEFINED_MODES:
            raise ValueError(f"undefined is one of {UNDEFINED_MODES}, got {undefined!r}")
        env = _ENVS[undefined] = _environment(undefined)
    return env




def render_text(text: str, names: dict) -> str:
    """Render one text template with `names` (errors are Jinja2's: UndefinedError, SecurityError)."""
    return environment().from_string(text).render(names)
