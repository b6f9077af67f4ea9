"""promptfoo providers as scoreboard variants: openai:chat, anthropic:messages, OpenAI-compatible
servers (apiBaseUrl), echo, exec:, python: and file://x.py providers, http providers whose body
holds {{prompt}} and whose transformResponse is a property path, and ollama:chat (on Ollama's
OpenAI-compatible endpoint). Any other provider is listed as not converted and its variant is
left without a subject for the user to fill in."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .common import Executable, Report, Source, local_imports
from . import promptfoo_passthrough as passthrough
from .promptfoo_env import EnvTags, http_headers

_PARAMS = {"temperature": "temperature", "max_tokens": "max_tokens", "top_p": "top_p", "seed": "seed",
           "stop": "stop", "response_format": "response_format", "presence_penalty": "presence_penalty",
           "frequency_penalty": "frequency_penalty", "max_completion_tokens": "max_completion_tokens"}
_OPENAI_KINDS = ("chat", "completion", "responses", "embedding", "embeddings", "assistant", "realtime", "image")

ADAPTER = '''"""The promptfoo python provider {name}, called as promptfoo calls it (call_api(prompt,
options, context)); written by `scoreboard import promptfoo`."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location("promptfoo_provider", pathlib.Path(__file__).resolve().parent / {name!r})
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
CONFIG = {config!r}


def call(input, skill, run, params, *, vars=None):
    prompt = input if isinstance(input, str) else __import__("json").dumps(input)
    result = getattr(_module, {function!r})(prompt, {{"config": {{**CONFIG, **(params or {{}})}}}}, {{"vars": vars or {{}}}})
    if isinstance(result, dict):
        if result.get("error"):
            raise RuntimeError(str(result["error"]))
        return result.get("output")
    return result
