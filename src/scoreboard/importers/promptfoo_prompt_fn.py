"""promptfoo's prompts built by code, converted to scoreboard prompt functions that call that code
as promptfoo 0.121 does: a Python function (`file://prompt.py:create_prompt`,
src/prompts/processors/python.ts), a Python file run whole (`file://prompt.py`), a JavaScript
function or module (`file://prompt.js[:fn]`, javascript.ts, run in the Node workers) and a
program (`exec:CMD` or a script file, executable.ts).

Each gets one argument, the context `{"vars": ..., "provider": {"id": ..., "label": ...},
"config": {}}` (the label "" where the provider has none). A text result is the prompt;
`{"prompt": ..., "config": ...}` is its prompt (text, or JSON.stringify of a value) with provider
settings merged in (not converted: refused when a function returns any); any other object or
list is JSON.stringify(result); a number, a boolean, null or undefined is a row error. The prompt
is then rendered as every prompt is (src/evaluatorHelpers.ts renderPrompt): JSON is parsed, each
string in it rendered with the vars, and written again as JSON.stringify(value, null, 2); other
text is rendered as a Nunjucks template. Last, the provider reads it: promptfoo's chat providers
(openai, the suite's `openai` subjects) parse it as parseChatPrompt does (promptfoo_chatcase);
anthropic takes a JSON list as messages; the other providers (echo, exec, python, http) get the
text.

Here a row error is an error naming the case when the suite loads (one suite holds every
variant). The adapter module the import writes (ADAPTER_*) calls a `build*` for each prompt."""

from __future__ import annotations

import json
import math
import posixpath
import re
import sys
from pathlib import Path
from typing import Any

from ..pyimport import import_file
from ..templating.js import ANSI_ESCAPE, js_json_parse, js_number, js_trim
from . import promptfoo_chatcase as chat_case

#: the module the import writes beside the suite, holding one function per converted prompt
ADAPTER_MODULE = "promptfoo_prompt_functions"
ADAPTER_HEAD = '''"""promptfoo's prompt functions, each called as promptfoo calls it (one argument: the context
with the case's vars and the provider's id and label); written by `scoreboard import promptfoo`."""

from scoreboard.importers.promptfoo_prompt_fn import build, build_exec, build_js, build_script, load

#: each variant's promptfoo provider: its id, its label, and how it reads a prompt
PROVIDERS = {providers!r}
'''
ADAPTER_PROMPT = '''
_module_{index} = load(__file__, {file!r})


def prompt_{index}(vars, variant):
    """promptfoo's prompt {label}."""
    return build(_module_{index}, {function!r}, vars, variant, PROVIDERS, {axis!r})
'''

ADAPTER_PROMPT_JS = '''

def prompt_{index}(vars, variant):
    """promptfoo's prompt {label} (JavaScript, run in node)."""
    return build_js(__file__, {file!r}, {function!r}, vars, variant, PROVIDERS, {axis!r})
'''

ADAPTER_PROMPT_SCRIPT = '''

def prompt_{index}(vars, variant):
    """promptfoo's prompt {label} (a Python script run whole)."""
    return build_script(__file__, {file!r}, vars, variant, PROVIDERS, {axis!r})
'''

ADAPTER_PROMPT_EXEC = '''

def prompt_{index}(vars, variant):
    """promptfoo's prompt {label} (a program run with the context as its last argument)."""
    return build_exec(__file__, {argv!r}, vars, variant, PROVIDERS, {axis!r})
'''

#: how a provider reads the rendered prompt: as chat messages (openai's chat), anthropic's way, or text
READS = {"openai": "chat", "anthropic": "anthropic"}


def adapter_text(prompts: list[dict], providers: dict[str, dict]) -> str:
    """The adapter module: `prompts` are {index, file, function, label, axis} (axis: the prompt's
    name in the suite's `prompts:`, whose variants are named PROMPT/VARIANT; None for `prompt:`)."""
    templates = {"python": ADAPTER_PROMPT, "script": ADAPTER_PROMPT_SCRIPT, "js": ADAPTER_PROMPT_JS,
                 "exec": ADAPTER_PROMPT_EXEC}
    return ADAPTER_HEAD.format(providers=providers) + "".join(templates[p["kind"]].format(**p) for p in prompts)


def load(anchor: str, rel: str) -> Any:
    """The user's module `rel` beside the adapter (its folder first on sys.path, as promptfoo runs
    it in place: a `helpers.py` beside it imports)."""
    return import_file(Path(anchor).resolve().parent / rel)


