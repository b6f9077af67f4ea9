"""One promptfoo assertion (already merged with defaultTest, for one test's vars) as scoreboard
grader specs, following promptfoo's handlers (src/assertions/*.ts): values rendered with the
test's vars, numbers compared as JavaScript prints them, `icontains` by toLowerCase, JS regex
dialect, `not-` by each handler's own inverse rule. What cannot be converted raises Skip."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..templating.js import js_trim
from .common import Report, Source, js_string
from .nunjucks import convert as convert_template
from .promptfoo_assert_code import (
    PYTHON_HEADER,
    Skip,
    javascript,
    python,
    runtime_spec,
    threshold_of,
)

__all__ = ["PYTHON_HEADER", "Context", "Skip", "convert", "parse_comma_values", "render", "transform_spec"]

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
    #: (test location, id of its vars) -> an equals already holds that case's `expected`
    expected_taken: set = field(default_factory=set)


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
    """An assertion value rendered with the test's vars (a text, and the texts directly inside a
    list, as runAssertion renders them; mappings are left as written)."""
    if isinstance(value, list):
        return [_render_text(v, vars_) for v in value]
    return _render_text(value, vars_)


def _render_text(value: Any, vars_: dict) -> Any:
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
    """runAssertion's file:// value: .json/.yaml parsed, .txt trimmed (JavaScript trim), else not read."""
    name = value[len("file://"):]
    if name.lower().endswith((".json", ".yaml", ".yml")):
        return ctx.source.read_data(name, field_name)
    if not name.endswith(".txt"):  # runAssertion: .txt trimmed; any other file "Unsupported file type"
        raise Skip(f"its value comes from {name}: a script or a file type promptfoo does not read")
    return js_trim(ctx.source.read_text(name, field_name))


def _modifiers(spec: dict, a: dict, vars_: dict) -> dict:
    if a.get("weight") is not None:
        spec["weight"] = a["weight"]
    if a.get("metric"):
        spec["metric"] = render(a["metric"], vars_)
    return spec


_threshold = threshold_of


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
    handler = HANDLERS.get(base)
    if handler is None:
        raise Skip(NOT_CONVERTED.get(base, f"assertion type {kind!r} has no scoreboard equivalent"))
    value = a.get("value")
    if isinstance(value, str) and value.startswith("file://"):
        if base not in ("javascript", "python"):
            value = _file_value(value, ctx, where)
    elif isinstance(value, list):
        value = [_file_value(v, ctx, where) if isinstance(v, str) and v.startswith("file://") else v for v in value]
        value = render(value, vars_)
    else:
        value = render(value, vars_)
    try:
        spec, expected = handler(value, a, inverse, ctx, where)
    except Invalid as exc:  # promptfoo's handler throws: the row is an error, so the case fails
        ctx.report.note(f"{where}: promptfoo stops this {kind} with an error ({exc}), so it fails every test; "
                        "converted to a grader that always fails")
        spec, expected = runtime_spec(ctx, f"_pf.fail({('Error: ' + str(exc))!r})"), None
    if spec is None:
        return None, None
    if expected is not None:
        key = (where.rsplit(".assert.", 1)[0], id(vars_))
        if ".assert." in key[0] or key in ctx.expected_taken:
            # a second equals (or one inside an assert-set): the case has one expected value
            spec, expected = _equals_runtime(expected, a, inverse, ctx), None
        else:
            ctx.expected_taken.add(key)
    spec = _modifiers(spec, a, vars_)
    if transform is not None:  # src/assertions/index.ts runAssertion: applied before the handler
        spec["transform"] = transform
    return spec, expected


class Invalid(Exception):
    """An assertion promptfoo's handler rejects by throwing (an invariant): the row errors."""


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


def _call(ctx: Context, name: str, *args: Any) -> dict:
    return runtime_spec(ctx, f"_pf.{name}(" + ", ".join(["output", *map(repr, args)]) + ")")


