"""Prompt templates: text or chat messages rendered with a case's `vars` by Jinja2's sandbox.

A template is written in a suite (`prompt:`, `prompts:`, a variant's `prompt:`) inline, as a
list of chat messages `{role, content}`, or as `"@relative/path"` (a `.json`/`.yaml` file holds
chat messages, any other file is text), read under the suite's confinement rules. Rendering
uses Jinja2's ImmutableSandboxedEnvironment with StrictUndefined: a variable the case does not
define is an error naming the case and the variable, never an empty string (unless the suite sets
`template_undefined: empty`, Nunjucks' rule, which imported promptfoo suites use: an undefined
name or any attribute of one prints nothing). What is rendered
is what the subject receives, what is hashed and what the report records. The case's `vars`
(a mapping) are the template's top-level names; `vars` and `input` are there too (a case with
an `input` and a var `input` of another value is an error naming `vars.input`: which one
`{{ input }}` means; `metadata` likewise).
"""

from __future__ import annotations

import collections
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, closest, shorten
from ..templating import MAX_TEXT, environment, render_budget
from .paths import Places
from .prompt_function import PER_VARIANT, call_function, load_function

_ROLES = ("system", "user", "assistant", "tool")


@dataclass
class Template:
    """A compiled prompt: `source` is its saved form (text or messages), `file` where it came from."""

    name: str
    source: Any
    file: str | None
    compiled: Any
    #: what an undefined name does: "error" (scoreboard's rule) or "empty" (Nunjucks')
    undefined: str = "error"
    #: where the suite writes it (`prompt`, `variants.NAME.prompt`, `prompts.NAME`), for messages
    field: str | None = None
    #: a prompt function's declared arguments (suite/prompt_function.py); None for a template
    takes: tuple[str, ...] | None = None

    @property
    def per_variant(self) -> bool:
        """Whether its text may differ from variant to variant (a function reading them)."""
        return self.takes is not None and bool(PER_VARIANT & set(self.takes))

    def describe(self) -> dict:
        """The saved form, as a plan variant records it."""
        from ..hashing import sha256_json

        out = {"name": self.name, "template": self.source, "sha256": sha256_json(self.source)}
        if self.file:
            out["file"] = self.file
        if self.undefined != "error":
            out["undefined"] = self.undefined
        return out


def _compile(text: str, name: str, where: dict, undefined: str = "error", place: str = "its") -> Any:
    """`place` says whose line a syntax error's line is: "its" (the template's own text), "the
    file 'prompts/x.txt'", "message 2 (user)" of a chat prompt."""
    from jinja2 import TemplateSyntaxError

    try:
        return environment(undefined).from_string(text)
    except TemplateSyntaxError as exc:
        tag = getattr(exc, "loading_tag", None)
        if tag:  # a template is self-contained: there is no loader (templating/environment.py)
            raise ConfigError(f"prompt {name!r}: {{% {tag} %}} on {place} line {exc.lineno}: a template cannot "
                              "load another file (give a file as the whole prompt: \"@path\")", **where) from None
        from ..templating.environment import unknown_name_hint

        raise ConfigError(f"prompt {name!r}: template syntax error on {place} line {exc.lineno}: {exc.message}"
                          f"{unknown_name_hint(exc.message)}", **where) from None


def _messages(value: Any, name: str, where: dict) -> list[dict]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"prompt {name!r}: chat messages are a non-empty list of {{role, content}}", **where)
    for i, m in enumerate(value):
        if not isinstance(m, dict) or set(m) != {"role", "content"} or m["role"] not in _ROLES \
                or not isinstance(m["content"], str):
            raise ConfigError(f"prompt {name!r}: message {i + 1} must be {{role: {'|'.join(_ROLES)}, "
                              f"content: text}}, got {shorten(repr(m), 80)}", **where)
    return [dict(m) for m in value]


