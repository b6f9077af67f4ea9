"""Probe 10, one CLI vocabulary: a flag given a bad value gets one line naming that flag and
exit 1 (never an internal error, a silent default, or an error blaming a file the user did not
get wrong)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

CASES = '{"id": "a", "input": "x", "expected": "x"}\n{"id": "b", "input": "y", "expected": "y"}\n'
EXPORT = ('{"type": "result", "subtype": "success", "result": "42", "total_cost_usd": 0.1, "duration_ms": 5, '
          '"usage": {"input_tokens": 1, "output_tokens": 1}}\n')


def cli(*args: str, cwd: Path, store: str = "none") -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": store}
    return run_cli(args, cwd, env)  # in-process: no test here is about the process


def one_error(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert "internal error" not in lines[0]
    return lines[0]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "cases.jsonl").write_text(CASES, encoding="utf-8")
    return tmp_path


def report(work: Path) -> Path:
    proc = cli("run", "--cases", "cases.jsonl", "--subject", "mock", "--output", "r.json", "--no-progress", cwd=work)
    assert proc.returncode == 0, proc.stderr
    return work / "r.json"


@pytest.mark.parametrize("port", ["70000", "-5"])
def test_view_port_out_of_range_names_the_flag(work, port):
    """`view --port 99999` with a store was `internal error: OverflowError: bind(): port must be
    0-65535`, exit 2."""
    proc = cli("run", "--cases", "cases.jsonl", "--subject", "mock", "--output-dir", "out", "--no-progress",
               "--store", "h.sqlite", cwd=work)
    assert proc.returncode == 0, proc.stderr
    line = one_error(cli("view", "--store", "h.sqlite", "--port", port, cwd=work))
    assert line.startswith("scoreboard: error: flag --port:") and "65535" in line


@pytest.mark.parametrize("command", ["run", "plan"])
@pytest.mark.parametrize("flag", ["--max-cost", "--grace", "--alpha"])
@pytest.mark.parametrize("value", ["inf", "nan"])
def test_non_finite_suite_flags_are_refused(work, command, flag, value):
    """`run --max-cost inf` was `internal error: ValueError: Out of range float values are not JSON
    compliant`, exit 2 (a suite file's `.inf` was refused by name); `--grace inf` ran."""
    if command == "plan" and flag == "--grace":
        pytest.skip("plan takes no --grace")
    extra = ["--output-dir", "out", "--no-progress"] if command == "run" else []
    line = one_error(cli(command, "--cases", "cases.jsonl", "--subject", "mock", *extra, flag, value, cwd=work))
    assert line.startswith(f"scoreboard: error: flag {flag}: must be a finite number"), line
    assert not (work / "out").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_footprint_timeout_must_be_finite(work, value):
    """`footprint --timeout nan --run "sleep 3"` measured 0 bytes and 0 tokens and exited 0: the
    command was given up at once and its output counted as empty."""
    line = one_error(cli("footprint", f"--timeout={value}", "--run", "echo hi", cwd=work))
    assert "--timeout" in line and "must be a duration" in line


@pytest.mark.parametrize("flag,value", [("--expect-max-cost", "nan"), ("--expect-max-cost", "inf"),
                                        ("--max-cost", "-1"), ("--expect-max-tokens", "-1"),
                                        ("--expect-max-latency-ms", "0"), ("--max-latency-ms", "nan")])
def test_score_expectation_flags_name_the_flag(work, flag, value):
    """`score ex.json --expect-max-cost nan` said `field 'maxCost': ...`, and `inf` said
    `<flags>, case 'ex', field 'cases[0].maxCost': grader 'max-cost' ...`: names the user never typed."""
    (work / "ex.json").write_text(EXPORT, encoding="utf-8")
    line = one_error(cli("score", "ex.json", flag, value, "--output-dir", "out", cwd=work))
    aliases = {"--max-cost": "--expect-max-cost", "--max-latency-ms": "--expect-max-latency-ms"}
    assert f"argument {aliases.get(flag, flag)}" in line, line
    assert "maxCost" not in line and "maxLatencyMs" not in line and "maxTokens" not in line
    assert not (work / "out").exists()


@pytest.mark.parametrize("flag,value", [("--judge-runs", "0"), ("--max-requests", "-1")])
def test_rescore_flags_are_blamed_not_the_report(work, flag, value):
    """`rescore r.json --judge-runs 0` said `r.json, field 'judge_runs': must be at least 1`: the
    report was blamed for the flag's value."""
    report(work)
    line = one_error(cli("rescore", "r.json", flag, value, "--output-dir", "out", cwd=work))
    assert flag in line and "r.json" not in line, line
    assert not (work / "out").exists()


@pytest.mark.parametrize("command", ["run", "rescore", "score", "report", "aggregate", "export turns"])
@pytest.mark.parametrize("value", ["", ",", " , "])
def test_format_naming_no_format_is_refused(work, command, value):
    """`run --format ""` (an empty CI variable) wrote the default json, md and html, exit 0."""
    args = {"run": ["run", "--cases", "cases.jsonl", "--subject", "mock", "--output-dir", "out", "--no-progress"],
            "rescore": ["rescore", "r.json", "--output-dir", "out"], "score": ["score", "r.json", "--output-dir", "out"],
            "report": ["report", "r.json"], "aggregate": ["aggregate", "r.json", "r.json"],
            "export turns": ["export", "turns", "r.json", "--output", "out/t.json"]}[command]
    (work / "r.json").write_text("{}", encoding="utf-8")
    line = one_error(cli(*args, "--format", value, cwd=work))
    assert line.startswith("scoreboard: error: flag --format:") and "no format" in line, line
    assert not (work / "out").exists()


@pytest.mark.parametrize("sub", [["info"], ["import", "r.json"], ["tag", "r", "t1"], ["verify", "r.json"],
                                 ["reviews", "--output", "rv.json"]])
def test_store_takes_store_before_its_sub_command(work, sub):
    """`scoreboard store --store h.sqlite info` was `argument COMMAND: invalid choice: 'h.sqlite'`
    while `history --store h.sqlite` and `store info --store h.sqlite` worked."""
    report(work)
    assert cli("store", "import", "r.json", "--store", "h.sqlite", cwd=work).returncode == 0
    proc = cli("store", "--store", "h.sqlite", *sub, cwd=work)  # SCOREBOARD_STORE=none: the flag must count
    assert proc.returncode == 0, proc.stderr
    assert "no history store" not in proc.stderr
    if sub == ["info"]:
        assert proc.stdout.startswith("store: h.sqlite")
    # given after the sub-command too, the later one counts (as argparse takes a repeated flag)
    after = cli("store", "--store", "elsewhere.sqlite", "info", "--store", "h.sqlite", cwd=work)
    assert after.returncode == 0 and after.stdout.startswith("store: h.sqlite"), after.stderr


@pytest.mark.parametrize("name,start", [("page.html", "<!DOCTYPE html>"), ("again.md", "# scoreboard report"),
                                        ("ci.junit.xml", "<?xml"), ("ci.xml", "<?xml"), ("copy.JSON", "{")])
def test_report_output_name_picks_the_format(work, name, start):
    """`report r.json --output page.html` wrote Markdown into page.html (the default format)."""
    report(work)
    proc = cli("report", "r.json", "--output", name, cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert (work / name).read_text(encoding="utf-8").lstrip().startswith(start)


def test_report_output_name_and_format_must_agree(work):
    report(work)
    line = one_error(cli("report", "r.json", "--format", "md", "--output", "page.html", cwd=work))
    assert line.startswith("scoreboard: error: flag --output: 'page.html'") and "--format html" in line, line
    assert not (work / "page.html").exists()
    proc = cli("report", "r.json", "--format", "md", "--output", "notes.txt", cwd=work)  # a name of no format
    assert proc.returncode == 0 and (work / "notes.txt").read_text(encoding="utf-8").startswith("# scoreboard")


@pytest.mark.parametrize("name", ["cmp.json", "cmp.md", "cmp.junit.xml"])
def test_compare_output_is_an_html_page(work, name):
    """`compare A B --output cmp.json` wrote the HTML page into cmp.json."""
    report(work)
    line = one_error(cli("compare", "r.json", "r.json", "--output", name, cwd=work))
    assert line.startswith(f"scoreboard: error: flag --output: '{name}'") and ".html" in line, line
    assert not (work / name).exists()
    proc = cli("compare", "r.json", "r.json", "--output", "cmp.html", cwd=work)
    assert proc.returncode == 0 and (work / "cmp.html").read_text(encoding="utf-8").startswith("<!doctype html>")


@pytest.mark.parametrize("args,name,shown", [
    (["verify", "r.json"], "v.md", "--output"), (["plan", "--cases", "cases.jsonl", "--subject", "mock"], "p.html",
                                                 "--output"),
    (["schema"], "s.xml", "--output"), (["footprint", "cases.jsonl"], "f.md", "--output"),
    (["store", "reviews", "--store", "h.sqlite"], "rv.html", "--output"),
    (["import", "csv", "--csv", "c.csv", "--map", "input=a,expected=b"], "c.md", "--output"),
    (["import", "csv", "--csv", "c.csv", "--map", "input=a,expected=b"], "c.md", "--out"),
    (["export", "turns", "r.json"], "t.md", "--output"), (["aggregate", "r.json", "r.json"], "ag.html", "--output"),
])
def test_json_outputs_refuse_another_formats_name(work, args, name, shown):
    """`verify r.json --output v.md`, `plan --output p.html`, `import csv --out c.md`... wrote JSON
    into a file named as Markdown, HTML or XML; a report writer (export turns, aggregate) says
    which name to give, as run does."""
    report(work)
    (work / "c.csv").write_text('a,b\nx,"{""t"": 1}"\n', encoding="utf-8")
    assert cli("store", "import", "r.json", "--store", "h.sqlite", cwd=work).returncode == 0
    line = one_error(cli(*args, shown, name, cwd=work))
    assert line.startswith(f"scoreboard: error: flag {shown}:") and name in line, line
    assert ".json" in line
    assert not (work / name).exists()


@pytest.mark.parametrize("args", [["history"], ["view"], ["store", "info"], ["verify", "r.json", "--store"]])
def test_store_turned_off_names_what_turned_it_off(work, args):
    """With SCOREBOARD_STORE=none, `history` said `field 'store': no history store (store is
    'none')`: a field no file has, and not the variable that chose it."""
    if args[0] == "verify":
        report(work)
    line = one_error(cli(*args, cwd=work, store="none"))
    assert "SCOREBOARD_STORE is 'none'" in line and "--store" in line and "field 'store'" not in line, line
    if args[0] != "verify":
        line = one_error(cli(*args, "--store", "off", cwd=work, store="h.sqlite"))
        assert line.startswith("scoreboard: error: flag --store: no history store ('off' keeps none)"), line


@pytest.mark.parametrize("args,meant", [(["rnu"], "run"), (["import", "promptfo", "x.yaml"], "promptfoo"),
                                        (["store", "infp"], "info"), (["footprint", "--encoding", "cl100k", "x"],
                                                                      "cl100k_base")])
def test_unknown_choice_says_the_closest(work, args, meant):
    """`scoreboard rnu` listed every command but not the one meant, where a mistyped flag names
    the closest (`--fail-undr`: did you mean --fail-under?)."""
    line = one_error(cli(*args, cwd=work))
    assert "invalid choice" in line and line.endswith(f"(did you mean {meant}?)"), line
    assert "did you mean" not in one_error(cli("zzz", cwd=work))


@pytest.mark.parametrize("given, ms", [("1500", 1500), ("90s", 90_000), ("1500ms", 1500), ("2m", 120_000),
                                       (".5s", 500)])
def test_run_and_replay_timeouts_take_a_unit_as_footprint_s_does(given, ms):
    """--timeout was milliseconds in run and replay and seconds in footprint, with no way to say
    which: a number with its unit (90s, 1500ms, 2m) now means the same in every command, and a
    bare number keeps each command's documented unit."""
    from scoreboard.cli.common import duration

    assert duration("ms")(given) == ms
    assert duration("s")(given) == (ms / 1000 if not given.isdigit() else float(given))


@pytest.mark.parametrize("bad", ["0", "-5", "nan", "inf", "1e3", "ten", "5 parsecs"])
def test_a_timeout_that_is_no_duration_names_the_flag(tmp_path, bad):
    for argv in (["run", "--cases", "c.jsonl", "--subject", "mock", "--timeout", bad],
                 ["footprint", "--run", "true", "--timeout", bad]):
        done = cli(*argv, cwd=tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "--timeout" in done.stderr and "duration" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("bad", ["-1", "0", "1e3", "many"])
def test_import_openai_evals_max_file_bytes_is_checked_as_a_flag(tmp_path, bad):
    """--max-file-bytes -1 was refused after argparse, without the flag form every other flag has."""
    done = cli("import", "openai-evals", "reg.yaml", "--output", "out", f"--max-file-bytes={bad}", cwd=tmp_path)
    assert done.returncode == 1 and "argument --max-file-bytes: must be" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_verify_with_its_report_taken_by_store_says_so(tmp_path):
    """`verify --store r.json`: --store's value is optional, so it took the report as its store and
    argparse said only that REPORT.json was required."""
    (tmp_path / "r.json").write_text("{}")
    done = cli("verify", "--store", "r.json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "--store took 'r.json' as the history store" in done.stderr and "verify r.json --store" in done.stderr
