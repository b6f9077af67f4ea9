"""Probe 12: hostile input files for the newest loaders (imported suites, templates, custom
graders, datasets as cases, agent task folders), used from the outside: the CLI on real files in
tmp_path, in a subprocess with a timeout and a memory limit (in-process where neither
could matter)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest


MEMORY = 2 * 1024 ** 3


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def cli(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, SCOREBOARD_STORE="none", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout, preexec_fn=_limit)


def cli_in(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`cli` in-process, for files that are refused for where they lead or loaded as they are,
    with nothing to bound in time or memory (each subprocess spent about 0.7 s of CPU importing,
    and more importing pyarrow); whatever could hang or grow stays a process under `cli`."""
    from tests.cli_inprocess import run_cli

    return run_cli(args, cwd, dict(os.environ, SCOREBOARD_STORE="none", NO_COLOR="1"))


def one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# --- OpenAI Evals registry: every file it reaches stays inside the registry -----------------------

def _registry(tmp_path: Path, entry: str) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text('{"input": "SECRET-123", "ideal": "x"}\n')
    (outside / "x.yaml").write_text("leak:\n  class: evals.elsuite.basic.match:Match\n"
                                    "  args: {samples_jsonl: dir}\n")
    (outside / "mg.yaml").write_text('myspec:\n  prompt: "SECRET-123 {input} {completion}"\n'
                                     '  choice_strings: ["Y", "N"]\n  choice_scores: {"Y": 1, "N": 0}\n'
                                     "  input_outputs: {input: completion}\n  eval_type: classify\n")
    reg = tmp_path / "reg"
    (reg / "evals").mkdir(parents=True)
    (reg / "data" / "dir").mkdir(parents=True)
    (reg / "data" / "dir" / "a.jsonl").write_text('{"input": "hi", "ideal": "x"}\n')
    (reg / "evals" / "e.yaml").write_text(entry)
    return reg


def _no_secret(tmp_path: Path, proc: subprocess.CompletedProcess) -> None:
    assert "SECRET-123" not in proc.stdout + proc.stderr
    assert not (tmp_path / "out").exists()


def test_openai_evals_samples_folder_symlink_leading_outside_is_refused(tmp_path):
    reg = _registry(tmp_path, "m.v1:\n  class: evals.elsuite.basic.match:Match\n  args: {samples_jsonl: dir}\n")
    (reg / "data" / "dir" / "b.jsonl").symlink_to(tmp_path / "outside" / "secret.jsonl")
    proc = cli_in("import", "openai-evals", "reg/evals/e.yaml", "--output", "out", cwd=tmp_path)
    one_line_error(proc, "b.jsonl", "m.v1.args.samples_jsonl", "symlink that leads outside")
    _no_secret(tmp_path, proc)


def test_openai_evals_sibling_entry_file_symlink_leading_outside_is_refused(tmp_path):
    reg = _registry(tmp_path, "e.v1:\n  id: leak\n")
    (reg / "evals" / "zz.yaml").symlink_to(tmp_path / "outside" / "x.yaml")
    proc = cli_in("import", "openai-evals", "reg/evals/e.yaml", "--output", "out", cwd=tmp_path)
    one_line_error(proc, "zz.yaml", "symlink that leads outside")
    _no_secret(tmp_path, proc)


def test_openai_evals_modelgraded_spec_symlink_leading_outside_is_refused(tmp_path):
    reg = _registry(tmp_path, "m.v1:\n  class: evals.elsuite.modelgraded.classify:ModelBasedClassify\n"
                              "  args: {samples_jsonl: dir, modelgraded_spec: myspec}\n")
    (reg / "modelgraded").mkdir()
    (reg / "modelgraded" / "mg.yaml").symlink_to(tmp_path / "outside" / "mg.yaml")
    proc = cli_in("import", "openai-evals", "reg/evals/e.yaml", "--output", "out", cwd=tmp_path)
    one_line_error(proc, "mg.yaml", "symlink that leads outside")
    _no_secret(tmp_path, proc)


# --- Parquet: a footer that understates its column chunks ---------------------------------------

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            out.append(low)
            return bytes(out)
        out.append(low | 0x80)


