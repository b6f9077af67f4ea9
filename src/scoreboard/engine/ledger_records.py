"""Request records of an attempt log, tallied (the ledger's records read back without a ledger)."""

from __future__ import annotations


def request_records_summary(records: list[dict]) -> dict:
    """Tally request records from an attempt log; a pending one with no end is possibly billed."""
    ends: dict[int, dict] = {}
    pending: dict[int, dict] = {}
    for r in records:
        if r.get("kind") != "request":
            continue
        if r["state"] == "pending":
            pending[r["id"]] = r
        else:
            ends[r["id"]] = r
    unresolved = [pending[i] for i in sorted(pending) if i not in ends]
    unsent = sum(1 for e in ends.values() if e["state"] == "not-sent")
    return {"sent": len(pending) - unsent, "completed": sum(1 for e in ends.values() if e["state"] == "completed"),
            "failed": sum(1 for e in ends.values() if e["state"] == "failed"),
            "pending_unresolved": len(unresolved),
            "possibly_billed": [{"id": r["id"], "attempt": r["attempt"], "role": r.get("role"),
                                 "usage": "unknown"} for r in unresolved]}
