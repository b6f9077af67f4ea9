"""The template sandbox: one sandboxed Jinja2 environment for prompt templates, judge prompts
and templates converted from promptfoo's Nunjucks, every render bounded.

- environment.py: the environment, render_text, the strict and Nunjucks undefined rules;
- bounds.py: what one render may cost (work, CPU time, bytes, output, each value's size);
- limits.py: the budget a render runs under; sizes.py: how values are sized against it;
- instrument.py and filters.py: where a render is counted (the instrumented nodes; the sized
  operators, filters and tests);
- js.py: JavaScript values and arithmetic as Nunjucks computes them (numbers, dump, print,
  truthiness, `+`), for converted templates;
- nunjucks.py: Nunjucks 3's builtin filters and tests, as `nj_NAME` (the filter table), with the
  string filters in nunjucks_text.py and those over arrays and objects in nunjucks_lists.py.
"""

from .bounds import (
    MAX_INT_BITS,
    MAX_ITEMS,
    MAX_RENDER_BYTES,
    MAX_RENDER_SECONDS,
    MAX_RENDER_STEPS,
    MAX_TEXT,
    __getattr__,  # noqa: F401  (TemplateLimit, made on first use: Jinja2 loads only when a template is)
)
from .environment import UNDEFINED_MODES, environment, render_text
from .js import JS_MARKER, js_add, js_binop, js_dump, js_number, js_print, js_str, js_to_number, js_truthy
from .limits import render_budget
from .nunjucks import NJ_FILTERS

__all__ = [
    "JS_MARKER", "MAX_INT_BITS", "MAX_ITEMS", "MAX_RENDER_BYTES", "MAX_RENDER_SECONDS", "MAX_RENDER_STEPS",
    "MAX_TEXT", "NJ_FILTERS", "UNDEFINED_MODES", "environment", "js_add", "js_binop", "js_dump", "js_number",
    "js_print", "js_str", "js_to_number", "js_truthy", "render_budget", "render_text",
]  # and TemplateLimit, made on first use (bounds.__getattr__)
