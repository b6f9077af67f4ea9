"""Reports a person reads, probed from the outside: the history viewer's pages in real headless
Chromium against the real `scoreboard view`, the terminal summary and the JUnit XML of real runs.
Each page and rendering must show the truth: errors and not-assessed attempts where the counts
are, p-values and differences written the one way every rendering writes them, and every interval
with its method in words."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.viewer.conftest import Served, scoreboard, wait_ready

# Not model_free: the error's usage stays unknown (a subject that may call a model and raised),
# while each answer it gives reports its own (a known zero).
SUBJECT = '''from scoreboard import Measurements, Output, Result

def answer(input, skill, run):
    if input == "boom":
        raise RuntimeError("exploded")
    if input == "sometimes":  # no verdict on the second run only
        input = "unsure" if run == 1 else "fine"
    return Result(Output(text=input), Measurements(input_tokens=0, output_tokens=0, cost_usd=0.0, requests=0))
'''
CHECKS = '''def check(output, context):
    if output == "unsure":
        return {"pass": None, "score": None, "reason": "cannot tell"}
    return {"pass": output != "bad", "score": 1.0, "reason": "ok"}
'''
CASES = [("ok1", "fine"), ("bad1", "bad"), ("boom1", "boom"), ("unsure1", "unsure"), ("some1", "sometimes")] + \
        [(f"more{i}", "fine" if i % 3 else "bad") for i in range(8)]
P_VALUE = re.compile(r"\bp(=\d\.\d{4}|<0\.0001)(?![\d])")


def write_project(folder: Path, runs: int = 1) -> Path:
    """A suite whose runs hold a pass, fails, an error (the subject raises) and a not-assessed
    attempt (the grader cannot tell)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "checks.py").write_text(CHECKS)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": cid, "input": text, "expected": "x"}) + "\n"
                                                for cid, text in CASES))
    suite = {"name": "probe2", "cases": "cases.jsonl", "graders": ["python-file:checks.py:check"], "runs": runs,
             "formats": ["json"],
             "variants": {"a": {"subject": {"type": "python", "function": "subj:answer"}},
                          "b": {"subject": {"type": "python", "function": "subj:answer"}}}}
    (folder / "suite.json").write_text(json.dumps(suite))
    return folder / "suite.json"


# ---------- the viewer ----------

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("probe2-view")
    write_project(folder / "p")
    store = str(folder / "h.sqlite")
    for _ in range(2):
        done = scoreboard("run", "suite.json", "--no-progress", "--store", store, "--fail-under", "a=0.9",
                          "--fail-under", "b=0.1", cwd=folder / "p")
        assert done.returncode == 2, done.stdout + done.stderr  # an execution error: exit 2
    server = Served("--store", store, cwd=folder)
    try:
        yield server
    finally:
        server.stop()


def api(served: Served, path: str):
    with urllib.request.urlopen(served.base + path, timeout=30) as response:
        return json.loads(response.read())


def keys(served: Served) -> list[str]:
    """The runs, oldest first."""
    return [r["key"] for r in api(served, "/api/runs?suite=probe2")["runs"]][::-1]


def open_page(browser, served: Served, route: str):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(served.base + "/" + route)
    wait_ready(page)
    assert errors == []
    return page


def test_the_run_page_shows_each_variants_errors_not_assessed_and_not_run(served, browser):
    key = keys(served)[-1]
    page = open_page(browser, served, f"#/run/{key}")
    try:
        heads = page.locator("#variant-figures thead th").all_inner_texts()
        assert {"errors", "not assessed", "not run"} <= set(heads), heads
        row = dict(zip(heads, page.locator("#variant-figures tbody tr").first.locator("td").all_inner_texts()))
        assert (row["errors"], row["not assessed"], row["not run"]) == ("1", "1", "0"), row
        # the case table names the error and the attempt with no verdict
        boom = page.locator('#cases-body tr[data-case="boom1"] td').nth(2).inner_text()
        unsure = page.locator('#cases-body tr[data-case="unsure1"] td').nth(2).inner_text()
        assert "1 error" in boom, boom
        assert "not assessed" in unsure, unsure
        # the interval's method in words, not only its id
        assert "Wilson score interval" in page.locator("#variant-figures + p").inner_text()
    finally:
        page.close()


def test_the_run_page_shows_its_gates_and_what_it_could_not_measure(served, browser):
    key = keys(served)[-1]
    page = open_page(browser, served, f"#/run/{key}")
    try:
        gates = page.locator("#gates li").all_inner_texts()
        assert len(gates) == 2 and gates[0].startswith("FAILED: a: pass rate") and gates[1].startswith("passed: b:"), gates
        missing = page.locator("#not-measured li").all_inner_texts()
        assert any(m.startswith("token usage: ") for m in missing), missing
    finally:
        page.close()


