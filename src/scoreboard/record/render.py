"""The report's renderings by format name. JSON is the record itself: the engine writes it as a
stream, so it is named here (for the file extension) but not rendered from a view."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import ConfigError
from .constants import EXTENSIONS, FORMATS  # noqa: F401  (re-exported)
from .view import ReportView


def render_chunks(view: ReportView, fmt: str) -> Iterator[str]:
    """render's text in pieces, made as they are written (Markdown's per-case tables can run to
    millions of characters); one piece for the other formats."""
    if fmt == "md":
        from .markdown import markdown_chunks

        return markdown_chunks(view)
    return iter((render(view, fmt),))


def render(view: ReportView, fmt: str) -> str:
    """The view rendered as Markdown ("md"), a self-contained HTML page ("html") or JUnit XML ("junit")."""
    if fmt == "md":
        from .markdown import render_markdown

        return render_markdown(view)
    if fmt == "html":
        from .html import render_html

        return render_html(view)
    if fmt == "junit":
        from .junit import render_junit

        return render_junit(view)
    if fmt == "json":
        raise ConfigError("the JSON report is the record: the engine writes it, it is not rendered from a view",
                          field="format")
    raise ConfigError(f"unknown report format {fmt!r} (known: {', '.join(FORMATS)})", field="format")
