"""The GitHub Action: its step script run locally with the environment GitHub sets (step summary,
outputs, event file, API URL, token) against a loopback fake of the GitHub API, and action.yml
itself, read and its shell steps run as the runner would (no network: the install is shimmed)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.servers.fake_github import FakeGitHub

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "ghs_" + "s3cr3t" * 6
CASES = 8


@pytest.fixture
def gh():
    with FakeGitHub(token=TOKEN) as server:
        yield server


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository checkout: a suite of 8 questions answered by a python function that reads
    its answers from answers.json (so a test can make the next run worse)."""
    evals = tmp_path / "repo" / "evals"
    evals.mkdir(parents=True)
    (evals / "app.py").write_text(
        "import json, pathlib\n"
        "def answer(text):\n"
        "    return json.loads((pathlib.Path(__file__).parent / 'answers.json').read_text())[text]\n")
    set_answers(evals, wrong=())
    (evals / "cases.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "input": f"question {i}",
                                                           "expected": f"answer {i}"}) + "\n" for i in range(CASES)))
    (evals / "suite.yaml").write_text("name: qa\ncases: cases.jsonl\ngraders: [exact]\n"
                                      "subject: {type: python, function: 'app:answer'}\nformats: [json, md, html]\n")
    return tmp_path / "repo"


def set_answers(evals: Path, wrong) -> None:
    answers = {f"question {i}": ("wrong" if i in wrong else f"answer {i}") for i in range(CASES)}
    (evals / "answers.json").write_text(json.dumps(answers))


def github_env(work: Path, api: str, event: dict) -> dict:
    """What the runner sets for a step (the files fresh for each step)."""
    gh_dir = work.parent / "github"
    gh_dir.mkdir(exist_ok=True)
    (gh_dir / "event.json").write_text(json.dumps(event))
    for name in ("summary.md", "output.txt"):
        (gh_dir / name).write_text("")
    return {**os.environ, "GITHUB_STEP_SUMMARY": str(gh_dir / "summary.md"),
            "GITHUB_OUTPUT": str(gh_dir / "output.txt"), "GITHUB_EVENT_PATH": str(gh_dir / "event.json"),
            "GITHUB_API_URL": api, "GITHUB_REPOSITORY": "octo/app", "GITHUB_TOKEN": TOKEN,
            "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "42"}


def parse_outputs(text: str) -> dict[str, str]:
    """$GITHUB_OUTPUT as the runner reads it: name=value, or name<<DELIM ... DELIM."""
    out, lines, i = {}, text.splitlines(), 0
    while i < len(lines):
        if "<<" in lines[i] and "=" not in lines[i].split("<<")[0]:
            name, delim = lines[i].split("<<", 1)
            end = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
        else:
            name, _, value = lines[i].partition("=")
            out[name] = value
            i += 1
    return out


class Step:
    def __init__(self, done: subprocess.CompletedProcess, env: dict):
        self.code, self.stdout, self.stderr = done.returncode, done.stdout, done.stderr
        self.outputs = parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text())
        self.summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()


def step(project: Path, api: str, *args: str, event: dict | None = None) -> Step:
    env = github_env(project, api, event if event is not None else {"pull_request": {"number": 7}})
    done = subprocess.run([sys.executable, "-m", "scoreboard.cli.github_action", "evals/suite.yaml", *args],
                          cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False)
    return Step(done, env)


def assert_no_token(*texts: str) -> None:
    for text in texts:
        assert TOKEN not in text and "s3cr3t" not in text


