"""A newcomer following the README literally (probe 4): what the README's commands print when
the user's setup is not complete, and what the repository holds on a fresh clone."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests import test_first_hour as first_hour
from tests.cli_inprocess import run_cli
from tests.test_first_hour import errors_of

ROOT = Path(__file__).resolve().parents[1]
CASES = [{"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"} for i in range(2)]


def cli(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                                             "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
                                                             "SCOREBOARD_STORE", "PROBE_UNSET_KEY")}
    full.update(env or {})
    return run_cli(args, cwd, full)  # in-process: no test here is about the process


def suite_in(folder: Path, **settings) -> Path:
    return first_hour.suite_in(folder, CASES, **settings)


# ---- the README's LLM suite run without its API key --------------------------------------------

def _keyed_suite(folder: Path, **gates) -> Path:
    subject = {"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
               "api_key_env": "PROBE_UNSET_KEY", "api_key_required": True, "params": {"max_tokens": 16}}
    return suite_in(folder, subject=subject, variants={"basic": {}, "careful": {"params": {"temperature": 0}}},
                    **gates)


def test_a_run_without_its_api_key_names_the_key_and_no_gate_of_a_variant_that_failed_to_build(tmp_path):
    """`scoreboard run examples/invoices/llm-suite.yaml` without OPENAI_API_KEY: one line naming the
    unset variable and both variants that share the subject, and nothing else: the suite's
    `fail_under: {careful: 0.9}` names a declared variant, so it is not "an unknown variant
    'careful' (variants: )"."""
    suite = _keyed_suite(tmp_path / "s", fail_under={"careful": 0.9}, fail_under_metrics={"careful:pass_rate": 0.5},
                         min_rubric={"basic": 3})
    lines = errors_of(cli(tmp_path, "run", str(suite)))
    # the second line: no grader of this suite gives a rubric score, so its min_rubric could only fail
    assert len(lines) == 2 and "PROBE_UNSET_KEY is not set" in lines[0], lines
    assert "variants 'basic', 'careful'" in lines[0], lines
    assert "rubric-score grader" in lines[1], lines
    assert not any("unknown variant" in line for line in lines), lines
    assert not (tmp_path / "s" / "out").exists()


def test_a_gate_naming_a_variant_that_is_not_declared_is_still_refused_beside_a_build_error(tmp_path):
    suite = _keyed_suite(tmp_path / "s", fail_under={"carefull": 0.9})
    lines = errors_of(cli(tmp_path, "run", str(suite)))
    assert sum("PROBE_UNSET_KEY is not set" in line for line in lines) == 1, lines
    unknown = [line for line in lines if "unknown variant" in line]
    assert len(unknown) == 1 and "'carefull'" in unknown[0] and "(variants: basic, careful)" in unknown[0], lines


# ---- a gold directory without a grader -----------------------------------------------------------

