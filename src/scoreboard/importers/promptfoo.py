"""`scoreboard import promptfoo promptfooconfig.yaml --output DIR`: a promptfoo config as a
scoreboard suite (DIR/suite.yaml, DIR/cases.jsonl, copied files, DIR/conversion-report.md).

Prompts become templates (Nunjucks converted to Jinja2), providers become variants, tests
(inline, CSV, JSON, JSONL, YAML, globs) become cases with their vars expanded as promptfoo's
generateVarCombinations does (a list of strings is one case per value, crossed with every other
such list), defaultTest is merged into each test as promptfoo's evaluator merges it, and each
assertion becomes grader specs (promptfoo_asserts.py). Nothing is run and no model is called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from . import promptfoo_chatcase as chat_case, promptfoo_vars as pf_vars
from .common import Report, jsonl, read_config, slug, write_output
from .jsonref import dereference
from .promptfoo_assert_code import runtime_spec
from .promptfoo_asserts import PYTHON_HEADER, Context, RowError, Skip, assert_set, convert, transform_spec
from .promptfoo_derived import declared_metrics, derived_metrics
from .promptfoo_env import EnvTags
from .promptfoo_chat import chat_parsed, messages_as_text
from .promptfoo_prompt_fn import prompt_functions
from .promptfoo_prompts import prompts as convert_prompts
from .promptfoo_providers import convert_providers, prompt_pairs, provider_subject
from .promptfoo_scenarios import scenario_tests
from .promptfoo_settings import run_settings
from .promptfoo_tests import assertion_from_string, check_modifiers, check_shape, test_vars
from .promptfoo_testfiles import load_default, read_tests
from .promptfoo_testopts import affix as test_affix, listed as listed_options, repeat as test_repeat
from .promptfoo_transforms import transform_vars

_KNOWN_KEYS = {"description", "prompts", "providers", "tests", "defaultTest", "derivedMetrics", "outputPath",
               "sharing", "env", "evaluateOptions", "writeLatestResults", "metadata", "tags",
               "assertionTemplates", "scenarios"}  # the $ref targets, already in place
#: test options read while converting (others are listed); runSerially changes no result
_OPTIONS = {"prefix", "suffix", "provider", "rubricPrompt", "transformVars", "transform", "postprocess",
            "disableVarExpansion", "disableDefaultAsserts", "storeOutputAs", "factuality", "runSerially", "repeat"}


def import_promptfoo(config_path: str, out_dir: str, *, run_code: bool = False) -> tuple[Path, Report]:
    """Convert the config; write DIR; return (DIR, the conversion report). Nothing the config
    names is executed unless `run_code` (its transformVars)."""
    data, source = read_config(config_path)
    if not isinstance(data, dict):
        raise source.error("a promptfoo config is a mapping")
    data = dereference(data, source)  # dereferenceConfig: $ref JSON pointers (assertionTemplates)
    report = Report(config_path)
    env_tags = EnvTags(data, source, report)
    data = env_tags.config(data)  # readConfig: {{ env.NAME }} rendered from the config's env
    if data.get("targets"):  # src/util/config/load.ts: config.targets is rewritten to config.providers
        if data.get("providers"):
            report.note("providers: replaced by targets, as promptfoo replaces them")
        data = {**{k: v for k, v in data.items() if k != "targets"}, "providers": data["targets"]}
    for key in sorted(set(data) - _KNOWN_KEYS):
        report.skip(key, "this setting is not converted")
    ctx = Context(source, report, run_code=run_code)
    suite: dict[str, Any] = {"name": slug(str(data.get("description") or Path(config_path).parent.name or "promptfoo")),
                             "cases": "cases.jsonl"}
    run_settings(data, suite, report)  # evaluateOptions.repeat is the suite's runs
    if data.get("description"):
        suite["description"] = str(data["description"])
    default = data.get("defaultTest") or {}
    if isinstance(default, str):
        default = env_tags.walk(load_default(default, source), default)
    if not isinstance(default, dict):
        raise source.error("defaultTest is a mapping", "defaultTest")
    if default.get("provider") is not None:  # evaluator.ts: testCase.provider ||= defaultTest.provider
        report.skip("defaultTest.provider", "not converted: promptfoo runs every test without a provider of its own "
                    "on this provider, not on the config's providers")
    # evaluator.ts: the tests, else (no scenarios) one empty test; then every scenario's tests
    tests = read_tests(data.get("tests"), source, report, env=env_tags.walk, top=True) if data.get("tests") else []
    if data.get("scenarios") is not None:
        tests += scenario_tests(data["scenarios"], default, source, report,
                                lambda value, where: read_tests(value, source, report, where, env_tags.walk))
    elif not tests:
        tests = [("tests", {})]
    affix = test_affix(tests, default, report)  # options.prefix/suffix around every prompt; repeat the runs
    test_repeat(tests, default, suite, report)
    json_prompts: dict[str, Any] = {}
    message_prompts: dict[str, Any] = {}
    prompts = convert_prompts(data.get("prompts"), source, report, json_prompts, env_tags.walk, message_prompts,
                              affix)
    identities: dict[str, dict] = {}
    variants, judge = convert_providers(data.get("providers"), source, report, ctx.copied, env_tags, identities)
    ctx.variants = variants  # is-valid-openai-function-call reads the functions each provider offers
    built = prompt_functions(prompts, identities, source, report, ctx.copied)  # file://prompt.py:fn
    chat_parsed(prompts, json_prompts, variants, report)
    messages_as_text(prompts, json_prompts, message_prompts, variants, report)
    # renderPrompt renders the vars first for each text prompt, not for one whose raw text JSON.parse
    # reads (chat messages, a JSON value; `- role:` YAML is text): per prompt
    json_names = tuple(k for k, v in prompts.items() if isinstance(v, list) or (
        isinstance(json_prompts.get(k), str) and not json_prompts[k].startswith("YAML")))
    ctx.text_prompts = len(json_names) < len(prompts) - built  # a function's text is known only as it runs
    ctx.json_prompts = json_names if ctx.text_prompts else ()
    ctx.prompt_names = pf_vars.names_printed(prompts.values())
    ctx.chat_rows = chat_case.setup(prompts, json_names, variants)  # a case's vars may make a prompt JSON
    if len(prompts) == 1:
        suite["prompt"] = next(iter(prompts.values()))
    elif prompts:
        suite["prompts"] = prompts
    suite.update({"template_undefined": "empty"} if prompts else {})  # Nunjucks': undefined prints nothing
    paired = prompt_pairs(prompts, variants, report)
    if paired is not None:  # a provider runs only some prompts: each pair is a variant
        suite.pop("prompt", None)
        suite.pop("prompts", None)
        variants = paired
        ctx.variants = variants  # the copies the cases run on (perplexity asks them for logprobs)
    suite["variants"] = variants
    cases = _cases(tests, default, ctx)
    env_tags.finish()
    if ctx.judged or ctx.select_best:  # pairwise judging needs the judge too
        suite["judge"] = _judge(default, judge, report)
    if ctx.select_best:
        suite["pairwise"] = {"rubric": ctx.select_best[0]}
        report.note("select-best: converted to pairwise judging of every pair of variants (both orders), "
                    "a comparison in the report rather than a grade on each case")
        if len(set(ctx.select_best)) > 1:
            report.skip("select-best", "several different select-best criteria: only the first is used")
    derived = derived_metrics(data.get("derivedMetrics"), report, declared_metrics(cases))
    if derived:
        suite["derived_metrics"] = derived
    if any(_uses_code(c) for c in cases):
        suite["allow_case_code"] = True  # the cases name the converted python/javascript assertions
    files: dict[str, str | bytes] = {"suite.yaml": _yaml(suite), "cases.jsonl": jsonl(cases)}
    if ctx.python:
        files["promptfoo_asserts.py"] = PYTHON_HEADER + "\n\n" + "\n\n".join(ctx.python)
    for rel, text in ctx.copied.items():
        if rel in files:  # a file the config names must not replace what the import writes
            report.skip(rel, "a file the config names has the name of a file the import writes: not copied")
            continue
        files[rel] = text
    report.counts.update({"prompts": len(prompts), "variants": len(variants), "cases": len(cases),
                          "graders": sum(len(c.get("graders") or []) for c in cases)})
    files["conversion-report.md"] = report.text()
    return write_output(out_dir, files), report


def _yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100)


def _uses_code(case: dict) -> bool:
    """Whether the case's graders or transform run code (then the suite sets allow_case_code)."""
    from ..graders.code import code_spec

    return code_spec(case.get("graders") or []) or code_spec(case.get("transform"))


