"""promptfoo semantics the importer now keeps, each run end to end (import, then `scoreboard run`
against the echo provider or a loopback OpenAI-compatible server) with the expected numbers
worked out from promptfoo's source (the function is named beside each): derivedMetrics over
namedScores and __count, Python file transforms and transformVars, Nunjucks' undefined."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sp

from scoreboard.stats.metrics import derived_figure, inline_derived, metric_totals
from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider


def _scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, env={**__import__("os").environ, "FAKE_KEY": "k"})


def _import_and_run(tmp_path: Path, config: str, files: dict[str, str] | None = None,
                    codes: tuple = (0, 3)) -> tuple[str, dict]:
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    (tmp_path / "c.yaml").write_text(config)
    done = _scoreboard(["import", "promptfoo", "c.yaml", "--output", "out", "--run-code"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run = _scoreboard(["run", "out/suite.yaml", "--output", "r.json"], tmp_path)
    assert run.returncode in codes, run.stdout + run.stderr
    return (tmp_path / "out" / "conversion-report.md").read_text(), json.loads((tmp_path / "r.json").read_text())


DERIVED = """prompts: ['Q: {{ q }}']
providers:
  - id: openai:chat:gpt-x
    config: {apiBaseUrl: BASE, apiKeyEnvar: FAKE_KEY}
tests:
  - vars: {q: a}
  - vars: {q: b}
  - vars: {q: c}
defaultTest:
  assert:
    - {type: contains, value: 'yes', metric: tp}
    - {type: contains, value: 'no', metric: fp}
    - {type: contains, value: 'yes', metric: acc, weight: 2}
    - {type: icontains, value: 'YES', metric: acc}
derivedMetrics:
  - {name: precision, value: 'tp / (tp + fp)'}
  - {name: per_row, value: 'acc / __count'}
  - {name: doubled, value: 'precision * 2'}
  - {name: squared, value: 'tp ^ 2'}
  - {name: missing, value: 'nothing / __count'}
