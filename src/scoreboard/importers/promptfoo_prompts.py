"""promptfoo's prompts as scoreboard templates: text (Nunjucks converted to Jinja2, nunjucks.py),
chat messages, files, and prompts that are JSON.

- A `.txt` file is split as src/prompts/processors/text.ts does: on every line whose trimmed text
  is `---`, each part's lines joined with newlines and trimmed, empty parts dropped. `.json` and
  `.yaml` files are their parsed value (a list of messages is a chat prompt); `.md` and `.j2`
  files are their text; a `.csv` file is a prompt per row (its `prompt` column, named by its
  `label`) and a `.jsonl` file a prompt per line, as processCsvPrompts / processJsonlFile read
  them. Code that builds a prompt (`file://x.py:fn`, `file://x.py`, `file://x.js[:fn]`, `exec:CMD`,
  a `.sh` or other script) is a FunctionPrompt, converted by promptfoo_prompt_fn; TypeScript and
  a file of any other kind are listed as not converted.
- A prompt that is valid JSON is rendered as renderPrompt (src/evaluatorHelpers.ts) renders it:
  JSON.parse, each string in it rendered as a template, then JSON.stringify(value, null, 2), so a
  var's quotes and newlines are escaped inside the JSON. A list of {role, content} messages is a
  chat prompt: each content a template, sent as messages.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Any, NamedTuple

from ..templating.js import js_number, js_trim
from ..errors import ConfigError
from .common import Report, Source, js_string
from .nunjucks import convert as convert_template
from .nunjucks import uses_template
from .promptfoo_testopts import wrap
from .promptfoo_includes import inline_includes

_NOT_JSON = object()
CACHE_NOTE = "a message part's cache_control (a prompt-caching hint) is not sent"
#: the name each rendered string of a JSON prompt is captured in before JSON.stringify
_LEAF = "__promptfoo_leaf"


def prompts(value: Any, source: Source, report: Report, json_values: dict[str, Any] | None = None,
            env: Any = None, message_values: dict[str, Any] | None = None,
            affix: tuple[str, str] = ("", "")) -> dict[str, Any]:
    """The config's `prompts` as {name: template text or chat messages}; `json_values` gets the
    name and kind of each prompt that is JSON but no list of messages (an object, text, a number),
    `message_values` the parsed JSON and field of each list of messages."""
    if value is None:
        return {}
    if isinstance(value, dict):  # normalizeInput: a mapping is {prompt or file://path: label}
        value = [{"raw": k, "label": v} for k, v in value.items()]
    items = value if isinstance(value, list) else [value]
    raw: list[tuple[str, Any, str]] = []
    for i, item in enumerate(items):
        where = f"prompts.{i}"
        label = None
        if isinstance(item, dict):
            label = item.get("label") or item.get("id")
            for key in sorted(set(item) - {"raw", "label", "id"}):
                report.skip(f"{where}.{key}", "this prompt setting is not converted")
            item = item.get("raw", item.get("id"))
        if isinstance(item, str) and not item.startswith(("exec:", "file://")) and maybe_file_path(item):
            item = _path_prompt(item, source, report, where)
            if item is None:
                continue
        if isinstance(item, str) and item.startswith("exec:"):  # processExecutableFile: labelled by the command
            command = item[len("exec:"):].strip()
            raw.append((label or posixpath.normpath(command), FunctionPrompt(command, None, "exec"), where))
        elif isinstance(item, str) and item.startswith("file://"):
            pattern = item[len("file://"):]
            names = source.glob(pattern, where)
            if not names:  # processPrompt: a pattern matching nothing is sent as the text itself
                report.skip(where, f"no files match {pattern!r} (promptfoo then sends {item!r} itself as the prompt)")
            for name in names:
                if name.lower().endswith(".csv"):  # a row's own label comes first
                    text = source.read_text(name, where)  # without a comma it is read by lines
                    text = text if "," in text else source.read_lines(name, where)
                    raw += [(n, v, where) for n, v in _csv_prompts(text, label)]
                else:
                    raw += [(label or n, v, where) for n, v in _prompt_file(name, source, report, where)]
        elif isinstance(item, (str, list)):
            raw.append((label or f"prompt-{i + 1}", item, where))
        else:
            report.skip(where, "a prompt is text, a file:// reference or chat messages")
    out: dict[str, Any] = {}
    for name, body, where in raw:
        if isinstance(body, FunctionPrompt):  # built by code when the suite loads (promptfoo_prompt_fn)
            if any(affix):
                report.skip(where, "the tests' options.prefix/suffix around a prompt function: not converted")
            out[_unique(str(name), out)] = body
            continue
        body = wrap(body, affix, where, report)  # the tests' options.prefix/suffix (promptfoo_testopts)
        if body is None:
            continue
        if isinstance(body, str) and _json_value(body) is _NOT_JSON:
            body = inline_includes(body, source, report, where)
            if body is None:
                continue
        body = env(body, where) if env else body  # {{ env.NAME }}: Nunjucks' env global (promptfoo_env)
        parsed = _json_value(body) if isinstance(body, str) else body
        if isinstance(parsed, list) and parsed and all(isinstance(m, dict) for m in parsed):
            messages = _messages(parsed, where, report)
            if messages is not None:
                out[_unique(str(name), out)] = messages
                if message_values is not None:  # promptfoo's text of them, for a provider taking text
                    message_values[list(out)[-1]] = (parsed, where)
            continue
        converted = _template(body, where, report) if parsed is _NOT_JSON else _json_template(parsed, where, report)
        if converted is not None:
            out[_unique(str(name), out)] = converted
            if parsed is not _NOT_JSON and json_values is not None:
                json_values[list(out)[-1]] = _json_kind(parsed)
            elif json_values is not None and js_trim(body).startswith("- role:"):
                json_values[list(out)[-1]] = _yaml_chat(body, where, report)
    return out


#: the files processPrompt runs as programs whatever their mode (an executable file of another kind too)
_SCRIPTS = (".sh", ".bash", ".exe", ".bat", ".cmd", ".ps1", ".rb", ".pl")
#: src/prompts/constants.ts VALID_FILE_EXTENSIONS
_FILE_EXTENSIONS = (".cjs", ".cts", ".j2", ".js", ".json", ".jsonl", ".md", ".mjs", ".mts", ".py", ".ts", ".txt",
                    ".yml", ".yaml")


def maybe_file_path(text: str) -> bool:
    """src/prompts/utils.ts maybeFilePath: a prompt without file:// that promptfoo reads as a path."""
    if any(s in text for s in ("\n", "portkey://", "langfuse://", "helicone://")):
        return False
    tokens = text.split(":")  # file.js:functionName
    if any(tokens[-1].endswith(ext) or (len(tokens) > 1 and tokens[-2].endswith(ext)) for ext in _FILE_EXTENSIONS):
        return True
    return (len(text) >= 3 and text[-3] == ".") or (len(text) >= 4 and text[-4] == ".") or \
        any(c in text for c in "*/\\")