def test_the_step_runs_the_suite_sets_its_outputs_and_writes_the_summary(project, gh):
    done = step(project, gh.url, "--args", "--fail-under 0.9")
    assert done.code == 0, done.stderr
    out = done.outputs
    assert out["verdict"] == "passed" and out["exit-code"] == "0" and out["pass-rate"] == "1.0000"
    assert json.loads(out["pass-rates"]) == {"answer": 1.0}
    report = Path(out["report"])
    assert report.is_absolute() and json.loads(report.read_text())["run"]["suite"] == "qa"
    files = out["reports"].splitlines()
    assert {Path(f).suffix for f in files} == {".json", ".md", ".html", ""}
    assert all(Path(f).exists() for f in files) and (report.with_suffix("") / "attempts.jsonl").exists()
    assert done.summary.startswith("# scoreboard report: qa") and "## Gates" in done.summary
    assert out["comment"] == "skipped" and gh.requests == []  # no baseline: nothing to compare


def test_a_pull_request_gets_one_comment_with_the_comparison_updated_on_each_run(project, gh):
    base = Path(step(project, gh.url).outputs["report"])
    shutil.copy(base, project / "main.json")
    other = gh.add_comment(7, "LGTM")
    set_answers(project / "evals", wrong={2, 5})
    done = step(project, gh.url, "--baseline", "main.json", "--max-regression", "0.1")
    assert done.code == 3, done.stderr  # 25 points worse than the baseline: the gate fails the job
    assert done.outputs["verdict"] == "gates-failed" and done.outputs["pass-rate"] == "0.7500"
    assert done.outputs["comment"] == "created"
    (mine,) = [c for cid, c in gh.comments.items() if cid != other]
    body = mine["body"]
    assert mine["number"] == 7 and body.startswith("<!-- scoreboard-comment:qa -->")
    assert "### scoreboard · qa: ❌ a gate failed" in body
    assert "| answer | 100.0% | 75.0% | -25.0 points | 0 | 2 | 6 |" in body
    assert "- ❌ answer vs baseline answer: 75.0% vs 100.0% on 8 shared cases" in body
    assert "- ⚠️ small sample: fewer than 30 cases" in body
    assert "(https://github.com/octo/app/actions/runs/42)" in body
    assert "#### Compared with the baseline" in done.summary and "-25.0 points" in done.summary
    methods = [(m, path.split("?")[0]) for m, path, _, _ in gh.requests]
    assert methods == [("GET", "/repos/octo/app/issues/7/comments"), ("POST", "/repos/octo/app/issues/7/comments")]
    assert all(h["Authorization"] == f"Bearer {TOKEN}" for _, _, h, _ in gh.requests)
    # the next push to the pull request updates that comment instead of adding one
    set_answers(project / "evals", wrong={2})
    again = step(project, gh.url, "--baseline", "main.json", "--max-regression", "0.1")
    assert again.code == 3 and again.outputs["comment"] == "updated"
    assert len(gh.comments) == 2 and gh.comments[other]["body"] == "LGTM"
    assert "| answer | 100.0% | 87.5% | -12.5 points | 0 | 1 | 7 |" in gh.comments[max(gh.comments)]["body"]
    assert gh.requests[-1][0] == "PATCH"
    reports = "".join(p.read_text(errors="replace") for p in (project / "eval-results").rglob("*") if p.is_file())
    assert_no_token(done.stdout, done.stderr, done.summary, json.dumps(done.outputs), again.stdout, again.stderr,
                    reports)


def test_the_comment_updated_is_the_actions_own_never_someone_elses_that_mentions_the_marker(project, gh):
    """A reviewer quoting the action's comment, a comment that mentions its hidden marker, or one
    that copies the comment whole (which the token may not edit: 403) is left alone: the action
    updates its own comment, or adds one."""
    from tests.servers.fake_github import BOT

    base = Path(step(project, gh.url).outputs["report"])
    shutil.copy(base, project / "main.json")
    mark = "<!-- scoreboard-comment:qa -->"
    quoted = gh.add_comment(7, f"> {mark}\n> ### scoreboard · qa\n\nWhy did this fail?")
    mention = gh.add_comment(7, f"the action's comment starts with `{mark}`")
    copied = gh.add_comment(7, f"{mark}\n### scoreboard · qa: copied by hand")
    done = step(project, gh.url, "--baseline", "main.json")
    assert done.code == 0, done.stderr
    assert done.outputs["comment"] == "created"  # the copy could not be edited (403): a new one
    (mine,) = [cid for cid, c in gh.comments.items() if c["user"] == BOT]
    assert gh.comments[copied]["body"].endswith("copied by hand")
    assert [m for m, *_ in gh.requests] == ["GET", "PATCH", "POST"]
    set_answers(project / "evals", wrong={1})
    again = step(project, gh.url, "--baseline", "main.json")
    assert again.outputs["comment"] == "updated" and len(gh.comments) == 4
    assert "87.5%" in gh.comments[mine]["body"]
    assert gh.comments[quoted]["body"].startswith("> ") and gh.comments[mention]["body"].startswith("the action")
    assert gh.comments[copied]["body"].endswith("copied by hand")


