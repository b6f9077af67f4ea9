"""A runs list's --commit filter read as `history` reads its status and dates: a value that
cannot be a commit's prefix is an error, not an empty list."""

from __future__ import annotations

import re

from ..errors import ConfigError, shorten


def check_commit(value: str | None, flag: str = "--commit") -> str | None:
    """A commit prefix: 1 to 64 hexadecimal digits (SHA-1 or SHA-256 repositories), any case."""
    if value is None or value == "":
        return None
    if not re.fullmatch(r"[0-9a-fA-F]{1,64}", value.strip()):
        raise ConfigError(f"not a commit prefix: {shorten(value, 80)!r} (give the first hexadecimal digits of a "
                          "commit, e.g. 4c22743e)", flag=flag)
    return value.strip().lower()