def _lying_parquet(path: Path, size: int) -> None:
    """One row whose input is `size` bytes in one ZSTD page, its footer edited to claim 100
    bytes (a non-canonical varint of the same length, as Thrift's compact reader accepts)."""
    import struct

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"input": pa.array(["a" * size], pa.large_string()), "target": ["x"]})
    pq.write_table(table, path, compression="zstd", use_dictionary=False, data_page_size=1 << 30)
    data = bytearray(path.read_bytes())
    meta = pq.ParquetFile(path).metadata
    length = struct.unpack("<I", data[-8:-4])[0]
    start = len(data) - 8 - length
    group = meta.row_group(0)
    for claim in {group.column(0).total_uncompressed_size, group.total_byte_size}:
        real = _varint(claim << 1)
        small = bytes(b | 0x80 for b in _varint(100 << 1)) + b"\x80" * (len(real) - 3) + b"\x00"
        assert len(small) == len(real) and data[start:start + length].count(real) == 1
        data[start:start + length] = data[start:start + length].replace(real, small)
    path.write_bytes(bytes(data))
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).total_uncompressed_size == 100


def test_a_parquet_footer_understating_its_pages_is_refused_before_a_page_is_inflated(tmp_path):
    _lying_parquet(tmp_path / "bomb.parquet", 8_000_000)
    assert (tmp_path / "bomb.parquet").stat().st_size < 20_000
    (tmp_path / "suite.yaml").write_text(
        "subject: mock\nlimits: {max_total_bytes: 1000000}\n"
        "cases: [{format: hf, path: bomb.parquet, columns: {input: input, target: target}}]\n")
    proc = cli("validate", "suite.yaml", cwd=tmp_path)
    # what the pages say, before pyarrow allocates them (not "the rows decode to more than", after)
    line = one_line_error(proc, "bomb.parquet", "limits.max_total_bytes", "unpack to 8,000,")
    assert "decode to" not in line


def test_parquet_files_of_every_page_layout_still_load(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = 300
    table = pa.table({"question": [f"q{i} " + "x" * (i % 50) for i in range(rows)],
                      "answer": [str(i) for i in range(rows)], "qid": [f"id{i}" for i in range(rows)]})
    layouts = [dict(), dict(compression="zstd", use_dictionary=False), dict(data_page_version="2.0"),
               dict(compression="gzip", row_group_size=70, data_page_size=64),
               dict(compression="snappy", write_page_index=True, write_page_checksum=True)]
    for n, layout in enumerate(layouts):
        pq.write_table(table, tmp_path / f"d{n}.parquet", **layout)
        (tmp_path / f"s{n}.yaml").write_text(
            f"subject: mock\ncases: [{{format: hf, path: d{n}.parquet, "
            "columns: {input: question, target: answer, id: qid}}]\n")
        proc = cli_in("validate", f"s{n}.yaml", cwd=tmp_path)
        assert proc.returncode == 0 and f"{rows} cases" in proc.stdout, (layout, proc.stdout, proc.stderr)


# --- promptfoo: a glob in a shared config cannot hang the import ------------------------------------

def _promptfoo(tmp_path: Path, tests: str) -> None:
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "promptfooconfig.yaml").write_text(f'prompts: ["{{{{q}}}}"]\nproviders: [echo]\ntests: {tests}\n')


def test_a_promptfoo_glob_of_many_stars_is_matched_in_linear_time(tmp_path):
    _promptfoo(tmp_path, "file://data/" + "*a" * 24 + "*b.yaml")
    (tmp_path / "data" / ("a" * 200)).write_text("")
    (tmp_path / "data" / ("a" * 30 + "xb.yaml")).write_text("- vars: {q: hi}\n")
    proc = cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "- cases: 1" in proc.stdout


def test_a_promptfoo_glob_of_many_double_stars_walks_each_folder_once(tmp_path):
    _promptfoo(tmp_path, "file://data/" + "**/a/" * 14 + "**/b.yaml")
    deep = tmp_path / "data" / Path(*["a"] * 24)
    deep.mkdir(parents=True)
    (deep.parent / "b.yaml").write_text("- vars: {q: hi}\n")
    proc = cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "- cases: 1" in proc.stdout


def test_glob_segments_match_as_minimatch_does():
    from scoreboard.importers.jsglob import _matches

    assert _matches("*.yaml", "tests.yaml") and not _matches("*.yaml", ".hidden.yaml")
    assert _matches(".*", ".hidden") and _matches("t?st*", "test-1.json")
    assert _matches("[!a]*b", "xyzb") and not _matches("[!a]*b", "ab")
    assert _matches("*a*a*b", "xaxayb") and not _matches("*a*a*b", "xaxyb")
    assert _matches("a\\*", "a*") and not _matches("a\\*", "ab")
    assert not _matches("[z-a]", "z")  # a class no regex reads matches nothing (it raised)


