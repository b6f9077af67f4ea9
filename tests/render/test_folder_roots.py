"""A folder output is rendered, and its index.html shown to a judge, only when the folder lies
inside the suite's root (its folder, or --root): an output may name any folder on the machine
(a model under test can be told to), and what is served goes to the judge's provider."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.render.detect import page_source
from scoreboard.render.page import UNREADABLE_FOLDER, RenderedPage
from scoreboard.suite.load import load_suite
from tests.servers.fake_provider import FakeProvider

chromium = pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")

SECRET = "<html><body><h1>private notes 4471</h1></body></html>"


def site(folder: Path, html: str = SECRET) -> Path:
    folder.mkdir(parents=True)
    (folder / "index.html").write_text(html, encoding="utf-8")
    return folder


def test_a_folder_outside_the_roots_is_not_a_page_and_says_why(tmp_path):
    inside = site(tmp_path / "suite" / "sites" / "a")
    outside = site(tmp_path / "elsewhere")
    root = tmp_path / "suite"
    source, why = page_source(str(inside), ["folder", "html"], (root,))
    assert why is None and source.kind == "folder" and source.folder == inside.resolve()
    source, why = page_source(str(outside), ["folder", "html"], (root,))
    assert source is None and "outside the suite's folder" in why and str(outside) in why
    # no roots: no folder is served
    assert page_source(str(inside), ["folder"], ())[0] is None
    # the root itself is inside
    assert page_source(str(inside), ["folder"], (inside,))[0].kind == "folder"


def test_a_link_inside_the_root_to_a_folder_outside_is_outside(tmp_path):
    outside = site(tmp_path / "elsewhere")
    root = tmp_path / "suite"
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    source, why = page_source(str(root / "link"), ["folder"], (root,))
    assert source is None and "outside the suite's folder" in why
    # a root that is itself reached through a link is compared as the folder it is
    (tmp_path / "alias").symlink_to(root, target_is_directory=True)
    site(root / "in")
    assert page_source(str(root / "in"), ["folder"], (tmp_path / "alias",))[0].kind == "folder"


def test_a_record_that_says_folder_is_read_only_inside_the_roots(tmp_path):
    """A report read back (pairwise judging, rescore) may claim a folder render of any path: its
    index.html is read for the judge only inside the roots given, else the fixed sentence."""
    outside = site(tmp_path / "elsewhere")
    record = {"kind": "folder", "shots": []}
    assert RenderedPage(record).judged_source(str(outside)) == UNREADABLE_FOLDER
    assert RenderedPage(record, None, (tmp_path / "suite",)).judged_source(str(outside)) == UNREADABLE_FOLDER
    assert RenderedPage(record, None, (tmp_path,)).judged_source(str(outside)) == SECRET


MAKER = '''
TARGETS = {targets!r}

def make(inp):
    return TARGETS[inp]
'''


def _judge(req: dict) -> str:
    props = req["response_format"]["json_schema"]["schema"]["properties"]
    if "winner" in props:
        return json.dumps({"winner": "tie", "explanation": "x"})
    return json.dumps({"scores": {d: 2 for d in props["scores"]["required"]}, "explanation": "x"})


def _suite(folder: Path, srv: FakeProvider, targets: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "maker.py").write_text(MAKER.format(targets=targets), encoding="utf-8")
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": k, "input": k}) + "\n" for k in targets))
    suite = {"name": "roots", "cases": "cases.jsonl", "output_dir": str(folder / "out"), "formats": ["json"],
             "judge": {"type": "openai", "base_url": srv.base_url + "/v1", "model": "judge"},
             "variants": {"a": {"subject": "python:maker:make"}, "b": {"subject": "python:maker:make"}},
             "graders": [{"pointwise": {}}], "pairwise": {}, "render": {"settle_ms": 0}}
    path = folder / "suite.json"
    path.write_text(json.dumps(suite), encoding="utf-8")
    return path


@chromium
def test_a_run_renders_and_judges_only_the_folders_inside_its_root(tmp_path):
    """The output naming a folder elsewhere on the machine is not rendered (the record says why)
    and its index.html reaches no judge; the folder inside the suite's folder is rendered and
    judged from its page. With --root above both, both are."""
    inside = site(tmp_path / "suite" / "sites" / "in", "<html><body><h1>Bakery</h1></body></html>")
    outside = site(tmp_path / "home" / "notes")
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": _judge})
        path = _suite(tmp_path / "suite", srv, {"in": str(inside), "out": str(outside)})
        outcome = run(load_suite(path, {}), RunOptions(progress=False))
        bodies = [json.dumps(r["json"]) for r in srv.requests_to("chat")]
        by_case = {a["case_id"]: a for a in outcome.report["attempts"]}
        assert by_case["in"]["render"]["kind"] == "folder" and by_case["in"]["render"]["shots"]
        assert by_case["out"]["render"]["kind"] is None and by_case["out"]["render"]["shots"] == []
        assert "outside the suite's folder" in by_case["out"]["render"]["error"]
        assert bodies and not any("private notes 4471" in b for b in bodies)
        assert any("<h1>Bakery</h1>" in b for b in bodies)

        srv.requests.clear()
        outcome = run(load_suite(path, {"root": str(tmp_path)}), RunOptions(progress=False))
        by_case = {a["case_id"]: a for a in outcome.report["attempts"]}
        assert by_case["out"]["render"]["kind"] == "folder" and by_case["out"]["render"]["shots"]
        assert any("private notes 4471" in json.dumps(r["json"]) for r in srv.requests_to("chat"))