def test_the_case_page_says_unknown_for_what_nobody_measured(served, browser):
    key = keys(served)[-1]
    page = open_page(browser, served, f"#/case/{key}/boom1")
    try:
        shown = page.locator('.attempt[data-variant="a"] .measurements').inner_text()
        assert "tokens in unknown / out unknown" in shown and "?" not in shown, shown  # was "tokens ?/?"
        assert re.search(r"latency (\d[\d.]* ms|unknown)", shown) and "unknown ms" not in shown, shown
    finally:
        page.close()


def test_viewer_p_values_and_differences_are_written_as_every_rendering_writes_them(served, browser):
    older, newer = keys(served)[-2:]
    page = open_page(browser, served, f"#/compare/{older}/{newer}")
    try:
        table = page.locator("table.paired").first.inner_text()
        sign = re.search(r"sign test p \(two-sided, exact\)\s+(\S+)", table).group(1)
        assert re.fullmatch(r"\d\.\d{4}|<0\.0001", sign), sign  # was 1.000 (three decimals) or 3.1e-5
        mean = re.search(r"mean difference A−B, points \[95% CI\]\s+(.+)", table).group(1)
        assert re.match(r"[+-]\d+\.\d \[[+-]\d+\.\d to [+-]\d+\.\d\] \(student-t: Student t interval", mean), mean
        assert re.search(r"could detect\s+(\d+ points or more|could not detect)", table), table
    finally:
        page.close()
    page = open_page(browser, served, "#/trends/probe2")
    try:
        text = page.locator("#trend-table").inner_text()
        shown = re.findall(r"\bp[=<]\S+", text)
        assert shown and all(P_VALUE.fullmatch(p) for p in shown), shown
        assert "Wilson score interval" in page.locator("main p.muted").first.inner_text()
    finally:
        page.close()
    page = open_page(browser, served, "#/runs")
    try:
        assert "Wilson score interval" in page.locator("#runs-method").inner_text()
    finally:
        page.close()


def test_the_compare_figures_show_rates_in_percent_their_change_in_points_and_how_many_values_were_known(served, browser):
    older, newer = keys(served)[-2:]
    page = open_page(browser, served, f"#/compare/{older}/{newer}")
    try:
        row = page.locator('table.deltas').first.locator('tr[data-figure="pass rate"] td').all_inner_texts()
        assert re.fullmatch(r"\d+\.\d%", row[1]) and re.fullmatch(r"[+-]\d+\.\d points", row[3]), row  # was 0.3333 / 0.00
        figures = page.locator("table.deltas").first.locator("td:first-child").all_inner_texts()
        # the subject's error has no token count: the mean is over the known values, and says of how many
        (tokens,) = [f for f in figures if f.startswith("input_tokens mean")]
        assert tokens == f"input_tokens mean (known values: A {len(CASES) - 1} of {len(CASES)}, B {len(CASES) - 1} of " \
                         f"{len(CASES)})", tokens
    finally:
        page.close()


def test_the_viewer_meta_names_every_interval_method_in_words(served):
    meta = api(served, "/api/meta")
    for figure in api(served, "/api/runs?suite=probe2")["runs"][0]["figures"]:
        assert figure["ci_method"] in meta["methods"]
        assert len(meta["methods"][figure["ci_method"]].split()) > 4


