"""Suite files (YAML/TOML/JSON) and flags -> Suite: every setting, flag overrides, variants,
skills, filters, limits, and one-line errors naming the file and field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scoreboard.errors import ConfigError
from scoreboard.suite.load import load_suite, read_suite_file

FIXTURES = Path(__file__).parent / "fixtures" / "core"

CASES = [{"id": "alpha", "input": "alpha", "expected": "alpha", "category": "greek"},
         {"id": "beta", "input": "beta", "expected": "beta", "category": "greek"},
         {"id": "one", "input": "one", "expected": "one", "category": "number"}]


@pytest.fixture
def work(tmp_path, monkeypatch):
    for item in FIXTURES.iterdir():
        if item.name == "__pycache__":
            continue
        (shutil.copytree if item.is_dir() else shutil.copy)(item, tmp_path / item.name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def suite_file(path: Path, settings: dict) -> Path:
    if path.suffix == ".toml":
        raise AssertionError("write TOML by hand")
    path.write_text(json.dumps(settings) if path.suffix == ".json" else _yaml(settings), encoding="utf-8")
    return path


def _yaml(settings: dict) -> str:
    import yaml

    return yaml.safe_dump(settings, sort_keys=False)


def test_yaml_suite_settings(work):
    suite = load_suite("suite.yaml")
    assert suite.name == "core-yaml"
    assert suite.config.runs == 3 and suite.config.concurrency == 2
    assert suite.config.formats == ["json", "md"]
    assert [v.name for v in suite.variants] == ["plain", "shouty"]
    assert [c.id for c in suite.cases] == ["alpha", "beta", "one"]
    assert suite.source == "suite.yaml"


def test_toml_and_json_suites(work):
    toml = load_suite("suite.toml")
    assert (toml.name, toml.config.runs, [v.name for v in toml.variants]) == ("core-toml", 2, ["echo"])
    js = load_suite("suite.json")
    assert (js.name, js.config.runs, [v.name for v in js.variants]) == ("core-json", 1, ["echo", "half"])


def test_flags_override_suite(work):
    flags = {"runs": 1, "concurrency": 7, "timeout_ms": 250, "formats": ["json"], "output_dir": "elsewhere",
             "name": "renamed", "seed": 42, "fail_under": 0.5, "category": ["greek"], "graders": ["exact"]}
    suite = load_suite("suite.yaml", flags)
    cfg = suite.config
    assert (cfg.runs, cfg.concurrency, cfg.timeout_ms, cfg.formats, cfg.output_dir, cfg.seed, cfg.fail_under) == \
        (1, 7, 250, ["json"], "elsewhere", 42, 0.5)
    assert suite.name == "renamed"
    assert [c.id for c in suite.cases] == ["alpha", "beta"]
    # None means "flag not given": the suite's value stays
    suite = load_suite("suite.yaml", {"runs": None, "concurrency": None})
    assert suite.config.runs == 3 and suite.config.concurrency == 2


def test_flag_subject_replaces_suite_variants(work):
    suite = load_suite("suite.yaml", {"subject": "python:core_subjects:upper",
                                      "vs_subject": "python:core_subjects:echo"})
    assert [v.name for v in suite.variants] == ["upper", "echo"]


def test_same_subject_names_made_unique(work):
    suite = load_suite(None, {"cases": ["cases.jsonl"], "subject": "mock", "vs_subject": "mock"})
    names = [v.name for v in suite.variants]
    assert len(set(names)) == 2


def test_cases_paths_relative_to_suite_and_flags_to_cwd(work, monkeypatch):
    (work / "nested").mkdir()
    (work / "nested" / "here.jsonl").write_text(json.dumps(CASES[0]) + "\n")
    suite_file(work / "nested" / "s.yaml", {"cases": "here.jsonl", "subject": "mock"})
    assert [c.id for c in load_suite("nested/s.yaml").cases] == ["alpha"]
    # --cases on the command line is relative to the working directory
    assert [c.id for c in load_suite("nested/s.yaml", {"cases": ["cases.jsonl"]}).cases] == ["alpha", "beta", "one"]
    with pytest.raises(ConfigError, match="not found"):
        load_suite("nested/s.yaml", {"cases": ["here.jsonl"]})


def test_suite_directory_loads_suite_yaml(work):
    assert load_suite(str(work)).name == "core-yaml"


def test_multiple_case_files_and_cross_file_duplicates(work):
    (work / "more.jsonl").write_text(json.dumps({"id": "extra", "input": "x", "expected": "x"}) + "\n")
    suite = load_suite(None, {"cases": ["cases.jsonl", "more.jsonl"], "subject": "mock"})
    assert [c.id for c in suite.cases] == ["alpha", "beta", "one", "extra"]
    (work / "dup.jsonl").write_text(json.dumps(CASES[1]) + "\n")
    with pytest.raises(ConfigError) as info:
        load_suite(None, {"cases": ["cases.jsonl", "dup.jsonl"], "subject": "mock"})
    assert info.value.case_id == "beta" and info.value.field == "id" and "dup.jsonl" in str(info.value)
    assert "cases.jsonl" in str(info.value)


def test_limits_from_suite(work):
    suite_file(work / "lim.yaml", {"cases": "cases.jsonl", "subject": "mock", "limits": {"max_cases": 2}})
    with pytest.raises(ConfigError, match="max_cases"):
        load_suite("lim.yaml")
    suite_file(work / "lim2.yaml", {"cases": "cases.jsonl", "subject": "mock",
                                    "limits": {"max_cases": 3, "max_input_bytes": 5, "max_file_bytes": 1000}})
    assert len(load_suite("lim2.yaml").cases) == 3
    suite_file(work / "lim3.yaml", {"cases": "cases.jsonl", "subject": "mock", "limits": {"max_cases": 0}})
    with pytest.raises(ConfigError) as info:
        load_suite("lim3.yaml")
    assert info.value.field == "limits.max_cases"
    suite_file(work / "lim4.yaml", {"cases": "cases.jsonl", "subject": "mock", "limits": {"max_files": 1}})
    with pytest.raises(ConfigError) as info:
        load_suite("lim4.yaml")
    assert info.value.field == "limits.max_files"


@pytest.mark.parametrize("settings,field", [
    ({"cases": "cases.jsonl", "subject": "mock", "runz": 3}, "runz"),
    ({"cases": "cases.jsonl", "subject": "mock", "runs": 0}, "runs"),
    ({"cases": "cases.jsonl", "subject": "mock", "runs": "many"}, "runs"),
    ({"cases": "cases.jsonl", "subject": "mock", "formats": ["pdf"]}, "formats.0"),
    ({"cases": "cases.jsonl", "subject": 5}, "subject"),
    ({"cases": "cases.jsonl", "variants": {"a": {"subject": "mock", "skil": "x"}}}, "variants.a.skil"),
    ({"cases": "cases.jsonl", "variants": {"a": {"skill": "skills/terse.md"}}}, "variants.a.subject"),
    ({"cases": "cases.jsonl", "subject": "mock", "fail_under": "high"}, "fail_under"),
    ({"cases": 5, "subject": "mock"}, "cases"),
    ({"subject": "mock"}, "cases"),
    ({"cases": "cases.jsonl"}, "variants"),
])
def test_suite_errors_name_the_field(work, settings, field):
    path = suite_file(work / "bad.yaml", settings)
    with pytest.raises(ConfigError) as info:
        load_suite(path.name)
    assert info.value.field == field, str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name,text,line", [
    ("bad.yaml", "cases: cases.jsonl\nsubject: mock\nruns: [1\n", 4),
    ("bad.json", '{\n  "cases": "cases.jsonl",\n  "runs": 1,,\n}', 3),
    ("bad.toml", 'cases = "cases.jsonl"\nruns = \n', 2),
])
def test_suite_parse_errors_name_the_line(work, name, text, line):
    (work / name).write_text(text)
    with pytest.raises(ConfigError) as info:
        read_suite_file(name)
    assert info.value.file == name
    # tomllib (3.11) has no lineno attribute, but its message names the line
    assert info.value.line == line or f"line {line}," in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


def test_suite_file_not_a_mapping(work):
    (work / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_suite("list.yaml")


def test_suite_not_utf8(work):
    (work / "latin.yaml").write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        load_suite("latin.yaml")


def test_suite_bom_crlf(work):
    (work / "bom.yaml").write_bytes(b"\xef\xbb\xbfcases: cases.jsonl\r\nsubject: mock\r\nruns: 2\r\n")
    assert load_suite("bom.yaml").config.runs == 2


# ---- variants and skills -----------------------------------------------------------------

def test_variants_as_list_and_shared_subject(work):
    suite_file(work / "v.yaml", {"cases": "cases.jsonl", "subject": "python:core_subjects:with_skill",
                                 "variants": [{"name": "a", "skill": "skills/careful"},
                                              {"skill": "skills/terse.md"},
                                              {"name": "c", "subject": "mock", "params": {"t": 1}}]})
    suite = load_suite("v.yaml")
    names = [v.name for v in suite.variants]
    assert names[0] == "a" and names[2] == "c" and names[1].startswith("terse")
    assert suite.variants[0].skill == (work / "skills" / "careful" / "SKILL.md").read_text()
    assert suite.variants[1].skill == (work / "skills" / "terse.md").read_text()
    assert suite.variants[2].skill is None and suite.variants[2].params == {"t": 1}
    assert suite.variants[0].subject.spec["function"] == "core_subjects:with_skill"


def test_skill_flags_dir_and_file(work):
    suite = load_suite(None, {"cases": ["cases.jsonl"], "subject": "python:core_subjects:with_skill",
                              "skill": "skills/careful", "vs": "skills/terse.md"})
    assert [v.name for v in suite.variants][0] == "careful"
    assert suite.variants[0].skill.startswith("# Careful skill")
    assert suite.variants[1].skill.startswith("# Terse skill")
    assert suite.variants[0].skill_path == "skills/careful"
    plan = suite.plan()
    assert plan["variants"][0]["skill_hash"] != plan["variants"][1]["skill_hash"]


def test_skill_flag_uses_suite_subject(work):
    suite = load_suite("suite.toml", {"skill": "skills/terse.md"})
    assert len(suite.variants) == 1 and suite.variants[0].skill.startswith("# Terse")


@pytest.mark.parametrize("flags,field", [
    ({"vs": "skills/terse.md", "subject": "mock"}, "vs"),
    ({"vs_subject": "mock"}, "vs_subject"),
    ({"skill": "skills/careful"}, "subject"),
    ({"skill": "skills/nope.md", "subject": "mock"}, "skill"),
    ({"skill": "skills", "subject": "mock"}, "skill"),  # a folder without SKILL.md
])
def test_variant_flag_errors(work, flags, field):
    with pytest.raises(ConfigError) as info:
        load_suite(None, {"cases": ["cases.jsonl"], **flags})
    assert info.value.field == field, str(info.value)


def test_dry_run_uses_mock(work):
    suite = load_suite("suite.yaml", dry_run=True)
    assert [v.subject.kind for v in suite.variants] == ["mock", "mock"]


# ---- filters, graders, plan --------------------------------------------------------------

def test_filters(work):
    assert [c.id for c in load_suite("suite.yaml", {"category": ["number"]}).cases] == ["one"]
    assert [c.id for c in load_suite("suite.yaml", {"case": ["one", "alpha"]}).cases] == ["alpha", "one"]
    both = load_suite("suite.yaml", {"category": ["greek"], "case": ["beta", "one"]})
    assert [c.id for c in both.cases] == ["beta"]
    with pytest.raises(ConfigError) as info:
        load_suite("suite.yaml", {"case": ["zeta"]})
    assert "zeta" in str(info.value) and info.value.field == "case"
    with pytest.raises(ConfigError, match="no case"):
        load_suite("suite.yaml", {"category": ["none-such"]})


def test_suite_category_string_or_list(work):
    suite_file(work / "c.yaml", {"cases": "cases.jsonl", "subject": "mock", "category": "number"})
    assert [c.id for c in load_suite("c.yaml").cases] == ["one"]


def test_graders_default_and_per_case(work):
    rows = [{"id": "a", "input": "x"}, {"id": "b", "input": "x", "grader": {"regex": "^x$"}},
            {"id": "c", "input": "x", "expected": "x"}]
    (work / "g.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    suite = load_suite(None, {"cases": ["g.jsonl"], "subject": "mock", "graders": [{"contains": "x"}]})
    specs = {cid: [g.spec for g in gs] for cid, gs in suite.graders.items()}
    assert specs["a"] == specs["c"] and specs["a"] != specs["b"]
    # without suite graders: an expected value means `exact`; no grader and no expected is a
    # record-only case (issue 14): it runs and is reported "not graded", never passed or failed
    bare = load_suite(None, {"cases": ["g.jsonl"], "subject": "mock"})
    assert bare.graders["a"] == [] and [g.spec for g in bare.graders["c"]] == ["exact"]
    with pytest.raises(ConfigError):
        load_suite(None, {"cases": ["g.jsonl"], "subject": "mock", "graders": ["no-such-grader"]})


def test_plan_is_deterministic(work):
    a, b = load_suite("suite.yaml").plan(), load_suite("suite.yaml").plan()
    assert a == b
    other = load_suite("suite.yaml", {"runs": 1}).plan()
    assert other["fixture_hash"] == a["fixture_hash"]
    assert other["suite_hash"] != a["suite_hash"]
    # where reports go does not change what the run does
    assert load_suite("suite.yaml", {"output_dir": "x"}).plan()["suite_hash"] == a["suite_hash"]
    assert [c["id"] for c in a["cases"]] == ["alpha", "beta", "one"]
    assert all(c["input_hash"] for c in a["cases"])


def test_reference_not_in_subject_request(work):
    """The runner's request is built from input/skill/run only."""
    import inspect

    from scoreboard.subjects.values import SubjectRequest

    assert "expected" not in inspect.signature(SubjectRequest).parameters