# --- import inspect: what a translated record_to_sample builds is bounded once written --------------

_TASK = '''from inspect_ai import Task, task
from inspect_ai.dataset import Sample, json_dataset
from inspect_ai.scorer import match
def rec(record):
{body}
@task
def t():
    return Task(dataset=json_dataset("d.jsonl", sample_fields=rec), scorer=match())
'''


def _inspect_task(tmp_path: Path, body: str, records: int = 1) -> None:
    (tmp_path / "d.jsonl").write_text('{"q": "hi", "a": "x"}\n' * records)
    (tmp_path / "task.py").write_text(_TASK.replace("{body}", body))


def test_a_record_to_sample_naming_one_list_many_times_is_refused_in_one_line(tmp_path):
    # 100,000 references to one list of 100,000: 10^10 values once written (MemoryError, exit 2)
    _inspect_task(tmp_path, '    s = [[1] * 100000] * 100000\n'
                            '    return Sample(input="q", target="a", metadata={"m": s})')
    proc = cli("import", "inspect", "task.py", "--output", "out", cwd=tmp_path)
    one_line_error(proc, "d.jsonl:1", "sample_fields", "larger than")
    assert not (tmp_path / "out").exists()


def test_record_to_sample_samples_are_bounded_in_all(tmp_path):
    # each sample under the per-value bound, 300 of them 3 GB (MemoryError, exit 2)
    _inspect_task(tmp_path, '    s = "x" * 10000000\n    return Sample(input=s, target="a")', records=300)
    proc = cli("import", "inspect", "task.py", "--output", "out", cwd=tmp_path)
    one_line_error(proc, "d.jsonl:", "sample_fields", "characters of JSON")
    assert not (tmp_path / "out").exists()


def test_a_record_to_sample_sharing_small_lists_still_converts(tmp_path):
    _inspect_task(tmp_path, '    c = ["A", "B"]\n    e = []\n'
                            '    return Sample(input=record["q"], target="A", choices=c, metadata={"x": [c, c, e]})',
                  records=3)
    proc = cli("import", "inspect", "task.py", "--output", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "out" / "samples.jsonl").read_text().count('"x": [["A", "B"], ["A", "B"], []]') == 3


# --- promptfoo: tests past limits.max_cases are refused as they are read, not after -----------------

def test_a_promptfoo_scenario_crossing_thousands_of_entries_and_tests_is_refused_at_once(tmp_path):
    import json

    # 220 KB: 5,000 config entries x 5,000 tests, 25 million merged tests (13 GB, minutes, before)
    config = {"prompts": ["{{q}} {{r}}"], "providers": ["echo"],
              "scenarios": [{"config": [{"vars": {"q": "a"}}] * 5000, "tests": [{"vars": {"r": "b"}}] * 5000}]}
    (tmp_path / "promptfooconfig.yaml").write_text(json.dumps(config))
    proc = cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path, timeout=60)
    one_line_error(proc, "promptfooconfig.yaml", "scenarios.0.config.", "100,000 cases (limits.max_cases)")
    assert not (tmp_path / "out").exists()


def test_a_promptfoo_tests_csv_of_a_million_rows_stops_at_the_case_limit(tmp_path):
    (tmp_path / "t.csv").write_text("q,__expected\n" + "a,b\n" * 1_500_000)  # 6 MB; 2.3 GB read whole
    (tmp_path / "promptfooconfig.yaml").write_text('prompts: ["{{q}}"]\nproviders: [echo]\ntests: file://t.csv\n')
    proc = cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path, timeout=60)
    one_line_error(proc, "t.csv:100002", "limits.max_cases")
    assert not (tmp_path / "out").exists()


def test_a_promptfoo_tests_jsonl_of_a_million_lines_stops_at_the_case_limit(tmp_path):
    (tmp_path / "t.jsonl").write_text('{"vars": {}}\n' * 1_200_000)  # 15 MB
    (tmp_path / "promptfooconfig.yaml").write_text('prompts: ["{{q}}"]\nproviders: [echo]\ntests: file://t.jsonl\n')
    proc = cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path, timeout=60)
    one_line_error(proc, "t.jsonl:100001", "limits.max_cases")
    assert not (tmp_path / "out").exists()


# --- Arrow IPC: offsets past their buffers are refused, never read --------------------------------

