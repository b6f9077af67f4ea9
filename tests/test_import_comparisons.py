"""`scoreboard import comparisons`: outputs made elsewhere, validated strictly, graded as an extra variant."""

from __future__ import annotations

import copy
import json
import stat
import subprocess
from pathlib import Path

import pytest

from scoreboard.engine.reruns import import_comparisons
from scoreboard.errors import ConfigError
from scoreboard.hashing import sha256_json
from scoreboard.record.verify import verify_report
from tests.cli_inprocess import run_cli

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "invoices" / "suite.yaml"


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd)  # in-process: no test here is about the process


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("import-src")
    done = scoreboard(["run", str(EXAMPLE), "--format", "json", "--output-dir", str(out), "--no-progress"], out)
    assert done.returncode == 0, done.stderr
    (path,) = list((out / "invoices").glob("*.json"))
    return path


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def entries_for(report: dict, n: int = 5, **over) -> list[dict]:
    """Entries answering the first n cases exactly (so every grader passes)."""
    out = []
    for case in report["plan"]["cases"][:n]:
        out.append({"case_id": case["id"], "input_hash": case["input_hash"], "provider": "acme", "model": "m1",
                    "model_version": "2025-01-01", "settings": {"temperature": 0, "top_p": 1.0, "seed": None},
                    "output": json.dumps(case["expected"]), "generated_at": "2025-01-02T03:04:05Z", **over})
    return out


def test_imported_outputs_become_a_graded_imported_variant(source, tmp_path):
    old = load(source)
    entries = entries_for(old, 5)
    entries.append({**entries_for(old, 1)[0], "model_version": "2025-02-01", "settings": {},
                    "output": "  not JSON at all\r\n", "generated_at": "2025-02-01T00:00:00+01:00"})
    comparisons = tmp_path / "c.json"
    comparisons.write_text(json.dumps({"version": "scoreboard.comparisons/v1", "entries": entries}), encoding="utf-8")
    outcome = import_comparisons(str(source), str(comparisons), str(tmp_path / "new.json"))
    new = outcome.report
    assert outcome.exit_code == 0
    variants = {v["name"]: v for v in new["plan"]["variants"]}
    assert list(variants) == ["basic", "careful", "acme/m1", "acme/m1@2025-02-01"]
    imported = variants["acme/m1"]
    assert imported["imported"] is True
    assert (imported["provider"], imported["model"], imported["model_version"]) == ("acme", "m1", "2025-01-01")
    assert imported["settings"] == {"temperature": 0, "top_p": 1.0, "seed": None}
    assert "imported" not in variants["basic"]
    summary = new["summary"]["variants"]
    assert summary["acme/m1"]["attempts"] == 5 and summary["acme/m1"]["pass_rate"] == 1.0
    assert summary["acme/m1@2025-02-01"]["attempts"] == 1 and summary["acme/m1@2025-02-01"]["pass_rate"] == 0.0
    # the report's own attempts are carried over unchanged
    carried = [a for a in new["attempts"] if a["variant"] in ("basic", "careful")]
    assert carried == old["attempts"]
    odd = next(a for a in new["attempts"] if a["variant"] == "acme/m1@2025-02-01")
    assert odd["output"]["text"] == "  not JSON at all\r\n"  # preserved exactly
    assert odd["output_hash"] == sha256_json(odd["output"])
    assert odd["measurements"]["latency_ms"] is None  # nothing was measured here
    assert all(a["run"] == 0 for a in new["attempts"] if a["variant"].startswith("acme/"))
    info = new["run"]["imported"]
    assert info["entries"] == 6 and info["variants"] == ["acme/m1", "acme/m1@2025-02-01"]
    assert info["source_run_id"] == old["run"]["id"] and info["subject_requests"] == 0
    assert "do not authenticate" in info["note"]
    assert verify_report(new).ok
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o600


