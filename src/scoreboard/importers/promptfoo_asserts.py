"""One promptfoo assertion (already merged with defaultTest, for one test's vars) as scoreboard
grader specs, following promptfoo's handlers (src/assertions/*.ts): values rendered with the
test's vars, numbers compared as JavaScript prints them, `icontains` by toLowerCase, JS regex
dialect, `not-` by each handler's own inverse rule. What cannot be converted raises Skip."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .common import Report, Source, js_string
from .nunjucks import convert as convert_template

CLOSED_QA = ("You are assessing a submitted answer on a given task based on a criterion. Here is the data:\n"
             "[BEGIN DATA]\n***\n[Task]: {{ input }}\n***\n[Submission]: {{ output }}\n***\n[Criterion]: "
             "{% raw %}CRITERION{% endraw %}\n***\n[END DATA]\nDoes the submission meet the criterion? "
             "Answer Y or N.")
FACTUALITY = ("You are comparing a submitted answer to an expert answer on a given question. Here is the data:\n"
              "[BEGIN DATA]\n************\n[Question]: {{ input }}\n************\n[Expert]: "
              "{% raw %}CRITERION{% endraw %}\n************\n[Submission]: {{ output }}\n************\n[END DATA]\n\n"
              "Compare the factual content of the submitted answer with the expert answer. Ignore any differences "
              "in style, grammar, or punctuation.\nThe submitted answer may either be a subset or superset of the "
              "expert answer, or it may conflict with it. Determine which case applies. Answer the question by "
              "selecting one of the following options:\n(A) The submitted answer is a subset of the expert answer "
              "and is fully consistent with it.\n(B) The submitted answer is a superset of the expert answer and is "
              "fully consistent with it.\n(C) The submitted answer contains all the same details as the expert "
              "answer.\n(D) There is a disagreement between the submitted answer and the expert answer.\n(E) The "
              "answers differ, but these differences don't matter from the perspective of factuality.")
RUBRIC = ("You are grading output according to a user-specified rubric. If the statement in the rubric is true, "
          "then the output passes the test.\n<Output>\n{{ output }}\n</Output>\n<Rubric>\n"
          "{% raw %}CRITERION{% endraw %}\n</Rubric>")
#: promptfoo's factuality defaults: every class passes but (D) disagreement
FACTUALITY_SCORES = {"A": 1, "B": 1, "C": 1, "D": 0, "E": 1}
JUDGED = {"llm-rubric", "model-graded-closedqa", "factuality", "g-eval", "model-graded-factuality"}


class Skip(Exception):
    """An assertion (or part of one) that is not converted; the message says why."""


@dataclass
class Context:
    """What converting assertions needs beyond the assertion itself."""

    source: Source
    report: Report
    python: list[str] = field(default_factory=list)  # generated functions of promptfoo_asserts.py
    copied: dict[str, str] = field(default_factory=dict)  # config-relative path -> text to copy
    judged: bool = False
    select_best: list[str] = field(default_factory=list)
    noted: set[str] = field(default_factory=set)  # notes given once for the whole config
    #: whether code the config names may run while importing (transformVars; --run-code)
    run_code: bool = False


def parse_comma_values(value: str) -> list[str]:
    """promptfoo's parseCommaSeparatedValues: commas split, whitespace trimmed, empty fields
    dropped, a "quoted field" may hold commas (\\" and "" escape a quote)."""
    out: list[str] = []
    i, n = 0, len(value)
    while i < n:
        while i < n and (value[i].isspace() or value[i] == ","):
            i += 1
        if i >= n:
            break
        if value[i] == '"':
            i += 1
            text, closed = "", False
            while i < n:
                if value[i] == "\\" and i + 1 < n and value[i + 1] in '"\\':
                    text, i = text + value[i + 1], i + 2
                elif value[i] == '"' and i + 1 < n and value[i + 1] == '"':
                    text, i = text + '"', i + 2
                elif value[i] == '"':
                    i, closed = i + 1, True
                    break
                else:
                    text, i = text + value[i], i + 1
            if not closed:
                raise Skip("unterminated quoted field in the comma-separated value")
            out.append(text)
            while i < n and value[i].isspace():
                i += 1
            if i < n and value[i] != ",":
                raise Skip("expected a comma after a quoted field")
        else:
            j = value.find(",", i)
            j = n if j < 0 else j
            out.append(value[i:j].strip())
            i = j
    return out


@lru_cache(maxsize=4096)
def _compiled(value: str) -> Any:
    """A value's template, converted and compiled once (10,000 tests share a few templates), in
    Nunjucks' rule for undefined names (promptfoo renders assertion values with nunjucks)."""
    from ..templating import environment

    text, problems, _ = convert_template(value)
    if problems:
        raise Skip(problems[0])
    return environment("empty").from_string(text)


def render(value: Any, vars_: dict) -> Any:
    """An assertion value rendered with the test's vars (strings, and strings inside a list)."""
    if isinstance(value, list):
        return [render(v, vars_) for v in value]
    if not isinstance(value, str) or ("{{" not in value and "{%" not in value):
        return value
    try:
        template = _compiled(value)
        return template.render(vars_)
    except Skip:
        raise
    except Exception as exc:  # noqa: BLE001 - an undefined var or a syntax error: not converted, said why
        raise Skip(f"its value does not render: {type(exc).__name__}: {exc}") from None


def _file_value(value: str, ctx: Context, field_name: str) -> Any:
    """promptfoo's processFileReference for a file:// value: JSON/YAML parsed, other text as is."""
    name = value[len("file://"):]
    if name.lower().endswith((".json", ".yaml", ".yml")):
        return ctx.source.read_data(name, field_name)
    if name.lower().endswith((".js", ".cjs", ".mjs", ".ts", ".py", ".rb")):
        raise Skip(f"its value comes from a script ({name}), computed at run time")
    return ctx.source.read_text(name, field_name)


def _modifiers(spec: dict, a: dict, vars_: dict) -> dict:
    if a.get("weight") is not None:
        spec["weight"] = a["weight"]
    if a.get("metric"):
        spec["metric"] = render(a["metric"], vars_)
    return spec


def _threshold(a: dict, default: float | None) -> float | None:
    t = a.get("threshold")
    if t is None:
        return default
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        raise Skip(f"threshold {t!r} is not a number")
    return t


def convert(a: dict, vars_: dict, ctx: Context, where: str) -> tuple[dict | None, Any]:
    """(grader spec, value for the case's `expected` or None). Raises Skip."""
    if not isinstance(a, dict) or not isinstance(a.get("type"), str):
        raise Skip("an assertion is a mapping with a 'type'")
    kind = a["type"]
    inverse = kind.startswith("not-")
    base = kind[4:] if inverse else kind
    transform = transform_spec(a.get("transform"), ctx, where, "assertion") if a.get("transform") is not None \
        else None
    if a.get("provider") is not None and base not in ("similar",):
        ctx.report.note(f"{where}: the assertion's own grader provider is replaced by the suite's judge")
    value = a.get("value")
    if isinstance(value, str) and value.startswith("file://"):
        if base not in ("javascript", "python"):
            value = _file_value(value, ctx, where)
    else:
        value = render(value, vars_)
    handler = HANDLERS.get(base)
    if handler is None:
        raise Skip(f"assertion type {kind!r} has no scoreboard equivalent")
    spec, expected = handler(value, a, inverse, ctx, where)
    if spec is None:
        return None, None
    spec = _modifiers(spec, a, vars_)
    if transform is not None:  # src/assertions/index.ts runAssertion: applied before the handler
        spec["transform"] = transform
    return spec, expected


def transform_spec(value: Any, ctx: Context, where: str, context: str) -> dict:
    """A promptfoo transform (src/util/transform.ts) as a scoreboard transform spec: inline
    JavaScript or file://x.js[:fn] as a `javascript` transform (the file copied beside the suite),
    file://x.py[:fn] as a `python` transform calling fn (default get_transform) as promptfoo's
    runPython does: fn(output, context), its result read back through JSON."""
    if not isinstance(value, str) or not value.strip():
        raise Skip("a transform is JavaScript code or a file:// reference (a function object is not converted)")
    if value.startswith("file://"):
        name, fn = split_file_function(value[len("file://"):])
        if name.lower().endswith(".py"):
            ctx.copied[name] = ctx.source.read_text(name, where)
            index = len(ctx.python) + 1
            ctx.python.append(f"def transform_{index}(output, context):\n"
                              f"    return _transform(_load({name!r}), {fn or 'get_transform'!r}, output, context, "
                              f"{context!r})\n")
            if "python-transform" not in ctx.noted:
                ctx.noted.add("python-transform")
                ctx.report.note("Python transforms: an object or list result reaches text assertions as JSON "
                                "written with Python's separators (', ' and ': '), where promptfoo's JSON.stringify "
                                "writes none; code assertions get the value itself, as in promptfoo")
            return {"python": {"file": "promptfoo_asserts.py", "function": f"transform_{index}"}}
        if not name.lower().endswith((".js", ".cjs", ".mjs")):
            raise Skip(f"its transform file {name} is not JavaScript or Python (TypeScript is not converted)")
        ctx.copied[name] = ctx.source.read_text(name, where)
        return {"javascript": {"file": name, **({"function": fn} if fn else {}), "context": context}}
    return {"javascript": {"code": value, "context": context}}


def split_file_function(ref: str) -> tuple[str, str | None]:
    """parseFilePathAndFunctionName: `path:fn` splits at the last colon only when the part before
    it is a JavaScript or Python file."""
    head, sep, tail = ref.rpartition(":")
    if sep and len(head) > 1 and head.lower().endswith((".js", ".cjs", ".mjs", ".ts", ".mts", ".cts", ".py")):
        return head, tail
    return ref, None


def _not(spec: Any, inverse: bool) -> Any:
    return {"not": spec} if inverse else spec


def _equals(value, a, inverse, ctx, where):
    if isinstance(value, (dict, list)):
        spec = {"exact": {"fences": False, "numeric_types": False}}
        return _not(spec, inverse), value
    if value is None:
        raise Skip("equals needs a value")
    # String(renderedValue) === outputString (src/assertions/equals.ts)
    return _not({"exact": {"fences": False}}, inverse), js_string(value)


def _contains(base: str):
    def handler(value, a, inverse, ctx, where):
        many = base.endswith(("-any", "-all"))
        if many:
            if isinstance(value, str):
                value = parse_comma_values(value)
            if not isinstance(value, list) or not value:
                raise Skip(f"{base} needs a list (or comma-separated) value")
            patterns = [js_string(v) for v in value]
        else:
            if not ((isinstance(value, str) and value) or (isinstance(value, (int, float))
                                                          and not isinstance(value, bool))):
                raise Skip(f"{base} needs a non-empty string or number value")
            patterns = [js_string(value)]
        if any(p == "" for p in patterns):
            raise Skip(f"{base} has an empty value, which every output contains")
        options: dict = {"patterns": patterns}
        if base.startswith("i"):
            options.update(ignore_case=True, fold="lower")  # toLowerCase, not casefold
        mode = "any" if base.endswith("-any") else "all"
        if inverse and mode == "any":  # none may occur
            return {"not-contains": options}, None
        if inverse and not many:
            return {"not-contains": options}, None
        options["mode"] = mode
        return _not({"contains": options}, inverse), None
    return handler


def _starts_with(value, a, inverse, ctx, where):
    if not isinstance(value, (str, int, float)) or value == "":
        raise Skip("starts-with needs a value")
    return _not({"starts-with": js_string(value)}, inverse), None


def _regex(value, a, inverse, ctx, where):
    if not isinstance(value, str) or not value:
        raise Skip("regex needs a string value")
    try:
        _translate(value)
    except ValueError as exc:
        raise Skip(f"JavaScript regex {value!r} cannot be translated exactly: {exc}") from None
    return {("not-regex" if inverse else "regex"): {"patterns": [value], "dialect": "javascript"}}, None


@lru_cache(maxsize=4096)
def _translate(pattern: str) -> str:
    from ..graders.jsregex import translate

    return translate(pattern)


def _schema(value: Any) -> Any:
    if value in (None, ""):
        return None
    if isinstance(value, str):  # promptfoo reads a text schema as YAML
        from ..safeparse import ParseError, parse_yaml

        try:
            value = parse_yaml(value, core=True)[0]
        except ParseError as exc:
            raise Skip(f"its schema does not parse: {exc.message}") from None
    if not isinstance(value, (dict, bool)):
        raise Skip("its schema is not a JSON schema")
    return value


def _json(name: str):
    def handler(value, a, inverse, ctx, where):
        schema = _schema(value)
        spec = {name: {"schema": schema}} if schema is not None else name
        return _not(spec, inverse), None
    return handler


def _javascript(value, a, inverse, ctx, where):
    options: dict = {}
    if isinstance(value, str) and value.startswith("file://"):
        name, _, fn = value[len("file://"):].partition(":")
        ctx.copied[name] = ctx.source.read_text(name, where)
        options = {"file": name, **({"function": fn} if fn else {})}
    elif isinstance(value, str) and value.strip():
        options = {"code": value}
    else:
        raise Skip("javascript needs code or a file:// reference")
    t = _threshold(a, None)
    if t is not None:
        options["threshold"] = t
    if inverse:
        options["not"] = True
    if a.get("config") is not None:
        options["config"] = a["config"]
    return {"javascript": options}, None


def _python(value, a, inverse, ctx, where):
    index = len(ctx.python) + 1
    config = repr(a.get("config"))
    threshold = _threshold(a, None)
    if isinstance(value, str) and value.startswith("file://"):
        name, _, fn = value[len("file://"):].partition(":")
        ctx.copied[name] = ctx.source.read_text(name, where)
        body = (f"def _user_{index}(output, context):\n"
                f"    return _load({name!r}).{fn or 'get_assert'}(output, context)\n")
    elif isinstance(value, str) and value.strip():
        code = value.rstrip("\n") if "\n" in value else value
        if "\n" in code:
            import re

            m = re.search(r"^(?!\s*$)\s+", code, re.MULTILINE)
            indent = m.group(0) if m else "    "
            inner = "\n".join(indent + line for line in code.split("\n"))
        else:
            inner = f"    return {code}"
        body = f"def _user_{index}(output, context):\n{inner}\n"
    else:
        raise Skip("python needs code or a file:// reference")
    ctx.python.append(body + f"\n\ndef assert_{index}(output, context):\n"
                      f"    return _finish(_user_{index}, output, context, {config}, {inverse!r}, {threshold!r})\n")
    return {"python": {"file": "promptfoo_asserts.py", "function": f"assert_{index}"}}, None


def _measure(name: str, kind: str):
    def handler(value, a, inverse, ctx, where):
        t = _threshold(a, None)
        if t is None:
            raise Skip(f"{kind} without a threshold only records a metric")
        if name == "max-latency-ms":
            t = math.floor(t) if t == int(t) else t
        return _not({name: t}, inverse), None
    return handler


def _levenshtein(value, a, inverse, ctx, where):
    if not isinstance(value, str):
        raise Skip("levenshtein needs a string value")
    t = a.get("threshold") or 5  # `assertion.threshold || 5`: 0 means 5
    if inverse:
        ctx.report.note(f"{where}: promptfoo's levenshtein ignores not-, so not-levenshtein grades as levenshtein")
    return {"levenshtein": {"value": value, "threshold": math.floor(t)}}, None


def _rouge(value, a, inverse, ctx, where):
    # src/assertions/rouge.ts: rouge.n(outputString, renderedValue, {}) from js-rouge, pass at
    # score >= (threshold ?? 0.75), inverted by not- with score 1 - score
    if not isinstance(value, str):
        raise Skip("rouge-n needs a string value")
    spec = {"rouge-n": {"value": value, "n": 1, "method": "js-rouge", "threshold": _threshold(a, 0.75)}}
    return _not(spec, inverse), None


def _bleu(value, a, inverse, ctx, where):
    if not (isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(v, str) for v in value))):
        raise Skip("bleu needs a string or a list of strings")
    return _not({"bleu": {"value": value, "threshold": _threshold(a, 0.5), "method": "promptfoo"}}, inverse), None


