"""The wire of the two batch APIs, as their SDKs define them (openai-python `Batch`,
anthropic-sdk-python `MessageBatch` and `MessageBatchIndividualResponse`).

OpenAI: POST /files (multipart, purpose "batch", a JSONL of {custom_id, method, url, body}),
POST /batches {input_file_id, endpoint, completion_window: "24h", metadata}, GET /batches/{id},
POST /batches/{id}/cancel, GET /batches (to find a submission by its metadata), and the output
and error files (GET /files/{id}/content): lines of {id, custom_id, response: {status_code,
request_id, body}, error: {code, message} | null}.

Anthropic: POST /v1/messages/batches {requests: [{custom_id, params}]}, GET and POST .../cancel
on /v1/messages/batches/{id}, and `results_url`: lines of {custom_id, result: {type:
succeeded, message} | {type: errored, error} | {type: canceled} | {type: expired}}.

Management calls reuse the subject's session, headers, retries and answer bound; a batch is
never created twice by a retry (only a 429, which the provider did not act on, is retried).

Finding a submission again (`find`, after a crash before its batch id was recorded): OpenAI's
batches carry the submission id in their metadata. Anthropic's keep none, so a candidate is a
batch created since the submission began holding as many requests, and it is ours when the
custom ids in its results are (custom ids are unique to a run); a candidate still running
leaves the question open (UNDECIDED) until it ends.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from ..errors import SubjectError
from . import pricing
from ._bounded import read_body
from ._unsent import SentProbe, never_sent_reason, probing
from ._wire import as_int, dumps_body, error_detail, loads_answer
from .base import too_large
from .batch_results import Tally, result_lines
from .batch_results import custom_id_of as _custom_id
from .batch_results import error_text as _error_text

#: management answers (a batch object, a list page) are small
META_BYTES = 1 << 20
#: the longest time one management call may take
CALL_TIMEOUT_S = 120.0
#: how far a provider's clock may be behind ours when batches are matched by creation time
SKEW_S = 600.0
#: the most list pages read to find a submission again (100 batches a page)
FIND_PAGES = 100
#: what `find` answers besides a batch: no batch holds the submission / cannot tell yet
NOT_FOUND = "not-found"
UNDECIDED = "undecided"


#: what an answer of an unexpected shape raises in a subject's parser
SHAPE_ERRORS = (SubjectError, TypeError, AttributeError, KeyError, IndexError, ValueError)
#: one result as `results` gives it: (custom id, answered?, the answer, the error)
Line = tuple[str | None, bool, Any, str | None]
#: the answer given with a request the provider reports failed, expired or cancelled inside its
#: batch: neither provider bills those (OpenAI bills the requests that completed; Anthropic bills
#: no errored, canceled or expired result), so its usage is a known 0, not its bound
NOT_BILLED = {"billed": False}


@dataclass
class Status:
    """Where a batch stands: ended or not, the provider's status word, why it ended so, counts."""

    ended: bool
    name: str
    reason: str | None = None
    counts: dict | None = None


