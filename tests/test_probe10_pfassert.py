"""promptfoo assertion fidelity: configs imported and run end to end against the echo provider
(or a command subject), each verdict compared with what promptfoo 0.123.1 gives for the same
config (checked by running `promptfoo eval` on it; the rules are src/assertions/index.ts
runAssertion / runAssertions and assertionsResult.ts AssertionsResult)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli


def _scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, env=_env())


def _env() -> dict:
    import os

    return {**os.environ, "SCOREBOARD_STORE": "none"}


def _run(tmp_path: Path, config: str, files: dict[str, str] | None = None) -> tuple[str, dict[str, dict]]:
    """(the conversion report, case id -> its attempt) after importing and running the config."""
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    done = _scoreboard(["import", "promptfoo", "promptfooconfig.yaml", "--output", "out"], tmp_path)
    assert done.returncode in (0, 3), done.stdout + done.stderr
    run = _scoreboard(["run", "out/suite.yaml", "--output", "r.json"], tmp_path)
    assert run.returncode in (0, 1, 3), run.stdout + run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    return (tmp_path / "out" / "conversion-report.md").read_text(), {a["case_id"]: a for a in report["attempts"]}


def test_an_assertion_promptfoo_rejects_fails_the_test_whatever_its_weight_or_threshold(tmp_path):
    # runAssertion throws for `starts-with: 5` or `contains: ""` before weight 0 could force a
    # pass, and the throw makes the whole row an error: no test threshold, assert-set threshold
    # or weight 0 lets such a test pass (promptfoo 0.123.1: all three rows are errors)
    config = """prompts: ['{{q}}']
providers: [echo]
tests:
  - description: threshold
    vars: {q: abc}
    threshold: 0.5
    assert:
      - {type: contains, value: abc}
      - {type: contains, value: abc}
      - {type: starts-with, value: 5}
  - description: weight0
    vars: {q: abc}
    assert:
      - {type: contains, value: abc}
      - {type: contains, value: "", weight: 0}
  - description: inset
    vars: {q: abc}
    assert:
      - type: assert-set
        threshold: 0.5
        assert:
          - {type: contains, value: abc}
          - {type: contains, value: abc}
          - {type: regex, value: 7}
  - description: fine
    vars: {q: abc}
    threshold: 0.5
    assert:
      - {type: contains, value: abc}
      - {type: contains, value: zzz}
"""
    report, by_id = _run(tmp_path, config)
    assert by_id["threshold"]["status"] == "failed"
    assert by_id["weight0"]["status"] == "failed"
    assert by_id["inset"]["status"] == "failed"
    assert by_id["fine"]["status"] == "passed"  # a threshold still applies to a test that does not error
    assert "tests.0.threshold" in report  # the dropped threshold is said


def test_an_assert_set_of_weight_zero_still_fails_the_test(tmp_path):
    # runAssertions adds an assert-set's result with its weight, but only runAssertion forces the
    # pass of a weight-0 assertion: a failing set of weight 0 fails the test (promptfoo 0.123.1:
    # FAIL, score 0), while it takes no part in the score
    config = """prompts: ['{{q}}']
providers: [echo]
tests:
  - description: w0set
    vars: {q: abc}
    assert:
      - type: assert-set
        weight: 0
        assert:
          - {type: contains, value: zzz}
  - description: w0set-pass
    vars: {q: abc}
    assert:
      - {type: contains, value: zzz, weight: 1}
      - type: assert-set
        weight: 0
        assert:
          - {type: contains, value: abc}
    threshold: 0.5
  - description: w0set-threshold
    vars: {q: abc}
    threshold: 0.5
    assert:
      - {type: contains, value: abc}
      - type: assert-set
        weight: 0
        assert:
          - {type: contains, value: zzz}
"""
    _, by_id = _run(tmp_path, config)
    assert by_id["w0set"]["status"] == "failed"
    assert by_id["w0set-pass"]["status"] == "failed" and by_id["w0set-pass"]["score"] == 0.0
    # with a test threshold the verdict is the score's, and the set of weight 0 has no part in it
    assert by_id["w0set-threshold"]["status"] == "passed" and by_id["w0set-threshold"]["score"] == 1.0


def test_a_weight_zero_cost_or_latency_the_subject_cannot_report_is_unknown_not_a_pass(tmp_path):
    # handleCost throws when the provider reports no cost (promptfoo's exec provider reports none),
    # before weight 0 could force a pass: the row is an error. scoreboard's grade is not assessed,
    # so the case must be too, not passed because the grade has weight 0; a known cost of weight 0
    # is still metric-only
    (tmp_path / "say.sh").write_text("#!/bin/sh\nprintf '%s' \"$1\"\n")
    (tmp_path / "say.sh").chmod(0o755)
    config = """prompts: ['{{q}}']
providers: ['exec:./say.sh']
tests:
  - description: cost0
    vars: {q: x}
    assert:
      - {type: cost, threshold: 0.01, weight: 0, metric: spend}
      - {type: contains, value: x}
  - description: cost1
    vars: {q: x}
    assert:
      - {type: cost, threshold: 0.01}
