"""What a run knows of its provider batches (`batch: true`), and the `batch` option.

The Journal is kept in the run's attempt log, next to the ledger's request records, so a
resumed run knows every submission it made, which attempt each custom id belongs to, and the
results no attempt has claimed yet. Its records:

    {"kind": "batch", "event": "submitting", "submission", "provider", "subject", "requests", "at"}
    {"kind": "batch", "event": "submitted", "submission", "batch_id", "input_file_id"}
    {"kind": "batch", "event": "cancel", "submission", "batch_id", "reason"}
    {"kind": "batch", "event": "ended", "submission", "batch_id", "status", "reason", "counts"}
    {"kind": "batch-result", "custom_id", "submission", "ok", "body", "error", "cancelled"?}

"submitting" is written before anything is uploaded; a submission without "submitted" may or
may not have reached the provider, and subjects/batch.py reconciles it before anything of it
is sent again.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import ConfigError

BATCH_DEFAULTS = {"size": 1000, "wait_s": 2.0, "poll_s": 5.0, "poll_max_s": 300.0, "poll_for_s": None,
                  "max_pending": 10_000, "settle_s": 300.0}
#: the most requests one batch may hold, per provider
MAX_SIZE = {"openai": 50_000, "anthropic": 100_000}
#: the most bytes one batch may hold, per provider (OpenAI: a 200 MB input file; Anthropic: a
#: 256 MB create request), in decimal megabytes, less than either way of counting them
MAX_BYTES = {"openai": 200_000_000, "anthropic": 256_000_000}
#: what one request adds to a batch besides its body (custom id, method, url, separators)
REQUEST_OVERHEAD = 256
#: the poll interval once a batch is being cancelled (the run's grace period is short)
CANCEL_POLL_S = 0.5
BILLED_NOTE = "cancelled work may still be billed"


def parse_batch(value: Any, kind: str) -> dict | None:
    """The `batch` option: true (the defaults), false/absent (None), or a mapping of
    {size, wait_s, poll_s, poll_max_s, poll_for_s, max_pending, settle_s}."""
    if value is None or value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, dict) or set(value) - set(BATCH_DEFAULTS):
        raise ConfigError(f"subject {kind!r}: 'batch' is true or {{{', '.join(BATCH_DEFAULTS)}}}",
                          field="subject.batch")
    out = {**BATCH_DEFAULTS, **value}
    for key in ("size", "max_pending"):
        v = out[key]
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= (MAX_SIZE[kind] if key == "size"
                                                                         else 1_000_000):
            top = MAX_SIZE[kind] if key == "size" else 1_000_000
            raise ConfigError(f"subject {kind!r}: batch.{key} must be an integer from 1 to {top:,}",
                              field=f"subject.batch.{key}")
    for key in ("wait_s", "poll_s", "poll_max_s", "poll_for_s", "settle_s"):
        v = out[key]
        if v is None and key == "poll_for_s":
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or (v == 0 and key == "poll_s"):
            raise ConfigError(f"subject {kind!r}: batch.{key} must be a number of seconds >= 0"
                              + (" (or null: until every batch ends)" if key == "poll_for_s" else ""),
                              field=f"subject.batch.{key}")
        out[key] = float(v)
    out["poll_max_s"] = max(out["poll_max_s"], out["poll_s"])
    return out


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ---------------------------------------------------------------------------------------------
# The journal: what a run knows of its batches (kept in the attempt log by the engine)


class Journal:
    """The batches of one run: submissions, which attempt each custom id belongs to, results not
    yet claimed. `write` appends a record to the run's attempt log (None: kept in memory only)."""

    def __init__(self, write: Callable[[dict], Any] | None = None, key: str | None = None):
        self.write = write
        #: prefix of this run's submission and custom ids (unique per run)
        self.key = key or f"sb{random.getrandbits(32):08x}"
        self.submissions: dict[str, dict] = {}
        #: custom id -> (submission, attempt, role, body hash)
        self.entries: dict[str, tuple] = {}
        self._claimable: dict[tuple, deque] = defaultdict(deque)
        #: settled requests no attempt has claimed yet: custom id -> {ok, body, error}
        self.results: dict[str, dict] = {}
        #: every custom id with a recorded result (claimed or not)
        self.settled: set[str] = set()
        #: submissions being polled in this process: submission -> the batcher's handle
        self.active: dict[str, Any] = {}
        self.interrupted: str | None = None
        self._listeners: list[Callable[[str], None]] = []
        self._seq = itertools.count(1)

    def _log(self, record: dict) -> None:
        if self.write is not None:
            self.write(record)

    def allocate(self, n: int) -> tuple[str, list[str]]:
        """A new submission id and `n` custom ids (unique in the run; nothing written yet)."""
        submission = f"{self.key}-{next(self._seq)}"
        return submission, [f"{submission}-{i}" for i in range(n)]

    def begin(self, submission: str, ids: list[str], provider: str, subject: str,
              requests: list[tuple[tuple, str, str]], notes: list[str] | None = None) -> None:
        """Record a submission before anything is uploaded: its custom ids, one per (attempt,
        role, body hash)."""
        rows = [[cid, list(attempt), role, digest] for cid, (attempt, role, digest) in zip(ids, requests)]
        began = time.time()
        self.submissions[submission] = {"submission": submission, "provider": provider, "subject": subject,
                                        "batch_id": None, "state": "submitting", "requests": len(ids),
                                        "submitted_at": now_iso(), "began": began, "notes": notes or None}
        for cid, (attempt, role, digest) in zip(ids, requests):
            self.entries[cid] = (submission, tuple(attempt), role, digest)
        self._log({"kind": "batch", "event": "submitting", "submission": submission, "provider": provider,
                   "subject": subject, "requests": rows, "at": now_iso(), "t": began,
                   **({"notes": notes} if notes else {})})

    def submitted(self, submission: str, batch_id: str, input_file_id: str | None = None) -> None:
        sub = self.submissions[submission]
        sub.update(batch_id=batch_id, state="submitted")
        self._log({"kind": "batch", "event": "submitted", "submission": submission, "batch_id": batch_id,
                   "input_file_id": input_file_id, "at": now_iso()})

    def cancelled(self, submission: str, reason: str) -> None:
        sub = self.submissions[submission]
        sub["cancel"] = reason
        self._log({"kind": "batch", "event": "cancel", "submission": submission, "batch_id": sub["batch_id"],
                   "reason": reason, "at": now_iso()})

    def ended(self, submission: str, status: str, reason: str | None = None, counts: dict | None = None,
              notes: list[str] | None = None) -> None:
        sub = self.submissions[submission]
        notes = [*(sub.get("notes") or ()), *(notes or ())] or None  # what its submission said first
        sub.update(state="ended", status=status, reason=reason, counts=counts, ended_at=now_iso(), notes=notes)
        self._log({"kind": "batch", "event": "ended", "submission": submission, "batch_id": sub["batch_id"],
                   "status": status, "reason": reason, "counts": counts, "at": now_iso(),
                   **({"notes": notes} if notes else {})})

    def settle(self, custom_id: str, ok: bool, body: Any, error: str | None, *, keep: bool,
               cancelled: bool = False) -> None:
        """Record one request's result (kept for a later claim when no attempt waits on it).
        `cancelled`: the run's own interrupt cancelled it before it ran (sent anew on resume)."""
        result = {"ok": ok, "body": body, "error": error, **({"cancelled": True} if cancelled else {})}
        self.settled.add(custom_id)
        self._log({"kind": "batch-result", "custom_id": custom_id,
                   "submission": self.entries.get(custom_id, ("",))[0], **result})
        if keep:
            self.results[custom_id] = result

    def ids_of(self, submission: str) -> list[str]:
        """The custom ids of one submission."""
        return [cid for cid, entry in self.entries.items() if entry[0] == submission]

    def claim(self, attempt: tuple, role: str, digest: str) -> str | None:
        """The custom id of an earlier submission of this very request (None: never submitted)."""
        queue = self._claimable.get((tuple(attempt), role, digest))
        return queue.popleft() if queue else None

    # ---- interrupts
    def listen(self, callback: Callable[[str], None]) -> None:
        self._listeners.append(callback)

    def interrupt(self, reason: str) -> None:
        """Ctrl+C: submitted batches are cancelled, queued requests are not sent."""
        if self.interrupted is None:
            self.interrupted = reason
            for callback in list(self._listeners):
                callback(reason)

    # ---- resume
    def restore(self, records: list[dict], done: Callable[[tuple], bool] | None = None,
                reserved: Iterable[Any] = ()) -> None:
        """Rebuild from an earlier part of the run's log; requests of attempts already finished
        (`done`) are never claimed again. `reserved`: the submissions the ledger's request
        records name, recorded as submitting or not (a run killed between reserving a
        submission's requests and recording it): no new submission takes their names."""
        seqs = [0, *(self._seq_of(sub) for sub in reserved)]
        for r in records:
            kind, event = r.get("kind"), r.get("event")
            if kind == "batch" and event == "submitting":
                sub = r["submission"]
                self.submissions[sub] = {"submission": sub, "provider": r.get("provider"),
                                         "subject": r.get("subject"), "batch_id": None, "state": "submitting",
                                         "requests": len(r.get("requests") or ()), "submitted_at": r.get("at"),
                                         "began": r.get("t") if isinstance(r.get("t"), (int, float)) else 0.0,
                                         "notes": r.get("notes") if isinstance(r.get("notes"), list) else None}
                for cid, attempt, role, digest in r.get("requests") or ():
                    self.entries[cid] = (sub, tuple(attempt), role, digest)
                seqs.append(self._seq_of(sub))
            elif kind == "batch" and r.get("submission") in self.submissions:
                sub = self.submissions[r["submission"]]
                if event == "submitted":
                    sub.update(batch_id=r.get("batch_id"), state="submitted")
                elif event == "cancel":
                    sub["cancel"] = r.get("reason")
                elif event == "ended":
                    sub.update(state="ended", status=r.get("status"), reason=r.get("reason"),
                               counts=r.get("counts"), ended_at=r.get("at"), notes=r.get("notes") or sub.get("notes"))
            elif kind == "batch-result" and r.get("custom_id") in self.entries:
                self.settled.add(r["custom_id"])
                self.results[r["custom_id"]] = {"ok": r.get("ok"), "body": r.get("body"), "error": r.get("error"),
                                                "cancelled": r.get("cancelled") is True}
        self._seq = itertools.count(max(seqs) + 1)
        for cid, (sub, attempt, role, digest) in self.entries.items():
            if done is not None and done(attempt):
                self.results.pop(cid, None)
                continue
            state = self.submissions[sub]
            if state["state"] == "ended" and cid not in self.results:
                continue  # never created: submitted anew when its attempt runs
            self._claimable[(attempt, role, digest)].append(cid)

    def _seq_of(self, submission: Any) -> int:
        """The number of one of this run's submissions (`{key}-{n}`); 0 for any other name."""
        if not isinstance(submission, str) or not submission.startswith(self.key + "-"):
            return 0
        tail = submission[len(self.key) + 1:]
        return int(tail) if tail.isdigit() and len(tail) < 10 else 0

    def summary(self) -> list[dict]:
        """The run's batches as the report's `run.batches` lists them."""
        out = []
        for sub in self.submissions.values():
            entry = {k: sub.get(k) for k in ("provider", "subject", "batch_id", "submission", "state", "status",
                                             "requests", "submitted_at", "ended_at", "reason", "counts", "cancel", "notes")}
            out.append({k: v for k, v in entry.items() if v is not None})
        return out