class BatchAPI:
    """What a Batcher needs of a provider; `subject` is the HTTP subject that batches."""

    provider = ""

    def __init__(self, subject):
        self.subject = subject

    # ---- plumbing
    def base(self) -> str:
        raise NotImplementedError  # pragma: no cover

    async def _call(self, method: str, url: str, *, json: Any = None, data: Any = None,
                    headers: dict | None = None, retry: bool = True, limit: int = META_BYTES) -> Any:
        """One management request (retried on 429, and on 5xx / connection errors when `retry`)."""
        subject = self.subject
        loop = asyncio.get_running_loop()
        session = subject._pool.session(loop, subject.static_headers)  # the subject's own pool
        settings = subject._retry
        n = 0
        while True:
            n += 1
            probe = SentProbe()
            probing(probe)  # the connector marks it once it has a connection for this try
            try:
                payload = dumps_body(json) if json is not None else data() if callable(data) else data
                async with asyncio.timeout(CALL_TIMEOUT_S):
                    async with session.request(method, url, data=payload, headers=headers,
                                               allow_redirects=False) as resp:
                        status = resp.status
                        raw, over = await read_body(resp, limit)
                        if status >= 300:
                            raise subject.status_error(status, raw, resp.headers)
                if over:
                    raise subject.fail(too_large("a batch API answer", limit), kind="too-large")
                try:
                    return loads_answer(raw)
                except ValueError:
                    raise subject.fail(f"batch API answer is not JSON ({len(raw)} bytes)",
                                       kind="invalid-response") from None
            except SubjectError as exc:
                err = exc
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                err = subject.fail(f"connection error: {type(exc).__name__}: {exc}", kind="connection",
                                   retryable=True)
                # failed before a byte of it was written (connection refused, ...): it never left
                err.never_sent = never_sent_reason(exc, probe)
            again = err.retryable and (retry or err.status == 429) and n < settings["attempts"]
            if again and err.retry_after is not None and err.retry_after > CALL_TIMEOUT_S:
                # not waited for here (a Retry-After of 1e9 would hold the run for ever): the
                # caller polls again on its own schedule
                err.args = (f"{err} (Retry-After {err.retry_after:.3g} s: longer than a batch call waits)",)
                again = False
            if not again or err.stop_run:
                raise err
            delay = err.retry_after if err.retry_after is not None else random.uniform(
                0, min(settings["max_delay_s"], settings["base_delay_s"] * 2 ** (n - 1)))
            await asyncio.sleep(delay)

    async def _pages(self, url: str, cursor: str, since: float) -> AsyncIterator[dict]:
        """Batches newest first from a list endpoint, until one created before `since` - SKEW_S."""
        after = None
        for _ in range(FIND_PAGES):
            page = await self._call("GET", url + "?limit=100" + (f"&{cursor}={after}" if after else ""))
            data = page.get("data") if isinstance(page, dict) else None
            for batch in data or ():
                if not isinstance(batch, dict):
                    continue
                created = _epoch(batch.get("created_at"))
                if created is not None and created < since - SKEW_S:
                    return
                yield batch
            if not data or not page.get("has_more") or not isinstance(data[-1], dict):
                return
            after = data[-1].get("id")

    async def _lines(self, url: str, tally: Tally | None) -> AsyncIterator[dict]:
        """The JSON objects of a results file, read as they arrive (batch_results.py); without
        a tally (finding a batch: one line is read) at most two answers' bytes. A download
        answered 429 is asked again after its Retry-After, as a management call is (not one
        longer than a batch call waits, nor past this look's bound: the next poll asks)."""
        tally = tally or Tally(max_bytes=2 * self.subject.max_response_bytes)
        n = 0
        while True:
            n += 1
            try:
                async with aclosing(result_lines(self.subject, url, tally)) as lines:
                    async for line in lines:
                        n = None  # a line was read: a later failure is not asked again here
                        yield line
                return
            except SubjectError as exc:
                wait = exc.retry_after if exc.retry_after is not None else 1.0
                most = min(CALL_TIMEOUT_S, tally.idle_s if tally.idle_s is not None else CALL_TIMEOUT_S)
                if n is None or exc.status != 429 or n >= self.subject._retry["attempts"] or wait > most:
                    raise
            await asyncio.sleep(wait)

    def usage(self, body: Any) -> tuple[int | None, int | None, float | None]:
        """(input tokens, output tokens, cost at the batch price) of a successful answer (all
        unknown for one of an unexpected shape: its attempt says why)."""
        try:
            reply = self.subject.parse_body(dumps_body(body))
        except SHAPE_ERRORS:
            return None, None, None
        price = pricing.batch_price(pricing.price_for(self.subject._price,
                                                      self.subject.options.get("model")))
        return reply.input_tokens, reply.output_tokens, pricing.cost_usd(price, reply.input_tokens,
                                                                        reply.output_tokens)

    @staticmethod
    def batch_id(batch: dict) -> str:
        return batch["id"]

    @staticmethod
    def input_file(batch: dict) -> str | None:
        return batch.get("input_file_id")


