"""`webhook`: a URL grades the output, promptfoo's `webhook` assertion (src/assertions/webhook.ts).

    webhook: https://grader.example/check
    {webhook: {url: "https://grader.example/check?token=${HOOK_TOKEN}", timeout_s: 10}}
    {webhook: {url: ..., not: true}}        # promptfoo's not-webhook

Each attempt POSTs `{"output": ..., "context": {"prompt": ..., "vars": {...}}}` as JSON (the
output is the subject's structured value when it returned one, else its text; the prompt is the
case's input, a chat input as JSON text; vars are the case's vars) and reads the answer
`{"pass": bool, "score"?: number, "reason"?: text}`, promptfoo's contract:

- the verdict is `pass` (with `not: true`, its inverse); the score is `score` (1 - score when
  inverted), or 1/0 by the verdict when the answer gives none; a score outside [0, 1] is clipped
  and kept as `raw_score`;
- the reason is `reason`, else "Assertion passed" / "Webhook returned false" (true when inverted).

`retries: N` (default 0; `scoreboard import promptfoo` sets promptfoo's 4; `backoff_s` defaults
to promptfoo's 5) tries a call again as promptfoo's fetchWithRetries does: after a connection
error or no answer in time, following 2^i x (`backoff_s` + up to 1 s) seconds (i = 0, 1, ...);
after a rate-limited answer (a 429, or an `X-RateLimit-Remaining`,
`x-ratelimit-remaining-requests` or `-tokens` header of 0), following its `Retry-After` (60 s
without one) plus up to 1 s when it waits at all. No wait is longer than 120 s (a hostile answer
cannot hold the run for a day); a 5xx is not tried again (promptfoo's default). A call still rate
limited after its retries fails. (Not followed: promptfoo stops at once on a 429 whose body names
a spent quota; here it is tried again like any 429.)

A call that fails (a connection error, no answer within `timeout_s`, default 5 s as promptfoo's
WEBHOOK_TIMEOUT, once its retries are spent; a status outside 2xx, a redirect, which is not
followed, an answer over 1 MiB, a body that is not JSON, an answer with no boolean `pass` or a `score` that is not a number)
leaves the grade not assessed, with a one-line reason: never a pass. `strict: true` (set by
`scoreboard import promptfoo`) reads the answer as promptfoo does instead: any `pass` but false
(true when inverted) passes, and a `score` is read as JavaScript's Number() reads it.

`${VAR}` in the URL takes the environment's value. Credentials in the URL (user:password@, which
is sent as a Basic Authorization header as promptfoo sends it, and secret-named query parameters)
are kept out of reasons and every file the run writes. Outputs go to the URL the suite names, so
`verify` lists these grades as not recomputable offline.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
from typing import Any
from urllib.parse import urlsplit

from ..redact import ENV_REF, Secrets, expand_env, query_credentials, remember, split_userinfo
from .base import Grader, check_keys, option_error, short
from .grade import Grade, GradeContext, cut_reason

DEFAULT_TIMEOUT_S = 5.0
#: promptfoo's PROMPTFOO_REQUEST_BACKOFF_MS default, and its wait on a rate limit without Retry-After
DEFAULT_BACKOFF_S, RATE_LIMIT_WAIT_S = 5.0, 60.0
#: the longest wait between tries (promptfoo has none: a Retry-After of a day would hold the run)
MAX_WAIT_S = 120.0
MAX_RESPONSE_BYTES = 1024 * 1024
#: JSON.parse's whitespace is Python's too; a JavaScript number string as Number() reads it
_JS_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|Infinity)$")


class CallFailed(Exception):
    """The webhook call failed: the grade is not assessed."""


class _Transient(CallFailed):
    """A connection error or no answer in time: tried again while retries are left."""


class _RateLimited(Exception):
    """A rate-limited answer: its status and Retry-After (seconds, or None)."""

    def __init__(self, status: int, wait_s: float | None):
        super().__init__(status)
        self.status, self.wait_s = status, wait_s


#: promptfoo's isRateLimited: a 429, or one of these headers saying 0 requests are left
RATE_LIMIT_HEADERS = ("X-RateLimit-Remaining", "x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens")


def _js_json(value: Any) -> Any:
    """A value as JSON.stringify writes it: an integral float a whole number, NaN or an infinity null."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 2 ** 53 else value
    if isinstance(value, dict):
        return {str(k): _js_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_js_json(v) for v in value]
    return value


