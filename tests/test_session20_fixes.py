"""Leftovers fixed in the session of 2026-12-06 (eighth): each test runs the real command on files
written under tmp_path, or the public function a user's file reaches."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none"}
    return run_cli(args, cwd, env)


def test_a_python_grader_returning_a_decimal_or_fraction_scores_it_as_the_number_it_holds(tmp_path):
    """`Decimal('0.75')` (money-like arithmetic) or `Fraction(2, 3)` was an error, "returned
    Decimal", on every attempt; each is the number it holds, held against the threshold, and the
    report verifies. A Decimal NaN is still refused as a score."""
    (tmp_path / "subj.py").write_text("def reply(prompt, skill, run, params):\n    return prompt\n")
    (tmp_path / "checks.py").write_text(
        "from decimal import Decimal\nfrom fractions import Fraction\n"
        "def dec(output):\n    return Decimal('0.75')\n"
        "def frac(output):\n    return {'score': Fraction(1, 3), 'named_scores': {'x': Decimal('0.5')}}\n"
        "def nan(output):\n    return Decimal('NaN')\n")
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    (tmp_path / "suite.yaml").write_text(
        "name: dec\ncases: cases.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n"
        "graders:\n  - {python: {file: checks.py, function: dec, threshold: 0.5}}\n"
        "  - {python: {file: checks.py, function: frac, threshold: 0.5}}\n"
        "  - {python: {file: checks.py, function: nan}}\n")
    out = tmp_path / "r.json"
    proc = scoreboard("run", "suite.yaml", "--output", str(out), "--no-progress", cwd=tmp_path)
    assert out.is_file(), proc.stderr
    report = json.loads(out.read_text())
    grades = report["attempts"][0]["grades"]
    dec, frac, nan = grades
    assert dec["passed"] is True and dec["score"] == 0.75, dec
    assert frac["passed"] is False and abs(frac["score"] - 1 / 3) < 1e-12, frac
    assert frac["named_scores"] == {"x": 0.5}, frac
    assert nan["passed"] is None and "nan" in nan["reason"].lower(), nan
    verified = scoreboard("verify", str(out), "--allow-code", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_template_printing_a_list_or_mapping_holding_a_method_is_refused_like_the_method_itself(tmp_path):
    """`{{ [country.upper] }}` and `{{ {'f': country.upper} }}` printed
    "[<built-in method upper of str object at 0x7f...>]": the prompt named a memory address, so it
    changed from run to run (cache keys, resume, the plan's hash) though the bare
    `{{ country.upper }}` was already refused. Now each is the same one-line error naming the case
    and the field; a list of values and a list holding a string that quotes an address still print."""
    (tmp_path / "subj.py").write_text("def reply(prompt, skill, run, params):\n    return prompt\n")
    (tmp_path / "cases.jsonl").write_text('{"id": "fr", "vars": {"country": "France", "s": "<x at 0x1f>"}}\n')
    for n, prompt in enumerate(("{{ [country.upper] }}", "{{ {'f': [1, (country.upper,)]} }}",
                                "{{ [range, 1] }}")):
        (tmp_path / "suite.yaml").write_text(
            "name: t\ncases: cases.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n"
            f"prompt: {json.dumps(prompt)}\ngraders: [{{contains: F}}]\n")
        out = tmp_path / f"r{n}.json"
        proc = scoreboard("run", "suite.yaml", "--output", str(out), "--no-progress", cwd=tmp_path)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "case 'fr'" in lines[0] and "field 'vars'" in lines[0], proc.stderr
        assert " at 0x" not in lines[0] and not out.exists()
    (tmp_path / "suite.yaml").write_text(
        "name: t\ncases: cases.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n"
        "prompt: \"{{ [country, 1, none] }} {{ [s] }} {{ {'k': (2, 3)} }}\"\ngraders: [{contains: F}]\n")
    out = tmp_path / "ok.json"
    proc = scoreboard("run", "suite.yaml", "--output", str(out), "--no-progress", cwd=tmp_path)
    assert out.is_file(), proc.stderr
    assert json.loads(out.read_text())["plan"]["cases"][0]["input"] == \
        "['France', 1, None] ['<x at 0x1f>'] {'k': (2, 3)}"


def test_a_dot_path_with_an_empty_segment_is_refused_when_the_suite_loads(tmp_path):
    """`{json-path: "answer..value"}`, `fields: [{path: "total.", ...}]` and friends read a key
    named "" and missed on every attempt, each attempt failing "missing" with the typo unnamed.
    Now the suite is refused before anything runs: one line naming the grader and the path."""
    (tmp_path / "subj.py").write_text("def reply(prompt, skill, run, params):\n    return '{\"a\": {\"b\": 1}}'\n")
    (tmp_path / "cases.jsonl").write_text('{"id": "c", "input": "x", "expected": {"a": {"b": 1}}}\n')
    for grader, bad in (("{equals: 1, transform: {json-path: 'a..b'}}", "'a..b'"),
                        ("{json-fields: ['a.']}", "'a.'"),
                        ("{fields: [{path: '.a', type: number}]}", "'.a'"),
                        ("{fields: [{path: a, type: object, output_path: 'a..', fields: [{path: b, type: number}]}]}",
                         "'a..'"),
                        ("{one-of: {values: [1], path: 'a..b'}}", "'a..b'")):
        (tmp_path / "suite.yaml").write_text(
            "name: t\ncases: cases.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n"
            f"graders: [{grader}]\n")
        out = tmp_path / "r.json"
        proc = scoreboard("run", "suite.yaml", "--output", str(out), "--no-progress", cwd=tmp_path)
        assert proc.returncode == 1, grader + proc.stdout + proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "empty segment" in lines[0] and bad in lines[0], (grader, proc.stderr)
        assert "suite.yaml" in lines[0] and not out.exists()
    (tmp_path / "suite.yaml").write_text(
        "name: t\ncases: cases.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n"
        "graders: [{equals: 1, transform: {json-path: a.b}}, {json-fields: [a.b]}]\n")
    out = tmp_path / "ok.json"
    proc = scoreboard("run", "suite.yaml", "--output", str(out), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_list_index_in_a_dot_path_is_plain_ascii_digits():
    """`items.+1`, `items. 1`, `items.1_0` and `items.٢` (an Arabic-Indic two) were read as list
    indexes because Python's int() takes them; a path names an index with ASCII digits only, so
    each of these is missing, as a key of that name would be."""
    from scoreboard.graders.base import MISSING_PATH, get_path

    value = {"items": list(range(20))}
    assert get_path(value, "items.1") == 1 and get_path(value, "items.12") == 12
    for path in ("items.+1", "items. 1", "items.1_0", "items.\u0662", "items.-1", "items.20"):
        assert get_path(value, path) is MISSING_PATH, path


def test_an_evals_samples_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    """OpenAI Evals samples with a Latin-1 byte on line 3 said "cannot read it: 'utf-8' codec
    can't decode byte 0xe9 in position 97": no line, and a UTF-16 file (as Windows tools save
    JSONL) read the same. Now the error names the file, the line and the byte, and says when the
    file is UTF-16; nothing is written."""
    reg = tmp_path / "registry"
    (reg / "evals").mkdir(parents=True)
    (reg / "data" / "t").mkdir(parents=True)
    (reg / "evals" / "t.yaml").write_text(
        "t:\n  id: t.v0\n  metrics: [accuracy]\nt.v0:\n  class: evals.elsuite.basic.match:Match\n"
        "  args:\n    samples_jsonl: t/s.jsonl\n")
    line = '{"input": [{"role": "user", "content": "%s"}], "ideal": "x"}\n'
    samples = reg / "data" / "t" / "s.jsonl"
    samples.write_bytes(((line % "a") * 2).encode() + (line % "caf\xe9").encode("latin-1"))
    proc = scoreboard("import", "openai-evals", str(reg / "evals" / "t.yaml"), "--output", "out", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "s.jsonl:3" in proc.stderr and "0xe9" in proc.stderr, proc.stderr
    assert "t.v0.args.samples_jsonl" in proc.stderr and not (tmp_path / "out" / "suite.yaml").exists()
    samples.write_bytes((line % "a").encode("utf-16"))
    proc = scoreboard("import", "openai-evals", str(reg / "evals" / "t.yaml"), "--output", "out2", cwd=tmp_path)
    assert proc.returncode == 1 and "s.jsonl:1" in proc.stderr and "UTF-16" in proc.stderr, proc.stderr


def test_field_accuracy_counts_only_the_errors_of_cases_graded_field_by_field(tmp_path):
    """Field accuracy says how many attempts it could not grade because they errored. It counted
    every error of the variant (statistics version 17), so a case graded by `contains` alone that
    errored read "1 errored, not graded" beside the fields, though it had no field to grade. Now
    only errors of cases a field grader grades (with or without a weight beside it) are counted,
    the report verifies, and a version-17 report is still checked as 17 computed it."""
    (tmp_path / "subj.py").write_text(
        "import json\n"
        "def reply(prompt, skill, run, params):\n"
        "    if prompt.startswith('boom'):\n        raise RuntimeError('subject failed')\n"
        "    return json.dumps({'total': 3})\n")
    cases = [{"id": "f1", "input": "a", "expected": {"total": 3}, "graders": [{"json-fields": ["total"], "weight": 2}]},
             {"id": "f2", "input": "boom-f", "expected": {"total": 3}, "graders": [{"json-fields": ["total"]}]},
             {"id": "d", "input": "boom-d", "graders": [{"contains": "total"}]}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "suite.yaml").write_text(
        "name: f\ncases: cases.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n")
    out = tmp_path / "r.json"
    proc = scoreboard("run", "suite.yaml", "--output", str(out), "--no-progress", "--format", "json,md", cwd=tmp_path)
    assert out.is_file(), proc.stderr
    report = json.loads(out.read_text())
    assert report["summary"]["variants"]["reply"]["errors"] == 2
    assert report["summary"]["variants"]["reply"]["field_accuracy_over"] == {"graded_attempts": 1, "errored_attempts": 1}
    assert "2 errored, not graded" not in (tmp_path / "r.md").read_text()
    assert scoreboard("verify", str(out), cwd=tmp_path).returncode == 0
    # the same report as version 17 computed it: every error counted, and verify checks it so
    report["summary"]["methods"]["version"] = 17
    report["summary"]["variants"]["reply"]["field_accuracy_over"]["errored_attempts"] = 2
    for cat in report["summary"]["variants"]["reply"]["by_category"].values():  # version 20's, not 17's
        for key in ("cases", "units", "ci"):
            cat.pop(key, None)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(report))
    checked = scoreboard("verify", str(old), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_an_undefined_judge_corrected_pass_rate_has_no_interval():
    """Where the judge is no better than chance on the reviewed outputs (Se + Sp <= 1) the
    Rogan-Gladen corrected pass rate is undefined, yet its `ci` held the percentiles of the
    bootstrap draws where it happened to be defined (about a third of them): an interval beside a
    null value. It is now null at both ends, with the draws counted; a defined rate keeps its
    interval, and a version-17 summary is computed as 17 did."""
    import random

    from scoreboard.stats.agreement import judge_agreement
    from scoreboard.stats.methods import computed_as

    rng = random.Random(3)
    plan = {"cases": [{"id": f"c{i}"} for i in range(30)], "variants": [{"name": "a"}], "runs": 1, "seed": 1}
    attempts, human = [], []
    for i in range(30):
        truth, verdict = i % 2 == 0, rng.random() < 0.5  # a judge that guesses
        attempts.append({"case_id": f"c{i}", "variant": "a", "run": 0, "output_hash": f"h{i}",
                         "grades": [{"grader": "llm-judge", "passed": verdict}]})
        human.append({"case_id": f"c{i}", "output_hash": f"h{i}", "verdict": truth, "reviewer_id": "r",
                      "rubric_version": "1"})
    out = judge_agreement(plan, attempts, {"human": human})
    assert out["true_positive_rate"] + out["specificity"] <= 1, out
    corrected = out["corrected_pass_rate"]
    assert corrected["value"] is None and "no better than chance" in corrected["why"]
    assert corrected["ci"]["low"] is None and corrected["ci"]["high"] is None
    assert 0 < corrected["ci"]["undefined_draws"] < corrected["ci"]["resamples"]
    with computed_as(17):
        old = judge_agreement(plan, attempts, {"human": human})["corrected_pass_rate"]["ci"]
    assert old["low"] is not None and old["high"] is not None
    for a, h in zip(attempts, human):  # a judge that agrees with the humans: a defined rate and interval
        a["grades"][0]["passed"] = h["verdict"]
    good = judge_agreement(plan, attempts, {"human": human})["corrected_pass_rate"]
    assert good["value"] == 0.5 and good["ci"]["low"] is not None and good["ci"]["low"] <= 0.5 <= good["ci"]["high"]


def test_a_resume_that_runs_every_attempt_the_budget_refused_ends_completed(tmp_path, monkeypatch):
    """`--max-cost` reserves each request's most it could cost while it is in flight, so three
    requests in flight can refuse a fourth that their real (much lower) cost leaves room for. The
    run stops (exit 2) and `--resume` runs the fourth: every planned attempt ran and passed, yet
    the resumed report said `stopped`, "budget: ... would be exceeded", exit 2 (and verify called
    it "not every planned attempt ran"). The resumed run is now completed, exit 0; a run the
    budget still cuts stays stopped.

    Since the next session a request refused only by other attempts' requests in flight waits
    for them (engine/ledger_wait.py; tests/test_session21_fixes.py), so the same run completes
    at once; a refusal that cannot wait (a batched request's is not waited on) still stops the
    first part, made so here by refusing without waiting, as the ledger did before."""
    from scoreboard.cli.main import main
    from scoreboard.engine.ledger import Ledger
    from tests.servers.fake_provider import FakeProvider

    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"Say {i}."}) + "\n"
                                                  for i in range(4)))
    with FakeProvider(latency_ms=600) as srv:
        (tmp_path / "suite.json").write_text(json.dumps({
            "name": "held", "cases": "cases.jsonl", "concurrency": 4, "graders": [{"contains": "Say"}],
            "subject": {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m", "api_key_required": False,
                        "params": {"max_tokens": 1000}, "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}}))
        args = ["run", "suite.json", "--no-progress", "--max-cost", "0.0065"]
        waited = scoreboard(*args, "--output", "w.json", cwd=tmp_path)
        report = json.loads((tmp_path / "w.json").read_text())
        assert waited.returncode == 0 and report["run"]["status"] == "completed", waited.stdout + waited.stderr
        assert sorted(a["status"] for a in report["attempts"]) == ["passed"] * 4
        assert report["requests"]["cost_spent_usd"] <= 0.0065 and len(srv.requests) == 4
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("SCOREBOARD_STORE", "none")
        with monkeypatch.context() as m:
            m.setattr(Ledger, "_waits", lambda self, attempt, bounds: False)
            first = main([*args, "--output", "r.json"])
        report = json.loads((tmp_path / "r.json").read_text())
        statuses = sorted(a["status"] for a in report["attempts"])
        assert first == 2 and report["run"]["status"] == "stopped", report["run"]
        assert statuses == ["not-run", "passed", "passed", "passed"], statuses
        resumed = scoreboard("run", "--resume", "r", "--no-progress", cwd=tmp_path)
        sent = len(srv.requests) - 4
    report = json.loads((tmp_path / "r.json").read_text())
    assert sorted(a["status"] for a in report["attempts"]) == ["passed"] * 4, report["attempts"]
    assert sent == 4
    assert resumed.returncode == 0 and report["run"]["status"] == "completed", resumed.stdout + resumed.stderr
    assert report["requests"]["cost_spent_usd"] <= 0.0065
    verified = scoreboard("verify", "r.json", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_paired_comparison_of_conversations_says_its_small_sample_in_units():
    """A paired comparison over conversations counts each conversation once (5 units here, from
    4 conversations of 3 turns and a plain case) and its headline says "units", but its flag said
    "small sample: fewer than 30 cases", a count the reader could not find anywhere. Since
    statistics version 19 it says units; a report of version 18 is computed with the old words."""
    from scoreboard.stats.methods import computed_as
    from scoreboard.stats.summary import summarize

    cases = [{"id": f"c{k}/t{t}", "conversation": f"c{k}", "turn_index": t} for k in range(4) for t in range(3)]
    plan = {"cases": cases + [{"id": "plain"}], "variants": [{"name": "a"}, {"name": "b"}], "runs": 1, "seed": 0}
    attempts = [{"case_id": c["id"], "variant": v, "run": 0, "status": "passed" if v == "a" else "failed",
                 "grades": [], "measurements": {}} for c in plan["cases"] for v in ("a", "b")]
    comp = summarize(plan, attempts)["comparisons"][0]
    assert comp["cases"] == 5 and "better on 5 units" in comp["headline"], comp
    assert "small sample: fewer than 30 units (a conversation counts once)" in comp["flags"], comp["flags"]
    assert not any("30 cases" in f for f in comp["flags"])
    with computed_as(18):
        assert "small sample: fewer than 30 cases" in summarize(plan, attempts)["comparisons"][0]["flags"]
    plain = {"cases": [{"id": f"p{i}"} for i in range(3)], "variants": [{"name": "a"}, {"name": "b"}], "runs": 1}
    flat = [{"case_id": f"p{i}", "variant": v, "run": 0, "status": "passed", "grades": [], "measurements": {}}
            for i in range(3) for v in ("a", "b")]
    assert "small sample: fewer than 30 cases" in summarize(plain, flat)["comparisons"][0]["flags"]


def test_a_judge_of_a_case_with_no_expected_answer_is_not_told_to_use_one(tmp_path, monkeypatch, fake_provider):
    """`llm-judge` and `classify` told the judge to decide "using the EXPECTED answer as the
    reference" on every case, though a case without `expected` sends no EXPECTED part: the judge
    was told to use what it was not shown. Now the prompt names what it holds: the EXPECTED
    answer, else the RUBRIC, else what the TASK asks."""
    from scoreboard.engine.pipeline import RunOptions, run
    from scoreboard.suite.load import load_suite
    from tests.servers.fake_provider import FakeProvider

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    cases = [{"id": "with", "input": "What is 2+2?", "expected": "4"}, {"id": "without", "input": "Write a haiku."}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    verdict, choice = {"verdict": True, "explanation": "ok"}, {"choice": "A", "explanation": "ok"}
    prompts: dict[str, list[str]] = {"with": [], "without": []}
    with FakeProvider() as judge:
        subject = {"type": "openai", "base_url": fake_provider.base_url + "/v1", "model": "s"}
        for n, (graders, answer) in enumerate((([{"llm-judge": "Is it good?"}], verdict), (["llm-judge"], verdict),
                                               ([{"classify": {"choices": ["A", "B"]}}], choice))):
            judge.set_default("chat", {"reply": json.dumps(answer)})
            suite = {"name": "j", "cases": "cases.jsonl", "output_dir": str(tmp_path / f"out{n}"), "formats": ["json"],
                     "concurrency": 1, "judge": {"type": "openai", "base_url": judge.base_url + "/v1", "model": "j"},
                     "subject": subject, "graders": graders}
            (tmp_path / "suite.json").write_text(json.dumps(suite))
            seen = len(judge.requests)
            run(load_suite(tmp_path / "suite.json", {}), RunOptions(progress=False))
            for r in judge.requests[seen:]:
                text = r["json"]["messages"][-1]["content"]
                prompts["with" if "2+2" in text else "without"].append(text)
    assert len(prompts["with"]) == len(prompts["without"]) == 3, prompts
    for text in prompts["with"]:
        assert "using the EXPECTED answer as the reference" in text and "EXPECTED:" in text
    rubric, bare, classify = prompts["without"]
    for text in prompts["without"]:
        assert "EXPECTED" not in text, text
    assert "judging by the RUBRIC" in rubric and "RUBRIC:" in rubric, rubric
    assert "judging by what the TASK asks" in bare and "RUBRIC" not in bare, bare
    assert "Classify the ACTUAL answer to the TASK, judging by what the TASK asks" in classify, classify


def test_a_task_check_can_give_partial_credit_as_a_score(tmp_path):
    """A task check returning {"passed": false, "score": 0.5} (half the files right) was recorded
    with score 0.0: the score was dropped without a word. A check's `score` (a number from 0 to 1,
    from a Python check or a command check's last JSON line) is now its grade's score, which the
    case's weighted score reads; the verdict still decides. A score outside [0, 1] is no usable
    verdict (not assessed, said), and the report verifies."""
    task = tmp_path / "tasks" / "t"
    (task / "workspace").mkdir(parents=True)
    (task / "checks").mkdir()
    (task / "workspace" / "README.md").write_text("Write files.\n")
    (task / "checks" / "c.py").write_text(
        "def half(ctx):\n    return {'passed': False, 'score': 0.5, 'reason': '1 of 2 files'}\n"
        "def bad(ctx):\n    return {'passed': True, 'score': 7}\n")
    (task / "checks" / "cmd.py").write_text("import json\nprint(json.dumps({'passed': True, 'score': 0.75}))\n")
    (task / "task.yaml").write_text(
        "id: t\ninstruction: do it\nchecks:\n  - {name: half, python: checks/c.py:half}\n"
        "  - {name: bad, python: checks/c.py:bad}\n  - {name: cmd, run: [python3, checks/cmd.py]}\n")
    (tmp_path / "agent.py").write_text("import json\nprint(json.dumps({'text': 'done'}))\n")
    (tmp_path / "suite.yaml").write_text("name: pc\ncases: tasks\nvariants:\n  a:\n"
                                         "    subject: {type: command, argv: [python3, agent.py]}\n")
    proc = scoreboard("run", "suite.yaml", "--output", "r.json", "--no-progress", cwd=tmp_path)
    assert (tmp_path / "r.json").is_file(), proc.stdout + proc.stderr
    grades = {g["grader"]: g for g in json.loads((tmp_path / "r.json").read_text())["attempts"][0]["grades"]}
    half, bad, cmd = grades["task-check:half"], grades["task-check:bad"], grades["task-check:cmd"]
    assert (half["passed"], half["score"], half["reason"]) == (False, 0.5, "1 of 2 files"), half
    assert (cmd["passed"], cmd["score"]) == (True, 0.75), cmd
    assert bad["passed"] is None and "score" in bad["reason"] and "0 to 1" in bad["reason"], bad
    verified = scoreboard("verify", "r.json", "--allow-code", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_viewer_answers_503_while_its_database_is_away(tmp_path, monkeypatch):
    """While the PostgreSQL server was down every API read answered 500, which reads as a bug in
    the viewer; a lost database is now 503 with Retry-After and the store's one-line error, and a
    damaged store stays a 500."""
    import asyncio

    from aiohttp.test_utils import TestClient, TestServer

    import scoreboard.viewer.app as viewer_app
    from scoreboard.errors import ConfigError
    from scoreboard.store.db import StoreLost
    from scoreboard.store.history import HistoryStore

    store = HistoryStore(tmp_path / "history.sqlite")

    def lost(*args, **kwargs):
        raise StoreLost("the database server closed the connection", file="postgresql://u:***@127.0.0.1:5/db")

    def damaged(*args, **kwargs):
        raise ConfigError("the store file is damaged", file=str(tmp_path / "history.sqlite"))

    async def get(path: str):
        client = TestClient(TestServer(viewer_app.make_app(store, viewer_app.Settings())))
        await client.start_server()
        try:
            response = await client.get(path)
            return response.status, response.headers.get("Retry-After"), await response.json()
        finally:
            await client.close()

    monkeypatch.setattr(viewer_app, "list_runs", lost)
    status, retry, body = asyncio.run(get("/api/runs"))
    assert (status, retry) == (503, "5") and "closed the connection" in body["error"], body
    monkeypatch.setattr(viewer_app, "list_runs", damaged)
    status, retry, body = asyncio.run(get("/api/runs"))
    assert status == 500 and retry is None and "damaged" in body["error"]


def test_history_json_lists_each_runs_gates(tmp_path):
    """`history` prints a run's failed gate under it, but `history --json` (what a CI dashboard
    reads) held no gates: a run that failed its gate read as a completed run with its rates. Each
    run in the JSON now carries its report's gates."""
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n'
                                          '{"id": "b", "input": "yo", "expected": "no"}\n')
    env = {**os.environ, "SCOREBOARD_STORE": str(tmp_path / "h.sqlite")}
    run = ["run", "--cases", "cases.jsonl", "--subject", "mock", "--no-progress",
           "--format", "json"]
    for threshold, code in (("0.9", 3), ("0.5", 0)):
        done = run_cli([*run, "--fail-under", threshold], tmp_path, env)
        assert done.returncode == code, done.stdout + done.stderr
    listed = run_cli(["history", "--json"], tmp_path, env)
    runs = json.loads(listed.stdout)["runs"]
    assert [[(g["passed"], g["description"]) for g in r["gates"]] for r in runs] == [
        [(True, "mock: pass rate 50.0% ≥ 50.0%")], [(False, "mock: pass rate 50.0% < 90.0%")]], runs