def _path_prompt(text: str, source: Source, report: Report, where: str) -> str | None:
    """processPrompt on a prompt maybeFilePath takes for a path (src/prompts/index.ts,
    parsePathOrGlob): a glob pattern (any of *?{}[]) is the files it matches, or else the text
    itself; any other path is the file, as file:// names it (None when it is not there: listed)."""
    if re.search(r"[*?{}\[\]]", text):
        try:
            names = [n for n in source.glob(text, where) if (source.folder / n).is_file()]  # a plain path: itself
        except ConfigError:  # a pattern leaving the folder: never read; promptfoo's matches nothing here
            names = []
        return "file://" + text if names else text
    name = text.split(":")[0] if text.split(":")[0].lower().endswith((".py", ".js", ".cjs", ".mjs", ".ts")) else text
    if not (Path(name).is_absolute() or ".." in Path(name).parts or (source.folder / name).is_file()):
        report.skip(where, f"promptfoo reads {text!r} as the path of a prompt file (its maybeFilePath rule: an "
                    "extension, a / or a \\) and stops when there is none; no such file here, not converted")
        return None
    return "file://" + text


def _messages(body: list[dict], where: str, report: Report) -> list[dict] | None:
    messages = []
    for m in body:
        if set(m) - {"role", "content"}:
            report.skip(where, "a chat message with fields other than role and content")
            return None
        content = _content(m.get("content", ""), where, report)
        if content is None:
            return None
        content = _template(content, where, report)
        if content is None:
            return None
        messages.append({"role": m.get("role"), "content": content})
    return messages


