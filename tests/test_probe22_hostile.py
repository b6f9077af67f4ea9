"""Hostile input files, round 8 (helper 22O): what session 22 added. Reviews and comparisons
files with classic-Mac (bare CR) line endings, ..."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli

ENV = {**os.environ, "SCOREBOARD_STORE": "none", "NO_COLOR": "1"}


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, ENV)  # in-process: no test here is about the process


def one_error(done: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 1 and len(lines) == 1, (done.returncode, done.stderr[-2000:])
    assert lines[0].startswith("scoreboard: error: ") and len(lines[0]) < 1200, lines[0][:2000]
    return lines[0]


def _report(tmp_path: Path) -> dict:
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "x", "expected": "x"}\n'
                                      '{"id": "b", "input": "y", "expected": "y"}\n')
    (tmp_path / "s.yaml").write_text("name: s\ncases: c.jsonl\nvariants: [{name: v, subject: mock}]\n"
                                     "graders: [exact]\nfail_under: 0.5\n")
    done = cli(tmp_path, "run", "s.yaml", "--output", "r.json")
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "r.json").read_text())


def _entries_file(entries: list[dict], end: str) -> str:
    """{"entries": [...]} written one key a line, each line ended by `end`."""
    lines = ['{"entries": [']
    for i, entry in enumerate(entries):
        lines.append(" {")
        items = list(entry.items())
        lines += [f"  {json.dumps(k)}: {json.dumps(v)}" + ("," if j < len(items) - 1 else "")
                  for j, (k, v) in enumerate(items)]
        lines.append(" }" + ("," if i < len(entries) - 1 else ""))
    lines.append("]}")
    return end.join(lines) + end


def test_an_error_in_a_bare_cr_reviews_or_comparisons_file_names_its_real_line(tmp_path):
    report = _report(tmp_path)
    ih, oh = report["plan"]["cases"][0]["input_hash"], report["attempts"][0]["output_hash"]
    review = {"case_id": "a", "input_hash": ih, "output_hash": oh, "reviewer_id": "p", "reviewer_kind": "human",
              "rubric_version": "1", "ratings": {"correctness": 4}, "notes": "ok"}
    other = {"case_id": "a", "input_hash": ih, "provider": "p", "model": "m", "output": "x",
             "generated_at": "2026-01-01T00:00:00Z"}
    for end in ("\n", "\r", "\r\n"):
        text = _entries_file([review, review], end).replace('"notes": "ok"', '"notes": "ok",,', 1)
        (tmp_path / "rv.json").write_text(text, newline="")
        # before: "rv.json:1: reviews file: invalid JSON: Expecting property name ... at column 329"
        error = one_error(cli(tmp_path, "import", "reviews", "r.json", "rv.json", "--output", "o1.json"))
        assert error.startswith("scoreboard: error: rv.json:10: ") and "at column 17" in error, (end, error)
        text = _entries_file([other, other], end).replace('"output": "x"', '"output": "x",,', 1)
        (tmp_path / "cm.json").write_text(text, newline="")
        error = one_error(cli(tmp_path, "import", "comparisons", "r.json", "cm.json", "--output", "o2.json"))
        assert error.startswith("scoreboard: error: cm.json:7: ") and "at column 17" in error, (end, error)
        # a field an entry lacks is named on its entry's line (comparisons named no line at all)
        (tmp_path / "cm.json").write_text(_entries_file([other], end), newline="")
        error = one_error(cli(tmp_path, "import", "comparisons", "r.json", "cm.json", "--output", "o3.json"))
        assert error.startswith("scoreboard: error: cm.json:2, case 'a', field 'entries[0].model_version'"), error
    assert not any((tmp_path / n).exists() for n in ("o1.json", "o2.json", "o3.json"))


def _verify_tampered(tmp_path: Path, report: dict, change) -> str:
    doc = json.loads(json.dumps(report))
    change(doc)
    (tmp_path / "t.json").write_text(json.dumps(doc))
    done = cli(tmp_path, "verify", "t.json")
    assert done.returncode == 1, done.stdout[-2000:]
    return "\n".join(ln for ln in done.stdout.splitlines() if "gates" in ln)


def test_verify_refuses_plan_gate_settings_no_run_accepts_and_a_threshold_not_the_plans(tmp_path):
    report = _report(tmp_path)
    assert report["plan"]["gates"] == {"fail_under": 0.5} and report["gates"][0]["threshold"] == 0.5

    def plan(value):
        return lambda doc: doc["plan"].__setitem__("gates", value)
    # before: each verified with no word about the gates (the threshold was never compared)
    for value, said in (({"fail_under": 1e308}, "got 1e+308"), ({"fail_under": True}, "got True"),
                        ({"fail_under": -5}, "got -5"), ({"fail_under": 0.5, "weird": 1}, "field 'weird': unknown"),
                        ({"fail_under": "x" * 1_000_000}, "got str"),
                        ({"fail_under": 0.5, "min_rubric": {"v": "high"}}, "field 'min_rubric.v'"),
                        ({"fail_under": 0.5, "all_pass": "yes"}, "field 'all_pass'")):
        found = _verify_tampered(tmp_path, report, plan(value))
        assert "plan.gates: the plan's gate settings give no gates" in found and said in found, (value, found)
        assert len(found) < 2000, found

    def lowered(doc):  # the plan says 0.9; the gates block, what CI trusts, was given 0.5
        doc["plan"]["gates"] = {"fail_under": 0.9}
    found = _verify_tampered(tmp_path, report, lowered)
    assert "gates[0].threshold: the gate's threshold is not the one the plan's settings give: expected 0.9, " \
           "found 0.5" in found, found
    many = {"fail_under": {f"v{i}": 0.5 for i in range(200_000)}}
    assert "names an unknown variant" in _verify_tampered(tmp_path, report, plan(many))


def _codex_agent():
    from scoreboard.subjects.registry import build_subject

    subject = build_subject({"type": "codex-cli", "base_url": "http://127.0.0.1:9/v1", "model": "m"}, Path("."))
    subject.options["agent"] = {}
    assert subject.keeps_rollout
    return subject


_CALL = {"type": "response_item", "payload": {"type": "function_call", "call_id": "c1", "name": "rm",
                                              "arguments": "{}"}}
_REFUSED = {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
                                                 "output": "unsupported call: rm"}}


def _rollout(folder: Path, first: str = "") -> None:
    folder.mkdir(parents=True)
    (folder / "rollout-1.jsonl").write_text(first + json.dumps(_CALL) + "\n" + json.dumps(_REFUSED) + "\n")


def test_a_codex_home_linked_out_of_the_attempt_is_neither_read_nor_emptied(tmp_path):
    subject = _codex_agent()
    outside = tmp_path / "users-codex"
    _rollout(outside / "sessions" / "2026")
    (outside / "state_5.sqlite").write_text("the user's own database")
    root = tmp_path / "attempt"
    root.mkdir()
    (root / "codex-home").symlink_to(outside)
    calls: list = []
    # before: the outside rollout was read as the attempt's, then its sessions folder and database deleted
    subject.agent_done(root, calls, 1000)
    assert calls == [] and (outside / "sessions" / "2026" / "rollout-1.jsonl").exists()
    assert (outside / "state_5.sqlite").read_text() == "the user's own database"
    root2 = tmp_path / "attempt2"
    (root2 / "codex-home").mkdir(parents=True)
    (root2 / "codex-home" / "sessions").symlink_to(outside / "sessions")
    subject.agent_done(root2, calls, 1000)
    assert calls == [] and (outside / "sessions" / "2026" / "rollout-1.jsonl").exists()


def test_a_codex_rollout_line_nested_too_deep_is_skipped_not_raised(tmp_path):
    subject = _codex_agent()
    root = tmp_path / "attempt"
    _rollout(root / "codex-home" / "sessions", first="[" * 100_000 + "]" * 100_000 + "\n")
    calls: list = []
    subject.agent_done(root, calls, 1000)  # before: RecursionError out of the attempt
    assert [c["name"] for c in calls] == ["rm"] and calls[0]["denied"]
    assert not (root / "codex-home" / "sessions").exists()


def test_codex_rollouts_are_read_within_one_budget_all_together(tmp_path):
    from scoreboard.subjects import codex_cli

    subject = _codex_agent()
    subject.max_response_bytes = 10_000
    root = tmp_path / "attempt"
    sessions = root / "codex-home" / "sessions"
    for i in range(300):
        _rollout(sessions / f"d{i:03}")
    calls: list = []
    subject.agent_done(root, calls, 1000)
    line = len(json.dumps(_CALL)) + len(json.dumps(_REFUSED)) + 2
    assert 0 < len(calls) <= 10_000 // line + 1 and len(calls) <= codex_cli.MAX_ROLLOUTS