def test_a_gate_flag_that_replaces_the_suites_gates_says_which_it_drops(tmp_path):
    """The README's rule is that a flag overrides the suite's setting, but nothing said it
    happened: a CI line's `--fail-under careful=0.4` over a suite's `fail_under: {basic: 0.9}` left
    basic with no gate at all, and the run passed (exit 0) where the suite alone failed (exit 3).
    The run now warns, naming the suite file's line, the flag and the gate it no longer applies; a
    flag repeating the suite's own gate says nothing."""
    (tmp_path / "subj.py").write_text("def reply(prompt, skill, run, params):\n    return prompt\n")
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "hi"}\n{"id": "b", "input": "yo"}\n')
    (tmp_path / "suite.yaml").write_text(
        "name: g\ncases: c.jsonl\nvariants:\n"
        "  basic: {subject: {type: python, function: 'subj:reply', model_free: true}}\n"
        "  careful: {subject: {type: python, function: 'subj:reply', model_free: true}, params: {x: 1}}\n"
        "graders: [{contains: hi}]\nfail_under: {basic: 0.9}\nfail_under_metrics: {'basic:pass_rate': 0.9}\n")
    alone = scoreboard("run", "suite.yaml", "--no-progress", "--output", "a.json", cwd=tmp_path)
    assert alone.returncode == 3 and "replaces" not in alone.stderr, alone.stderr
    flagged = scoreboard("run", "suite.yaml", "--no-progress", "--output", "b.json", "--fail-under", "careful=0.4",
                         "--fail-under-metric", "basic:pass_rate=0.2", cwd=tmp_path)
    assert flagged.returncode == 0, flagged.stdout + flagged.stderr
    lines = [line for line in flagged.stderr.splitlines() if "replaces" in line]
    assert len(lines) == 2, flagged.stderr
    assert lines[0].startswith("scoreboard: warning: suite.yaml:7, field 'fail_under': flag --fail-under replaces"), lines
    assert "its gate on 'basic' is not applied in this run" in lines[0]
    assert "suite.yaml:8" in lines[1] and "--fail-under-metric" in lines[1] and "thresholds are applied" in lines[1]
    same = scoreboard("run", "suite.yaml", "--no-progress", "--output", "c.json", "--fail-under", "basic=0.9",
                      cwd=tmp_path)
    assert same.returncode == 3 and "replaces" not in same.stderr, same.stderr