def _context(vars: dict, provider: dict) -> dict:
    """The one argument promptfoo passes a prompt function: the vars, the provider's id and label
    (empty when it has none) and the prompt's config (none converted: {})."""
    return {"vars": json.loads(json.dumps(vars)), "provider": {"id": provider["id"], "label": provider["label"] or ""},
            "config": {}}


def build(module: Any, function: str, vars: dict, variant: str | None, providers: dict[str, dict],
          axis: str | None) -> Any:
    """The prompt promptfoo sends this variant's provider for a case with these vars: text, or
    chat messages (a list of {role, content}) where the provider reads them as messages."""
    provider = _provider(variant, providers, axis)
    result = getattr(module, function)(_context(vars, provider))
    try:  # promptfoo's Python bridge returns the result as JSON
        result = json.loads(json.dumps(result, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"its result cannot cross promptfoo's Python bridge as JSON ({exc})") from None
    if isinstance(result, str):
        base = result
    elif isinstance(result, dict) and "prompt" in result:
        if result.get("config"):
            raise ValueError(f"it returned config {js_stringify(result['config'])[:120]}, which promptfoo merges into "
                             "the provider's settings for this call: not converted")
        base = result["prompt"] if isinstance(result["prompt"], str) else js_stringify(result["prompt"])
    elif isinstance(result, (dict, list)):
        base = js_stringify(result)
    elif result is None:  # `'prompt' in null` throws in renderPrompt
        raise TypeError("it returned None: promptfoo's renderPrompt throws on it (Cannot use 'in' operator)")
    else:
        kind = "boolean" if isinstance(result, bool) else "number"
        raise TypeError(f"Prompt function must return a string or object, got {kind}")
    return _read(_render(base, vars), provider["reads"])


def build_script(anchor: str, file: str, vars: dict, variant: str | None, providers: dict[str, dict],
                 axis: str | None) -> Any:
    """`build` for a Python prompt file named without a function (promptfoo's legacy prompt
    script): the file run with the context as its one argument (compact JSON), what it prints the
    prompt (python-shell's lines joined by newlines, its empty lines dropped); a nonzero exit is an error
    carrying the end of what it wrote to stderr. It runs under scoreboard's Python (promptfoo runs
    PROMPTFOO_PYTHON, else `python` on PATH)."""
    import subprocess

    provider = _provider(variant, providers, axis)
    path = Path(anchor).resolve().parent / file
    argument = json.dumps(_context(vars, provider), ensure_ascii=False, separators=(",", ":"))
    done = subprocess.run([sys.executable, str(path), argument], capture_output=True, timeout=3600,
                          stdin=subprocess.DEVNULL, cwd=str(path.parent))
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise RuntimeError(f"the script exited with status {done.returncode}: {tail[0][:300]}")
    # python-shell's NewlineTransformer pushes each line; an empty one is no chunk, so never a message
    text = "\n".join(line for line in done.stdout.decode("utf-8", "replace").split("\n") if line)
    return _read(_render(text, vars), provider["reads"])


def build_exec(anchor: str, argv: list[str], vars: dict, variant: str | None, providers: dict[str, dict],
               axis: str | None) -> Any:
    """`build` for an `exec:` prompt (or a script file): the program run with the context as its
    last argument (compact JSON), in the suite's folder (its scripts copied there: a first part
    with a `/` is that file, a bare name a program on PATH), for at most 60 s; what it printed,
    trimmed and without ANSI escapes, is the prompt. A nonzero exit is an error, and so is output on
    stderr with none on stdout (promptfoo's executablePromptFunction)."""
    import shutil
    import subprocess

    provider = _provider(variant, providers, axis)
    folder = Path(anchor).resolve().parent
    program = str(folder / argv[0]) if "/" in argv[0] else shutil.which(argv[0])
    if program is None:
        raise FileNotFoundError(f"spawn {argv[0]} ENOENT (no such program on PATH)")
    argument = json.dumps(_context(vars, provider), ensure_ascii=False, separators=(",", ":"))
    try:
        done = subprocess.run([program, *argv[1:], argument], capture_output=True, timeout=60,
                              stdin=subprocess.DEVNULL, cwd=str(folder))
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"{' '.join(argv)} did not finish within 60 s (promptfoo's execFile timeout)") from None
    out = ANSI_ESCAPE.sub("", js_trim(done.stdout.decode("utf-8", "replace")))
    err = ANSI_ESCAPE.sub("", js_trim(done.stderr.decode("utf-8", "replace")))
    if done.returncode != 0:
        raise RuntimeError(f"Command failed: {' '.join(argv)} (exit status {done.returncode}){': ' + err[:300] if err else ''}")
    if err and not out:
        raise RuntimeError(err[:300])
    return _read(_render(out, vars), provider["reads"])