def test_bare_list_via_cli(source, tmp_path):
    (tmp_path / "c.json").write_text(json.dumps(entries_for(load(source), 3)), encoding="utf-8")
    done = scoreboard(["import", "comparisons", str(source), "c.json", "--output", "new.json"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "acme/m1" in done.stdout and "no request was made" in done.stdout
    assert load(tmp_path / "new.json")["summary"]["variants"]["acme/m1"]["passed"] == 3


def _mutate(kind: str, entries: list[dict]) -> object:
    e = entries
    if kind == "unknown-field":
        e[1]["temperature"] = 0.2
    elif kind == "unknown-case":
        e[1]["case_id"] = "inv-999"
    elif kind == "input-hash":
        e[1]["input_hash"] = "0" * 64
    elif kind == "duplicate":
        e.append({**copy.deepcopy(e[0]), "settings": dict(reversed(list(e[0]["settings"].items())))})
    elif kind == "generated-at":
        e[1]["generated_at"] = "yesterday"
    elif kind == "settings-type":
        e[1]["settings"] = {"stop": ["\n"]}
    elif kind == "settings-nan":
        return '{"entries": [' + json.dumps(e[0])[:-1] + ', "settings": {"t": NaN}}' + "]}"
    elif kind == "missing-field":
        del e[1]["model_version"]
    elif kind == "top-level":
        return {"entries": e, "extra": 1}
    return {"entries": e}


@pytest.mark.parametrize("kind, where, message", [
    ("unknown-field", "entries[1].temperature", "unknown field"),
    ("unknown-case", "entries[1].case_id", "not in the report"),
    ("input-hash", "entries[1].input_hash", "does not match"),
    ("duplicate", "entries[5]", "duplicate of entries[0]"),
    ("generated-at", "entries[1].generated_at", "ISO 8601"),
    ("settings-type", "entries[1].settings", ""),
    ("settings-nan", "entries[0].settings", "finite"),
    ("missing-field", "entries[1].model_version", "required"),
    ("top-level", "extra", "unknown field"),
])
def test_invalid_comparisons_exit_1_naming_file_entry_case_and_field(source, tmp_path, kind, where, message):
    doc = _mutate(kind, entries_for(load(source), 5))
    text = doc if isinstance(doc, str) else json.dumps(doc)
    (tmp_path / "c.json").write_text(text, encoding="utf-8")
    done = scoreboard(["import", "comparisons", str(source), "c.json", "--output", "new.json"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "c.json" in line and where in line and message in line, line
    if where.startswith("entries["):
        assert "case 'inv-" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]  # nothing written


def test_too_many_settings_and_empty_file_are_rejected(source, tmp_path):
    entries = entries_for(load(source), 1)
    entries[0]["settings"] = {f"k{i}": i for i in range(21)}
    (tmp_path / "c.json").write_text(json.dumps(entries), encoding="utf-8")
    with pytest.raises(ConfigError, match="at most 20 settings"):
        import_comparisons(str(source), str(tmp_path / "c.json"), str(tmp_path / "new.json"))
    (tmp_path / "c.json").write_text("[]", encoding="utf-8")
    with pytest.raises(ConfigError, match="no entries"):
        import_comparisons(str(source), str(tmp_path / "c.json"), str(tmp_path / "new.json"))
    assert not (tmp_path / "new.json").exists()


def test_existing_output_and_tampered_report_are_refused(source, tmp_path):
    (tmp_path / "c.json").write_text(json.dumps(entries_for(load(source), 2)), encoding="utf-8")
    (tmp_path / "new.json").write_text("{}", encoding="utf-8")
    done = scoreboard(["import", "comparisons", str(source), "c.json", "--output", "new.json"], tmp_path)
    assert done.returncode == 1 and "overwrite" in done.stderr
    report = load(source)
    report["attempts"][0]["grades"][0]["passed"] = False  # carried unchanged, so it must verify
    (tmp_path / "bad.json").write_text(json.dumps(report), encoding="utf-8")
    done = scoreboard(["import", "comparisons", "bad.json", "c.json", "--output", "out.json"], tmp_path)
    assert done.returncode == 1 and "attempts[0].grades[0].passed" in done.stderr
    assert not (tmp_path / "out.json").exists()


def test_import_needs_a_kind(tmp_path):
    done = scoreboard(["import"], tmp_path)
    assert done.returncode == 1 and "KIND" in done.stderr
