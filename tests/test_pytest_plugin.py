"""The pytest plugin, run by pytest itself (pytester): one test per case with the failed graders
and the output in its message, `-k` selecting cases (only those run), the gates test, the report
paths in the terminal summary, pytest-xdist running each case once, and the pytest11 entry point.
The subject is an OpenAI-compatible model on a loopback server, whose request log counts the
attempts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "scoreboard.testing.plugin"
ANSWERS = {"capital of France": "Paris", "capital of Italy": "Milan", "2+2": "4"}
CASES = [{"id": "france", "input": "capital of France", "expected": "Paris", "category": "geo"},
         {"id": "italy", "input": "capital of Italy", "expected": "Rome", "category": "geo"},
         {"id": "sum", "input": "2+2", "expected": "4", "tags": ["math"]}]


def plugin_args() -> list[str]:
    """`-p` the plugin unless the installed scoreboard registers it already (the entry point)."""
    installed = [ep for ep in metadata.entry_points(group="pytest11") if ep.name == "scoreboard"]
    return [] if installed else ["-p", ENTRY]


def reply(request: dict) -> str:
    prompt = request["messages"][-1]["content"]
    return ANSWERS.get(prompt, f"echo {prompt}")


def write_suite(root: Path, srv, cases=CASES, **settings) -> Path:
    evals = root / "evals"
    evals.mkdir(exist_ok=True)
    (evals / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = {"name": "capitals", "cases": "cases.jsonl", "graders": ["exact"], "formats": ["json", "md"],
             "subject": {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m",
                         "retries": {"attempts": 1, "base_delay_s": 0.01, "max_delay_s": 0.01}},
             **settings}
    (evals / "suite.yaml").write_text(json.dumps(suite), encoding="utf-8")  # JSON is YAML
    return evals / "suite.yaml"


@pytest.fixture(scope="module", autouse=True)
def warm(tmp_path_factory):
    """A run in this process before any of pytester's in-process runs: pytester drops the modules
    a run imported first, and a C extension (numpy's, PyYAML's) cannot be imported twice."""
    import scoreboard.testing.plugin  # noqa: F401
    from scoreboard.engine.pipeline import RunOptions, run
    from scoreboard.suite.load import load_suite

    root = tmp_path_factory.mktemp("warm")
    (root / "cases.jsonl").write_text('{"id": "w", "input": "w", "expected": "w"}\n')
    (root / "suite.yaml").write_text("cases: cases.jsonl\ngraders: [exact]\nformats: [json, md]\n"
                                     "variants: {a: {subject: mock}, b: {subject: mock}}\n")  # a comparison too
    run(load_suite(root / "suite.yaml", {"output_dir": str(root / "out")}), RunOptions(progress=False))


@pytest.fixture
def srv(fake_provider):
    fake_provider.set_default("chat", {"reply": reply})
    return fake_provider


@pytest.fixture
def evals(pytester, srv):
    """A suite of three cases (italy fails: the model says Milan) gated at 90%, and a test
    module that collects it."""
    write_suite(pytester.path, srv, fail_under=0.9)
    pytester.makepyfile(test_evals="import scoreboard.testing\n"
                                   "suite = scoreboard.testing.suite('evals/suite.yaml')\n")
    return srv


def prompts(srv) -> list[str]:
    return sorted(r["json"]["messages"][-1]["content"] for r in srv.requests_to("chat"))


def report_paths(stdout: str) -> dict[str, Path]:
    """The report files the terminal summary names ("  json: PATH") for one run."""
    found = re.findall(r"^  (json|md|html|junit): (\S+)$", stdout, re.MULTILINE)
    assert len({fmt for fmt, _ in found}) == len(found), f"more than one run: {found}"
    return {fmt: Path(path) for fmt, path in found}


def test_each_case_is_a_test_whose_failure_names_the_case_graders_and_output(pytester, evals):
    result = pytester.runpytest("-v", *plugin_args())
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*test_evals.py::suite::france PASSED*", "*test_evals.py::suite::italy FAILED*",
                                 "*test_evals.py::suite::sum PASSED*", "*test_evals.py::suite::gates FAILED*"])
    out = result.stdout.str()
    failure = out[out.index('case italy: grader exact failed: expected "Rome", got "Milan" (1 of 1 attempt(s) did '
                            'not pass; '):]
    assert failure.split("\n")[0].endswith("cases.jsonl:2)")
    assert "variant m, run 0: failed" in failure
    assert 'grader exact failed: expected "Rome", got "Milan"' in failure
    assert "  output:\n    Milan\n" in failure
    assert "Traceback" not in out and "plugin.py" not in out
    assert "gate failed: m: pass rate 66.7% < 90.0%" in out
    # one run of the three cases, its reports where the summary says
    assert prompts(evals) == sorted(ANSWERS)
    paths = report_paths(out)
    assert set(paths) == {"json", "md"}
    report = json.loads((pytester.path / paths["json"]).read_text())
    assert [c["id"] for c in report["plan"]["cases"]] == ["france", "italy", "sum"]
    assert [a["status"] for a in report["attempts"]] == ["passed", "failed", "passed"]
    assert (pytester.path / paths["md"]).read_text().startswith("# scoreboard report: capitals")
    assert "capitals: m 66.7% (2/3 attempts); 1 of 1 gate(s) failed (exit code 3)" in out


def test_k_selects_cases_and_only_the_selected_cases_run(pytester, evals):
    result = pytester.runpytest("-k", "france or sum", *plugin_args())
    result.assert_outcomes(passed=2, deselected=2)
    assert prompts(evals) == ["2+2", "capital of France"]
    report = json.loads((pytester.path / report_paths(result.stdout.str())["json"]).read_text())
    assert [c["id"] for c in report["plan"]["cases"]] == ["france", "sum"]
    # a case's category and tags are keywords too
    evals.reset()
    result = pytester.runpytest("-k", "geo", *plugin_args())
    result.assert_outcomes(passed=1, failed=1, deselected=2)
    assert prompts(evals) == ["capital of France", "capital of Italy"]


def test_the_gates_test_alone_runs_the_whole_suite(pytester, evals):
    result = pytester.runpytest("-k", "gates", *plugin_args())
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines(["*suite capitals on all 3 case(s): gate failed: m: pass rate 66.7% < 90.0%",
                                 "  gate failed: m: pass rate 66.7% < 90.0%"])
    assert prompts(evals) == sorted(ANSWERS)


def test_gates_on_a_selection_say_so_and_a_suite_without_gates_skips_them(pytester, srv):
    write_suite(pytester.path, srv)
    pytester.makepyfile(test_evals="import scoreboard.testing\n"
                                   "lenient = scoreboard.testing.suite('evals/suite.yaml', fail_under=0.5)\n"
                                   "ungated = scoreboard.testing.suite('evals/suite.yaml', name='ungated')\n")
    result = pytester.runpytest("-rs", "-k", "lenient and (italy or sum or gates) or ungated and gates",
                                *plugin_args())
    result.assert_outcomes(passed=2, failed=1, skipped=1, deselected=4)
    result.stdout.fnmatch_lines(["*suite ungated sets no gate (fail_under, fail_under_metrics, gates.baseline)*"])
    # the lenient suite ran its two selected cases; the ungated one (gates only) all three
    assert len(evals_requests := srv.requests_to("chat")) == 5, evals_requests
    out = result.stdout.str()
    reports = [json.loads((pytester.path / p).read_text()) for p in re.findall(r"^  json: (\S+)$", out, re.MULTILINE)]
    assert sorted((r["run"]["suite"], len(r["plan"]["cases"])) for r in reports) == [("capitals", 2), ("ungated", 3)]
    assert "capitals: m 50.0% (1/2 attempts); 1 gate(s) passed" in out
    assert "ungated: m 66.7% (2/3 attempts); no gate" in out


def test_execution_errors_fail_their_case_with_the_error(pytester):
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "flaky_app.py").write_text(
        "def answer(text):\n    if text == 'boom':\n        raise RuntimeError('the model went away')\n"
        "    return text\n")
    (pytester.path / "evals" / "cases.jsonl").write_text(
        '{"id": "ok", "input": "fine", "expected": "fine"}\n{"id": "bad", "input": "boom", "expected": "x"}\n')
    (pytester.path / "evals" / "suite.yaml").write_text(
        "cases: cases.jsonl\ngraders: [exact]\nsubject: {type: python, function: 'flaky_app:answer'}\n")
    pytester.makepyfile(test_evals="from scoreboard.testing import suite\ns = suite('evals/suite.yaml')\n"
                                   "priced = suite('evals/suite.yaml', name='priced', case=['ok'], "
                                   "graders=[{'max-cost': 0.01}])\n")
    result = pytester.runpytest("-rs", *plugin_args())
    # s: ok passes, bad errors, no gate; priced: ok's cost is unknown, so not assessed (skipped)
    result.assert_outcomes(passed=1, failed=1, skipped=3)
    result.stdout.fnmatch_lines(["*variant answer, run 0: error*", "*error: *the model went away*"])
    result.stdout.fnmatch_lines(["SKIPPED*case ok (*cases.jsonl:1): 1 of 1 attempt(s) not assessed*"])
    assert "grader max-cost not assessed: cost unknown" in result.stdout.str()


def test_a_bad_suite_is_a_collection_error_naming_the_file_and_field(pytester, srv):
    write_suite(pytester.path, srv, runs=0)
    pytester.makepyfile(test_evals="import scoreboard.testing\nsuite = scoreboard.testing.suite('evals/suite.yaml')\n")
    result = pytester.runpytest(*plugin_args())
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*scoreboard: *suite.yaml*runs*"])
    assert srv.requests_to("chat") == []
    pytester.makepyfile(test_evals="import scoreboard.testing\n"
                                   "suite = scoreboard.testing.suite('evals/suite.yaml', fail_undr=0.9)\n")
    result = pytester.runpytest(*plugin_args())
    result.stdout.fnmatch_lines(["*unknown setting(s) fail_undr*"])
    (pytester.path / "evals" / "cases.jsonl").write_text('{"id": "gates", "input": "2+2", "expected": "4"}\n')
    write_suite(pytester.path, srv, cases=[{"id": "gates", "input": "2+2", "expected": "4"}])
    pytester.makepyfile(test_evals="import scoreboard.testing\nsuite = scoreboard.testing.suite('evals/suite.yaml')\n")
    result = pytester.runpytest(*plugin_args())
    result.stdout.fnmatch_lines(["*a case is named 'gates', the name of the suite's gates test*"])


def test_suite_files_matched_by_the_ini_option_are_collected(pytester, srv):
    write_suite(pytester.path, srv, fail_under=0.5)
    pytester.makeini("[pytest]\nscoreboard_suites = evals/*.yaml\n")
    result = pytester.runpytest("-v", *plugin_args())
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*evals/suite.yaml::italy FAILED*", "*evals/suite.yaml::gates PASSED*"])


def test_under_xdist_each_case_runs_once_and_the_gates_see_every_case(pytester, srv):
    cases = [{"id": f"c{i}", "input": f"question {i}", "expected": f"echo question {i}" if i % 4 else "no"}
             for i in range(12)]
    write_suite(pytester.path, srv, cases=cases, fail_under=0.9, concurrency=2)
    pytester.makepyfile(test_evals="import scoreboard.testing\nsuite = scoreboard.testing.suite('evals/suite.yaml')\n",
                        test_plain="def test_a(): pass\ndef test_b(): pass\n")
    result = pytester.runpytest_subprocess("-n", "2", "-v", "-p", "no:cacheprovider", *plugin_args(), timeout=120)
    result.assert_outcomes(passed=9 + 2, failed=3 + 1)
    out = result.stdout.str()
    # both workers got cases of the suite; one ran them all, the other read that run's results
    workers = set(re.findall(r"^\[(gw\d)\] .* test_evals\.py::suite::c\d+", out, re.MULTILINE))
    assert workers == {"gw0", "gw1"}, out
    asked = prompts(srv)
    assert asked == sorted(f"question {i}" for i in range(12))  # each case exactly once
    report = json.loads((pytester.path / report_paths(out)["json"]).read_text())
    assert len(report["attempts"]) == 12
    assert "gate failed: m: pass rate 75.0% < 90.0%" in out
    reports = list((pytester.path / "eval-results" / "capitals").glob("*.json"))
    assert len(reports) == 1


def test_under_github_actions_the_summary_ends_with_the_runs_annotations(pytester, evals, monkeypatch):
    """As `scoreboard run` prints them under GitHub Actions: the failed gate, then each failed
    case at its case file's line; after the report paths, once, and never outside GitHub."""
    outside = pytester.runpytest(*plugin_args()).stdout.str()
    assert not [line for line in outside.splitlines() if line.startswith("::")]
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    out = pytester.runpytest(*plugin_args()).stdout.str()
    lines = [line for line in out.splitlines() if line.startswith("::")]
    assert lines == ["::error title=scoreboard gate::gate failed: m: pass rate 66.7%25 < 90.0%25",
                     "::warning file=evals/cases.jsonl,line=2,title=scoreboard case failed::case italy (m): 1 failed: "
                     'exact: expected "Rome", got "Milan"'], out
    assert out.index(lines[0]) > out.index("  json: ")