'''


def provider_subject(provider: Any) -> dict | None:
    """A scoreboard subject spec for a promptfoo openai/anthropic provider id or object, or None."""
    pid, config = (provider, {}) if isinstance(provider, str) else (provider.get("id"), provider.get("config") or {})
    if not isinstance(pid, str):
        return None
    parts = pid.split(":")
    params = {_PARAMS[k]: v for k, v in config.items() if k in _PARAMS}
    if parts[0] == "openai" and len(parts) >= 2:
        kind = parts[1] if len(parts) > 2 else "chat"
        if kind != "chat":
            return None
        spec: dict[str, Any] = {"type": "openai", "model": ":".join(parts[2:] if len(parts) > 2 else parts[1:])}
        base = config.get("apiBaseUrl") or (f"https://{config['apiHost']}/v1" if config.get("apiHost") else None)
        if base:
            spec["base_url"] = base
        if config.get("apiKeyEnvar"):
            spec["api_key_env"] = config["apiKeyEnvar"]
        if config.get("tools"):
            spec["tools"] = config["tools"]
        for key in ("functions", "function_call"):  # the legacy functions API, sent as promptfoo sends it
            if config.get(key) and (key != "functions" or isinstance(config[key], list)):
                params[key] = config[key]
        passthrough.apply(spec, params, config)  # over the keys above, under service_tier, user, metadata, store
        if params:
            spec["params"] = params
        return spec
    if parts[0] == "anthropic" and len(parts) >= 2:
        model = parts[-1]
        if len(parts) > 2 and parts[1] != "messages":
            return None
        spec = {"type": "anthropic", "model": model}
        if config.get("tools"):
            spec["tools"] = config["tools"]
        if params:
            spec["params"] = params
        return spec
    return None


_PROMPT = re.compile(r"^{{\s*prompt\s*}}$")
_JSON_PATH = re.compile(r"""^json((?:\.[A-Za-z_$][\w$]*|\[\d+\]|\["[^"\\]*"\]|\['[^'\\]*'\])*)$""")
_PATH_PART = re.compile(r"""\.([A-Za-z_$][\w$]*)|\[(\d+)\]|\["([^"\\]*)"\]|\['([^'\\]*)'\]""")
#: Ollama options with an OpenAI-compatible parameter of the same meaning (num_predict: max_tokens)
_OLLAMA_PARAMS = {"temperature": "temperature", "top_p": "top_p", "seed": "seed", "stop": "stop",
                  "num_predict": "max_tokens", "presence_penalty": "presence_penalty",
                  "frequency_penalty": "frequency_penalty"}


class NotConverted(Exception):
    """A provider that maps onto a scoreboard subject except for the part named in the message."""


def _http_object_body(body: Any) -> Any:
    """promptfoo's http body (an object whose strings are Nunjucks templates) as the http
    subject's body template: `{{prompt}}` becomes `{{input}}` (the rendered prompt)."""
    def walk(value: Any) -> Any:
        if isinstance(value, str):
            if _PROMPT.match(value.strip()):
                return "{{input}}"
            if "{{" in value or "{%" in value:
                raise NotConverted(f"its body template {value!r} names test vars or filters; the http subject "
                                   "sends only the rendered prompt ({{prompt}})")
            return value
        if isinstance(value, dict):
            return {str(k): walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value
    if not isinstance(body, (dict, list)):
        raise NotConverted("its body is not a JSON object (a text body is sent as text; the http subject sends JSON)")
    return walk(body)


def http_subject(pid: str, config: dict, env_values: dict[str, str] | None = None) -> dict:
    """promptfoo's http provider (id `http`/`https` with config.url, or the URL as the id) as an
    `http` subject: POST (the documented default) of the JSON body with {{prompt}} in it, the
    output read at the dot path a `json.a.b[0]` transformResponse (or responseParser) names."""
    url = config.get("url") or (pid if pid.startswith(("http://", "https://")) else None)
    if not isinstance(url, str) or "{{" in url:
        raise NotConverted("its url is missing or a template")
    extra = set(config) - {"url", "method", "headers", "body", "transformResponse", "responseParser"}
    if extra:
        raise NotConverted(f"its setting {min(extra)!r} has no http-subject equivalent")
    parser = config.get("transformResponse", config.get("responseParser"))
    m = _JSON_PATH.match(parser.strip()) if isinstance(parser, str) else None
    if m is None or not m.group(1):
        raise NotConverted("its transformResponse is not a property path like json.output.text (without one "
                           "promptfoo's output is the whole response; code is not converted)")
    parts = [next(g for g in pm.groups() if g is not None) for pm in _PATH_PART.finditer(m.group(1))]
    if any("." in part or not part for part in parts):
        raise NotConverted("its transformResponse path has a key the http subject's dot path cannot name")
    headers = config.get("headers") or {}
    if not isinstance(headers, dict):
        raise NotConverted("its headers are not a mapping")
    headers, env_names, why = http_headers(headers, env_values or {})
    if why:
        raise NotConverted(why)
    body = config.get("body")
    spec: dict[str, Any] = {"type": "http", "url": url, "method": str(config.get("method") or "POST").upper(),
                            "body": _http_object_body(body), "output_path": ".".join(parts)}
    if headers:
        spec["headers"] = headers
    if env_names:
        spec["_env_names"] = env_names  # popped by convert_providers
    return spec


def ollama_subject(pid: str, config: dict) -> dict:
    """ollama:chat:MODEL on Ollama's OpenAI-compatible endpoint (OLLAMA_BASE_URL, default
    http://localhost:11434, + /v1): the same model and messages; the options with an OpenAI
    parameter of the same meaning carried over, any other is not converted."""
    import os

    model = pid.split(":", 2)[2]
    unknown = set(config) - set(_OLLAMA_PARAMS)
    if unknown:
        raise NotConverted(f"Ollama option {min(unknown)!r} has no OpenAI-compatible parameter")
    base = (os.environ.get("OLLAMA_BASE_URL") or "http://localhost:11434").rstrip("/") + "/v1"
    spec: dict[str, Any] = {"type": "openai", "model": model, "base_url": base, "api_key_required": False}
    params = {_OLLAMA_PARAMS[k]: v for k, v in config.items()}
    if params:
        spec["params"] = params
    return spec


def exec_argv(command: str) -> list[str]:
    """promptfoo's parseScriptParts: whitespace-separated, "double" or 'single' quoted parts."""
    return [m.group(1) or m.group(2) or m.group(0) for m in re.finditer(r"""[^\s"']+|"([^"]*)"|'([^']*)'""", command)]


def copy_scripts(argv: list[str], source: Source, report: Report, copied: dict, where: str) -> None:
    """The files an exec: command names (promptfoo runs it in the config's folder, and hashes
    every part that is a file there: getFileHashes) copied beside the suite, which runs the
    command in its own folder; a part naming a file outside the config's folder is listed, not
    copied (nothing outside the folder is read)."""
    import os

    for part in argv:
        path = source.folder / part
        if os.path.isabs(part) or not os.path.lexists(path) or os.path.isdir(path):
            continue  # a program on PATH (python3, node) or an absolute one: run as named
        try:
            data = source.read_bytes(part, where)
        except ConfigError as exc:
            report.skip(where, f"exec: {exc.detail}; copy it beside the suite")
            continue
        rel = os.path.normpath(part)
        copied[rel] = Executable(data) if os.access(path, os.X_OK) else data


def _is_file(item: Any) -> bool:
    """isProviderConfigFileReference: file:// and .yaml, .yml or .json."""
    return isinstance(item, str) and item.startswith("file://") and item.endswith((".yaml", ".yml", ".json"))


def _expand(value: Any, source: Source) -> list[tuple[str, Any]]:
    """(where, provider) for every provider, a provider config file (`providers: file://x.yaml`,
    or an item `file://x.yaml`) read as loadProvidersFromFile reads it: one provider or a list."""
    items = value if isinstance(value, list) else ([value] if value is not None else [])
    out: list[tuple[str, Any]] = []
    for i, item in enumerate(items):
        if not _is_file(item):
            out.append((f"providers.{i}", item))
            continue
        name = item[len("file://"):]
        loaded = source.read_data(name, f"providers.{i}")
        configs = loaded if isinstance(loaded, list) else [loaded]
        out += [(f"providers.{i} ({name}:{j})", c) for j, c in enumerate(configs)]
    return out


def convert_providers(value: Any, source: Source, report: Report, copied: dict[str, str],
                      env: EnvTags | None = None, identities: dict[str, dict] | None = None) -> tuple[dict, Any]:
    """({variant name: variant config}, a judge spec or None); `identities`: each variant's {id, label, type}."""
    import json

    variants: dict[str, dict] = {}
    for i, (where, item) in enumerate(_expand(value, source)):
        if isinstance(item, dict) and "id" not in item and len(item) == 1:  # {"openai:gpt-4": {config}}
            (pid, body), = item.items()
            if body is not None and not isinstance(body, dict):
                report.skip(where, f"a provider {{id: options}} needs its options as a mapping, "
                            f"{pid!r} has {type(body).__name__} (for an id, write `- {pid}:{body}` or `- id: ...`)")
                continue
            item = {"id": pid, **(body or {})}
        pid = item if isinstance(item, str) else (item.get("id") if isinstance(item, dict) else None)
        config = (item.get("config") or {}) if isinstance(item, dict) else {}
        if not isinstance(pid, str) or not isinstance(config, dict):
            report.skip(where, "a provider is an id or {id, label, config} (config a mapping)")
            continue
        for key in ("tools", "functions"):
            tools = config.get(key)
            if isinstance(tools, str) and tools.startswith("file://"):  # maybeLoadFromExternalFile
                file = tools[len("file://"):]
                config = {k: v for k, v in config.items() if k != key}
                if file.lower().endswith((".json", ".yaml", ".yml")):
                    config[key] = source.read_data(file, f"{where}.config.{key}")
                else:
                    report.skip(f"{where}.config.{key}", f"{key} from {file} (code, or a file promptfoo reads as "
                                "text) are not converted")
                item = {**item, "config": config}
        label = (item.get("label") if isinstance(item, dict) else None) or pid
        name = re.sub(r"[^A-Za-z0-9._:/-]+", "-", str(label)).replace(":", "-").strip("-") or f"provider-{i + 1}"
        while name in variants:
            name += "-2"
        subject = provider_subject(item)
        try:
            if subject is None and (pid in ("http", "https") or pid.startswith(("http://", "https://"))):
                subject = http_subject(pid, config, env.values if env else None)
                names = subject.pop("_env_names", [])
                if names:
                    for prefix in (where, where.replace("providers", "targets", 1)):
                        if env:
                            env.converted(prefix, names)
                    report.note(f"{where}: its headers' {', '.join('{{ env.%s }}' % n for n in names)} read the "
                                f"environment when each request is sent: the http subject's "
                                f"{', '.join('${%s}' % n for n in names)}; where promptfoo sends an empty value "
                                f"for a variable that is not set, the run stops naming it")
            elif subject is None and pid.startswith("ollama:chat:") and len(pid.split(":", 2)[2]) > 0:
                subject = ollama_subject(pid, config)
                report.note(f"{where}: {pid} is sent to Ollama's OpenAI-compatible endpoint (OLLAMA_BASE_URL + /v1, "
                            "read at import) rather than its /api/chat: the same model and messages")
        except NotConverted as exc:
            report.skip(where, f"provider {pid!r} is not converted ({exc}): fill in variants.{name}.subject")
            variants[name] = {"description": f"promptfoo provider {pid}: not converted, fill in a subject"}
            continue
        if subject is None and pid == "echo":
            subject = {"type": "mock"}  # echoes the rendered prompt, as promptfoo's echo provider
        elif subject is None and pid.startswith("exec:"):
            # src/providers/scriptCompletion.ts: argv = parseScriptParts(cmd) + [prompt,
            # JSON(options), JSON(context)], the output stdout.trim() with ANSI escapes stripped
            options = {k: v for k, v in item.items() if k != "id"} if isinstance(item, dict) else {}
            argv = exec_argv(pid[len("exec:"):].strip())
            copy_scripts(argv, source, report, copied, where)
            subject = {"type": "command", "trim": True, "argv": argv + [
                "{input}", json.dumps(options), '{"vars": {vars}}']}
            report.note(f"{where}: exec provider: its context argument holds the test's vars only (promptfoo "
                        "also passes the prompt object and the test)")
        elif subject is None and (pid.startswith("python:") or (pid.startswith("file://") and ".py" in pid)):
            ref = pid.split(":", 1)[1] if pid.startswith("python:") else pid[len("file://"):]
            file, _, function = ref.partition(":")
            copied[file] = source.read_text(file, where)
            local = local_imports(copied[file], file, source)
            if local:
                report.skip(where, f"{file} imports {', '.join(local)} from its folder, which the import does not "
                            "copy (promptfoo runs it in place): copy them beside the suite")
            config = _file_references(config, source, report, f"{where}.config")
            adapter = f"provider_{Path(file).stem}_{i + 1}.py"
            copied[adapter] = ADAPTER.format(name=file, config=config, function=function or "call_api")
            subject = {"type": "python", "function": f"{adapter[:-3]}:call"}
        if subject is None:
            report.skip(where, f"provider {pid!r} is not converted: fill in variants.{name}.subject")
            variants[name] = {"description": f"promptfoo provider {pid}: not converted, fill in a subject"}
            _provider_keys(item, where, name, variants, report)
            continue
        for key in set(config) - set(_PARAMS) - {"apiBaseUrl", "apiHost", "apiKeyEnvar", "tools"}:
            if subject["type"] in ("openai", "anthropic") and not pid.startswith("ollama:") \
                    and key not in (subject.get("params") or {}) and not (key == "passthrough" and isinstance(
                        config[key], dict) and subject["type"] == "openai"):
                report.skip(f"{where}.config.{key}", "this provider setting is not converted")
        passthrough.notes(subject, config, where, report)
        variants[name] = {"subject": subject}
        if identities is not None:  # a prompt function is told the provider's id and label
            identities[name] = {"id": pid, "label": (item.get("label") if isinstance(item, dict) else None),
                                "type": subject["type"]}
        _provider_keys(item, where, name, variants, report)
    if not variants:
        report.skip("providers", "no provider: the suite has no variant (add one under variants:)")
    return variants, None


def _provider_keys(item: Any, where: str, name: str, variants: dict, report: Report) -> None:
    """A provider's keys beside id, label and config: `prompts` (the labels of the prompts it
    runs, promptfoo's providerPromptMap) kept as the variant's PROMPT_FILTER for the prompt axis;
    `delay` (pacing only) noted; anything else listed."""
    if not isinstance(item, dict):
        return
    for key in sorted(set(item) - {"id", "label", "config"}):
        value = item[key]
        if key == "prompts" and isinstance(value, list) and all(isinstance(v, str) for v in value):
            variants[name][PROMPT_FILTER] = value
        elif key == "prompts":
            report.skip(f"{where}.prompts", "a provider's prompts are a list of prompt labels: not converted, "
                        "the variant runs every prompt")
        elif key == "delay":
            report.note(f"{where}.delay: promptfoo waits between this provider's calls; the suite does not")
        else:
            report.skip(f"{where}.{key}", "this provider setting is not converted")


#: where a variant carries its provider's `prompts` until the prompt axis is laid out
PROMPT_FILTER = "__promptfoo_prompts"


def prompt_pairs(prompts: dict[str, Any], variants: dict[str, dict], report: Report) -> dict[str, dict] | None:
    """When a provider names the prompts it runs (providerPromptMap, src/evaluator.ts
    isAllowedPrompt: a prompt's label is one of them, or starts with one and a colon), the
    prompt axis as explicit variants: each allowed (prompt, provider) pair a variant with its own
    prompt, named as the suite's `prompts` would name it. None when no provider names any."""
    filters = {name: v.pop(PROMPT_FILTER) for name, v in variants.items() if PROMPT_FILTER in v}
    if not filters or not prompts:
        return None
    for name, allowed in filters.items():
        unknown = [a for a in allowed if not any(p == a or p.startswith(f"{a}:") for p in prompts)]
        if unknown:
            report.skip(f"providers ({name}).prompts", f"{unknown[0]!r} is no prompt's label here (a prompt "
                        "without a label is named after its file or its position): the variant runs every prompt")
            filters[name] = None
    out: dict[str, dict] = {}
    for pname, template in prompts.items():
        for vname, variant in variants.items():
            allowed = filters.get(vname)
            if allowed is not None and not any(pname == a or pname.startswith(f"{a}:") for a in allowed):
                continue
            name = pname if len(variants) == 1 else f"{pname}/{vname}"
            while name in out:
                name += "-2"
            out[name] = copy.deepcopy({**variant, "prompt": template})  # shared values would dump as YAML anchors
    return out


def _file_references(value: Any, source: Source, report: Report, where: str) -> Any:
    """A python provider's config as processConfigFileReferences (src/util/fileReference.ts)
    hands it over: each `file://` string replaced by its file, .json/.yaml parsed, .txt, .md or
    no extension as text; one loaded by running code (.js, .py) is listed and left as written."""
    if isinstance(value, dict):
        return {k: _file_references(v, source, report, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_file_references(v, source, report, f"{where}.{i}") for i, v in enumerate(value)]
    if not (isinstance(value, str) and value.startswith("file://")):
        return value
    name = value[len("file://"):].split(":")[0]
    ext = Path(name).suffix.lower()
    if ext in (".json", ".yaml", ".yml"):
        return source.read_data(name, where)
    if ext in (".txt", ".md", ""):
        return source.read_text(name, where)
    report.skip(where, f"{value!r}: promptfoo runs this file's code to make the value, not converted "
                "(the provider receives the reference as written)")
    return value