def _similar(value, a, inverse, ctx, where):
    if not (isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(v, str) for v in value))):
        raise Skip("similar needs a string or a list of strings")
    options: dict = {"value": value, "threshold": _threshold(a, 0.75)}
    ctx.report.note(f"{where}: similar embeds with scoreboard's embedder (offline all-MiniLM-L6-v2 unless you set "
                    "an embedder), promptfoo with OpenAI's embeddings: similarities differ")
    return _not({"similar": options}, inverse), None


def _tools_call(value, a, inverse, ctx, where):
    # src/assertions/openai.ts handleIsValidOpenAiToolsCall: no tool call fails ("did not return a
    # valid-looking tools response"); every call must name a function tool the provider offers and
    # its JSON arguments must validate against that tool's parameters (validateFunctionCall, ajv);
    # `not-` inverts the verdict (toolCallVerdict)
    return _not({"tool-calls": {"validate": True, "min_calls": 1}}, inverse), None


def _judged(kind: str):
    def handler(value, a, inverse, ctx, where):
        if not isinstance(value, str) or not value:
            raise Skip(f"{kind} needs a text value")
        ctx.judged = True
        literal = value.replace("{% endraw %}", "")
        if inverse and kind != "llm-rubric":
            # factuality.ts, modelGradedClosedQa.ts, geval.ts return the matcher's verdict without
            # looking at `inverse`: promptfoo grades not-X as X
            ctx.report.note(f"{where}: promptfoo's {kind} ignores not-, so not-{kind} grades as {kind}")
        if kind == "g-eval":
            return {"g-eval": {"criteria": value, "threshold": _threshold(a, 0.7)}}, None
        if kind == "llm-rubric":
            # llmRubric.ts handleLlmRubric + matchers: pass = verdict && score >= threshold when a
            # threshold is set; not- inverts the verdict and scores 1 - score (clamped)
            options: dict = {"prompt": RUBRIC.replace("CRITERION", literal)}
            t = _threshold(a, None)
            if t is not None:
                options["threshold"] = t
            return _not({"llm-judge": options}, inverse), None
        if kind == "model-graded-closedqa":
            return {"classify": {"prompt": CLOSED_QA.replace("CRITERION", literal), "choices": ["Y", "N"],
                                 "choice_scores": {"Y": 1, "N": 0}}}, None
        return {"classify": {"prompt": FACTUALITY.replace("CRITERION", literal), "choices": list(FACTUALITY_SCORES),
                             "choice_scores": dict(FACTUALITY_SCORES), "pass": ["A", "B", "C", "E"]}}, None
    return handler