def test_a_comment_that_cannot_be_posted_is_a_warning_and_the_gates_still_decide(project, gh):
    shutil.copy(Path(step(project, gh.url).outputs["report"]), project / "main.json")
    gh.fail_with = 403  # a fork's read-only token
    done = step(project, gh.url, "--baseline", "main.json", "--max-regression", "0.1")
    assert done.code == 0 and done.outputs["comment"] == "failed" and done.outputs["verdict"] == "passed"
    assert "could not comment on the pull request: GET /issues/7/comments" in done.stderr
    assert "HTTP 403: Resource not accessible by integration" in done.stderr
    assert "could not comment" in done.summary
    # an API that cannot be reached does not turn a failed gate into a pass (nor the reverse)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    set_answers(project / "evals", wrong={0, 1, 2})
    down = step(project, closed, "--baseline", "main.json", "--max-regression", "0.1")
    assert down.code == 3 and down.outputs["comment"] == "failed" and "Connection refused" in down.stderr
    assert_no_token(done.stdout, done.stderr, done.summary, down.stdout, down.stderr)


def test_no_comment_outside_a_pull_request_and_bad_input_exits_1(project, gh):
    shutil.copy(Path(step(project, gh.url).outputs["report"]), project / "main.json")
    push = step(project, gh.url, "--baseline", "main.json", event={"ref": "refs/heads/main", "commits": []})
    assert push.code == 0 and push.outputs["comment"] == "skipped" and gh.requests == []
    assert "not a pull request event" in push.stdout and "#### Compared with the baseline" in push.summary
    missing = step(project, gh.url, "--args", "--cases nope.jsonl")
    assert missing.code == 1 and missing.outputs["verdict"] == "invalid"
    assert len(missing.stderr.strip().splitlines()) == 1 and "nope.jsonl" in missing.stderr
    lone = step(project, gh.url, "--max-regression", "0.1")
    assert lone.code == 1 and "--max-regression needs --baseline" in lone.stderr


# ---- action.yml ----------------------------------------------------------------------------

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def evaluate(expr: str, ctx: dict):
    """A dotted context path (inputs.x, github.action_path, steps.run.outputs.x): all the action uses."""
    value = ctx
    for part in expr.split("."):
        value = value[part]
    return value


def substitute(text: str, ctx: dict) -> str:
    return EXPR.sub(lambda m: str(evaluate(m[1], ctx)), text)


def condition(text: str, ctx: dict) -> bool:
    """`always()` and `PATH != ''` joined by &&, the only forms the action uses (others fail)."""
    results = []
    for term in (t.strip() for t in text.split("&&")):
        if term == "always()":
            results.append(True)
        else:
            path = re.fullmatch(r"([\w.-]+) != ''", term)
            assert path, f"condition form not understood: {term}"
            results.append(evaluate(path[1], ctx) != "")
    return all(results)