class OpenAIBatchAPI(BatchAPI):
    """The OpenAI Batch API (/files + /batches), chat completions as the endpoint."""

    provider = "openai"
    ENDPOINT = "/v1/chat/completions"
    ENDED = frozenset({"completed", "expired", "cancelled", "failed"})

    def base(self) -> str:
        return self.subject.options.get("base_url", self.subject.default_base_url).rstrip("/")

    async def create(self, submission: str, requests: list[tuple[str, dict]]) -> dict:
        lines = b"".join(dumps_body({"custom_id": cid, "method": "POST", "url": self.ENDPOINT, "body": body}) + b"\n"
                         for cid, body in requests)

        boundary = f"----scoreboard-{uuid.uuid4().hex}"

        def form() -> aiohttp.MultipartWriter:  # a fresh body for every try, one boundary
            writer = aiohttp.MultipartWriter("form-data", boundary=boundary)
            writer.append("batch").set_content_disposition("form-data", name="purpose")
            writer.append(lines, {"Content-Type": "application/jsonl"}).set_content_disposition(
                "form-data", name="file", filename=f"{submission}.jsonl")
            return writer

        # A multipart body says its own Content-Type (the session's default is JSON). Only POST
        # /batches makes a batch: when the upload fails, none was made.
        try:
            upload = await self._call("POST", self.base() + "/files", data=form,
                                      headers={"Content-Type": form().content_type})
            file_id = upload.get("id") if isinstance(upload, dict) else None
            if not isinstance(file_id, str):
                raise self.subject.fail("the file upload answered no file id", kind="invalid-response")
        except SubjectError as exc:
            exc.not_created = "its file upload failed"
            raise
        batch = await self._call("POST", self.base() + "/batches", retry=False,
                                 json={"input_file_id": file_id, "endpoint": self.ENDPOINT,
                                       "completion_window": "24h",
                                       "metadata": {"scoreboard_submission": submission}})
        return _checked(batch, self.subject)

    async def find(self, submission: str, custom_ids: list[str], since: float) -> dict | str:
        """The batch whose metadata names `submission` (NOT_FOUND: no batch does)."""
        async for batch in self._pages(self.base() + "/batches", "after", since):
            if (batch.get("metadata") or {}).get("scoreboard_submission") == submission:
                return _checked(batch, self.subject)
        return NOT_FOUND

    async def retrieve(self, batch_id: str) -> dict:
        return _checked(await self._call("GET", f"{self.base()}/batches/{batch_id}"), self.subject)

    async def cancel(self, batch_id: str) -> dict:
        return await self._call("POST", f"{self.base()}/batches/{batch_id}/cancel")

    def status(self, batch: dict) -> Status:
        name = batch.get("status")
        counts = batch.get("request_counts") if isinstance(batch.get("request_counts"), dict) else None
        reason = None
        if name == "failed":
            errors = batch.get("errors")  # {object: list, data: [...]}; some servers send the bare list
            errors = errors.get("data") if isinstance(errors, dict) else errors
            reason = "; ".join(_error_text(e) + (f" (line {e['line']})" if e.get("line") else "")
                               for e in errors if isinstance(e, dict) and (e.get("code") or e.get("message"))
                               )[:1000] if isinstance(errors, list) else ""
            reason = reason or "failed"
        elif name == "expired":
            reason = "the batch's 24-hour completion window ended first"
        elif name == "cancelled":
            reason = "cancelled"
        return Status(name in self.ENDED, str(name), reason, counts)

    async def results(self, batch: dict, tally: Tally | None = None) -> AsyncIterator[Line]:
        """The output file's lines, then the error file's: two files, each read to its own bound
        (an output file cut there still lets the error file say which requests failed, unbilled)."""
        cut = None
        for key in ("output_file_id", "error_file_id"):
            file_id = batch.get(key)
            if not isinstance(file_id, str) or not file_id:
                continue
            try:
                async for line in self._file_lines(file_id, tally):
                    yield line
            except SubjectError as exc:
                if exc.kind != "too-large":
                    raise
                cut = exc
        if cut is not None:
            raise cut

    async def _file_lines(self, file_id: str, tally: Tally | None) -> AsyncIterator[Line]:
        async with aclosing(self._lines(f"{self.base()}/files/{file_id}/content", tally)) as lines:
            async for line in lines:
                custom_id = _custom_id(line)
                response = line.get("response") if isinstance(line.get("response"), dict) else None
                if line.get("error"):
                    yield custom_id, False, dict(NOT_BILLED), _error_text(line["error"])
                elif response is None:
                    yield custom_id, False, None, "a result line with no response"
                elif as_int(response.get("status_code")) != 200:
                    message, _ = error_detail(response.get("body"), "")
                    yield custom_id, False, dict(NOT_BILLED), f"HTTP {response.get('status_code')}: {message}"
                else:
                    yield custom_id, True, response.get("body"), None