def _select_best(value, a, inverse, ctx, where):
    if not isinstance(value, str) or not value:
        raise Skip("select-best needs criteria text")
    ctx.select_best.append(value)
    return None, None


HANDLERS = {
    "equals": _equals, "starts-with": _starts_with, "regex": _regex,
    "is-json": _json("is-json"), "contains-json": _json("contains-json"),
    "javascript": _javascript, "python": _python,
    "latency": _measure("max-latency-ms", "latency"), "cost": _measure("max-cost", "cost"),
    "levenshtein": _levenshtein, "rouge-n": _rouge, "bleu": _bleu, "similar": _similar,
    "is-valid-openai-tools-call": _tools_call, "select-best": _select_best,
    **{k: _contains(k) for k in ("contains", "icontains", "contains-any", "contains-all", "icontains-any",
                                 "icontains-all")},
    **{k: _judged(k) for k in ("llm-rubric", "model-graded-closedqa", "factuality", "g-eval")},
    "model-graded-factuality": _judged("factuality"),
}

PYTHON_HEADER = '''"""promptfoo's python assertions and transforms, converted by `scoreboard import promptfoo`.

Each assert_N runs the original code and applies promptfoo's result rules
(src/assertions/python.ts): true/false, a number (passes when > 0, or at the threshold), or
{pass, score, reason}; `not-` inverts the verdict and keeps a returned score. Each
transform_N calls a Python file transform as promptfoo does (src/util/transform.ts).
"""

import importlib.util
import json
import pathlib

_HERE = pathlib.Path(__file__).resolve().parent
_MODULES = {}


def _load(name):
    if name not in _MODULES:
        spec = importlib.util.spec_from_file_location("promptfoo_" + str(len(_MODULES)), _HERE / name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _MODULES[name] = module
    return _MODULES[name]


def _js_value(value):
    """A value as JavaScript reads it back from JSON: an integral float is a whole number."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return int(value)
    if isinstance(value, dict):
        return {str(k): _js_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_js_value(v) for v in value]
    return value


def _transform(module, name, output, context, kind):
    """promptfoo's Python transform (src/util/transform.ts getPythonTransformFunction): the
    function gets the output (a structured value when there is one) and {vars, prompt}; its
    result comes back through JSON (runPython)."""
    value = context.get("value", output)
    shown = context.get("input")
    shown = shown if isinstance(shown, str) else json.dumps(shown)
    prompt = {"raw": shown, "label": shown} if kind == "test" else {"label": shown}
    result = getattr(module, name)(value, {"vars": context.get("vars") or {}, "prompt": prompt})
    return None if result is None else _js_value(json.loads(json.dumps(result)))


def _finish(fn, output, context, config, inverse, threshold):
    pf_context = {"prompt": context.get("input"), "vars": context.get("vars") or {},
                  "test": {"vars": context.get("vars") or {}, "metadata": context.get("metadata")},
                  "config": config}
    result = fn(output, pf_context)
    if isinstance(result, str) and result.lower() in ("true", "false"):
        result = result.lower() == "true"
    if isinstance(result, str) and result.startswith("{"):
        result = json.loads(result)
    if isinstance(result, bool):
        passed = result != inverse
        return {"pass": passed, "score": 1.0 if passed else 0.0,
                "reason": "Assertion passed" if passed else "Python code returned " + str(result).lower()}
    if isinstance(result, dict):
        passed = result.get("pass", result.get("pass_"))
        score = result.get("score", 1.0 if passed else 0.0)
        reason = result.get("reason", "")
        if threshold is not None and score < threshold:
            passed = False
            reason = "Python score %s is less than threshold %s" % (score, threshold) + (": " + reason if reason else "")
        final = bool(passed) != inverse
        if final != bool(passed):
            reason = "Assertion passed" if final else "Python code returned " + str(bool(passed)).lower()
        out = {"pass": final, "score": score, "reason": reason}
        named = result.get("named_scores", result.get("namedScores"))
        if named:
            out["named_scores"] = named
        return out
    score = float(result)
    raw = score > 0 if threshold is None else score >= threshold
    passed = raw != inverse
    return {"pass": passed, "score": score,
            "reason": "Assertion passed" if passed else "Python code returned " + str(raw).lower()}
'''
