"""Arbitrary bytes as a case file: exit 1 with one line (or 0 if they happen to be valid),
never a traceback or an internal error."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scoreboard.cli.main import main

SUFFIXES = [".jsonl", ".json", ".yaml"]

# Bytes that look a little like case files reach deeper than uniform noise does.
FRAGMENTS = [b"{", b"}", b"[", b"]", b'"id"', b'"input"', b'"expected"', b'"cases"', b":", b",", b"\n",
             b"\r\n", b"\xef\xbb\xbf", b'"@x"', b"cases:", b"- id: a", b"  input: x", b"null", b"1e999",
             b'"\\ud800"', b"\xff", b"\x00", b"&a", b"*a", b"!!python/object", b'"role"', b'"user"', b"  "]

case_bytes = st.one_of(
    st.binary(max_size=300),
    st.lists(st.sampled_from(FRAGMENTS) | st.binary(max_size=4), max_size=40).map(b"".join),
)


def validate(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(["validate", str(path)])
        except SystemExit as exc:  # argparse only; never expected here
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


def check(rc: int, out: str, err: str) -> None:
    assert "Traceback" not in err
    assert rc in (0, 1), (rc, err)
    if rc == 1:
        # every error found (up to the cap of 20, then one line saying it stopped), a line each
        lines = [line for line in err.splitlines() if not line.startswith("scoreboard: warning: ")]
        assert 1 <= len(lines) <= 21, err
        assert all(line.startswith("scoreboard: error: ") for line in lines), err
        assert "internal error" not in err
    else:
        assert out.startswith("OK"), out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=case_bytes, suffix=st.sampled_from(SUFFIXES))
@example(data=b'{"id": "a", "input": "x", "expected": "x"}\n', suffix=".jsonl")
@example(data=b"cases:\n  - id: a\n    input: x\n    expected: x\n", suffix=".yaml")
@example(data=b"\xef\xbb\xbf", suffix=".json")
@example(data=b'{"cases": [{"id": "a", "input": "x", "expected": 1e999}]}', suffix=".json")
@example(data=b"[" * 5000, suffix=".json")
@example(data=b"[" * 5000, suffix=".yaml")
@example(data=b'{"id": "a", "input": "\\ud800", "expected": "x"}', suffix=".jsonl")
@example(data=b"a: &a [*a]", suffix=".yaml")
@example(data=b'"\\ud800', suffix=".yaml")  # LibYAML refuses the escape, then PyYAML the unclosed quote
@example(data=b"cases: !!python/object:os.system {}", suffix=".yaml")
def test_arbitrary_bytes_validate(data, suffix):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"cases{suffix}"
        path.write_bytes(data)
        rc, out, err = validate(path)
    check(rc, out, err)


@pytest.mark.parametrize("data,suffix", [
    (b"\x00\xff\xfe garbage", ".jsonl"),
    (b"[" * 5000 + b"]" * 5000, ".json"),
    (bytes(range(256)) * 2, ".yaml"),
])
def test_arbitrary_bytes_subprocess(tmp_path, data, suffix):
    path = tmp_path / f"cases{suffix}"
    path.write_bytes(data)
    procs = [subprocess.Popen([sys.executable, "-m", "scoreboard", *args], cwd=tmp_path, env=dict(os.environ),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for args in (["validate", path.name],
                          ["run", "--cases", path.name, "--subject", "mock", "--output-dir", "out"])]
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, (proc.args, out, err)
        check(proc.returncode, out, err)
    assert not (tmp_path / "out").exists()


@settings(max_examples=60, deadline=None)
@given(record=st.dictionaries(
    st.sampled_from(["id", "input", "expected", "grader", "graders", "fields", "category", "tags", "metadata",
                     "synthetic", "rubric", "notes", "bogus"]),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                 lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                 max_leaves=6),
    max_size=6))
def test_arbitrary_records(record):
    """Any JSON object as a case: valid, or one line naming the file."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cases.jsonl"
        path.write_text(json.dumps(record) + "\n")
        rc, out, err = validate(path)
    check(rc, out, err)
    if rc == 1:
        assert "cases.jsonl" in err