def test_a_suite_key_spelt_as_its_flag_says_where_the_suite_writes_it(tmp_path):
    """`fail_under_fields: 0.9`, `max_cost: 1` or `baseline: main.json` at the top of a suite (each
    the name of a flag) was "unknown field" with no hint: the suite spells them
    `fail_under_metrics: {fields: ...}`, `budget: {max_cost_usd: ...}` and `gates: {baseline: ...}`.
    The error now says so, on its one line with the file, line and field."""
    (tmp_path / "subj.py").write_text("def reply(prompt, skill, run, params):\n    return prompt\n")
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    for key, said in (("fail_under_fields: 0.9", "fail_under_metrics: {fields: 0.9}"),
                      ("max_cost: 1", "budget: {max_cost_usd: ...}"), ("max_requests: 5", "budget: {max_requests: ...}"),
                      ("baseline: main.json", "gates: {baseline: ...}"), ("fail_undr: 0.9", "did you mean 'fail_under'")):
        (tmp_path / "suite.yaml").write_text("name: g\ncases: c.jsonl\n"
                                             "subject: {type: python, function: 'subj:reply', model_free: true}\n"
                                             f"graders: [{{contains: hi}}]\n{key}\n")
        proc = scoreboard("run", "suite.yaml", "--no-progress", "--output", "r.json", cwd=tmp_path)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 1 and len(lines) == 1, proc.stderr
        assert lines[0].startswith(f"scoreboard: error: suite.yaml:5, field '{key.split(':')[0]}': unknown field")
        assert said in lines[0], lines[0]


