"""Nunjucks 3's builtin text filters (filters.js and lib.js at 3.2.4) for templates converted
from promptfoo: the string ones (case, escaping, trimming, truncating, URLs, tags, words), and the
helpers the other filters share (templating/nunjucks.py holds the rest and the filter table)."""

from __future__ import annotations

import math
import re
from typing import Any

from .bounds import _check_size
from .js import (
    _JS_WS,
    _fail,
    _is_undef,
    _js_items,
    _js_len,
    _undefined,
    js_member,
    js_str,
    js_to_number,
    js_trim,
    js_truthy,
)

def _need_str(value: Any, name: str) -> str:
    if not isinstance(value, str):
        _fail(f"{name}: {js_str(value)!r} is not a string (a TypeError in Nunjucks)")
    return value



def _normalize(value: Any, default: Any) -> Any:
    return default if value is None or value is False or _is_undef(value) else value



def _repeat(ch: str, n: Any) -> str:
    """lib.repeat: `for (i = 0; i < n; i++)`, so 1.5 repeats twice."""
    n = js_to_number(n)
    if not (n > 0 and math.isfinite(n)):
        return ""
    _check_size(math.ceil(n) * len(ch), "repeat")
    return ch * math.ceil(n)



def _escape(s: str) -> str:
    """lib.escape: & " ' < > and backslash."""
    _check_size(len(s) + 5 * sum(s.count(chr(c)) for c in _ESCAPES), "escape")
    return s.translate(_ESCAPES)



_ESCAPES = str.maketrans({"&": "&amp;", '"': "&quot;", "'": "&#39;", "<": "&lt;", ">": "&gt;", "\\": "&#92;"})



def _capitalize(s: Any) -> str:
    s = _need_str(_normalize(s, ""), "capitalize")
    low = s.lower()
    return low[:1].upper() + low[1:]



def nj_capitalize(value, *_):
    return _capitalize(value)



def nj_center(value, width=None, *_):
    s = _normalize(value, "")
    width = width if js_truthy(width) else 80
    if not isinstance(s, str):
        return js_str(s)
    n = _js_len(s)
    if n >= js_to_number(width):
        return s
    spaces = js_to_number(width) - n
    return _repeat(" ", spaces / 2 - math.fmod(spaces, 2)) + s + _repeat(" ", spaces / 2)



def nj_escape(value, *_):
    return _escape(js_str(value)) if value is not None and not _is_undef(value) else ""



def nj_safe(value, *_):
    return js_str(value) if value is not None and not _is_undef(value) else ""



def nj_indent(value, width=None, indentfirst=None, *_):
    s = _normalize(value, "")
    if s == "":
        return ""
    s = _need_str(s, "indent")
    sp = _repeat(" ", width if js_truthy(width) else 4)
    _check_size(len(s) + len(sp) * (s.count("\n") + 1), "indent")
    return "\n".join(line if i == 0 and not js_truthy(indentfirst) else sp + line
                     for i, line in enumerate(s.split("\n")))



def nj_lower(value, *_):
    return _need_str(_normalize(value, ""), "lower").lower()



def nj_upper(value, *_):
    return _need_str(_normalize(value, ""), "upper").upper()



def nj_nl2br(value, *_):
    import re

    if value is None or _is_undef(value):
        return ""
    s = _need_str(value, "nl2br")
    _check_size(len(s) + 6 * s.count("\n"), "nl2br")
    return re.sub(r"\r\n|\n", "<br />\n", s)



def nj_replace(value, old=None, new=None, max_count=None, *_):
    if max_count is None or _is_undef(max_count):
        max_count = -1
    if isinstance(old, (int, float)) and not isinstance(old, bool):
        old = js_str(old)
    elif not isinstance(old, str):
        return value
    s = js_str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if not isinstance(s, str):
        return s
    new_s = js_str(new)
    if old == "":
        sep = "," if _is_undef(new) else new_s
        _check_size(2 * len(new_s) + len(s) + len(sep) * max(len(s) - 1, 0), "replace")
        return new_s + sep.join(s) + new_s
    if max_count == 0 or old not in s:
        return s
    count = js_to_number(max_count)
    if count != -1 and not count > 0:
        return s
    hits = s.count(old) if count == -1 else min(s.count(old), math.ceil(count))
    _check_size(len(s) + hits * max(0, len(new_s) - len(old)), "replace")
    return s.replace(old, new_s, -1 if count == -1 else math.ceil(count))



def nj_string(value, *_):
    """Nunjucks' string filter returns its value unchanged (r.copySafeness(obj, obj))."""
    return value



def nj_striptags(value, preserve_linebreaks=None, *_):
    import re

    s = js_trim(_strip_tags(_need_str(_normalize(value, ""), "striptags")))
    ws = f"[{_JS_WS}]"
    if js_truthy(preserve_linebreaks):
        # `^ +| +$` (filters.js), tried only where a run of spaces starts: linear, not quadratic
        s = re.sub(r"^ +|(?<! ) ++$", "", s, flags=re.MULTILINE)
        s = re.sub(r" +", " ", s).replace("\r\n", "\n")
        return re.sub(r"\n\n\n+", "\n\n", s)
    return re.sub(ws + "+", " ", s)



