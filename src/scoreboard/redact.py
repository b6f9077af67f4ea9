"""Keeping secrets out of reports, logs and error messages."""

from __future__ import annotations

import os
import re

REDACTED = "<redacted>"


def scrub(text: str, token: str | None) -> str:
    """`text` with the token's value replaced by <redacted>."""
    return text.replace(token, REDACTED) if token else text


#: names of headers and settings whose values are credentials
SENSITIVE_NAME = re.compile(r"auth|key|token|secret|cookie|session|signature", re.I)
#: a reference to an environment variable in a spec: the documented way to pass a key
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def scrub_all(text: str, secrets) -> str:
    """`text` with every secret value (4+ characters) replaced by ***."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, "***")
    return text


def expand_env(value: str, secrets: set[str]) -> str:
    """`value` with each ${VAR} replaced by the environment's value (remembered as a secret);
    KeyError names a variable that is not set."""
    if "${" not in value:
        return value

    def sub(match: re.Match) -> str:
        found = os.environ.get(match.group(1))
        if found is None:
            raise KeyError(match.group(1))
        secrets.add(found)
        return found

    return ENV_REF.sub(sub, value)
