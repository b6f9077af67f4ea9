"""What goes over the wire for the HTTP subjects: JSON bodies out and in, server-sent events,
Retry-After, provider error bodies, and the Reply a parser makes of an answer.

JSON goes through orjson, with the stdlib behind it for what orjson refuses or would change:
at concurrency 200 the stdlib's encode and decode were about 17 µs of the subject's ~150 µs
of CPU per request, orjson's about 1 µs (benchmarks/README.md, peer section).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..jsonio import TOO_DEEP
from ..jsonio import orjson_module as _orjson  # None without orjson: the stdlib does the same, slower
from ..redact import split_userinfo
from ..retryafter import retry_after_s  # noqa: F401 - the subjects' import of it

_std_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
#: orjson reads integers past 64 bits as floats, silently: a body with a run of 19 digits
#: (inside a string or not) is read by the stdlib, which keeps them exact
_LONG_DIGITS = re.compile(rb"\d{19}")
#: a UTF-16 surrogate written as a JSON escape: the stdlib reads a lone one into a str that no
#: UTF-8 file, hash or database can hold
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
#: the largest count (tokens) an answer may report: past it a number is no count (2**53 - 1,
#: the largest integer every JSON reader and SQLite keep exact)
MAX_COUNT = (1 << 53) - 1
#: the deepest nesting an answer may have. orjson reads 1,024 levels, but a value nested about
#: 1,000 deep is past Python's recursion limit for whatever walks it next (the report's JSON
#: encoder, a grader, a hash): a tool call's arguments 1,015 deep crashed the whole run
MAX_DEPTH = 256
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
        # a str holding a lone surrogate: bytes orjson refuses, so the stdlib reads the str
        data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
        if not _LONG_DIGITS.search(data):
            try:
                return _orjson.loads(data)
            except ValueError:  # NaN, lone surrogates, deep nesting: the stdlib decides
                pass
    return json.loads(raw)


def loads_checked(raw: bytes | str) -> Any:
    """loads, with nesting past MAX_DEPTH a ValueError like any other JSON that cannot be
    read. Lone surrogates are kept: an answer's text reaches the runner as the server sent it,
    and the runner repairs it and records the repair (attempt.subject_info.output_repaired)."""
    try:
        value = loads(raw)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    if raw.count(b"[" if isinstance(raw, bytes) else "[") + \
            raw.count(b"{" if isinstance(raw, bytes) else "{") > MAX_DEPTH and _deeper(value, MAX_DEPTH):
        raise ValueError(f"nested too deeply: more than {MAX_DEPTH} levels")
    return value


def _deeper(value: Any, most: int) -> bool:
    """Whether `value` nests lists and objects more than `most` levels deep (no recursion)."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > most:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def loads_answer(raw: bytes | str) -> Any:
    """An answer's JSON (loads), with every unpaired surrogate escape ("\\ud800") read as
    U+FFFD (a pair split across two escapes is one character): an answer's text must be
    writable as UTF-8, in the report, the response cache and the history store alike. Too deep
    a nesting is a ValueError, as any other JSON that cannot be read."""
    value = loads_checked(raw)
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    return without_surrogates(value) if _SURROGATE_ESCAPE.search(data) else value


