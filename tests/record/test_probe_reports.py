"""The commands that read saved reports, against reports a hostile or careless user edited:
`verify` names every tampering by its JSON path, one line each, and never stops on an internal
error; `report`, `compare` and `run --baseline` refuse what they cannot read in one line (exit 1);
nothing is held in memory for a file of blanks; a report compared with itself says so."""

from __future__ import annotations

import copy
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "invoices" / "suite.yaml"


def sb(*args: str, cwd: Path, memory_mb: int | None = None, process: bool = False) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS`: in-process, or a process where the test is about one: an
    address-space limit, stdout's strict UTF-8 (a lone surrogate), a fresh stack (990 levels)."""
    if memory_mb is None and not process:
        return run_cli(args, cwd, dict(os.environ))
    limit = None
    if memory_mb is not None:
        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=300, preexec_fn=limit)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A real report: the offline invoices example on three cases, two variants, two runs."""
    out = tmp_path_factory.mktemp("probe-src")
    done = sb("run", str(SUITE), "--case", "inv-001", "--case", "inv-002", "--case", "inv-003", "--runs", "2",
              "--format", "json", "--output", "src.json", "--no-progress", cwd=out)
    assert done.returncode == 0, done.stderr
    return out / "src.json"


@pytest.fixture
def report(source: Path) -> dict:
    return json.loads(source.read_text(encoding="utf-8"))


def write(tmp_path: Path, data: dict | str, name: str = "edited.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def no_crash(done: subprocess.CompletedProcess) -> None:
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr


EDITS = {
    "output-text": (lambda r: r["attempts"][0].__setitem__("output", "abc"), "attempts[0].output"),
    "measurements-text": (lambda r: r["attempts"][1].__setitem__("measurements", "abc"), "attempts[1].measurements"),
    "case-id-list": (lambda r: r["attempts"][0].__setitem__("case_id", [1]), "attempts[0].case_id"),
    "variant-object": (lambda r: r["attempts"][2].__setitem__("variant", {}), "attempts[2].variant"),
    "grades-number": (lambda r: r["attempts"][0].__setitem__("grades", 5), "attempts[0].grades"),
    "run-status-list": (lambda r: r["run"].__setitem__("status", [1]), "run.status"),
    "methods-text": (lambda r: r["summary"].__setitem__("methods", "x"), "summary.methods"),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_field_of_the_wrong_type_is_named_by_its_path_never_an_internal_error(report, tmp_path, name):
    edit, where = EDITS[name]
    edit(report)
    done = sb("verify", str(write(tmp_path, report)), cwd=tmp_path)
    no_crash(done)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"  {where}:" in done.stdout


@pytest.mark.parametrize("edit", ["deleted", "old-version", "unknown-version"])
def test_a_stated_statistics_version_hides_no_tampered_summary(report, tmp_path, edit):
    """A summary of another statistics version is not recomputed interval by interval, but its
    counts and pass rates are: deleting the summary or claiming an older version hides nothing."""
    if edit == "deleted":
        report["summary"] = {}
        where = "summary.variants"
    else:
        report["summary"]["methods"]["version"] = 3 if edit == "old-version" else 0
        report["summary"]["variants"]["basic"]["pass_rate"] = 0.99
        report["summary"]["variants"]["basic"]["passed"] += 1
        where = "summary.variants.basic.pass_rate" if edit == "old-version" else "summary.methods.version"
    done = sb("verify", str(write(tmp_path, report)), cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert f"  {where}" in done.stdout


def test_an_untouched_report_of_an_older_statistics_version_still_verifies(report, tmp_path):
    report["summary"]["methods"]["version"] = 3
    # as a build computing version 3 wrote it: no graders version nor gate settings (which later
    # builds record, so keeping them beside version 3 is a lowered version: probe 24L)
    report["run"]["versions"].pop("graders", None)
    report["plan"].pop("gates", None)
    done = sb("verify", str(write(tmp_path, report)), cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert "statistics version 3" in done.stdout


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_number_json_cannot_hold_is_named_where_it_is(source, tmp_path, literal):
    text = source.read_text(encoding="utf-8")
    latency = '"latency_ms":'
    at = text.index(latency) + len(latency)
    end = at + len(text[at:].split(",", 1)[0])
    edited = write(tmp_path, text[:at] + literal + text[end:])
    done = sb("verify", str(edited), cwd=tmp_path)
    no_crash(done)
    assert done.returncode == 1
    assert "  attempts[0].measurements.latency_ms: " in done.stdout and "not a finite number" in done.stdout
    shown = sb("report", str(edited), "--format", "md", cwd=tmp_path)  # never "nan%" or "inf%"
    assert shown.returncode == 1 and shown.stdout == ""
    assert "field 'attempts[0].measurements.latency_ms'" in shown.stderr and shown.stderr.count("\n") == 1


def test_a_lone_surrogate_anywhere_is_named_and_every_output_is_written(report, tmp_path):
    """A lone surrogate in a string no hash covers (the suite's name) is named by verify; every
    command that prints or writes it gives its escape instead of stopping on UTF-8."""
    report["run"]["suite"] = "inv\udc00oices"
    edited = tmp_path / "odd.json"
    edited.write_text(json.dumps(report))  # ASCII JSON: the surrogate as its escape
    done = sb("verify", str(edited), cwd=tmp_path, process=True)
    no_crash(done)
    assert done.returncode == 1 and "  run.suite: " in done.stdout and "lone surrogate" in done.stdout
    as_json = sb("verify", str(edited), "--json", cwd=tmp_path, process=True)
    no_crash(as_json)
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["mismatches"][0]["path"] == "run.suite"
    page = sb("report", str(edited), "--format", "html", cwd=tmp_path, process=True)
    no_crash(page)
    assert page.returncode == 0 and "\\udc00" in page.stdout
    compared = sb("compare", str(edited), str(edited), "--json", "--output", "c.html", cwd=tmp_path, process=True)
    no_crash(compared)
    assert compared.returncode == 0 and json.loads(compared.stdout)["a"]["suite"] == "inv\udc00oices"
    assert (tmp_path / "c.html").is_file()


def test_each_mismatch_is_one_line_whatever_the_tampered_text_holds(report, tmp_path):
    report["attempts"][0]["grades"][0]["reason"] = "fine\nattempts[9].status: forged line\x1b[2J"
    done = sb("verify", str(write(tmp_path, report)), cwd=tmp_path)
    assert done.returncode == 1
    findings = [line for line in done.stdout.splitlines() if line.startswith("  ")]
    assert len(findings) == 1 and findings[0].startswith("  attempts[0].grades[0].reason:")
    assert "\x1b" not in done.stdout and "\\n" in findings[0]


@pytest.mark.parametrize("where", ["output", "summary"])
def test_a_report_nested_past_what_the_checks_follow_is_named_not_a_crash(source, tmp_path, where):
    text = source.read_text(encoding="utf-8")
    deep = "[" * 990 + "]" * 990
    if where == "output":
        at = text.index('"json":{') + len('"json":')
        end = text.index(',"tool_calls"', at)
        text = text[:at] + deep + text[end:]
        named = "attempts[0].output.json[0]"
    else:
        text = text.replace('"gates":[]', '"gates":[{"gate":' + deep + '}]', 1)
        named = "gates[0].gate[0]"
    edited = write(tmp_path, text)
    for command in (["report", "--format", "md"], ["report", "--format", "html"], ["compare", str(source)]):
        done = sb(*command, str(edited), cwd=tmp_path, process=True)  # rendered, or refused in one line
        no_crash(done)
        assert done.returncode == 0 or (done.returncode == 1 and done.stderr.count("\n") == 1), command
    done = sb("verify", str(edited), cwd=tmp_path, process=True)
    no_crash(done)
    assert done.returncode == 1
    assert f"  {named}" in done.stdout and "levels deep" in done.stdout


def test_a_file_of_blanks_is_refused_without_reading_it_whole(tmp_path):
    blanks = tmp_path / "blank.json"
    with blanks.open("wb") as handle:
        handle.write(b" \n\t\r" * (1 << 20))
    for command in ("verify", "report", "rescore"):
        done = sb(command, str(blanks), cwd=tmp_path)
        no_crash(done)
        assert done.returncode == 1
        assert done.stderr == f"scoreboard: error: {blanks}: report is empty (no JSON value in it, only whitespace)\n"


@pytest.mark.slow
def test_a_report_followed_by_hundreds_of_megabytes_of_blanks_verifies_in_bounded_memory(source, tmp_path):
    """Blanks around the JSON value are never read into memory: a report with 384 MiB of them
    after it verifies under a 640 MiB address-space limit."""
    padded = tmp_path / "padded.json"
    with padded.open("wb") as handle:
        handle.write(source.read_bytes())
        chunk = b" \n" * (1 << 22)
        for _ in range(48):
            handle.write(chunk)
    done = sb("verify", str(padded), cwd=tmp_path, memory_mb=640)
    no_crash(done)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_report_compared_with_itself_says_its_cases_tie_by_construction(source, tmp_path):
    done = sb("compare", str(source), str(source), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    for c in result["comparisons"]:
        assert c["flags"][0].startswith("the same attempts on both sides")
        assert "small sample: fewer than 30 cases" in c["flags"]
    # two different variants of one report are a real comparison (the README's example)
    paired = sb("compare", str(source), str(source), "--pair", "basic=careful", "--json", cwd=tmp_path)
    (c,) = json.loads(paired.stdout)["comparisons"]
    assert not any(f.startswith("the same attempts") for f in c["flags"])


def test_compare_where_no_shared_case_was_judged_in_both_exits_1(report, source, tmp_path):
    report["run"]["status"] = "stopped"
    for a in report["attempts"]:
        if a["variant"] == "careful":
            a.update(status="not-run", output=None, output_hash=None, grades=[], error="not run")
            a.pop("output_text_hash", None)
    stopped = write(tmp_path, report, "stopped.json")
    done = sb("compare", str(source), str(stopped), "--pair", "careful=careful", "--output", "c.html", cwd=tmp_path)
    assert done.returncode == 1 and "nothing compared" in done.stderr and done.stdout == ""
    assert not (tmp_path / "c.html").exists()
    both = sb("compare", str(source), str(stopped), cwd=tmp_path)  # basic still compares
    assert both.returncode == 0, both.stderr


def test_a_baseline_keyed_by_a_list_is_one_line_naming_the_field(report, tmp_path):
    bad = copy.deepcopy(report)
    bad["attempts"][3]["case_id"] = ["inv-001"]
    baseline = write(tmp_path, bad, "main.json")
    done = sb("run", str(SUITE), "--case", "inv-001", "--format", "json", "--output-dir", "out", "--no-progress",
              "--baseline", str(baseline), "--max-regression", "0.05", cwd=tmp_path)
    no_crash(done)
    assert done.returncode == 1
    assert "field 'attempts[3].case_id': must be text" in done.stderr and done.stderr.count("\n") == 1


def test_an_interval_edited_to_one_bound_is_refused_by_its_path(report, tmp_path):
    # `report --format md` crashed (TypeError) on a comparison interval whose high was edited to
    # null: every rendering assumed both bounds or neither. The typed record now refuses it.
    (comparison,) = report["summary"]["comparisons"]
    comparison["mean_difference_ci"]["high"] = None
    path = write(tmp_path, report)
    for args in (["report", str(path), "--format", "md"], ["verify", str(path)]):
        done = sb(*args, cwd=tmp_path)
        no_crash(done)
        assert done.returncode == 1 and "summary.comparisons[0].mean_difference_ci" in done.stdout + done.stderr, \
            (args, done.stdout, done.stderr)


@pytest.mark.parametrize("edit", ["surrogate", "nan"])
def test_rescore_refuses_a_report_no_report_scoreboard_writes_could_hold(report, tmp_path, edit):
    # rescore crashed (UnicodeEncodeError, exit 2) on a lone surrogate in run.suite, and took a
    # NaN as it was (writing it as null); both are verify's "encoding" mismatches, now refused.
    if edit == "surrogate":
        report["run"]["suite"] = "x\udc00"  # written as the escape \udc00 (json.dumps is ASCII)
    else:
        report["attempts"][0]["measurements"]["latency_ms"] = float("nan")  # written as NaN
    path = write(tmp_path, json.dumps(report))
    done = sb("rescore", str(path), "--output-dir", "out", cwd=tmp_path, process=True)
    no_crash(done)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "out").exists()


def test_verify_refuses_a_report_holding_a_key_twice_and_names_where(tmp_path, source):
    """A tamperer appends a second "passed" to a grade: the stdlib and orjson read the last one,
    other JSON readers the first, so the record means two things. verify names the key and its path."""
    text = source.read_text(encoding="utf-8")
    doc = json.loads(text)
    grade = doc["attempts"][1]["grades"][0]
    flipped = json.dumps(not grade["passed"])
    starts = [i for i in range(len(text)) if text.startswith('"grades"', i)]  # one per attempt, in order
    at = text.index('"passed":', starts[1])  # the first grade of the second attempt
    edited = text[:at] + f'"passed": {flipped}, ' + text[at:]
    assert json.loads(edited)["attempts"][1]["grades"][0]["passed"] == grade["passed"]  # the last one wins here
    path = write(tmp_path, edited)
    done = sb("verify", str(path), cwd=tmp_path)
    no_crash(done)
    assert done.returncode == 1 and done.stderr.strip().count("\n") == 0, done.stderr
    assert "'passed' twice" in done.stderr and "attempts[1].grades[0].passed" in done.stderr, done.stderr
    assert sb("verify", str(source), cwd=tmp_path).returncode == 0  # the untouched record still verifies