def load_template(spec: Any, name: str, places: Places, *, field: str, from_flag: bool = False,
                  undefined: str = "error") -> Template:
    """A template from its suite form: text, a list of messages, or "@path" (confined); an
    undefined name is an error, or prints nothing with undefined="empty" (Nunjucks' rule)."""
    where = {"file": places.source, "field": field}
    file = None
    if isinstance(spec, dict):  # {python: "module:function"}: a prompt built by code
        source, loaded = load_function(spec, name, places.suite_dir, where)
        return Template(name, source, None, loaded, undefined, field, loaded.takes)
    if isinstance(spec, str) and spec.startswith("@"):
        from .config import Limits

        rel = spec[1:]
        path = places.resolve(rel, field, from_flag=from_flag)
        data = places.read(path, field, from_flag=from_flag, limit=Limits().max_input_bytes,
                           limit_name="limits.max_input_bytes")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ConfigError(f"prompt file {shorten(rel, 120)!r} is not valid UTF-8", **where) from None
        file = rel
        if Path(rel).suffix.lower() in (".json", ".yaml", ".yml"):
            from ..safeparse import ParseError, parse_json, parse_yaml

            try:
                spec = parse_json(text) if rel.lower().endswith(".json") else parse_yaml(text)[0]
            except ParseError as exc:
                at = f" line {exc.line}" if exc.line is not None and not exc.message.startswith("duplicate key") else ""
                raise ConfigError(f"prompt file {rel!r}{at}: {exc.message}", **where) from None
            spec = _messages(spec, name, where)
        else:
            spec = text
    in_file = f" of the file {shorten(file, 120)!r}" if file else ""
    if isinstance(spec, str):
        place = f"the file {shorten(file, 120)!r}," if file else "its"
        return Template(name, spec, file, _compile(spec, name, where, undefined, place), undefined, field)
    messages = _messages(spec, name, where)
    compiled = [(m["role"], _compile(m["content"], name, where, undefined, f"message {i + 1} ({m['role']}){in_file},"))
                for i, m in enumerate(messages)]
    return Template(name, messages, file, compiled, undefined, field)


def _resembles(var: str, names: dict) -> str:
    """"; the case defines 'country'" for a name the case spells otherwise (a typo in the prompt
    or in the case: either way the two are shown side by side), else ""."""
    head, _, last = var.rpartition(".")
    scope: Any = names
    for part in head.split(".") if head else ():
        scope = scope.get(part) if isinstance(scope, dict) else None
    keys = [k for k in scope if isinstance(k, str)] if isinstance(scope, dict) else []
    close = closest(last, keys)
    if close is not None:
        return f"; the case defines {(head + '.' if head else '') + close!r}"
    if head == "vars" and last in names:  # `vars.input`: the case's input (or metadata), not a var
        return f"; {last!r} is the case's own field, not one of its vars: write {{{{ {last} }}}}"
    return ""


def render(template: Template, case: Any, max_bytes: int, variant: Any = None) -> Any:
    """The case's input through the template: text, or chat messages. Errors name the case and
    the variable (StrictUndefined) or the sandbox's refusal. The messages of a chat prompt share
    one render budget (templating/limits.py: work, memory, time), and rendering stops as soon as the
    text passes `max_bytes` characters. A prompt function is called with what it declares
    (`variant`: the Variant it is built for, when it reads one)."""
    from jinja2 import UndefinedError
    from jinja2.sandbox import SecurityError

    where = {"file": case.source, "line": case.line, "case_id": case.id}
    if template.takes is not None:
        return _built(template, case, max_bytes, variant, where)
    own = {"input": case.input, "metadata": case.metadata or None}
    for name, value in own.items():
        if value is not None and isinstance(case.vars, dict) and name in case.vars and case.vars[name] != value:
            # which one `{{ input }}` means would be a guess (the var silently won): the case says
            # (the same value twice, as a converted suite may write it, means one thing)
            raise ConfigError(f"prompt {template.name!r}: the case defines both {name!r} and a var {name!r}, so "
                              f"{{{{ {name} }}}} would be ambiguous: rename the var (or drop the case's {name})",
                              field=f"vars.{name}", **where)
    names: dict = dict(case.vars) if isinstance(case.vars, dict) else {}
    names["vars"] = case.vars if case.vars is not None else {}
    if case.input is not None:
        names.setdefault("input", case.input)
    # the case's metadata, as Inspect's prompt_template reads a sample's (never its reference)
    names.setdefault("metadata", case.metadata if isinstance(case.metadata, dict) else {})
    try:
        with render_budget(max_output_chars=max_bytes):
            if isinstance(template.compiled, list):
                out: Any = [{"role": role, "content": t.render(names)} for role, t in template.compiled]
                size = sum(len(m["content"].encode("utf-8")) for m in out)
            else:
                out = template.compiled.render(names)
                size = len(out.encode("utf-8"))
    except UndefinedError as exc:
        var = _undefined_path(exc, names)
        if var is None:  # an attribute of a value the template made itself
            raise ConfigError(f"prompt {template.name!r} could not be rendered: {exc.message}", field="vars",
                              **where) from None
        raise ConfigError(f"prompt {template.name!r} uses {var!r}, which this case does not define "
                          f"({exc.message}){_resembles(var, names)}",
                          field=var if var.startswith("vars.") else f"vars.{var}", **where) from None
    except SecurityError as exc:
        if getattr(exc, "kind", None) == "output" and max_bytes <= MAX_TEXT:  # stopped at the limit
            raise ConfigError(f"rendered prompt {template.name!r} is over the limit of {max_bytes} bytes "
                              "(limits.max_input_bytes)", field="input", **where) from None
        raise ConfigError(f"prompt {template.name!r}: refused by the template sandbox: {exc}",
                          field="vars", **where) from None
    except Exception as exc:  # a filter on the wrong type, a division by zero in the template
        raise ConfigError(f"prompt {template.name!r} could not be rendered: {type(exc).__name__}: {exc}",
                          field="vars", **where) from None
    _within(template.name, size, max_bytes, where)
    return out


