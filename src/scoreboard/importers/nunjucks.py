"""promptfoo's Nunjucks templates as Jinja2 templates, and what cannot be converted.

Nunjucks and Jinja2 share their syntax for `{{ }}`, `{% if %}`, `{% for %}`, `{% set %}` and
the common filters; what differs is listed, never silently kept:

- `| dump` is kept: scoreboard's templates have Nunjucks' `dump` (JSON.stringify; templating.py);
- JavaScript method calls (`name.toUpperCase()`, `.length`, `.includes(...)`) do not exist in
  Jinja2: the template is not converted;
- every output `{{ EXPR }}` becomes `{{ (EXPR) | js }}`, so a value prints as Nunjucks prints
  it (src/util/templates.ts getNunjucksEngine, nunjucks' suppressValue then String()): true/false,
  null and an undefined name as the empty string, 1.0 as 1, arrays joined by commas, objects as
  "[object Object]" (templating.py js_print);
- an undefined name, and an attribute or item of one (`{{ a.b }}` without `a`), is undefined in
  Nunjucks (memberLookup of undefined is undefined): it prints nothing, is false in `{% if %}`
  and empty in `{% for %}`; the imported suite sets `template_undefined: empty`, which renders
  its templates with that rule (templating.py) instead of scoreboard's strict one.
"""

from __future__ import annotations

import re

_JS_MEMBER = re.compile(r"\.(toUpperCase|toLowerCase|trim|length|includes|split|join|slice|substring|replace|"
                        r"map|filter|indexOf|startsWith|endsWith|toString|toFixed)\b")
_BLOCK = re.compile(r"({{.*?}}|{%.*?%})", re.DOTALL)


def convert(template: str) -> tuple[str, list[str], list[str]]:
    """(the Jinja2 text, problems that prevent conversion, notes on differences)."""
    problems: list[str] = []
    notes: list[str] = []
    out: list[str] = []
    for piece in _BLOCK.split(template):
        if not _BLOCK.fullmatch(piece):
            out.append(piece)
            continue
        m = _JS_MEMBER.search(piece)
        if m:
            problems.append(f"JavaScript member {m.group(0)!r} in {piece.strip()!r} has no Jinja2 equivalent")
        out.append(_printed(piece))
    return "".join(out), problems, notes


_OUTPUT = re.compile(r"{{(-?)(.*?)(-?)}}", re.DOTALL)


def _printed(piece: str) -> str:
    """`{{ EXPR }}` as `{{ (EXPR) | js }}` (whitespace control kept); statements unchanged."""
    m = _OUTPUT.fullmatch(piece)
    if not m or not m.group(2).strip():
        return piece
    return "{{" + m.group(1) + " (" + m.group(2).strip() + ") | js " + m.group(3) + "}}"


def uses_template(text: str) -> bool:
    """Whether the text holds Nunjucks syntax at all."""
    return "{{" in text or "{%" in text
