"""Each stored run's gates as its report states them (the stored head keeps them): what
`scoreboard history` prints under a run's variants and the viewer's runs list shows, so a run
whose gate failed does not read as one more "completed"."""

from __future__ import annotations

from .db import Database
from .rows import parse, run_where


def run_gates(db: Database, keys: list[str]) -> dict[str, list[dict]]:
    """Run key -> its gates (each a dict of the report's `gates`); [] for a run with none."""
    if not keys:
        return {}
    marks = ", ".join("?" * len(keys))
    out: dict[str, list[dict]] = {}
    for key, head, run_id, suite in db.all(f"SELECT key, head, run_id, suite FROM runs WHERE key IN ({marks})", keys):
        gates = (parse(head, run_where(run_id, suite, "runs.head")) or {}).get("gates") if head else None
        out[key] = [g for g in gates if isinstance(g, dict)] if isinstance(gates, list) else []
    return out