def test_under_xdist_and_github_actions_a_workers_run_is_annotated_once(pytester, srv, monkeypatch):
    write_suite(pytester.path, srv, cases=[{"id": f"c{i}", "input": f"q{i}", "expected": "no" if i == 3 else f"echo q{i}"}
                                           for i in range(6)], fail_under=0.5)
    pytester.makepyfile(test_evals="import scoreboard.testing\nsuite = scoreboard.testing.suite('evals/suite.yaml')\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", *plugin_args(), timeout=120)
    result.assert_outcomes(passed=6, failed=1)
    lines = [line for line in result.stdout.str().splitlines() if line.startswith("::")]
    assert lines == ["::warning file=evals/cases.jsonl,line=4,title=scoreboard case failed::case c3 (m): 1 failed: "
                     'exact: expected "no", got "echo q3"'], result.stdout.str()


def test_the_entry_point_makes_the_plugin_available(tmp_path, pytester, srv):
    """pyproject registers the plugin in the pytest11 group; a distribution with that entry point
    on the path is loaded by pytest with no -p, and -p no:scoreboard turns it off."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["pytest11"] == {"scoreboard": ENTRY}
    assert "pytest-xdist>=3.5" in project["project"]["optional-dependencies"]["test"]
    site = tmp_path / "site"
    info = site / "scoreboard_probe-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: scoreboard-probe\nVersion: 0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in project["project"]["entry-points"]["pytest11"].items())
    (info / "entry_points.txt").write_text("[pytest11]\n" + lines)
    write_suite(pytester.path, srv)
    pytester.makepyfile(test_evals="import scoreboard.testing\nsuite = scoreboard.testing.suite('evals/suite.yaml')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTEST_ADDOPTS", None)
    run = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q"]
    done = subprocess.run(run, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert "test_evals.py::suite::italy" in done.stdout, done.stdout + done.stderr
    off = subprocess.run([*run, "-p", "no:scoreboard"], cwd=pytester.path, env=env, capture_output=True, check=False,
                         text=True, timeout=120)
    assert "test_evals.py::suite::italy" not in off.stdout and "no tests collected" in off.stdout, off.stdout


def test_a_suite_runs_once_across_processes_sharing_a_folder(tmp_path):
    """The xdist coordination, two coordinators standing for two workers: the first to ask runs
    the suite, the second reads the published result and runs nothing; a claimant that died
    before publishing is an error, not a hang."""
    from scoreboard.testing.runs import Coordinator, wait_for

    calls = []
    first, second = Coordinator(str(tmp_path)), Coordinator(str(tmp_path))
    info = first.result("k", lambda: calls.append("first") or {"suite": "s", "exit_code": 0, "paths": {}})
    assert second.result("k", lambda: calls.append("second") or {}) == info
    assert calls == ["first"] and first.ran == [info] and second.ran == []
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=False)
    (tmp_path / "gone.lock").write_text(dead.stdout.strip())
    assert "ended before its run finished" in wait_for(tmp_path / "gone.lock", tmp_path / "gone.json")["error"]


def test_with_several_variants_each_case_has_a_test_per_variant(pytester):
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "two_apps.py").write_text(
        "def old(text):\n    return text.upper()\n\ndef new(text):\n    return text\n")
    (pytester.path / "evals" / "cases.jsonl").write_text(
        '{"id": "a", "input": "x", "expected": "x"}\n{"id": "b", "input": "Y", "expected": "Y"}\n')
    (pytester.path / "evals" / "suite.yaml").write_text(
        "cases: cases.jsonl\ngraders: [exact]\nvariants:\n"
        "  old: {subject: {type: python, function: 'two_apps:old'}}\n"
        "  new: {subject: {type: python, function: 'two_apps:new'}}\n")
    pytester.makepyfile(test_evals="from scoreboard.testing import suite\nab = suite('evals/suite.yaml')\n")
    result = pytester.runpytest("-v", *plugin_args())
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*::ab::a?old? FAILED*", "*::ab::a?new? PASSED*", "*::ab::b?old? PASSED*",
                                 "*::ab::b?new? PASSED*"])
    out = result.stdout.str()
    assert "variant old, run 0: failed" in out and "variant new, run" not in out
    result = pytester.runpytest("-k", "new", *plugin_args())
    result.assert_outcomes(passed=2, deselected=3)
