"""Probes of conversations, case files and datasets as a user porting real suites meets them:
a turn whose reply exists is carried to the next turn even when a grader of it broke, case
ids that only collide once conversations are expanded are refused by `validate` as by `run`,
..."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from scoreboard.record.verify import verify_report
from tests.cli_inprocess import run_cli


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(args, cwd=cwd)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def conv(cid: str, turn_ids: list[str]) -> dict:
    return {"id": cid, "conversation": {"topic": "survey"},
            "turns": [{"id": t, "question": f"Question {t}?"} for t in turn_ids]}


# ---- a grader that breaks on one turn does not stop the conversation


APP = "def answer(text, *rest):\n    return 'reply: ' + str(text)[-30:]\n"
CHECKS = ("def boom(output, context):\n"
          "    if 'Question t2?' in output:\n"
          "        raise RuntimeError('grader broke')\n"
          "    return True\n")


def _grader_error_suite(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "checks.py").write_text(CHECKS)
    write_jsonl(tmp_path / "conv.jsonl", [conv("c", ["t1", "t2", "t3"])])
    (tmp_path / "suite.json").write_text(json.dumps({
        "name": "s", "cases": "conv.jsonl", "subject": "python:app:answer",
        "graders": ["python-file:checks.py:boom"], "output_dir": "out", "formats": ["json"]}))
    return tmp_path / "suite.json"


def test_a_grader_error_on_turn_2_still_sends_turn_3_with_the_reply(tmp_path):
    _grader_error_suite(tmp_path)
    done = cli(tmp_path, "run", "suite.json", "--no-progress")
    assert done.returncode == 2, done.stderr  # the grader's error is an error of the run
    (path,) = (tmp_path / "out" / "s").glob("*.json")
    report = json.loads(path.read_text())
    by_id = {a["case_id"]: a for a in report["attempts"]}
    assert by_id["c/t2"]["status"] == "error" and "grader broke" in by_id["c/t2"]["error"]
    # the subject did reply to turn 2: that reply is carried, and turn 3 is sent and graded
    assert by_id["c/t2"]["output"]["text"].startswith("reply: ")
    assert by_id["c/t3"]["status"] == "passed", by_id["c/t3"]
    assert "chain_input_hash" in by_id["c/t3"]
    assert verify_report(report).ok, verify_report(report).mismatches


def _chain_report(statuses: list[tuple[str, bool]]) -> tuple[list[dict], list[tuple[int, dict]]]:
    """Plan entries and attempts of one conversation whose turn k has status and (reply or not)."""
    from scoreboard.cases.conversation import turn_messages
    from scoreboard.hashing import sha256_json

    ids = [f"t{k + 1}" for k in range(len(statuses))]
    shared = {"topic": "survey", "style": "balanced"}
    plan = [{"id": f"c/{t}", "conversation": "c", "turn_index": k,
             "input": {"conversation": "c", "turn": t, "index": k, "shared": shared, "question": f"Q{t}?"}}
            for k, t in enumerate(ids)]
    conversation = {"id": "c", "shared": shared, "turns": [{"id": t, "question": f"Q{t}?"} for t in ids]}
    attempts, replies = [], []
    for k, (status, replied) in enumerate(statuses):
        a = {"case_id": f"c/{ids[k]}", "variant": "v", "run": 0, "status": status,
             "output": {"text": f"reply {k}"} if replied else None}
        if status not in ("not-run", "interrupted"):
            a["turn"] = {"conversation": "c", "index": k, "id": ids[k]}
            a["chain_input_hash"] = sha256_json(turn_messages(conversation, k, replies))
        replies.append(f"reply {k}" if replied else "")
        attempts.append((k, a))
    return plan, attempts


def test_verify_accepts_a_turn_sent_after_a_grader_error_and_refuses_one_after_a_subject_error():
    from scoreboard.record.chains import verify_conversation

    plan, attempts = _chain_report([("passed", True), ("error", True), ("passed", True)])
    assert verify_conversation(plan, attempts, completed=True) == []
    plan, attempts = _chain_report([("passed", True), ("error", False), ("passed", True)])
    (found,) = verify_conversation(plan, attempts, completed=True)
    assert "ran after turn 't2'" in found["what"]
    # a report of an older run, which stopped after a grader's error, still verifies
    plan, attempts = _chain_report([("passed", True), ("error", True), ("not-run", False)])
    assert verify_conversation(plan, attempts, completed=True) == []
    # ... while a turn left out after a turn that passed is still found
    plan, attempts = _chain_report([("passed", True), ("failed", True), ("not-run", False)])
    (found,) = verify_conversation(plan, attempts, completed=True)
    assert "no earlier turn failed" in found["what"]


# ---- case ids that collide only once conversations are expanded


def test_validate_refuses_turn_case_ids_that_collide_as_run_does(tmp_path):
    write_jsonl(tmp_path / "c.jsonl", [{"id": "a/b/c", "input": "hi", "expected": "hi"},
                                       conv("a/b", ["c"]), conv("a", ["b/c", "d"])])
    for args in (["validate", "c.jsonl"], ["run", "--cases", "c.jsonl", "--subject", "mock", "--no-progress"]):
        done = cli(tmp_path, *args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert "c.jsonl:2, case 'a/b', field 'turns.0.id'" in done.stderr and "'a/b/c'" in done.stderr
        assert "OK" not in done.stdout
    assert not (tmp_path / "eval-results").exists()
    # in a file of its own, every collision is named
    write_jsonl(tmp_path / "d.jsonl", [conv("a/b", ["c"]), conv("a", ["x", "b/c"])])
    done = cli(tmp_path, "validate", "d.jsonl")
    assert done.returncode == 1
    assert done.stderr.strip() == ("scoreboard: error: d.jsonl:2, case 'a', field 'turns.1.id': turn 'b/c' makes "
                                   "the case id 'a/b/c', a duplicate case id (first on line 1)")


# ---- hostile dataset files


def _ipc(path: Path, table, compression: str | None, feather: bool = False) -> Path:
    import pyarrow as pa
    import pyarrow.feather as pf

    if feather:
        pf.write_feather(table, str(path), compression=compression or "uncompressed")
    else:
        with pa.OSFile(str(path), "wb") as sink, \
                pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=compression)) as w:
            w.write_table(table)
    return path


def _hf_suite(tmp_path: Path, name: str, limits: dict | None = None) -> Path:
    suite = {"name": "s", "cases": [{"format": "hf", "path": name, "columns": {"input": "q", "target": "a"}}],
             "subject": "mock", "output_dir": "out", **({"limits": limits} if limits else {})}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    return tmp_path / "suite.json"


def test_a_compressed_arrow_batch_is_sized_from_its_headers_before_it_is_decompressed(tmp_path):
    import pyarrow as pa

    # 8 rows of 4 MB each: 32 MB decoded from a file of a few KB (zstd)
    bomb = pa.table({"q": pa.array(["a" * 4_000_000] * 8, type=pa.large_string()), "a": ["x"] * 8})
    for compression in ("zstd", "lz4"):
        path = _ipc(tmp_path / f"bomb-{compression}.arrow", bomb, compression)
        assert path.stat().st_size < 1_000_000
        _hf_suite(tmp_path, path.name, {"max_total_bytes": 2_000_000})
        done = cli(tmp_path, "validate", "suite.json")
        assert done.returncode == 1
        found = re.fullmatch(rf"scoreboard: error: bomb-{compression}\.arrow: the batches unpack to ([\d,]+) "
                             r"bytes, more than 2,000,000 \(limits\.max_total_bytes\)", done.stderr.strip())
        assert found and bomb.nbytes <= int(found[1].replace(",", "")) < bomb.nbytes + 1000, done.stderr
    # an ordinary compressed Feather file (its default is LZ4) and an uncompressed stream still load
    table = pa.table({"q": [f"question {i}" for i in range(50)], "a": ["yes"] * 50})
    for name, compression, feather in (("ok.feather", "lz4", True), ("ok.arrow", None, False)):
        _ipc(tmp_path / name, table, compression, feather)
        _hf_suite(tmp_path, name)
        done = cli(tmp_path, "validate", "suite.json")
        assert done.returncode == 0 and "50 cases" in done.stdout, done.stderr


def test_arrow_headers_that_lie_about_their_buffers_are_an_error_not_a_crash(tmp_path):
    import pyarrow as pa

    from scoreboard.cases.arrow_ipc import Malformed, decoded_size

    table = pa.table({"q": ["a question"] * 4, "a": ["x"] * 4})
    data = _ipc(tmp_path / "t.arrow", table, "zstd").read_bytes()
    assert table.nbytes <= decoded_size(data) <= table.nbytes + 64  # its buffers, padding included
    # every byte of the file's first 600 flipped in turn: a refusal or a size, never another exception
    for at in range(min(600, len(data))):
        broken = bytearray(data)
        broken[at] ^= 0xFF
        try:
            assert decoded_size(bytes(broken)) >= 0
        except (Malformed, pa.ArrowException, OSError):  # what the loader turns into its one-line error
            pass


# ---- rescore grades a recorded reply again when its grader broke


FIXED = "def boom(output, context):\n    return 'reply' in output\n"


def test_rescore_grades_again_a_reply_whose_grader_broke_and_the_turns_after_it_stay(tmp_path):
    _grader_error_suite(tmp_path)
    write_jsonl(tmp_path / "plain.jsonl", [{"id": "p", "input": "Question t2?"}])
    suite = json.loads((tmp_path / "suite.json").read_text())
    (tmp_path / "suite.json").write_text(json.dumps({**suite, "cases": ["conv.jsonl", "plain.jsonl"]}))
    assert cli(tmp_path, "run", "suite.json", "--no-progress").returncode == 2
    (source,) = (tmp_path / "out" / "s").glob("*.json")
    (tmp_path / "checks.py").write_text(FIXED)  # the grader is fixed; the outputs are what they were
    (tmp_path / "fixed.json").write_text(json.dumps(["python-file:checks.py:boom"]))
    done = cli(tmp_path, "rescore", str(source), "--graders", "fixed.json", "--output", "r.json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    original = {a["case_id"]: a for a in json.loads(source.read_text())["attempts"]}
    for a in report["attempts"]:
        assert a["status"] == "passed" and a["error"] is None, a
        assert a["output"] == original[a["case_id"]]["output"]
    assert verify_report(report).ok


# ---- a turn that could never be sent is an error when the file loads


def test_a_turn_over_a_history_limit_before_any_reply_is_refused_at_load(tmp_path):
    big = {"id": "big", "conversation": {"topic": "t", "documents": ["d" * 60_000]},
           "turns": [{"id": "t1", "question": "Q?"}]}
    write_jsonl(tmp_path / "c.jsonl", [big, conv("fits", ["t1", "t2"])])
    done = cli(tmp_path, "validate", "c.jsonl")
    assert done.returncode == 1 and "OK" not in done.stdout
    assert done.stderr.strip() == (
        "scoreboard: error: c.jsonl:1, case 'big', field 'conversation': turn 't1' could never be sent: its topic, "
        "notes, documents and question make 60033 characters before any reply, over max_conversation_chars 50000 "
        "(limits.conversation)")
    # a suite's own limits: the fifth message (turn 3's question) is past max_messages 4
    write_jsonl(tmp_path / "c.jsonl", [conv("three", ["t1", "t2", "t3"])])
    (tmp_path / "suite.json").write_text(json.dumps({"name": "s", "cases": "c.jsonl", "subject": "mock",
                                                     "limits": {"conversation": {"max_messages": 4}}}))
    done = cli(tmp_path, "validate", "suite.json")
    assert done.returncode == 1
    assert "c.jsonl:1, case 'three', field 'turns.2': turn 't3' could never be sent: its history holds 5 messages, " \
           "over max_messages 4" in done.stderr
    write_jsonl(tmp_path / "c.jsonl", [conv("two", ["t1", "t2"])])
    assert cli(tmp_path, "validate", "suite.json").returncode == 0


def test_a_conversation_seed_that_is_not_a_whole_number_is_refused_not_coerced(tmp_path):
    records = [conv("s1", ["t1"]), conv("s2", ["t1"]), conv("s3", ["t1"])]
    for record, seed in zip(records, (True, "7", 7)):
        record["conversation"]["seed"] = seed
    write_jsonl(tmp_path / "c.jsonl", records)
    done = cli(tmp_path, "validate", "c.jsonl")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "scoreboard: error: c.jsonl:1, case 's1', field 'conversation.seed': must be a whole number (got True)",
        "scoreboard: error: c.jsonl:2, case 's2', field 'conversation.seed': must be a whole number (got '7')"]


# ---- a .json file of one case per line


def test_a_json_file_of_one_case_per_line_loads_whatever_its_cases_say(tmp_path):
    # the word "cases" (a tag, a category, an input) in the first lines made it a broken document
    records = [{"id": "a", "input": 'quote "cases"', "expected": "y", "tags": ["cases"]},
               {"id": "b", "input": "x", "expected": "y", "category": "cases"}]
    write_jsonl(tmp_path / "c.json", records)
    done = cli(tmp_path, "validate", "c.json")
    assert done.returncode == 0 and "OK: 2 cases in c.json" in done.stdout, done.stderr
    # a document over several lines is still read as one, and its errors are the document's
    (tmp_path / "d.json").write_text('{"cases": [\n  {"id": "a", "input": "x", "expected": "y"},\n'
                                     '  {"id": "b", "input": 3}\n]}\n')
    done = cli(tmp_path, "validate", "d.json")
    assert done.returncode == 1
    assert done.stderr.strip() == ("scoreboard: error: d.json:3, case 'b', field 'input': must be text (a string) "
                                   "or a list (got 3)")
    (tmp_path / "e.json").write_text('{"cases": [\n  {"id": "a", "input": "x"},\n  {"id": "b" "input": 3}\n]}\n')
    done = cli(tmp_path, "validate", "e.json")
    assert done.returncode == 1 and done.stderr.startswith("scoreboard: error: e.json:3: invalid JSON"), done.stderr


def test_chat_style_turns_get_the_right_form_and_every_problem_of_a_turn_is_named(tmp_path):
    write_jsonl(tmp_path / "c.jsonl", [
        {"id": "chat", "turns": [{"role": "user", "content": "hi"}, {"role": "user", "content": "again"}]},
        {"id": "typos", "conversation": {"topic": "x"},
         "turns": [{"id": "t1", "questoin": "q", "expect": "y"}]}])
    done = cli(tmp_path, "validate", "c.jsonl")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "scoreboard: error: c.jsonl:1, case 'chat', field 'turns.0': a turn is {id, question, expected?, graders?} "
        "and the subject's replies form the history; chat messages {role, content} are a case's 'input' (a list "
        "of them)",
        "scoreboard: error: c.jsonl:2, case 'typos', field 'turns.0.question': required field is missing",
        "scoreboard: error: c.jsonl:2, case 'typos', field 'turns.0.questoin': unknown field (did you mean "
        "'question'?)",
        "scoreboard: error: c.jsonl:2, case 'typos', field 'turns.0.expect': unknown field (did you mean "
        "'expected'?)"]
