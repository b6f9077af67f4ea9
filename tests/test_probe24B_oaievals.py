"""Probe 24B: `scoreboard import openai-evals` on registry entries shaped as OpenAI Evals' own
(openai/evals at 4bfc1f58), run against a loopback OpenAI-shaped server.

- A chat message's `name` (OpenAI Evals' few-shot `example_user` / `example_assistant`): OpenAI
  Evals sends the messages as written (evals/completion_fns/openai.py passes the prompt list as
  `messages`), so the name travels to the model; a case keeps it, the openai subject sends it, and
  the anthropic subject (whose Messages API has no name) refuses such a case before it runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.servers.fake_provider import FakeProvider


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def lines(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def scoreboard(args, cwd):
    env = dict(os.environ, SCOREBOARD_STORE="none")
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def cases_of(out: Path) -> dict:
    return {json.loads(x)["id"]: json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()}


def run_suite(tmp: Path, out: str, reply, kind: str = "openai") -> tuple[subprocess.CompletedProcess, dict, list]:
    """Run DIR/suite.yaml against a loopback server answering reply(request); (process, case
    statuses, request bodies)."""
    suite = yaml.safe_load((tmp / out / "suite.yaml").read_text())
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": reply})
        srv.set_default("messages", {"reply": reply})
        suite["subject"] = {"type": kind, "model": "m", "base_url": srv.base_url + ("/v1" if kind == "openai" else ""),
                            "params": suite["subject"].get("params", {})}
        if "judge" in suite:
            suite["judge"].update(base_url=srv.base_url + "/v1", model="judge-m")
        (tmp / out / "suite.yaml").write_text(yaml.safe_dump(suite))
        run = scoreboard(["run", f"{out}/suite.yaml", "--output", f"{out}-report.json"], tmp)
        requests = [r["json"] for r in srv.requests]
    status = {}
    if (tmp / f"{out}-report.json").exists():
        report = json.loads((tmp / f"{out}-report.json").read_text())
        status = {a["case_id"]: a["status"] for a in report["attempts"]}
    return run, status, requests


# ---- the chat message `name` -------------------------------------------------------------------

NAMED_YAML = """
translate-fr:
  id: translate-fr.dev.v0
translate-fr.dev.v0:
  class: evals.elsuite.basic.match:Match
  args:
    samples_jsonl: translate/samples.jsonl
    few_shot_jsonl: translate/few_shot.jsonl
    num_few_shot: 1
"""


def named_registry(tmp: Path) -> None:
    root = tmp / "registry"
    write(root / "evals" / "translate.yaml", NAMED_YAML)
    write(root / "data" / "translate" / "few_shot.jsonl", lines(
        {"sample": [{"role": "system", "content": "hola", "name": "example_user"},
                    {"role": "system", "content": "hello", "name": "example_assistant"}]}))
    write(root / "data" / "translate" / "samples.jsonl", lines(
        {"input": [{"role": "system", "content": "Translate to English."}, {"role": "user", "content": "adios"}],
         "ideal": "goodbye"},
        {"input": [{"role": "system", "content": "Translate to English."}, {"role": "user", "content": "gracias"}],
         "ideal": "thank you"}))


def test_message_name_is_kept_in_the_case_and_sent_to_the_model(tmp_path):
    named_registry(tmp_path)
    done = scoreboard(["import", "openai-evals", "registry/evals/translate.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    case = cases_of(tmp_path / "out")["translate-fr.dev.v0-1"]
    assert case["input"] == [
        {"role": "system", "content": "Translate to English."},
        {"role": "system", "content": "hola", "name": "example_user"},
        {"role": "system", "content": "hello", "name": "example_assistant"},
        {"role": "user", "content": "adios"}]
    assert "'name'" not in (tmp_path / "out/conversion-report.md").read_text()  # nothing dropped
    replies = {"adios": "goodbye!", "gracias": "You're welcome"}
    run, status, requests = run_suite(tmp_path, "out", lambda req: replies[req["messages"][-1]["content"]])
    assert run.returncode in (0, 3), run.stderr
    # Match: sampled.startswith(ideal)
    assert status == {"translate-fr.dev.v0-1": "passed", "translate-fr.dev.v0-2": "failed"}
    sent = {r["messages"][-1]["content"]: r["messages"] for r in requests}
    assert sent["adios"] == case["input"]  # the names travel as OpenAI Evals sends them
    assert all(r.get("temperature") == 0.0 for r in requests)


def test_message_name_refused_for_anthropic_before_the_run(tmp_path):
    named_registry(tmp_path)
    done = scoreboard(["import", "openai-evals", "registry/evals/translate.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stderr
    run, status, requests = run_suite(tmp_path, "out", lambda req: "goodbye", kind="anthropic")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "input.1.name" in run.stderr and "translate-fr.dev.v0-1" in run.stderr, run.stderr
    assert requests == []


def test_case_file_message_name_must_be_text(tmp_path):
    write(tmp_path / "cases.jsonl", lines({"id": "c1", "input": [{"role": "user", "content": "hi", "name": 3}],
                                           "expected": "x"}))
    done = scoreboard(["validate", "cases.jsonl"], tmp_path)
    assert done.returncode == 1
    assert "c1" in done.stderr and "name" in done.stderr, done.stderr
    write(tmp_path / "ok.jsonl", lines({"id": "c1", "input": [{"role": "user", "content": "hi", "name": "bob"}],
                                        "expected": "x"}))
    done = scoreboard(["validate", "ok.jsonl"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
