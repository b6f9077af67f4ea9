"""Leftovers fixed in the session of 2026-12-06 (ninth): each test runs the real command on files
written under tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from scoreboard.graders.versions import GRADERS_VERSION
from tests.cli_inprocess import run_cli


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none"}
    return run_cli(args, cwd, env)


def _graded_report(tmp_path: Path) -> dict:
    (tmp_path / "subj.py").write_text("def reply(prompt, skill, run, params):\n    return 'Paris is big'\n")
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "capital?", "expected": "Paris"}\n'
                                          '{"id": "b", "input": "capital?", "expected": "Rome"}\n')
    (tmp_path / "suite.yaml").write_text(
        "name: gv\ncases: cases.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n"
        "graders: [contains, {regex: 'P.ris'}]\n")
    proc = scoreboard("run", "suite.yaml", "--output", "r.json", "--no-progress", cwd=tmp_path)
    assert (tmp_path / "r.json").is_file(), proc.stderr
    return json.loads((tmp_path / "r.json").read_text())


def _verify(tmp_path: Path, report: dict) -> subprocess.CompletedProcess:
    (tmp_path / "t.json").write_text(json.dumps(report))
    return scoreboard("verify", "t.json", cwd=tmp_path)


def test_a_report_records_its_graders_version_and_verify_checks_each_grade_of_this_version(tmp_path):
    """The report says which graders version graded it; one of this build's version is checked
    grade by grade, so an edited reason is a mismatch."""
    report = _graded_report(tmp_path)
    assert report["run"]["versions"]["graders"] == str(GRADERS_VERSION)
    assert _verify(tmp_path, report).returncode == 0
    report["attempts"][0]["grades"][0]["reason"] = "edited by hand"
    checked = _verify(tmp_path, report)
    assert checked.returncode == 1 and "grade differs from the recomputed grade" in checked.stdout, checked.stdout


def test_a_grade_made_by_an_earlier_graders_version_that_this_build_grades_otherwise_is_named_not_a_mismatch(
        tmp_path):
    """A report written before a grader's edge case was fixed (or its reason reworded) failed
    `verify` with "grade differs" though nobody edited it: the old build graded it so. Now such a
    grade is listed as not checked as recorded, naming both graders versions; the status is still
    recomputed from the recorded grades, so an edited status is still a mismatch."""
    report = _graded_report(tmp_path)
    report["attempts"][0]["grades"][0]["reason"] = "worded by an earlier build"
    report["summary"]["methods"]["version"] = 19  # as the builds that wrote graders version 1 computed it
    for figures in report["summary"]["variants"].values():  # version 19's categories: no cases, no interval
        for category in (figures.get("by_category") or {}).values():
            category.pop("cases", None), category.pop("ci", None)
    for old in ({**report["run"]["versions"], "graders": "1"},
                {k: v for k, v in report["run"]["versions"].items() if k != "graders"}):  # before versions
        report["run"]["versions"] = old
        checked = _verify(tmp_path, report)
        assert checked.returncode == 0, checked.stdout
        assert f"graded by graders version 1, this build's are version {GRADERS_VERSION}" in checked.stdout
        assert "contains (1 grade, first attempts[0].grades[0])" in checked.stdout, checked.stdout
    edited = json.loads(json.dumps(report))
    edited["attempts"][1]["status"] = "passed"
    checked = _verify(tmp_path, edited)
    assert checked.returncode == 1 and "attempts[1].status" in checked.stdout, checked.stdout


def test_a_graders_version_that_is_none_this_build_knows_is_a_mismatch_and_a_hand_made_report_is_checked_fully(
        tmp_path):
    """A version above this build's would hide every grade from the check, so it is not taken on
    its word (as a statistics version is not); a report naming no build at all is checked against
    this build's graders."""
    report = _graded_report(tmp_path)
    for bad in (str(GRADERS_VERSION + 1), "0", "two"):
        report["run"]["versions"]["graders"] = bad
        checked = _verify(tmp_path, report)
        assert checked.returncode == 1 and "run.versions.graders" in checked.stdout, (bad, checked.stdout)
    report["run"]["versions"] = {}
    report["attempts"][0]["grades"][0]["reason"] = "edited by hand"
    checked = _verify(tmp_path, report)
    assert checked.returncode == 1 and "grade differs from the recomputed grade" in checked.stdout, checked.stdout


