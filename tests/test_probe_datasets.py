"""Datasets as cases, probed from outside: Hugging Face table files read with Inspect's FieldSpec
semantics and within the suite's limits, Inspect's reading of a choice target, the `encoding:`
option, and `scoreboard import csv` on sheets the way spreadsheets save them."""

from __future__ import annotations

import datetime
import decimal
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.cases.budget import suite_budget
from scoreboard.cases.datasets import load_dataset_records
from scoreboard.errors import ConfigError
from scoreboard.suite.config import Limits


def load(tmp_path: Path, name: str, **spec) -> list[dict]:
    return load_dataset_records({"path": name, **spec}, tmp_path, tmp_path, 1 << 24, None)


def parquet(tmp_path: Path, name: str, columns: dict, **options) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), tmp_path / name, **options)


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=120, check=False)


def test_hf_values_without_a_json_form(tmp_path):
    """A date, a decimal and a missing float (NaN) in a Parquet file became case data that no
    report could hold (the run ended in an internal error); now a date is its ISO text, a decimal
    its text, NaN is null, and bytes are refused naming the row and the field."""
    meta = [{"when": datetime.date(2024, 5, 1), "price": decimal.Decimal("1.10"), "score": float("nan")}]
    parquet(tmp_path, "m.parquet", {"input": ["q"], "target": ["x"], "metadata": meta})
    case, = load(tmp_path, "m.parquet", format="hf")
    assert case["metadata"] == {"when": "2024-05-01", "price": "1.10", "score": None}
    json.dumps(case, allow_nan=False)
    parquet(tmp_path, "b.parquet", {"input": ["q", "r"], "target": ["x", "y"],
                                    "metadata": [{"blob": b"ok"}, {"blob": b"\x00\xff"}]})
    with pytest.raises(ConfigError) as exc:
        load(tmp_path, "b.parquet", format="hf")
    assert "b.parquet:1" in str(exc.value) and "field 'metadata.blob'" in str(exc.value)
    assert "binary data" in str(exc.value)


def test_hf_row_bomb_refused_from_the_footer(tmp_path):
    """150,000 rows of one repeated value fit in a few KB of Parquet: the row count is read from
    the footer and refused before a row is built (limits.max_cases); max_rows reads the first."""
    pa = pytest.importorskip("pyarrow")
    many = 150_000
    parquet(tmp_path, "bomb.parquet", {"input": pa.array(["q"]).take(pa.array([0] * many)),
                                       "target": pa.array(["x"]).take(pa.array([0] * many))})
    assert (tmp_path / "bomb.parquet").stat().st_size < 20_000
    with pytest.raises(ConfigError, match=r"150,000 rows, more than 100,000 \(limits.max_cases"):
        load(tmp_path, "bomb.parquet", format="hf")
    assert [c["id"] for c in load(tmp_path, "bomb.parquet", format="hf", max_rows=2)] == ["sample-1", "sample-2"]


def test_hf_unpacked_size_counted_against_the_suite_limit(tmp_path):
    """What the read columns unpack to is bounded by limits.max_total_bytes before decoding (a
    zstd page of one repeated text is tiny on disk)."""
    parquet(tmp_path, "big.parquet", {"input": ["a" * 200_000 + str(i) for i in range(20)], "target": ["x"] * 20},
            compression="zstd", use_dictionary=False)
    assert (tmp_path / "big.parquet").stat().st_size < 100_000
    with suite_budget(Limits(max_total_bytes=1 << 20)):
        with pytest.raises(ConfigError, match=r"unpack to .* more than 1,048,576 \(limits.max_total_bytes\)"):
            load(tmp_path, "big.parquet", format="hf")
    assert len(load(tmp_path, "big.parquet", format="hf")) == 20  # the default limit holds 4 MB