def without_surrogates(value: Any) -> Any:
    """`value` with every string's unpaired surrogates replaced by U+FFFD (what a subject says
    beside an answer, such as the model's name, must be writable as UTF-8)."""
    if isinstance(value, str):
        if value.isascii():  # the usual model name and finish reason: nothing to replace
            return value
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def joined(parts: list[str]) -> str:
    """A streamed text's pieces as one string, the halves of a surrogate pair that two events
    sent apart ("\\ud83d", then "\\ude00") made one character, as one JSON string reads them;
    a half with no partner stays (the runner repairs it and says so)."""
    text = "".join(parts)
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def error_detail(payload: Any, text: str) -> tuple[str, bool]:
    """(the provider's error message, whether its type/code says quota or billing). A JSON
    body cut at the 64 KiB an error body may take (one that echoes a long prompt back) is no
    JSON: its message and type are read from what was kept."""
    message = None
    quota = False
    if payload is None and text.lstrip()[:1] == "{":
        payload = _cut_error(text)
    if isinstance(payload, dict):
        err = payload.get("error")
        if isinstance(err, dict):
            message = err.get("message")
            quota = any(isinstance(err.get(k), str) and err[k] in _QUOTA_TYPES for k in ("type", "code"))
        elif isinstance(err, str):
            message = err
        if message is None:
            message = payload.get("message") or payload.get("detail")
    if isinstance(message, str):
        message = _printable(message[:2000])
    if not isinstance(message, str) or not message.strip():
        message = " ".join(_printable(text[:20_000]).split())[:300] or "(empty body)"
    return message[:500], quota


_CUT_MESSAGE = re.compile(r'"message"\s*:\s*("(?:[^"\\]|\\.){0,2000}")')
_CUT_TYPE = re.compile(r'"(?:type|code)"\s*:\s*"(\w{1,64})"')


def _cut_error(text: str) -> dict | None:
    """{"error": {"message", "type"}} as far as a cut JSON error body shows them (None: neither)."""
    found = _CUT_MESSAGE.search(text)
    try:
        message = json.loads(found.group(1)) if found else None
    except ValueError:
        message = None
    kinds = [k for k in _CUT_TYPE.findall(text) if k in _QUOTA_TYPES][:1]
    if message is None and not kinds:
        return None
    return {"error": {"message": message, **({"type": kinds[0]} if kinds else {})}}


#: terminal escape sequences and control characters (a body of NULs, a colour code); a string
#: sequence (OSC: a title, an OSC 8 link, an OSC 52 clipboard write; DCS, SOS, PM, APC) goes whole,
#: to its BEL or ST or, cut by a limit, to the end: its payload is no text the server said
_UNPRINTABLE = re.compile(r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c|\Z)"
                          r"|\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]|\x1b[@-_]"
                          r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _printable(text: str) -> str:
    """`text` without escape sequences and control characters (tabs and newlines kept)."""
    return _UNPRINTABLE.sub("", text)


def one_line(message: object, most: int = 200) -> str:
    """A message on one line, at most `most` characters (aiohttp's reasons for an answer it
    could not parse quote the offending bytes, newlines and all)."""
    text = " ".join(str(message).split())
    return text if len(text) <= most else text[:most] + "..."


def shown_location(location: str) -> str:
    """A redirect's Location as an error may show it: printable, no user:password@, cut short."""
    text = "".join(ch for ch in location if ch.isprintable()).strip()
    try:
        text = split_userinfo(text)[0]
    except ValueError:  # not a URL urlsplit can read
        return "an unreadable address"
    return (text[:200] + "…" if len(text) > 200 else text) or "no address"


def connection_detail(exc: BaseException) -> str:
    """A lost connection in one line. aiohttp's ServerDisconnectedError carries the answer it
    had begun to parse (a RawResponseMessage repr: its version, headers, flags) when the server
    closed the connection between the status line and the end of the headers."""
    message = getattr(exc, "message", None)
    code = getattr(message, "code", None)
    if message is not None and not isinstance(message, str) and isinstance(code, int):
        return (f"{type(exc).__name__}: the server closed the connection before its answer's headers "
                f"ended (HTTP {code} begun)")
    return f"{type(exc).__name__}: {one_line(exc)}"


def loads_or_fail(raw: bytes, fail) -> Any:
    """Parse a JSON body once; a body that is not JSON is an invalid-response error."""
    try:
        return loads_checked(raw)
    except ValueError as exc:
        raise fail(f"response is not valid JSON ({exc}; {len(raw)} bytes)", kind="invalid-response") from None