def test_a_gold_directory_without_a_grader_is_told_to_name_one_in_the_suite_once(tmp_path):
    """`scoreboard validate contracts/gold` (the README's gold set): the implicit-`exact` warning
    must not advise `"grader"` in a gold file (a gold file refuses it: `field 'grader': unknown
    field`), and it is said once for the folder, not once per document."""
    gold = tmp_path / "gold"
    gold.mkdir()
    for name in ("a", "b"):
        (gold / f"{name}.txt").write_text(f"Total: {name}\n", encoding="utf-8")
        (gold / f"{name}.gold.json").write_text(json.dumps({"fields": {"total": name}}), encoding="utf-8")
    done = cli(tmp_path, "validate", "gold")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("scoreboard: warning:")]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"scoreboard: warning: gold{os.sep}: 2 cases"), warnings
    assert "in the suite" in warnings[0] and '"grader"' not in warnings[0], warnings
    # the advice, followed, is accepted: a gold file holds no grader, the suite names it
    (gold / "a.gold.json").write_text(json.dumps({"fields": {"total": "a"}, "grader": "json-fields"}), encoding="utf-8")
    assert "field 'grader': unknown field" in cli(tmp_path, "validate", "gold").stderr
    (gold / "a.gold.json").write_text(json.dumps({"fields": {"total": "a"}}), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("cases: gold\ngraders: [json-fields]\nsubject: mock\n", encoding="utf-8")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr


# ---- --help agrees with the README ---------------------------------------------------------------

def test_run_and_plan_help_name_every_figure_a_metric_gate_reads(tmp_path):
    """The README (Scores, Gates and CI) gates named and derived metrics, the case score, reducers
    and `metric:NAME`; `run --help` listed only pass_rate, pass@K, pass^K, fields and field:PATH."""
    for command in ("run", "plan"):
        done = cli(tmp_path, command, "--help", env={"COLUMNS": "200"})
        assert done.returncode == 0, done.stderr
        flat = " ".join(done.stdout.split())
        start = flat.index("--fail-under-metric NAME=VALUE exit 3")
        text = flat[start:flat.index("--fail-under-fields RATE", start)]
        for name in ("pass_rate", "pass@K", "pass^K", "field:PATH", "score", "derived metric", "metric:NAME",
                     "reducer:NAME"):
            assert name in text, (command, name, text)
    # and the error for an unknown name lists the same figures
    suite = suite_in(tmp_path / "s", subject="mock")
    lines = errors_of(cli(tmp_path, "run", str(suite), "--fail-under-metric", "nope=0.5"))
    assert any("metric:NAME" in line and "reducer:NAME" in line for line in lines), lines


# ---- validate agrees with run on a folder --------------------------------------------------------

def test_validate_checks_a_folders_suite_yaml_as_run_and_plan_take_it(tmp_path):
    """`scoreboard run examples/invoices` runs the folder's suite.yaml; `scoreboard validate
    examples/invoices` called the folder a gold directory with no gold file (exit 1)."""
    suite = suite_in(tmp_path / "s", subject="mock")
    suite.rename(suite.with_name("suite.yaml"))  # JSON is YAML
    assert cli(tmp_path, "plan", "s").returncode == 0
    done = cli(tmp_path, "validate", "s")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OK: suite s: 2 cases, 1 variant"), done.stdout
    # a bad suite.yaml in the folder is that file's error, not a gold directory's
    (tmp_path / "s" / "suite.yaml").write_text("cases: cases.jsonl\nrunz: 2\nsubject: mock\n", encoding="utf-8")
    lines = errors_of(cli(tmp_path, "validate", "s"))
    assert any("suite.yaml" in line and "runz" in line for line in lines), lines
    # a gold directory is still one
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "a.txt").write_text("Total: 1\n", encoding="utf-8")
    (gold / "a.gold.json").write_text(json.dumps({"fields": {"total": 1}}), encoding="utf-8")
    assert cli(tmp_path, "validate", "gold").stdout.startswith("OK: gold directory gold: 1 case")


# ---- the README's layout names every package -----------------------------------------------------

def test_the_development_tree_names_every_package_and_command():
    """README "Development": "one folder per noun, so the tree explains the architecture"; it
    left out importers/, tasks/, render/ and templating/, and the aggregate, history and store
    commands."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```\nsrc/scoreboard/\n")
    tree = text[start:text.index("```", start + 3)]
    packages = sorted(p.parent.name for p in (ROOT / "src" / "scoreboard").glob("*/__init__.py"))
    missing = [p for p in packages if f"\n  {p}/" not in tree]
    assert missing == [], missing
    cli_line = " ".join(tree[tree.index("  cli/"):tree.index("  testing/")].split())
    from scoreboard.cli.commands import MODULES

    commands = ["import" if m == "imports" else m for m in MODULES if m != "view"]  # view: viewer/
    assert [c for c in commands if f" {c}," not in cli_line and f" {c})" not in cli_line
            and f"({c}," not in cli_line] == [], cli_line