def _png(width: int, height: int) -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def test_screenshots_for_a_judge_keep_to_the_providers_limits_and_say_how_they_were_fitted():
    """Anthropic takes at most 8,000 px a side, 2,000 once a request holds over 20 images; a
    screenshot wider than the limit is scaled to it, one taller is cut; OpenAI states no side
    limit, so its judge is sent the page as it is; screenshots within the limits go as they are."""
    from scoreboard.judges.images import fit_images, png_size

    small = [_png(800, 600) for _ in range(3)]
    assert fit_images("anthropic", small) == (small, None)
    wide = _png(9000, 300)
    sent, said = fit_images("anthropic", [small[0], wide])
    assert sent[0] == small[0] and [png_size(p) for p in sent[1:]] == [(8000, 266)]
    assert "screenshot 2 (9000x300 px) is scaled down to fit the judge's image limits: image 2" in said
    tall = _png(1024, 9000)
    assert fit_images("openai", [tall]) == ([tall], None)
    many, said = fit_images("anthropic", [_png(1024, 1500) for _ in range(19)] + [tall])
    assert len(many) == 19 + 5 and all(max(png_size(p)) <= 2000 for p in many), [png_size(p) for p in many]
    assert "screenshot 20 (1024x9000 px) is cut into 5 parts to fit the judge's image limits: images 20-24" in said


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_request_budget_is_not_used_up_by_tries_in_flight_that_turn_out_never_sent(tmp_path):
    """`--max-requests 1` at concurrency 4 against a server refusing connections: one attempt
    reserved the one request, the other three asked at that moment were refused, and the run
    stopped "request budget of 1 used up" with 0 requests sent, two cases not run. A try that
    never left spends nothing (the README says so), so each waits for the reservation in flight
    to come back: every case is tried, nothing is sent, and the run completes."""
    port = _closed_port()
    (tmp_path / "cases.jsonl").write_text("".join(f'{{"id": "c{i}", "input": "hi"}}\n' for i in range(3)))
    (tmp_path / "suite.yaml").write_text(
        "name: closed\ncases: cases.jsonl\n"
        f"subject: {{type: openai, model: m, base_url: 'http://127.0.0.1:{port}/v1', api_key_required: false}}\n"
        "graders: [{contains: hi}]\n")
    proc = scoreboard("run", "suite.yaml", "--output", "r.json", "--no-progress", "--max-requests", "1",
                      "--concurrency", "4", cwd=tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    requests = report["requests"]
    assert report["run"]["status"] == "completed", (report["run"], requests, proc.stderr)
    assert requests["sent"] == 0 and requests["never_sent"] == 12 and requests["exhausted"] is None, requests  # 4 tries each
    assert sorted(a["status"] for a in report["attempts"]) == ["error"] * 3


def test_a_cost_budget_held_by_worst_case_reservations_in_flight_waits_for_their_real_cost(fake_provider, tmp_path):
    """Each request reserves its worst case ($0.0001 here: 10 input tokens' bound plus
    max_tokens 160 at $0.60 per million) and spends its real usage ($0.0000075). With a budget of
    2.5 worst cases, the third attempt asked while two were in flight was refused and the run
    stopped with 2 of 6 cases run, though 6 requests cost less than one worst case. Now it waits
    for the two to end and is reserved on what they really spent: all 6 run, within budget."""
    fake_provider.set_default("chat", {"reply": "hi there", "usage": {"prompt_tokens": 10, "completion_tokens": 10},
                                       "latency_ms": 200})
    (tmp_path / "cases.jsonl").write_text("".join(f'{{"id": "c{i}", "input": "hi"}}\n' for i in range(6)))
    (tmp_path / "suite.yaml").write_text(
        "name: cost\ncases: cases.jsonl\n"
        f"subject: {{type: openai, model: m, base_url: '{fake_provider.base_url}/v1', api_key_required: false,"
        " params: {max_tokens: 160}}\n"
        "prices: {m: {input_per_mtok: 0.15, output_per_mtok: 0.60}}\n"
        "graders: [{contains: hi}]\n")
    proc = scoreboard("run", "suite.yaml", "--output", "r.json", "--no-progress", "--concurrency", "6",
                      "--max-cost", "0.00025", cwd=tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    requests = report["requests"]
    assert report["run"]["status"] == "completed", (requests, proc.stdout, proc.stderr)
    assert [a["status"] for a in report["attempts"]] == ["passed"] * 6
    assert requests["sent"] == 6 and requests["exhausted"] is None
    assert 0 < requests["cost_spent_usd"] <= 0.00025
    assert len(fake_provider.requests_to("chat")) == 6


def test_compare_flags_shared_cases_whose_threshold_or_expected_value_changed(tmp_path):
    """`scoreboard compare` flagged shared cases only when their grader specs differed: a suite
    edited to lower a case's threshold or correct its expected value compared as the same
    grading, so a rise that was the new rule's read as the outputs'. The viewer already leaves
    such cases out; compare now names them as it does other graders."""
    (tmp_path / "subj.py").write_text("def reply(prompt, skill, run, params):\n    return 'Paris'\n")
    (tmp_path / "suite.yaml").write_text(
        "name: ex\ncases: cases.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n"
        "graders: [contains]\n")
    for name, expected in (("a", "Rome"), ("b", "Paris")):
        (tmp_path / "cases.jsonl").write_text(f'{{"id": "c1", "input": "capital?", "expected": "{expected}"}}\n'
                                              '{"id": "c2", "input": "capital 2?", "expected": "Paris"}\n')
        scoreboard("run", "suite.yaml", "--output", f"{name}.json", "--no-progress", cwd=tmp_path)
    done = scoreboard("compare", "a.json", "b.json", cwd=tmp_path)
    assert "the graders, expected value, threshold, scoring or rubric differ on 1 of the 2 shared cases" \
        in done.stdout, done.stdout + done.stderr
    same = scoreboard("compare", "b.json", "b.json", cwd=tmp_path)
    assert "rubric differ on" not in same.stdout, same.stdout


def test_pass_at_k_over_conversations_names_its_unit_as_the_pass_rate_does():
    """With conversations, pass@k and pass^k average a conversation's turns into one value and
    count conversations (`cases` 2 here), but their intervals said `"unit": "case"` beside the
    pass rate's `"conversation"` (found by 22D). Statistics version 20 names the unit; a report
    of version 19 keeps the old label."""
    from scoreboard.stats.methods import computed_as
    from scoreboard.stats.summary import summarize

    cases = [{"id": f"c{k}/t{t}", "conversation": f"c{k}", "turn_index": t} for k in range(2) for t in range(3)]
    plan = {"cases": cases, "variants": [{"name": "a"}], "runs": 3, "seed": 0}
    attempts = [{"case_id": c["id"], "variant": "a", "run": r, "status": "passed" if (i + r) % 3 else "failed",
                 "grades": [], "measurements": {}} for i, c in enumerate(cases) for r in range(3)]
    variant = summarize(plan, attempts)["variants"]["a"]
    assert variant["pass_rate_ci"]["unit"] == "conversation"
    for block in ("pass_at_k", "pass_hat_k"):
        for k, fig in variant[block].items():
            assert fig["cases"] == 2 and fig["ci"]["unit"] == "conversation", (block, k, fig)
    with computed_as(19):
        old = summarize(plan, attempts)["variants"]["a"]
    assert old["pass_at_k"]["2"]["ci"]["unit"] == "case"


def _category_run(tmp_path: Path) -> dict:
    (tmp_path / "subj.py").write_text(
        "def reply(prompt, skill, run, params):\n    return 'yes' if (len(prompt) + run) % 2 else 'no'\n")
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": "q" * i, "expected": "yes", "category": "billing" if i < 4 else "shipping"})
        + "\n" for i in range(7)))
    (tmp_path / "suite.yaml").write_text(
        "name: cats\ncases: cases.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n"
        "graders: [contains]\nruns: 2\n")
    proc = scoreboard("run", "suite.yaml", "--output", "r.json", "--no-progress", cwd=tmp_path)
    assert (tmp_path / "r.json").is_file(), proc.stderr
    return json.loads((tmp_path / "r.json").read_text())


