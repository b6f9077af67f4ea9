"""The JSON report written as a stream: the head, then every attempt line as the attempt log
holds it, then the summary. A run of a million attempts never builds the report in memory."""

from __future__ import annotations

from typing import Iterable, Iterator

from ..jsonio import LazyList, dumps_line

#: the report's sections in the order they are written; `attempts` is streamed in between
BEFORE = ("schema", "run", "plan")
AFTER = ("summary", "gates", "requests", "pairwise", "reviews", "verification", "instrument")


def _member(key: str, value, first: bool = False) -> Iterator[bytes | memoryview]:
    """`"key":value` as chunks; the value's bytes are not copied again (a plan can be large)."""
    yield (b"" if first else b",") + dumps_line(key)[:-1] + b":"
    yield from json_chunks(value)


def _holds_lazy(value: dict, depth: int = 2) -> bool:
    return any(isinstance(v, LazyList) or (depth > 1 and isinstance(v, dict) and _holds_lazy(v, depth - 1))
               for v in value.values())


def json_chunks(value) -> Iterator[bytes | memoryview]:
    """`value` as JSON in chunks: a LazyList (and a mapping holding one) is written item by item,
    so its items are never all made at once; anything else in one piece."""
    if isinstance(value, LazyList):
        yield b"["
        batch: list[bytes] = []
        for i, item in enumerate(value):
            batch.append((b"," if i else b"") + dumps_line(item)[:-1])
            if len(batch) >= 512:
                yield b"".join(batch)
                batch = []
        yield b"".join(batch) + b"]"
    elif isinstance(value, dict) and _holds_lazy(value):
        yield b"{"
        for i, (key, item) in enumerate(value.items()):
            yield from _member(key, item, first=i == 0)
        yield b"}"
    else:
        yield memoryview(dumps_line(value))[:-1]


def report_chunks(head: dict, attempt_lines: Iterable[bytes]) -> Iterator[bytes | memoryview]:
    """The bytes of `{...head before attempts, "attempts": [lines], ...head after}` plus a
    newline: the same document `dumps_report` would write for the assembled report. Each
    attempt line is one compact JSON object (no trailing newline)."""
    unknown = sorted(set(head) - set(BEFORE) - set(AFTER) - {"attempts"})
    if unknown:
        raise ValueError(f"unknown report section {unknown[0]!r}")
    yield b"{"
    for i, key in enumerate(k for k in BEFORE if k in head):
        yield from _member(key, head[key], first=i == 0)
    yield b',"attempts":[' if any(k in head for k in BEFORE) else b'"attempts":['
    first = True
    batch: list[bytes] = []
    for line in attempt_lines:
        if first:
            first = False
        else:
            batch.append(b",")
        batch.append(line)
        if len(batch) >= 512:
            yield b"".join(batch)
            batch = []
    if batch:
        yield b"".join(batch)
    yield b"]"
    for key in AFTER:
        if key in head:
            yield from _member(key, head[key])
    yield b"}\n"
