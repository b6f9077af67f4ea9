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


class EnvTags:
    """The config's `env:` values, rendering `{{ env.NAME }}` tags in the config and in the
    prompt and tests files it names (Nunjucks' `env` global renders those when promptfoo runs);
    `finish()` lists each name `env:` does not set."""

    def __init__(self, data: dict, source: Source, report: Report):
        env = data.get("env")
        if env is not None and not isinstance(env, dict):
            raise source.error("env is a mapping of names to values", "env")
        self.values = {str(k): js_string(v) for k, v in (env or {}).items() if v is not None}
        self.report = report
        self.unset: dict[str, list[str]] = {}

    def config(self, data: dict) -> dict:
        return {k: (v if k == "env" else self.walk(v, k)) for k, v in data.items()}

    def walk(self, value: Any, where: str) -> Any:
        if isinstance(value, str):
            return self._text(value, where) if "env" in value else value
        if isinstance(value, list):
            return [self.walk(v, f"{where}.{i}") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: self.walk(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        return value

    def _text(self, value: str, where: str) -> str:
        def swap(m: re.Match) -> str:
            name, flt = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            if name not in self.values:
                self.unset.setdefault(name, []).append(where)
                return m.group(0)
            if not flt:
                return self.values[name]
            if not _PLAIN.match(self.values[name]):
                self.report.skip(where, f"{{{{ env.{name} {flt.strip()} }}}}: a filter on a value with quotes, "
                                 "backslashes or braces is not converted")
                return m.group(0)
            return "{{ '" + self.values[name] + "' " + flt.strip() + " }}"  # the filter applied when it renders
        return _ENV.sub(swap, value)

    def converted(self, prefix: str, names: list[str]) -> None:
        """The tags of `names` under `prefix` (a provider) were converted (an http header's ${NAME})."""
        for name in names:
            self.unset[name] = [w for w in self.unset.get(name, []) if not w.startswith(prefix + ".")]

    def finish(self) -> None:
        for name, wheres in self.unset.items():
            if not wheres:
                continue
            where = wheres[0]
            self.report.skip(where, f"{{{{ env.{name} }}}} reads the environment variable {name} when promptfoo "
                             "runs (the config's env: does not set it); a suite's templates read no environment "
                             "(it prints nothing): set it under env: in the config, or write its value in")


_SCOREBOARD_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")  # what the http subject reads as a variable
_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def http_headers(headers: dict, values: dict[str, str]) -> tuple[dict[str, str], list[str], str | None]:
    """An http provider's headers as the http subject's: promptfoo renders each value with Nunjucks
    when it calls the provider (src/providers/http.ts getHeaders), `env` being the process
    environment under the config's env:. A `{{ env.NAME }}` tag becomes `${NAME}` (the http subject
    reads it from the environment per request); a name the config's env: sets is its literal value.
    Returns (headers, the names made ${NAME}, why not converted or None)."""
    out: dict[str, str] = {}
    names: list[str] = []
    for key, raw in headers.items():
        value = str(raw)
        if _SCOREBOARD_REF.search(value):
            return {}, [], (f"its header {key!r} holds {_SCOREBOARD_REF.search(value).group(0)}, which promptfoo "
                            "sends as written and the http subject reads as an environment variable")
        why: list[str] = []

        def swap(m: re.Match) -> str:
            name, flt = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            if flt:
                why.append(f"its header {key!r}: {m.group(0)}: a filter on an environment variable is not converted")
            elif name in values:
                if _SCOREBOARD_REF.search(values[name]):
                    why.append(f"its header {key!r}: env: {name} holds a ${{...}}, which the http subject would read "
                               "as an environment variable")
                return values[name]
            elif not _VAR_NAME.match(name):
                why.append(f"its header {key!r}: {m.group(0)} names no variable ${{NAME}} can name")
            else:
                names.append(name)
                return "${" + name + "}"
            return m.group(0)
        value = _ENV.sub(swap, value)
        if why:
            return {}, [], why[0]
        if any(s in value for s in ("{{", "{%", "{#")):
            return {}, [], "its headers are templates"
        out[str(key)] = value
    return out, sorted(set(names)), None