def build_js(anchor: str, file: str, function: str | None, vars: dict, variant: str | None,
             providers: dict[str, dict], axis: str | None) -> Any:
    """`build` for a JavaScript prompt function, called in a Node worker (graders/js_assert.js,
    kind "prompt"), where JSON.stringify of an object result is JavaScript's own."""
    from ..graders.javascript import node_path
    from ..graders.node_pool import NodeFailure, NodeTimeout, call

    node = node_path()
    if node is None:
        raise RuntimeError("Node.js is not on PATH: a JavaScript prompt function runs in node")
    provider = _provider(variant, providers, axis)
    job = {"kind": "prompt", "file": str(Path(anchor).resolve().parent / file), "function": function,
           "context": _context(vars, provider)}
    try:
        result = call(node, job, 3600)  # the prompt function's own timeout_s cuts the wait for it
    except (NodeTimeout, NodeFailure) as exc:
        raise RuntimeError(f"its Node worker failed: {exc}") from None
    if "error" in result:
        raise ValueError(str(result["error"]))
    if result.get("config"):
        raise ValueError(f"it returned config {result['config'][:120]}, which promptfoo merges into the provider's "
                         "settings for this call: not converted")
    if not isinstance(result.get("text"), str):  # JSON.stringify(undefined) as the prompt
        raise TypeError("its prompt is undefined (JSON.stringify of undefined): promptfoo renders no text")
    return _read(_render(result["text"], vars), provider["reads"])


def _provider(variant: str | None, providers: dict[str, dict], axis: str | None) -> dict:
    if variant in providers:
        return providers[variant]
    if axis is not None and variant and variant.startswith(axis + "/") and variant[len(axis) + 1:] in providers:
        return providers[variant[len(axis) + 1:]]
    if len(providers) == 1 or variant is None:
        return next(iter(providers.values()))
    raise ValueError(f"variant {variant!r} is none of the imported providers ({', '.join(providers)})")


def js_stringify(value: Any, indent: int | None = None, level: int = 0) -> str:
    """JSON.stringify(value) (or with `indent`, JSON.stringify(value, null, indent)) of a JSON value."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return "null" if isinstance(value, float) and not math.isfinite(value) else js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    pad, inner = ("", "") if indent is None else ("\n" + " " * (indent * level), "\n" + " " * (indent * (level + 1)))
    colon = ":" if indent is None else ": "
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[" + ",".join(inner + js_stringify(v, indent, level + 1) for v in value) + pad + "]"
    if not value:
        return "{}"
    return "{" + ",".join(inner + json.dumps(str(k), ensure_ascii=False) + colon + js_stringify(v, indent, level + 1)
                          for k, v in value.items()) + pad + "}"


def _render(base: str, vars: dict) -> str:
    """renderPrompt's last step: JSON rendered inside and written again, other text as a template."""
    try:
        parsed = js_json_parse(base)
    except ValueError:
        return _template(base, vars)
    return js_stringify(_leaves(parsed, vars), 2)


def _leaves(value: Any, vars: dict) -> Any:
    if isinstance(value, str):
        return _template(value, vars)
    if isinstance(value, list):
        return [_leaves(v, vars) for v in value]
    if isinstance(value, dict):
        return {k: _leaves(v, vars) for k, v in value.items()}
    return value


def _template(text: str, vars: dict) -> str:
    """nunjucks.renderString(text, vars): text without a tag is itself; with one, converted to
    Jinja2 as the import converts a prompt and rendered with Nunjucks' undefined rule."""
    if not any(tag in text for tag in ("{{", "{%", "{#")):
        return text
    from ..templating import environment, render_budget
    from .nunjucks import convert

    if any(isinstance(v, str) and ("{{" in v or "{%" in v) for v in vars.values()):
        raise ValueError("the prompt it returned is a template and a var holds template syntax, which promptfoo "
                         "renders first: not converted")
    converted, problems, _ = convert(text)
    if problems:
        raise ValueError(f"the prompt it returned is a Nunjucks template that is not converted: {problems[0]}")
    with render_budget(max_output_chars=16 << 20):
        return environment("empty").from_string(converted).render({**vars, "vars": vars})


def _read(text: str, reads: str) -> Any:
    """The prompt as the provider reads it (parseChatPrompt for chat, promptfoo_chatcase.parsed)."""
    if reads == "chat":
        kind, value = chat_case.parsed(text)
        if kind == "yaml":
            import yaml

            return _messages(yaml.safe_load(text), "YAML")
        if kind == "throws":  # promptfoo's chat provider errors the row
            raise ValueError(value)
        if kind == "refused":
            raise ValueError("promptfoo's chat provider sends this JSON as the request's messages, and it is no "
                             "list of messages: the API refuses it (a row error)")
        return _messages(value, "JSON") if kind == "messages" else text
    if reads == "anthropic":
        try:
            parsed = js_json_parse(text)
        except (ValueError, RecursionError):
            return text
        if isinstance(parsed, list) and parsed and all(isinstance(m, dict) for m in parsed):
            return _messages(parsed, "JSON")
    return text