def status_of(served: Served, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(served.base + path, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_an_unknown_case_outcome_or_attempt_status_is_400_not_a_silently_unfiltered_page(served):
    key = keys(served)[-1]
    code, body = status_of(served, f"/api/runs/{key}/cases?outcome=failng")
    assert code == 400 and "outcome" in body["error"] and "failing" in body["error"], (code, body)  # was 200: every case
    code, body = status_of(served, f"/api/runs/{key}/attempts?status=faild")
    assert code == 400 and "failed" in body["error"], (code, body)  # was 200 and an empty list
    # the known ones still filter, and the cases with no verdict can be asked for
    assert {c["case_id"] for c in api(served, f"/api/runs/{key}/cases?outcome=unjudged")["cases"]} == {"unsure1"}
    assert {a["case_id"] for a in api(served, f"/api/runs/{key}/attempts?status=error")["attempts"]} == {"boom1"}


def test_exporting_the_reviews_of_an_unknown_run_or_kind_is_refused_not_an_empty_file(served):
    key = keys(served)[-1]
    code, body = status_of(served, "/api/reviews/export?run=no-such-run")
    assert code == 404 and body["error"] == "no such run", (code, body)  # was 200 with no entries
    code, body = status_of(served, "/api/reviews/export?kind=humans")
    assert code == 400 and "human, model" in body["error"], (code, body)
    assert api(served, f"/api/reviews/export?run={key}&kind=human")["entries"] == []


def test_the_run_page_offers_the_cases_with_no_verdict(served, browser):
    key = keys(served)[-1]
    page = open_page(browser, served, f"#/run/{key}?outcome=unjudged")
    try:
        assert page.locator("#outcome").input_value() == "unjudged"
        assert page.locator("#cases-body tr").evaluate_all("rows => rows.map(r => r.dataset.case)") == ["unsure1"]
    finally:
        page.close()


# ---------- the terminal summary and the JUnit XML of a real run ----------

@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("probe2-runs") / "p"
    write_project(folder, runs=3)
    done = scoreboard("run", "suite.json", "--no-progress", "--store", "none", "--format", "json,junit,html", cwd=folder)
    assert done.returncode == 2, done.stdout + done.stderr
    (report,) = (folder / "eval-results" / "probe2").glob("*.json")
    return {"printed": done.stdout, "json": json.loads(report.read_text()),
            "junit": report.with_suffix(".junit.xml").read_bytes(), "html": report.with_suffix(".html")}


def test_the_terminal_summary_names_each_interval_method_in_words(three_runs):
    printed = three_runs["printed"]
    assert "[95% CI " in printed  # intervals are printed ...
    (line,) = [ln for ln in printed.splitlines() if ln.startswith("  95% intervals: ")]  # ... and their methods, once
    for name in three_runs["json"]["summary"]["methods"]:
        if name not in ("version", "unit"):
            assert f"{name}: " in line, line
    assert "wilson-effective-n: Wilson score interval on the effective number of cases" in line
    assert "student-t: Student t interval on per-case values" in line


def test_junit_holds_pass_at_k_and_pass_hat_k_with_their_interval_and_method(three_runs):
    root = ET.fromstring(three_runs["junit"])
    summary = three_runs["json"]["summary"]["variants"]
    for suite in root.iter("testsuite"):
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        figures = summary[props["variant"]]
        for k in ("1", "2", "3"):
            for key, label in (("pass_at_k", "pass@"), ("pass_hat_k", "pass^")):
                fig = figures[key][k]
                assert props[label + k].startswith(f"{fig['value'] * 100:.1f}% [95% CI {fig['ci']['low'] * 100:.1f}%"), \
                    (label + k, props.get(label + k))
                assert fig["ci"]["method"] in props[label + k]
        assert props["interval_method"].startswith("wilson-effective-n: Wilson score interval")


def test_a_junit_pass_whose_other_runs_had_no_verdict_says_so(three_runs):
    root = ET.fromstring(three_runs["junit"])
    for suite in root.iter("testsuite"):
        (case,) = [tc for tc in suite.iter("testcase") if tc.get("name") == "some1"]
        assert case.find("failure") is None and case.find("skipped") is None  # it passed every run it was judged on
        assert case.findtext("system-out") == "2 of 3 runs passed; 1 not assessed (no grader could judge it)"
        (always,) = [tc for tc in suite.iter("testcase") if tc.get("name") == "ok1"]
        assert always.find("system-out") is None  # a pass on every run needs no note


def test_the_html_case_table_says_how_many_runs_were_not_assessed(three_runs, browser):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(three_runs["html"].resolve().as_uri())
        page.wait_for_selector("html[data-ready=true]", timeout=30_000)
        cell = page.locator('[data-testid="case-row"][data-case-id="unsure1"] [data-testid="case-cell-a"]').inner_text()
        assert "3 not assessed" in cell, cell  # was "0/0" alone: nothing said why
        cell = page.locator('[data-testid="case-row"][data-case-id="some1"] [data-testid="case-cell-a"]').inner_text()
        assert "2/2" in cell and "1 not assessed" in cell, cell
        cell = page.locator('[data-testid="case-row"][data-case-id="boom1"] [data-testid="case-cell-a"]').inner_text()
        assert "3 errors" in cell and "not assessed" not in cell, cell
        # the variant's count of cases is of the cases with a verdict, and says so (the header counts all)
        judged = three_runs["json"]["summary"]["variants"]["a"]["cases"]
        assert judged < len(CASES)
        assert re.search(rf"cases judged\s+{judged}\b", page.locator("body").inner_text())
        assert errors == []
    finally:
        page.close()


def test_one_conversation_is_not_each_of_the_1_conversation():
    from scoreboard.record.figures import unit_words

    assert unit_words(1).startswith("the intervals count the 1 conversation as one unit")
    assert unit_words(3).startswith("the intervals count each of the 3 conversations as one unit")


def test_the_markdown_case_table_says_which_runs_a_stopped_run_never_made(tmp_path):
    """--max-requests stops the run after the first requests: the cases whose later runs never ran
    read '1/1 (2 not run)', not a bare 1/1 (and the HTML cell says the same)."""
    from scoreboard.record.markdown import render_markdown
    from scoreboard.record.view import view_of

    report = json.loads(json.dumps(make_stopped_report()))
    md = render_markdown(view_of(report))
    rows = {line.split(" | ")[0].lstrip("| "): line for line in md.splitlines() if line.startswith("| c")}
    assert rows["c0"].endswith("| ✅ 1/1 (2 not run) |"), rows["c0"]
    assert rows["c1"].endswith("| ❌ 0/1 (2 not run) |"), rows["c1"]
    assert rows["c2"].endswith("| ✅ 3/3 |"), rows["c2"]


def make_stopped_report() -> dict:
    """Three cases, three runs; c0 and c1 ran once before the run stopped (then not-run)."""
    from tests.record.conftest import make_report

    def status(i, v, r):
        if i < 2 and r > 0:
            return "not-run"
        return "failed" if i == 1 else "passed"

    return make_report(3, variants=("only",), runs=3, status_of=status, run_status="stopped", case_id=lambda i: f"c{i}")


def test_junit_says_in_numbers_what_a_capped_rendering_left_out():
    from scoreboard.record.junit import render_junit
    from scoreboard.record.view import view_of
    from tests.record.conftest import make_report

    report = make_report(40, variants=("only",), runs=3, status_of=lambda i, v, r: "failed" if i < 5 else "passed")
    root = ET.fromstring(render_junit(view_of(report, cap=30)).encode("utf-8"))
    (note,) = [p.get("value") for p in root.iter("property") if p.get("name") == "attempts_omitted"]
    # 15 failed attempts kept, then 15 of the 105 passes: 90 passes left out (was only the note, no number)
    assert note.startswith("30 of 120 attempts kept for the failure details; 90 passing attempts left out"), note
    # 40 cases and the report's gates (a testsuite of their own, all passing here)
    assert int(root.get("failures")) == 5 and int(root.get("tests")) == 40 + len(report["gates"])
    assert all(g["passed"] for g in report["gates"])


def test_junit_carries_the_gates_that_judged_each_variant(tmp_path):
    """README: gate results go in the JSON report and every rendering; a CI test tab fed the JUnit
    file must show why the run exited 3."""
    folder = tmp_path / "p"
    write_project(folder)
    done = scoreboard("run", "suite.json", "--no-progress", "--store", "none", "--format", "json,junit",
                      "--fail-under", "a=0.9", "--fail-under", "b=0.1", cwd=folder)
    assert done.returncode == 2, done.stdout + done.stderr  # the subject's error outranks the failed gate
    (report,) = (folder / "eval-results" / "probe2").glob("*.json")
    gates = {g["variant"]: g for g in json.loads(report.read_text())["gates"]}
    root = ET.fromstring(report.with_suffix(".junit.xml").read_bytes())
    (gate_suite,) = [s for s in root.iter("testsuite") if s.get("name") == "probe2.gates"]
    # the gates' own testsuite: a CI tab shows testcases, so the failed gate is a failing one
    assert {tc.get("name"): tc.find("failure") is not None for tc in gate_suite.iter("testcase")} == {
        "fail-under [a]": True, "fail-under [b]": False}
    for suite in root.iter("testsuite"):
        if suite is gate_suite:
            continue
        props = [(p.get("name"), p.get("value")) for p in suite.iter("property")]
        variant = dict(props)["variant"]
        assert [v for n, v in props if n == "gate"] == [
            f"{'passed' if gates[variant]['passed'] else 'FAILED'}: {gates[variant]['description']}"], props
    assert not gates["a"]["passed"] and gates["b"]["passed"]


def test_the_html_comparison_interval_names_its_method(three_runs, browser):
    page = browser.new_page()
    try:
        page.goto(three_runs["html"].resolve().as_uri())
        page.wait_for_selector("html[data-ready=true]", timeout=30_000)
        stat = page.locator('[data-testid="cmp-mean-difference"]').first.locator("xpath=..").inner_text()
        # was "95% interval -x to +y" alone: the pass rate's interval named Wilson, this one nothing
        assert re.search(r"95% interval \S+ to \S+ \(Student t interval on per-case values\)", stat), stat
    finally:
        page.close()
