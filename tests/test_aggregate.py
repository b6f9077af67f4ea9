"""`scoreboard aggregate` end to end through the real CLI (issue 17, item 4): screen and held-out
stage reports aggregated into one record with the two stages kept apart, the screen's pick and
its held-out confirmation, disjointness by input hash, gates on the held-out figures, refusals
(other suites, FIFOs, huge files, reports that fail verify) and verify over the aggregate."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.cli_inprocess import run_cli

SUBJECTS = '''
def good(input):
    return input.upper()


def weak(input):
    n = int(input.split("-")[1])
    return input.upper() if n % 3 == 0 else "no idea"
'''


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd)


def make_suite(folder: Path, *, screen: int = 10, heldout: int = 32, extra: list[dict] | None = None,
               variants: dict | None = None, name: str = "answers") -> Path:
    """An offline pass-rate suite: `good` answers every case, `weak` one case in three."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "subjects.py").write_text(SUBJECTS)
    cases = [{"id": f"s{i}", "input": f"q-{i}", "expected": f"Q-{i}", "category": "x"} for i in range(screen)]
    cases += [{"id": f"h{i}", "input": f"q-{100 + i}", "expected": f"Q-{100 + i}", "split": "heldout"}
              for i in range(heldout)]
    cases += extra or []
    (folder / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    suite = {"name": name, "cases": "cases.jsonl", "graders": ["exact"],
             "variants": variants or {"good": {"subject": "python:subjects:good"},
                                      "weak": {"subject": "python:subjects:weak"}},
             "stages": {"screen": {"first": screen}}}
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def stage(folder: Path, name: str, *extra: str) -> Path:
    proc = scoreboard(["run", "suite.yaml", "--stage", name, "--no-progress", *extra], folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("json: "))
    return folder / line.split("json: ", 1)[1].strip()


def written(proc: subprocess.CompletedProcess) -> Path:
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("json: "))
    return Path(line.split("json: ", 1)[1].strip())


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """A suite's screen and held-out reports (made once for the module)."""
    folder = tmp_path_factory.mktemp("agg")
    make_suite(folder)
    return folder, stage(folder, "screen"), stage(folder, "heldout")


