"""The one sandboxed Jinja2 environment, shared by prompt templates (suite/templates.py) and
judge prompts (judges/scaled.py): ImmutableSandboxedEnvironment with StrictUndefined (an
undefined name is an error, never an empty string; a suite may ask for Nunjucks' rule instead,
`template_undefined: empty`), no autoescaping, and every render bounded (bounds.py holds
the bounds, limits.py and sizes.py how they are counted: its work, CPU time, the bytes of the values it
makes, its output, and each text, list and number it makes), so a hostile template cannot hang a
command or use up memory; passing a bound is a TemplateLimit (a SecurityError) of one line.
Jinja2 is imported on first use.

Two filters are added: `dump` is Nunjucks' (JSON.stringify(value, null, indent)), and `js` prints
a value the way Nunjucks prints `{{ value }}` (js.py: js_dump, js_print). Converted
templates also use Nunjucks 3's own semantics (js.py): each Nunjucks builtin filter as
`nj_NAME`, `nj_truthy`, `nj_iter` / `nj_pairs`, and, in a template that starts with JS_MARKER,
JavaScript arithmetic: the sandbox intercepts `+ - * / // % **` and unary `-`/`+`, and computes
them as compiler.js does (`1 + '2'` is "12"); without the marker they are Python's (with `*` and
`**` bounded as above).

The package (templating/__init__.py) re-exports what callers use from the module defining each."""

from __future__ import annotations

import operator
import re
from typing import Any

from .bounds import (
    _SLOT_BYTES,
    _check_size,
    _too_long,
)
from .js import (
    JS_MARKER,
    js_binop,
    js_dump,
    js_print,
    js_to_number,
)
from .filters import _bounded_filter, _bounded_test, _lipsum, _py_binop, _sum_filter
from .instrument import _finalize, _instrument, _meter, _Metered, _sb_charge, _sb_concat, _sb_loop
from .limits import (
    _BUDGET,
    _Budget,
    _budget,
    _render,
)
from .sizes import _charge, _check_text, _method_check, _text_size
from .nunjucks import NJ_FILTERS

#: the environment's mark on a template converted from Nunjucks (one that starts with JS_MARKER):
#: a global that makes call_binop / call_unop compute as JavaScript
_JS_KEY = "__nunjucks_js__"
_JS_ON = object()


