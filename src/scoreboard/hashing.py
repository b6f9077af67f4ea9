"""Canonical JSON and SHA-256: the hashes that bind reports to their inputs and outputs."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable

_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False).encode


def canonical_json(value: Any) -> str:
    """Serialise with sorted keys, no insignificant whitespace, UTF-8 characters kept."""
    return _dumps(value)


def sha256_json(value: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of `value`."""
    return hashlib.sha256(_dumps(value).encode("utf-8")).hexdigest()


def sha256_json_items(items: Iterable[Any]) -> str:
    """sha256_json(list(items)), computed item by item (the bytes hashed are the same)."""
    digest = hashlib.sha256(b"[")
    for i, item in enumerate(items):
        if i:
            digest.update(b",")
        digest.update(_dumps(item).encode("utf-8"))
    digest.update(b"]")
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    """SHA-256 (hex) of raw bytes."""
    return hashlib.sha256(data).hexdigest()


def output_text_hash(output: dict | None) -> str | None:
    """SHA-256 of the canonical JSON string of an output's text, unchanged (whitespace and line
    ends kept): the hash other tools give an answer. None when the output has no text. The
    report's `output_hash` covers the whole output ({text, json, tool_calls, status}) instead."""
    text = output.get("text") if isinstance(output, dict) else None
    return sha256_json(text) if isinstance(text, str) else None