def _content(content: Any, where: str, report: Report) -> str | None:
    """A message's content as text: a list of parts (OpenAI's and Anthropic's content blocks) is
    sent by promptfoo as those parts, which a scoreboard message (text) holds only when it is one
    text part; its cache_control is a caching hint, dropped (a note)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) \
            and content[0].get("type") == "text" and isinstance(content[0].get("text"), str) \
            and set(content[0]) <= {"type", "text", "cache_control"}:
        if "cache_control" in content[0]:
            report.note(f"{where}: {CACHE_NOTE}")
        return content[0]["text"]
    if isinstance(content, list):
        kinds = ", ".join(sorted({str(p.get("type")) for p in content if isinstance(p, dict)})) or "not mappings"
        report.skip(where, f"a chat message whose content is {len(content)} parts ({kinds}): a scoreboard "
                    "message is one text; not converted")
        return None
    if isinstance(content, (int, float, bool)):
        return js_string(content)
    report.skip(where, f"a chat message whose content is {'null' if content is None else 'a mapping'}: not converted")
    return None


def _template(text: str, where: str, report: Report) -> str | None:
    converted, problems, notes = convert_template(text)
    for n in notes:
        report.note(f"{where}: {n}")
    if problems:
        report.skip(where, problems[0])
        return None
    return converted


class FunctionPrompt(NamedTuple):
    """A prompt built by code, which promptfoo_prompt_fn converts: `kind` "python"
    (`file://prompt.py:function`), "script" (`file://prompt.py`, run whole), "js"
    (`file://prompt.js[:function]`; no function: the module's own export) or "exec" (`exec:CMD`,
    or a script file such as `file://gen.sh`: `file` is the command)."""

    file: str
    function: str | None
    kind: str


def _prompt_file(name: str, source: Source, report: Report, where: str) -> list[tuple[str, Any]]:
    lower = name.lower()
    file, sep, function = name.rpartition(":")
    if sep and file.lower().endswith(".py") and function and "/" not in function:
        source.read_text(file, where)  # there, readable, inside the folder (promptfoo fails the eval otherwise)
        return [(name, FunctionPrompt(file, function, "python"))]  # promptfoo's label: the path and the function
    if lower.endswith(".py"):  # processPythonFile without a function: the file run whole, its output the prompt
        source.read_text(name, where)
        report.note(f"{where}: {name} is run whole with the context as its argument, as promptfoo runs a prompt "
                    "file named without a function; promptfoo labels it with the file's whole text, here its path")
        return [(name, FunctionPrompt(name, None, "script"))]
    script = file if sep and file.lower().endswith((".js", ".mjs", ".cjs", ".ts")) and "/" not in function else name
    if script.lower().endswith(".ts"):
        report.skip(where, f"prompt function {name} (TypeScript, which promptfoo loads with its own loader) is not "
                    "converted")
        return []
    if script.lower().endswith((".js", ".mjs", ".cjs")):  # processJsFile: the label is the path (and function)
        source.read_text(script, where)
        return [(name, FunctionPrompt(script, function if script != name else None, "js"))]
    if lower.endswith(".json"):  # processJsonFile reads the raw text: JSON only once rendered, maybe
        text = source.read_text(name, where)
        if _json_value(text) is _NOT_JSON and (uses_template(text) or "{#" in text):
            report.skip(where, f"{name} is JSON only after its Nunjucks tags are rendered (promptfoo reads a .json "
                        "prompt as text and a chat provider parses the rendered text as messages): not converted")
            return []
    if lower.endswith((".json", ".yaml", ".yml")):
        return [(Path(name).stem, source.read_data(name, where))]
    if lower.endswith(_SCRIPTS) or (not lower.endswith((".txt", ".md", ".j2", ".jsonl"))
                                    and source.is_executable(name)):
        # processExecutableFile: the file is the command (run as the file beside the config)
        return [(name, FunctionPrompt(name if "/" in name else "./" + name, None, "exec"))]
    if not lower.endswith((".txt", ".md", ".j2", ".jsonl")):
        report.skip(where, f"{name}: promptfoo reads no prompt from this kind of file; not converted")
        return []
    text = source.read_lines(name, where) if lower.endswith((".txt", ".jsonl")) else source.read_text(name, where)
    if lower.endswith(".jsonl"):  # processJsonlFile: every nonempty line is a prompt
        lines = [line for line in text.replace("\r\n", "\n").split("\n") if line]
        stem = Path(name).stem
        return [(stem if len(lines) == 1 else f"{stem}-{i + 1}", line) for i, line in enumerate(lines)]
    if not lower.endswith(".txt"):
        return [(Path(name).stem, text)]
    parts, buffer = [], []
    for line in text.replace("\r\n", "\n").split("\n"):  # processTxtFile: split(/\r?\n/)
        if js_trim(line) == "---":
            parts.append(js_trim("\n".join(buffer)))
            buffer = []
        else:
            buffer.append(line)
    parts.append(js_trim("\n".join(buffer)))
    parts = [p for p in parts if p]
    if len(parts) == 1:
        return [(Path(name).stem, parts[0])]
    return [(f"{Path(name).stem}-{i + 1}", p) for i, p in enumerate(parts)]


def _csv_prompts(text: str, label: str | None) -> list[tuple[str, str]]:
    """processCsvPrompts: without a comma every nonblank line is a prompt (a first line `prompt`
    is a header); else the rows' trimmed `prompt` cells, each named by its `label` cell (or
    `Prompt N - text`), blank lines skipped; a file that does not parse as CSV is read by lines."""
    import csv
    import io

    def by_lines() -> list[tuple[str, str]]:
        lines = [line for line in re.split(r"\r?\n", text) if js_trim(line)]
        if lines and js_trim(lines[0]).lower() == "prompt":
            lines = lines[1:]
        return [(label or f"Prompt {i + 1} - {line}", line) for i, line in enumerate(lines)]

    if "," not in text:
        return by_lines()
    old_limit = csv.field_size_limit()  # a prompt may be longer than the csv module's 128 KiB default
    csv.field_size_limit(max(old_limit, len(text) + 1))
    try:
        rows = [r for r in csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True) if r]
    except csv.Error:
        return by_lines()
    finally:
        csv.field_size_limit(old_limit)
    if not rows or any(len(r) != len(rows[0]) for r in rows):
        return by_lines()
    header = [js_trim(h) for h in rows[0]]
    out = []
    for row in rows[1:]:
        cells = dict(zip(header, (js_trim(c) for c in row)))
        if cells.get("prompt"):
            out.append((cells.get("label") or label or f"Prompt {len(out) + 1} - {cells['prompt']}", cells["prompt"]))
    return out


def _json_value(text: str) -> Any:
    """JSON.parse(text), or _NOT_JSON (JSON has no NaN or Infinity)."""
    def refuse(constant: str) -> Any:
        raise ValueError(constant)

    try:
        return json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _yaml_chat(text: str, where: str, report: Report) -> Any:
    """A text prompt starting `- role:`, which promptfoo's parseChatPrompt reads as YAML messages
    once rendered: those messages (each content a template), or why it cannot be read so here."""
    from ..safeparse import ParseError, parse_yaml

    try:
        value = parse_yaml(text, core=True)[0]
    except ParseError:
        return "YAML chat messages only once its vars are rendered"
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        return "YAML that is no list of messages"
    scratch = Report(report.source)
    messages = _messages(value, where, scratch)
    if messages is None:
        return "YAML messages " + (scratch.left_out[0].split(": ", 1)[-1] if scratch.left_out else "not converted")
    return messages


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a JSON object" + (" (`messages` inside it)" if "messages" in value else "")
    return "a JSON list" if isinstance(value, list) else "JSON text" if isinstance(value, str) else "a JSON value"


def _json_template(value: Any, where: str, report: Report) -> str | None:
    """A template printing JSON.stringify(value with each string rendered, null, 2)."""
    pieces: list[str] = []

    def literal(text: str) -> None:
        if any(t in text for t in ("{{", "{%", "{#")):
            pieces.append("{% raw %}" + text + "{% endraw %}")
        else:
            pieces.append(text)

    def walk(v: Any, depth: int) -> bool:
        pad, inner = "  " * depth, "  " * (depth + 1)
        if isinstance(v, (dict, list)):
            items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v]
            if not items:
                literal("{}" if isinstance(v, dict) else "[]")
                return True
            literal("{\n" if isinstance(v, dict) else "[\n")
            for n, (key, item) in enumerate(items):
                literal(inner + ("" if key is None else json.dumps(key, ensure_ascii=False) + ": "))
                if not walk(item, depth + 1):
                    return False
                literal(",\n" if n < len(items) - 1 else "\n")
            literal(pad + ("}" if isinstance(v, dict) else "]"))
            return True
        if isinstance(v, str) and (uses_template(v) or "{#" in v):
            converted = _template(v, where, report)
            if converted is None:
                return False
            pieces.append("{% set " + _LEAF + " %}" + converted + "{% endset %}{{ " + _LEAF + " | dump }}")
        elif isinstance(v, str):
            literal(json.dumps(v, ensure_ascii=False))  # JSON.stringify of a string
        elif isinstance(v, bool) or v is None:
            literal("null" if v is None else "true" if v else "false")
        else:  # a number, as JSON.stringify prints it (JSON.parse read it as a double)
            literal(js_number(float(v)))
        return True

    if "{% endraw" in json.dumps(value, ensure_ascii=False):
        report.skip(where, "a JSON prompt holding `{% endraw` is not converted")
        return None
    return "".join(pieces) if walk(value, 0) else None


def _unique(name: str, taken: dict) -> str:
    base, n = name, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name
