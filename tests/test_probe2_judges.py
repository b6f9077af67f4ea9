"""Probing model-graded and visual evaluation from the outside (round 2): a judge on a loopback
fake provider, pages rendered in real headless Chromium (Debian's). What a blind judge is shown,
how the judge figures are worded, and what they leave out."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.suite.load import load_suite
from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

chromium = pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")


def _schema(req: dict) -> dict:
    return req["response_format"]["json_schema"]["schema"]


def scripted_judge(req: dict) -> str:
    """Answers every judgment the same way: pointwise 2s, winner A, score at the top of the scale."""
    props = _schema(req)["properties"]
    if "winner" in props:
        return json.dumps({"winner": "A", "explanation": "x"})
    if "scores" in props:
        return json.dumps({"scores": {d: 2 for d in props["scores"]["required"]}, "explanation": "x"})
    if "verdict" in props:
        return json.dumps({"verdict": True, "explanation": "x"})
    return json.dumps({"score": props["score"]["maximum"], "explanation": "x"})


@pytest.fixture
def judge_srv():
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": scripted_judge})
        yield srv


def write_suite(tmp_path: Path, judge: FakeProvider, module: str, code: str, variants: dict, cases: list[dict],
                **settings) -> Path:
    (tmp_path / f"{module}.py").write_text(code, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = {"name": "probe", "cases": "cases.jsonl", "output_dir": str(tmp_path / "out"),
             "formats": ["json", "md"], "concurrency": 2, "timeout_ms": 30_000,
             "judge": {"type": "openai", "base_url": judge.base_url + "/v1", "model": "judge"},
             "variants": {name: {"subject": f"python:{module}:{fn}"} for name, fn in variants.items()}, **settings}
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite), encoding="utf-8")
    return path


def run_suite(path: Path, **options):
    return run(load_suite(path, {}), RunOptions(progress=False, **options))


# ------------------------------------------------------------------------- blind judging

FOLDER_MAKER = '''
import os
HERE = os.path.dirname(os.path.abspath(__file__))

def _site(variant, inp, words):
    folder = os.path.join(HERE, "sites", variant, inp.lower())
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "index.html"), "w") as f:
        f.write("<!doctype html><html><body><h1>%s</h1><p>%s</p></body></html>" % (inp, "words " * words))
    return folder

def fancy(inp):
    return _site("gpt-fancy", inp, 40)

def plain(inp):
    return _site("claude-plain", inp, 1)
'''


@chromium
def test_a_folder_output_reaches_a_blind_judge_as_its_page_never_its_path(judge_srv, tmp_path):
    """The output of a folder page is its path, which names the variant (or the model, or the
    run): the judge was shown it as the answer's "source", pointwise and pairwise alike. It is
    shown the index.html the page was rendered from instead."""
    path = write_suite(tmp_path, judge_srv, "folder_sites_a", FOLDER_MAKER,
                       {"gpt-fancy": "fancy", "claude-plain": "plain"},
                       [{"id": "c1", "input": "Bakery"}, {"id": "c2", "input": "Gym"}],
                       graders=[{"pointwise": {"images": True}}, {"llm-judge": {
                           "images": True, "prompt": "Is this page good?\n{{ output }}"}}],
                       pairwise={"images": True}, render={"settle_ms": 0})
    outcome = run_suite(path)
    bodies = [json.dumps(r["json"]) for r in judge_srv.requests_to("chat")]
    assert len(bodies) == 2 * 2 * 2 + 2 * 2  # two graders on four attempts, two cases asked in both orders
    for body in bodies:
        assert "gpt-fancy" not in body and "claude-plain" not in body and str(tmp_path) not in body
    assert all("<h1>Bakery</h1>" in b or "<h1>Gym</h1>" in b for b in bodies)
    assert all(a["render"]["kind"] == "folder" for a in outcome.report["attempts"])


# ------------------------------------------------------------------------- how the figures are said

def _cli(args: list[str], cwd: Path):
    return run_cli(args, cwd, dict(os.environ))


GOOD_PAGE = ("<!doctype html><html><head><style>h1{color:#c33}</style></head><body><h1>{name}</h1>"
             "<p>Open every day from seven, fresh bread and coffee.</p></body></html>")


def style_judge(req: dict) -> str:
    """Pointwise: 3 for a styled page, 1 for an unstyled one; a blank page gets no usable answer."""
    text = req["messages"][-1]["content"]
    answer = text.split("ANSWER:\n", 1)[1]
    if "<body></body>" in answer:
        return "I cannot judge an empty page."
    dims = _schema(req)["properties"]["scores"]["required"]
    return json.dumps({"scores": {d: 3 if "<style>" in answer else 1 for d in dims}, "explanation": "x"})


def test_the_check_verdict_says_its_interval_method_caveat_and_pairs_not_judged(judge_srv, tmp_path):
    """The check's lines dropped what its record holds: the interval's method, the small sample,
    the note that pairs of one control are not independent (the README says the report says so),
    and the pairs left unjudged by judge failures (here half of them: they count as not above, so
    the check fails)."""
    judge_srv.set_default("chat", {"reply": style_judge})
    (tmp_path / "controls").mkdir()
    controls = []
    for name in ("bakery", "cafe"):
        (tmp_path / "controls" / f"{name}.html").write_text(GOOD_PAGE.replace("{name}", name), encoding="utf-8")
        controls.append({"id": name, "input": f"A page for a {name}", "output": f"@controls/{name}.html"})
    (tmp_path / "controls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in controls), encoding="utf-8")
    path = write_suite(tmp_path, judge_srv, "unused_maker", "def f(x):\n    return x\n", {"only": "f"},
                       [{"id": "c1", "input": "x"}], graders=[{"pointwise": {}}],
                       instrument={"controls": "controls.jsonl", "degrade": ["blank", "unstyled"], "repeats": 2})
    done = _cli(["run", path.name, "--stage", "check", "--no-progress"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr  # the check failed: a failed gate on the judge
    (md,) = (tmp_path / "out").glob("*/*.md")
    for text in (done.stdout, md.read_text(encoding="utf-8")):
        assert ("good ranked above degraded: 2/4 pairs (50.0% [95% CI 15.0%–85.0%, wilson; small sample: "
                "fewer than 30]; 0 ties; 2 not judged (a judge failure on either side))") in text
        assert "instrument check FAILED" in text
        assert "not independent: the interval, computed as if they were, is optimistic" in text
        assert "self-agreement: 4/4 controls judged the same in every repeat (100.0% [95% CI 51.0%–100.0%, wilson" in text


def test_rubric_means_lead_with_their_interval_method(judge_srv, tmp_path):
    path = write_suite(tmp_path, judge_srv, "rubric_maker", "def f(x):\n    return 'answer ' + x\n",
                       {"one": "f"}, [{"id": "c1", "input": "x"}, {"id": "c2", "input": "y"}],
                       graders=[{"rubric-score": {}}, {"pointwise": {}}])
    done = _cli(["run", path.name, "--no-progress"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rubric-score one: mean 5.00 on 1-5 [95% CI 2.37–5.00, student-t] over 2 cases" in done.stdout


def test_dq_says_how_many_cases_it_left_out(judge_srv, tmp_path):
    """dQ pairs the cases where both variants have a pointwise score: a case where one variant's
    page did not render, or the judge failed, is left out. The headline said "on 1 cases" as if
    the run held one; it says how many of the planned cases it covers and that the rest were
    left out (and the rubric means likewise)."""
    def judge(req: dict) -> str:
        if "BROKEN" in req["messages"][-1]["content"]:
            return "no"
        return scripted_judge(req)

    judge_srv.set_default("chat", {"reply": judge})
    code = ("def good(x):\n    return 'a fine answer to ' + x\n\n"
            "def flaky(x):\n    return 'a fine answer to ' + x if x == 'c1' else 'BROKEN'\n")
    path = write_suite(tmp_path, judge_srv, "dq_maker", code, {"good": "good", "flaky": "flaky"},
                       [{"id": c, "input": c} for c in ("c1", "c2", "c3")],
                       graders=[{"pointwise": {}}, {"rubric-score": {}}])
    done = _cli(["run", path.name, "--no-progress"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (md,) = (tmp_path / "out").glob("*/*.md")
    for text in (done.stdout, md.read_text(encoding="utf-8")):
        assert "dQ good - flaky: +0.00 (95% CI -2.38 to +2.38, student-t) on 1 of 3 cases (2 left out: a variant " \
               "had no pointwise score there; judge failures: flaky 2)" in text  # its 2 pointwise failures, not the rubric's
        assert "rubric-score flaky: mean 5.00 on 1-5 [95% CI 1.83–5.00, student-t] over 1 of 3 cases (2 not scored)" \
            in text
        assert "rubric-score good: mean 5.00 on 1-5 [95% CI 2.75–5.00, student-t] over 3 cases;" in text
    # the model-graded section of the Markdown says it too
    assert "on 1 of 3 cases where both variants have a pointwise score" in md.read_text(encoding="utf-8")


# ------------------------------------------------------------------------- hostile pages

@chromium
def test_a_folder_page_that_asks_for_its_big_file_again_and_again_is_refused_past_a_budget(tmp_path):
    """Each reference to a folder's file under max_file_bytes was served whole: 40 references to
    one 15 MB file held 936 MB in this process and kept the run busy for minutes after the
    render's deadline. Past 4 x max_file_bytes served, requests are refused and the record
    says so (a render error), so the judge is never shown that page as if it were whole."""
    from tests.render.test_renderer import render_all

    site = tmp_path / "site"
    site.mkdir()
    (site / "big.bin").write_bytes(b"x" * 60_000)
    imgs = "".join(f'<img src="big.bin?v={i}">' for i in range(12))
    (site / "index.html").write_text(f"<!doctype html><html><body><h1>big</h1>{imgs}</body></html>", encoding="utf-8")
    (record,) = render_all([str(site)], tmp_path, max_file_bytes=100_000, settle_ms=0)
    assert record["kind"] == "folder"
    assert record["error"] == ("the page asked for more than 400000 bytes of its own files (4 x "
                               "render.max_file_bytes): 6 request(s) refused")


def test_the_offline_example_on_another_judge_port_names_the_judge_there(tmp_path):
    """run_offline.sh says "port taken? try JUDGE_PORT=..." and starts its judge there, but the
    suite names the judge on 8791: every judgment then failed (connection refused) and the check
    failed. Each `scoreboard run` of the script now names the judge on JUDGE_PORT."""
    import shutil
    import socket
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[1] / "examples" / "landing-pages"
    target = tmp_path / "landing-pages"
    shutil.copytree(example, target, ignore=shutil.ignore_patterns("eval-results"))
    calls = tmp_path / "calls.jsonl"
    fake = tmp_path / "python"  # the real Python, except that `-m scoreboard` only records its arguments
    fake.write_text(f"""#!{sys.executable}
import json, os, sys
if sys.argv[1:3] == ["-m", "scoreboard"]:
    with open({str(calls)!r}, "a") as f:
        f.write(json.dumps(sys.argv[3:]) + "\\n")
    sys.exit(0)
os.execv({sys.executable!r}, [{sys.executable!r}, *sys.argv[1:]])
""", encoding="utf-8")
    fake.chmod(0o755)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHON": str(fake), "JUDGE_PORT": str(port)}
    done = subprocess.run(["bash", str(target / "run_offline.sh")], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    argvs = [json.loads(line) for line in calls.read_text(encoding="utf-8").splitlines()]
    runs = [a for a in argvs if a[0] == "run"]
    assert len(runs) == 4 and [a[0] for a in argvs].count("aggregate") == 1
    for argv in runs:
        judge = json.loads(argv[argv.index("--judge") + 1])
        assert judge == {"type": "openai", "model": "pixel-judge", "base_url": f"http://127.0.0.1:{port}/v1",
                         "api_key_required": False}
    # the script's exit trap stops its judge (a variable of the same name once held the --judge
    # arguments instead of its process id: the judge outlived the script)
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0, "the scripted judge outlived run_offline.sh"
