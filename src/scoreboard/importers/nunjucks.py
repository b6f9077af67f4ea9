"""promptfoo's Nunjucks templates as Jinja2 templates, and what cannot be converted.

Nunjucks and Jinja2 share their syntax for `{{ }}`, `{% if %}`, `{% for %}`, `{% set %}` and
the common filters; what differs is listed, never silently kept:

- `| dump` (JSON.stringify) becomes `| tojson`, which escapes <, >, & and ' as \\u003c... (a
  note when used);
- JavaScript method calls (`name.toUpperCase()`, `.length`, `.includes(...)`) do not exist in
  Jinja2: the template is not converted;
- Nunjucks prints an undefined variable as the empty string; Jinja2 (StrictUndefined, as
  scoreboard renders) refuses it, naming the case and the variable.
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
        if re.search(r"\|\s*dump\b", piece):
            notes.append("`| dump` became `| tojson`, which escapes <, >, & and ' (JSON.stringify does not)")
            piece = re.sub(r"\|\s*dump\b", "| tojson", piece)
        out.append(piece)
    return "".join(out), problems, notes


def uses_template(text: str) -> bool:
    """Whether the text holds Nunjucks syntax at all."""
    return "{{" in text or "{%" in text
