"""What an output is when it is rendered: an HTML document, a fenced HTML block, an SVG, a
folder holding index.html, or Markdown (any other text). Pure: reads nothing but the text,
except that a folder output is checked to exist."""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass
from pathlib import Path

_FENCED_HTML = re.compile(r"```(?:html|HTML|htm)[ \t]*\r?\n(.*?)\r?\n?```", re.DOTALL)
_FENCED_SVG = re.compile(r"```(?:svg|SVG|xml)[ \t]*\r?\n(.*?)\r?\n?```", re.DOTALL)
# Leading comments are skipped atomically (each ends at its first -->, never retried): a lazy
# comment inside a backtracking repetition took exponential time on "<!---->" * 30 + "x".
_COMMENTS = r"(?>(?:<!--.*?-->\s*)*)"
_HTML_START = re.compile(r"^\s*" + _COMMENTS + r"(?:<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>])",
                         re.IGNORECASE | re.DOTALL)
_SVG_START = re.compile(r"^\s*(?:<\?xml[^>]*>\s*)?" + _COMMENTS + r"(?:<!doctype\s+svg[^>]*>\s*)?<svg[\s>]",
                        re.IGNORECASE | re.DOTALL)
#: the longest Markdown output rendered (it is converted to HTML in Python)
MAX_MARKDOWN_CHARS = 1_000_000
_TAGGY = re.compile(r"<(?:div|section|main|header|style|h1|p|table|canvas|script)[\s>]", re.IGNORECASE)


@dataclass(frozen=True)
class PageSource:
    """What the browser is given: `kind`, and the page's HTML, or the folder to serve."""

    kind: str
    html: str | None = None
    folder: Path | None = None


def page_source(text: str | None, kinds: list[str], roots: tuple = ()) -> tuple[PageSource | None, str | None]:
    """(source, None), or (None, why the output is not rendered). A folder output is served only
    when it lies inside one of `roots` (the suite's root; followed links included): an output may
    name any folder on the machine, and what is served is shown to a judge."""
    if text is None:
        return None, "the output has no text to render"
    stripped = text.strip()
    if "folder" in kinds and stripped and "\n" not in stripped and len(stripped) < 4096:
        folder = Path(stripped).expanduser()
        try:
            if folder.is_dir():
                resolved = folder.resolve()
                inside = [Path(os.path.realpath(root)) for root in roots]
                if not any(resolved == root or root in resolved.parents for root in inside):
                    return None, (f"the output names a folder outside the suite's folder (or --root): {stripped} "
                                  "(not rendered)")
                if not (folder / "index.html").is_file():
                    return None, f"the output names a folder without index.html: {stripped}"
                return PageSource("folder", folder=resolved), None
        except (OSError, ValueError):
            pass
    if _HTML_START.match(stripped) or (_TAGGY.search(stripped) and stripped.startswith("<")):
        return _allowed(PageSource("html", html=stripped), kinds)
    if _SVG_START.match(stripped):
        return _allowed(PageSource("svg", html=svg_page(stripped)), kinds)
    block = _FENCED_HTML.search(text)
    if block:
        return _allowed(PageSource("html", html=block.group(1)), kinds)
    block = _FENCED_SVG.search(text)
    if block and _SVG_START.match(block.group(1)):
        return _allowed(PageSource("svg", html=svg_page(block.group(1).strip())), kinds)
    if "markdown" not in kinds:
        return _allowed(PageSource("markdown"), kinds)
    if len(text) > MAX_MARKDOWN_CHARS:  # converted in Python: 10 MB of Markdown took 34 s
        return None, f"the Markdown output is {len(text)} characters, over the {MAX_MARKDOWN_CHARS} rendered"
    return PageSource("markdown", html=markdown_page(text)), None


def _allowed(source: PageSource, kinds: list[str]) -> tuple[PageSource | None, str | None]:
    if source.kind not in kinds:
        return None, f"{source.kind} outputs are not rendered (render.kinds: {', '.join(kinds)})"
    return source, None


def svg_page(svg: str) -> str:
    """An SVG shown alone on a blank page, at its own size, top left."""
    svg = re.sub(r"^\s*<\?xml[^>]*>", "", svg)
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><style>html,body{margin:0;background:#fff}"
            "svg{display:block}</style></head><body>" + svg + "</body></html>")


def markdown_page(text: str) -> str:
    """Markdown (CommonMark, tables on) as a plain HTML page in the browser's default styles."""
    try:
        from markdown_it import MarkdownIt
    except ImportError:  # pragma: no cover - the render extra installs it
        from ..errors import ConfigError

        raise ConfigError("rendering Markdown needs markdown-it-py: pip install 'scoreboard[render]'",
                          field="render") from None
    body = MarkdownIt("commonmark").enable("table").render(text)
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>" + html.escape(text[:60].strip())
            + "</title></head><body>" + body + "</body></html>")