def _equals(value, a, inverse, ctx, where):
    """equals.ts: an object value (a list, null) deep-equals JSON.parse(output); anything else
    String(value) === output. The first equals of a case is the case's `expected`."""
    if "value" not in a:
        return _call(ctx, "equals", "undefined", inverse), None  # String(undefined)
    if value is None:
        return _call(ctx, "equals", None, inverse), None
    if isinstance(value, (dict, list)):
        return _not({"exact": {"fences": False, "numeric_types": False}}, inverse), value
    return _not({"exact": {"fences": False}}, inverse), js_string(value)


def _equals_runtime(expected: Any, a: dict, inverse: bool, ctx: Context) -> dict:
    if isinstance(expected, (dict, list)):
        return _call(ctx, "equals", expected, inverse)
    return _call(ctx, "equals", expected, inverse, expected)


def _js_falsy(value: Any) -> bool:
    """JavaScript's falsy values among YAML's (an empty list or mapping is truthy)."""
    if value is None or value is False or value == "":
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool) and (value == 0 or math.isnan(value))


def _contains(base: str):
    def handler(value, a, inverse, ctx, where):
        many = base.endswith(("-any", "-all"))
        folded = base.startswith("i")
        if many:
            if _js_falsy(value):  # invariant(value, ...)
                raise Invalid(f'"{base}" assertion type must have a value')
            if isinstance(value, str):
                value = parse_comma_values(value)
            if not isinstance(value, list):
                raise Invalid(f'"{base}" assertion type must have an array value')
            patterns = [js_string(v) for v in value]
        else:
            if not ((isinstance(value, str) and value) or (isinstance(value, (int, float))
                                                          and not isinstance(value, bool) and not math.isnan(value))):
                raise Invalid(f'"{base}" assertion type must have a string or number value')
            patterns = [js_string(value)]
        mode = "any" if base.endswith("-any") else "all"
        if not patterns or "" in patterns:  # [] (-any fails, -all passes); "" is in every output
            return _call(ctx, "contains", patterns, mode, folded, inverse), None
        options: dict = {"patterns": patterns}
        if folded:
            options.update(ignore_case=True, fold="lower")  # toLowerCase, not casefold
        if inverse and (mode == "any" or not many):  # none may occur
            return {"not-contains": options}, None
        options["mode"] = mode
        return _not({"contains": options}, inverse), None
    return handler


def _starts_with(value, a, inverse, ctx, where):
    if not isinstance(value, str) or not value:
        raise Invalid('"starts-with" assertion type must have a string value')
    return _not({"starts-with": value}, inverse), None


def _regex(value, a, inverse, ctx, where):
    """regex.ts: new RegExp(value).test(output); a pattern JavaScript rejects fails (not- too).
    A pattern Python's re cannot match exactly runs in Node (the javascript grader)."""
    if not isinstance(value, str) or not value:
        raise Invalid('"regex" assertion type must have a string value')
    try:
        _translate(value)
    except ValueError as exc:
        ctx.report.note(f"{where}: the JavaScript regex {value!r} is matched by Node.js ({exc})")
        code = ("const text = typeof output === 'string' ? output : JSON.stringify(output);\n"
                f"let re;\ntry {{ re = new RegExp({json.dumps(value)}); }} catch (e) {{\n"
                "  return {pass: false, score: 0, reason: 'Invalid regex pattern: ' + e.message};\n}\n"
                f"return re.test(text) !== {str(inverse).lower()};")
        return {"javascript": {"code": code, "strict": True}}, None
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


def _is_json(value, a, inverse, ctx, where):
    """json.ts handleIsJson: JSON.parse the whole output; a value is a schema (an object, YAML
    text, a file); not- inverts."""
    schema = _schema(value)
    return _not({"is-json": {"schema": schema}} if schema is not None else "is-json", inverse), None


