"""The Store seam: where runs are kept. Report files are always written (they are the record);
a store is told when a run begins, of every finished attempt, and when its report is written,
and can list and read the runs it holds. `FileStore` (store/files.py) is the default: the
report files themselves. A history database (SQLite, PostgreSQL) is one more module
implementing this protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Protocol


@dataclass
class RunEntry:
    """One stored run, as a listing shows it."""

    run_id: str
    suite: str
    status: str | None
    started_at: str | None
    report: Path | None
    folder: Path
    variants: list[str] = field(default_factory=list)


class Store(Protocol):
    """Receives a run as it happens; lists and reads the runs it holds."""

    name: str

    def begin(self, meta: dict) -> None:
        """A run started (or resumed): `meta` is what run.json records (id, suite, plan, ...)."""

    def attempt(self, record: dict) -> None:
        """An attempt finished and is in the attempt log (called in completion order)."""

    def finish(self, head: dict, paths: dict[str, Path]) -> None:
        """The run's report was written: `head` is the report without its attempts. (A store
        may also have `report_written(head, json_path)`, called once the JSON report is
        complete and before the other formats render: the history store's writer process
        finishes the run's rows meanwhile.)"""

    def runs(self, suite: str | None = None) -> Iterator[RunEntry]:
        """The runs this store holds, newest first."""

    def read(self, run_id: str) -> dict:
        """The whole report of one run."""
