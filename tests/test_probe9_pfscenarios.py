"""promptfoo import: `scenarios`, prompt files holding an object, and other config shapes real
suites use. Each expectation is promptfoo's own behaviour (the source file is named beside it),
checked through the real CLI on files in tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none"}
    return run_cli(args, tmp_path, env)


def _import(tmp_path: Path, config: str, files: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, list]:
    (tmp_path / "c.yaml").write_text(config)
    for name, text in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    done = _cli(tmp_path, "import", "promptfoo", "c.yaml", "--output", "out")
    cases_file = tmp_path / "out" / "cases.jsonl"
    cases = [json.loads(x) for x in cases_file.read_text().splitlines()] if cases_file.exists() else []
    return done, cases


def _grades(tmp_path: Path) -> dict[str, list[bool]]:
    done = _cli(tmp_path, "run", "out/suite.yaml", "--output", "r.json")
    assert done.returncode in (0, 3), done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    return {a["case_id"]: [g["passed"] for g in a["grades"]] for a in report["attempts"]}


SCENARIOS = """
prompts: ["{{greeting}}|{{language}}|{{input}}|{{expected}}"]
providers: [echo]
defaultTest:
  vars: {greeting: hi, language: Default}
  metadata: {team: a, from: default}
  assert:
    - {type: contains, value: "hi|"}
scenarios:
  - description: translations
    config:
      - description: spanish
        vars: {language: Spanish, expected: Hola}
        metadata: {from: config}
        options: {prefix: "IGNORED "}
        assert:
          - {type: contains, value: Hola}
      - vars: {language: French, expected: Bonjour}
    tests:
      - description: hello
        vars: {input: Hello, language: Override}
        metadata: {kind: greeting}
        assert:
          - {type: contains, value: "{{language}}"}
      - vars: {input: Bye}