class AnthropicBatchAPI(BatchAPI):
    """Anthropic Message Batches (/v1/messages/batches)."""

    provider = "anthropic"

    def base(self) -> str:
        return self.subject.options.get("base_url", self.subject.default_base_url).rstrip("/") + "/v1/messages/batches"

    async def create(self, submission: str, requests: list[tuple[str, dict]]) -> dict:
        body = {"requests": [{"custom_id": cid, "params": params} for cid, params in requests]}
        return _checked(await self._call("POST", self.base(), json=body, retry=False), self.subject)

    async def find(self, submission: str, custom_ids: list[str], since: float) -> dict | str:
        """The batch holding `custom_ids`, among those created since `since` with as many
        requests (NOT_FOUND: none is; UNDECIDED: a candidate has not ended, its results unread)."""
        wanted, open_candidate = set(custom_ids), False
        async for batch in self._pages(self.base(), "after_id", since):
            counts = batch.get("request_counts")
            total = sum(v for v in counts.values() if isinstance(v, int)) if isinstance(counts, dict) else None
            if total is not None and total != len(wanted):
                continue
            if batch.get("processing_status") != "ended":
                open_candidate = True
                continue
            async with aclosing(self.results(_checked(batch, self.subject))) as lines:
                async for custom_id, *_ in lines:
                    if custom_id is None:  # a line naming no request tells nothing: read on (bounded)
                        continue
                    if custom_id in wanted:
                        return batch
                    break  # custom ids are unique to a run: one line tells whose batch it is
        return UNDECIDED if open_candidate else NOT_FOUND

    async def retrieve(self, batch_id: str) -> dict:
        return _checked(await self._call("GET", f"{self.base()}/{batch_id}"), self.subject)

    async def cancel(self, batch_id: str) -> dict:
        return await self._call("POST", f"{self.base()}/{batch_id}/cancel")

    def status(self, batch: dict) -> Status:
        counts = batch.get("request_counts") if isinstance(batch.get("request_counts"), dict) else None
        if batch.get("processing_status") != "ended":
            return Status(False, str(batch.get("processing_status")), None, counts)
        name = "cancelled" if batch.get("cancel_initiated_at") else "ended"
        return Status(True, name, None, counts)

    async def results(self, batch: dict, tally: Tally | None = None) -> AsyncIterator[Line]:
        url = f"{self.base()}/{batch['id']}/results"
        given = batch.get("results_url")
        if isinstance(given, str) and _origin(given) == _origin(url):
            url = given  # never another host: the request carries the API key
        async for line in self._lines(url, tally):
            custom_id = _custom_id(line)
            result = line.get("result") if isinstance(line.get("result"), dict) else {}
            kind = result.get("type")
            if kind == "succeeded":
                yield custom_id, True, result.get("message"), None
            elif kind == "errored":
                yield custom_id, False, dict(NOT_BILLED), f"errored: {_error_text(result.get('error'))}"
            elif kind == "canceled":
                yield custom_id, False, dict(NOT_BILLED), "canceled before this request was processed"
            elif kind == "expired":
                yield custom_id, False, dict(NOT_BILLED), ("expired (the batch's 24-hour window ended before this request "
                                               "was processed)")
            else:
                yield custom_id, False, None, f"unknown result type {kind!r}"


def _epoch(value: Any) -> float | None:
    """A creation time as the providers give it (OpenAI: Unix seconds; Anthropic: RFC 3339)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _origin(url: str) -> tuple:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


def _checked(batch: Any, subject) -> dict:
    if not isinstance(batch, dict) or not isinstance(batch.get("id"), str):
        raise subject.fail("the batch API answered no batch id", kind="invalid-response")
    return batch