def answered_as_stream(asked: bool, content_type: str) -> bool:
    """Whether a successful answer is read as a stream: a server that does not stream answers
    one JSON body (application/json, +json), one that always streams (a gateway) answers
    text/event-stream though not asked; any other type is read as asked."""
    if content_type == "application/json" or content_type.endswith("+json"):
        return False
    return asked or content_type == "text/event-stream"


#: the Content-Encodings aiohttp decodes (one coding, not a list: `gzip, gzip` is read as sent)
DECODED = {"", "identity", "gzip", "deflate", "br", "zstd"}


def not_json(err, content_type: str, raw: bytes, stream: bool, encoding: str | None = None):
    """`err` (an answer that could not be read: no JSON, no events), naming the Content-Type the
    server gave when it is not the one read (an HTML error page with status 200, a stream
    answered to an `http` subject) and the body's first words, on one line; and a
    Content-Encoding that was not decoded (a body compressed twice), its bytes read as sent."""
    if getattr(err, "kind", None) != "invalid-response":
        return err
    json_type = content_type == "application/json" or content_type.endswith("+json")
    if not (content_type == "text/event-stream" if stream else json_type):
        words = one_line(_printable(raw[:2000].decode("utf-8", "replace")), 200)
        err.args = (f"{err}; the server answered {content_type or 'no Content-Type'}"
                    + (f": {words}" if words else " (empty)"),)
    if encoding is not None and encoding.strip().lower() not in DECODED:
        err.args = (f"{err}; the body's Content-Encoding ({one_line(_printable(encoding), 100)}) is not one "
                    "that is decoded: it was read as sent",)
    return err


def parse_args(raw: Any) -> Any:
    """Tool-call arguments as JSON when they parse, else the raw string."""
    if isinstance(raw, str):
        try:
            return loads_checked(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def as_int(value: Any) -> int | None:
    """An integer as the answer gave it; None for anything else (a string, a bool, a float) and
    for integers past MAX_COUNT either way (no count is that large)."""
    if isinstance(value, int) and not isinstance(value, bool) and -MAX_COUNT <= value <= MAX_COUNT:
        return value
    return None


def _count(value: Any) -> int | None:
    """A token count: an integer from 0 to MAX_COUNT, else unknown (a negative count would give
    budget back; a larger one is no count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT else None


def valid_utf8(raw: bytes) -> tuple[bytes, int]:
    """(`raw` with each sequence that is not UTF-8 read as U+FFFD, how many there were): one
    byte a server cut in two must not lose the whole answer."""
    try:
        raw.decode("utf-8")
        return raw, 0
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        return text.encode("utf-8"), text.count("\ufffd") - raw.count("\ufffd".encode("utf-8"))


class Reply:
    """What one successful HTTP exchange produced."""

    __slots__ = ("text", "json", "tool_calls", "status", "input_tokens", "output_tokens", "cost", "model",
                 "invalid_utf8", "logprobs")

    def __init__(self, text=None, tool_calls=None, status=None, input_tokens=None, output_tokens=None,
                 model=None, json=None, cost=None):
        if text is not None and not isinstance(text, str):
            # raised inside the exchange: "unexpected response shape (TypeError: ...)"
            raise TypeError(f"the answer's text is {type(text).__name__}, not a string")
        # a finish reason or model name that is not text is unknown (a report holds text there)
        self.text, self.tool_calls = text, tool_calls or []
        self.status = status if isinstance(status, str) else None
        # a negative count is no count (it would give budget back), nor one past MAX_COUNT:
        # unknown, as a missing one
        self.input_tokens, self.output_tokens = _count(input_tokens), _count(output_tokens)
        self.model = model if isinstance(model, str) else None
        self.json = json
        self.invalid_utf8 = 0  # sequences of the answer that were not UTF-8 (read as U+FFFD)
        self.logprobs = None  # the answer's token log-probabilities, set by a parser that read them
        # a negative, NaN or infinite cost is unknown
        self.cost = cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) and \
            math.isfinite(cost) and cost >= 0 else None
