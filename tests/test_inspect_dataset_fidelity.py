"""`cases: {format: inspect}` reads a dataset as Inspect AI reads it. Every expected value here was
taken from inspect_ai 0.3.285 loading the same bytes (json_dataset / csv_dataset, the
multiple_choice solver's prompt(), the choice scorer's _score_target, parse_answers), so a case
is the sample an Inspect eval of the file would run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from scoreboard.cases.datasets import load_dataset_records
from scoreboard.graders.transforms import parse_choice_answer
from tests.cli_inprocess import run_cli

SINGLE = ("Answer the following multiple choice question. The entire content of your response should be of the "
          "following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of {letters}.\n\n{q}\n\n{c}")


def load(tmp_path: Path, name: str, content: str | bytes, **spec) -> list[dict]:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, newline="")
    return load_dataset_records({"format": "inspect", "path": name, **spec}, tmp_path, tmp_path, 1 << 24, None)


def jsonl(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def grades(case: dict, outputs: list[str]) -> list[bool]:
    t = case["graders"][0]["transform"]["choice"]
    return [parse_choice_answer(o, t["choices"], t["multiple"]) == case["expected"] for o in outputs]


def test_csv_read_like_csv_dataset(tmp_path):
    """Comma-separated choices, a quoted CRLF cell read with a newline, JSON metadata, a blank row
    and a blank line skipped, extra columns ignored, ids as text."""
    text = ('id,input,target,choices,metadata,extra\r\n'
            '1,"What, is\r\nit?",B,"red, green, blue","{""a"": 1}",e1\r\n'
            '007,plain,hello,,{},e2\r\n\r\n'
            '3,sp,C,red green blue,{},e3\r\n'
            ' , , , , , \r\n')
    cases = load(tmp_path, "d.csv", text)
    assert [c["id"] for c in cases] == ["1", "007", "3"]
    assert cases[0]["input"] == SINGLE.format(letters="A,B,C", q="What, is\nit?", c="A) red\nB) green\nC) blue")
    assert cases[0]["expected"] == "B" and cases[0]["metadata"] == {"a": 1}
    assert cases[1] == {"id": "007", "input": "plain", "expected": "hello"}  # an empty choices cell: no choices
    assert cases[2]["expected"] == "C" and "C) blue" in cases[2]["input"]  # choices split at spaces


def test_json_values_as_inspect_reads_them(tmp_path):
    """Ids: a whole number, a position when missing; targets str()'d; chat content parts joined."""
    records = [
        {"input": "Say hi", "target": "hi", "unknown": "ignored"},
        {"input": "Two", "target": ["a", "b"], "id": 2.0},
        {"input": [{"role": "system", "content": "Be terse"},
                   {"role": "user", "content": [{"type": "text", "text": "p1"}, {"type": "text", "text": "p2"}]}],
         "target": 5},
        {"input": "no target", "id": True},
        {"input": "num", "target": 1.0, "files": {"a.txt": "hello"}},
    ]
    cases = load(tmp_path, "free.json", json.dumps(records[:3] + records[4:], indent=2))
    assert [c["id"] for c in cases] == ["1", "2", "3", "4"]
    assert cases[1]["graders"] == [{"one-of": {"values": ["a", "b"]}}]
    assert cases[2]["input"] == [{"role": "system", "content": "Be terse"}, {"role": "user", "content": "p1\np2"}]
    assert cases[2]["expected"] == "5" and cases[3]["expected"] == "1.0"
    assert cases[3]["metadata"] == {"inspect_files": {"a.txt": "hello"}}
    one = load(tmp_path, "one.json", json.dumps({"input": "single", "id": True}))
    assert one == [{"id": "1", "input": "single"}]  # one object is the only record; no target, no expected


