"""Probe 22: provider batch APIs, round 4, through the CLI against the scripted loopback fakes of
OpenAI's Files + Batches and Anthropic's Message Batches (tests/servers/fake_batches.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli
from tests.servers.fake_batches import FakeBatches

CASES = [{"id": f"c{i}", "input": f"What is {i}+1?", "expected": f"ANSWER: {i + 1}", "graders": ["contains"]}
         for i in range(4)]
PRICE = {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "batch_discount": 0.5}


@pytest.fixture
def srv():
    with FakeBatches() as server:
        yield server


def write_suite(tmp: Path, srv: FakeBatches, kind: str, batch: dict, cases=CASES, **extra) -> None:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    subject = {"type": kind, "base_url": srv.base_url + ("/v1" if kind == "openai" else ""), "model": "m-1",
               "batch": batch, "price": PRICE, "params": {"max_tokens": 64}}
    suite = {"name": "nightly", "cases": "cases.jsonl", "subject": subject, **extra}
    (tmp / "suite.json").write_text(json.dumps(suite), encoding="utf-8")


def cli(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in-process (tests/cli_inprocess.py): these tests are about what
    a run writes, not about the process."""
    extra = ["--no-progress"] if args[0] == "run" else []
    return run_cli([*args, *extra], cwd=tmp)


def report(tmp: Path, pattern: str = "out/nightly/*.json") -> dict:
    (path,) = tmp.glob(pattern)
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_two_runs_whose_folders_share_a_name_never_share_custom_ids(tmp_path, srv, kind):
    # Two CI jobs (or last night's and tonight's run) writing `--output x/nightly.json` in other
    # checkouts have the same run id: their submission and custom ids were the same, so a crashed
    # run's search for its submission (OpenAI: by metadata; Anthropic: by custom ids) would claim
    # the other run's batch and grade its answers as its own.
    for job in ("job1", "job2"):
        write_suite(tmp_path / job, srv, kind, {"wait_s": 0.1, "poll_s": 0.05})
        out = cli(tmp_path / job, "run", "suite.json", "--output", "x/nightly.json")
        assert out.returncode == 0, out.stdout + out.stderr
    ids = [s["custom_id"] for s in srv.submitted]
    assert len(ids) == 8 and len(set(ids)) == 8, ids
    subs = [report(tmp_path / job, "x/nightly.json")["run"]["batches"][0]["submission"] for job in ("job1", "job2")]
    assert subs[0] != subs[1]


def in_process(tmp: Path, monkeypatch, *args: str) -> int:
    from scoreboard.cli.main import main

    monkeypatch.chdir(tmp)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    return main([*args, "--no-progress"])


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_requests_past_the_providers_bytes_per_batch_are_split_into_several_batches_said(
        tmp_path, srv, kind, monkeypatch, capsys):
    # OpenAI takes an input file of at most 200 MB, Anthropic a create of at most 256 MB: 1,000
    # long-context requests of 300 kB each went up as one batch, which the provider refuses, so
    # every request was an error ("batch not created"). The limit is made small here.
    from scoreboard.subjects import batch_journal

    monkeypatch.setattr(batch_journal, "MAX_BYTES", {"openai": 1000, "anthropic": 1000})
    cases = [*CASES, {"id": "huge", "input": "x " * 600, "expected": "x", "graders": ["contains"]}]
    write_suite(tmp_path, srv, kind, {"size": 1000, "wait_s": 0.3, "poll_s": 0.05}, cases=cases)
    rc = in_process(tmp_path, monkeypatch, "run", "suite.json", "--output-dir", "out")
    assert rc == 2, capsys.readouterr()
    rep = report(tmp_path)
    batches = rep["run"]["batches"]
    assert len(batches) == 2 and all(b["requests"] == 2 for b in batches), batches
    assert all(b["status"] == "completed" or b["status"] == "ended" for b in batches)
    assert any("split by size" in " ".join(b.get("notes") or ()) for b in batches), batches
    assert len(srv.submitted) == 4  # the one request over the limit by itself was never sent
    by_case = {a["case_id"]: a for a in rep["attempts"]}
    assert all(by_case[c["id"]]["status"] == "passed" for c in CASES)
    huge = by_case["huge"]
    assert huge["status"] == "error" and "larger than one batch may hold" in huge["error"]
    assert rep["requests"]["sent"] == 4
    assert huge["measurements"]["requests"] == 0 and huge["measurements"]["cost_usd"] == 0.0
    (path,) = (tmp_path / "out").glob("nightly/*.json")
    out = cli(tmp_path, "verify", str(path))
    assert out.returncode == 0, out.stdout + out.stderr