_TAG = re.compile(r"</?([a-z][a-z0-9]*)\b", re.IGNORECASE)



def _strip_tags(s: str) -> str:
    """re.sub(/<\\/?([a-z][a-z0-9]*)\\b[^>]*>|<!--[\\s\\S]*?-->/gi, "") in one pass: the regular
    expression rescans to the end for each "<" that no ">" (or "-->") follows."""
    out, i = [], 0
    last_gt, last_close = s.rfind(">"), s.rfind("-->")  # past these, no tag or comment can end
    while True:
        j = s.find("<", i)
        if j < 0:
            out.append(s[i:])
            return "".join(out)
        end = -1
        if s.startswith("<!--", j):
            if last_close >= j + 4:
                end = s.find("-->", j + 4) + 3
        else:
            m = _TAG.match(s, j)
            if m and last_gt >= m.end():
                end = s.find(">", m.end()) + 1
        if end < 0:
            out.append(s[i:j + 1])
            i = j + 1
        else:
            out.append(s[i:j])
            i = end



def nj_title(value, *_):
    """Each space-separated word capitalized (its rest lowercased): "hello-world" -> "Hello-world"."""
    s = _need_str(_normalize(value, ""), "title")
    return " ".join(_capitalize(w) for w in s.split(" "))



def nj_trim(value, *_):
    return js_trim(_need_str(value, "trim"))



def nj_truncate(value, length=None, killwords=None, end=None, *_):
    s = _normalize(value, "")
    length = js_to_number(length) if js_truthy(length) else 255
    n = _length_of(s)
    if not isinstance(n, int):
        return s
    if n <= length:
        return s
    cut = math.floor(length) if math.isfinite(length) else n
    if js_truthy(killwords):
        s = s[:cut]
    else:
        idx = s.rfind(" ", 0, max(cut, 0) + 1)
        s = s[:cut if idx == -1 else idx]
    return s + (js_str(end) if end is not None and not _is_undef(end) else "...")



def _uri(s: str) -> str:
    from urllib.parse import quote

    return quote(s, safe="!~*'()")



def nj_urlencode(value, *_):
    """encodeURIComponent for text; an object's (or an array of pairs') key=value joined by &."""
    if isinstance(value, str):
        return _uri(value)
    pairs = list(value) if isinstance(value, (list, tuple)) else \
        (_js_items(value) if isinstance(value, dict) else [])
    return "&".join(_uri(js_str(js_member(p, 0))) + "=" + _uri(js_str(js_member(p, 1))) for p in pairs)



def nj_urlize(value, length=None, nofollow=None, *_):
    import re

    s = _need_str(value, "urlize")
    limit = None if length is None or _is_undef(length) else js_to_number(length)
    attr = ' rel="nofollow"' if nofollow is True else ""
    out = []
    for word in re.split(r"(\s+)", s):
        if not word:
            continue
        m = re.match(r"^(?:\(|<|&lt;)?(.*?)(?:\.|,|\)|\n|&gt;)?$", word, re.DOTALL)
        url = m.group(1) if m else word
        short = url if limit is None or not math.isfinite(limit) else url[:max(0, int(limit))]
        if re.match(r"^https?://.*$", url):
            out.append(f'<a href="{url}"{attr}>{short}</a>')
        elif re.match(r"^www\.", url):
            out.append(f'<a href="http://{url}"{attr}>{short}</a>')
        elif re.match(r"^[\w.!#$%&'*+\-/=?^`{|}~]+@[a-z\d\-]+(\.[a-z\d\-]+)+$", url, re.IGNORECASE | re.ASCII):
            out.append(f'<a href="mailto:{url}">{url}</a>')
        elif re.search(r"\.(?:org|net|com)(?::|/|$)", url):
            out.append(f'<a href="http://{url}"{attr}>{short}</a>')
        else:
            out.append(word)
    return "".join(out)



def nj_wordcount(value, *_):
    import re

    s = _normalize(value, "")
    if not js_truthy(s):
        return None
    words = re.findall(r"\w+", _need_str(s, "wordcount"), re.ASCII)
    return len(words) if words else None

def _length_of(value: Any) -> Any:
    if isinstance(value, str):
        return _js_len(value)
    if isinstance(value, (list, tuple)):
        return len(value)
    return _undefined()


def _keywords(fn):
    """A filter that is not a Nunjucks macro gets keyword arguments as one more positional
    argument, an object (runtime.makeKeywordArgs): `truncate(9, end='..')` passes killwords={...}."""
    import functools

    @functools.wraps(fn)
    def call(value, *args, **kwargs):
        if kwargs:
            args = (*args, dict(kwargs))
        return fn(value, *args)
    return call


def _macro(names: list[str]):
    """A filter made with runtime.makeMacro: keyword arguments bind to its named parameters."""
    import functools

    def wrap(fn):
        @functools.wraps(fn)
        def call(value, *args, **kwargs):
            bound = list(args) + [_MISSING] * (len(names) - len(args))
            for k, v in kwargs.items():
                if k in names:
                    bound[names.index(k)] = v
            return fn(value, *[_undefined() if v is _MISSING else v for v in bound])
        return call
    return wrap


_MISSING = object()