def _cases(tests: list[tuple[str, dict]], default: dict, ctx: Context) -> list[dict]:
    cases: list[dict] = []
    taken: set[str] = set()
    for index, (where, test) in enumerate(tests):
        if not isinstance(test, dict):
            ctx.report.skip(where, "a test is a mapping")
            continue
        check_shape(default, "defaultTest", ctx.source)
        check_shape(test, where, ctx.source)
        merged_vars = {**test_vars(default.get("vars"), ctx.source, ctx.report, "defaultTest.vars"),
                       **test_vars(test.get("vars"), ctx.source, ctx.report, f"{where}.vars")}
        options = {**(default.get("options") or {}), **(test.get("options") or {})}
        asserts = ([] if options.get("disableDefaultAsserts") else list(default.get("assert") or [])) + \
            list(test.get("assert") or [])
        listed_options(test, default, options, where, ctx.report)  # providers, prompts, rubricPrompt
        # defaultTest's grading provider becomes the suite's judge (_judge); a test's own other one
        # would grade that test alone, which one suite judge cannot
        own = (test.get("options") or {}).get("provider")
        if own is not None and own != (default.get("options") or {}).get("provider"):
            ctx.report.skip(f"{where}.options.provider", "not converted: this test's own grading provider "
                            "(the suite's one judge grades every case)")
        for key in sorted(set(options) - _OPTIONS):
            ctx.report.skip(f"{where}.options.{key}", "this test option is not converted")
        ctx.grading = options
        # evaluator.ts: transformVars (the test's, else defaultTest's) runs once per test on the
        # merged vars before they are expanded, its result merged over them
        var_transform = (test.get("options") or {}).get("transformVars") or \
            (default.get("options") or {}).get("transformVars")
        if var_transform and not ctx.run_code:
            # A shared config is data: its code runs only when the user asks (--run-code). The
            # case keeps the vars as written, and the report lists the transform.
            ctx.report.skip(f"{where}.options.transformVars", "code from the config, not run while importing "
                            "(import with --run-code to run it); the case keeps its vars as written")
        elif var_transform:
            try:
                merged_vars = transform_vars(var_transform, merged_vars, ctx, f"{where}.options.transformVars")
            except Skip as exc:
                ctx.report.skip(f"{where}.options.transformVars", str(exc))
                continue
        # file:// vars are globbed and expanded here, loaded per combination (renderPrompt)
        combos = pf_vars.combinations(merged_vars, ctx.source, where, expand=not options.get("disableVarExpansion"))
        try:
            loaded = [(pf_vars.load(combo, ctx.source, where), labels) for combo, labels in combos]
        except Skip as exc:
            ctx.report.skip(where, str(exc))
            continue
        # evaluator.ts: the first of options.transform and (deprecated) options.postprocess runs
        # on the provider's output before every assertion
        output_transform = options.get("transform") or options.get("postprocess")
        case_transform = None
        if output_transform:
            try:
                case_transform = transform_spec(output_transform, ctx, f"{where}.options.transform", "test")
            except Skip as exc:
                ctx.report.skip(f"{where}.options.transform", str(exc))
                continue
        for extra in ("providerOutput", "scenarios", "provider"):
            if test.get(extra) is not None:
                ctx.report.skip(f"{where}.{extra}", "not converted")
        if test.get("assertScoringFunction") or default.get("assertScoringFunction"):
            ctx.report.skip(f"{where}.assertScoringFunction", "not converted: the assertions decide the case by "
                            "promptfoo's own rule (a scoring function can be set as the case's `scoring`)")
        if options.get("storeOutputAs"):
            ctx.report.skip(f"{where}.options.storeOutputAs", "not converted: a later test's var naming "
                            f"{options['storeOutputAs']!r} is not filled with this test's output")
        base = slug(str(test["description"])) if test.get("description") else f"test-{index + 1}"
        for combo, labels in loaded:
            cid = base if len(loaded) == 1 else base + "[" + ",".join(labels) + "]"
            cid = _unique_id(cid, taken)
            if len(cases) >= pf_vars.MAX_CASES:
                raise ctx.source.error(f"the tests make more than {pf_vars.MAX_CASES} cases (limits.max_cases)", where)
            case = _case(cid, combo, asserts, test, default, where, ctx)
            if case_transform is not None:
                case["transform"] = case_transform
            cases.append(case)
    return cases