def test_action_yml_declares_what_its_steps_use():
    spec = action()
    assert spec["runs"]["using"] == "composite"
    inputs, steps = spec["inputs"], spec["runs"]["steps"]
    assert inputs["suite"]["required"] is True
    text = (ROOT / "action.yml").read_text()
    used = {m[1].split(".")[1] for m in EXPR.finditer(text) if m[1].startswith("inputs.")}
    assert used <= set(inputs) and {"suite", "baseline", "max-regression", "args", "python-version", "extras",
                                     "github-token"} <= used
    ids = {s.get("id") for s in steps}
    for name, out in spec["outputs"].items():
        m = re.fullmatch(r"\$\{\{ steps\.(\w+)\.outputs\.([\w-]+) \}\}", out["value"])
        assert m and m[1] in ids and m[2] == name
    uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
    assert uses == ["actions/setup-python", "actions/upload-artifact"]
    run_step = next(s for s in steps if s.get("id") == "run")
    assert "python -m scoreboard.cli.github_action" in run_step["run"] and "${{" not in run_step["run"]
    assert "${{ github.action_path }}" in next(s for s in steps if s.get("id") == "install")["env"].values()


def test_the_composite_steps_run_as_written(project, gh, tmp_path):
    """Every step of action.yml as the runner runs it: `run` steps in bash with their env and
    working directory, outputs read from GITHUB_OUTPUT; `uses` steps checked, not run; pip
    replaced by a shim that records what would be installed."""
    shutil.copy(Path(step(project, gh.url).outputs["report"]), project / "main.json")
    gh.requests.clear()
    set_answers(project / "evals", wrong={3})
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python").write_text(f'#!/bin/bash\nif [ "$1 $2" = "-m pip" ]; then echo "$@" >> "{tmp_path}/pip.log"; '
                                 f'exit 0; fi\nexec "{sys.executable}" "$@"\n')
    (shim / "python").chmod(0o755)
    spec = action()
    given = {"suite": "evals/suite.yaml", "baseline": "main.json", "max-regression": "0.05",
             "args": "--runs 2 --fail-under 0.8", "extras": "tokens", "working-directory": "repo"}
    ctx = {"github": {"action_path": str(ROOT), "token": TOKEN, "workspace": str(project.parent)}, "steps": {}}
    ctx["inputs"] = {name: given.get(name, substitute(str(i.get("default", "")), ctx))
                     for name, i in spec["inputs"].items()}
    uploaded = None
    for s in spec["runs"]["steps"]:
        if "if" in s and not condition(s["if"], ctx):
            continue
        with_ = {k: substitute(str(v), ctx) for k, v in (s.get("with") or {}).items()}
        if s.get("uses", "").startswith("actions/setup-python"):
            assert with_ == {"python-version": "3.12"}
            continue
        if s.get("uses", "").startswith("actions/upload-artifact"):
            uploaded = with_
            continue
        env = github_env(project, gh.url, {"pull_request": {"number": 9}})
        env.pop("GITHUB_TOKEN")  # the step gets it from its own env, from the github-token input
        env.update({k: substitute(str(v), ctx) for k, v in (s.get("env") or {}).items()})
        env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
        cwd = project.parent / substitute(s.get("working-directory", "."), ctx)
        script = tmp_path / f"{s['id']}.sh"
        script.write_text(substitute(s["run"], ctx))
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        ctx["steps"][s["id"]] = {"outputs": parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text()),
                                 "code": done.returncode, "stderr": done.stderr}
    assert (tmp_path / "pip.log").read_text().split()[-1] == f"{ROOT}[tokens]"
    run = ctx["steps"]["run"]
    # 7 of 8 right, twice each: 87.5% passes --fail-under 0.8 but drops 12.5 points > 5 from main
    assert run["code"] == 3, run["stderr"]
    assert run["outputs"]["verdict"] == "gates-failed" and run["outputs"]["comment"] == "created"
    assert [c["number"] for c in gh.comments.values()] == [9]
    assert uploaded["name"] == "scoreboard-reports" and uploaded["if-no-files-found"] == "warn"
    paths = uploaded["path"].splitlines()
    assert paths and all(Path(p).is_absolute() and Path(p).exists() for p in paths)
    assert any(p.endswith(".json") for p in paths) and any(Path(p).is_dir() for p in paths)
