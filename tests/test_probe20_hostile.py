"""Hostile input files, round 6 (helper 20Q): special files, links and odd names given as inputs
and outputs. An --output that is a symlink to nothing, or a folder, is refused before a run
spends a call (it was seen as free by os.path.exists and failed the exclusive write at the end,
exit 2, leaving a run folder to resume). An --output where no file can be written (a read-only
disk, a file where its folder should be) is a one-line error naming it, not an internal error."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

PYTHON = sys.executable
ENV = {**os.environ, "SCOREBOARD_STORE": "none", "NO_COLOR": "1"}


def _ceiling() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1536 * 2**20, 1536 * 2**20))


def cli(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "scoreboard", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=_ceiling, stdin=subprocess.DEVNULL)


def cli_in(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`cli` in-process, for the commands whose refusal of an --output is the point, not the
    process (the resumes of a FIFO or /dev/zero stay processes, under the ceiling and a timeout)."""
    return run_cli(args, cwd, ENV)


def one_error(done: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 1 and len(lines) == 1, (done.returncode, done.stderr[-2000:])
    assert lines[0].startswith("scoreboard: error: ") and len(lines[0]) < 1200, lines[0][:2000]
    return lines[0]


SUITE = "name: s\ncases: c.jsonl\nvariants:\n  - name: v\n    subject: mock\ngraders: [exact]\n"


def _suite(tmp_path: Path) -> Path:
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "a", "input": "x", "expected": "x"}) + "\n")
    (tmp_path / "suite.yaml").write_text(SUITE)
    done = cli_in(tmp_path, "run", "suite.yaml", "--output", "base.json")
    assert done.returncode == 0, done.stderr[-2000:]
    return tmp_path / "base.json"


def _outputs(tmp_path: Path, report: Path, name: str) -> list[tuple[str, ...]]:
    (tmp_path / "in.csv").write_text("a,b\nx,y\n")
    return [
        ("run", "suite.yaml", "--output", name),
        ("rescore", str(report), "--output", name),
        ("verify", str(report), "--output", name),
        ("report", str(report), "--output", name),
        ("import", "csv", "--csv", "in.csv", "--map", "input=a,expected=b", "--output", name),
    ]


def test_an_output_that_is_a_symlink_to_nothing_is_refused_before_anything_runs(tmp_path):
    report = _suite(tmp_path)
    os.symlink("nowhere.json", tmp_path / "out.json")
    for args in _outputs(tmp_path, report, "out.json"):
        # before: `run` and `rescore` ran every attempt, then failed the exclusive write (exit 2)
        # and left out/attempts.jsonl, asking for a resume that could only fail the same way
        error = one_error(cli_in(tmp_path, *args))
        assert "out.json: is a symlink to a file that does not exist" in error, (args, error)
        assert not (tmp_path / "out").exists() and not (tmp_path / "nowhere.json").exists(), args
    assert os.readlink(tmp_path / "out.json") == "nowhere.json"


def test_a_sibling_report_name_that_is_a_dangling_symlink_is_refused_before_the_run(tmp_path):
    _suite(tmp_path)
    os.symlink("nowhere.html", tmp_path / "r.html")
    error = one_error(cli_in(tmp_path, "run", "suite.yaml", "--output", "r.json"))
    assert "r.html: is a symlink to a file that does not exist" in error
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "r").exists()


def test_an_output_that_is_a_folder_is_said_to_be_a_folder(tmp_path):
    report = _suite(tmp_path)
    (tmp_path / "out.json").mkdir()
    (tmp_path / "out.json" / "keep").write_text("keep")
    for args in _outputs(tmp_path, report, "out.json"):
        error = one_error(cli_in(tmp_path, *args))
        assert "out.json: is a folder (a new file is written, never into or over one)" in error, (args, error)
    assert (tmp_path / "out.json" / "keep").read_text() == "keep"


def test_an_output_that_is_a_symlink_to_a_file_leaves_that_file_alone(tmp_path):
    report = _suite(tmp_path)
    (tmp_path / "precious.txt").write_text("precious")
    os.symlink("precious.txt", tmp_path / "out.json")
    for args in _outputs(tmp_path, report, "out.json"):
        error = one_error(cli_in(tmp_path, *args))
        assert "out.json: refusing to overwrite an existing file" in error, (args, error)
    assert (tmp_path / "precious.txt").read_text() == "precious"