def test_each_category_gives_its_cases_and_an_interval_by_case_and_the_markdown_shows_them(tmp_path):
    """A category's pass rate was a bare share of its attempts in the JSON (no interval, no case
    count, no word of a small sample) and no rendering but the HTML showed it (found by 22I).
    Statistics 20 gives each category its cases and the pass rate's interval with the case as
    the unit (statsmodels' Wilson on those cases, as the variant's), and the Markdown a table."""
    from statsmodels.stats.proportion import proportion_confint

    report = _category_run(tmp_path)
    cats = report["summary"]["variants"]["reply"]["by_category"] if "reply" in report["summary"]["variants"] \
        else next(iter(report["summary"]["variants"].values()))["by_category"]
    billing = cats["billing"]
    assert billing["cases"] == 4 and billing["attempts"] == 8, billing
    assert billing["ci"]["method"] == "wilson-effective-n" and billing["ci"]["unit"] == "case"
    n_eff = billing["ci"]["effective_cases"]
    low, high = proportion_confint(billing["pass_rate"] * n_eff, n_eff, method="wilson")
    assert abs(billing["ci"]["low"] - low) < 1e-9 and abs(billing["ci"]["high"] - high) < 1e-9
    md = (tmp_path / "r.md").read_text()
    section = md.split("## By category", 1)[1].split("\n## ", 1)[0]
    assert "| billing |" in section and "4 cases; 95% CI" in section, section
    assert "fewer than 30 cases is a small sample" in section
    assert scoreboard("verify", "r.json", cwd=tmp_path).returncode == 0


