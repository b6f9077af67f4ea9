"""Keeping secrets out of reports, logs and error messages."""

from __future__ import annotations

REDACTED = "<redacted>"


def scrub(text: str, token: str | None) -> str:
    """`text` with the token's value replaced by <redacted>."""
    return text.replace(token, REDACTED) if token else text