def js_number(value: Any) -> float:
    """JavaScript's Number(value) for a JSON value (NaN where it gives NaN)."""
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip(" \t\n\r\v\f\u00a0\ufeff\u2028\u2029")
        if text == "":
            return 0.0
        if re.fullmatch(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+", text):
            return float(int(text, 0))
        return float(text) if _JS_NUMBER.match(text) else math.nan
    if isinstance(value, list) and len(value) <= 1:  # Number([]) is 0, Number(["5"]) is 5
        if not value or value[0] is None:
            return 0.0
        return js_number(value[0]) if isinstance(value[0], (str, int, float)) and not isinstance(
            value[0], bool) else math.nan
    return math.nan


def _js_falsy(value: Any) -> bool:
    """JavaScript's falsiness of a JSON value (an empty list or object is truthy)."""
    return value is None or value is False or value == "" or (
        isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Unexpected token '{name[0]}'")  # JSON.parse takes no NaN or Infinity


def _check_url(url: Any) -> str:
    if not isinstance(url, str) or not url.strip():
        raise option_error("webhook", f"'url' is an http or https URL, got {short(url)}")
    if ENV_REF.search(url):  # checked once the environment's value is in
        return url
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        raise option_error("webhook", "'url' is not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise option_error("webhook", f"'url' is an http or https URL with a host, got {short(split_userinfo(url)[0])}")
    return url


class WebhookGrader(Grader):
    """POST the output to a URL; its answer {pass, score?, reason?} is the grade (see the module)."""

    name = "webhook"
    remote = True

    @classmethod
    def parse_options(cls, value: Any) -> dict:
        """A URL, or {url, timeout_s?, not?, strict?, retries?, backoff_s?}."""
        if isinstance(value, str):
            value = {"url": value}
        if not isinstance(value, dict):
            raise option_error(cls.name, f"the value is a URL or {{url, timeout_s?, not?}}, got {short(value)}")
        check_keys(cls.name, value, ("url", "timeout_s", "not", "strict", "retries", "backoff_s"))
        out: dict = {"url": _check_url(value.get("url"))}
        timeout = value.get("timeout_s", DEFAULT_TIMEOUT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 600:
            raise option_error(cls.name, f"'timeout_s' is a number of seconds in (0, 600], got {short(timeout)}")
        if timeout != DEFAULT_TIMEOUT_S:
            out["timeout_s"] = timeout
        retries = value.get("retries", 0)
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise option_error(cls.name, f"'retries' is a whole number from 0 to 10, got {short(retries)}")
        if retries:
            out["retries"] = retries
        backoff = value.get("backoff_s", DEFAULT_BACKOFF_S)
        if isinstance(backoff, bool) or not isinstance(backoff, (int, float)) or not 0 <= backoff <= 60:
            raise option_error(cls.name, f"'backoff_s' is a number of seconds in [0, 60], got {short(backoff)}")
        if backoff != DEFAULT_BACKOFF_S:
            out["backoff_s"] = backoff
        for key in ("not", "strict"):
            if value.get(key, False) is not False:
                if value[key] is not True:
                    raise option_error(cls.name, f"{key!r} is true or false")
                out[key] = True
        return out

    def __init__(self, value: Any = None):
        super().__init__(value)
        self.secrets = Secrets(min_length=4)
        self._learn(self.options["url"])

    def _learn(self, url: str) -> None:
        """Remember the URL's credentials, here and run-wide (the spec is written in reports)."""
        _, basic = split_userinfo(url) if "@" in url else (url, None)
        found = ([basic] if basic else []) + query_credentials(url)
        self.secrets.update(found)
        remember(*found)

    def _target(self) -> tuple[str, dict]:
        """(the URL to post to, its headers): ${VAR} expanded, userinfo sent as Basic auth."""
        url = self.options["url"]
        if ENV_REF.search(url):
            expanded: set[str] = set()
            try:
                url = expand_env(url, expanded)
            except KeyError as exc:
                raise CallFailed(f"environment variable {exc.args[0]} is not set") from None
            self.secrets.update(expanded)
            remember(*(v for v in expanded if v))
            self._learn(url)
            try:
                _check_url(url)
            except Exception as exc:  # noqa: BLE001 - a ConfigError's text, scrubbed below
                raise CallFailed(str(exc)) from None
        headers = {"Content-Type": "application/json"}
        clean, basic = split_userinfo(url)
        if basic:
            headers["Authorization"] = basic
        return clean, headers

    async def _post(self, body: bytes) -> bytes:
        """The answer's body, tried again after a connection error, a timeout or a rate limit as
        promptfoo's fetchWithRetries does (see the module); CallFailed when it cannot be had."""
        retries = self.options.get("retries", 0)
        backoff = self.options.get("backoff_s", DEFAULT_BACKOFF_S)
        for i in range(retries + 1):
            try:
                return await self._post_once(body)
            except _RateLimited as limited:
                if i >= retries:
                    tries = f" after {retries + 1} attempts" if retries else ""
                    raise CallFailed(f"Rate limited: {limited.status}{tries}") from None
                wait = RATE_LIMIT_WAIT_S if limited.wait_s is None else limited.wait_s
                wait += random.random() if wait else 0.0  # promptfoo's jitter of up to 1 s
            except _Transient as exc:
                if i >= retries:
                    raise CallFailed(f"Request failed after {retries} retries: {exc}" if retries else str(exc)) from None
                wait = 2 ** i * (backoff + random.random())
            await asyncio.sleep(min(MAX_WAIT_S, wait))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def _post_once(self, body: bytes) -> bytes:
        import aiohttp

        from ..retryafter import retry_after_s

        url, headers = self._target()
        timeout_s = self.options.get("timeout_s", DEFAULT_TIMEOUT_S)
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
                # a redirect is not followed: the output would go to a host the suite does not name
                async with session.post(url, data=body, headers=headers, allow_redirects=False) as resp:
                    if resp.status == 429 or any(resp.headers.get(h) == "0" for h in RATE_LIMIT_HEADERS):
                        raise _RateLimited(resp.status, retry_after_s(resp.headers))
                    if not 200 <= resp.status < 300:
                        moved = " (a redirect is not followed)" if 300 <= resp.status < 400 else ""
                        raise CallFailed(f"Webhook response status: {resp.status}{moved}")
                    data = bytearray()  # read to the end, bounded
                    async for chunk in resp.content.iter_chunked(1 << 16):
                        data += chunk
                        if len(data) > MAX_RESPONSE_BYTES:
                            raise CallFailed(f"the answer is larger than {MAX_RESPONSE_BYTES // 1024} KiB")
                    return bytes(data)
        except TimeoutError:
            raise _Transient(f"no answer within {timeout_s:g} s") from None
        except aiohttp.ClientError as exc:
            raise _Transient(f"{type(exc).__name__}: {exc}") from None

    def _read(self, data: bytes) -> Grade:
        """The answer's grade by promptfoo's rules (see the module); CallFailed when unusable."""
        inverse, strict = self.options.get("not", False), self.options.get("strict", False)
        text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")  # as fetch's json() decodes
        try:
            answer = json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:
            raise CallFailed(f"the answer is not JSON ({exc}): {short(text, 60)}") from None
        if answer is None and strict:  # jsonResponse.pass throws on null
            raise CallFailed("the answer is null (Cannot read properties of null (reading 'pass'))")
        given = answer.get("pass") if isinstance(answer, dict) else None
        if not isinstance(given, bool) and not strict:
            raise CallFailed(f"the answer has no true or false 'pass': {short(answer, 120)}")
        passed = given is not inverse  # promptfoo: jsonResponse.pass !== inverse
        has_score = isinstance(answer, dict) and "score" in answer
        raw = answer.get("score") if has_score else None
        if not has_score:
            score: float | None = 1.0 if passed else 0.0
        elif strict:
            score = js_number(raw)
            score = 1 - score if inverse else score
            score = None if math.isnan(score) else score
        elif isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise CallFailed(f"the answer's 'score' is not a number: {short(raw)}")
        else:
            score = 1 - float(raw) if inverse else float(raw)
        reason = answer.get("reason") if isinstance(answer, dict) else None
        if _js_falsy(reason):  # jsonResponse.reason || the default
            reason = "Assertion passed" if passed else f"Webhook returned {'true' if inverse else 'false'}"
        elif not isinstance(reason, str):
            reason = json.dumps(reason, ensure_ascii=False)
        extra = None
        if score is not None and not 0 <= score <= 1:
            extra = {"raw_score": score} if math.isfinite(score) else None
            score = min(1.0, max(0.0, score))
        return Grade(self.name, passed, score, cut_reason(self.secrets.scrub(reason)), None, extra)

    async def grade(self, ctx: GradeContext) -> Grade:
        """POST the output and its context; the answer's verdict, or not assessed when the call fails."""
        output = ctx.output.json if ctx.output.json is not None else ctx.output.text
        if output is None:
            return self.fail("no output")
        case = ctx.case
        prompt = case.input if isinstance(case.input, str) else json.dumps(
            _js_json(case.input), ensure_ascii=False, separators=(",", ":"))
        body = json.dumps(_js_json({"output": output, "context": {"prompt": prompt, "vars": case.vars or {}}}),
                          ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        try:
            return self._read(await self._post(body))
        except CallFailed as exc:
            reason = self.secrets.scrub(" ".join(str(exc).split()))
            return self.unassessed(cut_reason(f"Webhook error: {reason}", 500))
