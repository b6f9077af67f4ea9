"""`scoreboard rescore`: recorded outputs graded again, no subject called, both grader sets recorded."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from scoreboard.engine.reruns import rescore
from scoreboard.errors import ConfigError
from scoreboard.hashing import sha256_bytes
from scoreboard.record.verify import verify_report
from scoreboard.stats.summary import summarize
from tests.cli_inprocess import run_cli

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "invoices" / "suite.yaml"
NEW_GRADERS = [{"json-fields": {"fields": ["currency"]}}]


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, dict(os.environ))


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rescore-src")
    done = scoreboard(["run", str(EXAMPLE), "--format", "json", "--output-dir", str(out), "--no-progress"], out)
    assert done.returncode == 0, done.stderr
    (path,) = list((out / "invoices").glob("*.json"))
    return path


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def rates(report: dict) -> dict:
    return {name: s["pass_rate"] for name, s in report["summary"]["variants"].items()}


def test_same_graders_give_the_same_results(source, tmp_path):
    old = load(source)
    outcome = rescore(str(source), output=str(tmp_path / "new.json"))
    new = outcome.report
    assert outcome.exit_code == 0
    assert rates(new) == rates(old)
    assert [a["grades"] for a in new["attempts"]] == [a["grades"] for a in old["attempts"]]
    assert [a["measurements"] for a in new["attempts"]] == [a["measurements"] for a in old["attempts"]]
    assert [a["output_hash"] for a in new["attempts"]] == [a["output_hash"] for a in old["attempts"]]
    info = new["run"]["rescore"]
    assert info["source_run_id"] == old["run"]["id"]
    assert info["source_sha256"] == sha256_bytes(source.read_bytes())
    assert info["previous_graders"] == {c["id"]: c["graders"] for c in old["plan"]["cases"]}
    assert info["changed_cases"] == [] and info["subject_requests"] == 0
    assert new["plan"]["fixture_hash"] == old["plan"]["fixture_hash"]
    assert [v["subject"]["type"] for v in new["plan"]["variants"]] == ["recorded", "recorded"]
    assert new["plan"]["variants"][0]["subject"]["original"] == old["plan"]["variants"][0]["subject"]
    assert verify_report(new).ok
    saved = tmp_path / "new.json"
    assert load(saved)["attempts"] == new["attempts"]
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600


def test_new_graders_change_results_and_both_sets_are_recorded(source, tmp_path):
    graders = tmp_path / "graders.yaml"
    graders.write_text("- json-fields: {fields: [currency]}\n", encoding="utf-8")
    old = load(source)
    new = rescore(str(source), graders_file=str(graders), output=str(tmp_path / "new.json")).report
    assert rates(old)["basic"] < 1.0
    assert rates(new)["basic"] != rates(old)["basic"] and rates(new)["careful"] == 1.0
    assert all(c["graders"] == NEW_GRADERS for c in new["plan"]["cases"])
    assert new["run"]["rescore"]["previous_graders"]["inv-001"] == old["plan"]["cases"][0]["graders"]
    assert len(new["run"]["rescore"]["changed_cases"]) == len(old["plan"]["cases"])
    assert new["run"]["rescore"]["graders_file"] == str(graders)
    assert verify_report(new).ok


def test_graders_file_with_default_and_cases(source, tmp_path):
    graders = tmp_path / "graders.json"
    graders.write_text(json.dumps({"cases": {"inv-002": NEW_GRADERS}}), encoding="utf-8")
    old = load(source)
    new = rescore(str(source), graders_file=str(graders), output=str(tmp_path / "new.json")).report
    by_id = {c["id"]: c["graders"] for c in new["plan"]["cases"]}
    assert by_id["inv-002"] == NEW_GRADERS
    assert by_id["inv-001"] == old["plan"]["cases"][0]["graders"]  # not named: keeps its graders
    assert new["run"]["rescore"]["changed_cases"] == ["inv-002"]


@pytest.mark.parametrize("content, message", [
    ('{"cases": {"nope": ["exact"]}}', "case id not in the report"),
    ('{"default": ["no-such-grader"]}', "unknown grader"),
    ('{"defaults": []}', "unknown field"),
    ('[{"llm-judge": {"rubric": "is it right?"}}]', "--allow-judge"),
])
def test_bad_graders_file_exits_1_and_writes_nothing(source, tmp_path, content, message):
    (tmp_path / "g.json").write_text(content, encoding="utf-8")
    done = scoreboard(["rescore", str(source), "--graders", "g.json", "--output", "new.json"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]


def test_judge_graders_need_allow_judge_naming_the_grader(source, tmp_path):
    graders = tmp_path / "g.json"
    graders.write_text(json.dumps([{"llm-judge": {"rubric": "is it right?"}}]), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        rescore(str(source), graders_file=str(graders), output=str(tmp_path / "new.json"))
    assert "'llm-judge'" in str(info.value) and "--allow-judge" in str(info.value)
    assert not (tmp_path / "new.json").exists() and not (tmp_path / "new").exists()
    # With the flag, the judge rule no longer stops it (whatever the judge itself then needs).
    try:
        rescore(str(source), graders_file=str(graders), allow_judge=True, output=str(tmp_path / "new2.json"))
    except ConfigError as exc:
        assert "--allow-judge" not in str(exc)


def test_stopped_source_keeps_not_run_attempts(source, tmp_path):
    report = load(source)
    report["run"].update(status="stopped", stop_reason="budget: request budget of 170 used up")
    for a in report["attempts"][-4:]:
        a.update(status="not-run", output=None, output_hash=None, error="budget: request budget of 170 used up",
                 grades=[], measurements={k: None for k in a["measurements"]})
        a.pop("output_text_hash", None)
    report["summary"] = summarize(report["plan"], report["attempts"])
    path = tmp_path / "stopped.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    outcome = rescore(str(path), output=str(tmp_path / "new.json"))
    new = outcome.report
    assert outcome.exit_code == 2 and new["run"]["status"] == "stopped"
    assert new["attempts"][-4:] == report["attempts"][-4:]
    assert sum(s["not_run"] for s in new["summary"]["variants"].values()) == 4
    assert "source report" in new["run"]["stop_reason"]
    assert verify_report(new).ok


def test_checkpoint_and_tampered_sources_are_refused(source, tmp_path):
    report = load(source)
    report["run"]["status"] = "running"
    (tmp_path / "running.json").write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(ConfigError, match="still in progress"):
        rescore(str(tmp_path / "running.json"), output=str(tmp_path / "a.json"))
    report = load(source)
    report["attempts"][3]["output"]["text"] += " "
    (tmp_path / "tampered.json").write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"attempts\[3\]\.output_hash"):
        rescore(str(tmp_path / "tampered.json"), output=str(tmp_path / "b.json"))
    assert not (tmp_path / "a.json").exists() and not (tmp_path / "b.json").exists()


def test_rescore_of_a_remote_subject_sends_no_request(fake_provider, tmp_path):
    cases = [{"id": f"q{i}", "input": f"What is {i}+{i}?", "expected": f"ANSWER: {2 * i}"} for i in range(1, 4)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    subject = {"type": "openai", "model": "gpt-x", "base_url": fake_provider.base_url + "/v1"}
    (tmp_path / "suite.json").write_text(json.dumps({
        "name": "remote", "cases": "cases.jsonl", "runs": 2, "subject": subject,
        "graders": [{"contains": "ANSWER"}, "exact"]}), encoding="utf-8")
    fake_provider.push("chat", {"status": 400})  # one recorded provider error
    done = scoreboard(["run", "suite.json", "--format", "json", "--output-dir", "out", "--no-progress"], tmp_path)
    assert done.returncode == 2, done.stderr
    (path,) = list((tmp_path / "out" / "remote").glob("*.json"))
    old = load(path)
    sent = len(fake_provider.requests)
    assert sent >= 6
    graders = tmp_path / "g.yaml"
    graders.write_text("- contains: ANSWER\n", encoding="utf-8")
    done = scoreboard(["rescore", str(path), "--graders", "g.yaml", "--output", "new.json"], tmp_path)
    assert done.returncode == 2, done.stderr  # the recorded provider error stays an error
    assert len(fake_provider.requests) == sent  # no request reached the provider
    new = load(tmp_path / "new.json")
    errors = [(a["case_id"], a["run"], a["error"]) for a in old["attempts"] if a["status"] == "error"]
    assert errors and errors == [(a["case_id"], a["run"], a["error"]) for a in new["attempts"]
                                 if a["status"] == "error"]
    assert [a["measurements"] for a in new["attempts"]] == [a["measurements"] for a in old["attempts"]]
    assert "requests" not in new  # the rescore itself sent nothing
    assert new["run"]["rescore"]["source_requests"] == old.get("requests")
    assert verify_report(new).ok
    assert "no subject request was made" in done.stdout


def test_cli_output_dir_and_exclusive_output(source, tmp_path):
    done = scoreboard(["rescore", str(source), "--output-dir", "res", "--format", "json,md"], tmp_path)
    assert done.returncode == 0, done.stderr
    jsons = list((tmp_path / "res" / "invoices").glob("*.json"))
    assert len(jsons) == 1 and jsons[0].with_suffix(".md").exists()
    (tmp_path / "taken.json").write_text("{}", encoding="utf-8")
    done = scoreboard(["rescore", str(source), "--output", "taken.json"], tmp_path)
    assert done.returncode == 1 and "overwrite" in done.stderr
    assert (tmp_path / "taken.json").read_text(encoding="utf-8") == "{}"
    done = scoreboard(["rescore", str(source), "--json", "--output", "j.json"], tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["run"]["rescore"]["source_run_id"]


CHATBOT = """
def reply(messages):
    if "explode" in messages[-1]["content"]:
        raise RuntimeError("boom")
    return "reply %d to: %s" % (len(messages), messages[-1]["content"][-20:])
