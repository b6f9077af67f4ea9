"""Hostile input files, round 4 (helper 19C): what a repository's eval folder may hold before a
run. A TOML suite with a key of 100,000 dotted parts is refused at once (tomllib takes time
quadratic in a key's parts); case ids that only look alike (NFC and NFD spellings, a zero-width
character) are duplicates; a UTF-32 file is said to be UTF-32."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cli_inprocess import run_cli

PYTHON = sys.executable
ENV = {**os.environ, "SCOREBOARD_STORE": "none", "NO_COLOR": "1"}


def _ceiling() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1536 * 2**20, 1536 * 2**20))


def cli_process(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """A real process under a memory ceiling and a timeout: for inputs that once took minutes."""
    return subprocess.run([PYTHON, "-m", "scoreboard", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=_ceiling)


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(args, cwd=cwd, env=ENV)


def one_error(done: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 1 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("scoreboard: error: ") and len(lines[0]) < 1200, lines[0][:2000]
    return lines[0]


DEEP_KEY = ".".join(["a"] * 100_000)


@pytest.mark.parametrize("text, line", [
    (f"[{DEEP_KEY}]\nx = 1\n", 1),                       # a table header
    (f'name = "s"\n[[{DEEP_KEY}]]\n', 2),                 # an array of tables
    (f'name = "s"\n{DEEP_KEY} = 1\n', 2),                 # a dotted key/value
    ('name = "s"\nt = {' + ".".join(['"a"'] * 100_000) + " = 1}\n", 2),  # quoted, in an inline table
])
def test_a_toml_key_of_a_hundred_thousand_parts_is_refused_at_once(tmp_path, text, line):
    (tmp_path / "suite.toml").write_text(text)
    # before: tomllib spent minutes on the 200 KB file (its time is quadratic in a key's parts)
    error = one_error(cli_process(tmp_path, "validate", "suite.toml", timeout=30))
    assert f"suite.toml:{line}: invalid TOML: a key of more than 64 dotted parts (limits.max_depth)" in error


def test_toml_keys_of_dotted_texts_and_quoted_dots_still_read():
    from scoreboard.safeparse import parse_toml

    text = ('name = "a.b.c"\nnote = "' + ".".join(["w"] * 200) + '"\n[x."y.z".w]\nv = [1.5, 2.5]\n'
            'i = {p.q = 1}\n')
    assert parse_toml(text) == {"name": "a.b.c", "note": ".".join(["w"] * 200),
                                "x": {"y.z": {"w": {"v": [1.5, 2.5], "i": {"p": {"q": 1}}}}}}


NFC, NFD, ZW = "caf\u00e9", "cafe\u0301", "a\u200bb"


@pytest.mark.parametrize("first, second, why", [
    (NFC, NFD, "how their accents are encoded (Unicode NFC and NFD)"),
    (NFD, NFC, "how their accents are encoded (Unicode NFC and NFD)"),
    ("ab", ZW, "invisible characters (U+200B)"),
    ("ab", "a\u2060b\ufe0f", "invisible characters (U+2060, U+FE0F)"),
    ("ab", "\u202eab", "invisible characters (U+202E)"),
])
def test_case_ids_that_only_look_alike_are_duplicates(tmp_path, first, second, why):
    rows = [{"id": first, "input": "x", "expected": "x"}, {"id": second, "input": "y", "expected": "y"}]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    error = one_error(cli(tmp_path, "validate", "c.jsonl"))
    assert error.startswith("scoreboard: error: c.jsonl:2, case ") and "field 'id': duplicate case id: " in error
    assert f"looks the same as {ascii(first)} (line 1), differing only in {why}" in error
    (tmp_path / "c.yaml").write_text("cases:\n" + "".join(f"  - {json.dumps(r)}\n" for r in rows))
    error = one_error(cli(tmp_path, "validate", "c.yaml"))
    assert error.startswith("scoreboard: error: c.yaml:3, case ") and f"{ascii(first)} (line 2)" in error


def test_a_conversation_turn_id_looking_like_a_case_id_is_a_duplicate(tmp_path):
    rows = [{"id": f"c/{NFC}", "input": "x", "expected": "x"},
            {"id": "c", "conversation": {"topic": "t"}, "turns": [{"id": NFD, "question": "q"}]}]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    error = one_error(cli(tmp_path, "validate", "c.jsonl"))
    assert "c.jsonl:2, case 'c', field 'turns.0.id': duplicate case id: looks the same as 'c/caf\\xe9'" in error


def test_distinct_ids_with_accents_and_joined_emoji_still_load(tmp_path):
    rows = [{"id": i, "input": "x", "expected": "x"} for i in (NFC, "cafe", "\U0001f468\u200d\U0001f469", "ab")]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = cli(tmp_path, "validate", "c.jsonl")
    assert done.returncode == 0 and "4 cases" in done.stdout, done.stderr


def test_gold_documents_whose_names_only_look_alike_are_duplicates(tmp_path):
    gold = tmp_path / "gold"
    gold.mkdir()
    for name in (NFC, NFD):  # two files to the filesystem, one name to whoever reads
        (gold / f"{name}.txt").write_text("text")
        (gold / f"{name}.gold.json").write_text('{"fields": {"a": "1"}}')
    error = one_error(cli(tmp_path, "validate", "gold"))
    assert "field 'document_id': duplicate case id: looks the same as " in error and "NFC and NFD" in error


def test_a_csv_import_of_ids_that_only_look_alike_is_refused(tmp_path):
    (tmp_path / "t.csv").write_text(f"id,question,answer\nab,q,a\n{ZW},q,a\n", encoding="utf-8")
    error = one_error(cli(tmp_path, "import", "csv", "--csv", "t.csv", "--map", "input=question,expected=answer,id=id",
                          "--grader", "exact", "--output", "o.jsonl"))
    assert "t.csv: row 3, column 'id': duplicate case id: looks the same as 'ab' (row 2), differing only in " \
        "invisible characters (U+200B)" in error
    assert not (tmp_path / "o.jsonl").exists()


def test_task_folders_whose_ids_only_look_alike_are_refused(tmp_path):
    example = Path(__file__).resolve().parents[1] / "examples" / "agent-task" / "tasks" / "wishlist"
    for folder, task_id in (("one", "ab"), ("two", ZW)):
        shutil.copytree(example, tmp_path / "tasks" / folder)
        spec = yaml.safe_load((tmp_path / "tasks" / folder / "task.yaml").read_text())
        (tmp_path / "tasks" / folder / "task.yaml").write_text(yaml.safe_dump({**spec, "id": task_id}))
    (tmp_path / "suite.yaml").write_text("name: t\ncases: tasks\nsubject: {type: command, argv: [python3, x.py]}\n")
    error = one_error(cli(tmp_path, "validate", "suite.yaml"))
    assert "tasks/two/task.yaml:30, case 'a\\u200bb', field 'id': duplicate task id: looks the same as 'ab' " \
        "(in tasks/one/task.yaml), differing only in invisible characters (U+200B)" in error


@pytest.mark.parametrize("encoding", ["utf-32", "utf-32-le"])
def test_a_case_file_in_utf32_is_said_to_be_utf32(tmp_path, encoding):
    line = json.dumps({"id": "a", "input": "h\u00e9llo \u4e16\u754c", "expected": "x"}, ensure_ascii=False)
    (tmp_path / "c.jsonl").write_bytes((line + "\n").encode(encoding))
    error = one_error(cli(tmp_path, "validate", "c.jsonl"))
    assert error.startswith("scoreboard: error: c.jsonl:1: not valid UTF-8 (byte ") and \
        error.endswith("the file is UTF-32; save it as UTF-8")  # was: "the file is UTF-16"
    (tmp_path / "c.jsonl").write_bytes((line + "\n").encode("utf-16"))
    assert one_error(cli(tmp_path, "validate", "c.jsonl")).endswith("the file is UTF-16; save it as UTF-8")


SWAP = r"""
import os, sys
from pathlib import Path
import scoreboard.tasks.load as load
from scoreboard.errors import ConfigError

