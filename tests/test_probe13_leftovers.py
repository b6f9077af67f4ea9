"""Leftovers, probed from outside: a quota stop and `--resume`, the judge-agreement block of
the reports, and the viewer API's query parameters.

Every run here is `scoreboard` in a subprocess in tmp_path against loopback servers the tests
start (port 0)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parent.parent
RETRIES = {"attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`scoreboard ARGS`: in this process (tests/cli_inprocess.py), what the command says and writes
    being the point here; as a process once the module's browser holds a running event loop
    (Playwright's), where the command's own asyncio.run cannot run."""
    if asyncio._get_running_loop() is None:
        return run_cli(args, cwd)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


class QuotaAfter(FakeProvider):
    """An OpenAI-compatible server that answers insufficient_quota (429) to every chat request
    after its first `k`, until `refill()`."""

    def __init__(self, k: int):
        super().__init__(latency_ms=0)
        self.k, self.served, self.empty = k, 0, True

    def refill(self) -> None:
        self.empty = False

    def _next_behaviour(self, route):
        behaviour = super()._next_behaviour(route)
        if route != "chat":
            return behaviour
        self.served += 1
        return {"status": 429, "quota": True} if self.empty and self.served > self.k else behaviour


def quota_suite(tmp_path: Path, srv: FakeProvider, n: int) -> None:
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"}) + "\n" for i in range(n)))
    subject = {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m", "retries": RETRIES}
    (tmp_path / "suite.json").write_text(json.dumps({
        "name": "quota", "cases": "cases.jsonl", "output_dir": "out", "concurrency": 1,
        "formats": ["json", "md", "html"], "subject": subject}))


def only_run(tmp_path: Path) -> Path:
    (folder,) = [p for p in (tmp_path / "out" / "quota").iterdir() if p.is_dir()]
    return folder


def report_of(folder: Path) -> dict:
    return json.loads(folder.with_name(folder.name + ".json").read_text())


def statuses(report: dict) -> Counter:
    return Counter(a["status"] for a in report["attempts"])


# --------------------------------------------------------------------------- (1) quota stop


def test_a_quota_stop_is_logged_and_resume_runs_what_it_cut(tmp_path):
    """Was: a run stopped by insufficient_quota wrote no stop to its attempt log, so `--resume`
    (the quota refilled) reused the attempt the quota failed as finished and said `completed`,
    with no stop reason; the Markdown report of the stopped run said `stopped` but not why."""
    with QuotaAfter(3) as srv:
        quota_suite(tmp_path, srv, 6)
        first = cli(tmp_path, "run", "suite.json", "--no-progress")
        assert first.returncode == 2, first.stderr
        folder = only_run(tmp_path)
        report = report_of(folder)
        assert report["run"]["status"] == "stopped" and "quota" in report["run"]["stop_reason"]
        assert statuses(report) == {"passed": 3, "error": 1, "not-run": 2}, statuses(report)
        md = folder.with_name(folder.name + ".md").read_text()
        assert "- **Stopped**: openai: HTTP 429: quota or billing limit reached" in md, md[:600]
        log = [json.loads(line) for line in (folder / "attempts.jsonl").read_text().splitlines()]
        stops = [r for r in log if r.get("kind") == "stop"]
        assert stops and "quota" in stops[0]["halted"] and stops[0]["attempt"] == ["c3", "m", 0], stops
        assert cli(tmp_path, "verify", str(folder) + ".json").returncode == 0

        # still no quota: the resume tries the cut attempt again, meets the quota, stays stopped
        again = cli(tmp_path, "run", "--resume", str(folder), "--no-progress")
        assert again.returncode == 2, again.stderr
        assert "already completed" not in again.stderr
        report = report_of(folder)
        assert report["run"]["status"] == "stopped" and "quota" in report["run"]["stop_reason"]
        assert statuses(report) == {"passed": 3, "error": 1, "not-run": 2}, statuses(report)
        assert srv.served == 5
        verified = cli(tmp_path, "verify", str(folder) + ".json")
        assert verified.returncode == 0, verified.stdout + verified.stderr

        srv.refill()  # the quota is back: the resume finishes the run
        done = cli(tmp_path, "run", "--resume", str(folder), "--no-progress")
        assert done.returncode == 0, done.stdout + done.stderr
        report = report_of(folder)
        assert report["run"]["status"] == "completed" and report["run"]["stop_reason"] is None
        assert statuses(report) == {"passed": 6}, statuses(report)
        assert srv.served == 8
        assert "Stopped" not in folder.with_name(folder.name + ".md").read_text()
        verified = cli(tmp_path, "verify", str(folder) + ".json")
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_quota_met_by_the_last_attempt_is_not_a_completed_run_on_resume(tmp_path):
    """Was: the quota hit the last planned attempt; nothing was left not-run, so `--resume`
    ran nothing and rewrote the report as `completed` (stop reason gone, quota error kept)."""
    with QuotaAfter(2) as srv:
        quota_suite(tmp_path, srv, 3)
        assert cli(tmp_path, "run", "suite.json", "--no-progress").returncode == 2
        folder = only_run(tmp_path)
        assert report_of(folder)["run"]["status"] == "stopped"
        again = cli(tmp_path, "run", "--resume", str(folder), "--no-progress")
        assert again.returncode == 2, again.stderr
        report = report_of(folder)
        assert report["run"]["status"] == "stopped" and "quota" in report["run"]["stop_reason"], report["run"]
        assert srv.served == 4
        srv.refill()
        assert cli(tmp_path, "run", "--resume", str(folder), "--no-progress").returncode == 0
        assert statuses(report_of(folder)) == {"passed": 3}


def test_a_judge_quota_stop_is_logged_and_resume_judges_the_attempt_again(tmp_path):
    """Was: the judge's provider answered insufficient_quota on the last attempt: the run said
    `stopped`, but `--resume` (the judge's quota back) reused the unjudged attempt, said
    `completed` and exited 0 with it still "not assessed"."""
    verdict = {"reply": json.dumps({"verdict": True, "explanation": "ok"})}
    with FakeProvider() as subject, FakeProvider() as judge:
        judge.set_default("chat", verdict)
        judge.push("chat", verdict, verdict, {"status": 429, "quota": True})
        quota_suite(tmp_path, subject, 3)
        suite = json.loads((tmp_path / "suite.json").read_text())
        suite.update(judge={"type": "openai", "base_url": judge.base_url + "/v1", "model": "j"},
                     graders=[{"llm-judge": {"rubric": "ok?"}}])
        (tmp_path / "suite.json").write_text(json.dumps(suite))
        first = cli(tmp_path, "run", "suite.json", "--no-progress")
        assert first.returncode == 2, first.stderr
        folder = only_run(tmp_path)
        report = report_of(folder)
        assert report["run"]["status"] == "stopped" and "quota" in report["run"]["stop_reason"]
        assert statuses(report) == {"passed": 2, "unassessed": 1}
        log = [json.loads(line) for line in (folder / "attempts.jsonl").read_text().splitlines()]
        assert [r["attempt"] for r in log if r.get("kind") == "stop"] == [["c2", "m", 0]]
        done = cli(tmp_path, "run", "--resume", str(folder), "--no-progress")
        assert done.returncode == 0, done.stdout + done.stderr
        report = report_of(folder)
        assert report["run"]["status"] == "completed" and statuses(report) == {"passed": 3}
        assert len(judge.requests_to("chat")) == 4
        verified = cli(tmp_path, "verify", str(folder) + ".json")
        assert verified.returncode == 0, verified.stdout + verified.stderr


# --------------------------------------------------------------------------- (2) judge agreement


def test_the_judge_agreement_block_is_words_and_a_table_alike_in_every_rendering(tmp_path, monkeypatch, request):
    """Was: the Markdown listed the block's keys with raw JSON (`- confusion: {"judge_pass": ...}`,
    `- kappa: 0.5205479452054795`) and the HTML did the same with JSON.stringify; the terminal said
    nothing of it. Now: a confusion table and the same sentences (agreement, kappa, rates, the
    corrected rate with its interval and method, the small-sample flag) in each."""
    import io

    from scoreboard.record.io import parse_report
    from scoreboard.record.terminal import print_summary
    from tests.test_reviews import human_reviews, make_report

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    judged = make_report(tmp_path, judged=True)
    report = json.loads(Path(judged).read_text(encoding="utf-8"))
    (tmp_path / "reviews.json").write_text(json.dumps({"entries": human_reviews(report, range(8, 24))}))
    done = cli(tmp_path, "import", "reviews", str(judged), "reviews.json", "--output", "new.json",
               "--format", "json,md,html")
    assert done.returncode == 0, done.stderr
    new = json.loads((tmp_path / "new.json").read_text(encoding="utf-8"))
    agreement = new["summary"]["judge_agreement"]
    corrected = agreement["corrected_pass_rate"]
    ci = corrected["ci"]
    kappa = f"Cohen's kappa {agreement['kappa']:.2f}"
    rate = (f"corrected for the judge's errors (Rogan-Gladen): {corrected['value'] * 100:.1f}% "
            f"[95% CI {ci['low'] * 100:.1f}%–{ci['high'] * 100:.1f}%, bootstrap over cases")
    small = "small sample: fewer than 30 reviewed cases: treat as indicative"
    conf = agreement["confusion"]

    md = (tmp_path / "new.md").read_text(encoding="utf-8")
    block = md.split("### Judge agreement with human reviews", 1)[1].split("\n## ", 1)[0]
    assert "{" not in block and "observed_agreement" not in block and "0.52054" not in block, block
    assert (f"| judge pass | {conf['judge_pass']['human_pass']} | {conf['judge_pass']['human_fail']} |"
            in block), block
    assert "- judge vs human on 16 reviewed outputs of 16 cases" in block
    for said in (kappa, rate, small, "interval: seeded percentile bootstrap over cases"):
        assert said in block, (said, block)

    page = request.getfixturevalue("browser").new_page()  # after the run: Playwright holds a loop
    try:
        page.goto((tmp_path / "new.html").resolve().as_uri())
        page.wait_for_selector("html[data-ready=true]", timeout=30_000)
        html_lines = page.inner_text("[data-testid=judge-agreement]").splitlines()
        table = page.inner_text("[data-testid=judge-confusion]")
    finally:
        page.close()
    md_lines = [line[2:] for line in block.splitlines() if line.startswith("- ")]
    assert [line.replace("&lt;", "<") for line in md_lines] == html_lines, (md_lines, html_lines)
    assert f"judge fail\t{conf['judge_fail']['human_pass']}\t{conf['judge_fail']['human_fail']}" in table

    out = io.StringIO()
    print_summary(parse_report(new, "new.json"), {}, out)
    terminal = out.getvalue()
    for said in (kappa, rate, small, "judge pass & human pass"):
        assert said in terminal, (said, terminal)
    assert "{" not in terminal


# --------------------------------------------------------------------------- (3) viewer paging


def test_the_viewer_api_refuses_a_limit_or_cursor_it_cannot_read_and_caps_a_large_limit(tmp_path):
    """Was: `/api/runs?limit=abc` gave 50 runs, `limit=-1` one, `cursor=garbage` a page from an
    arbitrary place, and the cases/attempts pages ignored `cursor=abc` and `limit=zz`: a client's
    mistake read as a real page. Now: 400 with a one-line JSON error naming the parameter; a limit
    past the most one page holds is capped at it, and each page says both."""
    import urllib.parse

    from tests.viewer.conftest import Served

    store = str(tmp_path / "h.sqlite")
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": "q", "expected": "a"}) + "\n" for i in range(3)))
    (tmp_path / "v.jsonl").write_text("".join(json.dumps({"case_id": f"c{i}", "output": "a"}) + "\n" for i in range(3)))
    (tmp_path / "suite.json").write_text(json.dumps({"name": "pages", "cases": "cases.jsonl", "output_dir": "out",
                                                     "formats": ["json"], "subject": "recorded:v.jsonl"}))
    for _ in range(3):
        assert cli(tmp_path, "run", "suite.json", "--no-progress", "--store", store).returncode == 0
    served = Served("--store", store, cwd=tmp_path)

    get = served.get

    try:
        status, first = get("/api/runs?limit=1")
        assert status == 200 and len(first["runs"]) == 1 and first["limit"] == 1 and first["max_limit"] == 500
        seen, cursor = [r["key"] for r in first["runs"]], first["next"]
        while cursor is not None:  # the cursors it gives are read back
            status, page = get("/api/runs?limit=1&cursor=" + urllib.parse.quote(cursor))
            assert status == 200, page
            seen += [r["key"] for r in page["runs"]]
            cursor = page["next"]
        assert len(seen) == len(set(seen)) == 3
        key = seen[0]
        for path, name in (("/api/runs?limit=abc", "limit"), ("/api/runs?limit=-1", "limit"),
                           ("/api/runs?limit=0", "limit"), ("/api/runs?limit=1.5", "limit"),
                           ("/api/runs?cursor=garbage", "cursor"), ("/api/runs?cursor=a|b|not-hex", "cursor"),
                           (f"/api/runs/{key}/cases?cursor=abc", "cursor"), (f"/api/runs/{key}/cases?limit=zz", "limit"),
                           (f"/api/runs/{key}/attempts?cursor=-3", "cursor"),
                           (f"/api/runs/{key}/attempts?limit=%20", "limit"), ("/api/trends?suite=pages&limit=x", "limit"),
                           # a variant the run lacks was an empty page; a run to compare with that
                           # is not there was left out of the case's page in silence
                           (f"/api/runs/{key}/cases?variant=bogus", "variant"),
                           (f"/api/runs/{key}/case?id=c0&with=nokey", "with")):
            status, body = get(path)
            assert status == 400, (path, status, body)
            assert body["error"].startswith(name + ":") and "\n" not in body["error"], (path, body)
        status, big = get(f"/api/runs?limit={10 ** 9}")
        assert status == 200 and len(big["runs"]) == 3 and big["limit"] == 500 and big["max_limit"] == 500
        status, body = get(f"/api/runs/{key}/cases?variant=bogus")
        assert "its variants: v.jsonl" in body["error"], body
        status, cases = get(f"/api/runs/{key}/cases?limit={10 ** 9}&cursor=&variant=v.jsonl")
        assert status == 200 and len(cases["cases"]) == 3 and cases["limit"] == 500
    finally:
        served.stop()
