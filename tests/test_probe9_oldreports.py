"""Reports written by last week's build keep working with this one.

The reports in tests/data/probe9_old/ were written by commit 73f3bc5 (statistics version 6,
before `errors_not_graded` and the 'units' headline of conversations), from a worktree of that
commit, and are kept as it wrote them:

    git worktree add /tmp/oldbuild 73f3bc5
    cd WORK   # subj.py, cases.jsonl, rep.yaml, conv.json, conv.yaml: the SUBJ, CASES, ... below
    PYTHONPATH=/tmp/oldbuild/src SCOREBOARD_STORE=none python -m scoreboard run rep.yaml \\
        --fail-under careful=0.6 --format json --output rep_v6.json
    PYTHONPATH=/tmp/oldbuild/src SCOREBOARD_STORE=none python -m scoreboard run conv.yaml \\
        --format json --output conv_v6.json

rep_v6.json: two variants, 2 runs, a case with `graders: []` whose subject raised in `careful`
(version 6 counted those errors as failures of the rate: 4/6; version 7 leaves them out: 4/4).
conv_v6.json: two conversations and a plain case, two variants.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from scoreboard.stats.methods import STATS_VERSION
from tests.cli_inprocess import run_cli

DATA = Path(__file__).parent / "data" / "probe9_old"

SUBJ = '''
def reply(prompt, skill, run, params):
    style = params.get("style", "plain")
    if "ungraded" in prompt and style == "careful":
        raise RuntimeError("ungraded case failed")
    if "hard" in prompt:
        return "yes" if style == "careful" else "no"
    return "yes"

def conv(input, seed=None):
    msgs = input if isinstance(input, list) else []
    last = msgs[-1]["content"] if msgs else str(input)
    if "birds" in last:
        return "47 birds [note_1]"
    return "It rained [note_2]"
'''
CASES = '''{"id": "easy", "input": "easy question", "graders": [{"contains": "yes"}]}
{"id": "hard", "input": "hard question", "graders": [{"contains": "yes"}]}
{"id": "ungraded", "input": "ungraded question", "graders": []}
'''
REP = '''name: rep
cases: cases.jsonl
runs: 2
subject: {type: python, function: "subj:reply", model_free: true}
variants:
  basic: {params: {style: plain}}
  careful: {params: {style: careful}}
'''
CONV_CASES = '''{"cases": [
  {"id": "c1", "conversation": {"topic": "survey", "notes": "The survey counted 47 birds.\\n\\nIt rained on Tuesday."},
   "turns": [{"id": "t1", "question": "How many birds?", "graders": [{"contains": "47"}]},
             {"id": "t2", "question": "What happened on Tuesday?", "graders": [{"citations": {"required": ["note_2"]}}]}]},
  {"id": "c2", "conversation": {"topic": "survey2", "notes": "We saw 12 owls.\\n\\nIt snowed."},
   "turns": [{"id": "t1", "question": "How many birds?", "graders": [{"contains": "12"}]},
             {"id": "t2", "question": "What weather?", "graders": [{"contains": "snow"}]}]},
  {"id": "plain", "input": "just a question", "graders": [{"contains": "birds"}]}
]}
'''
CONV = '''name: conv
cases: conv.json
subject: {type: python, function: "subj:conv", model_free: true}
variants:
  a: {}
  b: {subject: {type: mock, default: "47 birds snow [note_2]"}}
'''


def cli(cwd: Path, *args: str, store: str = "none") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PYTHONPATH")}
    env["SCOREBOARD_STORE"] = store
    return run_cli(args, cwd, env)


def old(tmp_path: Path, name: str) -> Path:
    shutil.copy(DATA / name, tmp_path / name)
    return tmp_path / name


def write_suites(folder: Path) -> None:
    for name, text in (("subj.py", SUBJ), ("cases.jsonl", CASES), ("rep.yaml", REP), ("conv.json", CONV_CASES),
                       ("conv.yaml", CONV)):
        (folder / name).write_text(text, encoding="utf-8")


def test_old_reports_are_version_6_and_verify(tmp_path):
    for name in ("rep_v6.json", "conv_v6.json"):
        report = json.loads((DATA / name).read_text(encoding="utf-8"))
        assert report["summary"]["methods"]["version"] == 6
        done = cli(tmp_path, "verify", str(old(tmp_path, name)))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "statistics version 6" in done.stdout


def test_compare_leaves_errors_of_not_graded_cases_out_of_the_rate(tmp_path):
    """compare recomputes each side's pass rate: an error of a case no grader decides is outside
    it, as in the summary (version 7); it read 4/6 with the old report and 4/6 with a new one
    whose own summary says 4/4, and the not-graded case joined the pairs as a tie."""
    write_suites(tmp_path)
    done = cli(tmp_path, "run", "rep.yaml", "--format", "json", "--output", "new.json")
    assert done.returncode in (0, 2), done.stderr
    new = json.loads((tmp_path / "new.json").read_text(encoding="utf-8"))
    assert new["summary"]["variants"]["careful"]["pass_rate"] == 1.0
    result = cli(tmp_path, "compare", str(old(tmp_path, "rep_v6.json")), "new.json", "--json")
    assert result.returncode == 0, result.stderr
    pairs = {c["a"]: c for c in json.loads(result.stdout)["comparisons"]}
    careful = pairs["careful"]
    assert careful["a_pass_rate"] == careful["b_pass_rate"] == 1.0
    assert careful["a_counts"] == careful["b_counts"] == {"passed": 4, "judged": 4, "errors": 0,
                                                          "errors_not_graded": 2}
    assert careful["cases"] == 2 and careful["ties"] == 2  # easy and hard; not the not-graded case
    assert pairs["basic"]["cases"] == 2
    text = cli(tmp_path, "compare", "rep_v6.json", "new.json").stdout
    assert "careful (A) 100.0% (4/4, 2 errors of not-graded cases outside the rate)" in text


def test_compare_of_conversations_says_units_in_its_headline(tmp_path):
    """compare pairs a conversation's turns as one unit: its headline counts units, as each
    report's own comparison does since version 7 ('better on 2 units'), not 'cases'."""
    write_suites(tmp_path)
    done = cli(tmp_path, "run", "conv.yaml", "--format", "json", "--output", "new.json")
    assert done.returncode == 0, done.stderr
    result = cli(tmp_path, "compare", str(old(tmp_path, "conv_v6.json")), "new.json", "--pair", "a=b", "--json")
    assert result.returncode == 0, result.stderr
    (pair,) = json.loads(result.stdout)["comparisons"]
    assert pair["cases"] == 3 and pair["b_wins"] == 2
    assert "better on 2 units, worse on 0, 1 tie" in pair["headline"], pair["headline"]
    assert " cases" not in pair["headline"]