"""
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    done = _scoreboard(["import", "promptfoo", "promptfooconfig.yaml", "--output", "out"], tmp_path)
    assert done.returncode in (0, 3), done.stdout + done.stderr
    run = _scoreboard(["run", "out/suite.yaml", "--output", "r.json"], tmp_path)
    assert run.returncode in (0, 1, 3), run.stdout + run.stderr
    by_id = {a["case_id"]: a for a in json.loads((tmp_path / "r.json").read_text())["attempts"]}
    assert by_id["cost1"]["status"] == "unassessed"
    assert by_id["cost0"]["status"] == "unassessed", by_id["cost0"]["grades"]

    config = """prompts: ['{{q}}']
providers: [echo]
tests:
  - description: known
    vars: {q: x}
    assert:
      - {type: cost, threshold: 0, weight: 0, metric: spend}
      - {type: latency, threshold: 100000, weight: 0}
      - {type: contains, value: x}
"""
    (tmp_path / "echo").mkdir()
    _, by_id = _run(tmp_path / "echo", config)
    assert by_id["known"]["status"] == "passed" and by_id["known"]["metrics"] == {"spend": 0.0}


def test_a_latency_threshold_of_zero_or_a_negative_cost_imports_into_a_suite_that_loads(tmp_path):
    # latency.ts and cost.ts compare `latencyMs <= threshold` / `cost <= threshold` for any number;
    # the import wrote max-latency-ms: 0 and max-cost: -1, which scoreboard refuses, so the whole
    # converted suite failed to load ("needs a positive number of milliseconds, got 0")
    config = """prompts: ['{{q}}']
providers: [echo]
tests:
  - description: lat0
    vars: {q: x}
    assert: [{type: latency, threshold: 0}]
  - description: not-lat0
    vars: {q: x}
    assert: [{type: not-latency, threshold: 0}]
  - description: cost-neg
    vars: {q: x}
    assert: [{type: cost, threshold: -1}]
  - description: not-cost-neg
    vars: {q: x}
    assert: [{type: not-cost, threshold: -1}]
"""
    _, by_id = _run(tmp_path, config)
    # the mock subject's latency is above 0 ms and its cost a known 0
    assert by_id["lat0"]["status"] == "failed" and by_id["not-lat0"]["status"] == "passed"
    assert by_id["cost-neg"]["status"] == "failed" and by_id["not-cost-neg"]["status"] == "passed"


def test_an_exec_provider_s_script_is_copied_beside_the_suite_and_one_outside_the_folder_is_listed(tmp_path):
    # promptfoo runs `exec:./say.sh` in the config's folder (execFile with cwd basePath); the
    # converted suite runs its command in its own folder, so the script must be there, still
    # executable; a file outside the config's folder is never read
    project = tmp_path / "project"
    (project / "bin").mkdir(parents=True)
    (project / "say.sh").write_text("#!/bin/sh\nprintf 'said %s' \"$1\"\n")
    (project / "say.sh").chmod(0o755)
    (project / "bin" / "helper.py").write_text("import sys\nprint('py ' + sys.argv[1])\n")
    (tmp_path / "outside.sh").write_text("#!/bin/sh\necho secret\n")
    (tmp_path / "outside.sh").chmod(0o755)
    config = """prompts: ['{{q}}']
providers:
  - {id: 'exec:./say.sh', label: sh}
  - {id: 'exec:python3 bin/helper.py', label: py}
tests:
  - vars: {q: hello}
    assert: [{type: contains, value: hello}]
"""
    (project / "promptfooconfig.yaml").write_text(config)
    done = _scoreboard(["import", "promptfoo", "project/promptfooconfig.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    assert (out / "say.sh").read_text() == (project / "say.sh").read_text()
    assert os.access(out / "say.sh", os.X_OK) and not os.access(out / "bin" / "helper.py", os.X_OK)
    run = _scoreboard(["run", "out/suite.yaml", "--output", "r.json"], tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    outputs = {a["variant"]: a["output"]["text"] for a in json.loads((tmp_path / "r.json").read_text())["attempts"]}
    assert outputs == {"sh": "said hello", "py": "py hello"}

    (project / "promptfooconfig.yaml").write_text(config.replace("exec:./say.sh", "exec:../outside.sh"))
    done = _scoreboard(["import", "promptfoo", "project/promptfooconfig.yaml", "--output", "out2"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert not list(tmp_path.glob("out2/**/outside*")) and (tmp_path / "out2" / "bin" / "helper.py").exists()
    assert "../outside.sh" in done.stdout and "copy it beside the suite" in (tmp_path / "out2" / "conversion-report.md").read_text()


def test_a_file_the_config_names_never_replaces_the_suite_the_import_writes(tmp_path):
    (tmp_path / "suite.yaml").write_text("#!/bin/sh\necho pwned\n")
    (tmp_path / "promptfooconfig.yaml").write_text("""prompts: ['{{q}}']
providers: ['exec:sh suite.yaml']
tests:
  - vars: {q: hello}
""")
    done = _scoreboard(["import", "promptfoo", "promptfooconfig.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "pwned" not in (tmp_path / "out" / "suite.yaml").read_text()
    assert "not copied" in (tmp_path / "out" / "conversion-report.md").read_text()