def test_multiple_choice_targets_and_grading(tmp_path):
    cases = load(tmp_path, "mc.jsonl", jsonl(
        {"id": "q1", "input": "What is 2 + 2?", "choices": ["3", "4", "5"], "target": "B"},
        {"id": 7, "input": "Pick", "choices": [1, 2.5, True, "", "x"], "target": "AC"},
        {"input": "q?", "choices": ["a", "b", "c"], "target": "A, C"},
        {"input": "lower", "choices": ["a", "b", "c"], "target": "c"},
        {"input": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Q?"}],
         "choices": ["a", "b"], "target": "B"}))
    assert [c["id"] for c in cases] == ["q1", "7", "3", "4", "5"]
    assert "A) 1\nB) 2.5\nC) True\nD) x" in cases[1]["input"] and "one or more of A,B,C,D" in cases[1]["input"]
    assert [c["expected"] for c in cases] == ["B", "AC", "AC", "C", "B"]
    # Inspect's parse_answers + choice scorer on the same outputs
    outputs = ["ANSWER: B", "ANSWER: b", "ANSWER: A, C", "ANSWER: AC", "The answer is B", "I think\nANSWER: C.",
               "ANSWER: A and C", "ANSWER: B,", "", "answer: c", "ANSWER: C\nmore\nANSWER: A", "ANSWER: A, B, C"]
    assert grades(cases[0], outputs) == [True, True, False, False, False, False, False, True, False, False, False,
                                         False]
    assert grades(cases[1], outputs) == [False, False, True, True, False, False, True, False, False, False, False,
                                         False]
    assert cases[4]["input"][0] == {"role": "system", "content": "sys"}
    assert cases[4]["input"][1]["content"] == SINGLE.format(letters="A,B", q="Q?", c="A) a\nB) b")


def test_solver_options_and_numbered_choices(tmp_path):
    many = load(tmp_path, "many.jsonl", jsonl({"input": "big", "choices": [str(i) for i in range(30)], "target": "1"}))
    assert "Z) 25\n1) 26\n2) 27" in many[0]["input"] and many[0]["expected"] == "1"
    assert grades(many[0], ["ANSWER: 1", "ANSWER: A"]) == [True, False]
    flag = load(tmp_path, "f.jsonl", jsonl({"input": "q", "choices": ["a", "b", "c"], "target": "A"}),
                multiple_correct=True, cot=True)
    assert flag[0]["input"].startswith("Answer the following multiple choice question where multiple answers may be "
                                       "correct. The last line of your response")
    assert grades(flag[0], ["ANSWER: A", "ANSWER: A,B"]) == [True, False]
    own = load(tmp_path, "t.jsonl", jsonl({"input": "q", "choices": ["a", "b"], "target": "B"}),
               template="Q: {question}\n{choices}\nLetters {letters}")
    assert own[0]["input"] == "Q: q\nA) a\nB) b\nLetters A,B"


def test_seeded_shuffles_match_inspect(tmp_path):
    """random.Random(seed) over the samples, then over each sample's choices, then the limit;
    ids are positions after that (what Inspect's eval assigns)."""
    records = [{"input": f"q{i}", "choices": ["p", "q", "r", "s"], "target": "ABCD"[i % 4]} for i in range(8)]
    cases = load(tmp_path, "s.jsonl", jsonl(*records), shuffle=3, shuffle_choices=5, limit=6)
    got = [(c["id"], c["input"].split("\n\n", 1)[1], c["expected"]) for c in cases]
    assert got == [("1", "q0\n\nA) p\nB) q\nC) s\nD) r", "A"), ("2", "q5\n\nA) r\nB) s\nC) q\nD) p", "C"),
                   ("3", "q7\n\nA) q\nB) r\nC) s\nD) p", "C"), ("4", "q2\n\nA) s\nB) p\nC) q\nD) r", "D"),
                   ("5", "q1\n\nA) q\nB) p\nC) r\nD) s", "A"), ("6", "q6\n\nA) s\nB) r\nC) p\nD) q", "B")]
    plain = load(tmp_path, "p.jsonl", jsonl(*({"input": f"q{i}"} for i in range(5))), shuffle=True, seed=9)
    assert [c["input"] for c in plain] == ["q4", "q0", "q1", "q2", "q3"]


def test_reader_options(tmp_path):
    assert load(tmp_path, "t.tsv", "input\ttarget\nhello, world\tx\n")[0]["input"] == "hello, world"
    assert load(tmp_path, "s.csv", "input;target\nhello, world;x\n", delimiter=";")[0]["input"] == "hello, world"
    assert load(tmp_path, "l.csv", "input,target\ncaf\xe9,x\n".encode("latin-1"), encoding="latin-1")[0]["input"] \
        == "caf\xe9"
    assert load(tmp_path, "b.csv", "\ufeffinput,target\nq,x\n".encode())[0]["input"] == "q"
    nohead = load(tmp_path, "n.csv", "q1,a\nq2,b\n", fieldnames=["input", "target"])
    assert [(c["id"], c["expected"]) for c in nohead] == [("1", "a"), ("2", "b")]
    assert load(tmp_path, "q.csv", 'input,target\n"Hello" he said,x\n')[0]["input"] == "Hello he said"
    renamed = load(tmp_path, "fs.jsonl", jsonl({"question": "Q1", "answer": "A", "options": ["x", "y"], "qid": 10,
                                                "subject": "s", "level": 2}),
                   fields={"input": "question", "target": "answer", "choices": "options", "id": "qid",
                           "metadata": ["subject", "missing"]})
    assert renamed[0]["id"] == "10" and renamed[0]["metadata"] == {"subject": "s", "missing": None}
    auto = load(tmp_path, "a.jsonl", jsonl({"id": "x", "input": "a"}, {"input": "b"}), auto_id=True)
    assert [c["id"] for c in auto] == ["1", "2"]
    upper = load(tmp_path, "i.jsonl", jsonl({"input": "q", "target": ["Paris", "Lyon"]}), grader="includes")
    assert upper[0]["graders"] == [{"contains": {"mode": "any", "ignore_case": True}}]  # includes() ignores case
    kept = load(tmp_path, "sb.jsonl", jsonl({"input": "q", "sandbox": ["docker", "compose.yaml"], "setup": "make"}),
                unsupported="metadata")
    assert kept[0]["metadata"] == {"inspect_sandbox": ["docker", "compose.yaml"], "inspect_setup": "make"}