def test_an_agent_tasks_denied_and_sub_agent_calls_are_summed_per_variant_and_said_in_markdown():
    """Each attempt of an agent task counts the tool calls a sub-agent made and those the CLI
    denied (never executed), but the task summary never added them up, so no report said them
    (found by 22N). Statistics 20 sums them per variant as it sums commands (unknown apart,
    never 0) and the Markdown says them under the agent tasks table; version 19 did not."""
    from scoreboard.record.markdown_parts import call_notes
    from scoreboard.record.schema_summary import TaskFigure
    from scoreboard.stats.methods import computed_as
    from scoreboard.stats.summary import summarize

    task = {"kind": "task"}
    plan = {"cases": [{"id": f"t{i}", "metadata": {"task": task}} for i in range(3)], "variants": [{"name": "a"}],
            "runs": 1, "seed": 0}
    metrics = [{"commands": 2, "denied_tool_calls": 2, "subagent_tool_calls": 1},
               {"commands": 1, "denied_tool_calls": 0, "subagent_tool_calls": 0},
               {"commands": None, "denied_tool_calls": None, "subagent_tool_calls": None}]
    attempts = [{"case_id": f"t{i}", "variant": "a", "run": 0, "status": "passed", "grades": [], "measurements": {},
                 "subject_info": {"task": {"utility": True, "metrics": m}}} for i, m in enumerate(metrics)]
    per = summarize(plan, attempts)["tasks"]["variants"]["a"]["per_attempt"]
    assert per["denied_tool_calls"] == {"known_subtotal": 2, "known_count": 2, "unknown_count": 1, "mean": 1.0}
    assert per["subagent_tool_calls"]["known_subtotal"] == 1
    with computed_as(19):
        assert "denied_tool_calls" not in summarize(plan, attempts)["tasks"]["variants"]["a"]["per_attempt"]
    notes = call_notes("a", {k: TaskFigure(**v) for k, v in per.items()})
    assert notes == ["- a: 2 tool calls denied (attempted, never executed) over 2 attempts; 1 with no trajectory to count",
                     "- a: 1 tool call made by a sub-agent over 2 attempts; 1 with no trajectory to count"]


