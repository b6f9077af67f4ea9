"""Second probe of the importers from outside: real promptfoo shapes (its own examples/ folder)
whose conversion differed from what promptfoo does, each test naming the promptfoo source it
follows (promptfoo 0.121: src/prompts/processors/*.ts, src/csv.ts, util/config/load.ts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from scoreboard.errors import ConfigError

from scoreboard.importers.promptfoo import import_promptfoo


def _pf(tmp_path: Path, config: str, files: dict[str, str] | None = None, **kw) -> tuple[list[dict], object]:
    for rel, text in (files or {}).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    out, report = import_promptfoo(str(tmp_path / "promptfooconfig.yaml"), str(tmp_path / "out"), **kw)
    cases = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    return cases, report


def _suite(tmp_path: Path) -> dict:
    return yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())


# ---- prompts from files (src/prompts/index.ts processPrompt, by extension)

def test_csv_prompt_file_is_a_prompt_per_row_named_by_label(tmp_path):
    # examples/csv-prompts: processCsvPrompts reads the `prompt` column, the `label` names it
    csv_text = 'prompt,label\n"Tell me about {{topic}}","Basic Query"\n"Poem on {{topic}}",Poetry\n'
    _, report = _pf(tmp_path, "prompts: [file://prompts.csv]\nproviders: [echo]\ntests: [{vars: {topic: x}}]\n",
                    {"prompts.csv": csv_text})
    assert _suite(tmp_path)["prompts"] == {"Basic Query": "Tell me about {{ (topic) | js }}",
                                           "Poetry": "Poem on {{ (topic) | js }}"}
    assert not report.left_out


def test_csv_prompt_file_without_commas_is_a_prompt_per_line(tmp_path):
    _pf(tmp_path, "prompts: [file://p.csv]\nproviders: [echo]\n", {"p.csv": "prompt\nHi {{a}}\n\nBye {{a}}\n"})
    assert list(_suite(tmp_path)["prompts"].values()) == ["Hi {{ (a) | js }}", "Bye {{ (a) | js }}"]


def test_jsonl_prompt_file_is_a_chat_prompt_per_line(tmp_path):
    lines = ('[{"role": "system", "content": "Be brief"}, {"role": "user", "content": "{{q}}"}]\n'
             '[{"role": "user", "content": "Say {{q}}"}]\n')
    _pf(tmp_path, "prompts: [file://chats.jsonl]\nproviders: [openai:chat:gpt-4o-mini]\n", {"chats.jsonl": lines})
    prompts = _suite(tmp_path)["prompts"]
    assert list(prompts.values()) == [
        [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "{{ (q) | js }}"}],
        [{"role": "user", "content": "Say {{ (q) | js }}"}]]


def test_an_unknown_prompt_file_is_listed_not_sent_as_text(tmp_path):
    # processPrompt: other extensions give no prompt
    _, report = _pf(tmp_path, "prompts: [file://notes.prompt, 'plain {{x}}']\nproviders: [echo]\n",
                    {"notes.prompt": "not a kind of file promptfoo reads"})
    assert "not a kind" not in (tmp_path / "out" / "suite.yaml").read_text()
    assert _suite(tmp_path)["prompt"] == "plain {{ (x) | js }}"
    assert any(item.startswith("prompts.0") for item in report.left_out)


@pytest.mark.parametrize("prompt", ["file://make_prompt.sh", "'exec:./make_prompt.sh'"])
def test_a_script_prompt_is_run_not_sent_as_its_text(tmp_path, prompt):
    # processPrompt: scripts are run (processExecutableFile): a prompt function calling the copied
    # script (tests/test_import_promptfoo_prompt_fn.py runs them), never the script's own text
    _pf(tmp_path, f"prompts: [{prompt}, 'plain {{{{x}}}}']\nproviders: [echo]\n",
        {"make_prompt.sh": "#!/bin/sh\necho hi\n"})
    assert "echo hi" not in (tmp_path / "out" / "suite.yaml").read_text()
    prompts = _suite(tmp_path)["prompts"]
    assert list(prompts.values()) == [{"python": "promptfoo_prompt_functions:prompt_1", "timeout_s": 90},
                                      "plain {{ (x) | js }}"]
    assert (tmp_path / "out" / "make_prompt.sh").read_text() == "#!/bin/sh\necho hi\n"


def test_prompt_config_is_listed_not_dropped(tmp_path):
    # examples/f-score: a prompt's own `config` (response_format) changes what the provider is sent
    _, report = _pf(tmp_path, "prompts: [{raw: 'Rate {{t}}', label: r, config: {response_format: {type: json_object}}}]\n"
                              "providers: [echo]\n")
    assert any(item.startswith("prompts.0.config") for item in report.left_out)


# ---- tests from CSV (src/csv.ts testCaseFromCsvRow, parseCsvRows: csv-parse with `columns: true`)

CSV_CONFIG = "prompts: ['{{out}}']\nproviders: [echo]\ntests: file://tests.csv\n"


@pytest.mark.parametrize("text, line", [
    ("out,__expected\nyes,yes\nno\n", 3),            # a short row: csv-parse's Invalid Record Length
    ("out,__expected\nyes,yes,extra\n", 2),          # a long row (was a var named "")
    ("out,__expected\nyes,yes\n\nno,no\n", 3),       # a blank line is a row of one cell
    ('out,__expected\n"a\nb",x\nyes,"never closed\n', 4),  # a quote never closed; lines counted in cells
])
def test_malformed_tests_csv_is_one_error_naming_the_line(tmp_path, text, line):
    (tmp_path / "tests.csv").write_text(text)
    (tmp_path / "promptfooconfig.yaml").write_text(CSV_CONFIG)
    with pytest.raises(ConfigError) as err:
        import_promptfoo(str(tmp_path / "promptfooconfig.yaml"), str(tmp_path / "out"))
    assert f"tests.csv:{line}" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


def test_csv_case_source_line_counts_multiline_cells(tmp_path):
    cases, _ = _pf(tmp_path, CSV_CONFIG, {"tests.csv": 'out,__expected\n"two\nlines",x\nthird,y\n'})
    assert [c["metadata"]["promptfoo_source"] for c in cases] == ["tests.csv:2", "tests.csv:4"]


def test_csv_config_threshold_column_sets_that_assertions_threshold(tmp_path):
    # examples/config-csv-metadata: __config:__expected2:threshold is the second assertion's threshold
    text = "out,__expected1,__expected2,__config:__expected2:threshold\nxy,contains:x,similar:hello,0.5\n"
    cases, report = _pf(tmp_path, CSV_CONFIG, {"tests.csv": text})
    assert cases[0]["graders"][1] == {"similar": {"value": "hello", "threshold": 0.5}}  # not the default 0.8
    assert cases[0]["metadata"]["threshold"] == 0.5
    assert not report.left_out


@pytest.mark.parametrize("column, cell", [("__config:__expected0:threshold", "1"),
                                          ("__config:__expected:weight", "1"),
                                          ("__config:__expected:threshold", "high")])
def test_csv_config_column_promptfoo_throws_on_is_an_error(tmp_path, column, cell):
    (tmp_path / "tests.csv").write_text(f"out,__expected,{column}\nx,x,{cell}\n")
    (tmp_path / "promptfooconfig.yaml").write_text(CSV_CONFIG)
    with pytest.raises(ConfigError, match="tests.csv:2"):
        import_promptfoo(str(tmp_path / "promptfooconfig.yaml"), str(tmp_path / "out"))


def test_csv_contains_any_value_is_parsed_as_promptfoo_parses_it(tmp_path):
    # parseCommaSeparatedAssertionValues: a quoted field keeps its comma, empty fields are dropped
    text = 'out,__expected\n"a, b here","contains-any:""a, b"",zz,,"\n'
    cases, _ = _pf(tmp_path, CSV_CONFIG, {"tests.csv": text})
    assert cases[0]["graders"] == [{"contains": {"patterns": ["a, b", "zz"], "mode": "any"}}]


def test_csv_blank_or_garbage_threshold_is_unset_and_provider_output_is_listed(tmp_path):
    # parseFiniteNumber: a blank or non-numeric __threshold leaves the test without one;
    # __providerOutput replaces the provider's answer, which a suite cannot do: listed
    text = "out,__expected,__threshold,__providerOutput\nx,x,,\ny,y, abc ,canned answer\n"
    cases, report = _pf(tmp_path, CSV_CONFIG, {"tests.csv": text})
    assert all("threshold" not in c for c in cases)
    assert report.left_out == ["tests.csv:3.providerOutput: not converted"]


# ---- $ref (util/config/load.ts dereferenceConfig: $RefParser.dereference)

def test_ref_to_assertion_template_is_followed(tmp_path):
    # examples/simple-test: `- $ref: '#/assertionTemplates/containsPirateNoise'`
    config = ("prompts: ['{{x}}']\nproviders: [echo]\n"
              "assertionTemplates:\n  pirate: {type: icontains, value: arrr}\n  'a/b~c': {type: contains, value: z}\n"
              "tests:\n  - vars: {x: Arrr}\n    assert:\n      - $ref: '#/assertionTemplates/pirate'\n"
              "      - {$ref: '#/assertionTemplates/a~1b~0c', metric: extended}\n")
    cases, report = _pf(tmp_path, config)
    graders = cases[0]["graders"]
    assert graders[0] == {"contains": {"patterns": ["arrr"], "ignore_case": True, "fold": "lower", "mode": "all"}}
    assert graders[1]["metric"] == "extended" and graders[1]["contains"]["patterns"] == ["z"]
    assert not report.left_out


def test_ref_into_a_file_of_the_folder(tmp_path):
    cases, _ = _pf(tmp_path, "prompts: ['{{x}}']\nproviders: [echo]\ntests:\n  - vars: {x: a}\n"
                             "    assert: [{$ref: 'shared/asserts.yaml#/0'}]\n",
                   {"shared/asserts.yaml": "- {$ref: '#/1'}\n- {type: equals, value: a}\n"})
    assert cases[0]["expected"] == "a"


@pytest.mark.parametrize("ref, message", [
    ("'#/assertionTemplates/missing'", "names nothing"),
    ("'#/tests/0/assert/0'", "cycle"),
    ("'https://example.com/a.yaml#/x'", "URL"),
    ("'../outside.yaml#/x'", "out of"),
])
def test_bad_ref_is_one_error(tmp_path, ref, message):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "outside.yaml").write_text("x: {type: equals, value: secret}\n")
    (tmp_path / "cfg" / "promptfooconfig.yaml").write_text(
        f"prompts: [x]\nproviders: [echo]\nassertionTemplates: {{}}\ntests:\n  - assert: [{{$ref: {ref}}}]\n")
    with pytest.raises(ConfigError, match=message) as err:
        import_promptfoo(str(tmp_path / "cfg" / "promptfooconfig.yaml"), str(tmp_path / "out"))
    assert "\n" not in str(err.value) and not (tmp_path / "out").exists()


def test_refs_that_expand_exponentially_are_refused(tmp_path):
    # ten references to a list of ten references to ...: 10**9 values from a few lines
    levels = ["  l0: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i in range(1, 10):
        levels.append(f"  l{i}: [" + ", ".join([f"{{$ref: '#/x/l{i - 1}'}}"] * 10) + "]")
    (tmp_path / "promptfooconfig.yaml").write_text("prompts: [x]\nproviders: [echo]\nx:\n" + "\n".join(levels)
                                                  + "\ntests: [{vars: {big: {$ref: '#/x/l9'}}}]\n")
    with pytest.raises(ConfigError, match="expand the config past"):
        import_promptfoo(str(tmp_path / "promptfooconfig.yaml"), str(tmp_path / "out"))


def test_tool_parameter_schemas_keep_their_refs(tmp_path):
    config = ("prompts: [x]\nproviders:\n  - id: openai:chat:gpt-4o-mini\n    config:\n      tools:\n"
              "        - type: function\n          function:\n            name: f\n            parameters:\n"
              "              type: object\n              properties: {a: {$ref: '#/$defs/A'}}\n"
              "              $defs: {A: {type: string}}\ntests: [{vars: {}}]\n")
    _pf(tmp_path, config)
    assert "$ref" in (tmp_path / "out" / "suite.yaml").read_text()


def test_prompts_mapping_is_prompt_to_label(tmp_path):
    # normalizeInput: `prompts: {file://a.txt: Greeting, 'Inline {{x}}': Inline}`
    _, report = _pf(tmp_path, "prompts:\n  file://a.txt: Greeting\n  'Inline {{x}}': Inline\nproviders: [echo]\n",
                    {"a.txt": "Hello {{x}}\n"})
    assert _suite(tmp_path)["prompts"] == {"Greeting": "Hello {{ (x) | js }}", "Inline": "Inline {{ (x) | js }}"}
    assert not report.left_out


# ---- OpenAI Evals: gzipped samples are unpacked bounded; refusals name no flag the command lacks

def _evals_registry(tmp_path: Path, samples: str) -> Path:
    (tmp_path / "evals").mkdir(exist_ok=True)
    (tmp_path / "data").mkdir(exist_ok=True)
    registry = tmp_path / "evals" / "a.yaml"
    registry.write_text(f"a:\n  id: a.dev.v0\na.dev.v0:\n  class: evals.elsuite.basic.match:Match\n"
                        f"  args: {{samples_jsonl: '{samples}'}}\n")
    return registry


def test_gzip_samples_that_unpack_past_the_file_limit_are_refused(tmp_path):
    import gzip

    from scoreboard.importers.openai_evals import import_openai_evals
    from scoreboard.safefile import DEFAULT_MAX_FILE_BYTES

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "bomb.jsonl.gz").write_bytes(gzip.compress(b" " * (DEFAULT_MAX_FILE_BYTES + 10)))
    with pytest.raises(ConfigError, match="unpacks to more than") as err:
        import_openai_evals(str(_evals_registry(tmp_path, "bomb.jsonl.gz")), str(tmp_path / "out"))
    assert "bomb.jsonl.gz" in str(err.value)


def test_gzip_samples_within_the_limit_still_read(tmp_path):
    import gzip

    from scoreboard.importers.openai_evals import import_openai_evals

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "s.jsonl.gz").write_bytes(gzip.compress(b'{"input": "Say hi", "ideal": "hi"}\n'))
    out, _ = import_openai_evals(str(_evals_registry(tmp_path, "s.jsonl.gz")), str(tmp_path / "out"))
    assert json.loads((out / "cases.jsonl").read_text().splitlines()[0])["expected"] == "hi"


def test_import_refusals_do_not_suggest_a_root_flag(tmp_path):
    from scoreboard.importers.openai_evals import import_openai_evals

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "link.jsonl").symlink_to("/etc/passwd")
    _, report = import_openai_evals(str(_evals_registry(tmp_path, "link.jsonl")), str(tmp_path / "out"))
    assert "symlink" in report.left_out[0] and "--root" not in report.left_out[0]
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "p.txt").symlink_to("/etc/passwd")
    with pytest.raises(ConfigError) as err:
        _pf(tmp_path / "pf", "prompts: [file://p.txt]\nproviders: [echo]\n")
    assert "symlink" in str(err.value) and "--root" not in str(err.value)


def test_import_csv_input_file_refusal_names_no_root_flag(tmp_path):
    from scoreboard.cases.csv_import import import_csv, parse_map

    (tmp_path / "doc.txt").symlink_to("/etc/passwd")
    (tmp_path / "s.csv").write_text('doc,fixed\n@doc.txt,"{""a"": 1}"\n')
    with pytest.raises(ConfigError) as err:
        import_csv(tmp_path / "s.csv", tmp_path / "cases.jsonl", parse_map("input=doc,expected=fixed"))
    assert "symlink" in str(err.value) and "--root" not in str(err.value)
    assert not (tmp_path / "cases.jsonl").exists()


def test_csv_cells_longer_than_the_csv_modules_default_limit_are_read(tmp_path):
    big = "w " * 100_000  # 200 KB: over Python's 128 KiB field limit, a document promptfoo reads
    cases, _ = _pf(tmp_path, CSV_CONFIG, {"tests.csv": f'out,__expected\n"{big}",x\n'})
    assert cases[0]["vars"]["out"] == big
    (tmp_path / "p").mkdir()
    _pf(tmp_path / "p", "prompts: [file://p.csv]\nproviders: [echo]\n",
        {"p.csv": f'prompt,label\n"{big}{{{{a}}}}",big\n'})
    assert _suite(tmp_path / "p")["prompt"].startswith("w w ")  # one prompt, not a line per row


# ---- providers from files (src/providers/index.ts loadApiProviders, loadProvidersFromFile)

def test_providers_from_config_files(tmp_path):
    files = {"providers.yaml": "- id: openai:chat:gpt-4o-mini\n  config: {temperature: 0}\n- echo\n",
             "one.json": '{"id": "openai:chat:gpt-4o", "label": "big"}'}
    _, report = _pf(tmp_path, "prompts: [x]\nproviders: [file://one.json, file://providers.yaml]\n", files)
    variants = _suite(tmp_path)["variants"]
    assert variants == {"big": {"subject": {"type": "openai", "model": "gpt-4o"}},
                        "openai-chat-gpt-4o-mini": {"subject": {"type": "openai", "model": "gpt-4o-mini",
                                                                "params": {"temperature": 0}}},
                        "echo": {"subject": {"type": "mock"}}}
    assert not report.left_out
    (tmp_path / "whole").mkdir()
    _pf(tmp_path / "whole", "prompts: [x]\nproviders: file://providers.yaml\n", {"providers.yaml": "- echo\n"})
    assert _suite(tmp_path / "whole")["variants"] == {"echo": {"subject": {"type": "mock"}}}


def test_provider_file_outside_the_folder_is_refused(tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "p.yaml").write_text("id: echo\n")
    (tmp_path / "cfg" / "promptfooconfig.yaml").write_text("prompts: [x]\nproviders: [file://../p.yaml]\n")
    with pytest.raises(ConfigError, match="out of"):
        import_promptfoo(str(tmp_path / "cfg" / "promptfooconfig.yaml"), str(tmp_path / "out"))


# ---- a test's vars from files; $refs inside tests files (loadTestWithVars, loadTestsFromGlob)

def test_test_vars_named_as_files_are_merged_not_a_crash(tmp_path):
    # readTestFiles: plain paths (globs) merged in order; `file://x` resolves to no file (promptfoo
    # 0.121 shows empty vars for it), which the import reproduces and notes (it crashed before)
    config = ("prompts: ['{{a}}-{{b}}']\nproviders: [echo]\ntests:\n"
              "  - {description: plain, vars: [vars1.yaml, vars2.yaml]}\n"
              "  - {description: one, vars: vars1.yaml}\n"
              "  - {description: prefixed, vars: file://vars1.yaml}\n"
              "defaultTest: {vars: [vars2.yaml]}\n")
    cases, report = _pf(tmp_path, config, {"vars1.yaml": "a: 1\nb: 2\n", "vars2.yaml": "b: 3\n"})
    assert [c["vars"] for c in cases] == [{"a": 1, "b": 3}, {"a": 1, "b": 2}, {"b": 3}]
    assert any("file://vars1.yaml" in n for n in report.notes)


def test_test_vars_file_that_is_not_a_mapping_is_one_error(tmp_path):
    with pytest.raises(ConfigError, match="no mapping of vars"):
        _pf(tmp_path, "prompts: [x]\nproviders: [echo]\ntests: [{vars: v.yaml}]\n", {"v.yaml": "- 1\n"})


def test_refs_inside_a_tests_file_resolve_against_that_file(tmp_path):
    tests_yaml = ("- vars: {a: x}\n  assert: [{$ref: '#/1/assert/0'}]\n"
                  "- vars: {a: q}\n  assert: [{type: contains, value: q}]\n")
    lines = '{"vars": {"a": "z"}, "assert": [{"$ref": "#/1/assert/0"}]}\n{"assert": [{"type": "icontains", "value": "Z"}]}\n'
    cases, _ = _pf(tmp_path, "prompts: ['{{a}}']\nproviders: [echo]\ntests: [file://sub/t.yaml, file://l.jsonl]\n",
                   {"sub/t.yaml": tests_yaml, "l.jsonl": lines})
    assert cases[0]["graders"] == cases[1]["graders"] == [{"contains": {"patterns": ["q"], "mode": "all"}}]
    assert cases[2]["graders"][0]["contains"]["patterns"] == ["Z"]


# ---- shapes promptfoo's TestCase schema refuses: one error, not an internal error or a wrong suite

@pytest.mark.parametrize("test, field", [
    ("{vars: {x: 1}, assert: {type: equals, value: 1}}", "tests.0.assert"),  # was equals 'type', equals 'value'
    ("{vars: {x: 1}, assert: 'contains: 1'}", "tests.0.assert"),  # was an equals per character
    ("{vars: {x: 1}, metadata: [1, 2]}", "tests.0.metadata"),     # was an internal error
    ("{vars: {x: 1}, options: [1]}", "tests.0.options"),          # was an internal error
])
def test_malformed_test_fields_are_one_error(tmp_path, test, field):
    with pytest.raises(ConfigError) as err:
        _pf(tmp_path, f"prompts: ['{{{{x}}}}']\nproviders: [echo]\ntests: [{test}]\n")
    assert f"field '{field}'" in str(err.value)


def test_malformed_default_test_options_is_one_error(tmp_path):
    with pytest.raises(ConfigError, match="field 'defaultTest.options'"):
        _pf(tmp_path, "prompts: [x]\nproviders: [echo]\ndefaultTest: {options: x}\ntests: [{vars: {}}]\n")


def test_provider_config_that_is_not_a_mapping_is_listed(tmp_path):
    _, report = _pf(tmp_path, "prompts: [x]\nproviders: [{id: 'openai:chat:m', config: [1]}, echo]\n")
    assert report.left_out[0].startswith("providers.0: a provider is")


@pytest.mark.parametrize("modifier", ["weight: a", "weight: -1", "metric: {a: 1}"])
def test_assertion_weight_or_metric_the_suite_cannot_load_is_listed(tmp_path, modifier):
    # the suite would fail to load (graders: 'weight' is a number >= 0); the import said "everything converted"
    cases, report = _pf(tmp_path, f"prompts: ['{{{{x}}}}']\nproviders: [echo]\n"
                                  f"tests: [{{vars: {{x: 1}}, assert: [{{type: contains, value: 1, {modifier}}}]}}]\n")
    assert cases[0]["graders"] == []
    assert report.left_out[0].startswith("tests.0.assert.0 (contains): ")


@pytest.mark.parametrize("line, message", [
    ('{"input": "q\\ud800", "ideal": "x"}', "lone surrogate"),            # was UnicodeEncodeError, exit 2
    ('{"input": ' + "[" * 5000 + "]" * 5000 + ', "ideal": "x"}', "nested too deeply"),  # was RecursionError
    ('{"input": "q", "ideal": ' + "9" * 5000 + "}", "not JSON"),            # int too long: no .msg
])
def test_samples_no_case_file_can_hold_are_one_error_naming_the_line(tmp_path, line, message):
    from scoreboard.importers.openai_evals import import_openai_evals

    registry = _evals_registry(tmp_path, "s.jsonl")
    (tmp_path / "data" / "s.jsonl").write_text('{"input": "ok", "ideal": "ok"}\n' + line + "\n")
    with pytest.raises(ConfigError, match=message) as err:
        import_openai_evals(str(registry), str(tmp_path / "out"))
    assert "s.jsonl:2" in str(err.value) and not (tmp_path / "out").exists()


def test_samples_file_that_is_a_git_lfs_pointer_says_so(tmp_path):
    # every data file of github.com/openai/evals is in Git LFS: a clone without git-lfs has pointers
    from scoreboard.importers.openai_evals import import_openai_evals

    registry = _evals_registry(tmp_path, "s.jsonl")
    (tmp_path / "data" / "s.jsonl").write_text("version https://git-lfs.github.com/spec/v1\n"
                                               "oid sha256:8d25\nsize 3852\n")
    # the data is not there (not malformed): the entry is listed, naming the file, and the import goes on
    _, report = import_openai_evals(str(registry), str(tmp_path / "out"))
    assert len(report.left_out) == 1 and "Git LFS pointer" in report.left_out[0], report.left_out
    assert report.left_out[0].startswith("a.dev.v0: samples_jsonl ") and "s.jsonl" in report.left_out[0]
