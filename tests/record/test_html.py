"""The HTML report without a browser: embedding, escaping, size, no network resource."""

from __future__ import annotations

import json
import re

from scoreboard.record.html import SIZE_BUDGET, embed_json, page_data, render_html
from scoreboard.record.view import view_of
from tests.record.conftest import XSS_OUTPUT, make_report, xss_report

DATA_RE = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.S)


def embedded(page: str) -> dict:
    found = DATA_RE.findall(page)
    assert len(found) == 1
    return json.loads(found[0])


def test_embedded_data_round_trips(demo_report):
    page = render_html(view_of(demo_report))
    assert embedded(page) == json.loads(json.dumps(page_data(view_of(demo_report))))


def test_embed_json_escapes_everything_that_could_end_the_script():
    value = {"t": "</script><!-- & \u2028 \u2029 <img src=x> \ud800 lone", "k</script>": [">"]}
    text = embed_json(value)
    for raw in ("<", ">", "&", "\u2028", "\u2029", "\ud800"):
        assert raw not in text
    assert "\\u003c/script\\u003e" in text
    assert json.loads(text) == value


def test_hostile_text_never_appears_raw_in_the_page():
    page = render_html(view_of(xss_report()))
    assert XSS_OUTPUT not in page
    assert "window.__xss" in page  # present, but only inside escaped JSON strings
    # Only the template's two script elements (the data and the app); nothing injected.
    assert page.count("<script") == 2
    assert page.count("</script>") == 2
    title = re.search(r"<title>(.*?)</title>", page, re.S).group(1)
    assert "<" not in title and "&lt;/script&gt;" in title
    page_text = page.encode("utf-8")  # valid UTF-8 even with a lone surrogate somewhere
    assert page_text


def test_lone_surrogates_and_nan_do_not_break_rendering():
    report = make_report(2, runs=1, output_of=lambda i, v, r: "bad \ud83d half")
    report["summary"]["variants"]["basic"]["pass_rate_ci"]["low"] = float("nan")
    page = render_html(view_of(report))
    page.encode("utf-8")
    data = embedded(page)
    assert data["summary"]["variants"]["basic"]["pass_rate_ci"]["low"] is None
    assert data["cases"][0]["a"][0]["o"] == "bad \ud83d half"


def test_no_network_resource_in_the_page(demo_report):
    page = render_html(view_of(demo_report))
    shell = DATA_RE.sub("", page)
    # The SVG namespace is an identifier, not a fetch; nothing else may name a URL.
    shell = shell.replace('"http://www.w3.org/2000/svg"', "")
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", shell, re.I)
    assert not re.search(r"\b(src|href|action|poster|srcset)\s*=", shell, re.I)
    assert not re.search(r"@import|url\(|<link|<iframe|<object|<embed|fetch\(|XMLHttpRequest|\.src\s*=|innerHTML|outerHTML|insertAdjacentHTML|document\.write",
                         shell, re.I)
    assert "default-src 'none'" in shell  # and the page forbids loading anything even if it tried


def test_page_data_keeps_what_the_page_uses_only(demo_report):
    data = page_data(view_of(demo_report))
    assert [c["id"] for c in data["cases"]] == [c["id"] for c in demo_report["plan"]["cases"]]
    first = data["cases"][0]
    assert first["cat"] == "invoice" and first["x"] == {"total": 100.5, "currency": "EUR"}
    att = first["a"][0]
    assert set(att) <= {"v", "r", "s", "o", "j", "t", "os", "e", "m", "g"}
    assert "j" not in att  # the text already carries the parsed JSON
    assert "graders" not in json.dumps(data["cases"])
    assert att["g"][0]["f"][0] == {"p": "total", "ok": True, "x": 100.5, "y": 100.5}
    assert sum(len(c["a"]) for c in data["cases"]) == len(demo_report["attempts"])
    assert "shortened" not in data


def test_attempt_for_a_case_missing_from_the_plan_is_kept(demo_report):
    extra = dict(demo_report["attempts"][0], case_id="stray")
    demo_report["attempts"].append(extra)
    data = page_data(view_of(demo_report))
    assert data["cases"][-1]["id"] == "stray" and len(data["cases"][-1]["a"]) == 1


def test_renders_from_a_minimal_report():
    report = {"schema": "scoreboard.report/v1", "run": {"suite": "s", "status": "running"},
              "plan": {"cases": [], "variants": [{"name": "a"}], "runs": 1}, "attempts": [], "summary": {}}
    page = render_html(view_of(report))
    assert embedded(page)["cases"] == []


def test_huge_outputs_are_shortened_to_stay_under_budget():
    big = "x" * 3_000_000
    report = make_report(8, runs=1, output_of=lambda i, v, r: big, status_of=lambda i, v, r: "passed")
    page = render_html(view_of(report))
    assert len(page.encode("utf-8")) < 20_000_000
    data = embedded(page)
    assert data["shortened"]["count"] >= 16
    out = data["cases"][0]["a"][0]["o"]
    assert out.startswith("xxx") and "more characters are in the JSON report" in out


def test_ten_thousand_cases_fit_in_the_budget(big_html):
    page = big_html.read_text(encoding="utf-8")
    size = len(page.encode("utf-8"))
    assert size < 20_000_000 and size <= SIZE_BUDGET + 200_000
    data = embedded(page)
    assert len(data["cases"]) == 10_000
    assert sum(len(c["a"]) for c in data["cases"]) == 20_000