def _environment(undefined: str = "error"):
    import functools
    import types

    from jinja2 import ChainableUndefined, StrictUndefined, Template, UndefinedError
    from jinja2.runtime import LoopContext
    from jinja2.sandbox import (
        ImmutableSandboxedEnvironment,
        SandboxedEscapeFormatter,
        SandboxedFormatter,
    )
    from jinja2.utils import missing, pass_context, pass_eval_context
    from markupsafe import Markup

    class _Sized:
        """str.format's fields sized before they are formatted (widths, values, in total)."""

        budget: Any = None
        total = 0
        grow = 1

        def convert_field(self, value, conversion):
            if conversion is not None and not isinstance(value, (int, float)) and value is not None:
                n = (len(value) if isinstance(value, str) else _text_size(self.budget, value)) * \
                    (10 if conversion in ("r", "a") else 1)
                _check_size(n, "format()")
            return super().convert_field(value, conversion)

        def format_field(self, value, format_spec):
            width = 0
            for digits in re.findall(r"\d+", format_spec):
                if len(digits) > 9:
                    raise _too_long("format()")
                width += int(digits)
            self.total += width + _text_size(self.budget, value) * self.grow + 32
            _check_size(self.total, "format()")
            return super().format_field(value, format_spec)

    class _SizedFormatter(_Sized, SandboxedFormatter):
        pass

    class _SizedEscapeFormatter(_Sized, SandboxedEscapeFormatter):
        grow = 6

    class _BoundedTemplate(Template):
        """A template whose render is bounded (see _render); generate() yields its one text."""

        def render(self, *args: Any, **kwargs: Any) -> str:
            return _render(self, dict(*args, **kwargs))

        def generate(self, *args: Any, **kwargs: Any):
            yield self.render(*args, **kwargs)

    class _Bounded(ImmutableSandboxedEnvironment):
        """The sandbox, with every render bounded in work, memory, time and output (see
        limits.py), and `+ - * / // % **` computed as JavaScript's in a template
        converted from Nunjucks."""

        intercepted_binops = frozenset(["*", "**", "+", "-", "/", "//", "%"])
        intercepted_unops = frozenset(["-", "+"])
        template_class = _BoundedTemplate

        def from_string(self, source, globals=None, template_class=None):
            # a template converted from Nunjucks (it starts with JS_MARKER) computes as JavaScript
            if isinstance(source, str) and source.startswith(JS_MARKER):
                globals = {**(globals or {}), _JS_KEY: _JS_ON}
            return super().from_string(source, globals, template_class)

        def _parse(self, source, name, filename):
            tree = super()._parse(source, name, filename)
            _refuse_loading(tree, name, filename)
            _refuse_unknown_by_name(tree, self, name, filename)
            return _instrument(tree, self)

        def call_unop(self, context, operator_name, arg):
            if context.parent.get(_JS_KEY) is _JS_ON:
                if isinstance(arg, (list, tuple)):
                    _check_text(_budget(), arg, f"unary {operator_name}")
                n = js_to_number(arg)
                return -n if operator_name == "-" else n
            return operator.neg(arg) if operator_name == "-" else operator.pos(arg)

        def call_binop(self, context, operator_name, left, right):
            b = _BUDGET.get() or _Budget()
            if context.parent.get(_JS_KEY) is _JS_ON:
                for v in (left, right):
                    if isinstance(v, (list, tuple)):  # JavaScript turns an array into text
                        _check_text(b, v, f"`{operator_name}`")
                rv = js_binop(operator_name, left, right)
            else:
                rv = _py_binop(b, operator_name, left, right)
            if isinstance(rv, (list, tuple)):  # slots pointing at values already counted
                b.add_bytes(56 + 8 * len(rv))
            elif not isinstance(rv, (int, float)):
                _charge(b, rv)
            return rv

        def getitem(self, obj, argument):
            rv = super().getitem(obj, argument)
            if type(argument) is slice:
                _charge(_budget(), rv)
            return rv

        def call(self, context, obj, /, *args, **kwargs):
            b = _BUDGET.get() or _Budget()
            if len(args) + len(kwargs) > 16:  # f(*items): a tuple (or mapping) the callee may keep
                b.spend(len(args) + len(kwargs), _SLOT_BYTES * (len(args) + len(kwargs)))
            if args and isinstance(obj, LoopContext) and not isinstance(args[0], _Metered):
                args = (_meter(args[0], b, 1, 0), *args[1:])
            owner = getattr(obj, "__self__", None)
            if isinstance(owner, (str, bytes, int)) and not isinstance(owner, bool):
                args = _method_check(b, owner, getattr(obj, "__name__", ""), args, kwargs)
            rv = super().call(context, obj, *args, **kwargs)
            _charge(b, rv)
            return rv

        def wrap_str_format(self, value):
            # jinja2's, with a formatter that sizes each field before it formats it
            if not isinstance(value, (types.MethodType, types.BuiltinMethodType)) \
                    or value.__name__ not in ("format", "format_map"):
                return None
            f_self = value.__self__
            if not isinstance(f_self, str):
                return None
            str_type = type(f_self)
            is_format_map = value.__name__ == "format_map"
            env = self

            def wrapper(*args, **kwargs):
                if is_format_map:
                    if kwargs:
                        raise TypeError("format_map() takes no keyword arguments")
                    if len(args) != 1:
                        raise TypeError(f"format_map() takes exactly one argument ({len(args)} given)")
                    kwargs, args = args[0], ()
                formatter = _SizedEscapeFormatter(env, escape=f_self.escape) if isinstance(f_self, Markup) \
                    else _SizedFormatter(env)
                formatter.budget, formatter.total = _budget(), len(f_self)
                return str_type(formatter.vformat(f_self, args, kwargs))
            return functools.update_wrapper(wrapper, value)

    class _Strict(StrictUndefined):
        """StrictUndefined whose UndefinedError carries what was missing (`undefined_obj`, the
        value an attribute or item was asked of, or jinja2's `missing` for a name; and
        `undefined_name`), so an error can name `user.name`, not only "'dict object' has no
        attribute 'name'" (suite/templates.py)."""

        __slots__ = ()

        def __init__(self, hint=None, obj=missing, name=None, exc=UndefinedError):
            super().__init__(hint, obj, name, exc)
            if exc is UndefinedError:
                self._undefined_exception = functools.partial(_named_error, obj, name)

    # "empty": Nunjucks' rule (promptfoo's templates): an undefined name, and any attribute or item
    # of one, is undefined: it prints nothing, is false, iterates as empty
    env = _Bounded(undefined=_Strict if undefined == "error" else ChainableUndefined, autoescape=False,
                   keep_trailing_newline=True, finalize=pass_eval_context(_finalize))
    env.filters["js"] = js_print
    env.filters["dump"] = js_dump
    env.filters.update(NJ_FILTERS)
    env.filters["sum"] = pass_context(_sum_filter)
    env.filters = {name: _bounded_filter(name, fn) for name, fn in env.filters.items()}
    env.filters.update(__sb_loop=pass_context(_sb_loop), __sb_charge=pass_context(_sb_charge),
                       __sb_concat=pass_context(_sb_concat))
    env.tests = {name: _bounded_test(fn) for name, fn in env.tests.items()}
    env.globals["lipsum"] = _lipsum
    return env


