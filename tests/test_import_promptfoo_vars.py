"""promptfoo's vars, prompt files, JSON prompts and weight-0 assertions, imported and run end to
end against the echo provider (the output is the rendered prompt, so each verdict is fixed).
Each expected output is what promptfoo 0.121 prints for the same config (checked by running it;
the functions named are promptfoo's: evaluatorHelpers.ts renderPrompt and resolveVariables,
evaluator.ts generateVarCombinations, prompts/processors/text.ts processTxtFile,
assertions/index.ts runAssertion)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli


def _scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd)


def _run(tmp_path: Path, config: str, files: dict[str, str | bytes] | None = None) -> tuple[str, dict[str, dict]]:
    """(the conversion report, case id -> its attempt) after importing and running the config."""
    for name, text in (files or {}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    done = _scoreboard(["import", "promptfoo", "promptfooconfig.yaml", "--output", "out"], tmp_path)
    assert done.returncode in (0, 3), done.stdout + done.stderr
    run = _scoreboard(["run", "out/suite.yaml", "--output", "r.json"], tmp_path)
    assert run.returncode in (0, 3), run.stdout + run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    return (tmp_path / "out" / "conversion-report.md").read_text(), {a["case_id"]: a for a in report["attempts"]}


def _text(attempt: dict) -> str:
    return attempt["output"]["text"]


def test_file_vars_load_as_render_prompt_loads_them(tmp_path):
    # .txt trimmed; .json is its text trimmed (not parsed); .yaml is JSON.stringify(yaml.load);
    # a YAML list file is one value (loaded after expansion), not one case per item
    files = {"ctx.txt": "line one\n\n", "data.json": '{"k": "v"}\n', "data.yaml": "k: v\nn: 2\n",
             "list.yaml": "- apple\n- banana\n"}
    config = """prompts: ['[{{v}}]']