def _contains_json(value, a, inverse, ctx, where):
    """json.ts handleContainsJson over extractJsonObjects: each balanced {...} read by js-yaml
    (so {a: 1}, single quotes and a trailing comma count), with a schema any one must validate."""
    return _call(ctx, "contains_json", _schema(value), inverse), None


def _measure(name: str, kind: str):
    def handler(value, a, inverse, ctx, where):
        t = _threshold(a, None)
        if t is None:  # latency.ts / cost.ts throw
            raise Invalid(f"{kind.capitalize()} assertion must have a threshold")
        return _not({name: t}, inverse), None
    return handler


def _text_value(kind: str, value: Any) -> str:
    if not isinstance(value, str):
        raise Invalid(f'"{kind}" assertion type must have a string value')
    return value


def _levenshtein(value, a, inverse, ctx, where):
    """levenshtein.ts: fastest-levenshtein distance (UTF-16 units) <= (threshold ?? 5), not- inverts."""
    return _call(ctx, "levenshtein", _text_value("levenshtein", value), _threshold(a, None), inverse), None


def _rouge(value, a, inverse, ctx, where):
    """rouge.ts: lowercased, js-rouge's tokens, clipped unigram F1 >= (threshold ?? 0.75)."""
    return _call(ctx, "rouge_n", _text_value("rouge", value), _threshold(a, None), inverse), None


def _references(kind: str, value: Any) -> Any:
    if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
        raise Invalid(f'"{kind}" assertion type must have a string or array of strings value')
    if value == []:
        raise Invalid("Invalid inputs")
    return value


def _bleu(value, a, inverse, ctx, where):
    """bleu.ts calculateBleuScore >= (threshold ?? 0.5)."""
    return _call(ctx, "bleu", _references("bleu", value), _threshold(a, None), inverse), None


def _gleu(value, a, inverse, ctx, where):
    """gleu.ts calculateGleuScore >= (threshold ?? 0.5)."""
    return _call(ctx, "gleu", _references("gleu", value), _threshold(a, None), inverse), None


def _word_count(value, a, inverse, ctx, where):
    """wordCount.ts: a number (or numeric text) or {min, max}."""
    if value is None:
        raise Invalid('"word-count" assertion must have a value')
    if isinstance(value, dict):
        low, high = value.get("min"), value.get("max")
        if low is None and high is None:
            raise Invalid('"word-count" assertion object must have "min" and/or "max" properties')
        if low is not None and high is not None and not low <= high:
            raise Invalid(f'"word-count" assertion: min ({low}) must be less than or equal to max ({high})')
        value = {k: v for k, v in (("min", low), ("max", high)) if v is not None}
    elif isinstance(value, str):
        try:
            value = float(value.strip()) if value.strip() else 0.0  # Number(value)
        except ValueError:
            raise Invalid('"word-count" assertion value must be a number or an object with min/max properties') \
                from None
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Invalid('"word-count" assertion value must be a number or an object with min/max properties')
    return _call(ctx, "word_count", value, inverse), None


def _is_refusal(value, a, inverse, ctx, where):
    """refusal.ts: isBasicRefusal's prefixes and phrases; a blank output counts as a refusal."""
    return _call(ctx, "is_refusal", inverse), None


def _finish_reason(value, a, inverse, ctx, where):
    """finishReason.ts on the subject's finish reason (scoreboard's output status)."""
    if not isinstance(value, str):
        raise Invalid('"finish-reason" assertion type must have a string value')
    return runtime_spec(ctx, f"_pf.finish_reason(context.get('status'), {value!r}, {inverse!r})"), None


def _similar(value, a, inverse, ctx, where):
    if not (isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(v, str) for v in value))):
        raise Skip("similar needs a string or a list of strings")
    options: dict = {"value": value, "threshold": _threshold(a, 0.75)}
    ctx.report.note(f"{where}: similar embeds with scoreboard's embedder (offline all-MiniLM-L6-v2 unless you set "
                    "an embedder), promptfoo with OpenAI's embeddings: similarities differ")
    return _not({"similar": options}, inverse), None


