"""The template sandbox: one sandboxed Jinja2 environment for prompt templates, judge prompts
and templates converted from promptfoo's Nunjucks, every render bounded.

- environment.py: the environment, render_text, the strict and Nunjucks undefined rules;
- bounds.py: what one render may cost (work, CPU time, bytes, output, each value's size);
- limits.py: how a render is counted against those bounds (the budget, the instrumented nodes,
  the sized operators, methods, filters and tests);
- js.py: JavaScript values and arithmetic as Nunjucks computes them (numbers, dump, print,
  truthiness, `+`), for converted templates;
- nunjucks.py: Nunjucks 3's builtin filters and tests, as `nj_NAME`.
"""

from .environment import (
    JS_MARKER,
    MAX_INT_BITS,
    MAX_ITEMS,
    MAX_RENDER_BYTES,
    MAX_RENDER_SECONDS,
    MAX_RENDER_STEPS,
    MAX_TEXT,
    NJ_FILTERS,
    UNDEFINED_MODES,
    __getattr__,  # noqa: F401  (TemplateLimit, made on first use: Jinja2 loads only when a template is)
    environment,
    js_add,
    js_binop,
    js_dump,
    js_number,
    js_print,
    js_str,
    js_to_number,
    js_truthy,
    render_budget,
    render_text,
)

__all__ = [
    "JS_MARKER", "MAX_INT_BITS", "MAX_ITEMS", "MAX_RENDER_BYTES", "MAX_RENDER_SECONDS", "MAX_RENDER_STEPS",
    "MAX_TEXT", "NJ_FILTERS", "UNDEFINED_MODES", "environment", "js_add", "js_binop", "js_dump", "js_number",
    "js_print", "js_str", "js_to_number", "js_truthy", "render_budget", "render_text",
]  # and TemplateLimit, made on first use (__getattr__)