def test_a_file_where_the_run_folder_goes_is_named_as_a_file(tmp_path):
    """`--output q.json` puts the run's folder at `q/`; with a file `q` there the error said "the run
    folder for this output already exists", about a file. It now says a file is in the way, where
    the run's folder goes, and what to do; nothing runs and the file is untouched."""
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    (tmp_path / "q").write_text("mine\n")
    proc = scoreboard("run", "--cases", "c.jsonl", "--subject", "mock", "--no-progress", "--output", "q.json",
                      cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "a file is where this output's run folder goes" in proc.stderr and "--output" in proc.stderr
    assert (tmp_path / "q").read_text() == "mine\n" and not (tmp_path / "q.json").exists()
    (tmp_path / "q").unlink()
    (tmp_path / "q").mkdir()
    proc = scoreboard("run", "--cases", "c.jsonl", "--subject", "mock", "--no-progress", "--output", "q.json",
                      cwd=tmp_path)
    assert proc.returncode == 1 and "the run folder for this output already exists" in proc.stderr, proc.stderr


def test_a_runaway_regex_in_a_trajectory_grader_is_not_assessed_not_the_attempts_error(tmp_path):
    """A `tool-args` or `commands` pattern that backtracks for ever on what the agent sent was
    stopped (bounded regex) and its RegexTimeout raised out of the grader: the grade said "grader
    raised RegexTimeout" and the whole attempt became an error. As with `regex`, `citations` and
    the match transforms, the grade is now not assessed, saying why, and the attempt keeps its
    other grades' verdicts."""
    (tmp_path / "subj.py").write_text(
        "from scoreboard import Output\n"
        "def reply(prompt, skill, run, params):\n"
        "    return Output(text='done', tool_calls=[{'name': 'Bash', 'args': {'command': 'a' * 40 + '!'}}])\n")
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    (tmp_path / "suite.yaml").write_text(
        "name: rt\ncases: c.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n"
        "graders:\n  - {contains: done}\n  - {tool-args: {tool: Bash, args: {command: '^(a|aa)+$'}}}\n")
    proc = scoreboard("run", "suite.yaml", "--no-progress", "--output", "r.json", cwd=tmp_path)
    attempt = json.loads((tmp_path / "r.json").read_text())["attempts"][0]
    contains, args = attempt["grades"]
    assert contains["passed"] is True
    assert args["passed"] is None and "was stopped after" in args["reason"] and "raised" not in args["reason"], args
    assert attempt["status"] == "unassessed" and not attempt.get("error"), attempt
    assert proc.returncode == 0, proc.stdout + proc.stderr