def scoreboard(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(args, cwd=cwd)


BAD = {
    "noinput.jsonl": (jsonl({"input": "ok"}, {"target": "x"}), {}, [":2", "field 'input'", "no input"]),
    "role.jsonl": (jsonl({"input": [{"role": "robot", "content": "x"}]}), {}, [":1", "field 'input.0.role'"]),
    "badline.jsonl": ('{"input": "a"}\n{"input": \n', {}, [":2", "invalid JSON"]),
    "blank.jsonl": ('{"input": "a"}\n\n{"input": "b"}\n', {}, [":2", "blank line"]),
    "fewer.csv": ("input,target,x\na,b\n", {}, [":2", "no value for: x"]),
    "more.csv": ("input,target\na,b,c\n", {}, [":2", "unexpected values: ['c']"]),
    "range.jsonl": (jsonl({"input": "q", "choices": ["a", "b", "c"], "target": "D"}), {},
                    [":1", "case '1'", "field 'target'", "beyond the 3 choices: D"]),
    "number.jsonl": (jsonl({"input": "q", "choices": ["a", "b", "c"], "target": 1}), {},
                     [":1", "field 'target'", "beyond the 3 choices: 1"]),
    "dup.jsonl": (jsonl({"input": "q"}, {"id": 1, "input": "r"}), {}, [":2", "duplicate sample id '1'", "line 1"]),
    "sandbox.jsonl": (jsonl({"input": "q", "sandbox": "docker"}), {}, [":1", "field 'sandbox'", "unsupported: metadata"]),
    "setup.csv": ("input,setup\nq,make\n", {}, [":2", "field 'setup'"]),
    "image.jsonl": (jsonl({"input": [{"role": "user", "content": [{"type": "image", "image": "x.png"}]}]}), {},
                    [":1", "field 'input.0.content.0'", "image content part"]),
    "meta.csv": ("input,metadata\nq,\n", {}, [":2", "field 'metadata'", "not JSON"]),
    "floatid.jsonl": (jsonl({"input": "q", "id": 1.5}), {}, [":1", "field 'id'", "whole number"]),
    "array.json": ('[\n  {"input": "a"},\n  {"target": "b"}\n]', {}, [":3", "field 'input'"]),
    "scalar.json": ("5", {}, ["scalar.json", "array of records"]),
    "data.txt": ("x", {}, ["no Inspect dataset reader for '.txt'"]),
    "shuffle.jsonl": (jsonl({"input": "q"}), {"shuffle": True}, ["suite.yaml", "field 'cases.shuffle'", "seed"]),
    "cols.jsonl": (jsonl({"input": "q"}), {"columns": {"input": "q"}}, ["field 'cases.columns'", "fields:"]),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_dataset_is_one_line_exit_1(tmp_path, name):
    content, spec, fragments = BAD[name]
    (tmp_path / name).write_text(content, newline="")
    entry = json.dumps({"format": "inspect", "path": name, **spec})
    (tmp_path / "suite.yaml").write_text(f"name: s\nsubject: mock\ncases: {entry}\n")
    done = scoreboard(tmp_path, "validate", "suite.yaml")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    if not fragments[0].startswith(("suite", "field", "no Inspect")):
        assert name in lines[0]


def test_hf_refuses_inspect_options(tmp_path):
    (tmp_path / "d.jsonl").write_text(jsonl({"input": "q"}))
    from scoreboard.errors import ConfigError

    with pytest.raises(ConfigError, match="auto_id is an option of format inspect"):
        load_dataset_records({"format": "hf", "path": "d.jsonl", "auto_id": True}, tmp_path, tmp_path, 1 << 20, None)