providers: [echo]
tests:
  - {description: txt, vars: {v: file://ctx.txt}, assert: [{type: equals, value: '[line one]'}]}
  - {description: json, vars: {v: file://data.json}, assert: [{type: equals, value: '[{"k": "v"}]'}]}
  - {description: yaml, vars: {v: file://data.yaml}, assert: [{type: equals, value: '[{"k":"v","n":2}]'}]}
  - {description: list, vars: {v: file://list.yaml}, assert: [{type: equals, value: '[["apple","banana"]]'}]}
"""
    _, by_id = _run(tmp_path, config, files)
    assert sorted(by_id) == ["json", "list", "txt", "yaml"]
    assert {cid: _text(a) for cid, a in by_id.items()} == {
        "txt": "[line one]", "json": '[{"k": "v"}]', "yaml": '[{"k":"v","n":2}]', "list": '[["apple","banana"]]'}
    assert all(a["status"] == "passed" for a in by_id.values())


def test_trailing_newline_and_var_references(tmp_path):
    config = """prompts: ['[{{v}}]']
providers: [echo]
tests:
  - {description: newline, vars: {v: "abc\\n"}, assert: [{type: regex, value: 'abc]$'}]}
  - {description: block, vars: {v: "two\\nlines\\n\\n"}, assert: [{type: equals, value: "[two\\nlines\\n]"}]}
  - {description: ref, vars: {name: Ada, v: "Hi {{name}}"}, assert: [{type: equals, value: '[Hi Ada]'}]}
  - {description: chain, vars: {a: "{{b}}!", b: "{{c}}?", c: x, v: "{{a}}"}, assert: [{type: equals, value: '[x?!]'}]}
  - {description: dollar, vars: {p: "5$$", v: "cost {{p}}"}, assert: [{type: equals, value: '[cost 5$]'}]}
"""
    _, by_id = _run(tmp_path, config)
    texts = {cid: _text(a) for cid, a in by_id.items()}
    assert texts["newline"] == "[abc]"
    assert texts["block"] == "[two\nlines\n]"  # one newline cut, not all
    assert texts["ref"] == "[Hi Ada]"
    assert texts["chain"] == "[x?!]"
    assert texts["dollar"] == "[cost 5$]"  # String.replace: $$ in the replacement is one $
    assert all(a["status"] == "passed" for a in by_id.values()), texts


def test_file_glob_var_is_one_case_per_file_and_var_expansion_can_be_disabled(tmp_path):
    files = {"docs/a.txt": "alpha\n", "docs/b.txt": "beta\n"}
    config = """prompts: ['{{doc}} {{items}}']
providers: [echo]
tests:
  - description: glob
    vars: {doc: file://docs/*.txt, items: x}
    assert: [{type: contains-any, value: [alpha, beta]}]
  - description: whole
    vars: {doc: d, items: [apple, banana]}
    options: {disableVarExpansion: true}
    assert: [{type: equals, value: 'd apple,banana'}]
"""
    _, by_id = _run(tmp_path, config, files)
    assert sorted(by_id) == ["glob[doc=docs/a.txt]", "glob[doc=docs/b.txt]", "whole"]
    assert _text(by_id["glob[doc=docs/a.txt]"]) == "alpha x" and _text(by_id["glob[doc=docs/b.txt]"]) == "beta x"
    assert _text(by_id["whole"]) == "d apple,banana"
    assert all(a["status"] == "passed" for a in by_id.values())


def test_a_glob_var_matching_nothing_is_an_error_naming_the_field(tmp_path):
    (tmp_path / "promptfooconfig.yaml").write_text("prompts: ['{{d}}']\ntests:\n  - vars: {d: file://none/*.txt}\n")
    done = _scoreboard(["import", "promptfoo", "promptfooconfig.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 1 and "tests.0.vars.d" in done.stderr and "no files match" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_txt_prompt_files_are_split_and_trimmed_as_promptfoo_does(tmp_path):
    files = {"one.txt": "Say {{x}}\n", "two.txt": "First {{x}}\n  ---  \n\nSecond {{x}}\r\n---\n\n"}
    config = """prompts: [file://one.txt, file://two.txt]
providers: [echo]
tests:
  - {vars: {x: hi}, assert: [{type: starts-with, value: 'S'}]}
"""
    _, _ = _run(tmp_path, config, files)
    suite = (tmp_path / "out" / "suite.yaml").read_text()
    report = json.loads((tmp_path / "r.json").read_text())
    outputs = sorted(a["output"]["text"] for a in report["attempts"])
    assert outputs == ["First hi", "Say hi", "Second hi"], suite


def test_a_json_prompt_is_rendered_inside_the_json_and_pretty_printed(tmp_path):
    config = """prompts:
  - '{"question": "{{q}}", "n": 1.0, "tags": [], "nested": {"a": ["{{q}}", true, null]}}'
providers: [echo]
tests:
  - vars: {q: 'say "hi"'}
    assert: [{type: is-json}]
"""
    _, by_id = _run(tmp_path, config)
    (attempt,) = by_id.values()
    expected = {"question": 'say "hi"', "n": 1, "tags": [], "nested": {"a": ['say "hi"', True, None]}}
    assert _text(attempt) == json.dumps(expected, indent=2, ensure_ascii=False)  # JSON.stringify(v, null, 2)
    assert attempt["status"] == "passed"


def test_a_weight_zero_assertion_is_metric_only(tmp_path):
    config = """prompts: ['hello world']
providers: [echo]
tests:
  - description: w0
    assert:
      - {type: contains, value: hello}
      - {type: contains, value: goodbye, weight: 0, metric: tracked}
  - description: set
    assert:
      - type: assert-set
        assert:
          - {type: contains, value: hello}
          - {type: contains, value: goodbye, weight: 0}
"""
    _, by_id = _run(tmp_path, config)
    assert by_id["w0"]["status"] == "passed" and by_id["w0"]["metrics"] == {"tracked": 0.0}
    assert [g["passed"] for g in by_id["w0"]["grades"]] == [True, False]  # the grade itself is kept as it was
    assert by_id["set"]["status"] == "passed"
    verify = _scoreboard(["verify", "r.json"], tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_scoring_functions_and_stored_outputs_are_listed_not_dropped(tmp_path):
    config = """prompts: ['{{saved}}']
providers: [echo]
tests:
  - {vars: {saved: a}, options: {storeOutputAs: saved}}
  - {vars: {saved: b}, assertScoringFunction: file://scoring.js, assert: [{type: contains, value: a}]}
"""
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    done = _scoreboard(["import", "promptfoo", "promptfooconfig.yaml", "--output", "out"], tmp_path)
    report = (tmp_path / "out" / "conversion-report.md").read_text()
    assert done.returncode == 3  # something was left out
    assert "tests.0.options.storeOutputAs" in report and "tests.1.assertScoringFunction" in report


def test_importing_runs_no_code_from_the_config_unless_asked(tmp_path):
    # a shared config is data: its transformVars (JavaScript or Python) would run with the
    # user's permissions; without --run-code nothing it names is executed, and it is listed
    (tmp_path / "tv.py").write_text("import pathlib\n"
                                    "def get_transform(vars, context):\n"
                                    "    pathlib.Path('RAN-PY').write_text('x')\n"
                                    "    return {'name': 'py'}\n")
    config = """prompts: ['Hi {{name}}']
providers: [echo]
tests:
  - vars: {name: a}
    options: {transformVars: file://tv.py}
  - vars: {name: b}
    options: {transformVars: "require('fs').writeFileSync('RAN-JS', 'x'); return {name: 'js'}"}
"""
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    done = _scoreboard(["import", "promptfoo", "promptfooconfig.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert not (tmp_path / "RAN-PY").exists() and not (tmp_path / "RAN-JS").exists()
    report = (tmp_path / "out" / "conversion-report.md").read_text()
    assert "tests.0.options.transformVars" in report and "tests.1.options.transformVars" in report
    assert "--run-code" in report
    cases = [json.loads(line) for line in (tmp_path / "out" / "cases.jsonl").read_text().splitlines()]
    assert [c["vars"]["name"] for c in cases] == ["a", "b"]  # kept as written
    again = _scoreboard(["import", "promptfoo", "promptfooconfig.yaml", "--output", "out2", "--run-code"], tmp_path)
    assert again.returncode in (0, 3), again.stdout + again.stderr
    assert (tmp_path / "RAN-PY").exists()  # asked for: the Python transform ran