def test_aggregate_picks_on_the_screen_and_confirms_on_held_out_cases(staged, tmp_path):
    folder, screen, held = staged
    out = tmp_path / "agg" / "answers.json"
    proc = scoreboard(["aggregate", str(held), str(screen), "--output", str(out), "--fail-under", "good=0.9"], folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads(out.read_text())
    assert record["schema"] == "scoreboard.aggregate/v1" and record["primary"] == "pass_rate"
    # The stages apart: each section holds its own cases and figures only.
    assert record["screen"]["cases"] == [f"s{i}" for i in range(10)]
    assert record["heldout"]["cases"] == [f"h{i}" for i in range(32)]
    assert record["screen"]["variants"]["weak"]["attempts"] == 10
    assert record["heldout"]["variants"]["weak"]["attempts"] == 32
    assert record["screen"]["variants"]["weak"]["passed"] == 4  # s0, s3, s6, s9
    assert record["heldout"]["variants"]["weak"]["passed"] == 10  # 102, 105, ..., 129
    assert record["screen"]["selection"]["method"] == "first"
    pick = record["pick"]
    assert (pick["figure"], pick["variant"], pick["runner_up"]) == ("pass_rate", "good", "weak")
    assert pick["margin"] == pytest.approx(1 - 0.4)
    conf = record["confirmation"]
    assert conf["verdict"] == "confirmed" and conf["confirmed"] and conf["cases"] == 32
    assert conf["value"] == pytest.approx(1 - 10 / 32) and conf["ci"]["low"] > 0
    assert record["disjointness"] == {"disjoint": True, "screen_cases": 10, "heldout_cases": 32, "overlap": []}
    assert record["judge_check"] is None
    assert [g["gate"] for g in record["gates"]] == ["fail-under"] and record["gates"][0]["passed"]
    # Paths are named from the aggregate's folder, bytes by hash.
    refs = {r["stage"]: r for r in record["stages"]}
    assert (out.parent / refs["heldout"]["path"]).resolve() == held.resolve()
    # The tests against reference libraries: statsmodels' t test and scipy's binomial test.
    from scipy.stats import binomtest
    from statsmodels.stats.weightstats import DescrStatsW

    diffs = [0.0 if (100 + i) % 3 == 0 else 1.0 for i in range(32)]
    _, p, _ = DescrStatsW(diffs).ttest_mean(0.0)
    assert conf["tests"]["t_test_p"] == pytest.approx(p, rel=1e-9)
    assert conf["tests"]["sign_test_p"] == pytest.approx(binomtest(22, 22).pvalue, rel=1e-9)
    # The renderings: the screen and the held-out stage in sections of their own.
    md = out.with_suffix(".md").read_text()
    assert "## Screen (picks)" in md and "## Held out (confirms)" in md
    assert md.index("## Screen (picks)") < md.index("## Held out (confirms)")
    assert "CONFIRMED on the held-out cases" in md
    html = out.with_suffix(".html").read_text()
    assert 'data-testid="screen"' in html and 'data-testid="heldout"' in html
    assert "The screen picked good over weak on pass-rate difference" in proc.stdout
    # verify recomputes the aggregate from the stage reports.
    ok = scoreboard(["verify", str(out), "--root", str(tmp_path.parent)], folder)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "aggregate recomputed from its stage reports" in ok.stdout


def test_held_out_gate_fails_with_exit_3_and_default_place_is_beside_the_held_out_report(staged):
    folder, screen, held = staged
    proc = scoreboard(["aggregate", str(screen), str(held), "--fail-under", "0.9"], folder)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    path = folder / written(proc)
    assert path.parent == held.parent and path.name.startswith("aggregate-")
    record = json.loads(path.read_text())
    failed = [g for g in record["gates"] if not g["passed"]]
    assert [g["variant"] for g in failed] == ["weak"] and failed[0]["description"].startswith("held-out: weak")
    assert "gate FAILED: held-out: weak: pass rate 31.2% < 90.0%" in proc.stdout
    assert scoreboard(["verify", str(path)], folder).returncode == 0


def test_tampered_reports_are_caught(staged, tmp_path):
    folder, screen, held = staged
    # A stage report that fails verify is refused, nothing written.
    report = json.loads(held.read_text())
    report["summary"]["variants"]["weak"]["pass_rate"] = 0.9
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(report))
    proc = scoreboard(["aggregate", str(screen), str(bad), "--output", str(tmp_path / "a.json")], folder)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert "fails verify" in proc.stderr and "summary.variants.weak.pass_rate" in proc.stderr
    assert not (tmp_path / "a.json").exists()
    # A stage report changed after the aggregate was made: verify names it by hash.
    copies = tmp_path / "copies"
    copies.mkdir()
    s, h = copies / "screen.json", copies / "held.json"
    s.write_bytes(screen.read_bytes())
    h.write_bytes(held.read_bytes())
    out = copies / "agg.json"
    assert scoreboard(["aggregate", str(s), str(h), "--output", str(out)], folder).returncode == 0
    record = json.loads(out.read_text())
    assert [r["path"] for r in record["stages"]] == ["screen.json", "held.json"]
    edited = json.loads(out.read_text())
    edited["pick"]["variant"] = "weak"
    (copies / "edited-agg.json").write_text(json.dumps(edited))
    proc = scoreboard(["verify", str(copies / "edited-agg.json")], folder)
    assert proc.returncode == 1 and "pick.variant" in proc.stdout
    h.write_bytes(held.read_bytes() + b" ")
    proc = scoreboard(["verify", str(out)], folder)
    assert proc.returncode == 1 and "stages[1].sha256" in proc.stdout and "changed since" in proc.stdout
    # A stage path that leaves the aggregate's folder is refused unless --root widens it.
    moved = tmp_path / "moved" / "agg.json"
    moved.parent.mkdir()
    moved.write_text(json.dumps({**record, "stages": [{**r, "path": "../copies/" + r["path"]}
                                                      for r in record["stages"]]}))
    proc = scoreboard(["verify", str(moved)], folder)
    assert proc.returncode == 1 and "climbs out of the root" in proc.stderr and "stages[0].path" in proc.stderr


@pytest.mark.slow
def test_reports_of_other_suites_are_refused(staged, tmp_path):
    folder, screen, _ = staged
    other = tmp_path / "other"
    make_suite(other, variants={"good": {"subject": "python:subjects:good"},
                                "weaker": {"subject": "python:subjects:weak"}})
    held = stage(other, "heldout")
    proc = scoreboard(["aggregate", str(screen), str(held), "--output", str(tmp_path / "a.json")], folder)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert "come from different suites: their variants differ" in proc.stderr
    assert "plan.lineage.variants" in proc.stderr
    cases = tmp_path / "cases"
    make_suite(cases, heldout=31)
    proc = scoreboard(["aggregate", str(screen), str(stage(cases, "heldout")), "--output", str(tmp_path / "b.json")],
                      folder)
    assert proc.returncode == 1 and "their case sets (any split) differ" in proc.stderr
    # A cheaper screen (fewer runs) is still the same suite.
    same = tmp_path / "same"
    make_suite(same)
    proc = scoreboard(["aggregate", str(stage(same, "screen", "--runs", "2")), str(stage(same, "heldout")),
                       "--output", str(tmp_path / "c.json")], folder)
    assert proc.returncode == 0, proc.stderr
    # Two screens, no held-out report; a report that is not a stage's.
    proc = scoreboard(["aggregate", str(screen), str(screen)], folder)
    assert proc.returncode == 1 and "two screen reports" in proc.stderr
    plain = scoreboard(["run", "suite.yaml", "--no-progress", "--output", str(tmp_path / "whole.json")], same)
    assert plain.returncode == 0, plain.stderr
    proc = scoreboard(["aggregate", str(screen), str(tmp_path / "whole.json")], folder)
    assert proc.returncode == 1 and "plan.stage" in proc.stderr and "is not a stage report" in proc.stderr