def _unwritable(tmp_path: Path, report: Path) -> list[tuple[str, ...]]:
    (tmp_path / "in.csv").write_text('a,b\nx,"{""k"": 1}"\n')
    name = "precious.txt/out.json"
    return [
        ("verify", str(report), "--output", name),
        ("report", str(report), "--output", name),
        ("compare", str(report), str(report), "--output", "precious.txt/out.html"),
        ("schema", "--output", name),
        ("plan", "suite.yaml", "--output", name),
        ("footprint", "c.jsonl", "--output", name),
        ("import", "csv", "--csv", "in.csv", "--map", "input=a,expected=b", "--output", "precious.txt/c.jsonl"),
    ]


def test_an_output_that_cannot_be_written_is_one_line_naming_it(tmp_path):
    report = _suite(tmp_path)
    (tmp_path / "precious.txt").write_text("precious")
    for args in _unwritable(tmp_path, report):
        # before: "scoreboard: internal error: NotADirectoryError: ... .tmp-xxxx.part", exit 2
        error = one_error(cli_in(tmp_path, *args))
        assert "flag --output, precious.txt/" in error and "cannot be written there (not a directory)" in error, \
            (args, error)
        assert ".part" not in error
    assert (tmp_path / "precious.txt").read_text() == "precious"


PROMPTFOO = 'prompts: ["hi {{x}}"]\nproviders: [echo]\ntests:\n  - vars: {x: 1}\n'


@pytest.mark.parametrize("make, name, said", [
    (lambda d: os.symlink("nowhere", d / "out"), "out",
     "out, field 'output': is a symlink to a folder that does not exist"),
    (lambda d: (d / "out").write_text("precious"), "out", "out, field 'output': is a file, not a folder"),
    (lambda d: (d / "precious").write_text("precious"), "precious/out",
     "precious/out, field 'output': cannot be written there (not a directory)"),
])
def test_an_importer_output_folder_that_cannot_be_made_is_one_line(tmp_path, make, name, said):
    (tmp_path / "promptfooconfig.yaml").write_text(PROMPTFOO)
    make(tmp_path)
    # before: "internal error: FileExistsError / NotADirectoryError", exit 2; a file was called
    # "the output folder exists and is not empty"
    error = one_error(cli_in(tmp_path, "import", "promptfoo", "promptfooconfig.yaml", "--output", name))
    assert f"flag --output, {said}" in error, error
    assert not (tmp_path / "nowhere").exists()
    for kept in ("out", "precious"):
        if (tmp_path / kept).is_file():
            assert (tmp_path / kept).read_text() == "precious"


def _swap_after_read(monkeypatch, name: str, path: Path, later: bytes) -> None:
    """Once `name` (reruns' reader) has read `path`, the file is replaced by other bytes."""
    import scoreboard.engine.reruns as reruns

    real = getattr(reruns, name)

    def reading_then_swapped(*args, **kwargs):
        result = real(*args, **kwargs)
        path.write_bytes(later)
        return result
    monkeypatch.setattr(reruns, name, reading_then_swapped)


def test_imported_comparisons_and_reviews_record_the_hash_of_the_bytes_imported(tmp_path, monkeypatch):
    import hashlib

    from scoreboard.cli.main import main

    report = _suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    doc = json.loads(report.read_text())
    case = doc["plan"]["cases"][0]
    entry = {"case_id": case["id"], "input_hash": case["input_hash"], "provider": "p", "model": "m",
             "model_version": "1", "settings": {}, "output": "x", "generated_at": "2026-01-01T00:00:00Z"}
    comparisons = tmp_path / "comparisons.json"
    comparisons.write_bytes(json.dumps({"entries": [entry]}).encode())
    imported = hashlib.sha256(comparisons.read_bytes()).hexdigest()
    # before: the file was read again to hash it, after its entries were read: a file changed (or
    # swapped for a FIFO, which hung the import) in between was hashed, not what was imported
    _swap_after_read(monkeypatch, "read_comparisons", comparisons, b"[]" + b" " * 100_000)
    assert main(["import", "comparisons", str(report), "comparisons.json", "--output", "with.json"]) == 0
    assert json.loads((tmp_path / "with.json").read_text())["run"]["imported"]["comparisons_sha256"] == imported

    attempt = doc["attempts"][0]
    review = {"case_id": case["id"], "input_hash": case["input_hash"], "output_hash": attempt["output_hash"],
              "reviewer_id": "r", "reviewer_kind": "human", "rubric_version": "1",
              "ratings": {"correctness": 5}, "verdict": True, "notes": "fine"}
    reviews = tmp_path / "reviews.json"
    reviews.write_bytes(json.dumps({"entries": [review]}).encode())
    imported = hashlib.sha256(reviews.read_bytes()).hexdigest()
    _swap_after_read(monkeypatch, "read_reviews", reviews, b"[]")
    assert main(["import", "reviews", str(report), "reviews.json", "--output", "reviewed.json"]) == 0
    assert json.loads((tmp_path / "reviewed.json").read_text())["run"]["reviews_imported"][-1]["sha256"] == imported