def test_more_screenshots_than_one_anthropic_request_may_hold_is_a_judge_failure_saying_so():
    """Anthropic refuses a request of more than 100 images (found by 22M): said before sending,
    as the judgment's failure, never sent to be refused."""
    import pytest

    from scoreboard.errors import ScoreboardError
    from scoreboard.judges.images import fit_images

    small = _png(64, 64)
    assert len(fit_images("anthropic", [small] * 100)[0]) == 100
    with pytest.raises(ScoreboardError, match="101 images, over the 100 one anthropic request may hold"):
        fit_images("anthropic", [small] * 101)
    with pytest.raises(ScoreboardError, match="over the 100"):
        fit_images("anthropic", [small] * 98 + [_png(1024, 9000)])  # 98 + 5 parts at 2,000 px


def _deep_folder(top: Path, depth: int = 25, width: int = 200) -> tuple[int, str]:
    """A folder chain past PATH_MAX under `top`, made by descriptors: (its fd, its path)."""
    fd = os.open(top, os.O_RDONLY)
    path = str(top)
    for i in range(depth):
        name = f"{i:03d}" + "d" * (width - 3)
        os.mkdir(name, dir_fd=fd)
        nxt = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd, path = nxt, os.path.join(path, name)
    return fd, path


def test_links_in_a_workspace_folder_past_path_max_are_removed_not_missed(tmp_path):
    """The links scan listed folders by path, so under a chain of folders past PATH_MAX (4,096
    bytes) listing failed, 'name too long', and the branch was skipped: a symlink to a host file
    there (and a hard link) stayed for a check that walks by descriptors (`grep -R`) to read
    (found by 22O). The scan walks by folder descriptors: each is found and removed there."""
    from scoreboard.tasks.links import cut_links_out

    work = tmp_path / "work"
    work.mkdir()
    secret = tmp_path / "host-secret.txt"
    secret.write_text("s3cret")
    (work / "ok.txt").write_text("fine")
    os.symlink("ok.txt", work / "inside")  # a link inside stays
    fd, deep = _deep_folder(work)
    try:
        assert len(os.fsencode(deep)) > 4096
        os.symlink(str(secret), "escape", dir_fd=fd)
        os.link(secret, "hard", dst_dir_fd=fd)
        found = cut_links_out(work, [work])
        assert sorted((f["kind"], os.path.basename(f["path"])) for f in found) == \
            [("hard link", "hard"), ("symlink", "escape")], found
        assert all("could not be removed" not in f["why"] for f in found), found
        assert sorted(os.listdir(fd)) == []  # both gone
    finally:
        os.close(fd)
    assert (work / "inside").is_symlink() and secret.read_text() == "s3cret"


def test_compare_names_each_side_of_a_score_comparison_as_the_pairs_line_does(tmp_path):
    """Two reports of one variant: the pass-rate line says A:reply and B:reply, but the score
    and metric lines said 'reply vs reply ... left out, reply's 1 errored attempt and reply's 1
    errored attempt', no telling which report's (found by 22C)."""
    (tmp_path / "subj.py").write_text("def reply(prompt, skill, run, params):\n"
                                      "    if prompt.endswith('3'):\n        raise RuntimeError('boom')\n"
                                      "    return 'yes'\n")
    (tmp_path / "g.py").write_text("def s(output):\n    return {'score': 0.5, 'named_scores': {'m': 0.5}}\n")
    (tmp_path / "cases.jsonl").write_text("".join(f'{{"id": "c{i}", "input": "q{i}", "expected": "yes"}}\n'
                                                  for i in range(1, 6)))
    (tmp_path / "suite.yaml").write_text(
        "name: cmp\ncases: cases.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n"
        "graders: [contains, {python: {file: g.py, function: s}}]\n")
    for name in ("a", "b"):
        scoreboard("run", "suite.yaml", "--output", f"{name}.json", "--no-progress", cwd=tmp_path)
    done = scoreboard("compare", "a.json", "b.json", cwd=tmp_path)
    assert "A:reply vs B:reply, score:" in done.stdout, done.stdout + done.stderr
    assert "left out, A:reply's 1 errored attempt and B:reply's 1 errored attempt" in done.stdout
    assert "reply vs reply" not in done.stdout
