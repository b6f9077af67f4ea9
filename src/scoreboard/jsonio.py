"""Fast JSON serialisation for the attempt log and reports (orjson when installed).

Hashes do not use this: they are defined over the stdlib's canonical JSON (hashing.py), so a
report verifies the same with or without orjson. Values orjson refuses (integers beyond 64
bits, say) fall back to the stdlib encoder.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson as _orjson
except ImportError:  # optional speed-up; behaviour is the same without it
    _orjson = None

_std = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def dumps_line(value: Any) -> bytes:
    """Compact UTF-8 JSON plus a newline."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, option=_orjson.OPT_APPEND_NEWLINE)
        except TypeError:
            pass
    return (_std(value) + "\n").encode("utf-8")