"""


def test_conversation_rescore_keeps_the_chains(tmp_path):
    (tmp_path / "chatbot.py").write_text(CHATBOT, encoding="utf-8")
    convs = [{"id": "tea", "conversation": {"topic": "tea"},
              "turns": [{"id": "t1", "question": "What is tea?", "grader": {"contains": "reply"}},
                        {"id": "t2", "question": "And green tea?", "grader": {"contains": "reply 3"}}]},
             {"id": "boom", "conversation": {"topic": "x"},
              "turns": [{"id": "a", "question": "please explode", "grader": {"contains": "reply"}},
                        {"id": "b", "question": "still there?", "grader": {"contains": "reply"}}]}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in convs), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("name: chat\ncases: cases.jsonl\nruns: 2\nsubject: python:chatbot:reply\n",
                                         encoding="utf-8")
    done = scoreboard(["run", "suite.yaml", "--format", "json", "--output-dir", "out", "--no-progress"], tmp_path)
    assert done.returncode == 2, done.stderr
    (path,) = list((tmp_path / "out" / "chat").glob("*.json"))
    old = load(path)
    (tmp_path / "g.json").write_text(json.dumps([{"contains": "reply 1"}]), encoding="utf-8")
    new = rescore(str(path), graders_file=str(tmp_path / "g.json"), output=str(tmp_path / "new.json")).report
    assert new["run"]["status"] == "completed"
    keys = ("case_id", "run", "status", "error", "turn", "chain_input_hash", "output_hash")
    assert [{k: a.get(k) for k in keys if k != "status"} for a in new["attempts"]] == \
        [{k: a.get(k) for k in keys if k != "status"} for a in old["attempts"]]
    assert {a["case_id"]: a["status"] for a in new["attempts"] if a["run"] == 0} == \
        {"tea/t1": "passed", "tea/t2": "failed", "boom/a": "error", "boom/b": "not-run"}
    assert verify_report(new).ok
    (tmp_path / "c.json").write_text("[]", encoding="utf-8")
    from scoreboard.engine.reruns import import_comparisons

    with pytest.raises(ConfigError, match="export turns"):
        import_comparisons(str(path), str(tmp_path / "c.json"), str(tmp_path / "imp.json"))


def test_allow_judge_calls_the_judge_within_its_budget(source, tmp_path, fake_provider):
    """With --allow-judge and --judge, a judge runs on the recorded outputs: its requests go
    through a ledger (role judge) and stop at --max-requests; no subject is called."""
    fake_provider.set_default("chat", {"reply": json.dumps({"verdict": True, "explanation": "fine"})})
    graders = tmp_path / "judge.json"
    graders.write_text(json.dumps([{"llm-judge": {"rubric": "The totals must match."}}]))
    judge = json.dumps({"type": "openai", "base_url": fake_provider.base_url + "/v1", "model": "judge"})
    out = tmp_path / "judged.json"
    done = scoreboard(["rescore", str(source), "--graders", str(graders), "--allow-judge", "--judge", judge,
                       "--max-requests", "7", "--output", str(out)], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr  # the budget stopped the judging
    report = load(out)
    assert report["requests"]["sent"] == 7 == len(fake_provider.requests)
    assert report["requests"]["by_role"] == {"judge": 7}
    assert report["run"]["status"] == "stopped" and "budget" in report["run"]["stop_reason"]
    judged = [g for a in report["attempts"] for g in a["grades"] if g["grader"] == "llm-judge"]
    assert sum(1 for g in judged if g["passed"] is True) == 7
    # the attempts the budget did not reach are listed as not-run, not dropped
    assert len(report["attempts"]) == len(load(source)["attempts"])
    assert any(a["status"] == "not-run" for a in report["attempts"])
    # without a judge, model graders cannot run even when allowed
    refused = scoreboard(["rescore", str(source), "--graders", str(graders), "--allow-judge",
                          "--output", str(tmp_path / "no-judge.json")], tmp_path)
    assert refused.returncode == 1 and "needs a judge" in refused.stderr
    assert not (tmp_path / "no-judge.json").exists()