"""


def test_derived_metrics_give_promptfoos_numbers(tmp_path):
    replies = {"a": "yes", "b": "no", "c": "yes"}
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": lambda req: replies[req["messages"][-1]["content"][3:]]})
        report_md, report = _import_and_run(tmp_path, DERIVED.replace("BASE", srv.base_url + "/v1"))
    suite = (tmp_path / "out" / "suite.yaml").read_text()
    assert "aggregate: sum" in suite and "tp ** 2" in suite  # mathjs' ^ is a power
    assert "derivedMetrics: evaluated over each metric's total" in report_md
    derived = report["summary"]["variants"]["openai-chat-gpt-x"]["derived_metrics"]
    # assertionsResult.ts addResult: a row's namedScores[m] is sum(score*weight)/sum(weight) over the
    # assertions naming m, with namedScoreWeights[m] = sum(weight); util/namedMetrics.ts
    # accumulateNamedMetric adds score * weight total per row, so the prompt's namedScores are:
    # tp = 1 + 0 + 1 = 2, fp = 0 + 1 + 0 = 1, acc = (1*2 + 1*1) + 0 + (1*2 + 1*1) = 6;
    # evaluator.ts updateDerivedMetrics: __count = the rows evaluated = 3, and an earlier derived
    # metric is in scope of a later one
    assert derived["precision"]["value"] == pytest.approx(2 / 3)
    assert derived["per_row"]["value"] == pytest.approx(2.0)
    assert derived["doubled"]["value"] == pytest.approx(4 / 3)
    assert derived["squared"]["value"] == pytest.approx(4.0)
    assert derived["per_row"]["aggregate"] == "sum" and derived["per_row"]["attempts"] == 3
    # promptfoo leaves 0 when mathjs cannot evaluate (an unknown symbol); scoreboard says unknown
    assert derived["missing"]["value"] is None
    # the means by case, as before, are still the named metrics' own figures
    assert report["summary"]["variants"]["openai-chat-gpt-x"]["metrics"]["acc"]["value"] == pytest.approx(2 / 3)
    verify = _scoreboard(["verify", "r.json"], tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    row = next(line for line in (tmp_path / "r.md").read_text().splitlines() if "derived per_row" in line)
    assert "| derived per_row | 2 [95% CI" in row and "= acc / \\_\\_count (over metric totals, 3 attempts)" in row  # `__` escaped: it could open emphasis


def test_metric_totals_are_weighted_sums_of_grades():
    grades = [{"grader": "a", "passed": True, "score": 1.0, "metric": "acc", "weight": 2},
              {"grader": "b", "passed": False, "score": 0.5, "metric": "acc"},
              {"grader": "c", "passed": True, "score": None, "metric": "acc"},  # not assessed: not counted
              {"grader": "d", "passed": True, "score": 1.0, "weight": 3, "named_scores": {"tone": 0.5, "acc": 1}}]
    assert metric_totals(grades) == {"acc": 2.0 + 0.5 + 3.0, "tone": 1.5}


def test_sum_aggregate_interval_matches_scipys_percentile_bootstrap():
    rng = np.random.default_rng(3)
    n = 120
    tp, fp = rng.integers(0, 3, n).astype(float), rng.integers(0, 2, n).astype(float)
    metrics = {"tp": {f"c{i}": (tp[i], 1) for i in range(n)}, "fp": {f"c{i}": (fp[i], 1) for i in range(n)}}
    counts = {f"c{i}": 2 for i in range(n)}
    fig = derived_figure("tp / (tp + fp + __count)", metrics, 11, "sum", counts)
    assert fig["value"] == pytest.approx(tp.sum() / (tp.sum() + fp.sum() + 2 * n))
    ref = sp.bootstrap((tp, fp, np.full(n, 2.0)), lambda a, b, c: a.sum() / (a.sum() + b.sum() + c.sum()),
                       paired=True, vectorized=False, method="percentile", n_resamples=4000,
                       random_state=np.random.default_rng(5)).confidence_interval
    # two seeded resamplings of the same cases: the bounds agree to a few thousandths
    assert fig["ci"]["low"] == pytest.approx(ref.low, abs=0.006)
    assert fig["ci"]["high"] == pytest.approx(ref.high, abs=0.006)
    assert fig["ci"]["unit"] == "case"


def test_chained_derived_metrics_are_inlined():
    assert inline_derived("f * 2", {"f": "a / b"}) == "a / b * 2"
    assert inline_derived("g + f", {"f": "a / b", "g": "a / b + 1"}) == "a / b + 1 + a / b"


def test_count_needs_the_sum_aggregate(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "x", "graders": [{"contains": "x", "metric": "m"}]}\n')
    (tmp_path / "suite.yaml").write_text("cases: cases.jsonl\nsubject: {type: mock}\n"
                                         "derived_metrics: {bad: 'm / __count'}\n")
    done = _scoreboard(["run", "suite.yaml", "--output", "r.json"], tmp_path)
    assert done.returncode == 1 and "derived_metrics.bad" in done.stderr and "aggregate: sum" in done.stderr


PYTHON_TRANSFORMS = {"tx.py": '''def get_transform(output, context):
    return output.upper() + "|" + context["vars"]["name"] + "|" + context["prompt"]["raw"]


def words(output, context):
    return {"n": len(output.split("|")), "label": context["prompt"]["label"], "half": 1.0}


def prep(vars, context):
    return {"name": vars["name"] + " Lovelace", "uuid_len": len(context["uuid"])}
'''}


@pytest.mark.skipif(shutil.which("node") is None, reason="the javascript assertions need Node.js")
def test_python_file_transforms_follow_promptfoos_calling_convention(tmp_path):
    report_md, report = _import_and_run(tmp_path, """prompts: ['Hi {{ name }}']
providers: [echo]
defaultTest:
  options:
    transformVars: file://tx.py:prep
