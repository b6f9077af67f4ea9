"""Every command that writes a report goes through the one pipeline, and the reports of those
fed by attempts that already exist (score, rescore, import comparisons, import reviews) pass
`verify`, with unknown measurements kept unknown: nothing the harness times itself becomes a
subject's latency."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from scoreboard.record.io import load_report
from scoreboard.record.verify import verify_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agent_exports"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)


def only_report(folder: Path) -> dict:
    (path,) = [p for p in folder.rglob("*.json") if p.parent.name != p.stem and p.name != "run.json"]
    return load_report(path)


def assert_verifies(report: dict) -> None:
    result = verify_report(report)
    assert result.ok, result.mismatches[:3]


def test_score_of_a_codex_export_keeps_its_unknown_duration_unknown(tmp_path):
    proc = cli("score", "--from", "codex", str(FIXTURES / "codex_plain.jsonl"), "--expect-status", "completed",
               "--output-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode in (0, 3), proc.stderr
    report = only_report(tmp_path / "out")
    (attempt,) = report["attempts"]
    assert attempt["measurements"]["latency_ms"] is None
    assert report["summary"]["variants"]["recorded"]["measurements"]["latency_ms"]["unknown_count"] == 1
    assert_verifies(report)


def write_recorded_suite(folder: Path) -> Path:
    cases = [{"id": f"c{i}", "input": f"q{i}", "expected": f"a{i}"} for i in range(6)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    # Outputs made earlier: some say how long they took, some do not.
    records = [{"case_id": f"c{i}", "output": f"a{i}" if i % 3 else "wrong",
                **({"latency_ms": 12.5} if i % 2 else {})} for i in range(6)]
    (folder / "outputs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    suite = {"name": "carried", "cases": "cases.jsonl", "subject": "recorded:outputs.jsonl",
             "output_dir": "out", "formats": ["json"]}
    (folder / "suite.json").write_text(json.dumps(suite))
    return folder / "suite.json"


def test_a_recorded_subject_never_reports_the_harness_time_as_latency(tmp_path):
    write_recorded_suite(tmp_path)
    proc = cli("run", "suite.json", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr  # two wrong outputs are failures, not errors; no gate is set
    report = only_report(tmp_path / "out")
    latencies = {a["case_id"]: a["measurements"]["latency_ms"] for a in report["attempts"]}
    assert latencies == {f"c{i}": (12.5 if i % 2 else None) for i in range(6)}
    assert_verifies(report)


def test_rescore_and_import_comparisons_verify_and_keep_unknowns(tmp_path):
    write_recorded_suite(tmp_path)
    cli("run", "suite.json", "--no-progress", cwd=tmp_path)
    (source,) = (tmp_path / "out" / "carried").glob("*.json")
    original = load_report(source)

    proc = cli("rescore", str(source), "--output", str(tmp_path / "rescored.json"), cwd=tmp_path)
    assert proc.returncode in (0, 3), proc.stderr
    rescored = load_report(tmp_path / "rescored.json")
    assert [a["measurements"] for a in rescored["attempts"]] == [a["measurements"] for a in original["attempts"]]
    assert [a["output_hash"] for a in rescored["attempts"]] == [a["output_hash"] for a in original["attempts"]]
    assert_verifies(rescored)
    # The rescore has its own attempt log, and it went through the one pipeline (run.json beside it).
    assert (tmp_path / "rescored" / "attempts.jsonl").exists() and (tmp_path / "rescored" / "run.json").exists()

    entries = [{"case_id": c["id"], "input_hash": c["input_hash"], "provider": "elsewhere", "model": "m1",
                "model_version": "2026-01", "settings": {"temperature": 0}, "output": f"a{i}",
                "generated_at": "2026-11-30T10:00:00Z"} for i, c in enumerate(original["plan"]["cases"][:4])]
    (tmp_path / "comparisons.json").write_text(json.dumps({"entries": entries}))
    proc = cli("import", "comparisons", str(source), "comparisons.json", "--output", "imported.json", cwd=tmp_path)
    assert proc.returncode in (0, 2, 3), proc.stderr
    imported = load_report(tmp_path / "imported.json")
    mine = [a for a in imported["attempts"] if a["variant"] == "elsewhere/m1"]
    assert len(mine) == 4  # the cases it did not supply are absent, not failed
    assert all(v is None for a in mine for v in a["measurements"].values())
    assert [a for a in imported["attempts"] if a["variant"] != "elsewhere/m1"] == original["attempts"]
    assert_verifies(imported)