def _within(name: str, size: int, max_bytes: int, where: dict) -> None:
    """A rendered prompt's size against limits.max_input_bytes (a template's or a function's)."""
    if size > max_bytes:
        raise ConfigError(f"rendered prompt {name!r} is {size} bytes, over the limit of {max_bytes} "
                          "(limits.max_input_bytes)", **{**where, "field": "input"})


def _built(template: Template, case: Any, max_bytes: int, variant: Any, where: dict) -> Any:
    """A prompt function's text or messages for this case, checked as a template's would be."""
    where = {**where, "field": template.field or "prompt"}
    out = call_function(template.compiled, template.name, case, variant, where)
    if isinstance(out, list):
        out = _messages(out, template.name, where)
        size = sum(len(m["content"].encode("utf-8", "surrogatepass")) for m in out)
    else:
        size = len(out.encode("utf-8", "surrogatepass"))
    _within(template.name, size, max_bytes, where)
    return out


def _undefined_path(exc: BaseException, names: dict) -> str | None:
    """The dot path of what an UndefinedError says is missing: `city`, `user.name` (an attribute
    or key a var lacks), `items.5`; None when what lacks it is no var's value (a value the
    template made). The error carries what was missing (templating's _Strict)."""
    from jinja2.utils import missing

    if not hasattr(exc, "undefined_name"):
        message = str(getattr(exc, "message", None) or exc)
        parts = message.split("'")
        return parts[1] if message.endswith("is undefined") and len(parts) > 2 else None
    obj, name = exc.undefined_obj, exc.undefined_name  # type: ignore[attr-defined]
    if obj is missing:  # `city`
        return str(name)
    if obj is names.get("vars"):  # `vars.city`
        return f"vars.{name}"
    if not isinstance(obj, (dict, list)):  # a text or number: identity would not say whose
        return None
    # where that value lies among the names, by identity, breadth first (bounded)
    queue = collections.deque((str(k), v) for k, v in names.items() if k != "vars")
    seen = 0
    while queue and seen < 10_000:
        path, value = queue.popleft()
        seen += 1
        if value is obj:
            return f"{path}.{name}"
        if isinstance(value, dict):
            queue.extend((f"{path}.{k}", v) for k, v in value.items())
        elif isinstance(value, list):
            queue.extend((f"{path}.{i}", v) for i, v in enumerate(value))
    return None


def prompt_names(prompts: Any) -> list[tuple[str, Any]]:
    """(name, template spec) of a suite's `prompts:` ({name: template} or a list: prompt-1, ...,
    or an "@file"'s stem)."""
    if isinstance(prompts, dict):
        return list(prompts.items())
    out, taken = [], set()
    for i, spec in enumerate(prompts or []):
        if isinstance(spec, str) and spec.startswith("@"):
            name = Path(spec[1:]).stem
        elif isinstance(spec, dict) and isinstance(spec.get("python"), str) and ":" in spec["python"]:
            name = spec["python"].rpartition(":")[2]  # a prompt function: its name
        else:
            name = f"prompt-{i + 1}"
        base, n = name, 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        taken.add(name)
        out.append((name, spec))
    return out


def _axes(case: Any, names: list[str]) -> list[tuple[str, list]]:
    if not names or not isinstance(case.vars, dict):
        return []
    return [(n, case.vars[n]) for n in names if isinstance(case.vars.get(n), list) and case.vars[n]]


def expansion_size(case: Any, names: list[str]) -> int:
    """How many cases expand_case(case, names) makes, without making them."""
    return math.prod(len(values) for _, values in _axes(case, names))


#: what an id may not hold (validation.one_line_id): a value's newline or escape is shown as `\n`, `\x1b`
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _escaped(match: re.Match) -> str:
    return repr(match[0])[1:-1]


def expand_case(case: Any, names: list[str]) -> list[Any]:
    """One case per value of each list-valued var in `names` (their product), ids
    `ID[var=value]`; a var that is not a list leaves the case as it is."""
    import copy
    import itertools

    axes = _axes(case, names)
    if not axes:
        return [case]
    out = []
    for combo in itertools.product(*[list(enumerate(values)) for _, values in axes]):
        clone = copy.copy(case)
        clone.vars = dict(case.vars)
        labels = []
        for (var, _), (index, value) in zip(axes, combo):
            clone.vars[var] = value
            shown = value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else index
            labels.append(f"{var}={shorten(_CONTROL.sub(_escaped, str(shown)), 40)}")
        clone.id = f"{case.id}[{','.join(labels)}]"
        clone.expanded_from = case.id
        clone.metadata = dict(case.metadata)
        out.append(clone)
    return out
