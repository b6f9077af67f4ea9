"""Probe 24V: `import comparisons` and `import reviews` used as a team would: reviews exported
from the store, edited in a spreadsheet (CSV: quoting, BOM, CRLF, formulas) and imported again;
notes the viewer would refuse; parse refusals named by their line; the judge-human agreement
checked against sklearn."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.engine.reruns import import_comparisons, import_reviews
from scoreboard.errors import ConfigError
from tests.test_reviews import HUMAN_PASS, make_report

import scoreboard as _scoreboard_package

#: where the scoreboard under test lives (the subprocesses run the same one)
SRC = Path(_scoreboard_package.__file__).resolve().parents[1]


def scoreboard(args: list[str], cwd: Path, *, store: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    if store:
        env.pop("SCOREBOARD_STORE", None)
    else:
        env["SCOREBOARD_STORE"] = "none"
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=180)


@pytest.fixture(autouse=True)
def own_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")


@pytest.fixture(scope="module")
def judged_report(tmp_path_factory) -> Path:
    return make_report(tmp_path_factory.mktemp("judged24v"), judged=True)


@pytest.fixture(scope="module")
def plain_report(tmp_path_factory) -> Path:
    return make_report(tmp_path_factory.mktemp("plain24v"), judged=False)


def load(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def review(report: dict, i: int, **over) -> dict:
    (a,) = [a for a in report["attempts"] if a["case_id"] == f"c{i:02d}"]
    out = {"case_id": a["case_id"], "input_hash": a["input_hash"], "output_hash": a["output_hash"],
           "reviewer_id": "ana", "reviewer_kind": "human", "rubric_version": "v1",
           "ratings": {"correctness": 3, "usefulness": None, "coherence": None, "creativity": None},
           "verdict": i in HUMAN_PASS, "notes": "checked"}
    out.update(over)
    return out


# ------------------------------------------------------------------ errors named by their line


def test_a_parse_refusal_inside_an_entry_names_its_line(plain_report, tmp_path):
    report = load(plain_report)
    entries = [{"case_id": c["id"], "input_hash": c["input_hash"], "provider": "other", "model": "m",
                "model_version": "1", "settings": {}, "output": "x", "generated_at": "2026-01-01T00:00:00Z"}
               for c in report["plan"]["cases"][:3]]
    entries[2]["output"] = {"json": 1e400}  # written as Infinity: JSON has none
    text = json.dumps({"entries": entries}, indent=2)
    (tmp_path / "nan.json").write_text(text, encoding="utf-8")
    line = text.splitlines().index('        "json": Infinity') + 1
    with pytest.raises(ConfigError) as err:
        import_comparisons(str(plain_report), str(tmp_path / "nan.json"), str(tmp_path / "o.json"))
    assert str(err.value).startswith(f"{tmp_path / 'nan.json'}:{line}, case 'c02', field 'entries[2].output.json'")
    # a key given twice in a review is named by its entry's line too
    rv = json.dumps({"entries": [review(report, 0), review(report, 1)]}, indent=2)
    rv = rv.replace('"reviewer_id": "ana",', '"reviewer_id": "ana", "reviewer_id": "bob",', 1)
    (tmp_path / "dup.json").write_text(rv, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        import_reviews(str(plain_report), str(tmp_path / "dup.json"), str(tmp_path / "o.json"))
    assert str(err.value).startswith(f"{tmp_path / 'dup.json'}:3, case 'c00', field 'entries[0]': duplicate key")
    assert not (tmp_path / "o.json").exists()


# ------------------------------------------------------------------------------ notes


@pytest.mark.parametrize("notes, said", [
    ("   \n ", "must not be blank"),
    ("ok\x00then", "U+0000"),
    ("x" * 10_001, "over the 10,000 a note may have"),
])
def test_notes_the_viewer_would_refuse_are_refused(plain_report, tmp_path, notes, said):
    report = load(plain_report)
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"entries": [review(report, 0), review(report, 1, notes=notes)]}, indent=1),
                    encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        import_reviews(str(plain_report), str(path), str(tmp_path / "o.json"))
    assert "case 'c01', field 'entries[1].notes'" in str(err.value) and said in str(err.value)
    assert f"{path}:" in str(err.value) and not (tmp_path / "o.json").exists()
    # a note of 10,000 characters, breaking lines, is kept exactly
    kept = "a\r\nb\t" + "y" * 9_995
    path.write_text(json.dumps({"entries": [review(report, 1, notes=kept)]}), encoding="utf-8")
    new, _ = import_reviews(str(plain_report), str(path), str(tmp_path / "o.json"))
    assert new["reviews"]["human"][0]["notes"] == kept


# ------------------------------------------------------------------- spreadsheet round trip

TRICKY = ["right total, \"wrong\" currency", "line one\r\nline two\nthree", "=HYPERLINK(\"http://x\",\"y\")",
          "+1 looks right", "-", "@SUM(A1)", "'=already guarded", "'plain apostrophe", "\tleading tab",
          "café ✓ 日本"]


def test_reviews_round_trip_through_a_spreadsheet(judged_report, tmp_path):
    report = load(judged_report)
    entries = [review(report, i, notes=TRICKY[i % len(TRICKY)]) for i in range(30)]
    entries[3]["ratings"] = {"correctness": None, "usefulness": 5, "coherence": 1, "creativity": None}
    entries[4]["verdict"] = None
    (tmp_path / "reviews.json").write_text(json.dumps({"entries": entries}), encoding="utf-8")
    first = scoreboard(["import", "reviews", str(judged_report), "reviews.json", "--output", "ana.json"],
                       tmp_path, store=True)
    assert first.returncode == 0, first.stderr
    out = scoreboard(["store", "reviews", "--output", "sheet.csv"], tmp_path, store=True)
    assert out.returncode == 0, out.stderr
    raw = (tmp_path / "sheet.csv").read_bytes()
    # as Excel reads it: a BOM, CRLF rows, no cell that starts a formula
    assert raw.startswith(b"\xef\xbb\xbfcase_id,input_hash,output_hash,") and b"\r\n" in raw
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    assert len(rows) == 31 and all(not c.startswith(("=", "+", "-", "@", "\t")) for r in rows for c in r)
    # the team edits the sheet: Bob's verdicts added as rows, booleans uppercased as Excel writes them
    header = rows[0]
    bob = []
    for row in rows[1:11]:
        cells = dict(zip(header, row))
        cells.update(reviewer_id="bob", verdict=str(cells["case_id"] not in ("c00", "c01")).upper(),
                     notes="=1+1")
        bob.append([cells[h] for h in header])
    buffer = io.StringIO(newline="")
    csv.writer(buffer, lineterminator="\r\n").writerows(rows + bob)
    (tmp_path / "edited.csv").write_bytes(("\ufeff" + buffer.getvalue()).encode("utf-8"))
    back = scoreboard(["import", "reviews", str(judged_report), "edited.csv", "--output", "both.json"], tmp_path)
    assert back.returncode == 0, back.stderr
    assert "imported 40 reviews from edited.csv (40 human, 0 model)" in back.stdout
    both = load(tmp_path / "both.json")
    ana = [e for e in both["reviews"]["human"] if e["reviewer_id"] == "ana"]
    assert ana == entries  # every cell exactly as exported: quotes, line ends, formulas, nulls
    assert [e["verdict"] for e in both["reviews"]["human"] if e["reviewer_id"] == "bob"] == [False] * 2 + [True] * 8
    assert {e["notes"] for e in both["reviews"]["human"] if e["reviewer_id"] == "bob"} == {"=1+1"}
    checked = scoreboard(["verify", "both.json"], tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_bad_cell_is_named_by_line_row_and_column(plain_report, tmp_path):
    report = load(plain_report)
    head = "case_id,input_hash,output_hash,reviewer_id,reviewer_kind,rubric_version,correctness,verdict,notes\r\n"

    def row(i, rating="4", verdict="true", notes="fine"):
        e = review(report, i)
        return (f"{e['case_id']},{e['input_hash']},{e['output_hash']},ana,human,v1,{rating},{verdict},"
                f"{notes}\r\n")

    cases = {
        "rating": (row(1, rating="six"), "row 3:", "field 'correctness'"),
        "verdict": (row(1, verdict="maybe"), "row 3:", "field 'verdict'"),
        "hash": (row(1).replace(review(report, 1)["output_hash"], "ab" * 32), "row 3:", "field 'output_hash'"),
    }
    for name, (bad, said, field) in cases.items():
        # the first row's note spans two lines: the bad row starts on line 4
        path = tmp_path / f"{name}.csv"
        path.write_bytes(("\ufeff" + head + row(0, notes='"two\r\nlines"') + bad).encode("utf-8"))
        with pytest.raises(ConfigError) as err:
            import_reviews(str(plain_report), str(path), str(tmp_path / "o.json"))
        message = str(err.value)
        assert message.startswith(f"{path}:4, case 'c01', {field}: {said}"), message
        assert "\n" not in message
    path = tmp_path / "extra.csv"
    path.write_text(head.replace("notes", "notes,score") + row(0), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"extra\.csv:1, field 'score': unknown column 'score'"):
        import_reviews(str(plain_report), str(path), str(tmp_path / "o.json"))
    path.write_text(head.replace(",notes", "") + row(0).rsplit(",", 1)[0] + "\r\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"extra\.csv:1, field 'notes': missing column 'notes'"):
        import_reviews(str(plain_report), str(path), str(tmp_path / "o.json"))
    assert not (tmp_path / "o.json").exists()


# ------------------------------------------------------------------------ agreement figures


def test_judge_agreement_matches_sklearn(judged_report, tmp_path):
    from sklearn.metrics import cohen_kappa_score

    report = load(judged_report)
    entries = [review(report, i) for i in range(30)]
    # a second reviewer disagreeing on c00 splits it: left out of the pairs
    entries.append(review(report, 0, reviewer_id="bob", verdict=not entries[0]["verdict"]))
    (tmp_path / "r.json").write_text(json.dumps(entries), encoding="utf-8")
    new, _ = import_reviews(str(judged_report), str(tmp_path / "r.json"), str(tmp_path / "o.json"))
    judge = {a["case_id"]: a["grades"][0]["passed"] for a in new["attempts"]}
    human = {e["case_id"]: e["verdict"] for e in entries[1:30]}
    ids = sorted(human)
    agreement = new["summary"]["judge_agreement"]
    assert agreement["n"] == agreement["cases"] == 29 and agreement["excluded"]["human_split"] == 1
    expected = cohen_kappa_score([judge[c] for c in ids], [human[c] for c in ids])
    assert agreement["kappa"] == pytest.approx(expected, abs=1e-12)
    tp = sum(judge[c] and human[c] for c in ids)
    fn = sum(not judge[c] and human[c] for c in ids)
    tn = sum(not judge[c] and not human[c] for c in ids)
    fp = sum(judge[c] and not human[c] for c in ids)
    se, sp = tp / (tp + fn), tn / (tn + fp)
    p = sum(judge.values()) / len(judge)
    assert agreement["true_positive_rate"] == pytest.approx(se)
    assert agreement["false_positive_rate"] == pytest.approx(1 - sp)
    assert agreement["corrected_pass_rate"]["value"] == pytest.approx((p + sp - 1) / (se + sp - 1))