def _tools_call(value, a, inverse, ctx, where):
    """openai.ts handleIsValidOpenAiToolsCall: no tool call fails ("did not return a valid-looking
    tools response"); every call must name a function tool the provider offers and its JSON
    arguments must validate against that tool's parameters (validateFunctionCall, ajv). The
    handler never reads `inverse`: promptfoo grades not-is-valid-openai-tools-call as the
    assertion itself, and so does the import (a note)."""
    if inverse:
        ctx.report.note(f"{where}: promptfoo's is-valid-openai-tools-call ignores not-, so it grades as "
                        "is-valid-openai-tools-call")
    return {"tool-calls": {"validate": True, "min_calls": 1}}, None


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
    "is-json": _is_json, "contains-json": _contains_json,
    "javascript": javascript, "python": python,
    "latency": _measure("max-latency-ms", "latency"), "cost": _measure("max-cost", "cost"),
    "levenshtein": _levenshtein, "rouge-n": _rouge, "bleu": _bleu, "gleu": _gleu, "similar": _similar,
    "similar:cosine": _similar, "word-count": _word_count, "is-refusal": _is_refusal,
    "finish-reason": _finish_reason, "is-valid-openai-tools-call": _tools_call, "select-best": _select_best,
    **{k: _contains(k) for k in ("contains", "icontains", "contains-any", "contains-all", "icontains-any",
                                 "icontains-all")},
    **{k: _judged(k) for k in ("llm-rubric", "model-graded-closedqa", "factuality", "g-eval")},
    "model-graded-factuality": _judged("factuality"),
}

#: why the other deterministic types stay listed (promptfoo 0.121's handlers)
NOT_CONVERTED = {
    "is-xml": "is-xml has no scoreboard equivalent (promptfoo's own XML well-formedness checker)",
    "contains-xml": "contains-xml has no scoreboard equivalent (promptfoo's own XML checker)",
    "is-html": "is-html has no scoreboard equivalent (promptfoo parses with parse5)",
    "contains-html": "contains-html has no scoreboard equivalent (promptfoo's HTML heuristics)",
    "is-sql": "is-sql has no scoreboard equivalent (promptfoo parses with node-sql-parser)",
    "contains-sql": "contains-sql has no scoreboard equivalent (promptfoo parses with node-sql-parser)",
    "meteor": "meteor has no scoreboard equivalent (promptfoo uses the natural package's WordNet)",
    "perplexity": "perplexity needs the provider's token logprobs, which scoreboard does not record",
    "perplexity-score": "perplexity-score needs the provider's token logprobs, which scoreboard does not record",
    "similar:dot": "similar:dot (dot-product similarity) has no scoreboard equivalent",
    "similar:euclidean": "similar:euclidean (distance) has no scoreboard equivalent",
    "is-valid-function-call": "is-valid-function-call (legacy OpenAI functions) has no scoreboard equivalent",
    "is-valid-openai-function-call": "is-valid-openai-function-call (legacy OpenAI functions) has no scoreboard "
                                     "equivalent",
    "trace-span-count": "trace-span-count reads OpenTelemetry traces, which scoreboard does not collect",
    "trace-span-duration": "trace-span-duration reads OpenTelemetry traces, which scoreboard does not collect",
    "trace-error-spans": "trace-error-spans reads OpenTelemetry traces, which scoreboard does not collect",
    "max-score": "max-score compares the outputs of every prompt and provider for a test; scoreboard grades each "
                 "attempt on its own",
    "tool-call-f1": "tool-call-f1 has no scoreboard equivalent",
    "webhook": "webhook posts the output to a URL at grading time; not converted",
    "ruby": "ruby assertions are not converted",
}
