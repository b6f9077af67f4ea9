"""promptfoo's `webhook` (src/assertions/webhook.ts handleWebhook) as scoreboard's `webhook`
grader (graders/webhook.py), which posts what promptfoo posts ({output, context: {prompt, vars}})
and reads the answer by promptfoo's rules (`strict: true`).

`webhook_checks(invalid)` gives {"webhook": handler}, the handler (value, assertion, inverse, ctx,
where) -> (spec, expected) as in promptfoo_assert_checks; `invalid` is the exception it raises
where promptfoo's handler throws (a value that is not a non-empty text: its invariant)."""

from __future__ import annotations

from typing import Callable
from urllib.parse import urlsplit

from .promptfoo_assert_code import runtime_spec


def _fetchable(url: str) -> bool:
    """Whether fetch can send to the URL: http or https with a host (else it throws "Invalid URL"
    or "fetch failed" and handleWebhook fails the assertion)."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - a bad port raises
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def webhook_checks(invalid: type[Exception]) -> dict[str, Callable]:
    """{"webhook": handler} raising `invalid` where promptfoo throws."""

    def handler(value, a, inverse, ctx, where):
        """handleWebhook: the rendered value is the URL (invariant: a non-empty text); not-webhook
        inverts the answer's pass and score (1 - score); WEBHOOK_TIMEOUT's default 5 s."""
        if not isinstance(value, str) or not value:
            raise invalid('"webhook" assertion type must have a URL value')
        if not _fetchable(value):
            # fetch throws on every try; handleWebhook's catch fails the assertion, scored 0
            ctx.report.note(f"{where}: the webhook URL {value!r} is not one fetch can send to, so promptfoo "
                            "fails the assertion every time; converted to a grader that always fails")
            return runtime_spec(ctx, f"_pf.fail({('Webhook error: cannot send to ' + repr(value))!r})"), None
        # fetchWithRetries' 4 retries (backoff_s's default is PROMPTFOO_REQUEST_BACKOFF_MS's 5 s)
        options: dict = {"url": value, "strict": True, "retries": 4}
        if inverse:
            options["not"] = True
        return {"webhook": options}, None

    return {"webhook": handler}
