"""What goes over the wire for the HTTP subjects: JSON bodies out and in, server-sent events,
Retry-After, provider error bodies, and the Reply a parser makes of an answer.

JSON goes through orjson, with the stdlib behind it for what orjson refuses or would change:
at concurrency 200 the stdlib's encode and decode were about 17 µs of the subject's ~150 µs
of CPU per request, orjson's about 1 µs (benchmarks/README.md, peer section).
"""

from __future__ import annotations

import json
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any

try:
    import orjson as _orjson
except ImportError:  # a dependency, but the stdlib does the same, only slower
    _orjson = None

_std_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
#: orjson reads integers past 64 bits as floats, silently: a body with a run of 19 digits
#: (inside a string or not) is read by the stdlib, which keeps them exact
_LONG_DIGITS = re.compile(rb"\d{19}")
_QUOTA_TYPES = {"insufficient_quota", "billing_error", "quota_exceeded", "payment_required",
                "credit_balance_too_low"}


def dumps_body(value: Any) -> bytes:
    """Compact UTF-8 JSON of a request body."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value)
        except TypeError:  # integers past 64 bits, non-string keys, lone surrogates: as before
            pass
    return _std_dumps(value).encode()


def loads(raw: bytes | str) -> Any:
    """Parse JSON exactly as json.loads would (orjson first when it cannot differ)."""
    if _orjson is not None:
        data = raw.encode() if isinstance(raw, str) else raw
        if not _LONG_DIGITS.search(data):
            try:
                return _orjson.loads(data)
            except ValueError:  # NaN, lone surrogates, deep nesting: the stdlib decides
                pass
    return json.loads(raw)


def retry_after_s(headers) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def error_detail(payload: Any, text: str) -> tuple[str, bool]:
    """(the provider's error message, whether its type/code says quota or billing)."""
    message = None
    quota = False
    if isinstance(payload, dict):
        err = payload.get("error")
        if isinstance(err, dict):
            message = err.get("message")
            quota = any(isinstance(err.get(k), str) and err[k] in _QUOTA_TYPES for k in ("type", "code"))
        elif isinstance(err, str):
            message = err
        if message is None:
            message = payload.get("message") or payload.get("detail")
    if not isinstance(message, str) or not message.strip():
        message = " ".join(text.split())[:300] or "(empty body)"
    return message[:500], quota


def loads_or_fail(raw: bytes, fail) -> Any:
    """Parse a JSON body once; a body that is not JSON is an invalid-response error."""
    try:
        return loads(raw)
    except (ValueError, RecursionError) as exc:
        raise fail(f"response is not valid JSON ({exc}; {len(raw)} bytes)", kind="invalid-response") from None


def sse_data(raw: bytes) -> list[bytes]:
    """The data payloads of a server-sent-events body, one per event."""
    out: list[bytes] = []
    buf: list[bytes] = []
    for line in raw.splitlines():
        if line.startswith(b"data:"):
            value = line[5:]
            buf.append(value[1:] if value[:1] == b" " else value)
        elif not line and buf:
            out.append(b"\n".join(buf) if len(buf) > 1 else buf[0])
            buf = []
    if buf:
        out.append(b"\n".join(buf))
    return out


def parse_args(raw: Any) -> Any:
    """Tool-call arguments as JSON when they parse, else the raw string."""
    if isinstance(raw, str):
        try:
            return loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Reply:
    """What one successful HTTP exchange produced."""

    __slots__ = ("text", "json", "tool_calls", "status", "input_tokens", "output_tokens", "cost", "model")

    def __init__(self, text=None, tool_calls=None, status=None, input_tokens=None, output_tokens=None,
                 model=None, json=None, cost=None):
        self.text, self.tool_calls, self.status = text, tool_calls or [], status
        # a negative count is no count (it would give budget back): unknown, as a missing one
        self.input_tokens = input_tokens if input_tokens is None or input_tokens >= 0 else None
        self.output_tokens = output_tokens if output_tokens is None or output_tokens >= 0 else None
        self.model = model
        self.json = json
        self.cost = None if isinstance(cost, (int, float)) and cost < 0 else cost