def test_history_counts_a_version_7_report_as_its_summary_does(tmp_path):
    """history said 'pass rate 100.0% (4/6 judged, 2 errors)' for a version 7 report whose two
    errors are of a not-graded case (outside the rate); the old report beside it keeps its own
    figures (4/6: version 6 counted them)."""
    write_suites(tmp_path)
    assert cli(tmp_path, "run", "rep.yaml", "--format", "json", "--output", "new.json").returncode in (0, 2)
    store = str(tmp_path / "h.sqlite")
    done = cli(tmp_path, "store", "import", str(old(tmp_path, "rep_v6.json")), "new.json", store=store)
    assert done.returncode == 0, done.stderr
    listed = cli(tmp_path, "history", store=store)
    assert listed.returncode == 0, listed.stderr
    lines = [line.strip() for line in listed.stdout.splitlines() if line.strip().startswith("careful:")]
    assert len(lines) == 2, listed.stdout
    assert any("100.0%" in line and "(4/4 judged, 2 errors (2 of not-graded cases, outside the rate)" in line
               for line in lines), lines
    assert any("66.7%" in line and "(4/6 judged, 2 errors," in line for line in lines), lines
    data = json.loads(cli(tmp_path, "history", "--json", store=store).stdout)
    apart = sorted(str(f.get("errors_not_graded")) for r in data["runs"] for f in r["figures"] if f["name"] == "careful")
    assert apart == ["2", "None"]


def test_viewer_compares_runs_without_the_errors_of_not_graded_cases(tmp_path):
    """The viewer's comparison of two stored runs (/api/compare, and the trend's marker) paired
    the not-graded case's errors as failures: careful read 4/6 (66.7%) on 3 cases for a new
    report whose own summary says 4/4 on 2; the old report's run is counted by the same rule."""
    import urllib.request

    from tests.viewer.conftest import Served

    write_suites(tmp_path)
    assert cli(tmp_path, "run", "rep.yaml", "--format", "json", "--output", "new.json").returncode in (0, 2)
    store = str(tmp_path / "h.sqlite")
    assert cli(tmp_path, "store", "import", str(old(tmp_path, "rep_v6.json")), "new.json", store=store).returncode == 0
    runs = json.loads(cli(tmp_path, "history", "--json", store=store).stdout)["runs"]
    keys = {r["run_id"]: r["key"] for r in runs}
    served = Served("--store", store, cwd=tmp_path)
    try:
        url = f"{served.base}/api/compare?a={keys['rep_v6']}&b={keys['new']}"
        with urllib.request.urlopen(url, timeout=30) as answer:
            data = json.loads(answer.read())
        with urllib.request.urlopen(f"{served.base}/api/trends?suite=rep", timeout=30) as answer:
            trend = json.loads(answer.read())
    finally:
        served.stop()
    pairs = {c["a"]: c for c in data["comparisons"]}
    assert pairs["careful"]["cases"] == 2 and pairs["careful"]["ties"] == 2
    assert pairs["careful"]["a_pass_rate"] == pairs["careful"]["b_pass_rate"] == 1.0
    assert pairs["basic"]["cases"] == 2
    change = trend["series"]["careful"][-1]["change"]
    assert change["previous"] == keys["rep_v6"] and change["cases"] == 2, change


def test_rescore_of_a_version_6_report_says_its_figures_are_computed_with_version_7(tmp_path):
    # a rescore recomputes the summary with this build's statistics: the old rep report's careful
    # went from 46.7% to 58.3% (the errors of its not-graded case left the rate) while rescore
    # only said "graders changed for 0 of 5 cases"
    src = old(tmp_path, "rep_v6.json")
    done = cli(tmp_path, "rescore", str(src), "--output", str(tmp_path / "new.json"))
    # exit 2: the source's run had attempts that errored, and the rescored report keeps them
    assert done.returncode == 2 and (tmp_path / "new.json").exists(), done.stdout + done.stderr
    assert "graders changed for 0 of 3 cases" in done.stdout
    assert (f"statistics computed with version {STATS_VERSION}; the source's summary used version 6, so its figures may "
            "differ for that reason alone") in done.stdout
    new = json.loads((tmp_path / "new.json").read_text(encoding="utf-8"))
    assert new["run"]["rescore"]["source_statistics_version"] == 6
    assert new["summary"]["methods"]["version"] == STATS_VERSION
    assert cli(tmp_path, "verify", str(tmp_path / "new.json")).returncode == 0
    again = cli(tmp_path, "rescore", str(tmp_path / "new.json"), "--output", str(tmp_path / "newer.json"))
    assert again.returncode == 2 and "graders changed" in again.stdout and "statistics computed" not in again.stdout  # same version: nothing to say