#: the tags that load another template, by their node: there is no loader (a template is
#: self-contained), so each is refused when the template is compiled, never when it renders
LOADING_TAGS = {"Include": "include", "Import": "import", "FromImport": "from ... import", "Extends": "extends"}


def _refuse_loading(tree: Any, name: Any, filename: Any) -> None:
    """A TemplateSyntaxError (with `loading_tag` set: the tag as written) for the first
    {% include %}, {% import %}, {% from ... import %} or {% extends %} in the template."""
    from jinja2 import TemplateSyntaxError, nodes

    for node in tree.find_all((nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends)):
        tag = LOADING_TAGS[type(node).__name__]
        exc = TemplateSyntaxError(f"{{% {tag} %}}: a template cannot load another file", node.lineno,
                                  name, filename)
        exc.loading_tag = tag  # type: ignore[attr-defined]
        raise exc


#: the filters that take another filter's (or a test's) name as an argument, and its position
_BY_NAME = {"map": ("filter", 0), "select": ("test", 0), "reject": ("test", 0), "selectattr": ("test", 1),
            "rejectattr": ("test", 1)}


def _refuse_unknown_by_name(tree: Any, env: Any, name: Any, filename: Any) -> None:
    """Jinja2's own TemplateSyntaxError ("No filter named 'titlecase'.") for a filter or test
    named as text to map, select, reject, selectattr or rejectattr (`map('titlecase')`), as it
    raises for one written `| titlecase`: else it surfaces only when a case renders, once per case."""
    from jinja2 import TemplateSyntaxError, nodes

    for node in tree.find_all(nodes.Filter):
        kind, position = _BY_NAME.get(node.name, (None, 0))
        if kind is None or (node.name == "map" and any(k.key == "attribute" for k in node.kwargs)):
            continue
        arg = node.args[position] if len(node.args) > position else None
        if isinstance(arg, nodes.Const) and isinstance(arg.value, str) \
                and arg.value not in (env.filters if kind == "filter" else env.tests):
            raise TemplateSyntaxError(f"No {kind} named {arg.value!r}.", node.lineno, name, filename)


def _named_error(obj: Any, name: Any, message: str) -> Exception:
    """An UndefinedError that says what was missing (see _Strict)."""
    from jinja2 import UndefinedError

    exc = UndefinedError(message)
    exc.undefined_obj = obj  # type: ignore[attr-defined]
    exc.undefined_name = name  # type: ignore[attr-defined]
    return exc


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


#: filters other template languages (Ansible, Django, Liquid) have, and what this one writes
_OTHER_FILTERS = {"json": "tojson", "to_json": "tojson", "jsonify": "tojson", "titlecase": "title",
                  "strip": "trim", "lowercase": "lower", "uppercase": "upper", "downcase": "lower",
                  "upcase": "upper", "len": "length", "size": "length", "to_nice_json": "tojson",
                  "split": "the text's own method: {{ value.split(',') }}"}


def unknown_name_hint(message: str) -> str:
    """" (did you mean 'title'?)" after Jinja2's "No filter named 'titlecase'." (or a test), for a
    filter spelled as another template language spells it or mistyped; else ""."""
    from ..errors import closest

    found = re.match(r"No (filter|test) named '([^']+)'", message or "")
    if not found:
        return ""
    kind, name = found.groups()
    env = environment()
    known = [n for n in (env.filters if kind == "filter" else env.tests)
             if not n.startswith(("_", "nj_"))]
    other = _OTHER_FILTERS.get(name) if kind == "filter" else None
    if other is not None:
        return f" (did you mean {other!r}?)" if other in known else f" (write {other})"
    near = closest(name, known, 0.6)
    if near is not None:
        return f" (did you mean {near!r}?)"
    return f" (Jinja2's {kind}s here: {', '.join(sorted(n for n in known if n.isidentifier()))})"