def _unique_id(cid: str, taken: set[str]) -> str:
    base, n = cid, 2
    while cid in taken:
        cid, n = f"{base}-{n}", n + 1
    taken.add(cid)
    return cid


def _case(cid: str, vars_: dict, asserts: list, test: dict, default: dict, where: str, ctx: Context) -> dict:
    case: dict[str, Any] = {"id": cid, "vars": vars_}
    graders: list = []
    expected: Any = None
    errors = False  # an assertion promptfoo's handler rejects: the row is an error
    metric = test.get("metric")
    for i, a in enumerate(asserts):
        if isinstance(a, str):
            a = assertion_from_string(a)
        spot = f"{where}.assert.{i}" + (f" ({a.get('type')})" if isinstance(a, dict) else "")
        if metric and isinstance(a, dict) and not a.get("metric"):
            a = {**a, "metric": metric}
        try:
            check_modifiers(a)
            spec, exp = assert_set(a, vars_, ctx, spot) if isinstance(a, dict) and a.get("type") == "assert-set" \
                else convert(a, vars_, ctx, spot)
        except Skip as exc:
            ctx.report.skip(spot, str(exc))
            continue
        except RowError as exc:
            graders.append(exc.spec)
            errors = True
            continue
        if spec is None:
            continue
        if exp is not None:
            if expected is not None:
                ctx.report.skip(spot, "a second equals assertion on one test (a case has one expected value)")
                continue
            expected = exp
        graders.append(spec)
    failed = pf_vars.render_error(vars_, where, ctx) or chat_case.check(vars_, where, ctx)
    if failed is not None:
        graders.append(failed)
        errors = True
    if expected is not None:
        case["expected"] = expected
    case["graders"] = graders
    threshold = test.get("threshold", default.get("threshold"))
    if threshold is not None and errors:
        ctx.report.note(f"{where}.threshold: dropped, as the test always fails (promptfoo errors its row)")
    elif threshold is not None:
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and 0 <= threshold <= 1:
            case["threshold"] = threshold
            _weightless(case, where, ctx)
        else:
            ctx.report.skip(f"{where}.threshold", f"{threshold!r} is not a number in [0, 1]")
    metadata = {**(default.get("metadata") or {}), **(test.get("metadata") or {})}
    if test.get("description"):
        metadata["description"] = str(test["description"])
    metadata["promptfoo_source"] = where
    case["metadata"] = metadata
    return case