class Mixed(FakeBatches):
    """Every batch ends (`completed` for OpenAI) with its requests answered, errored, expired and
    cancelled in turn: what a batch someone cancelled from the provider's console holds."""

    FATES = ["ok", "error", "expire", "cancel", "ok", "ok"]

    def _finish(self, batch):
        super()._finish(batch)
        batch["results"] = [(cid, self.FATES[k % 6], answer if self.FATES[k % 6] == "ok" else None)
                            for k, (cid, _, answer) in enumerate(batch["results"])]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_cost_after_answered_errored_expired_and_cancelled_requests_matches_a_hand_count(tmp_path, kind):
    # Neither provider bills a request that errored, expired or was cancelled inside its batch:
    # the requests block counted them a known 0, but each attempt said its cost was unknown, so
    # the variant's cost total was null ("cost unknown for m-1 (3 of 6 attempts): no price known
    # for the model, or no usage reported") against a requests block that knew every cent.
    cases = [{"id": f"c{i}", "input": f"What is {i}+1?", "expected": f"ANSWER: {i + 1}", "graders": ["contains"]}
             for i in range(6)]
    with Mixed() as srv:
        write_suite(tmp_path, srv, kind, {"wait_s": 0.2, "poll_s": 0.05}, cases=cases)
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--max-cost", "1")
    assert out.returncode == 2, out.stdout + out.stderr
    rep = report(tmp_path)
    # by hand: 3 answers of 8 input and 2 output tokens at ($2, $8) per Mtok, half off
    each = (8 * 2.0 + 2 * 8.0) / 1e6 * 0.5
    req = rep["requests"]
    assert (req["sent"], req["completed"], req["failed"], req["unknown_usage"]) == (6, 3, 3, 0)
    assert req["cost_spent_usd"] == pytest.approx(3 * each) and req["cost_known_usd"] == pytest.approx(3 * each)
    assert req["tokens_spent"] == 30 and req["tokens_partial"] is False and req["possibly_billed"] == []
    cost = rep["summary"]["variants"]["m-1"]["measurements"]["cost_usd"]
    assert cost["unknown_count"] == 0 and cost["total"] == pytest.approx(3 * each)
    errors = {a["case_id"]: a for a in rep["attempts"] if a["status"] == "error"}
    assert set(errors) == {"c1", "c2", "c3"}
    assert all(a["measurements"]["cost_usd"] == 0.0 and a["measurements"]["requests"] == 1 for a in errors.values())
    md = next((tmp_path / "out").glob("nightly/*.md")).read_text(encoding="utf-8")
    assert "cost unknown" not in md
    (path,) = (tmp_path / "out").glob("nightly/*.json")
    check = cli(tmp_path, "verify", str(path))
    assert check.returncode == 0, check.stdout + check.stderr


class OneLineShort(FakeBatches):
    """A batch that ends counting every request run, whose results leave the first one out."""

    def _oa_files(self, b):
        ok, bad = super()._oa_files(b)
        return b"".join(line + b"\n" for line in ok.splitlines() if b'-0"' not in line), bad

    async def _an_results(self, request):
        resp = await super()._an_results(request)
        if resp.status == 200:
            resp.body = b"".join(line + b"\n" for line in resp.body.splitlines() if b'-0"' not in line)
        return resp


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_batch_whose_counts_say_more_ran_than_its_results_answer_says_so_and_may_be_billed(tmp_path, kind):
    # OpenAI said `completed` with request_counts {completed: 4} (Anthropic succeeded: 4), and
    # its results held 3 lines: the fourth request's error said only "completed without a result
    # for this request: completed", the batch's entry said nothing, and the request (run and
    # billed, by the provider's own count) was not among the requests possibly billed.
    with OneLineShort() as srv:
        write_suite(tmp_path, srv, kind, {"wait_s": 0.2, "poll_s": 0.05})
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out")
    assert out.returncode == 2, out.stdout + out.stderr
    rep = report(tmp_path)
    (batch,) = rep["run"]["batches"]
    said = "the provider counted 4 request(s) of this batch as run"
    assert any(said in n and "its results answered 3" in n for n in batch.get("notes") or ()), batch
    (bad,) = [a for a in rep["attempts"] if a["status"] != "passed"]
    assert bad["case_id"] == "c0" and said in bad["error"]
    assert bad["measurements"]["cost_usd"] is None  # run and billed at a price no line said
    assert [p["attempt"][0] for p in rep["requests"]["possibly_billed"]] == ["c0"]
    (path,) = (tmp_path / "out").glob("nightly/*.json")
    check = cli(tmp_path, "verify", str(path))
    assert check.returncode == 0, check.stdout + check.stderr


class Padded(FakeBatches):
    """An output file whose answers are followed by more bytes than any answers can be."""

    def _oa_files(self, b):
        ok, bad = super()._oa_files(b)
        return ok + (b'{"x": "' + b"y" * 3000 + b'"}\n') * 20, bad


def test_a_results_file_past_its_bound_keeps_the_answers_read_before_the_bound(tmp_path):
    # The bound was checked per 64 kB chunk before the chunk's lines were read: a short file
    # (its answers, then padding past the bound, all in one chunk) lost every answer it held.
    with Padded() as srv:
        cases = [{"id": f"c{i}", "input": f"What is {i}+1?", "expected": f"ANSWER: {i + 1}",
                  "graders": ["contains"]} for i in range(3)]
        write_suite(tmp_path, srv, "openai", {"wait_s": 0.2, "poll_s": 0.05}, cases=cases)
        suite = json.loads((tmp_path / "suite.json").read_text(encoding="utf-8"))
        suite["subject"]["max_response_bytes"] = 2000  # the bound: (3 + 1) x 2,000 bytes
        (tmp_path / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out")
    assert out.returncode == 0, out.stdout + out.stderr
    rep = report(tmp_path)
    assert {a["status"] for a in rep["attempts"]} == {"passed"}
    (batch,) = rep["run"]["batches"]
    assert batch["status"] == "completed"
    assert any("read stopped there" in n for n in batch.get("notes") or ()), batch  # said
    assert rep["requests"]["possibly_billed"] == [] and rep["requests"]["unknown_usage"] == 0