def _arrow_with_offsets(path: Path, offsets: tuple[int, int, int]) -> None:
    import struct

    pa = pytest.importorskip("pyarrow")
    table = pa.table({"input": ["hello", "world"], "target": ["a", "b"]})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data = bytearray(sink.getvalue().to_pybytes())
    at = data.find(struct.pack("<3i", 0, 5, 10))  # the input column's offsets
    assert at > 0
    data[at:at + 12] = struct.pack("<3i", *offsets)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("offsets", [(0, 5, 3000), (0, -5000, 10)], ids=["past-the-buffer", "negative"])
def test_an_arrow_file_whose_offsets_leave_their_buffer_is_refused_in_one_line(tmp_path, offsets):
    # past the buffer, pyarrow read this process's memory into the case input (an internal
    # UnicodeDecodeError here, the heap's bytes where they were UTF-8); negative: SystemError
    _arrow_with_offsets(tmp_path / "d.arrow", offsets)
    (tmp_path / "suite.yaml").write_text(
        "subject: mock\ncases: [{format: hf, path: d.arrow, columns: {input: input, target: target}}]\n")
    proc = cli("validate", "suite.yaml", cwd=tmp_path)
    one_line_error(proc, "d.arrow:1", "field 'input'", "not a readable dataset file")


# --- Parquet: a footer pyarrow's metadata objects cannot hold is an error, not an abort -------------

def _patched_parquet(path: Path, old: bytes, new: bytes, times: int = 1) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import io

    buf = io.BytesIO()
    pq.write_table(pa.table({"input": ["q1", "q2"], "target": ["a", "b"]}), buf)
    data = buf.getvalue()
    assert data.count(old) == times
    path.write_bytes(data.replace(old, new))


def test_a_parquet_schema_disagreeing_with_its_size_statistics_is_one_line_not_an_abort(tmp_path):
    # target made REQUIRED in the schema while its chunk keeps an OPTIONAL column's level
    # histogram: pyarrow's ColumnChunkMetaData threw a C++ exception nothing caught (the process
    # aborted: "terminate called after throwing an instance of 'parquet::ParquetException'")
    _patched_parquet(tmp_path / "d.parquet", b"%\x02\x18\x06target", b"%\x00\x18\x06target")
    (tmp_path / "suite.yaml").write_text(
        "subject: mock\ncases: [{format: hf, path: d.parquet, columns: {input: input, target: target}}]\n")
    proc = cli("validate", "suite.yaml", cwd=tmp_path)
    one_line_error(proc, "d.parquet", "not a readable dataset file", "histogram")


def test_a_parquet_column_name_that_is_not_utf8_is_one_line(tmp_path):
    # in the schema and in the chunk's path_in_schema: an internal UnicodeDecodeError (exit 2)
    _patched_parquet(tmp_path / "d.parquet", b"\x18\x06target", b"\x18\x06targ\xff\xfe", times=2)
    (tmp_path / "suite.yaml").write_text(
        "subject: mock\ncases: [{format: hf, path: d.parquet, columns: {input: input, target: target}}]\n")
    proc = cli("validate", "suite.yaml", cwd=tmp_path)
    one_line_error(proc, "d.parquet", "not a readable dataset file")


# --- datasets as cases: an encoding whose decoder is quadratic ------------------------------------

def test_a_dataset_encoding_for_domain_names_is_refused_before_decoding(tmp_path):
    # Python's punycode decoder is quadratic: 400 KB took 10 s, this 2 MB file minutes (16 MiB: hours)
    (tmp_path / "d.csv").write_bytes(b"input,target\n" + b"x" * 1_000_000 + b"-" + b"b" * 1_000_000 + b",a\n")
    (tmp_path / "suite.yaml").write_text("subject: mock\ncases: [{format: inspect, path: d.csv, encoding: punycode}]\n")
    proc = cli("validate", "suite.yaml", cwd=tmp_path, timeout=60)
    one_line_error(proc, "suite.yaml:2", "cases.0.encoding", "punycode")


def test_promptfoo_file_vars_copied_into_every_test_are_bounded_in_all(tmp_path):
    import json

    # a 20 KB config: 200 tests naming one 10 MB image wrote 2.7 GB of cases.jsonl, holding 8 GB
    (tmp_path / "big.png").write_bytes(os.urandom(10_000_000))
    tests = [{"vars": {"img": "file://big.png", "i": i}} for i in range(200)]
    (tmp_path / "promptfooconfig.yaml").write_text(
        json.dumps({"prompts": ["{{img}} {{i}}"], "providers": ["echo"], "tests": tests}))
    proc = cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path, timeout=120)
    one_line_error(proc, "promptfooconfig.yaml", "field 'tests.", ".vars.img", "limits.max_total_bytes")
    assert not (tmp_path / "out").exists()
