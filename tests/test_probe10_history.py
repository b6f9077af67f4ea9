"""History and the viewer probed from the outside: store files named oddly, stores written by
several processes, hostile names in the viewer, reports gone from under the store."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = """name: demo
cases: cases.jsonl
graders: [{exact: {}}]
variants:
  v1:
    subject: {type: python, function: "subj:answer", model_free: true}
"""


def sb(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env={**os.environ, **env}, check=False)


def project(folder: Path, cases: int = 6) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "subj.py").write_text("def answer(input):\n    return 'yes' if 'a' in input else 'no'\n")
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i:02d}", "input": f"q{i} {'a' if i % 3 else 'b'}",
                                                            "expected": "yes"}) + "\n" for i in range(cases)))
    (folder / "suite.yaml").write_text(SUITE)
    return folder


@pytest.mark.parametrize("name", ["file:h.sqlite", ":memory:"])
def test_a_store_named_like_a_sqlite_uri_is_the_file_it_names(tmp_path, name):
    folder = project(tmp_path / "p")
    done = sb("run", "suite.yaml", "--no-progress", "--store", name, cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    store = folder / name
    assert store.stat().st_size > 0, "the run wrote somewhere else"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert not (folder / "h.sqlite").exists()
    listed = sb("history", "--store", name, "--json", cwd=folder)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)["runs"]) == 1
