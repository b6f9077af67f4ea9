"""`scoreboard import reviews`: reviews bound to a report's outputs by hashes, human and model
kept apart, and the judge-vs-human agreement (kappa, TPR/FPR, Rogan-Gladen correction)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.engine.reruns import import_reviews
from scoreboard.errors import ConfigError
from scoreboard.stats.agreement import judge_agreement, kappa, rogan_gladen
from scoreboard.stats.summary import summarize
from scoreboard.suite.load import load_suite
from tests.servers.fake_provider import FakeProvider

N_CASES = 36
#: judge passes cases 0-17 and 30-33; human reviews cover cases 0-29:
#: human pass 0-13 (TP 14), 14-17 fail (FP 4), 18-20 pass (FN 3), 21-29 fail (TN 9)
JUDGE_PASS = set(range(18)) | set(range(30, 34))
HUMAN_PASS = set(range(14)) | set(range(18, 21))
REVIEWED = range(30)


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)


def cid(i: int) -> str:
    return f"c{i:02d}"


def make_report(folder: Path, *, judged: bool) -> Path:
    """Run a small suite (mock subject; a FakeProvider judge when `judged`) and return its JSON."""
    cases = [{"id": cid(i), "input": f"Task {i}", "expected": f"answer {i}"} for i in range(N_CASES)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    outputs = {cid(i): f"{'GOOD' if i in JUDGE_PASS else 'POOR'} answer {i}" for i in range(N_CASES)}
    settings = {"name": "reviewed", "cases": "cases.jsonl", "subject": {"type": "mock", "outputs": outputs},
                "output_dir": str(folder / "out"), "formats": ["json"], "seed": 7}
    if not judged:
        settings["graders"] = [{"contains": "answer"}]
        (folder / "suite.json").write_text(json.dumps(settings), encoding="utf-8")
        return run(load_suite(folder / "suite.json"), RunOptions(progress=False)).paths["json"]
    with FakeProvider() as judge:
        def reply(req):
            prompt = req["messages"][-1]["content"]
            actual = prompt.split("ACTUAL:")[1]
            return json.dumps({"verdict": "GOOD" in actual, "explanation": "read it"})

        judge.set_default("chat", {"reply": reply})
        settings["judge"] = {"type": "openai", "base_url": judge.base_url + "/v1", "model": "judge"}
        settings["graders"] = [{"llm-judge": {"rubric": "Is it good?"}}]
        (folder / "suite.json").write_text(json.dumps(settings), encoding="utf-8")
        return run(load_suite(folder / "suite.json"), RunOptions(progress=False)).paths["json"]


@pytest.fixture(autouse=True)
def own_project(tmp_path, monkeypatch):
    """Each test is its own project: `import reviews` records its new report in the history store
    of the working directory, and a run carries the reviews that store holds of its outputs, so
    tests sharing one store would see each other's reviews. Nor does a test keep one: each
    report here holds the reviews it was given (tests/store/test_imported_reviews.py covers the
    store's part)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")


@pytest.fixture(scope="module")
def judged_report(tmp_path_factory) -> Path:
    return make_report(tmp_path_factory.mktemp("judged"), judged=True)


@pytest.fixture(scope="module")
def plain_report(tmp_path_factory) -> Path:
    return make_report(tmp_path_factory.mktemp("plain"), judged=False)


def load(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def entry(report: dict, i: int, **over) -> dict:
    (a,) = [a for a in report["attempts"] if a["case_id"] == cid(i)]
    out = {"case_id": a["case_id"], "input_hash": a["input_hash"], "output_hash": a["output_hash"],
           "reviewer_id": "ann", "reviewer_kind": "human", "rubric_version": "quality-v1",
           "ratings": {"correctness": 4, "coherence": None}, "verdict": i in HUMAN_PASS, "notes": "checked"}
    out.update(over)
    return out


def human_reviews(report: dict, cases=REVIEWED) -> list[dict]:
    return [entry(report, i) for i in cases]


def write(path: Path, doc) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------- agreement


def test_judge_agreement_against_a_hand_computation(judged_report, tmp_path):
    report = load(judged_report)
    entries = human_reviews(report)
    # A model's reviews of the same outputs are kept apart and never taken as the truth.
    entries += [entry(report, i, reviewer_id="gpt-rater", reviewer_kind="model", verdict=True) for i in range(10)]
    # A second human agreeing with the first changes no majority; one without a verdict counts apart.
    entries += [entry(report, 0, reviewer_id="bob"), entry(report, 1, reviewer_id="cy", verdict=None)]
    reviews = write(tmp_path / "reviews.json", {"version": "quality-v1", "entries": entries})
    new, paths = import_reviews(str(judged_report), str(reviews), str(tmp_path / "new.json"))
    assert paths["json"] == tmp_path / "new.json" and load(paths["json"]) == new
    assert stat.S_IMODE(os.stat(paths["json"]).st_mode) == 0o600
    assert len(new["reviews"]["human"]) == 32 and len(new["reviews"]["model"]) == 10
    assert all(e["reviewer_kind"] == "human" for e in new["reviews"]["human"])

    agreement = new["summary"]["judge_agreement"]
    tp, fp, fn, tn = 14, 4, 3, 9
    assert agreement["n"] == 30 and agreement["graders"] == ["llm-judge"]
    assert agreement["confusion"] == {"judge_pass": {"human_pass": tp, "human_fail": fp},
                                      "judge_fail": {"human_pass": fn, "human_fail": tn}}
    from statsmodels.stats.inter_rater import cohens_kappa

    assert agreement["kappa"] == pytest.approx(cohens_kappa([[tp, fp], [fn, tn]]).kappa)
    se, sp = Fraction(tp, tp + fn), Fraction(tn, tn + fp)
    assert agreement["true_positive_rate"] == pytest.approx(float(se))
    assert agreement["false_positive_rate"] == pytest.approx(float(1 - sp))
    p = Fraction(len(JUDGE_PASS), N_CASES)  # over every judged attempt, reviewed or not
    assert agreement["judge_pass_rate"] == {"value": pytest.approx(float(p)), "passed": 22, "judged": 36,
                                            "unit": "attempt"}
    corrected = (p + sp - 1) / (se + sp - 1)
    assert agreement["corrected_pass_rate"]["value"] == pytest.approx(float(corrected))
    ci = agreement["corrected_pass_rate"]["ci"]
    assert 0 <= ci["low"] <= float(corrected) <= ci["high"] <= 1
    assert ci["level"] == 0.95 and ci["method"] == "case-bootstrap"
    assert "bootstrap" in agreement["method"] and "Rogan-Gladen" in agreement["formula"]
    assert agreement["by_variant"]["mock"]["corrected_pass_rate"]["value"] == pytest.approx(float(corrected))
    assert agreement["cases"] == 30 and agreement["small_sample"] is False and "note" not in agreement

    counts = new["summary"]["reviews"]
    assert counts["human"]["entries"] == 32 and counts["human"]["outputs"] == 30
    assert counts["human"]["reviewers"] == 3 and counts["human"]["with_verdict"] == 31
    assert counts["model"]["entries"] == 10 and counts["model"]["reviewers"] == 1
    assert counts["human"]["ratings"]["coherence"] == {"rated": 0, "unassessed": 32}
    # Every entry carries the four named dimensions; one left out is not assessed (null).
    assert set(counts["human"]["ratings"]) == {"correctness", "usefulness", "coherence", "creativity"}
    assert counts["human"]["ratings"]["creativity"] == {"rated": 0, "unassessed": 32}
    # No aggregate score is made from the reviews.
    for kind in ("human", "model"):
        assert not {"score", "mean", "pass_rate"} & set(counts[kind])
    # The summary is recomputable from the report alone, and the rest of it did not change.
    assert summarize(new["plan"], new["attempts"], new.get("pairwise"), reviews=new["reviews"]) == new["summary"]
    old = report["summary"]
    assert new["summary"]["variants"] == old["variants"] and new["attempts"] == report["attempts"]
    info = new["run"]["reviews_imported"][0]
    assert (info["entries"], info["human"], info["model"], info["requests"]) == (42, 32, 10, 0)


def test_fewer_than_30_reviewed_outputs_are_flagged(judged_report, tmp_path):
    report = load(judged_report)
    reviews = write(tmp_path / "r.json", human_reviews(report, range(12)))  # a bare list works too
    new, _ = import_reviews(str(judged_report), str(reviews), str(tmp_path / "new.json"))
    agreement = new["summary"]["judge_agreement"]
    assert agreement["n"] == 12 and agreement["cases"] == 12 and agreement["small_sample"] is True
    assert agreement["note"] == "fewer than 30 reviewed cases: treat as indicative"


def test_rates_against_fixed_data():
    assert kappa(20, 5, 10, 15) == pytest.approx(0.4)  # po 0.7, pe 0.5
    assert kappa(5, 0, 0, 0) is None  # chance agreement is total: undefined, not 1
    # p 0.5, Se 0.9, Sp 0.8 -> (0.5 + 0.8 - 1) / (0.9 + 0.8 - 1) = 0.3 / 0.7
    assert rogan_gladen(0.5, 0.9, 0.8) == pytest.approx(3 / 7)
    assert rogan_gladen(0.05, 0.9, 0.8) == 0.0 and rogan_gladen(0.99, 0.9, 0.95) == 1.0  # clipped
    assert rogan_gladen(0.5, 0.4, 0.5) is None  # no better than chance


def test_judge_agreement_is_absent_without_a_judge_or_human_verdicts(judged_report, plain_report):
    report = load(judged_report)
    plan, attempts = report["plan"], report["attempts"]
    model_only = {"human": [], "model": [entry(report, i, reviewer_kind="model") for i in range(5)]}
    assert judge_agreement(plan, attempts, model_only) is None
    no_verdict = {"human": [entry(report, i, verdict=None) for i in range(5)], "model": []}
    assert judge_agreement(plan, attempts, no_verdict) is None
    plain = load(plain_report)
    assert judge_agreement(plain["plan"], plain["attempts"], {"human": human_reviews(plain), "model": []}) is None


def test_human_reviews_of_every_output_make_semantic_quality_measured(plain_report, tmp_path):
    report = load(plain_report)
    what = [n["what"] for n in report["summary"]["not_measured"]]
    assert "semantic quality" in what
    model = write(tmp_path / "m.json", [entry(report, i, reviewer_kind="model") for i in range(3)])
    new, _ = import_reviews(str(plain_report), str(model), str(tmp_path / "m-new.json"))
    assert "semantic quality" in [n["what"] for n in new["summary"]["not_measured"]]  # a model's ratings do not
    assert "judge_agreement" not in new["summary"] and new["summary"]["reviews"]["model"]["entries"] == 3
    human = write(tmp_path / "h.json", human_reviews(report, range(3)))
    new, _ = import_reviews(str(plain_report), str(human), str(tmp_path / "h-new.json"))
    (item,) = [n for n in new["summary"]["not_measured"] if n["what"] == "semantic quality"]
    assert item["why"].startswith(f"human reviews cover 3 of {N_CASES} outputs (model reviews 0)")
    assert new["summary"]["reviews"]["outputs_in_report"] == N_CASES
    # Reviews of every output, and only then, make it measured.
    rest = write(tmp_path / "h2.json", human_reviews(report, range(3, N_CASES)))
    whole, _ = import_reviews(str(tmp_path / "h-new.json"), str(rest), str(tmp_path / "h-all.json"))
    assert "semantic quality" not in [n["what"] for n in whole["summary"]["not_measured"]]


def test_reviews_can_be_added_to_a_report_that_holds_reviews(judged_report, tmp_path):
    report = load(judged_report)
    first = write(tmp_path / "a.json", human_reviews(report, range(5)))
    import_reviews(str(judged_report), str(first), str(tmp_path / "one.json"))
    again = write(tmp_path / "b.json", human_reviews(report, range(4, 8)))
    with pytest.raises(ConfigError, match=r"duplicate of an entry already in the report") as info:
        import_reviews(str(tmp_path / "one.json"), str(again), str(tmp_path / "two.json"))
    assert info.value.field == "entries[0]" and info.value.case_id == cid(4)
    more = write(tmp_path / "c.json", human_reviews(report, range(5, 8)))
    new, _ = import_reviews(str(tmp_path / "one.json"), str(more), str(tmp_path / "two.json"))
    assert len(new["reviews"]["human"]) == 8 and len(new["run"]["reviews_imported"]) == 2


# ---------------------------------------------------------------------------------- validation


def _bad(report: dict):
    good = entry(report, 0)
    yield "unknown field", [{**good, "score": 3}], r"entries\[0\]\.score", "unknown field"
    yield "case id", [entry(report, 1), {**good, "case_id": "nope"}], r"entries\[1\]\.case_id", "not in the report"
    yield "input hash", [{**good, "input_hash": "0" * 64}], r"entries\[0\]\.input_hash", "input hash"
    yield "output hash", [{**good, "output_hash": entry(report, 1)["output_hash"]}], r"entries\[0\]\.output_hash", \
        "matches no output of this case"
    yield "duplicate", [good, {**good, "notes": "again"}], r"'entries\[1\]'", "duplicate of entries\\[0\\]"
    yield "kind", [{**good, "reviewer_kind": "robot"}], r"entries\[0\]\.reviewer_kind", "human"
    yield "rating", [{**good, "ratings": {"correctness": 3.5}}], r"entries\[0\]\.ratings\.correctness", "whole number"
    yield "bool rating", [{**good, "ratings": {"correctness": True}}], r"entries\[0\]\.ratings\.correctness", ""
    yield "rating above 5", [{**good, "ratings": {"usefulness": 6}}], r"entries\[0\]\.ratings\.usefulness", "5"
    yield "rating below 1", [{**good, "ratings": {"coherence": 0}}], r"entries\[0\]\.ratings\.coherence", "1"
    yield "unnamed dimension", [{**good, "ratings": {"clarity": 3}}], r"entries\[0\]\.ratings\.clarity", \
        "unknown field"
    yield "same kind twice", [good, {**good, "notes": "again", "verdict": False}], r"'entries\[1\]'", \
        "reviewer kind"
    yield "verdict", [{**good, "verdict": "yes"}], r"entries\[0\]\.verdict", ""
    yield "notes", [{k: v for k, v in good.items() if k != "notes"}], r"entries\[0\]\.notes", "required"
    yield "top level", {"entries": [good], "extra": 1}, r"'extra'", "unknown field"


def test_invalid_entries_are_one_line_errors_and_nothing_is_written(judged_report, tmp_path):
    report = load(judged_report)
    for name, doc, field, message in _bad(report):
        path = write(tmp_path / f"{name}.json", doc)
        out = tmp_path / f"{name}-new.json"
        with pytest.raises(ConfigError) as info:
            import_reviews(str(judged_report), str(path), str(out))
        text = str(info.value)
        assert str(path) in text and "\n" not in text, name
        import re

        assert re.search(field, text), (name, text)
        assert re.search(message, text), (name, text)
        if isinstance(doc, list) and name not in ("case id",):
            assert f"case {cid(0)!r}" in text, (name, text)
        assert not out.exists()


def test_cli_import_reviews(judged_report, tmp_path):
    report = load(judged_report)
    reviews = write(tmp_path / "reviews.json", {"entries": human_reviews(report, range(8))})
    done = scoreboard(["import", "reviews", str(judged_report), str(reviews), "--output", "new.json",
                       "--format", "md"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "imported 8 reviews" in done.stdout and "(8 human, 0 model)" in done.stdout
    assert "treat as indicative" in done.stdout and "kappa" in done.stdout
    new = load(tmp_path / "new.json")
    assert new["summary"]["judge_agreement"]["n"] == 8 and (tmp_path / "new.md").exists()
    # The output is created exclusively; an invalid file writes nothing.
    done = scoreboard(["import", "reviews", str(judged_report), str(reviews), "--output", "new.json"], tmp_path)
    assert done.returncode == 1 and "overwrite" in done.stderr
    bad = write(tmp_path / "bad.json", [{**entry(report, 0), "case_id": "ghost"}])
    done = scoreboard(["import", "reviews", str(judged_report), str(bad), "--output", "bad-new.json"], tmp_path)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "bad.json" in line and "entries[0].case_id" in line and "'ghost'" in line
    assert not (tmp_path / "bad-new.json").exists()
    done = scoreboard(["import", "reviews", str(judged_report), str(reviews), "--output", "j.json", "--json"],
                      tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["reviews"]["human"]


def test_one_label_may_review_once_as_a_person_and_once_as_a_model(judged_report, tmp_path):
    """The same reviewer label as human and as model: two separate records, counted apart."""
    report = load(judged_report)
    both = [entry(report, 0), entry(report, 0, reviewer_kind="model", verdict=False,
                                    ratings={"correctness": 2, "usefulness": 5, "coherence": 1, "creativity": None})]
    path = write(tmp_path / "both.json", both)
    new, _ = import_reviews(str(judged_report), str(path), str(tmp_path / "both-new.json"))
    assert [e["reviewer_id"] for e in new["reviews"]["human"]] == ["ann"]
    assert [e["reviewer_id"] for e in new["reviews"]["model"]] == ["ann"]
    assert new["reviews"]["model"][0]["ratings"] == {"correctness": 2, "usefulness": 5, "coherence": 1,
                                                     "creativity": None}
    counts = new["summary"]["reviews"]
    assert counts["human"]["entries"] == counts["model"]["entries"] == 1


def test_a_review_may_bind_by_the_output_text_hash(plain_report, tmp_path):
    """An output's text hash (SHA-256 of the canonical JSON of its text) binds a review to it,
    as the whole-output hash does; the entry is kept bound to the whole output's hash."""
    from scoreboard.hashing import sha256_json

    report = load(plain_report)
    (a,) = [a for a in report["attempts"] if a["case_id"] == cid(2)]
    assert a["output_text_hash"] == sha256_json(a["output"]["text"]) != a["output_hash"]
    path = write(tmp_path / "t.json", [entry(report, 2, output_hash=a["output_text_hash"])])
    new, _ = import_reviews(str(plain_report), str(path), str(tmp_path / "t-new.json"))
    assert new["reviews"]["human"][0]["output_hash"] == a["output_hash"]
    assert new["summary"]["reviews"]["human"]["outputs"] == 1


def test_reviews_file_bounds(plain_report, tmp_path):
    from scoreboard.judges.reviews import MAX_REVIEWS, read_reviews

    report = load(plain_report)
    assert MAX_REVIEWS == 500
    many = write(tmp_path / "many.json", human_reviews(report, range(6)))
    with pytest.raises(ConfigError, match=r"6 entries, more than the 5 allowed \(--max-entries\)"):
        read_reviews(str(many), report, max_entries=5)
    assert len(read_reviews(str(many), report, max_entries=6)[1]) == 6
    done = scoreboard(["import", "reviews", str(plain_report), str(many), "--output", "x.json",
                       "--max-entries", "5"], tmp_path)
    assert done.returncode == 1 and "--max-entries" in done.stderr and not (tmp_path / "x.json").exists()
