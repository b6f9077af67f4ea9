"""Probes of scale-out and stores from the outside: hostile reports imported over a stored run
(on SQLite and on a PostgreSQL the tests start on loopback), the same run imported twice,
provider batches answered badly, and the Ray executor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web

from scoreboard.cli.main import main as cli
from scoreboard.store.history import HistoryStore

from .store.conftest import postgres, store_spec  # noqa: F401 - fixtures: both backends
from .servers.fake_batches import FakeBatches
from .store.test_store import make_suite, run_into
from .test_batch_cli import CASES, report, run_dir, statuses, verified, write_suite
from .test_batch_cli import cli as batch_cli


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    """A run's report (recorded subjects, no store)."""
    folder = tmp_path_factory.mktemp("scale")
    _, report = run_into("none", make_suite(folder))
    return Path(report)


def sb(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def stored_counts(spec: str) -> tuple:
    store = HistoryStore(spec)
    try:
        return (store.db.one("SELECT status, attempts FROM runs")
                + store.db.one("SELECT COUNT(*) FROM attempts"))
    finally:
        store.close()


def _last_output_text(r: dict) -> None:
    r["attempts"][-1]["output"]["text"] = "half an emoji \ud83d"


def _last_output_hash(r: dict) -> None:
    r["attempts"][-1]["output_hash"] = "ab\ud800cd"


def _first_input_hash_nul(r: dict) -> None:
    r["attempts"][0]["input_hash"] = "ab\x00cd"


def _case_hash_nul(r: dict) -> None:
    r["plan"]["cases"][0]["input_hash"] = "ab\x00cd"


def _finished_at_nul(r: dict) -> None:
    r["run"]["finished_at"] = "2026-12-01T00:00:00Z\x00"


def _grade_reason_nan(r: dict) -> None:
    r["attempts"][-1]["grades"][0]["score"] = float("nan")
    r["attempts"][-1]["measurements"]["input_tokens"] = 10**30  # an integer no 64-bit encoder takes


@pytest.mark.parametrize("mutate, field", [
    (_last_output_text, "attempts[{last}].output.text"),
    (_last_output_hash, "attempts[{last}].output_hash"),
    (_first_input_hash_nul, "attempts[0].input_hash"),
    (_case_hash_nul, "plan.cases[0].input_hash"),
    (_finished_at_nul, "run.finished_at"),
    (_grade_reason_nan, "attempts[{last}].grades[0].score"),
])
def test_a_hostile_report_never_replaces_the_stored_copy(store_spec, report_file, tmp_path, capsys,  # noqa: F811
                                                         mutate, field):
    """A report of a stored run, edited to hold what no report scoreboard writes holds (a lone
    surrogate in an output or a hash, a NUL byte in a hash or a time, NaN): `store import`
    refuses it in one line naming the file and the field, exit 1, and the stored copy stays
    whole. Before, the old rows were deleted first and the write then failed on the last
    attempts (a UnicodeEncodeError, PostgreSQL's NUL refusal): exit 2, the run left
    `incomplete` with 0 attempts."""
    code, _, err = sb(capsys, "store", "import", str(report_file), "--store", store_spec)
    assert code == 0, err
    before = stored_counts(store_spec)
    hostile = json.loads(report_file.read_text())
    assert before[1] == before[2] == len(hostile["attempts"])
    field = field.format(last=len(hostile["attempts"]) - 1)
    mutate(hostile)
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(hostile))
    code, _, err = sb(capsys, "store", "import", str(bad), "--store", store_spec)
    assert code == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and str(bad) in lines[0] and field in lines[0], err
    assert "Error:" not in err and "Traceback" not in err
    assert stored_counts(store_spec) == before


# --------------------------------------------------------------------------- batches: results gone


class GoneResults(FakeBatches):
    """A batch that ends, whose results are gone for good (404: a file deleted by the
    provider's retention, a results URL that no longer exists)."""

    async def _file_content(self, request: web.Request) -> web.Response:
        if request.match_info["id"].endswith(("-output", "-errors")):
            return web.json_response({"error": {"message": "No such File object", "type": "invalid_request_error"}},
                                     status=404)
        return await super()._file_content(request)

    async def _an_results(self, request: web.Request) -> web.Response:
        return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "not found"}},
                                 status=404)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_an_ended_batch_whose_results_are_gone_is_an_error_not_waiting_for_ever(tmp_path, kind):
    """A batch that ended and whose results answer 404 on every read: each request is an error
    on its attempt naming the batch and why (its usage unknown, possibly billed), and the run
    ends; before, its attempts were `waiting` (exit 4) and every --resume read the same 404
    five times and left them waiting again, so the run could never complete."""
    with GoneResults() as srv:
        srv.polls_to_end = 1
        write_suite(tmp_path, srv, kind, batch={"size": 10, "wait_s": 0.1, "poll_s": 0.05, "poll_max_s": 0.1})
        first = batch_cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--no-progress")
        assert first.returncode in (2, 4), first.stderr
        if first.returncode == 4:  # waiting: a resume must not wait again
            again = batch_cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)), "--no-progress")
            assert again.returncode == 2, again.stderr
        assert len(srv.batches) == 1
    rep = report(tmp_path)
    assert statuses(rep) == {"error": len(CASES)}, statuses(rep)
    assert rep["run"]["status"] == "completed"
    for a in rep["attempts"]:
        assert "404" in a["error"] and a["measurements"]["cost_usd"] is None, a
    requests = rep["requests"]
    assert requests["sent"] == len(CASES) and "batch_pending" not in requests
    assert len(requests["possibly_billed"]) == len(CASES)
    verified(tmp_path)


