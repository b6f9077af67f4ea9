"""A suite's case data in all (cases/budget.py): limits.max_cases over every file of a suite,
limits.max_total_bytes over every file read for its cases, limits.max_values over every record
parsed, and an `expand` sized before it is built.

Each file alone is within its own limits in these tests; only the suite as a whole is not. A
refusal is exit 1 with one line naming the file (and line, case, field) and the limit, nothing
written. The memory test runs under an address-space ceiling: a suite of several files of
empty arrays (each file small, together millions of Python lists) must be refused before it
uses a gigabyte.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.cases.budget import LoadBudget, count_values, suite_budget
from scoreboard.errors import ConfigError
from scoreboard.suite.config import Limits
from scoreboard.suite.load import load_suite
from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]


def cli(cwd: Path, *args: str, ceiling: int | None = None) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in `cwd`: in-process, or in a process of its own under an
    address-space `ceiling` (the memory test: the ceiling must be that process's)."""
    if not ceiling:
        return run_cli(args, cwd, {**os.environ, "SCOREBOARD_STORE": "none"})

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCOREBOARD_STORE": "none"}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False, preexec_fn=limit)


def one_error(done: subprocess.CompletedProcess, *fragments: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("scoreboard: error: ") and "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def suite(folder: Path, cases: list, limits: dict | None = None, **extra) -> Path:
    body = {"name": "budget", "cases": cases, "subject": "mock", "graders": ["exact"], **extra}
    if limits:
        body["limits"] = limits
    path = folder / "suite.json"
    path.write_text(json.dumps(body))
    return path


def jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def reference_count(value) -> int:
    if isinstance(value, dict):
        return 1 + sum(1 + reference_count(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(reference_count(v) for v in value)
    return 1


def random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(7 if depth < 5 else 4)
    if kind == 0:
        return rng.randrange(-5, 5)
    if kind == 1:
        return rng.choice(["", "a", "long text, with: commas [and] {braces}"])
    if kind == 2:
        return rng.choice([None, True, False, 1.5])
    if kind == 3:
        return {}
    if kind in (4, 5):
        return {f"k{i}": random_value(rng, depth + 1) for i in range(rng.randrange(4))}
    return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def test_every_object_array_key_and_scalar_is_counted_exactly():
    rng = random.Random(7)
    for _ in range(500):
        value = random_value(rng)
        assert count_values(value) == reference_count(value), value
    assert count_values({"id": "a", "input": "x"}) == 5  # the object, two keys, two scalars
    assert count_values([[], [[]], {}]) == 5


def test_the_case_count_is_over_the_whole_suite_not_each_file(tmp_path):
    jsonl(tmp_path / "a.jsonl", [{"id": f"a{i}", "input": "x", "expected": "x"} for i in range(3)])
    jsonl(tmp_path / "b.jsonl", [{"id": f"b{i}", "input": "x", "expected": "x"} for i in range(3)])
    path = suite(tmp_path, ["a.jsonl", "b.jsonl"], {"max_cases": 4})
    done = cli(tmp_path, "run", str(path), "--output-dir", "out")
    one_error(done, "b.jsonl:2", "case 'b1'", "more than 4 cases (limits.max_cases)")
    assert not (tmp_path / "out").exists()
    # within the limit, both files load
    path = suite(tmp_path, ["a.jsonl", "b.jsonl"], {"max_cases": 6})
    assert len(load_suite(path).cases) == 6


def test_values_are_counted_over_every_file_of_a_suite(tmp_path):
    record = {"id": "x", "input": "q", "expected": "q", "metadata": {"tags": ["a", "b", "c"]}}
    per_record = count_values(record)  # 13
    jsonl(tmp_path / "a.jsonl", [{**record, "id": f"a{i}"} for i in range(2)])
    jsonl(tmp_path / "b.jsonl", [{**record, "id": f"b{i}"} for i in range(2)])
    limit = 3 * per_record + 1  # three records fit, the fourth (the second of b.jsonl) does not
    path = suite(tmp_path, ["a.jsonl", "b.jsonl"], {"max_values": limit})
    one_error(cli(tmp_path, "validate", str(path)), "b.jsonl:2",
              f"more than {limit} values in all", "limits.max_values")
    path = suite(tmp_path, ["a.jsonl", "b.jsonl"], {"max_values": 4 * per_record})
    assert len(load_suite(path).cases) == 4


def test_bytes_read_include_at_files_and_case_documents(tmp_path):
    (tmp_path / "long.txt").write_text("y" * 600)
    jsonl(tmp_path / "a.jsonl", [{"id": "a", "input": "@long.txt", "expected": "x"}])
    jsonl(tmp_path / "b.jsonl", [{"id": "b", "input": "@long.txt", "expected": "x"}])
    size = (tmp_path / "a.jsonl").stat().st_size
    path = suite(tmp_path, ["a.jsonl", "b.jsonl"], {"max_total_bytes": 2 * size + 1000})
    one_error(cli(tmp_path, "validate", str(path)), "b.jsonl:1", "case 'b'",
              f"more than {2 * size + 1000:,} bytes in all (limits.max_total_bytes)")
    path = suite(tmp_path, ["a.jsonl", "b.jsonl"], {"max_total_bytes": 2 * size + 1200})
    assert [c.input for c in load_suite(path).cases] == ["y" * 600] * 2


def test_a_gold_directory_and_a_dataset_count_too(tmp_path):
    gold = tmp_path / "gold"
    gold.mkdir()
    for name in ("one", "two"):
        (gold / f"{name}.txt").write_text("z" * 500)
        (gold / f"{name}.gold.json").write_text(json.dumps({"fields": {"title": name}}))
    path = suite(tmp_path, ["gold"], {"max_total_bytes": 700}, graders=["fields"])
    one_error(cli(tmp_path, "validate", str(path)), "two", "limits.max_total_bytes")
    jsonl(tmp_path / "mcq.jsonl", [{"id": f"q{i}", "input": "2+2?", "target": "4"} for i in range(3)])
    per_record = count_values({"id": "q0", "input": "2+2?", "target": "4"})
    path = suite(tmp_path, [{"format": "inspect", "path": "mcq.jsonl"}], {"max_values": 3 * per_record - 1})
    one_error(cli(tmp_path, "validate", str(path)), "mcq.jsonl:3", "limits.max_values")


def test_an_expansion_is_sized_before_it_is_built(tmp_path):
    """Four lists of 200 values, `expand` on all four: 1.6 billion cases from one line. It used
    to be built (validate did not finish in 20 s); now it is refused at once."""
    bomb = {"id": "bomb", "input": "{{a}}{{b}}{{c}}{{d}}", "expected": "x",
            "vars": {k: list(range(200)) for k in "abcd"}, "expand": list("abcd")}
    jsonl(tmp_path / "cases.jsonl", [bomb])
    path = suite(tmp_path, ["cases.jsonl"])
    done = cli(tmp_path, "validate", str(path))
    one_error(done, "cases.jsonl:1", "case 'bomb'", "field 'expand'", "expanding makes 1,600,000,000 cases",
              "more than 100,000 cases (limits.max_cases)")
    # a reasonable expansion counts against the same suite-wide total
    ok = {**bomb, "vars": {"a": [1, 2], "b": [1, 2, 3]}, "expand": ["a", "b"]}
    jsonl(tmp_path / "cases.jsonl", [ok, {"id": "plain", "input": "x", "expected": "x"}])
    assert len(load_suite(suite(tmp_path, ["cases.jsonl"], {"max_cases": 7})).cases) == 7
    with pytest.raises(ConfigError, match="expanding makes 6 cases: the suite has more than 6 cases"):
        load_suite(suite(tmp_path, ["cases.jsonl"], {"max_cases": 6}))


def test_a_case_file_validated_alone_is_held_to_the_same_totals(tmp_path):
    line = json.dumps({"id": "c", "input": "q", "metadata": {"x": [0] * 1_000_000}}, separators=(",", ":"))
    (tmp_path / "big.jsonl").write_text("\n".join(line.replace('"c"', f'"c{i}"') for i in range(6)) + "\n")
    one_error(cli(tmp_path, "validate", "big.jsonl"), "big.jsonl:5", "limits.max_values")


def test_many_small_files_of_empty_arrays_are_refused_before_memory_runs_out(tmp_path):
    """Twelve files of 4 MB each, within every per-file limit: 16.8 million empty lists in all,
    about 1.7 GB as Python objects. Under a 1 GiB address-space ceiling the suite is refused
    with the max_values line (at the fourth file), not a MemoryError."""
    line = json.dumps({"id": "ID", "input": "q", "metadata": {"x": [[]] * 350_000}}, separators=(",", ":"))
    names = []
    for f in range(12):
        body = "\n".join(line.replace('"ID"', f'"f{f}c{i}"') for i in range(4)) + "\n"
        (tmp_path / f"t{f}.jsonl").write_text(body)
        names.append(f"t{f}.jsonl")
    path = suite(tmp_path, names)
    done = cli(tmp_path, "validate", str(path), ceiling=1024 * 1024 * 1024)
    one_error(done, "t3.jsonl:", "more than 5,000,000 values in all", "limits.max_values")


def test_outside_a_suite_load_nothing_is_counted(tmp_path):
    budget = LoadBudget(Limits(max_cases=1))
    budget.added(1, "x")
    with pytest.raises(ConfigError, match=r"x: the suite has more than 1 cases"):
        budget.added(1, "x")
    with suite_budget(Limits(max_values=3)) as tally:
        tally.parsed([1], "f")
        with pytest.raises(ConfigError, match=r"f:9: the suite's case records hold more than 3 values"):
            tally.parsed([1, 2], "f", line=9)


def test_a_plan_too_large_to_index_is_refused_before_anything_is_sized_by_it(tmp_path):
    """100 cases x 50 variants x 1,000 runs: 5 million attempts over a limit of 1 million. It
    was a MemoryError (internal error) at 500 billion attempts; now one line, exit 1."""
    jsonl(tmp_path / "cases.jsonl", [{"id": f"c{i}", "input": "x", "expected": "x"} for i in range(100)])
    body = {"name": "big", "cases": "cases.jsonl", "runs": 1000, "graders": ["exact"],
            "variants": {f"v{i}": {"subject": "mock"} for i in range(50)}, "limits": {"max_attempts": 1_000_000}}
    (tmp_path / "suite.json").write_text(json.dumps(body))
    for command in (["validate", "suite.json"], ["run", "suite.json", "--dry-run", "--output-dir", "out"]):
        one_error(cli(tmp_path, *command), "suite.json: the run would make 5,000,000 attempts "
                  "(100 cases x 50 variants x 1,000 runs), more than 1,000,000 (limits.max_attempts)")
    assert not (tmp_path / "out").exists()
    body["limits"]["max_attempts"] = 5_000_000
    (tmp_path / "suite.json").write_text(json.dumps(body))
    assert cli(tmp_path, "validate", "suite.json").returncode == 0