def test_hashing_a_report_swapped_for_a_fifo_refuses_it_without_waiting(tmp_path):
    import threading

    from scoreboard.hashing import file_sha256

    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    done = threading.Event()

    def release() -> None:  # before the fix the read waited for a writer: one comes, so the test ends
        while not done.is_set():
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                done.wait(0.05)

    writer = threading.Thread(target=release, daemon=True)
    writer.start()
    try:
        # store import / store verify hash the report after reading it: a FIFO swapped in
        # meanwhile hung `open` (no writer) and was then stored as the hash of nothing
        with pytest.raises(OSError, match="not a regular file"):
            file_sha256(fifo)
    finally:
        done.set()
        writer.join()


def test_a_fifo_among_a_judges_check_results_does_not_hold_up_the_run(tmp_path, monkeypatch):
    import signal

    from scoreboard.engine.instrument import instrument_status, results_folder
    from scoreboard.suite.check import instrument_id
    from scoreboard.suite.load import load_suite

    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "a", "input": "x", "expected": "x"}) + "\n")
    (tmp_path / "controls.jsonl").write_text(json.dumps({"id": "k", "input": "x", "output": "a good page"}) + "\n")
    (tmp_path / "suite.yaml").write_text(
        "name: j\ncases: c.jsonl\nvariants: [{name: v, subject: mock}]\n"
        'judge: {type: openai, model: m, base_url: "http://127.0.0.1:9/v1", api_key_required: false}\n'
        'graders: [{llm-judge: {rubric: "is it good"}}]\n'
        "instrument: {results: res, controls: controls.jsonl, degrade: [blank]}\n")
    suite = load_suite("suite.yaml")
    folder = results_folder(suite) / instrument_id(suite)
    folder.mkdir(parents=True)
    os.mkfifo(folder / "planted.json")
    (folder / "huge.json").write_bytes(b" " * (17 * 2**20))

    def stuck(*_):
        raise AssertionError("reading the check results waited on a FIFO")
    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(60)  # before: `run` waited forever at its start, before any attempt
    try:
        block = instrument_status(suite, False)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert block["status"] == "never-run"


@pytest.mark.parametrize("plant, said", [
    (lambda p: os.mkfifo(p), "run.json is a FIFO, not a regular file"),
    (lambda p: os.symlink("/dev/zero", p), "run.json is a device, not a regular file"),
])
def test_resume_of_a_folder_whose_run_json_is_no_regular_file_is_one_line(tmp_path, plant, said):
    (tmp_path / "r").mkdir()
    plant(tmp_path / "r" / "run.json")
    # before: --resume waited forever on the FIFO (and read /dev/zero until memory ran out)
    error = one_error(cli(tmp_path, "run", "--resume", "r", timeout=60))
    assert "flag --resume, " in error and said in error, error


@pytest.mark.parametrize("plant, said", [
    (lambda p: os.mkfifo(p), "the attempt log is a FIFO, not a regular file"),
    (lambda p: os.symlink("/dev/zero", p), "the attempt log is a device, not a regular file"),
])
def test_resume_of_a_run_whose_attempt_log_is_no_regular_file_is_one_line(tmp_path, plant, said):
    _suite(tmp_path)  # leaves the run folder base/ beside base.json
    for name in ("base.json", "base.md", "base.html"):
        (tmp_path / name).unlink(missing_ok=True)
    (tmp_path / "base" / "attempts.jsonl").unlink()
    plant(tmp_path / "base" / "attempts.jsonl")
    # before: "internal error: UnsupportedOperation: File or stream is not seekable" (a FIFO),
    # exit 2, and /dev/zero behind a link was read until the resume was killed
    error = one_error(cli(tmp_path, "run", "--resume", "base", timeout=60))
    assert "flag --resume, " in error and "attempts.jsonl: " + said in error, error
