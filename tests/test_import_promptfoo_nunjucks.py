"""Nunjucks templates converted by importers/nunjucks.py render as Nunjucks 3 renders them.

Every expected string below is Nunjucks 3.2.4's output for the same template and variables
(`new nunjucks.Environment(null, {autoescape: false}).renderString(template, vars)`, which is
what promptfoo uses), written here as literals so that the tests need no Node."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.importers.nunjucks import convert
from scoreboard.templating import JS_MARKER, environment, render_text


def _render(template: str, names: dict | None = None) -> str:
    text, problems, _ = convert(template)
    assert not problems, problems
    return environment("empty").from_string(text).render(names or {})


# ---- 1. raw / verbatim blocks are kept as they are

def test_raw_and_verbatim_are_left_untouched():
    # Nunjucks 3: 'Use {{ name }} literally'
    assert _render("Use {% raw %}{{ name }}{% endraw %} literally", {"name": "x"}) == "Use {{ name }} literally"
    assert _render("Use {% verbatim %}{{ name }}{% endverbatim %} literally", {"name": "x"}) == \
        "Use {{ name }} literally"
    # Nunjucks 3 counts nested raw blocks: 'a{% raw %}b{% endraw %}c'
    assert _render("{% raw %}a{% raw %}b{% endraw %}c{% endraw %}") == "a{% raw %}b{% endraw %}c"
    # text after the block is converted as usual
    assert _render("{% raw %}{{ x | title }}{% endraw %}{{ x | title }}", {"x": "a-b"}) == "{{ x | title }}A-b"


# ---- 2. filters behave as Nunjucks' filters.js, not Jinja2's

NUNJUCKS_FILTERS = [
    # (template, vars, Nunjucks 3's output)
    ('{{ "hello-world a/b" | title }}', {}, "Hello-world A/b"),
    (("{{ 2.5 | round }}|{{ -2.5 | round }}|{{ 1.2345 | round(2) }}|{{ 1.21 | round(1, 'ceil') }}|"
     "{{ 1.29 | round(1, 'floor') }}"), {}, "3|-2|1.23|1.3|1.2"),
    ('{{ "hello-world a/b" | urlencode }}|{{ o | urlencode }}|{{ [["a b", 1], ["c", "d&"]] | urlencode }}',
     {"o": {"x y": "1/2", "b": True}}, "hello-world%20a%2Fb|x%20y=1%2F2&b=true|a%20b=1&c=d%26"),
    ("{{ 'say \"hi\"' | escape }}|{{ \"a'b<c>\\\\\" | e }}", {}, "say &quot;hi&quot;|a&#39;b&lt;c&gt;&#92;"),
    ("{{ [1, 2] | string }}|{{ 1.0 | string }}", {}, "1,2|1"),
    ("{{ [[1, 2], 3] | join(',') }}|{{ xs | join }}|{{ os | join('-', 'n') }}",
     {"xs": [1, None, "a"], "os": [{"n": 1}, {"n": 2.5}]}, "1,2,3|1a|1-2.5"),
    (('{{ "aaaa bbbb cccc" | truncate(9) }}|{{ "aaaa bbbb cccc" | truncate(7, true) }}|'
     "{{ 'abc def' | truncate(5, end='!') }}"), {}, "aaaa bbbb...|aaaa bb...|abc d..."),
    ("{{ -3 | abs }}|{{ '-4' | abs }}", {}, "3|4"),
    ("{{ [1,2,3,4,5] | batch(2) | dump }}|{{ [1,2,3] | batch(2, 'x') | dump }}", {}, '[[1,2],[3,4],[5]]|[[1,2],[3,"x"]]'),
    ("{{ 'hELLO wORLD' | capitalize }}", {}, "Hello world"),
    ("[{{ 'ab' | center(7) }}]|[{{ 'ab' | center(6) }}]", {}, "[  ab   ]|[  ab  ]"),
    ("{{ u | default('d') }}|{{ n | default('d') }}|{{ e | default('d', true) }}|{{ z | d('d', true) }}",
     {"n": None, "e": [], "z": 0}, "d|||d"),
    ("{{ o | dictsort | dump }}|{{ o | dictsort(false, 'value') | dump }}",
     {"o": {"b": 2, "a_": 3, "aB": 1, "10": 0, "9": 4}},
     '[["10",0],["9",4],["aB",1],["a_",3],["b",2]]|[["10",0],["aB",1],["b",2],["a_",3],["9",4]]'),
    ("{{ o | dump }}|{{ f | dump }}|{{ o | dump(2) }}", {"o": {"b": [1, {}], "1": None}, "f": [1.5, 1e21, 1e-7, 2.0]},
     '{"1":null,"b":[1,{}]}|[1.5,1e+21,1e-7,2]|{\n  "1": null,\n  "b": [\n    1,\n    {}\n  ]\n}'),
    ("{{ xs | first }}|{{ xs | last }}|{{ 'abc' | first }}|{{ 'abc' | last }}|{{ [] | first }}", {"xs": [3, 4]},
     "3|4|a|c|"),
    (("{{ '3.5abc' | float }}|{{ 'x' | float(7) }}|{{ '12px' | int }}|{{ 'ff' | int(base=16) }}|"
     "{{ 'x' | int(default=5) }}|{{ '3.9' | int }}"), {}, "3.5|7|12|255|5|3"),
    ("{% for k, v in xs | groupby('t') %}{{ k }}:{{ v | length }};{% endfor %}",
     {"xs": [{"t": "b"}, {"t": 2}, {"t": "b"}, {}]}, "2:1;b:2;undefined:1;"),
    ("{{ 'a\\n\\nb' | indent(2) | dump }}|{{ 'a\\nb' | indent(2, true) | dump }}", {}, '"a\\n  \\n  b"|"  a\\n  b"'),
    ("{{ o | length }}|{{ 'héllo' | length }}|{{ 5 | length }}|{{ u | length }}", {"o": {"a": 1, "b": 2}}, "2|5||0"),
    ("{{ 'ab' | list | dump }}|{{ o | list | dump }}", {"o": {"a": 1}}, '["a","b"]|[{"key":"a","value":1}]'),
    ("{{ 'AbC' | lower }}|{{ 'abc' | upper }}|{{ u | upper }}", {}, "abc|ABC|"),
    ("{{ 'a\\nb\\r\\nc' | nl2br }}", {}, "a<br />\nb<br />\nc"),
    (("{{ [1, 0, 2, '', null] | select | dump }}|{{ [1,2,3,4] | select('odd') | dump }}|"
     "{{ [1,2,3,4] | reject('gt', 2) | dump }}"), {}, "[1,2]|[1,3]|[1,2]"),
    ("{{ xs | selectattr('a') | dump }}|{{ xs | rejectattr('a') | dump }}|{{ xs | selectattr('a', 'equalto', 5) | dump }}",
     {"xs": [{"a": 1}, {"a": 0}, {"a": []}, {}]}, '[{"a":1},{"a":[]}]|[{"a":0},{}]|[{"a":1},{"a":[]}]'),
    ("{{ 'aaa' | replace('a', 'b', 2) }}|{{ 'abc' | replace('', '.') }}|{{ 123 | replace(2, 9) }}", {}, "bba|.a.b.c.|193"),
    ("{{ 'abc' | reverse }}|{{ [1,2,3] | reverse | dump }}", {}, "cba|[3,2,1]"),
    ("{{ [1,2,3,4,5] | slice(3) | dump }}|{{ [1,2,3,4,5] | slice(3, 'x') | dump }}", {},
     '[[1,2],[3,4],[5]]|[[1,2],[3,4],[5,"x"]]'),
    (("{{ ['b', 'A', 'c', 10, 9] | sort | dump }}|{{ ['b','A','c'] | sort(true) | dump }}|"
     "{{ xs | sort(attribute='n') | dump }}"), {"xs": [{"n": 2}, {"n": 1}]},
     '["A","b","c",9,10]|["c","b","A"]|[{"n":1},{"n":2}]'),
    ("{{ '<p>Hi  <b>there</b></p>\\n\\n x ' | striptags }}|{{ 'a  <br/> b\\n\\n\\n\\nc' | striptags(true) | dump }}",
     {}, 'Hi there x|"a b\\n\\nc"'),
    ("{{ [1, 2, 3] | sum }}|{{ xs | sum('n', 10) }}|{{ ['a', 'b'] | sum }}", {"xs": [{"n": 1.5}, {"n": 2}]}, "6|13.5|00ab"),
    ("[{{ '  a b  ' | trim }}]", {}, "[a b]"),
    ("{{ 'see http://x.com/a. and www.y.org, mail a@b.com or z.net' | urlize }}", {},
     ('see <a href="http://x.com/a">http://x.com/a</a> and <a href="http://www.y.org">www.y.org</a> '
     'mail <a href="mailto:a@b.com">a@b.com</a> or <a href="http://z.net">z.net</a>')),
    ("{{ 'hello, world! é' | wordcount }}|{{ '!!' | wordcount }}", {}, "2|"),
    ("{{ ' a ' | safe }}|{{ 1.0 | safe }}|{{ [1, [2]] | forceescape }}", {}, " a |1|1,2"),
    ("{% filter title %}hello-world foo{% endfilter %}|{% set t = 'a-b c' | title %}{{ t }}|{{ '| upper' }}", {},
     "Hello-world Foo|A-b C|| upper"),
]


@pytest.mark.parametrize("template,names,expected", NUNJUCKS_FILTERS)
def test_filters_are_nunjucks(template, names, expected):
    assert _render(template, names) == expected


def test_filters_renamed_outside_strings_only_and_native_templates_keep_jinja2():
    text, problems, _ = convert("{{ x | title }}{% if y | length %}{% endif %}{{ 'a | title' }}")
    assert not problems
    assert "x | nj_title" in text and "y | nj_length" in text and "'a | title'" in text
    # a native template still has Jinja2's filter
    assert render_text("{{ 'hello-world' | title }}", {}) == "Hello-World"


def test_filter_nunjucks_lacks_is_a_problem():
    _, problems, _ = convert("{{ x | wordwrap(5) }}")
    assert problems and "wordwrap" in problems[0]


# ---- 3. for loops over objects and arrays of arrays

def test_for_over_object_pairs_and_arrays():
    # Nunjucks 3: integer-like keys first (JavaScript's key order), then as inserted
    assert _render("{% for k, v in obj %}{{ k }}={{ v }};{% endfor %}", {"obj": {"b": 1, "a": [1, 2], "2": "x"}}) == \
        "2=x;b=1;a=1,2;"
    assert _render("{% for a, b in xs %}{{ a }}-{{ b }};{% else %}E{% endfor %}", {"xs": [[1, 2], ["x"], "pq"]}) == \
        "1-2;x-;p-q;"
    assert _render("{% for k, v in obj %}{{ loop.index0 }}{{ loop.first }}{{ loop.revindex }}{% endfor %}",
                   {"obj": {"a": 1, "b": 2}}) == "0true21false1"
    assert _render("{% for k, v in {} %}x{% else %}E{% endfor %}|{% for k, v in u %}x{% else %}E{% endfor %}") == "E|E"


def test_for_with_one_name_over_object_walks_nothing():
    # Nunjucks 3 reads arr.length: an object or a number has none, so the loop's else runs
    assert _render("{% for x in obj %}{{ x }}{% else %}E{% endfor %}|{% for x in 5 %}{{ x }}{% else %}F{% endfor %}|"
                   "{% for x in 'ab' %}{{ x }}{% endfor %}", {"obj": {"a": 1}}) == "E|F|ab"
    assert _render("{% for x in xs %}{{ loop.index }}/{{ loop.length }}{{ x }}{% endfor %}", {"xs": ["a", "b"]}) == \
        "1/2a2/2b"


# ---- 4. conditions are tested as JavaScript tests them

def test_if_uses_javascript_truthiness():
    # Nunjucks 3: [] and {} are true, 0 and "" false, Nunjucks' elseif is elif
    assert _render("{% if items %}yes{% else %}no{% endif %}|{% if o %}Y{% endif %}|"
                   "{% if z %}Z{% elif e %}E{% elseif s %}S{% endif %}",
                   {"items": [], "o": {}, "z": 0, "e": "", "s": "s"}) == "yes|Y|S"
    assert _render("{% for x in [] %}x{% else %}empty{% endfor %}") == "empty"


def test_logic_operators_get_a_note():
    _, problems, notes = convert("{% if not items or x %}a{% endif %}{{ a if b }}")
    assert not problems
    assert any("not/or" in n for n in notes) and any("inline if" in n for n in notes)


# ---- 5. arithmetic is JavaScript's in converted templates only

def test_arithmetic_is_javascript():
    # Nunjucks 3's output for each expression
    assert _render("{{ 1 + '2' }}|{{ '3' * 2 }}|{{ '5' - 2 }}|{{ 1 / 0 }}|{{ -7 % 3 }}|{{ 7 // 2 }}|{{ 2 ** 10 }}|"
                   "{{ 1 + 2 }}|{{ 0.1 + 0.2 }}|{{ [1] + 1 }}|{{ u + 1 }}|{{ n + 1 }}|{{ true + 1 }}|{{ -'3' }}",
                   {"n": None}) == "12|6|3|Infinity|-1|3|1024|3|0.30000000000000004|11|NaN|1|2|-3"
    assert _render("{% set x = 'a' + 1 %}{{ x }}|{{ 10 / 4 }}|{% if 1 + '2' == '12' %}ok{% endif %}") == "a1|2.5|ok"


def test_native_templates_keep_python_arithmetic():
    text, _, _ = convert("{{ 1 + '2' }}")
    assert text.startswith(JS_MARKER)
    assert render_text(text, {}) == "12"  # any environment, once converted
    from jinja2 import TemplateRuntimeError  # noqa: F401

    with pytest.raises(TypeError):
        environment("empty").from_string("{{ 1 + '2' }}").render()
    assert render_text("{{ 7 // 2 }}|{{ -7 % 3 }}|{{ 'ab' * 2 }}", {}) == "3|2|abab"
    assert convert("Hi {{ name }}")[0] == "Hi {{ (name) | js }}"  # no marker without arithmetic


# ---- end to end: an imported promptfoo suite renders its prompt as Nunjucks does

def test_imported_prompt_renders_as_nunjucks(tmp_path: Path):
    prompt = ("{{ name | title }} {% for k, v in info %}{{ k }}={{ v }},{% endfor %}"
              "{% if tags %}T{% endif %} {{ n + '1' }} {{ 2.5 | round }}")
    config = {"prompts": [prompt], "providers": ["echo"],
              "tests": [{"vars": {"name": "ada-lovelace b", "info": {"a": 1, "b": "x"}, "tags": [], "n": 1},
                         # Nunjucks 3 renders the prompt as this text
                         "assert": [{"type": "equals", "value": "Ada-lovelace B a=1,b=x,T 11 3"}]}]}
    (tmp_path / "c.yaml").write_text(json.dumps(config))
    done = subprocess.run([sys.executable, "-m", "scoreboard", "import", "promptfoo", "c.yaml", "--output", "out"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    run = subprocess.run([sys.executable, "-m", "scoreboard", "run", "out/suite.yaml", "--output", "r.json"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert [a["status"] for a in report["attempts"]] == ["passed"]