def test_hf_rows_become_samples_as_inspect_reads_them(tmp_path):
    """hf_dataset maps rows with the same FieldSpec as json_dataset: a number target is its
    str(), other columns are ignored, a target's letters may be "AC", a 27th choice is "1", and
    includes() ignores case. An answer index (or a list of them) is its letter."""
    parquet(tmp_path, "free.parquet", {"question": ["2*21?", "Capital?"], "answer": [42, 7],
                                       "subject": ["math", "geo"]})
    cases = load(tmp_path, "free.parquet", format="hf", columns={"input": "question", "target": "answer"})
    assert [c["expected"] for c in cases] == ["42", "7"]
    inc, _ = load(tmp_path, "free.parquet", format="hf", grader="includes",
                  columns={"input": "question", "target": "answer"})
    assert inc["graders"] == [{"contains": {"mode": "any", "ignore_case": True}}]
    letters = [chr(ord("A") + i) for i in range(26)]
    parquet(tmp_path, "mcq.parquet", {"input": ["q1", "q2", "q3"],
                                      "choices": [["a", "b", "c"], [str(i) for i in range(30)], ["a", "b", "c"]],
                                      "target": ["A, C", "1", "B"], "extra": [1, 2, 3]})
    one, many, _ = load(tmp_path, "mcq.parquet", format="hf")
    assert one["expected"] == "AC" and one["graders"][0]["transform"]["choice"]["multiple"] is True
    assert many["expected"] == "1" and f"one of {','.join(letters)},1,2,3,4." in many["input"]
    assert "\nZ) 25\n1) 26\n" in many["input"]
    parquet(tmp_path, "idx.parquet", {"input": ["q"], "choices": [["a", "b", "c"]], "target": [[0, 2]]})
    assert load(tmp_path, "idx.parquet", format="hf")[0]["expected"] == "AC"


def test_hf_without_an_input_column_names_the_columns(tmp_path):
    parquet(tmp_path, "qa.parquet", {"question": ["q"], "answer": ["a"]})
    with pytest.raises(ConfigError, match=r"no column 'input' \(the file's columns: 'question', 'answer'\)"):
        load(tmp_path, "qa.parquet", format="hf")


def test_a_digit_target_is_one_answer_a_character(tmp_path):
    """_score_target reads the target character by character: "12" on 30 choices is the 27th and
    28th choices (a multiple-answer sample), not the 37th."""
    (tmp_path / "d.jsonl").write_text(json.dumps({"input": "q", "choices": [str(i) for i in range(30)],
                                                  "target": "12"}) + "\n")
    case, = load(tmp_path, "d.jsonl", format="inspect")
    assert case["expected"] == "12" and case["graders"][0]["transform"]["choice"] == {"choices": 30,
                                                                                      "multiple": True}


@pytest.mark.parametrize("codec", ["rot13", "base64", "hex"])
def test_a_codec_that_is_not_a_text_encoding(tmp_path, codec):
    (tmp_path / "d.csv").write_text("input,target\nq,x\n")
    with pytest.raises(ConfigError, match=f"'{codec}' is not a text encoding"):
        load(tmp_path, "d.csv", format="inspect", encoding=codec)


def test_import_csv_refuses_an_id_no_case_file_may_hold(tmp_path):
    """A newline in an id cell was written to the case file, which then failed to load."""
    (tmp_path / "x.csv").write_text('id,input,expected\n"a\nb",hi,x\n', newline="")
    done = cli(tmp_path, "import", "csv", "--csv", "x.csv", "--map", "input=input,expected=expected,id=id",
               "--grader", "exact", "--output", "cases.jsonl")
    assert done.returncode == 1, done.stderr
    assert "row 2, column 'id'" in done.stderr and "control characters" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "cases.jsonl").exists()


def test_import_csv_names_a_semicolon_sheet(tmp_path):
    """An Excel export in a comma-decimal locale: BOM, ';' between cells, CRLF."""
    (tmp_path / "x.csv").write_bytes(b'\xef\xbb\xbfid;input;expected\r\n1;hi;x\r\n')
    done = cli(tmp_path, "import", "csv", "--csv", "x.csv", "--map", "input=input,expected=expected",
               "--grader", "exact", "--output", "cases.jsonl")
    assert done.returncode == 1 and "holding ';'" in done.stderr and "save it as CSV with commas" in done.stderr


def test_hf_json_array_file(tmp_path):
    """`datasets` reads a .json file holding one array as well as JSON lines; the array was an
    'invalid JSON' error on its first line."""
    (tmp_path / "d.json").write_text('[\n  {"input": "q", "target": "x"},\n  {"input": "r", "target": "y"}\n]\n')
    pairs = load_dataset_records({"format": "hf", "path": "d.json"}, tmp_path, tmp_path, 1 << 20, None,
                                 with_lines=True)
    assert [(line, c["id"], c["expected"]) for line, c in pairs] == [(2, "sample-1", "x"), (3, "sample-2", "y")]
