"""How long an HTTP answer asks its caller to wait before trying again (`retry-after-ms`, or
`Retry-After` in seconds or as an HTTP date): read the same way by the model subjects' retries
and the webhook grader's."""

from __future__ import annotations

import math
import time
from datetime import timezone
from email.utils import parsedate_to_datetime


def retry_after_s(headers) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date). A value
    that is no number of seconds (`inf`, `1e400`, `NaN`, `-5`, words) is ignored, as if not
    sent: taken as an endless wait, `inf` stopped the whole run."""
    value = headers.get("retry-after-ms")
    if value:
        seconds = _seconds(value)
        if seconds is not None:
            return seconds / 1000
    value = headers.get("Retry-After")
    if not value:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
        if when.tzinfo is None:  # `-0000` (Python's formatdate), asctime's form: an HTTP date is GMT,
            when = when.replace(tzinfo=timezone.utc)  # read in the local zone it was hours off
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _seconds(value: str) -> float | None:
    """A header's number of seconds (digits, a fraction allowed), else None."""
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