# --------------------------------------------------------------------------- a deeply nested large report

STREAMED_IMPORT = """
import sys
import scoreboard.store.reportfile as reportfile
from scoreboard.cli.main import main
reportfile.WHOLE_BYTES = 1000  # read as a large report is: streamed
sys.exit(main(["store", "import", sys.argv[1], "--store", sys.argv[2]]))
"""


def _limited_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.mark.parametrize("depth", [3000, 100_000])
def test_a_deeply_nested_streamed_report_is_refused_in_bounded_memory(report_file, tmp_path, depth):
    """A report read as a stream (a large one) whose last attempt nests an output `depth`
    levels deep: refused in one line naming where (exit 1), within 3 GB, and the stored copy
    is whole. Before, 3,000 levels deleted the stored rows and then failed to encode the attempt
    (RecursionError, exit 2, 0 attempts left), and 100,000 levels (a 200 KB file) exhausted
    memory: the attempts' reader built a path as long as the depth for every level."""
    import subprocess
    import sys

    spec = str(tmp_path / "history.sqlite")
    assert cli(["store", "import", str(report_file), "--store", spec]) == 0
    before = stored_counts(spec)
    data = json.loads(report_file.read_text())
    data["attempts"][-1]["output"]["json"] = "@@DEEP@@"
    bad = tmp_path / "deep.json"
    bad.write_text(json.dumps(data).replace('"@@DEEP@@"', "[" * depth + "]" * depth))
    done = subprocess.run([sys.executable, "-c", STREAMED_IMPORT, str(bad), spec], capture_output=True, text=True,
                          timeout=240, preexec_fn=_limited_memory)
    assert done.returncode == 1, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(bad) in lines[0] and "nested too deeply" in lines[0], done.stderr
    assert f"attempts[{len(data['attempts']) - 1}].output.json" in lines[0]
    assert stored_counts(spec) == before


# --------------------------------------------------------------------------- batches: finding a submission again


class NamelessFirstLine(FakeBatches):
    """Anthropic results whose first line is a JSON object naming no custom id (a line a
    provider's bug or a proxy put there); the lines after it are the batch's own."""

    async def _an_results(self, request: web.Request) -> web.Response:
        resp = await super()._an_results(request)
        if resp.status != 200:
            return resp
        stray = json.dumps({"result": {"type": "errored", "error": {"type": "error"}}}).encode() + b"\n"
        return web.Response(body=stray + resp.body, content_type="application/binary")


def test_finding_an_anthropic_submission_again_looks_past_a_line_naming_no_request():
    """After a crash between a submission's create and its batch id's record, the batch is
    found by the custom ids of its results; a first line that names none is not proof that the
    batch is someone else's. Before, `find` stopped at it and answered not found, so the
    requests were submitted (and billed) a second time once settle_s passed."""
    import asyncio

    from tests.subjects import make, req

    from scoreboard.subjects.batch_api import AnthropicBatchAPI

    with NamelessFirstLine() as srv:
        srv.polls_to_end = 1
        subject = make("anthropic", srv, batch={"size": 2, "wait_s": 0.05, "poll_s": 0.05, "poll_max_s": 0.1})

        async def submit_then_find():
            try:
                await asyncio.gather(*(subject.run(req(f"What is {i}+1?", case_id=f"c{i}")) for i in range(2)),
                                     return_exceptions=True)
                (batch_id,) = srv.batches
                ids = [r[0] for r in srv.batches[batch_id]["requests"]]
                return batch_id, await AnthropicBatchAPI(subject).find("lost-submission", ids, 0.0)
            finally:
                await subject.aclose()

        batch_id, found = asyncio.run(asyncio.wait_for(submit_then_find(), 30))
    assert isinstance(found, dict) and found["id"] == batch_id, found


# --------------------------------------------------------------------------- Ray: a lost worker in a resumed run


def test_a_lost_ray_worker_counts_only_the_requests_sent_in_this_part_of_the_run(tmp_path):
    """The Ray ledger service says how many requests an attempt reserved, and a lost worker's
    attempt that reserved none is run again elsewhere (README: "in-flight attempts that had sent
    no request run again"). In a resumed run an attempt is run again after an earlier part left
    its request open (possibly billed, restored from the log): that request is not this
    part's. Before, the service counted it, so a worker lost before the attempt sent anything
    recorded it `interrupted` ("usage unknown") instead of running it again."""
    from scoreboard.engine.ledger import Budget, Ledger
    from scoreboard.engine.ray_ledger import LedgerService

    earlier = Ledger(Budget())
    earlier.reserve(("c1", "v", 0))  # the first part's request, left open when it was killed
    service = LedgerService(Budget().to_dict(), str(tmp_path / "attempts.jsonl"), earlier.snapshot())
    try:
        assert service.ledger.by_attempt[("c1", "v", 0)] == 1  # the run's count keeps it
        assert service.requests_of(["c1", "v", 0]) == 0
        assert service.reserve(["c1", "v", 0], {"role": "subject"}, "n1") == {"id": 2}
        assert service.requests_of(["c1", "v", 0]) == 1
    finally:
        service.close()