"""


def test_scenarios_cross_every_config_entry_with_every_test_as_promptfoo_merges_them(tmp_path):
    # evaluator.ts: {...defaultTest, ...data, ...test, vars: {dT, data, test}, options: {dT, data, test},
    # assert: [...data.assert, ...test.assert] (defaultTest's prepended later), metadata: {dT, data, test}};
    # with no `tests:` beside the scenarios promptfoo runs no empty test
    done, cases = _import(tmp_path, SCENARIOS)
    assert done.returncode == 3, done.stdout + done.stderr  # only the entry's prefix is left out
    assert "scenarios: this setting is not converted" not in done.stdout
    by_source = {c["metadata"]["promptfoo_source"]: c for c in cases}
    assert len(cases) == 4, [c["id"] for c in cases]
    first = by_source["scenarios.0.config.0 x scenarios.0.tests.0"]
    # the test's own vars win over the config entry's, which win over defaultTest's
    assert first["vars"] == {"greeting": "hi", "language": "Override", "expected": "Hola", "input": "Hello"}
    assert [g["contains"]["patterns"] for g in first["graders"]] == [["hi|"], ["Hola"], ["Override"]]
    assert first["metadata"]["team"] == "a" and first["metadata"]["from"] == "config"
    assert first["metadata"]["kind"] == "greeting" and first["metadata"]["description"] == "hello"
    # a test without a description takes the config entry's (the spread of data under test)
    second = by_source["scenarios.0.config.0 x scenarios.0.tests.1"]
    assert second["metadata"]["description"] == "spanish" and second["vars"]["language"] == "Spanish"
    french = by_source["scenarios.0.config.1 x scenarios.0.tests.1"]
    assert french["vars"] == {"greeting": "hi", "language": "French", "expected": "Bonjour", "input": "Bye"}
    assert [g["contains"]["patterns"] for g in french["graders"]] == [["hi|"]]
    assert len({c["id"] for c in cases}) == 4
    # promptfoo 0.121 merges the config entry's options (options: {dT, data, test}): the entry's prefix
    # reaches both its tests, where the import lists it as a run option it does not convert
    for test in (0, 1):
        assert f"scenarios.0.config.0 x scenarios.0.tests.{test}.options.prefix: not converted" in done.stdout
    assert "scenarios.0.config.1 x scenarios.0.tests.0.options.prefix" not in done.stdout
    grades = _grades(tmp_path)
    assert sorted(map(len, grades.values())) == [1, 2, 2, 3] and all(all(g) for g in grades.values())


def test_scenarios_from_files_and_a_scenario_without_tests(tmp_path):
    # load.ts: `scenarios: file://...` loaded (a list flattened), a scenario's `tests: file://`
    # read as tests; no `tests` is one empty test per config entry
    files = {
        "scen.yaml": "- config: [{vars: {q: a}}, {vars: {q: b}}]\n  tests: file://scen_tests.yaml\n"
                     "- config: [{vars: {q: c}, assert: [{type: equals, value: c}]}]\n",
        "scen_tests.yaml": "- vars: {n: '1'}\n  assert: [{type: contains, value: '{{q}}'}]\n",
    }
    done, cases = _import(tmp_path, "prompts: ['{{q}}']\nproviders: [echo]\n"
                          "tests: [{vars: {q: z}, description: plain}]\nscenarios: [file://scen.yaml]\n", files)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [c["vars"] for c in cases] == [{"q": "z"}, {"q": "a", "n": "1"}, {"q": "b", "n": "1"}, {"q": "c"}]
    assert cases[3]["expected"] == "c" and cases[0]["id"] == "plain"
    assert all(all(g) for g in _grades(tmp_path).values())


def test_a_scenario_without_config_is_a_one_line_error(tmp_path):
    done, _ = _import(tmp_path, "prompts: [x]\nproviders: [echo]\nscenarios:\n  - tests: [{vars: {a: 1}}]\n")
    assert done.returncode == 1
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and "c.yaml" in err and "scenarios.0.config" in err, err


def test_a_prompt_file_holding_an_object_is_listed_for_chat_providers(tmp_path):
    # prompts/processors/json.ts and yaml.ts hand the file over as JSON text; the openai chat
    # provider's parseChatPrompt JSON.parses it into the request's `messages`: an object there is
    # no list of messages (the API refuses it). echo returns the text (rendered, JSON.stringify(v, null, 2))
    files = {"p.json": '{"messages": [{"role": "user", "content": "{{q}}"}]}',
             "y.yaml": "messages:\n  - {role: user, content: '{{q}}'}\n"}
    done, _ = _import(tmp_path, "prompts: [file://p.json, file://y.yaml]\n"
                      "providers: [openai:chat:gpt-4o-mini, ollama:chat:llama3, echo]\ntests: [{vars: {q: hi}}]\n",
                      files)
    assert done.returncode == 3, done.stdout + done.stderr
    listed = [line for line in done.stdout.splitlines() if "request's `messages`" in line]
    assert len(listed) == 4, listed  # two prompts x two chat variants; echo gets what promptfoo's echo gets
    assert all("variant 'echo'" not in line for line in listed)
    suite = (tmp_path / "out" / "suite.yaml").read_text()
    assert '\\"messages\\": [' in suite
    # a list of messages is still a chat prompt, on every variant, and is not listed
    (tmp_path / "ok").mkdir()
    done, _ = _import(tmp_path / "ok", "prompts: [file://m.json]\nproviders: [openai:chat:gpt-4o-mini]\n",
                      {"m.json": '[{"role": "user", "content": "{{q}}"}]'})
    assert done.returncode == 0, done.stdout


def test_env_tags_render_from_the_configs_env(tmp_path):
    # load.ts readConfig: renderEnvOnlyInObject renders {{ env.NAME }} / {{ env['NAME'] | f }} from
    # the config's env (over the process environment); before, the prompt printed nothing there and
    # a contains whose value was "{{ env.FOO }}" became a grader that always fails
    done, cases = _import(tmp_path, "prompts: [\"Q: {{q}} {{ env.FOO }} {{ env['FOO'] | upper }}{{ env.UNSET_X }}\"]\n"
                          "providers: [echo]\nenv: {FOO: bar}\n"
                          "tests:\n  - vars: {q: a}\n    assert:\n"
                          "      - {type: equals, value: 'Q: a bar BAR'}\n"
                          "      - {type: contains, value: '{{ env.FOO }}'}\n")
    assert done.returncode == 3, done.stdout + done.stderr  # UNSET_X: the environment promptfoo runs in
    assert "{{ env.UNSET_X }} reads the environment variable UNSET_X" in done.stdout
    assert "always fails" not in done.stdout
    assert cases[0]["expected"] == "Q: a bar BAR"
    assert cases[0]["graders"][1] == {"contains": {"patterns": ["bar"], "mode": "all"}}
    assert _grades(tmp_path) == {"test-1": [True, True]}


def test_a_role_yaml_prompt_file_is_sent_as_chat_messages_to_a_chat_provider(tmp_path):
    # providers/shared.ts parseChatPrompt: rendered text starting `- role:` is yaml.load-ed into the
    # request's messages; before, the suite sent the YAML text as one user message
    from tests.servers.fake_provider import FakeProvider

    files = {"chat.txt": "- role: system\n  content: Be brief\n- role: user\n  content: \"{{q}}\"\n"}
    with FakeProvider() as srv:
        done, _ = _import(tmp_path, "prompts: [file://chat.txt]\nproviders:\n  - id: openai:chat:gpt-x\n"
                          f"    config: {{apiBaseUrl: '{srv.base_url}/v1', apiKeyEnvar: PF9_KEY}}\n"
                          "tests: [{vars: {q: hi there}}]\n", files)
        assert done.returncode == 0, done.stdout + done.stderr
        env = {**os.environ, "SCOREBOARD_STORE": "none", "PF9_KEY": "k"}
        run = run_cli(["run", "out/suite.yaml", "--output", "r.json"], tmp_path, env)
        assert run.returncode in (0, 3), run.stderr
        sent = srv.requests[0]["json"]["messages"]
    assert sent == [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "hi there"}]
    # beside a provider that takes text (echo), the chat variant is listed instead
    (tmp_path / "two").mkdir()
    done, _ = _import(tmp_path / "two", "prompts: [file://chat.txt]\nproviders: [openai:chat:gpt-x, echo]\n", files)
    assert done.returncode == 3 and "prompt 'chat' on variant 'openai-chat-gpt-x'" in done.stdout, done.stdout


def test_env_tags_in_prompt_and_tests_files_render_too(tmp_path):
    # templates.ts getNunjucksEngine: `env` is a global ({...process.env, ...config.env}) when a
    # prompt file or a tests file's assertion renders
    files = {"p.txt": "Q: {{q}} for {{ env.CO }}\n", "t.yaml": "- vars: {q: a}\n  assert:\n"
             "    - {type: equals, value: 'Q: a for Acme'}\n    - {type: icontains, value: '{{ env.CO }}'}\n",
             "d.yaml": "assert: [{type: contains, value: '{{ env.CO }}'}]\n"}
    done, cases = _import(tmp_path, "prompts: [file://p.txt]\nproviders: [echo]\nenv: {CO: Acme}\n"
                          "defaultTest: file://d.yaml\ntests: [file://t.yaml]\n", files)
    assert done.returncode == 0, done.stdout + done.stderr
    assert cases[0]["expected"] == "Q: a for Acme"
    assert _grades(tmp_path) == {"test-1": [True, True, True]}


def test_a_text_prompt_anthropic_would_reshape_is_listed_for_anthropic_variants(tmp_path):
    # providers/anthropic/util.ts parseMessages: a text prompt's lines are trimmed, blank ones
    # dropped, `system:` / `user:` lines become the system prompt and turns; the suite sends the text
    done, _ = _import(tmp_path, "prompts:\n  - |\n    system: Be brief\n\n    user: {{q}}\n  - 'Just {{q}}'\n"
                      "providers: [anthropic:messages:claude-x, echo]\ntests: [{vars: {q: hi}}]\n")
    assert done.returncode == 3, done.stdout + done.stderr
    listed = [line for line in done.stdout.splitlines() if "anthropic provider trims every line" in line]
    assert len(listed) == 1 and "prompt 'prompt-1' on variant 'anthropic-messages-claude-x'" in listed[0], listed
