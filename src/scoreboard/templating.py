"""The one sandboxed Jinja2 environment, shared by prompt templates (suite/templates.py) and
judge prompts (judges/scaled.py): ImmutableSandboxedEnvironment with StrictUndefined (an
undefined name is an error, never an empty string), no autoescaping, and `*` / `**` bounded so a
template cannot build gigabytes. Jinja2 is imported on first use."""

from __future__ import annotations

import operator

#: the most characters one `*` may build inside a template (a 1 MB input bound applies after)
_MAX_REPEAT = 1_000_000


def _environment():
    from jinja2 import StrictUndefined
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

    return _Bounded(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


_ENV = None


def environment():
    """The one sandboxed Jinja2 environment (made on first use: Jinja2 loads only when used)."""
    global _ENV
    if _ENV is None:
        _ENV = _environment()
    return _ENV




def render_text(text: str, names: dict) -> str:
    """Render one text template with `names` (errors are Jinja2's: UndefinedError, SecurityError)."""
    return environment().from_string(text).render(names)