def _messages(value: Any, what: str) -> list[dict]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"its {what} messages are no list of messages")
    out = []
    for m in value:
        if not isinstance(m, dict) or set(m) != {"role", "content"} or not isinstance(m.get("content"), str):
            raise ValueError(f"a message {js_stringify(m)[:120]} is not {{role, content: text}}: not converted "
                             "(scoreboard sends a message's text)")
        out.append({"role": m["role"], "content": m["content"]})
    return out


def prompt_functions(prompts: dict[str, Any], identities: dict[str, dict], source: Any, report: Any,
                     copied: dict[str, str]) -> int:
    """Each `file://x.py:function` prompt (a FunctionPrompt among `prompts`) made a scoreboard
    prompt function: x.py copied beside the suite, the adapter module written (in `copied`), the
    prompt replaced by {python: "promptfoo_prompt_functions:prompt_N"}. Returns how many."""
    from .promptfoo_prompts import FunctionPrompt
    from .common import local_imports
    from .promptfoo_providers import copy_scripts, exec_argv

    found = [(name, p) for name, p in prompts.items() if isinstance(p, FunctionPrompt)]
    if not found:
        return 0
    entries = []
    for index, (name, prompt) in enumerate(found, 1):
        where = f"prompt {name!r}"
        argv = exec_argv(prompt.file) if prompt.kind == "exec" else []
        if prompt.kind == "exec":
            copy_scripts(argv, source, report, copied, where)
        elif prompt.file not in copied:
            copied[prompt.file] = source.read_text(prompt.file, where)
            local = _js_requires(copied[prompt.file]) if prompt.kind == "js" else \
                local_imports(copied[prompt.file], prompt.file, source)
            if local:
                report.skip(where, f"{prompt.file} imports {', '.join(local)} from its folder, which the import does "
                            "not copy (promptfoo runs it in place): copy them beside the suite")
        if prompt.kind == "exec" and argv and "/" in argv[0] and "/" not in posixpath.normpath(argv[0]):
            report.note(f"{where}: {argv[0]} runs from the suite's folder, where it is copied; promptfoo 0.121 joins "
                        "the command to the config's folder, so run from that folder it drops a leading ./ and "
                        "looks for the program on PATH (spawn ENOENT)")
        entries.append({"index": index, "file": prompt.file, "function": prompt.function, "label": name,
                        "axis": name if len(prompts) > 1 else None, "kind": prompt.kind, "argv": argv})
        prompts[name] = {"python": f"{ADAPTER_MODULE}:prompt_{index}"}
        if prompt.kind == "exec":
            prompts[name]["timeout_s"] = 90  # its own 60 s (execFile's) is said first
        for vname, ident in identities.items():
            if ident["type"] == "anthropic":
                report.skip(f"{where} on variant {vname!r}", "not converted as promptfoo sends it: its anthropic "
                            "provider reads a prompt that is no JSON list of messages line by line (each line "
                            "trimmed, blank lines dropped, `system:` / `user:` lines as messages); the suite sends "
                            "the function's text as written")
    report.note(f"prompt functions ({', '.join(repr(e['label']) for e in entries)}): each called as the suite loads, "
                "once per case and variant, with promptfoo's context (the case's vars, the provider's id and label, "
                f"config {{}}) through {ADAPTER_MODULE}.py (JavaScript in node, a Python file named without a function "
                "run whole under scoreboard's Python, an exec: command or script file run with the context as its "
                "last argument); what it returns is rendered and read by "
                "each provider as promptfoo does (a returned `config` is refused, naming the case); the vars lack "
                "promptfoo's own __evalId, __evalStepId and __repeatIndex, and a prompt is built once for every run "
                "of a case")
    providers = {name: {"id": i["id"], "label": i["label"], "reads": READS.get(i["type"], "text")}
                 for name, i in identities.items()}
    copied[f"{ADAPTER_MODULE}.py"] = adapter_text(entries, providers)
    return len(found)


def _js_requires(text: str) -> list[str]:
    """The relative modules a JavaScript file requires or imports (`./helpers`)."""
    return sorted(set(re.findall(r"""(?:require\(|import\(|from)\s*['"](\.{1,2}/[^'"]+)['"]""", text)))
