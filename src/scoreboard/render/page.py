"""A rendered output as graders see it (GradeContext.render): the attempt's render record and
its screenshots, read back from the run's store (and checked against their hashes)."""

from __future__ import annotations

from typing import Any

#: what a judge is shown for a folder output whose index.html cannot be read (never its path,
#: which may name the variant or model)
UNREADABLE_FOLDER = ("(a folder of files whose index.html can no longer be read: judge the page from its "
                     "screenshots)")
#: ... whose index.html is over the suite's render.max_file_bytes (as the renderer refused it)
OVERSIZE_FOLDER = "(a folder of files whose index.html is over render.max_file_bytes: it is not shown)"


class RenderedPage:
    """`record` is the attempt's render record; `store` (None in verify) holds the shots."""

    def __init__(self, record: dict | None, store: Any = None, roots: tuple = (), limit: int | None = None):
        self.record = record or {}
        self.store = store
        #: the folders a folder output's index.html may be read from (none: it is not read)
        self.roots = roots
        #: the suite's render.max_file_bytes: the largest index.html a judge is shown (None: the default)
        self.limit = limit

    @property
    def ok(self) -> bool:
        """Rendered: shots taken, no render error, no crash."""
        r = self.record
        return bool(r.get("shots")) and not r.get("error") and not r.get("crashed")

    def shots(self, which: str | bool = "last") -> list[dict]:
        """The shots a judge is shown: the last viewport shot, or every shot ("all")."""
        shots = list(self.record.get("shots") or [])
        if which == "all":
            return shots
        viewport = [s for s in shots if not s.get("full_page")]
        return viewport[-1:] if viewport else shots[-1:]

    def images(self, which: str | bool = "last") -> list[bytes]:
        """PNG bytes of those shots; ValueError when there is no store or a shot changed."""
        if self.store is None:
            raise ValueError("screenshots are not available here")
        return [self.store.get(s["sha256"]) for s in self.shots(which)]

    def judged_source(self, text: str | None) -> str | None:
        """The answer's source as a judge is shown it beside the screenshots: the output's text,
        except for a folder output, whose text is its path (it may name the variant, the model or
        the run: a blind judge never sees it): the index.html the page was rendered from."""
        if self.record.get("kind") != "folder" or text is None:
            return text
        from ..safefile import FileRefused, read_inside
        from .detect import page_source
        from .settings import RenderSettings

        source, _ = page_source(text, ["folder"], self.roots)
        if source is not None and source.folder is not None:
            try:  # as the renderer served it: inside the folder, a regular file, bounded
                data = read_inside("index.html", source.folder, source.folder,
                                   limit=self.limit or RenderSettings().max_file_bytes,
                                   limit_name="render.max_file_bytes")
                return data.decode("utf-8", "replace")
            except FileRefused as exc:  # over the suite's limit (the page was not rendered either)
                return OVERSIZE_FOLDER if "render.max_file_bytes" in exc.reason else UNREADABLE_FOLDER
            except (OSError, ValueError):  # gone or refused since: the fixed sentence
                return UNREADABLE_FOLDER
        return UNREADABLE_FOLDER


def index_refused(folder, limit: int) -> str | None:
    """Why a folder output's index.html is not served (over the limit, a link out, not a file)."""
    from ..safefile import FileRefused, read_inside

    try:
        read_inside("index.html", folder, folder, limit=limit, limit_name="render.max_file_bytes")
    except FileRefused as exc:
        return f"the folder's index.html {exc.reason.split(' (give --root')[0]}: not rendered"
    except (OSError, ValueError) as exc:
        return f"the folder's index.html cannot be read ({exc}): not rendered"
    return None


def served_file(source, path: str, limit: int) -> tuple[bytes | None, str]:
    """The bytes and type the output's own origin serves at `path` ((None, ""): not one of its
    files); FileRefused for a file it will not serve (over the limit, a link out, not a file)."""
    import mimetypes
    from urllib.parse import unquote

    from ..safefile import FileRefused, read_inside

    path = unquote(path) or "index.html"
    if source.folder is None:
        return (source.html.encode("utf-8"), "text/html; charset=utf-8") if path == "index.html" else (None, "")
    try:  # inside the folder, regular files only, bounded: never a path that climbs out
        data = read_inside(path, source.folder, source.folder, limit=limit, limit_name="render.max_file_bytes")
    except FileRefused as exc:
        if exc.missing:
            return None, ""
        raise
    except (OSError, ValueError):
        return None, ""
    ctype = mimetypes.guess_type(path)[0] or "application/octet-stream"
    return data, ctype + ("; charset=utf-8" if ctype.startswith("text/") else "")