def test_overlapping_cases_are_named(tmp_path):
    dup = [{"id": "h-dup", "input": "q-3", "expected": "Q-3", "split": "heldout"}]
    make_suite(tmp_path, screen=6, heldout=4, extra=dup)
    proc = scoreboard(["aggregate", str(stage(tmp_path, "screen")), str(stage(tmp_path, "heldout")),
                       "--output", "agg.json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "agg.json").read_text())
    d = record["disjointness"]
    assert not d["disjoint"] and [(o["heldout"], o["screen"]) for o in d["overlap"]] == [("h-dup", "s3")]
    assert record["confirmation"]["verdict"] == "not-independent" and not record["confirmation"]["confirmed"]
    assert "OVERLAP: 1 of 5 held-out cases were screened (same input hash): h-dup (= screened s3)" in proc.stdout


def test_hostile_files_are_refused(staged, tmp_path):
    folder, screen, _ = staged
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    proc = scoreboard(["aggregate", str(screen), str(fifo)], folder)
    assert proc.returncode == 1 and "is a FIFO, not a regular file" in proc.stderr
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as handle:
        handle.truncate(300 * 1024 * 1024)  # sparse: nothing is written, the size is what is checked
    proc = scoreboard(["aggregate", str(screen), str(huge)], folder)
    assert proc.returncode == 1 and "over the limit" in proc.stderr
    proc = scoreboard(["aggregate", str(screen), str(tmp_path / "missing.json")], folder)
    assert proc.returncode == 1 and "report not found" in proc.stderr


def test_pick_and_verdict_figures():
    """The pure figures: a pick among three variants, a dQ recorded the other way round, the
    paired t test against statsmodels, and each verdict."""
    from statsmodels.stats.weightstats import DescrStatsW

    from scoreboard.stats import aggregate as agg

    summary = {"variants": {"a": {"pass_rate": 0.5}, "b": {"pass_rate": 0.8}, "c": {"pass_rate": 0.7}}}
    assert agg.pick(summary, ["a", "b", "c"], "pass_rate")["variant"] == "b"
    assert agg.pick(summary, ["a", "b", "c"], "pass_rate")["runner_up"] == "c"
    tied = {"variants": {"a": {"pass_rate": 0.8}, "b": {"pass_rate": 0.8}}}
    assert agg.pick(tied, ["a", "b"], "pass_rate")["variant"] is None
    dq = {"judges": {"dq": [{"a": "x", "b": "y", "dq": -1.5, "ci": {"low": -2.0, "high": -1.0}}]}}
    assert agg.primary_figure(dq) == "dq" and agg.primary_figure(summary) == "pass_rate"
    assert agg.pick(dq, ["x", "y"], "dq")["variant"] == "y"
    flipped = agg.dq_of(dq, "y", "x")
    assert flipped["dq"] == 1.5 and (flipped["ci"]["low"], flipped["ci"]["high"]) == (1.0, 2.0)
    diffs = [0.5, 1.0, -0.25, 0.75, 1.25, 0.0]
    _, p, _ = DescrStatsW(diffs).ttest_mean(0.0)
    tests = agg.paired_tests(diffs)
    assert tests["t_test_p"] == pytest.approx(p, rel=1e-9) and (tests["positive"], tests["negative"]) == (4, 1)
    assert agg.paired_tests([1.0])["t_test_why"] == "fewer than two cases"
    assert agg.verdict(0.5, {"low": 0.1, "high": 0.9}, 0) == "confirmed"
    assert agg.verdict(0.5, {"low": -0.1, "high": 0.9}, 0) == "not-confirmed"
    assert agg.verdict(-0.5, {"low": -0.9, "high": -0.1}, 0) == "reversed"
    assert agg.verdict(0.5, {"low": 0.1, "high": 0.9}, 2) == "not-independent"
    assert agg.verdict(None, None, 0) == "not-comparable"
    seen = agg.disjoint([{"id": "a", "input_hash": "h1"}], [{"id": "b", "input_hash": "h1"}, {"id": "c", "input_hash": "h2"}])
    assert seen["overlap"] == [{"heldout": "b", "screen": "a", "input_hash": "h1"}] and not seen["disjoint"]


def test_held_out_test_p_values_read_as_every_other_p_value():
    # an aggregate printed "paired t p=<0.0001"; every other rendering says "p<0.0001"
    from scoreboard.stats.aggregate import tests_text

    text = tests_text({"t_test_p": 1e-6, "t_test_why": None, "sign_test_p": 0.25, "mcnemar_p": 2e-5,
                       "positive": 3, "cases": 3, "negative": 0})
    assert text.startswith("paired t p<0.0001; sign test p=0.2500") and "McNemar p<0.0001" in text
    assert "=<" not in text
