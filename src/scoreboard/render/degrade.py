"""Degraded copies of a good output, for the judge's instrument check: the same page made
clearly worse in one way each. Pure string transforms over the page's HTML (an SVG or Markdown
output is degraded as the page it renders to).

    blank      an empty page
    unstyled   every <style>, stylesheet <link> and style="" removed
    truncated  only the first quarter of the page's text kept (elements stay, text is cut)
    shuffled   the page's words shuffled across it (seeded), each text keeping its word count
    no-images  <img>, <picture>, <svg>, <video>, <canvas>, <iframe>, <object>, <embed> and CSS
               url(...) images removed
"""

from __future__ import annotations

import html
import random
import re
from html.parser import HTMLParser

DEGRADATIONS = ("blank", "unstyled", "truncated", "shuffled", "no-images")
BLANK_PAGE = "<!doctype html><html><head><meta charset=\"utf-8\"></head><body></body></html>"
_RAW = {"script", "style"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_IMAGE_TAGS = {"img", "picture", "svg", "video", "canvas", "iframe", "object", "embed"}
_CSS_URL = re.compile(r"url\(\s*[^)]*\)", re.IGNORECASE)
_WORD = re.compile(r"\S+")


def _attrs(attrs: list[tuple[str, str | None]]) -> str:
    return "".join(f" {k}" if v is None else f' {k}="{html.escape(v, quote=True)}"' for k, v in attrs)


class _Rewriter(HTMLParser):
    """Re-emits a document token by token; subclasses change what they must."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.raw: str | None = None  # inside <script> or <style>
        self.drop_depth = 0  # inside an element being removed (and how deep)
        self.drop_tag: str | None = None

    # -- hooks
    def keep_tag(self, tag: str, attrs: list) -> bool:
        return True

    def fix_attrs(self, tag: str, attrs: list) -> list:
        return attrs

    def text(self, data: str) -> str:
        return data

    def raw_text(self, tag: str, data: str) -> str:
        return data

    # -- the parser's callbacks
    def handle_starttag(self, tag, attrs):
        self._start(tag, attrs, closed=False)

    def handle_startendtag(self, tag, attrs):
        self._start(tag, attrs, closed=True)

    def _start(self, tag, attrs, closed):
        if self.drop_depth:
            if tag == self.drop_tag and not closed and tag not in _VOID:
                self.drop_depth += 1
            return
        if not self.keep_tag(tag, attrs):
            if not closed and tag not in _VOID:
                self.drop_depth, self.drop_tag = 1, tag
            return
        self.out.append(f"<{tag}{_attrs(self.fix_attrs(tag, attrs))}{' /' if closed else ''}>")
        if tag in _RAW and not closed:
            self.raw = tag

    def handle_endtag(self, tag):
        if self.drop_depth:
            if tag == self.drop_tag:
                self.drop_depth -= 1
                if not self.drop_depth:
                    self.drop_tag = None
            return
        if tag == self.raw:
            self.raw = None
        self.out.append(f"</{tag}>")

    def handle_data(self, data):
        if self.drop_depth:
            return
        if self.raw is not None:
            self.out.append(self.raw_text(self.raw, data))
        else:
            self.out.append(html.escape(self.text(data), quote=False))

    def handle_comment(self, data):
        if not self.drop_depth:
            self.out.append(f"<!--{data}-->")

    def handle_decl(self, decl):
        self.out.append(f"<!{decl}>")

    def handle_pi(self, data):
        self.out.append(f"<?{data}>")

    def rewrite(self, page: str) -> str:
        self.feed(page)
        self.close()
        return "".join(self.out)


class _Unstyled(_Rewriter):
    def keep_tag(self, tag, attrs):
        if tag == "style":
            return False
        if tag == "link":
            rel = " ".join(v or "" for k, v in attrs if k == "rel").lower()
            return "stylesheet" not in rel
        return True

    def fix_attrs(self, tag, attrs):
        return [(k, v) for k, v in attrs if k != "style"]


class _NoImages(_Rewriter):
    def keep_tag(self, tag, attrs):
        if tag in _IMAGE_TAGS:
            return False
        if tag == "input":
            return not any(k == "type" and (v or "").lower() == "image" for k, v in attrs)
        return True

    def fix_attrs(self, tag, attrs):
        return [(k, _CSS_URL.sub("none", v) if k == "style" and v else v) for k, v in attrs]

    def raw_text(self, tag, data):
        return _CSS_URL.sub("none", data) if tag == "style" else data


class _Truncated(_Rewriter):
    def __init__(self, keep: int):
        super().__init__()
        self.left = keep

    def text(self, data):
        if self.left <= 0:
            return "" if data.strip() else data
        kept = data[:self.left]
        self.left -= len(data.strip()) if len(data) <= self.left else self.left
        return kept


class _Counter(_Rewriter):
    """Collects the page's words (and its text length) without changing anything."""

    def __init__(self):
        super().__init__()
        self.words: list[str] = []
        self.chars = 0

    def text(self, data):
        self.words += _WORD.findall(data)
        self.chars += len(data.strip())
        return data


class _Shuffled(_Rewriter):
    def __init__(self, words: list[str]):
        super().__init__()
        self.words = iter(words)

    def text(self, data):
        return _WORD.sub(lambda _m: next(self.words, ""), data)


#: why a degradation can leave a page as it was (its copy would be the good page, judged as worse)
UNCHANGED = {"unstyled": "it has no <style>, stylesheet <link> or style attribute (styles its script sets stay)",
             "truncated": "it has no text outside its scripts to cut (text its script writes stays)",
             "shuffled": "it has no words outside its scripts to shuffle, or only one word over and over",
             "no-images": "it has no image, <svg>, <canvas>, <video>, frame or CSS url() image to remove"}


def unchanged(page: str, degraded: str) -> bool:
    """Whether a degraded copy is the page itself, as the rewriter re-emits it untouched."""
    return degraded == _Rewriter().rewrite(page)


def degrade(page: str, how: str, seed: int = 0) -> str:
    """The page's HTML made worse in one way (see DEGRADATIONS)."""
    if how == "blank":
        return BLANK_PAGE
    if how == "unstyled":
        return _Unstyled().rewrite(page)
    if how == "no-images":
        return _NoImages().rewrite(page)
    counter = _Counter()
    counter.rewrite(page)
    if how == "truncated":
        return _Truncated(counter.chars // 4).rewrite(page)
    if how == "shuffled":
        words = list(counter.words)
        rng = random.Random(seed)
        for _ in range(3):  # a shuffle that leaves the text as it was would degrade nothing
            rng.shuffle(words)
            if words != counter.words or len(set(words)) < 2:
                break
        return _Shuffled(words).rewrite(page)
    raise ValueError(f"unknown degradation {how!r} (known: {', '.join(DEGRADATIONS)})")
