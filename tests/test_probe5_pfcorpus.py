"""Shapes from promptfoo's own examples/ that the importer crashed on, refused or converted
against promptfoo's semantics (each config below is a small copy of the shape that broke; the
expected behaviour is taken from promptfoo's source, file named beside it)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import yaml

from scoreboard.importers.promptfoo import import_promptfoo


def _write(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return tmp_path / "promptfooconfig.yaml"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def _cases(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]


def test_a_metric_on_an_assertion_without_options_imports(tmp_path):
    # examples/named-metrics: `- type: is-json` with `metric:` crashed ('str' object does not
    # support item assignment, exit 2); promptfoo counts the score into the named metric
    _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['Say {{body}}']\nproviders: [echo]\ntests:\n"
                      "  - vars: {body: x}\n    assert:\n      - type: is-json\n        metric: Consistency\n"
                      "        weight: 2\n      - type: not-is-json\n        metric: Other\n"})
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    graders = _cases(tmp_path / "out")[0]["graders"]
    assert graders[0]["metric"] == "Consistency" and graders[0]["weight"] == 2 and "is-json" in graders[0]
    assert graders[1]["metric"] == "Other" and graders[1]["not"] == "is-json"
    assert _cli("validate", "out/suite.yaml", cwd=tmp_path).returncode == 0


def test_an_audio_file_var_is_base64_as_promptfoo_loads_it(tmp_path):
    # examples/openai-audio: src/evaluatorHelpers.ts renderPrompt loads image, video and audio
    # files (isAudioFile: wav, mp3, ...) as base64; the import refused 'not valid UTF-8'
    audio = b"RIFF\xff\xfe\x00WAVEfmt "
    config = _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['{{clip}}']\nproviders: [echo]\ntests:\n"
                               "  - vars: {clip: file://assets/a.wav}\n  - vars: {clip: file://assets/b.MP3}\n",
                               "assets/a.wav": audio, "assets/b.MP3": audio})
    import_promptfoo(str(config), str(tmp_path / "out"))
    assert [c["vars"]["clip"] for c in _cases(tmp_path / "out")] == [base64.b64encode(audio).decode()] * 2


def test_vars_files_of_a_tests_file_are_relative_to_that_file(tmp_path):
    # examples/separate-test-configs: tests/tests2.yaml holds `vars: ../vars/vars_*.yaml`;
    # src/util/testCaseReader.ts loadTestsFromGlob reads each test with readTest(test,
    # path.dirname(testFile)), so the path is the tests file's folder's, here inside the config's
    config = _write(tmp_path, {
        "promptfooconfig.yaml": "prompts: ['{{topic}} {{kind}}']\nproviders: [echo]\ntests: file://tests/t*.yaml\n",
        "tests/t.yaml": "- vars: ../vars/vars_*.yaml\n- vars: [here.yaml]\n",
        "tests/here.yaml": "topic: near\nkind: file\n",
        "here.yaml": "topic: WRONG\nkind: WRONG\n",
        "vars/vars_a.yaml": "topic: aliens\n", "vars/vars_b.yaml": "kind: tips\n"})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    assert [c["vars"] for c in _cases(tmp_path / "out")] == [{"topic": "aliens", "kind": "tips"},
                                                              {"topic": "near", "kind": "file"}]
    assert not report.left_out


def test_a_tests_file_var_path_that_leaves_the_config_folder_is_still_refused(tmp_path):
    config = _write(tmp_path / "c", {"promptfooconfig.yaml": "prompts: ['{{a}}']\nproviders: [echo]\n"
                                     "tests: file://tests/t.yaml\n", "tests/t.yaml": "- vars: ../../secret.yaml\n"})
    (tmp_path / "secret.yaml").write_text("a: secret\n")
    done = _cli("import", "promptfoo", str(config), "--output", "out", cwd=tmp_path)
    assert done.returncode == 1 and "leaves the config's folder" in done.stderr and "tests/t.yaml" in done.stderr
    assert not (tmp_path / "out").exists()


def test_targets_are_the_providers(tmp_path):
    # src/util/config/load.ts: `if (ret.targets) { ret.providers = ret.targets }` (red-team configs)
    config = _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['{{q}}']\ntargets:\n  - id: echo\n"
                               "    label: mine\nproviders: [openai:gpt-4o-mini]\ntests:\n  - vars: {q: hi}\n"})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert suite["variants"] == {"mine": {"subject": {"type": "mock"}}}
    assert not any(item.startswith("targets") for item in report.left_out)


def test_a_json_prompt_file_with_nunjucks_tags_outside_strings_is_listed_not_refused(tmp_path):
    # examples/multiple-turn-conversation, openai-chat-history: src/prompts/processors/json.ts
    # reads a .json prompt as its raw text ("We do not validate if this is a valid JSON file");
    # the rendered text becomes chat messages at run time. The import stopped with exit 1.
    config = _write(tmp_path, {
        "promptfooconfig.yaml": "prompts: [file://prompt.json, 'plain {{q}}']\nproviders: [echo]\n"
                                "tests:\n  - vars: {q: hi}\n",
        "prompt.json": '[\n  {% for m in history %}\n  {"role": "user", "content": "{{ m }}"},\n'
                       '  {% endfor %}\n  {"role": "user", "content": "{{ q }}"}\n]\n'})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    assert any(item.startswith("prompts.0") and "prompt.json" in item for item in report.left_out), report.left_out
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert "plain" in suite["prompt"]


def test_a_json_prompt_file_that_is_broken_json_without_templates_is_still_an_error(tmp_path):
    config = _write(tmp_path, {"promptfooconfig.yaml": "prompts: [file://p.json]\nproviders: [echo]\n",
                               "p.json": '[{"role": "user", "content": "x"},]\n'})
    done = _cli("import", "promptfoo", str(config), "--output", "out", cwd=tmp_path)
    assert done.returncode == 1 and "p.json" in done.stderr


def test_provider_tools_from_a_file_are_loaded(tmp_path):
    # examples/redteam-travel-agent: `config: {tools: file://tools.yaml}`; the openai provider
    # loads it (maybeLoadFromExternalFile); the import wrote the text, and the suite was invalid
    tools = [{"type": "function", "function": {"name": "book", "parameters": {"type": "object"}}}]
    config = _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['{{q}}']\nproviders:\n  - id: openai:gpt-4o-mini\n"
                               "    config: {tools: file://tools.yaml}\ntests:\n  - vars: {q: hi}\n",
                               "tools.yaml": yaml.safe_dump(tools)})
    import_promptfoo(str(config), str(tmp_path / "out"))
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert suite["variants"]["openai:gpt-4o-mini".replace(":", "-")]["subject"]["tools"] == tools


def test_anthropic_provider_tools_are_kept_not_silently_dropped(tmp_path):
    tools = [{"name": "book", "input_schema": {"type": "object"}}]
    config = _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['{{q}}']\nproviders:\n"
                               "  - id: anthropic:messages:claude-3-5-haiku-latest\n"
                               f"    config: {{tools: {json.dumps(tools)}}}\ntests:\n  - vars: {{q: hi}}\n"})
    import_promptfoo(str(config), str(tmp_path / "out"))
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    (variant,) = suite["variants"].values()
    assert variant["subject"]["tools"] == tools


def test_select_best_alone_gives_the_suite_a_judge(tmp_path):
    # examples/select-best-example: the only model-graded assertion is select-best; the suite
    # had `pairwise` and no judge, so `scoreboard validate` refused what the import wrote
    _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['a {{q}}', 'b {{q}}']\nproviders: [echo]\ntests:\n"
                      "  - vars: {q: hi}\n    assert:\n      - type: select-best\n        value: the funniest\n"})
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert suite["pairwise"] == {"rubric": "the funniest"} and suite.get("judge")
    checked = _cli("validate", "out/suite.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr


def test_factuality_class_scores_from_the_test_options(tmp_path):
    # examples/huggingface-dataset-factuality: defaultTest.options.factuality sets each class's
    # score (src/matchers.ts matchesFactuality: subset A, superset B, agree C, disagree D,
    # differButFactual E; a class passes when its score is > 0); the import dropped it silently
    config = _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['{{q}}']\nproviders: [echo]\ndefaultTest:\n"
                               "  options:\n    factuality: {subset: 1.0, superset: 0, agree: 1, disagree: 0.0, "
                               "differButFactual: 0.7}\ntests:\n  - vars: {q: hi}\n    assert:\n"
                               "      - type: factuality\n        value: Paris\n"
                               "  - vars: {q: ho}\n    options: {factuality: {disagree: 2}}\n    assert:\n"
                               "      - type: factuality\n        value: Rome\n"})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    first, second = _cases(tmp_path / "out")
    spec = first["graders"][0]["classify"]
    assert spec["choice_scores"] == {"A": 1.0, "B": 0, "C": 1, "D": 0.0, "E": 0.7}
    assert spec["pass"] == ["A", "C", "E"]
    assert not second.get("graders")
    assert any("factuality.disagree" in item for item in report.left_out), report.left_out


def test_a_test_option_the_import_does_not_read_is_listed(tmp_path):
    config = _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n"
                               "  - vars: {q: hi}\n    options: {disableConversationVar: true, runSerially: true}\n"})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    assert [i for i in report.left_out if "options" in i] == ["tests.0.options.disableConversationVar: this test "
                                                               "option is not converted"]


def test_a_provider_runs_only_the_prompts_it_names(tmp_path):
    # examples/prompts-per-model: `providers: [{id: ..., prompts: [label, ...]}]` runs only those
    # prompts (src/evaluator.ts isAllowedPrompt); the import ran every prompt on every provider
    # and said "everything converted"
    config = _write(tmp_path, {
        "promptfooconfig.yaml": "prompts:\n  - id: file://p1.txt\n    label: First\n  - id: file://p2.txt\n"
                                "    label: Second\nproviders:\n  - id: echo\n    label: both\n    prompts: [First, Second]\n"
                                "  - id: echo\n    label: one\n    prompts: [First]\n    delay: 100\n"
                                "  - id: echo\n    label: all\ntests:\n  - vars: {topic: x}\n",
        "p1.txt": "Tweet about {{topic}}\n", "p2.txt": "Four words on {{topic}}\n"})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert "prompts" not in suite and "prompt" not in suite
    assert sorted(suite["variants"]) == ["First/all", "First/both", "First/one", "Second/all", "Second/both"]
    assert "Four words" in suite["variants"]["Second/both"]["prompt"]
    assert "Tweet" in suite["variants"]["First/one"]["prompt"]
    assert not report.left_out and any("delay" in n for n in report.notes)
    checked = _cli("validate", "out/suite.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr


def test_a_provider_prompt_filter_naming_no_label_is_listed(tmp_path):
    config = _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['a {{q}}', 'b {{q}}']\nproviders:\n"
                               "  - id: echo\n    prompts: [nope]\n    transform: output.trim()\n"
                               "tests:\n  - vars: {q: hi}\n"})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert sorted(suite["variants"]) == ["prompt-1", "prompt-2"]
    assert any(".prompts" in i and "'nope'" in i for i in report.left_out), report.left_out
    assert any(i.startswith("providers.0.transform") for i in report.left_out), report.left_out


def test_a_prompt_that_looks_like_a_path_is_read_as_that_file(tmp_path):
    # examples/docker-code-generation-sandbox: `prompts: code_generation_prompt.txt` (no file://);
    # src/prompts/utils.ts maybeFilePath takes it for a path and processPrompt reads the file.
    # The import sent the file's name to the model as the prompt.
    config = _write(tmp_path, {
        "promptfooconfig.yaml": "prompts:\n  - code_prompt.txt\n  - prompts/*.txt\n  - 'Rate {{x}} 1/10'\n"
                                "  - Answer yes/no\n  - 'Plain {{x}}?'\nproviders: [echo]\ntests:\n  - vars: {x: a}\n",
        "code_prompt.txt": "Write {{x}}\n", "prompts/one.txt": "One {{x}}\n"})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    texts = list(suite["prompts"].values())
    assert texts[0].startswith("Write ") and texts[1].startswith("One ")
    assert texts[2].startswith("Rate ") and texts[3].startswith("Plain ")  # a pattern matching nothing: the text
    assert len(texts) == 4
    assert [i.split(":")[0] for i in report.left_out] == ["prompts.3"], report.left_out  # no file 'Answer yes/no'


def test_a_path_prompt_leaving_the_folder_is_refused(tmp_path):
    (tmp_path / "secret.txt").write_text("secret")
    config = _write(tmp_path / "c", {"promptfooconfig.yaml": "prompts: [../secret.txt]\nproviders: [echo]\n"})
    done = _cli("import", "promptfoo", str(config), "--output", "out", cwd=tmp_path)
    assert done.returncode == 1 and "leaves the config's folder" in done.stderr and "prompts.0" in done.stderr


def test_a_default_test_provider_is_listed(tmp_path):
    # examples/tau-simulated-user: defaultTest.provider (promptfoo:simulated-user) runs every test
    # (src/evaluator.ts: testCase.provider ||= defaultTest.provider); the import said
    # "everything converted" and ran the tests on the config's providers
    config = _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['{{q}}']\nproviders: [echo]\ndefaultTest:\n"
                               "  provider: {id: 'promptfoo:simulated-user', config: {maxTurns: 10}}\n"
                               "tests:\n  - vars: {q: hi}\n"})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    assert any(i.startswith("defaultTest.provider") for i in report.left_out), report.left_out


def test_a_python_provider_config_gets_its_file_references_loaded(tmp_path):
    # examples/python-provider: config values `file://configs/x.yaml` reach call_api loaded
    # (src/providers/pythonCompletion.ts initialize -> processConfigFileReferences); the adapter
    # passed the reference strings and the report said everything converted
    config = _write(tmp_path, {
        "promptfooconfig.yaml": "prompts: ['{{q}}']\nproviders:\n  - id: file://provider.py:call_api\n    config:\n"
                                "      settings: file://configs/s.yaml\n      note: file://configs/n.txt\n"
                                "      nested: {params: 'file://configs/p.py:get_params'}\ntests:\n  - vars: {q: hi}\n",
        "provider.py": "def call_api(prompt, options, context):\n    return {'output': repr(options['config'])}\n",
        "configs/s.yaml": "temperature: 0.5\n", "configs/n.txt": "hello\n", "configs/p.py": "def get_params():\n  return 1\n"})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    adapter = next((tmp_path / "out").glob("provider_provider_*.py")).read_text()
    assert "'settings': {'temperature': 0.5}" in adapter and "'note': 'hello\\n'" in adapter
    assert any(i.startswith("providers.0.config.nested.params") for i in report.left_out), report.left_out


def test_a_python_provider_sees_the_tests_vars_in_its_context(tmp_path):
    # promptfoo's python provider gets call_api(prompt, options, context) with context.vars (the
    # test's vars); the adapter passed {"vars": {}}, so a provider reading a var raised KeyError
    _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['Q: {{q}}']\nproviders: [file://provider.py]\n"
                      "tests:\n  - vars: {q: hi}\n    assert:\n      - type: equals\n        value: 'Q: hi|hi'\n",
                      "provider.py": "def call_api(prompt, options, context):\n"
                                     "    return {'output': prompt + '|' + context['vars']['q']}\n"})
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ran = _cli("run", "out/suite.yaml", "--output-dir", "res", "--no-progress", "--json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]


def test_tests_from_a_dataset_url_are_listed_as_such(tmp_path):
    # examples/huggingface-dataset, google-sheets: the report said "no files match" the URL
    config = _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n"
                               "  - huggingface://datasets/cais/mmlu?split=test\n"
                               "  - https://docs.google.com/spreadsheets/d/x/edit?usp=sharing\n"})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    assert [i.split(":")[0] for i in report.left_out] == ["tests.0", "tests.1"]
    assert all("no files match" not in i and "export them" in i for i in report.left_out), report.left_out


def test_a_python_provider_importing_its_neighbours_is_listed(tmp_path):
    # hyorimitsu/sample-promptfoo src/langgraph: provider.py does `from app.main import run`, with
    # app/ beside it; only provider.py was copied, and the suite failed later: No module named 'app'
    config = _write(tmp_path, {"promptfooconfig.yaml": "prompts: ['{{q}}']\nproviders: ['python:provider.py']\n"
                               "tests:\n  - vars: {q: hi}\n",
                               "provider.py": "import json\nimport helper\nfrom app.main import run\n"
                                              "def call_api(p, o, c):\n    return {'output': run(p)}\n",
                               "helper.py": "", "app/main.py": "def run(p):\n    return p\n"})
    _, report = import_promptfoo(str(config), str(tmp_path / "out"))
    assert any("imports app, helper from its folder" in i for i in report.left_out), report.left_out
