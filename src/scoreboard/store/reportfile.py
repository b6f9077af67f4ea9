"""A report file read as a stream: its sections without the attempts, then the attempts one
at a time, so a report of a million attempts is stored without being held in memory.

ijson (yajl's C parser) does the parsing; a small file is simply read whole."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..record.io import SCHEMAS, load_report
from ..safefile import FileRefused, check_regular

#: below this size a report is read whole (faster than streaming it twice)
WHOLE_BYTES = 32 * 1024 * 1024


class ReportFile:
    """One report on disk: `head` (every section but the attempts) and `attempts()`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            check_regular(self.path)
        except FileRefused as exc:
            raise ConfigError(str(exc), file=str(self.path)) from None
        except FileNotFoundError:
            raise ConfigError("report not found", file=str(self.path)) from None
        self.size = self.path.stat().st_size
        self._whole: dict | None = None
        if self.size <= WHOLE_BYTES:
            self._whole = load_report(self.path)
            self.head = {k: v for k, v in self._whole.items() if k != "attempts"}
        else:
            self.head = _stream_head(self.path)
            if self.head.get("schema") not in SCHEMAS:
                raise ConfigError(f"not a scoreboard report (schema {self.head.get('schema')!r})",
                                  file=str(self.path), field="schema")
            for key in ("run", "plan", "summary"):
                if key not in self.head:
                    raise ConfigError("report lacks a required section", file=str(self.path), field=key)

    def attempts(self) -> Iterator[dict]:
        if self._whole is not None:
            yield from self._whole["attempts"]
            return
        import ijson

        with open(self.path, "rb") as handle:
            yield from ijson.items(handle, "attempts.item", use_float=True)


def _stream_head(path: Path) -> dict:
    """Every top-level section but `attempts`, built from the parser's events (the attempts
    are parsed and skipped, never built)."""
    try:
        import ijson
    except ImportError:  # pragma: no cover - a core dependency
        raise ConfigError("reading a large report needs ijson: pip install ijson", file=str(path)) from None
    head: dict[str, Any] = {}
    key: str | None = None
    builder = None
    depth = 0
    try:
        with open(path, "rb") as handle:
            for event, value in ijson.basic_parse(handle, use_float=True):
                if depth == 1 and event == "map_key":
                    key = value
                    builder = None if key == "attempts" else ijson.ObjectBuilder()
                    continue
                if event in ("start_map", "start_array"):
                    depth += 1
                elif event in ("end_map", "end_array"):
                    depth -= 1
                if builder is not None and (depth >= 1 or event in ("end_map", "end_array")):
                    builder.event(event, value)
                    if depth == 1:
                        head[key] = builder.value
                        builder = None
    except ijson.JSONError as exc:
        raise ConfigError(f"report is not valid JSON: {exc}", file=str(path)) from None
    return head
