"""promptfoo importer score semantics, checked against promptfoo 0.121.20 run on the same outputs
with its echo provider (src/assertions/assertionsResult.ts: a test's or assert-set's threshold
compares the weighted mean of the raw numbers the code returned; namedScores add them as they are)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="javascript assertions need Node.js")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, "SCOREBOARD_STORE": "none"})  # in-process


def _import_and_run(tmp_path: Path, config: str) -> tuple[subprocess.CompletedProcess, dict[str, dict], Path]:
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = _cli("run", "out/suite.yaml", "--output-dir", "out/res", cwd=tmp_path)
    assert "Traceback" not in ran.stderr, ran.stderr
    path = next((tmp_path / "out" / "res").glob("*/*.json"))
    return done, {a["case_id"]: a for a in json.loads(path.read_text())["attempts"]}, path


RAW = """prompts: ['{{out}}']
providers: [echo]
tests:
  - description: js-above-one
    vars: {out: hello}
    threshold: 0.9
    assert:
      - {type: javascript, value: '5'}
      - {type: contains, value: nope}
  - description: js-below-zero
    vars: {out: hello}
    threshold: 0.1
    assert:
      - {type: javascript, value: '-3', threshold: -5}
      - {type: contains, value: hello}
  - description: py-above-one
    vars: {out: hello}
    threshold: 0.9
    assert:
      - {type: python, value: '5'}
      - {type: contains, value: nope}
  - description: js-object-above-one
    vars: {out: hello}
    threshold: 0.9
    assert:
      - {type: javascript, value: '({pass: true, score: 3, reason: "ok"})'}
      - {type: contains, value: nope}
  - description: set-above-one
    vars: {out: hello}
    assert:
      - type: assert-set
        threshold: 0.9
        assert:
          - {type: javascript, value: '5'}
          - {type: contains, value: nope}
  - description: in-range
    vars: {out: hello}
    threshold: 0.9
    assert:
      - {type: javascript, value: '0.5'}
      - {type: contains, value: hello}
  - description: metric-above-one
    vars: {out: hello}
    assert:
      - {type: javascript, value: '5', metric: m}
"""

#: promptfoo 0.121.20 `eval` on RAW (echo provider): success per test
PROMPTFOO = {"js-above-one": "passed", "js-below-zero": "failed", "py-above-one": "passed",
             "js-object-above-one": "passed", "set-above-one": "passed", "in-range": "failed",
             "metric-above-one": "passed"}


def test_a_code_assertions_number_outside_zero_one_counts_as_itself_in_a_test_or_assert_set_threshold(tmp_path):
    # promptfoo: score 5 with a failing contains averages 2.5 >= 0.9 (passes); -3 with a passing
    # contains averages -1 < 0.1 (fails). The import clipped the number to 1 / 0 first, so the
    # mean was 0.5 and every one of these tests got the opposite verdict
    done, attempts, report = _import_and_run(tmp_path, RAW)
    assert {cid: a["status"] for cid, a in attempts.items()} == PROMPTFOO
    # the recorded scores stay in [0, 1]; the number is kept beside them
    grade = attempts["js-above-one"]["grades"][0]
    assert grade["score"] == 1.0 and grade["raw_score"] == 5
    assert attempts["py-above-one"]["grades"][0]["raw_score"] == 5
    assert attempts["set-above-one"]["grades"][0]["raw_score"] == 2.5
    assert all(0 <= a["score"] <= 1 for a in attempts.values() if a.get("score") is not None)
    # and the report verifies: its statuses follow from the grades it holds
    checked = _cli("verify", str(report), "--allow-code", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_metric_on_a_code_assertion_is_listed_where_promptfoo_adds_the_raw_number(tmp_path):
    # promptfoo's namedScores.m is 5 here; a scoreboard metric is a mean of scores in [0, 1]
    done, attempts, _ = _import_and_run(tmp_path, RAW)
    assert "tests.6.assert.0 (javascript).metric: promptfoo's named score adds the number" in done.stdout
    assert attempts["metric-above-one"]["metrics"] == {"m": 1.0}


def test_a_var_whose_nunjucks_filter_throws_errors_the_row_as_promptfoo_renders_vars_first(tmp_path):
    # renderPrompt renders every string var with Nunjucks before a text prompt (a var naming an
    # undefined var is left as written): join on a string throws (arr.join is not a function), so
    # promptfoo 0.121.20 errors the row (score 0) whether or not the prompt prints that var; the
    # import left the var as written and the assertions passed
    done, attempts, _ = _import_and_run(tmp_path, """prompts: ['{{out}}']
providers: [echo]
tests:
  - description: printed
    vars: {s: abc, out: '{{ s | join("-") }}'}
    assert: [{type: not-contains, value: zzz}]
  - description: unprinted
    vars: {s: abc, other: '{{ s | join("-") }}', out: hi}
    threshold: 0.5
    assert: [{type: not-contains, value: zzz}]
  - description: names-undefined
    vars: {out: '{{ t | join("-") }}'}
    assert: [{type: not-contains, value: zzz}]
  - description: fine
    vars: {s: [a, b], out: hi, joined: '{{ s | join("-") }}'}
    options: {disableVarExpansion: true}
    assert: [{type: not-contains, value: zzz}]
""")
    assert {cid: a["status"] for cid, a in attempts.items()} == {
        "printed": "failed", "unprinted": "failed", "names-undefined": "passed", "fine": "passed"}
    assert "tests.0.vars.out: promptfoo renders this var with Nunjucks" in done.stdout
    assert "tests.1.vars.other:" in done.stdout and "tests.2.vars" not in done.stdout


def test_a_var_rendered_into_the_prompt_by_its_own_template_is_listed_when_a_prompt_prints_it(tmp_path):
    # promptfoo renders `out` with Nunjucks before the text prompt, so echo returns ABC, while the
    # assertions see the var as written: here the prompt would get '{{ s | upper }}'
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: ['Say {{out}}']\nproviders: [echo]\n"
        "tests:\n  - vars: {s: abc, out: '{{ s | upper }}'}\n    assert: [{type: contains, value: ABC}]\n")
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    report = (tmp_path / "out" / "conversion-report.md").read_text()
    assert "tests.0.vars.out" in report and "'ABC'" in report, report
    # a prompt that never prints the var: nothing differs, nothing listed
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: ['Say {{s}}']\nproviders: [echo]\n"
        "tests:\n  - vars: {s: abc, out: '{{ s | upper }}'}\n    assert: [{type: contains, value: abc}]\n")
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out2", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