def _weightless(case: dict, where: str, ctx: Context) -> None:
    """A threshold over assertions all of weight 0: promptfoo's score is 0 (no weight), so the test
    fails at any threshold above 0 and passes at 0; a scoreboard case has no score to compare."""
    counted = [g for g in case["graders"] if not (isinstance(g, dict) and isinstance(g.get("classify"), dict)
                                                  and g["classify"].get("record_only") is True)]
    if not counted or any(not isinstance(g, dict) or g.get("weight", 1) != 0 for g in counted):
        return
    threshold = case.pop("threshold")
    if threshold > 0:
        case["graders"].append(runtime_spec(ctx, f"_pf.fail({f'Aggregate score 0.00 < {threshold:g} threshold'!r})"))
    ctx.report.note(f"{where}.threshold: every assertion has weight 0, so promptfoo's score is 0 and the test "
                    + ("always fails (a grader that always fails)" if threshold > 0 else "always passes"))


def _judge(default: dict, provider_judge: Any, report: Report) -> Any:
    options = default.get("options") or {}
    provider = options.get("provider")
    if isinstance(provider, dict) and "id" not in provider and provider.get("text") is not None:
        provider = provider["text"]  # matchers getGradingProvider('text', ...): {text, embedding} by type
    if provider is not None:
        spec = provider_subject(provider)
        if spec is not None:
            return spec
        report.skip("defaultTest.options.provider", "this grading provider is not converted")
    report.note("judge: promptfoo's default grader is an OpenAI model; the suite's judge is set to OpenAI "
                "gpt-4.1 (OPENAI_API_KEY): change `judge:` to use another")
    return {"type": "openai", "model": "gpt-4.1"}