task, how = Path(sys.argv[1]), sys.argv[2]
plain = load._utf8

def swapping(name):  # called for each entry after the folder was listed, before the file is opened
    target = task / "checks" / name
    if name == "wishlist.py" and not target.is_symlink() and target.is_file():
        target.unlink()
        if how == "fifo":
            os.mkfifo(target)
        else:
            target.symlink_to(task.parent.parent / "secret.txt")
    return plain(name)

load._utf8 = swapping
try:
    load.load_task_folders(task)
except ConfigError as exc:
    print(exc)
else:
    print("loaded")
"""


@pytest.mark.parametrize("how", ["fifo", "link"])
def test_a_task_file_swapped_for_a_fifo_or_link_while_the_task_loads_is_refused(tmp_path, how):
    example = Path(__file__).resolve().parents[1] / "examples" / "agent-task" / "tasks" / "wishlist"
    task = tmp_path / "tasks" / "wishlist"
    shutil.copytree(example, task)
    (tmp_path / "secret.txt").write_text("API_KEY=s3cret\n")
    # before: open() waited forever on the FIFO, or hashed the file outside through the link
    done = subprocess.run([PYTHON, "-c", SWAP, str(task), how], capture_output=True, text=True, timeout=60,
                          env=ENV, cwd=tmp_path)
    why = "no longer a regular file" if how == "fifo" else "Too many levels of symbolic links"
    assert done.stdout.strip().endswith("wishlist/task.yaml, case 'wishlist', field 'checks/': checks/wishlist.py "
                                        f"changed while the task loaded ({why})"), done


def test_a_skill_reference_swapped_for_a_link_after_its_check_is_not_read(tmp_path, monkeypatch):
    from scoreboard.agents import footprint
    from scoreboard.errors import ConfigError

    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("Read [the notes](notes.md) first.\n")
    (skill / "notes.md").write_text("short\n")
    (tmp_path / "secret.txt").write_text("API_KEY=" + "s" * 5000 + "\n")
    checked = footprint.references

    def then_swapped(text, base):  # the reference checked inside the folder, then made a link to outside
        found = checked(text, base)
        (skill / "notes.md").unlink()
        (skill / "notes.md").symlink_to(tmp_path / "secret.txt")
        return found

    monkeypatch.setattr(footprint, "references", then_swapped)
    setup = footprint.Setup("s", ["skill"])
    # before: the secret was read through the link and measured (5,009 bytes) as the skill's reference
    with pytest.raises(ConfigError) as caught:
        footprint.measure_instructions(skill, "skill", footprint.token_counter(approximate=True), setup)
    assert str(caught.value) == f"skill/notes.md: climbs out of the root {skill.resolve()}"
    assert all(item.bytes < 1000 for item in setup.items)