tests:
  - vars: {name: Ada}
    options: {transform: file://tx.py}
    assert:
      - {type: equals, value: 'HI ADA LOVELACE|Ada Lovelace|Hi Ada Lovelace'}
      - type: javascript
        value: 'output.n === 3 && output.label === "Hi Ada Lovelace" && output.half === 1'
        transform: 'file://tx.py:words'
      - {type: javascript, value: 'context.vars.uuid_len === 36'}
  - vars: {name: Bob}
    assert:
      - {type: equals, value: 'Hi Bob Lovelace'}
      - {type: contains, value: 'x', transform: 'file://tx.py:nothing_here'}
""", PYTHON_TRANSFORMS, codes=(2,))
    grades = {a["case_id"]: [(g["passed"], g["reason"]) for g in a["grades"]] for a in report["attempts"]}
    # util/transform.ts: a .py transform is runPython(file, fn || 'get_transform', [output, context]),
    # the test's transform with {vars, prompt}; an assertion's transform after it, on its result
    # (assertions/index.ts runAssertion), its object result read back through JSON (1.0 -> 1)
    # evaluator.ts prepareTestVariables: transformVars(vars, {prompt: {}, uuid}) merged over the vars
    assert [p for p, _ in grades["test-1"]] == [True, True, True], grades
    assert grades["test-2"][0][0] is True
    # a transform that throws (no such function) fails the row as an error, as runAssertions'
    # exception makes promptfoo's row an error (evaluator.ts applyGradingError)
    status = {a["case_id"]: a["status"] for a in report["attempts"]}
    assert status == {"test-1": "passed", "test-2": "error"}
    assert "run once at import" in report_md


def test_nunjucks_undefined_prints_nothing(tmp_path):
    _, report = _import_and_run(tmp_path, """prompts: ['Hi {{ name }}{{ user.title }}{% if user.vip %}!{% endif %}']
providers: [echo]
tests:
  - vars: {name: Ada}
    assert:
      - {type: equals, value: 'Hi Ada{{ nobody.at.all }}'}
  - vars: {name: Bob, user: {title: ' Sir', vip: true}}
    assert:
      - {type: equals, value: 'Hi Bob Sir!'}
""")
    # nunjucks memberLookup(undefined, 'title') is undefined; suppressValue prints it as ''; an
    # undefined value is false in {% if %}; assertion values render with the same engine
    outputs = {a["case_id"]: (a["output"]["text"], a["status"]) for a in report["attempts"]}
    assert outputs == {"test-1": ("Hi Ada", "passed"), "test-2": ("Hi Bob Sir!", "passed")}
    assert (tmp_path / "out" / "suite.yaml").read_text().count("template_undefined: empty") == 1


def test_scoreboards_own_templates_stay_strict(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "vars": {"name": "Ada"}, "graders": ["exact"], '
                                          '"expected": "x"}\n')
    (tmp_path / "suite.yaml").write_text("cases: cases.jsonl\nsubject: {type: mock}\nprompt: 'Hi {{ user.name }}'\n")
    done = _scoreboard(["run", "suite.yaml", "--output", "r.json"], tmp_path)
    assert done.returncode == 1 and "'user'" in done.stderr
    (tmp_path / "suite.yaml").write_text("cases: cases.jsonl\nsubject: {type: mock}\nprompt: 'Hi {{ user.name }}'\n"
                                         "template_undefined: empty\n")
    done = _scoreboard(["run", "suite.yaml", "--output", "r.json"], tmp_path)
    assert done.returncode in (0, 3), done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["attempts"][0]["output"]["text"] == "Hi "
    assert report["plan"]["variants"][0]["prompt"]["undefined"] == "empty"


def test_http_and_ollama_providers_run_against_loopback_servers(tmp_path, monkeypatch):
    with FakeProvider() as srv:
        srv.set_default("generic", {"reply": lambda req: "echo " + req["input"] + " " + req["mode"]})
        srv.set_default("chat", {"reply": "from ollama"})
        monkeypatch.setenv("OLLAMA_BASE_URL", srv.base_url)
        report_md, report = _import_and_run(tmp_path, f"""prompts: ['Q: {{{{ q }}}}']
providers:
  - id: https
    label: svc
    config:
      url: {srv.base_url}/generic
      method: post
      headers: {{X-Team: evals}}
      body: {{input: '{{{{ prompt }}}}', mode: fast}}
      transformResponse: 'json.output["text"]'
  - id: ollama:chat:llama3.2
    config: {{temperature: 0, num_predict: 50}}
tests:
  - vars: {{q: hi}}
    assert:
      - {{type: icontains-any, value: ['echo Q: hi fast', 'from ollama']}}
""")
        requests = list(srv.requests)
    outputs = {a["variant"]: a["output"]["text"] for a in report["attempts"]}
    # providers/http.ts: the body's {{prompt}} is the rendered prompt, transformResponse reads the
    # parsed JSON; the ollama chat model answers on its OpenAI-compatible endpoint
    assert outputs == {"svc": "echo Q: hi fast", "ollama-chat-llama3.2": "from ollama"}
    generic = next(r for r in requests if r["path"].endswith("/generic"))
    assert generic["json"] == {"input": "Q: hi", "mode": "fast"} and generic["headers"]["x-team"] == "evals"
    chat = next(r for r in requests if r["path"].endswith("/chat/completions"))
    assert chat["json"]["model"] == "llama3.2" and chat["json"]["temperature"] == 0
    assert chat["json"]["max_tokens"] == 50  # Ollama's num_predict
    assert "OpenAI-compatible endpoint" in report_md


def test_http_providers_that_do_not_map_are_listed(tmp_path):
    (tmp_path / "c.yaml").write_text("""prompts: [x]
providers:
  - {id: http, config: {url: 'http://127.0.0.1:9/a', body: {q: '{{q}}'}, transformResponse: json.out}}
  - {id: http, config: {url: 'http://127.0.0.1:9/a', body: {p: '{{prompt}}'}, transformResponse: 'json.a.map(x => x)'}}
  - {id: 'ollama:chat:m', config: {num_ctx: 4096}}
""")
    done = _scoreboard(["import", "promptfoo", "c.yaml", "--output", "out", "--run-code"], tmp_path)
    assert done.returncode == 3
    assert "names test vars" in done.stdout and "not a property path" in done.stdout
    assert "'num_ctx' has no OpenAI-compatible parameter" in done.stdout
