"""Fast JSON serialisation for the attempt log and reports (orjson when installed).

Hashes do not use this: they are defined over the stdlib's canonical JSON (hashing.py), so a
report verifies the same with or without orjson. Values orjson refuses (integers beyond 64
bits, say) fall back to the stdlib encoder.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

try:
    import orjson as _orjson
except ImportError:  # optional speed-up; behaviour is the same without it
    _orjson = None

class LazyList(Sequence):
    """A list whose items are made when read, not held (a plan's cases): it serialises as a JSON
    array, and a streaming writer writes it item by item instead of as one whole."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def _default(value: Any) -> Any:
    if isinstance(value, LazyList):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


_std = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_default).encode


def dumps_line(value: Any) -> bytes:
    """Compact UTF-8 JSON plus a newline."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, default=_default, option=_orjson.OPT_APPEND_NEWLINE)
        except TypeError:
            pass
    return (_std(value) + "\n").encode("utf-8")


def loads(data: bytes | str) -> Any:
    """Parse one JSON document (orjson when installed)."""
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except ValueError:  # integers beyond 64 bits: the stdlib reads what it wrote
            pass
    return json.loads(data)


def read_entries_file(path: str, what: str) -> tuple[str | None, list]:
    """A `{"version"?, "entries": [...]}` document (or a bare list of entries), e.g. the
    comparisons or reviews imported into a report; (version, entries) or a one-line ConfigError."""
    from pathlib import Path

    from .errors import ConfigError

    try:
        doc = json.loads(Path(path).read_bytes().decode("utf-8-sig"))
    except FileNotFoundError:
        raise ConfigError(f"{what} file not found", file=path) from None
    except IsADirectoryError:
        raise ConfigError(f"is a directory, expected a {what} JSON file", file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {what} file: {exc}", file=path) from None
    except ValueError as exc:
        raise ConfigError(f"{what} file is not valid JSON: {getattr(exc, 'msg', exc)}", file=path,
                          line=getattr(exc, "lineno", None)) from None
    version = None
    if isinstance(doc, dict):
        unknown = sorted(set(doc) - {"version", "entries"})
        if unknown:
            raise ConfigError("unknown field (allowed: version, entries)", file=path, field=unknown[0])
        version = doc.get("version")
        if version is not None and not isinstance(version, str):
            raise ConfigError("'version' must be a string", file=path, field="version")
        doc = doc.get("entries")
    if not isinstance(doc, list):
        raise ConfigError('expected {"entries": [...]} or a list of entries', file=path, field="entries")
    return version, doc
