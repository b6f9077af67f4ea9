"""promptfoo's `{{ env.NAME }}` in a config: src/util/config/load.ts readConfig renders, in the
whole config (env itself aside), each `{{ env.NAME }}` / `{{ env['NAME'] }}` tag whose NAME is set,
the config's `env:` over the process environment (renderEnvOnlyInObject), and leaves every
other tag for the prompt's or assertion's own rendering, where Nunjucks' `env` global is that
same mapping (src/util/templates.ts getNunjucksEngine).

The import renders the names the config's `env:` sets, as promptfoo does: those values are part of
the config. A name it does not set is the environment promptfoo runs in, which a suite's templates
never read (they print nothing for it): each is listed, the tag left as written."""

from __future__ import annotations

import re
from typing import Any

from .common import Report, Source, js_string

#: renderEnvOnlyInObject's pattern: {{ env.NAME }} or {{ env['NAME'] }}, with optional filters
_ENV = re.compile(r"""\{\{\s*env\.(\w+)\s*(\|[^}]+)?\s*\}\}|\{\{\s*env\[['"]([^'"]+)['"]\]\s*(\|[^}]+)?\s*\}\}""")
_PLAIN = re.compile(r"^[^\\\"'\x00-\x1f{}%#]*$")  # a value safe inside a Nunjucks string literal


def render_env(data: dict, source: Source, report: Report) -> dict:
    """The config with each `{{ env.NAME }}` its `env:` sets rendered (the `env` mapping itself
    kept as written); the others listed."""
    env = data.get("env")
    if env is None:
        env = {}
    if not isinstance(env, dict):
        raise source.error("env is a mapping of names to values", "env")
    values = {str(k): js_string(v) for k, v in env.items() if v is not None}
    unset: dict[str, str] = {}

    def text(value: str, where: str) -> str:
        def swap(m: re.Match) -> str:
            name, flt = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            if name not in values:
                unset.setdefault(name, where)
                return m.group(0)
            if not flt:
                return values[name]
            if not _PLAIN.match(values[name]):
                report.skip(where, f"{{{{ env.{name} {flt.strip()} }}}}: a filter on a value with quotes, "
                            "backslashes or braces is not converted")
                return m.group(0)
            return "{{ '" + values[name] + "' " + flt.strip() + " }}"  # the filter applied when it renders
        return _ENV.sub(swap, value) if "env" in value else value

    def walk(value: Any, where: str) -> Any:
        if isinstance(value, str):
            return text(value, where)
        if isinstance(value, list):
            return [walk(v, f"{where}.{i}") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: walk(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        return value

    out = {k: (v if k == "env" else walk(v, k)) for k, v in data.items()}
    for name, where in unset.items():
        report.skip(where, f"{{{{ env.{name} }}}} reads the environment variable {name} when promptfoo runs "
                    "(the config's env: does not set it); a suite's templates read no environment (it prints "
                    "nothing): set it under env: in the config, or write its value in")
    return out
