"""Small helpers for the words a user reads: counts whose nouns agree with them."""

from __future__ import annotations


def plural(n: int, one: str, many: str | None = None) -> str:
    """"1 request", "2 requests", "1,000 cases": a count with its noun agreeing."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"
